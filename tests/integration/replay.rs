//! `vblast replay` of real OpenBao audit logs (issue 37, item 3): a known vblast mix run
//! with `--audit-path` is replayed; at `--scale 1` each recorded second's requests are
//! intended and answered, and the replay's own audit log shows the same mix, counted by
//! the server; `--scale 2` doubles every second; `--speed 10` runs the log in a tenth of
//! its span; what vblast cannot make a fixture for is counted and named, and nothing is
//! left on the server. Counts only: no assertion on a time.

use crate::support::openbao::{OpenBao, ServerState};
use crate::support::run::{Out, run};
use crate::support::vblast::{url_cmd, vault_cmd};
use serde_json::Value;
use std::path::Path;

/// The mix the log is made of (no userpass: its bcrypt would make the server, not the
/// replay, the subject on a busy machine).
const MIX: &str = "kv-read:3,kv-write:1,kv-list:1,approle-login:1,transit-encrypt:1,token-lookup:1";

/// Makes an audit log of `MIX` at 30 req/s for 3 s.
fn recorded_log(bao: &OpenBao, log: &Path) {
    let out = run(vault_cmd(
        bao,
        &[
            "-c",
            "2",
            "-R",
            "30",
            "-z",
            "3s",
            "--op",
            MIX,
            "--secrets",
            "20",
            "--audit-path",
            log.to_str().unwrap(),
            "-q",
        ],
    ));
    out.assert_code(0);
}

/// `vblast replay --format json LOG EXTRA...` (exit 0): its report and its run.
fn replay(bao: &OpenBao, log: &Path, extra: &[&str]) -> (Value, Out) {
    let mut args = vec!["replay", "--format", "json", "-q", log.to_str().unwrap()];
    args.extend_from_slice(extra);
    let out = run(vault_cmd(bao, &args));
    out.assert_code(0);
    (out.json(), out)
}

fn ops(report: &Value) -> Vec<(String, u64, u64, u64, u64)> {
    report["operations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            let n = |k: &str| o[k].as_u64().unwrap();
            (
                o["name"].as_str().unwrap().to_string(),
                n("recorded"),
                n("intended"),
                n("requests"),
                n("ok"),
            )
        })
        .collect()
}

fn per_second(report: &Value, key: &str) -> Vec<u64> {
    report["seconds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s[key].as_u64().unwrap())
        .collect()
}

/// `v` without its trailing zeros.
fn no_trailing_zeros(mut v: Vec<u64>) -> Vec<u64> {
    while v.last() == Some(&0) {
        v.pop();
    }
    v
}

/// The requests of each operation in a profile of `log`.
fn profiled(log: &Path) -> Vec<(String, u64)> {
    let out = run(url_cmd(&[
        "profile",
        "--format",
        "json",
        log.to_str().unwrap(),
    ]));
    out.assert_code(0);
    let p = out.json();
    p["operations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (
                o["name"].as_str().unwrap().to_string(),
                o["requests"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// No accessor or HMAC'd value of the log in what a replay printed.
fn assert_private(log: &Path, out: &Out) {
    let text = std::fs::read_to_string(log).unwrap();
    let printed = format!("{}{}", out.stdout, out.stderr);
    assert!(!printed.contains("hmac-sha256"), "{}", out.show());
    for line in text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
    {
        if let Some(a) = line["request"]["client_token_accessor"].as_str() {
            assert!(!printed.contains(a), "accessor {a} printed");
        }
    }
}

#[test]
fn a_vblast_log_is_replayed_second_by_second_with_its_mix_and_leaves_nothing() {
    let bao = OpenBao::start_with_config("unsafe_allow_api_audit_creation = true\n");
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("audit.log");
    recorded_log(&bao, &log);
    let before = ServerState::of(&bao);
    let recorded: Vec<(String, u64)> = profiled(&log);

    // Scale 1: every recorded request intended in its own second, sent and answered; the
    // server's own log of the replay counts the same mix.
    let again = dir.path().join("replay.log");
    let (r, out) = replay(&bao, &log, &["--audit-path", again.to_str().unwrap()]);
    assert_private(&log, &out);
    let seconds = per_second(&r, "recorded");
    assert_eq!(per_second(&r, "intended"), seconds, "{r:#}");
    assert!(seconds.iter().filter(|&&n| n > 0).count() >= 3, "{r:#}");
    let replayed = r["replayed_requests"].as_u64().unwrap();
    assert_eq!(seconds.iter().sum::<u64>(), replayed, "{r:#}");
    assert_eq!(r["requests"].as_u64(), Some(replayed), "{r:#}");
    assert_eq!(r["not_sent"].as_u64(), Some(0), "{r:#}");
    assert_eq!(
        per_second(&r, "achieved").iter().sum::<u64>(),
        replayed,
        "{r:#}"
    );
    for (name, rec, intended, sent, ok) in ops(&r) {
        let in_log = recorded.iter().find(|p| p.0 == name).map_or(0, |p| p.1);
        assert_eq!(
            (rec, intended, sent, ok),
            (in_log, in_log, in_log, in_log),
            "{name}: {r:#}"
        );
    }
    let server_saw = profiled(&again);
    for (name, rec, ..) in ops(&r) {
        let n = server_saw.iter().find(|p| p.0 == name).map_or(0, |p| p.1);
        // The replay's own check of its tokens (lookup-accessor) adds token lookups.
        let ok = if name == "token-lookup" {
            n >= rec
        } else {
            n == rec
        };
        assert!(
            ok,
            "{name}: {n} on the server, {rec} recorded: {server_saw:?} {r:#}"
        );
    }
    // What vblast has no fixture for (the run's sampler's sys/ reads) is named, not sent.
    let left = r["left_out"].as_array().unwrap();
    assert!(
        left.iter().all(|l| l["requests"].as_u64().unwrap() > 0),
        "{r:#}"
    );
    assert_eq!(
        ServerState::settled(&bao, &before),
        before,
        "the replay left something"
    );

    // Scale 2: each recorded second's count doubled, each operation's too.
    let (r2, _) = replay(&bao, &log, &["--scale", "2"]);
    let doubled: Vec<u64> = seconds.iter().map(|n| 2 * n).collect();
    // (A response that lands after the log's last second adds a second to the report, with
    // nothing intended in it: a busy machine's, not the schedule's.)
    assert_eq!(
        no_trailing_zeros(per_second(&r2, "intended")),
        no_trailing_zeros(doubled),
        "{r2:#}"
    );
    assert_eq!(r2["requests"].as_u64(), Some(2 * replayed), "{r2:#}");
    for (name, rec, intended, sent, _) in ops(&r2) {
        assert_eq!((intended, sent), (2 * rec, 2 * rec), "{name}: {r2:#}");
    }
    // Speed 10: the same requests over a tenth of the span.
    let (r10, _) = replay(&bao, &log, &["--speed", "10"]);
    let span = r10["recorded_span_s"].as_f64().unwrap();
    assert!((r10["intended_span_s"].as_f64().unwrap() - span / 10.0).abs() < 1e-9);
    assert_eq!(r10["requests"].as_u64(), Some(replayed), "{r10:#}");
    // A log of under ten seconds: all of it intended in the replay's first second.
    assert!(span < 10.0, "{r10:#}");
    assert_eq!(per_second(&r10, "intended")[0], replayed, "{r10:#}");
    assert_eq!(
        ServerState::settled(&bao, &before),
        before,
        "a replay left something"
    );
}

/// What vblast cannot make a fixture for, a bad line and an unreadable log: said, with
/// the line where it applies; a factor of 0 or below refused before anything is read.
#[test]
fn bad_input_to_a_replay_is_said_once() {
    let bao = OpenBao::start_with_config("unsafe_allow_api_audit_creation = true\n");
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("audit.log");
    recorded_log(&bao, &log);
    let text = std::fs::read_to_string(&log).unwrap();
    let entries: Vec<Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let write = |name: &str, lines: &[String]| {
        let p = dir.path().join(name);
        std::fs::write(&p, lines.join("\n") + "\n").unwrap();
        p
    };
    // An engine vblast has no fixture for: the approle logins as LDAP logins.
    let as_ldap: Vec<String> = entries
        .iter()
        .filter(|e| {
            e["request"]["path"]
                .as_str()
                .unwrap_or("")
                .ends_with("/login")
        })
        .map(|e| {
            let mut e = e.clone();
            e["request"]["mount_type"] = "ldap".into();
            e["request"]["mount_point"] = "auth/corp-ldap/".into();
            e["request"]["path"] = "auth/corp-ldap/login/alice".into();
            e.to_string()
        })
        .collect();
    assert!(!as_ldap.is_empty());
    let ldap = write("ldap.log", &as_ldap);
    let out = run(vault_cmd(&bao, &["replay", ldap.to_str().unwrap()]));
    out.assert_code(2);
    assert!(
        out.stderr.contains("ldap-login") && out.stderr.contains("cannot make a fixture"),
        "{}",
        out.show()
    );
    assert!(!out.stderr.contains("alice"), "{}", out.show());
    // Beside replayable requests: counted, named, a note; a line that is not JSON said
    // with its line number; the rest replayed.
    let mut mixed: Vec<String> = text.lines().map(str::to_string).collect();
    mixed.insert(3, "not json".into());
    mixed.extend(as_ldap.iter().cloned());
    let mixed = write("mixed.log", &mixed);
    let out = run(vault_cmd(
        &bao,
        &["replay", "--format", "json", "-q", mixed.to_str().unwrap()],
    ));
    out.assert_code(0);
    assert!(
        out.stderr.contains("mixed.log:4: not JSON"),
        "{}",
        out.show()
    );
    assert!(
        out.stderr.contains("left out of the replay: ldap-login"),
        "{}",
        out.show()
    );
    let r = out.json();
    let ldap_left = r["left_out"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["what"] == "ldap-login")
        .unwrap_or_else(|| panic!("{r:#}"));
    let ldap_requests = as_ldap
        .iter()
        .filter(|l| l.contains(r#""type":"request""#))
        .count();
    assert!(ldap_requests > 0 && ldap_requests < as_ldap.len());
    assert_eq!(ldap_left["requests"].as_u64(), Some(ldap_requests as u64));
    assert!(!out.stdout.contains("alice"));
    // Only responses: nothing to replay.
    let responses: Vec<String> = entries
        .iter()
        .filter(|e| e["type"] == "response")
        .map(|e| e.to_string())
        .collect();
    let only = write("responses.log", &responses);
    let out = run(vault_cmd(&bao, &["replay", only.to_str().unwrap()]));
    out.assert_code(2);
    assert!(out.stderr.contains("only responses"), "{}", out.show());
    // Empty, and bad factors.
    let empty = write("empty.log", &[]);
    std::fs::write(&empty, "").unwrap();
    let out = run(vault_cmd(&bao, &["replay", empty.to_str().unwrap()]));
    out.assert_code(2);
    assert!(out.stderr.contains("empty"), "{}", out.show());
    for (flag, value) in [("--scale", "0"), ("--scale", "-2"), ("--speed", "0")] {
        let out = run(vault_cmd(
            &bao,
            &["replay", flag, value, log.to_str().unwrap()],
        ));
        out.assert_code(2);
        assert!(
            out.stderr
                .contains(&format!("{flag} {value}: give a factor above 0")),
            "{}",
            out.show()
        );
        assert_eq!(out.stderr.lines().count(), 1, "{}", out.show());
    }
}

/// Replays `log` at `speed` (slow enough to be still sending), waits until the replay has
/// made `mounts` vblast mounts and 5 s more, sends `sig`, and checks the exit status and
/// that the server is left as `before` (namespaces included); a report, if printed, shows
/// sends. Whether the signal lands in the setup or in the load, nothing may be left.
fn stop_a_replay(
    bao: &OpenBao,
    log: &Path,
    speed: &str,
    mounts: usize,
    (sig, status): (i32, i32),
    before: &ServerState,
) {
    use crate::support::openbao::vblast_mounts;
    use crate::support::process::signal;
    use crate::support::run::spawn;
    use std::time::{Duration, Instant};
    let running = spawn(vault_cmd(
        bao,
        &[
            "replay",
            "--speed",
            speed,
            "--format",
            "json",
            "-q",
            log.to_str().unwrap(),
        ],
    ));
    let deadline = Instant::now() + Duration::from_secs(60);
    while vblast_mounts(bao).len() < mounts {
        assert!(Instant::now() < deadline, "the replay made no mount");
        std::thread::sleep(Duration::from_millis(100));
    }
    // Into the load (a stop during the setup is cleaned up as well, with no report).
    std::thread::sleep(Duration::from_secs(5));
    signal(running.child.id(), sig);
    let out = running.finish(Duration::from_secs(60));
    out.assert_code(status);
    if !out.stdout.is_empty() {
        let r = out.json();
        assert!(r["intended_requests"].as_u64().unwrap() > 0, "{r:#}");
    }
    assert_eq!(&ServerState::settled(bao, before), before, "{}", out.show());
    no_namespace_left(bao);
}

/// A replay stopped by SIGTERM or Ctrl-C part-way (the log slowed to a fifth of its
/// speed) ends with the signal's status, prints what it replayed (when the stop came
/// during the load), and removes what it made.
#[test]
fn a_replay_stopped_by_a_signal_removes_what_it_made() {
    let bao = OpenBao::start_with_config("unsafe_allow_api_audit_creation = true\n");
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("audit.log");
    recorded_log(&bao, &log);
    let before = ServerState::of(&bao);
    for stop in [(libc::SIGTERM, 143), (libc::SIGINT, 130)] {
        stop_a_replay(&bao, &log, "0.2", 1, stop, &before);
    }
}

/// Each accessor's requests per namespace in an audit log, without the accessor: per
/// caller, its (namespace, kv reads and writes) pairs sorted, the callers sorted. Two
/// logs with the same shape of callers give the same value.
pub(crate) fn callers_shape(log: &Path) -> Vec<Vec<(String, u64)>> {
    use std::collections::BTreeMap;
    let mut by: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
    for e in std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["type"] == "request")
    {
        let r = &e["request"];
        if r["mount_type"] != "kv" || !r["path"].as_str().unwrap_or("").contains("/data/") {
            continue;
        }
        let accessor = r["client_token_accessor"]
            .as_str()
            .unwrap_or("")
            .to_string();
        let ns = r["namespace"]["path"].as_str().unwrap_or("").to_string();
        *by.entry(accessor).or_default().entry(ns).or_default() += 1;
    }
    let mut shape: Vec<Vec<(String, u64)>> =
        by.into_values().map(|m| m.into_iter().collect()).collect();
    shape.sort();
    shape
}

/// The server's namespaces (empty when it lists none).
fn namespaces(bao: &OpenBao) -> Vec<String> {
    crate::support::openbao::keys(bao, "/v1/sys/namespaces?list=true")
}

/// Waits (bounded) until the server lists none of its namespaces: a deletion is
/// scheduled, not done, when its call returns.
pub(crate) fn no_namespace_left(bao: &OpenBao) {
    use std::time::{Duration, Instant};
    let deadline = Instant::now() + Duration::from_secs(60);
    while !namespaces(bao).is_empty() {
        assert!(
            Instant::now() < deadline,
            "namespaces left: {:?}",
            namespaces(bao)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A log made by three tokens of their own (and the root token), each reading a kv
/// secret in the root namespace and in namespace team-a, as many times as its number
/// (token i: 2i reads in each); the server is left as it was (no team-a). In `dir`.
pub(crate) fn log_of_callers(bao: &OpenBao, dir: &Path) -> std::path::PathBuf {
    use crate::support::client::http_request;
    let log = dir.join("audit.log");
    bao.audit_to_file(&log);
    bao.namespace("team-a");
    let kv2 = r#"{"type":"kv","options":{"version":"2"}}"#;
    let call = |token: &str, ns: Option<&str>, method: &str, path: &str, body: Option<&str>| {
        let mut headers = vec![("X-Vault-Token", token)];
        if let Some(ns) = ns {
            headers.push(("X-Vault-Namespace", ns));
        }
        let r = http_request(
            &bao.addr,
            method,
            path,
            &headers,
            body.map(str::as_bytes),
            bao.ca_cert.as_deref(),
        )
        .unwrap();
        assert!(r.status < 300, "{method} {path} in {ns:?}: {}", r.text());
        r.text()
    };
    call(
        "root",
        Some("team-a"),
        "POST",
        "/v1/sys/mounts/secret",
        Some(kv2),
    );
    for ns in [None, Some("team-a")] {
        call(
            "root",
            ns,
            "POST",
            "/v1/secret/data/app",
            Some(r#"{"data":{"v":"1"}}"#),
        );
    }
    for i in 1..=3 {
        let made: Value = serde_json::from_str(&call(
            "root",
            None,
            "POST",
            "/v1/auth/token/create",
            Some("{}"),
        ))
        .unwrap();
        let token = made["auth"]["client_token"].as_str().unwrap().to_string();
        for _ in 0..2 * i {
            for ns in [None, Some("team-a")] {
                call(&token, ns, "GET", "/v1/secret/data/app", None);
            }
        }
    }
    bao.audit_off();
    // The replay's server has no team-a (nor the tokens' secrets).
    call(
        "root",
        Some("team-a"),
        "DELETE",
        "/v1/sys/mounts/secret",
        None,
    );
    let (status, body) = bao.api("DELETE", "/v1/sys/namespaces/team-a", None);
    assert!(status < 300, "{body}");
    no_namespace_left(bao);
    log
}

/// A log of several callers in two namespaces (`log_of_callers`): the replay makes team-a
/// again (removed afterwards, with its own fixtures), sends each caller's requests with a
/// token of its own in the recorded namespace, and the server's log of the replay shows
/// the same callers with the same requests per namespace.
#[test]
fn each_caller_is_replayed_by_a_session_of_its_own_in_its_namespace() {
    let bao = OpenBao::start_with_config("unsafe_allow_api_audit_creation = true\n");
    let dir = tempfile::tempdir().unwrap();
    let log = log_of_callers(&bao, dir.path());
    let before = ServerState::of(&bao);

    let again = dir.path().join("replay.log");
    let (r, out) = replay(&bao, &log, &["--audit-path", again.to_str().unwrap()]);
    assert_private(&log, &out);
    let replayed = r["replayed_requests"].as_u64().unwrap();
    assert_eq!(
        (r["requests"].as_u64(), r["ok"].as_u64()),
        (Some(replayed), Some(replayed)),
        "{r:#}\n{}",
        out.show()
    );
    // Root and the three tokens: four callers, four tokens of the replay's own.
    assert_eq!(r["sessions"].as_u64(), Some(4), "{r:#}");
    assert_eq!(r["session_tokens"].as_u64(), Some(4), "{r:#}");
    assert_eq!(r["sessions_folded"].as_u64(), Some(0), "{r:#}");
    let recorded = callers_shape(&log);
    assert_eq!(recorded.len(), 4, "{recorded:?}");
    assert_eq!(callers_shape(&again), recorded);
    // Achieved per second against recorded: every request answered, none before its
    // recorded second (counts only: no bound on how late).
    let (mut sent, mut due) = (0, 0);
    for s in r["seconds"].as_array().unwrap() {
        due += s["intended"].as_u64().unwrap();
        sent += s["achieved"].as_u64().unwrap();
        assert!(sent <= due, "{r:#}");
    }
    assert_eq!((sent, due), (replayed, replayed));
    assert_eq!(ServerState::of(&bao), before, "the replay left something");
    no_namespace_left(&bao);
}

/// A log of kv reads by the root token on two kv mounts of its own in the root namespace
/// and in team-a, of different sizes and versions (`KV_MOUNTS`: namespace, mount, kv
/// version, distinct paths read, reads of each); the secrets are written before the
/// audit device is on (the log holds reads only), and the mounts and team-a are removed
/// after (the server is left as it was). In `dir`.
pub(crate) fn log_of_kv_mounts(bao: &OpenBao, dir: &Path) -> std::path::PathBuf {
    use crate::support::client::http_request;
    let log = dir.join("kv-mounts.log");
    bao.namespace("team-a");
    let call = |ns: &str, method: &str, path: &str, body: Option<&str>| {
        let mut headers = vec![("X-Vault-Token", bao.token.as_str())];
        if !ns.is_empty() {
            headers.push(("X-Vault-Namespace", ns));
        }
        let r = http_request(
            &bao.addr,
            method,
            path,
            &headers,
            body.map(str::as_bytes),
            bao.ca_cert.as_deref(),
        )
        .unwrap();
        assert!(r.status < 300, "{method} {path} in {ns:?}: {}", r.text());
    };
    let path = |mount: &str, version: u8, i: u64| match version {
        2 => format!("/v1/{mount}/data/s{i}"),
        _ => format!("/v1/{mount}/s{i}"),
    };
    for &(ns, mount, version, paths, _) in KV_MOUNTS {
        let kv = format!(r#"{{"type":"kv","options":{{"version":"{version}"}}}}"#);
        call(ns, "POST", &format!("/v1/sys/mounts/{mount}"), Some(&kv));
        for i in 0..paths {
            let body = match version {
                2 => r#"{"data":{"v":"1"}}"#,
                _ => r#"{"v":"1"}"#,
            };
            call(ns, "POST", &path(mount, version, i), Some(body));
        }
    }
    bao.audit_to_file(&log);
    for &(ns, mount, version, paths, reads) in KV_MOUNTS {
        for _ in 0..reads {
            for i in 0..paths {
                call(ns, "GET", &path(mount, version, i), None);
            }
        }
    }
    bao.audit_off();
    for &(ns, mount, ..) in KV_MOUNTS {
        call(ns, "DELETE", &format!("/v1/sys/mounts/{mount}"), None);
    }
    let (status, body) = bao.api("DELETE", "/v1/sys/namespaces/team-a", None);
    assert!(status < 300, "{body}");
    no_namespace_left(bao);
    log
}

/// The kv mounts of `log_of_kv_mounts`: (namespace, mount, kv version, distinct paths,
/// reads of each path).
pub(crate) const KV_MOUNTS: &[(&str, &str, u8, u64, u64)] = &[
    ("", "kv-a", 2, 7, 2),
    ("", "kv-b", 1, 3, 3),
    ("team-a", "kv-a", 2, 4, 1),
    ("team-a", "kv-b", 1, 2, 2),
];

/// Per kv mount vblast made (`vblast-…`) in a server's audit log: (namespace, kv version,
/// distinct secrets written, reads by the run's session tokens), sorted.
pub(crate) fn kv_fixtures_in(log: &Path) -> Vec<(String, u8, u64, u64)> {
    use std::collections::{BTreeMap, BTreeSet};
    let mut by: BTreeMap<(String, String), (u8, BTreeSet<String>, u64)> = BTreeMap::new();
    for e in std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["type"] == "request")
    {
        let r = &e["request"];
        let path = r["path"].as_str().unwrap_or("");
        let mount = path.split('/').next().unwrap_or("");
        if r["mount_type"] != "kv" || !mount.starts_with("vblast-") {
            continue;
        }
        let ns = r["namespace"]["path"].as_str().unwrap_or("").to_string();
        let m = by
            .entry((ns, mount.to_string()))
            .or_insert((1, BTreeSet::new(), 0));
        let rest = &path[mount.len()..];
        if rest.starts_with("/data/") {
            m.0 = 2;
        }
        match r["operation"].as_str().unwrap_or("") {
            "create" | "update" => {
                m.1.insert(rest.to_string());
            }
            "read"
                if e["auth"]["display_name"]
                    .as_str()
                    .unwrap_or("")
                    .contains("vblast-replay-caller") =>
            {
                m.2 += 1
            }
            _ => {}
        }
    }
    let mut out: Vec<(String, u8, u64, u64)> = by
        .into_iter()
        .map(|((ns, _), (v, written, reads))| (ns, v, written.len() as u64, reads))
        .collect();
    out.sort();
    out
}

/// What `kv_fixtures_in` shows of a run that sends `log_of_kv_mounts`' reads once.
pub(crate) fn kv_fixtures_recorded() -> Vec<(String, u8, u64, u64)> {
    let mut want: Vec<(String, u8, u64, u64)> = KV_MOUNTS
        .iter()
        .map(|&(ns, _, v, paths, reads)| {
            let ns = if ns.is_empty() {
                String::new()
            } else {
                format!("{ns}/")
            };
            (ns, v, paths, paths * reads)
        })
        .collect();
    want.sort();
    want
}

/// A log of two kv mounts of different sizes and versions, in the root and in team-a
/// (`log_of_kv_mounts`): the replay makes a kv mount of the same version per recorded
/// mount in each namespace, seeded with as many secrets as the log read distinct paths
/// there, sends each recorded mount's reads to its own (the server's own audit log of
/// the replay counts them), names them `kv-read@kv-a` and `kv-read@kv-b`, and leaves
/// nothing.
#[test]
fn each_recorded_kv_mount_is_replayed_on_a_fixture_of_its_own_size() {
    let bao = OpenBao::start_with_config("unsafe_allow_api_audit_creation = true\n");
    let dir = tempfile::tempdir().unwrap();
    let log = log_of_kv_mounts(&bao, dir.path());
    let before = ServerState::of(&bao);
    let seen = dir.path().join("server.log");
    bao.audit_to_file(&seen);
    let (r, out) = replay(&bao, &log, &[]);
    bao.audit_off();
    let replayed = r["replayed_requests"].as_u64().unwrap();
    assert_eq!(r["ok"].as_u64(), Some(replayed), "{r:#}\n{}", out.show());
    let names: Vec<(String, u64)> = ops(&r).into_iter().map(|o| (o.0, o.1)).collect();
    assert_eq!(
        names,
        [
            ("kv-read@kv-a".to_string(), 18),
            ("kv-read@kv-b".to_string(), 13)
        ],
        "{r:#}"
    );
    assert_eq!(
        kv_fixtures_in(&seen),
        kv_fixtures_recorded(),
        "{}",
        out.show()
    );
    assert_eq!(ServerState::of(&bao), before, "the replay left something");
    no_namespace_left(&bao);
}

/// A replay of two kv mounts in two namespaces (`log_of_kv_mounts`), slowed so that it is
/// still sending when SIGTERM comes: it ends with the signal's status and removes every
/// fixture it made in both namespaces, and the namespace it made. Whether the signal
/// lands in the setup or in the load, nothing is left.
#[test]
fn a_replay_of_two_kv_mounts_stopped_by_sigterm_leaves_nothing_in_either_namespace() {
    let bao = OpenBao::start_with_config("unsafe_allow_api_audit_creation = true\n");
    let dir = tempfile::tempdir().unwrap();
    let log = log_of_kv_mounts(&bao, dir.path());
    let before = ServerState::of(&bao);
    stop_a_replay(&bao, &log, "0.0005", 2, (libc::SIGTERM, 143), &before);
}
