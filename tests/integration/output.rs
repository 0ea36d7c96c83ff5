//! Output that cannot be lost: a report written to a full disk (`> /dev/full`) is an
//! error (exit 2, with the message), for a run, `report`, `compare` and `vblast ab`; an
//! output path that cannot be written is refused before the first request.

use std::fs::File;
use std::process::{Command, Stdio};

use crate::support::nginx::Nginx;
use crate::support::ports::free_port;
use crate::support::run::run;
use crate::support::vblast::url_cmd;

/// `cmd` with stdout on /dev/full: its exit code and stderr.
fn to_full_disk(mut cmd: Command) -> (Option<i32>, String) {
    cmd.stdout(File::create("/dev/full").expect("/dev/full"))
        .stderr(Stdio::piped());
    let out = cmd.output().expect("run vblast");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn assert_lost_report_is_an_error(cmd: Command, what: &str) {
    let (code, stderr) = to_full_disk(cmd);
    assert_eq!(code, Some(2), "{what}: {stderr}");
    assert!(
        stderr.contains("cannot write the report to standard output: No space left on device"),
        "{what}: {stderr}"
    );
    assert!(!stderr.contains("panicked"), "{what}: {stderr}");
}

#[test]
fn a_report_to_a_full_disk_is_an_error() {
    let ng = Nginx::start();
    let url = format!("{}/v1/secret/data/foo", ng.addr);
    let dir = tempfile::tempdir().unwrap();
    let saved = dir.path().join("run.json");
    let saved_s = saved.to_str().unwrap();
    for format in ["text", "json", "ab"] {
        assert_lost_report_is_an_error(
            url_cmd(&["-c", "1", "-n", "20", "--format", format, &url]),
            format,
        );
    }
    // The results file is saved all the same.
    let (code, _) = to_full_disk(url_cmd(&["-c", "1", "-n", "20", "--output", saved_s, &url]));
    assert_eq!(code, Some(2));
    let other = dir.path().join("other.json");
    run(url_cmd(&[
        "-c",
        "1",
        "-n",
        "20",
        "-q",
        "--output",
        other.to_str().unwrap(),
        &url,
    ]))
    .assert_code(0);
    assert_lost_report_is_an_error(url_cmd(&["report", saved_s]), "report");
    assert_lost_report_is_an_error(
        url_cmd(&["compare", saved_s, other.to_str().unwrap()]),
        "compare",
    );
    assert_lost_report_is_an_error(url_cmd(&["ab", "-n", "20", "-c", "1", &url]), "ab");
    assert_lost_report_is_an_error(url_cmd(&["ab", "-h"]), "ab -h");
    assert_lost_report_is_an_error(url_cmd(&["--list-ops"]), "--list-ops");
}

#[test]
fn an_output_path_that_cannot_be_written_is_refused_before_any_request() {
    // Nothing listens here: a run that sent a request would fail on the connection, not
    // on the path.
    let url = format!("http://127.0.0.1:{}/v1/secret/data/foo", free_port());
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-dir/run.json");
    let missing = missing.to_str().unwrap();
    let a_dir = dir.path().to_str().unwrap();
    for flag in ["--output", "--html", "--hlog", "--hgrm", "--ab-csv"] {
        let out = run(url_cmd(&["-c", "1", "-n", "5", flag, missing, &url]));
        out.assert_code(2);
        assert!(
            out.stderr
                .contains(&format!("{flag} {missing}: directory "))
                && out.stderr.contains("No such file or directory"),
            "{flag}: {}",
            out.show()
        );
        assert!(!out.stderr.contains("refused"), "{}", out.show());
        assert!(out.stdout.is_empty(), "{}", out.show());
        let out = run(url_cmd(&["-c", "1", "-n", "5", flag, a_dir, &url]));
        out.assert_code(2);
        assert!(
            out.stderr
                .contains(&format!("{flag} {a_dir}: is a directory")),
            "{}",
            out.show()
        );
    }
    let out = run(url_cmd(&["ab", "-n", "5", "-c", "1", "-e", missing, &url]));
    out.assert_code(2);
    assert!(
        out.stderr.contains(&format!("-e {missing}: directory ")),
        "{}",
        out.show()
    );
    // report and compare: checked before anything is printed.
    let out = run(url_cmd(&["report", "--html", missing, "whatever.json"]));
    out.assert_code(2);
    assert!(
        out.stderr.contains(&format!("--html {missing}")),
        "{}",
        out.show()
    );
}

/// A short URL sweep of nginx (two 300 ms steps) with `extra` flags.
fn sweep_cmd(url: &str, extra: &[&str]) -> Command {
    let mut args = vec![
        "sweep",
        "--rate",
        "20..40",
        "--steps",
        "2",
        "--step-duration",
        "300ms",
        "--step-warmup",
        "100ms",
        "--resolution",
        "50%",
        "--slo",
        "p50=10s",
        "-c",
        "1",
    ];
    args.extend_from_slice(extra);
    args.push(url);
    url_cmd(&args)
}

#[test]
fn a_sweep_that_cannot_write_its_report_or_file_fails_with_one_message() {
    // Refused before the first request: nothing listens at this address.
    let nobody = format!("http://127.0.0.1:{}/v1/secret/data/foo", free_port());
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-dir/sweep.json");
    let missing = missing.to_str().unwrap();
    for flag in ["--output", "--html"] {
        let out = run(sweep_cmd(&nobody, &[flag, missing]));
        out.assert_code(2);
        assert!(
            out.stderr
                .contains(&format!("{flag} {missing}: directory "))
                && out.stderr.contains("No such file or directory"),
            "{flag}: {}",
            out.show()
        );
        assert!(out.stdout.is_empty(), "{}", out.show());
    }
    let ng = Nginx::start();
    let url = format!("{}/v1/secret/data/foo", ng.addr);
    // stdout on a full disk, text and JSON: exit 2 with the one message; the results file
    // is written all the same.
    for format in ["text", "json"] {
        let saved = dir.path().join(format!("{format}.json"));
        let (code, stderr) = to_full_disk(sweep_cmd(
            &url,
            &["--format", format, "--output", saved.to_str().unwrap()],
        ));
        assert_eq!(code, Some(2), "{format}: {stderr}");
        let said = "cannot write the report to standard output: No space left on device";
        assert_eq!(stderr.matches(said).count(), 1, "{format}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
        let doc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&saved).unwrap()).unwrap();
        assert_eq!(doc["kind"], "sweep", "{format}");
    }
    // The results file on a full disk: exit 2, its error said once.
    let out = run(sweep_cmd(&url, &["--output", "/dev/full"]));
    out.assert_code(2);
    assert_eq!(
        out.stderr
            .matches("cannot write /dev/full: No space left on device")
            .count(),
        1,
        "{}",
        out.show()
    );
    let out = run(sweep_cmd(&url, &["-q", "--html", "/dev/full"]));
    out.assert_code(2);
    assert!(
        out.stderr
            .contains("cannot write /dev/full: No space left on device"),
        "{}",
        out.show()
    );
}
