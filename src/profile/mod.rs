//! `vblast profile`'s library: the workload that OpenBao's or Vault's file audit logs show
//! (issue 37): span, rate, the operation mix in vblast's names, namespaces, mounts and
//! their distinct paths, tokens, errors, the server's time, the audit volume, and what
//! could not be mapped, read in one streaming pass in bounded memory. `lines` reads a
//! log (plain or gzip), `entry` one line, `mapping` names its operation and shapes its
//! path, `distinct` counts without keeping values, `tally` counts, `figures` are the
//! result, `render` prints it (text, JSON, HTML page).

pub mod distinct;
pub mod entry;
pub mod figures;
pub mod lines;
pub mod mapping;
pub mod render;
pub mod tally;

use std::path::{Path, PathBuf};

use crate::error::{Cause, Error};
use crate::signals::Stop;
use figures::Profile;
use lines::{LogLines, NextLine};
use tally::{ProblemKind, ProfileTally};

/// Reads `files` (in the order of their first entry's time) into a profile; the paths
/// themselves only with `show_paths`. Problems in the input are in the profile's
/// `problems`; an error only when no entry at all could be read, or a file cannot be
/// opened. `stop` ends the reading early (a signal): what was read is profiled.
pub fn profile(files: &[PathBuf], show_paths: bool, stop: &Stop) -> Result<Profile, Error> {
    let mut tally = ProfileTally::new(show_paths);
    for file in ordered(files)? {
        if stop.signal().is_some() {
            break;
        }
        read_file(&file, &mut tally, stop)?;
    }
    let p = tally.finish();
    if p.audit.entries == 0 {
        let said: Vec<String> = p.problems.iter().map(problem_text).collect();
        return Err(Error::input(format!(
            "no audit entry could be read from {}{}",
            files
                .iter()
                .map(|f| f.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
            if said.is_empty() {
                String::new()
            } else {
                format!(" ({})", said.join("; "))
            }
        )));
    }
    Ok(p)
}

/// A problem as one line: `FILE:LINE: what`.
pub fn problem_text(p: &figures::LogProblem) -> String {
    match p.line {
        Some(l) => format!("{}:{l}: {}", p.file, p.what),
        None => format!("{}: {}", p.file, p.what),
    }
}

/// The files by the time of their first entry (rotated logs given in any order read
/// oldest first); a file without a readable first time keeps its place after them.
fn ordered(files: &[PathBuf]) -> Result<Vec<PathBuf>, Error> {
    let mut keyed = Vec::with_capacity(files.len());
    for (i, f) in files.iter().enumerate() {
        let first = first_time(f).map_err(Error::input)?;
        keyed.push((first.unwrap_or(i64::MAX), i, f.clone()));
    }
    keyed.sort();
    Ok(keyed.into_iter().map(|(_, _, f)| f).collect())
}

/// The time of a file's first entry among its first 100 lines.
fn first_time(path: &Path) -> Result<Option<i64>, Cause> {
    let mut lines = LogLines::open(path)?;
    for _ in 0..100 {
        match lines.next_line() {
            NextLine::Line { text, .. } => {
                let parsed: Option<entry::AuditLine> = serde_json::from_slice(text).ok();
                if let Some(t) = parsed.and_then(|l| l.time.as_deref().and_then(entry::parse_time))
                {
                    return Ok(Some(t));
                }
            }
            NextLine::TooLong => {}
            NextLine::End | NextLine::Failed(_) => break,
        }
    }
    Ok(None)
}

/// One file's lines into the tally.
fn read_file(path: &Path, tally: &mut ProfileTally, stop: &Stop) -> Result<(), Error> {
    let mut lines = LogLines::open(path).map_err(Error::input)?;
    tally.begin_file(&path.display().to_string());
    let mut line_no = 0u64;
    loop {
        match lines.next_line() {
            NextLine::Line { text, unterminated } => {
                line_no += 1;
                tally.line(line_no, text, unterminated);
            }
            NextLine::TooLong => {
                line_no += 1;
                let what = format!("a line over {} MiB, skipped", lines::MAX_LINE >> 20);
                tally.problem(ProblemKind::TooLong, Some(line_no), what);
            }
            NextLine::End => break,
            NextLine::Failed(e) => {
                let what = if lines.gzip {
                    format!(
                        "the gzip stream is cut short or damaged after line {line_no}: {}; the lines before it are counted",
                        crate::error::io_text(&e)
                    )
                } else {
                    format!(
                        "cannot read further than line {line_no}: {}",
                        crate::error::io_text(&e)
                    )
                };
                tally.problem(ProblemKind::Unreadable, Some(line_no), what);
                break;
            }
        }
        if line_no.is_multiple_of(65_536) && stop.signal().is_some() {
            break;
        }
    }
    if line_no == 0 {
        tally.problem(ProblemKind::Empty, None, "empty: no lines".into());
    }
    Ok(())
}
