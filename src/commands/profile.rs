//! `vblast profile AUDIT_LOG...`: the workload of audit logs, printed (and saved as a page).

use crate::cli::profile::ProfileArgs;
use crate::error::{Cause, Ending, Error};
use crate::signals::Stop;

/// Runs `vblast profile`: the problems of the input on stderr, each with its line, then
/// the profile; exit 0 when it was printed (problems or not), 2 when nothing could be
/// read or a file written.
pub fn run(args: &ProfileArgs, stop: &Stop) -> Ending {
    let profile = match crate::profile::profile(&args.files, args.show_paths, stop) {
        Ok(p) => p,
        Err(e) => return Ending::Failed(e),
    };
    for p in &profile.problems {
        eprintln!("vblast: warning: {}", crate::profile::problem_text(p));
    }
    let text = crate::profile::render::render(&profile, args.format);
    if let Err(e) = std::io::Write::write_all(&mut std::io::stdout().lock(), text.as_bytes()) {
        return Ending::Failed(Error::output(Cause::io(
            "cannot write the profile to standard output",
            e,
        )));
    }
    if let Some(file) = &args.html
        && let Err(e) = std::fs::write(file, crate::profile::render::html(&profile))
    {
        return Ending::Failed(Error::output(Cause::io(
            format!("cannot write the page {}", file.display()),
            e,
        )));
    }
    if let Some(file) = &args.workload
        && let Err(e) =
            crate::profile::workload_file::WorkloadFile::from_profile(&profile).write(file)
    {
        return Ending::Failed(e);
    }
    match stop.signal() {
        Some(s) => Ending::Stopped(s),
        None => Ending::Ok,
    }
}
