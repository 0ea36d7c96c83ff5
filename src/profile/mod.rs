//! `vblast profile`'s library: the workload that OpenBao's or Vault's file audit logs show
//! (issue 37): span, rate, the operation mix in vblast's names, namespaces, mounts and
//! their distinct paths, tokens, errors, the server's time, the audit volume, and what
//! could not be mapped, read in one streaming pass in bounded memory. `lines` reads a
//! log (plain or gzip), `entry` one line (`scan` its fast path), `mapping` names its operation and shapes its
//! path, `distinct` counts without keeping values, `tally` counts, `figures` are the
//! result, `render` prints it (text, JSON, HTML page), `workload_file` is the workload file
//! written from it and run by `vblast run --workload`.

pub mod distinct;
pub mod entry;
pub mod figures;
pub mod kv_mounts;
pub mod lines;
pub mod mapping;
pub mod render;
pub mod scan;
pub mod tally;
pub mod workload_file;

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
    read(files, ProfileTally::new(show_paths), stop).map(|(p, _)| p)
}

/// `profile`, with each request entry kept for a replay (`vblast replay`).
pub fn profile_keeping(
    files: &[PathBuf],
    show_paths: bool,
    stop: &Stop,
) -> Result<(Profile, tally::Kept), Error> {
    read(files, ProfileTally::new(show_paths).keeping(), stop)
}

fn read(
    files: &[PathBuf],
    mut tally: ProfileTally,
    stop: &Stop,
) -> Result<(Profile, tally::Kept), Error> {
    for file in ordered(files)? {
        if stop.signal().is_some() {
            break;
        }
        read_file(&file, &mut tally, stop)?;
    }
    let (p, kept) = tally.finish_keeping();
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
    Ok((p, kept))
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
                let parsed = entry::read_line(text).ok();
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn entry(kind: &str, id: &str, time: &str, path: &str, op: &str) -> String {
        format!(
            r#"{{"time":"2026-12-05T08:00:{time}Z","type":"{kind}","request":{{"id":"{id}","operation":"{op}","mount_point":"secret/","mount_type":"kv","client_token_accessor":"hmac-sha256:abc","namespace":{{"id":"root"}},"path":"{path}"}}}}"#
        )
    }

    /// A pair of entries (request, response) for request `id`.
    fn pair(id: u32, sec: u32) -> String {
        let t = format!("{sec:02}.{id:06}");
        let p = format!("secret/data/team{id}");
        format!(
            "{}\n{}\n",
            entry("request", &id.to_string(), &t, &p, "read"),
            entry("response", &id.to_string(), &t, &p, "read")
        )
    }

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    fn run(files: &[PathBuf]) -> Result<Profile, Error> {
        profile(files, false, &Stop::new())
    }

    fn said(p: &Profile) -> String {
        p.problems
            .iter()
            .map(problem_text)
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn a_clean_log_is_counted_and_shows_no_path_or_accessor() {
        let dir = tempfile::tempdir().unwrap();
        let text: String = (0..10).map(|i| pair(i, i)).collect();
        let p = run(&[write(dir.path(), "a.log", &text)]).unwrap();
        assert_eq!(p.requests, 10);
        assert_eq!(p.operations[0].name, "kv-read");
        assert_eq!(p.operations[0].requests, 10);
        assert_eq!(p.operations[0].responses, 10);
        assert_eq!(p.mounts[0].distinct_paths, 10);
        assert_eq!(p.tokens.distinct_accessors, 1);
        assert!(p.problems.is_empty(), "{}", said(&p));
        for format in [render::ProfileFormat::Text, render::ProfileFormat::Json] {
            let out = render::render(&p, format) + &render::html(&p);
            assert!(!out.contains("team1") && !out.contains("hmac") && !out.contains("abc"));
        }
    }

    #[test]
    fn bad_lines_are_said_with_their_line_and_the_rest_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let mut text = pair(1, 1);
        text.push_str("this is not json\n");
        text.push_str(&pair(2, 2));
        text.push_str(&pair(3, 0)); // back by 2 s: lines 6 and 7
        text.push_str(&entry("request", "9", "03.0", "secret/data/x", "read")[..40]);
        let p = run(&[write(dir.path(), "bad.log", &text)]).unwrap();
        assert_eq!(p.requests, 3);
        let s = said(&p);
        assert!(s.contains("bad.log:3: not JSON"), "{s}");
        assert!(
            s.contains("bad.log:6: time goes backwards by 2.000 s"),
            "{s}"
        );
        assert!(s.contains("bad.log:8: the last line is cut short"), "{s}");
        assert_eq!(p.problems.len(), 4, "{s}");
    }

    #[test]
    fn only_responses_or_only_requests_are_said_and_counted() {
        let dir = tempfile::tempdir().unwrap();
        let responses: String = (0..5)
            .map(|i| entry("response", &i.to_string(), "01.0", "secret/data/a", "read") + "\n")
            .collect();
        let p = run(&[write(dir.path(), "resp.log", &responses)]).unwrap();
        assert_eq!(p.requests, 5);
        assert!(said(&p).contains("only responses"), "{}", said(&p));
        assert!(p.operations[0].server_ms.is_none());
        let requests: String = (0..4)
            .map(|i| entry("request", &i.to_string(), "01.0", "secret/data/a", "update") + "\n")
            .collect();
        let p = run(&[write(dir.path(), "req.log", &requests)]).unwrap();
        assert_eq!(p.requests, 4);
        assert_eq!(p.operations[0].name, "kv-write");
        assert!(said(&p).contains("only requests"), "{}", said(&p));
    }

    #[test]
    fn a_gzip_cut_short_keeps_its_lines_and_an_empty_log_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        for i in 0..5000 {
            enc.write_all(pair(i, i % 60).as_bytes()).unwrap();
        }
        let bytes = enc.finish().unwrap();
        let whole = dir.path().join("whole.log.gz");
        std::fs::write(&whole, &bytes).unwrap();
        assert_eq!(run(std::slice::from_ref(&whole)).unwrap().requests, 5000);
        let cut = dir.path().join("cut.log.gz");
        std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
        let p = run(std::slice::from_ref(&cut)).unwrap();
        assert!(p.requests > 100 && p.requests < 5000, "{}", p.requests);
        assert!(
            said(&p).contains("the gzip stream is cut short"),
            "{}",
            said(&p)
        );
        let empty = write(dir.path(), "empty.log", "");
        let e = run(std::slice::from_ref(&empty)).unwrap_err();
        assert!(matches!(e, Error::Input(_)));
        assert!(e.to_string().contains("empty: no lines"), "{e}");
        // An empty file beside a good one: said, and the good one profiled.
        let p = run(&[empty, whole]).unwrap();
        assert_eq!(p.requests, 5000);
        assert!(said(&p).contains("empty.log: empty"), "{}", said(&p));
        let missing = run(&[dir.path().join("nope.log")]).unwrap_err();
        assert!(matches!(missing, Error::Input(_)), "{missing}");
    }

    /// In a namespace, an entry's mount point is the whole path (`team-a/transit/`) and its
    /// path the namespace's own (`transit/encrypt/k`).
    #[test]
    fn requests_in_a_namespace_map_as_in_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let line = |kind: &str, id: u32, mount_type: &str, mount: &str, path: &str| {
            format!(
                r#"{{"time":"2026-12-05T08:00:01.{id:06}Z","type":"{kind}","request":{{"id":"{id}","operation":"update","mount_point":"team-a/{mount}","mount_type":"{mount_type}","namespace":{{"id":"x1","path":"team-a/"}},"path":"{path}"}}}}"#
            )
        };
        let text = [
            line("request", 1, "transit", "transit/", "transit/encrypt/k"),
            line(
                "request",
                2,
                "approle",
                "auth/approle/",
                "auth/approle/login",
            ),
            line(
                "request",
                3,
                "approle",
                "auth/approle/",
                "auth/approle/role/payroll",
            ),
        ]
        .join("\n");
        let p = run(&[write(dir.path(), "ns.log", &text)]).unwrap();
        let names: Vec<&str> = p.operations.iter().map(|o| o.name.as_str()).collect();
        assert_eq!(names, ["approle-login", "transit-encrypt"]);
        assert_eq!(p.unmapped.shapes[0].path, "auth/approle/role/<path>");
        assert_eq!(p.namespaces[0].namespace, "team-a/");
        assert!(
            p.mounts
                .iter()
                .any(|m| m.namespace == "team-a/" && m.mount == "transit/")
        );
    }

    #[test]
    fn rotated_logs_are_read_oldest_first() {
        let dir = tempfile::tempdir().unwrap();
        let old: String = (0..3).map(|i| pair(i, 10 + i)).collect();
        let new: String = (3..6).map(|i| pair(i, 20 + i)).collect();
        let a = write(dir.path(), "audit.log", &new);
        let b = write(dir.path(), "audit.log.1", &old);
        let p = run(&[a, b]).unwrap();
        assert!(p.problems.is_empty(), "{}", said(&p));
        assert!(p.files[0].ends_with("audit.log.1"));
        assert_eq!(p.requests, 6);
    }
}
