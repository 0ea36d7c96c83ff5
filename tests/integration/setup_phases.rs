//! The setup's long phases against a real OpenBao dev server: their progress lines with
//! `--progress` (the fixture phases' too: checks, the kv mount, an operation's setup;
//! none without it, stderr not being a terminal), their times in the report
//! and the results file (`run.setup_phases`, valid against docs/schema/), and a count the
//! server refuses (a rate-limit quota on the mount): one message after the first
//! failures, exit 2, and what was written removed.

use serde_json::Value;

use crate::schema::assert_valid;
use crate::support::openbao::{OpenBao, server_state};
use crate::support::run::run;
use crate::support::vblast::vault_cmd;

/// The phases of a report's or a results file's `run`: (name, count).
fn phases(doc: &Value) -> Vec<(String, u64)> {
    doc["run"]["setup_phases"]
        .as_array()
        .unwrap_or_else(|| panic!("no run.setup_phases: {doc}"))
        .iter()
        .map(|p| {
            (
                p["name"].as_str().unwrap().to_string(),
                p["count"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn seeding_and_user_creation_show_progress_and_their_times() {
    let bao = OpenBao::start();
    let before = server_state(&bao);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("run.json");
    let file_arg = file.to_str().unwrap().to_string();
    let args = [
        "--scenario",
        "login-read",
        "--users",
        "6",
        "--secrets",
        "60",
        "-c",
        "2",
        "-n",
        "12",
        "--format",
        "json",
        "--no-server-stats",
    ];
    let mut with = args.to_vec();
    with.extend(["--progress", "--output", &file_arg]);
    let r = run(vault_cmd(&bao, &with));
    r.assert_code(0);
    for line in [
        // The fixture phases, named with their time as they end.
        "progress: checks done in ",
        "progress: kv mount done in ",
        "progress: kv seeding 60/60 done in ",
        "progress: userpass users 6/6 done in ",
    ] {
        assert!(r.stderr.contains(line), "{line}: {}", r.show());
    }
    let report = r.json();
    let names = phases(&report);
    for want in [
        ("checks".to_string(), 1),
        ("kv mount".to_string(), 1),
        ("kv seeding".to_string(), 60),
        ("userpass users".to_string(), 6),
    ] {
        assert!(names.contains(&want), "{want:?}: {names:?}");
    }
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(phases(&saved), names);
    let seeding = &saved["run"]["setup_phases"][2];
    assert!(seeding["connections"].as_u64().unwrap() >= 1, "{seeding}");
    let report_file = dir.path().join("report.json");
    std::fs::write(&report_file, &r.stdout).unwrap();
    assert_valid("results.schema.json", &[&file]);
    assert_valid("report.schema.json", &[&report_file]);
    // The text report of the file says each phase's time on one line.
    let text = run(vault_cmd(&bao, &["report", &file_arg]));
    text.assert_code(0);
    let setup = text.line("Setup ");
    assert!(
        setup.contains("kv seeding 60 in ") && setup.contains("userpass users 6 in "),
        "{}",
        text.show()
    );
    assert_eq!(server_state(&bao), before, "left something behind");

    // An operation whose setup keeps no phase of its own is one fixture phase, with its
    // line; the load's own progress lines are not the setup's.
    let jwt = run(vault_cmd(
        &bao,
        &["--op", "jwt-login", "-c", "1", "-n", "2", "--progress"],
    ));
    jwt.assert_code(0);
    assert!(
        jwt.stderr.contains("progress: jwt-login setup done in "),
        "{}",
        jwt.show()
    );
    assert_eq!(server_state(&bao), before, "left something behind");

    // Without --progress, and stderr not a terminal: no progress lines.
    let r = run(vault_cmd(&bao, &args));
    r.assert_code(0);
    assert!(!r.stderr.contains("progress:"), "{}", r.show());
    assert_eq!(server_state(&bao), before, "left something behind");
}

#[test]
fn a_count_the_server_refuses_stops_at_the_first_failures_and_is_removed() {
    let bao = OpenBao::start();
    let before = server_state(&bao);
    // At most 20 requests a second on the dev server's own `secret/` mount.
    let (s, b) = bao.api(
        "POST",
        "/v1/sys/quotas/rate-limit/vblast-setup-test",
        Some(r#"{"rate": 20, "interval": "1s", "path": "secret/"}"#),
    );
    assert_eq!(s, 204, "{b}");
    let r = run(vault_cmd(
        &bao,
        &[
            "--op",
            "kv-read",
            "--mount",
            "secret",
            "--secrets",
            "400",
            "-c",
            "2",
            "-n",
            "10",
            "--no-server-stats",
        ],
    ));
    r.assert_code(2);
    for part in [
        "vblast: kv seeding stopped at the first failure, ",
        " of 400 secrets done (the server throttled the requests of --secrets 400",
        "HTTP 429",
    ] {
        assert!(r.stderr.contains(part), "{part}: {}", r.show());
    }
    assert!(!r.stderr.contains("is left"), "{}", r.show());
    let (s, b) = bao.api(
        "DELETE",
        "/v1/sys/quotas/rate-limit/vblast-setup-test",
        None,
    );
    assert_eq!(s, 204, "{b}");
    // Nothing of what the seeding wrote is left in the mount.
    let (s, b) = bao.api("LIST", "/v1/secret/metadata/", None);
    assert_eq!(s, 404, "secrets left: {b}");
    assert_eq!(server_state(&bao), before, "left something behind");
}
