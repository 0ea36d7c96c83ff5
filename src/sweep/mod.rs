//! `vblast sweep`: right-sizing. Steps of increasing load (target rates in the open model,
//! connections in the closed model) over one session, a coarse pass then a bisection to
//! the edge of an objective, and the answer: the highest load sustained within it and the
//! first that broke it. The parts: `plan` (the checked plan the commands build from the
//! flags), `objective` (the `--slo` bounds), `search` (the pure state machine choosing each
//! next load), `runner` (the steps over a `Session`), `file` (the sweep as data, its answer
//! and its results file), `render` (the table and comparisons of sweeps as text), `html`
//! (the same as a page), `repeat` (an unclear step measured again, its samples pooled).

pub mod file;
pub mod html;
pub mod monotone;
pub mod objective;
pub mod plan;
pub mod render;
pub mod repeat;
pub mod runner;
pub mod saturation;
pub mod search;

use std::path::{Path, PathBuf};

use crate::error::{Ending, Error};
use crate::results::deliver::{Output, OutputFormat};

pub use runner::run;

/// `vblast report FILE`: when FILE is a sweep, renders it (exactly as printed live);
/// None when no file given is a sweep.
pub fn report_if_sweep(files: &[PathBuf], out: &Output) -> Option<Ending> {
    let sweeps: Vec<_> = files
        .iter()
        .filter_map(|p| file::Sweep::read_if_sweep(p).map(|s| (p, s)))
        .collect();
    let (path, sweep) = sweeps.into_iter().next()?;
    if files.len() > 1 {
        return Some(Ending::Failed(Error::input(format!(
            "{} is a sweep: report shows one sweep at a time (to put sweeps side by side: vblast compare)",
            path.display()
        ))));
    }
    let sweep = match sweep {
        Ok(s) => s,
        Err(e) => return Some(Ending::Failed(Error::input(e))),
    };
    if !matches!(out.format, OutputFormat::Text | OutputFormat::Json)
        || out.latency
        || out.hgrm.is_some()
        || out.ab_csv.is_some()
        || out.hlog.is_some()
    {
        return Some(Ending::Failed(Error::input(format!(
            "{} is a sweep: it is reported as text or json, with --output and --html (--latency, --hgrm, --ab-csv, --hlog and the ab and verbose formats are for single runs)",
            path.display()
        ))));
    }
    let json = out.format == OutputFormat::Json;
    let html = out.html.as_deref();
    if let Some(copy) = &out.output
        && let Err(e) = sweep.write(copy)
    {
        return Some(Ending::Failed(Error::output(e)));
    }
    let mut text = Vec::new();
    if json {
        match sweep.to_json() {
            Ok(t) => text = t.into_bytes(),
            Err(e) => return Some(Ending::Failed(Error::output(e))),
        }
    } else {
        let _ = render::render(&sweep, &mut text);
    }
    if let Err(e) = crate::results::deliver::print_or_fail(&text) {
        return Some(Ending::Failed(e));
    }
    if let Some(path) = html {
        let page = html::render(
            &format!("vblast report: {}", path_name(files[0].as_path())),
            &[(path_name(files[0].as_path()), &sweep)],
        );
        return Some(save(path, page));
    }
    Some(Ending::Ok)
}

fn path_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}

fn save(path: &Path, page: String) -> Ending {
    match std::fs::write(path, page) {
        Ok(()) => Ending::Ok,
        Err(e) => Ending::Failed(Error::output(format!(
            "cannot write {}: {e}",
            path.display()
        ))),
    }
}

/// `vblast compare A B ...`: when the files are sweeps, compares them; None when none is.
pub fn compare_if_sweeps(files: &[PathBuf], html: Option<&Path>) -> Option<Ending> {
    let read: Vec<_> = files
        .iter()
        .map(|p| file::Sweep::read_if_sweep(p))
        .collect();
    if read.iter().all(Option::is_none) {
        return None;
    }
    let mut sweeps = Vec::new();
    for (path, r) in files.iter().zip(read) {
        let name = path_name(path);
        match r {
            None => {
                return Some(Ending::Failed(Error::input(format!(
                    "{} is not a sweep, but {} is: compare sweeps with sweeps, runs with runs",
                    path.display(),
                    files
                        .iter()
                        .find(|p| file::Sweep::read_if_sweep(p).is_some())
                        .map(|p| p.display().to_string())
                        .unwrap_or_default()
                ))));
            }
            Some(Err(e)) => return Some(Ending::Failed(Error::input(e))),
            Some(Ok(s)) => sweeps.push((name, s)),
        }
    }
    let mut text = Vec::new();
    let _ = render::compare(&sweeps, &mut text);
    if let Err(e) = crate::results::deliver::print_or_fail(&text) {
        return Some(Ending::Failed(e));
    }
    if let Some(path) = html {
        let names: Vec<&str> = sweeps.iter().map(|(n, _)| n.as_str()).collect();
        let refs: Vec<(String, &file::Sweep)> =
            sweeps.iter().map(|(n, s)| (n.clone(), s)).collect();
        let page = html::render(&format!("vblast compare: {}", names.join(" vs ")), &refs);
        return Some(save(path, page));
    }
    Some(Ending::Ok)
}
