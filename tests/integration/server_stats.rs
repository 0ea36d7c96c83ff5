//! Server-side evidence (docs/server-stats.md) against a real OpenBao dev server: the
//! nodes are sampled by default and their samples land in the results file (valid against
//! docs/schema/), the text report's Server section and its accounting cross-check;
//! `--no-server-stats`; a token that may not read sys/host-info gets one note and the run
//! goes on; `--server-pid` of the server's own process gives its CPU and RSS; a pid that
//! does not exist is said once. No time or throughput is asserted.

use crate::support::openbao::OpenBao;
use crate::support::run::run;
use crate::support::vblast::vault_cmd;
use serde_json::Value;

/// A closed-model run of `n` kv reads with `extra` flags, its results file read back.
fn sampled(bao: &OpenBao, n: &str, extra: &[&str]) -> (crate::support::run::Out, Value) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("run.json");
    let file_arg = file.to_str().unwrap();
    let mut args = vec!["-c", "2", "-n", n, "--op", "kv-read", "--output", file_arg];
    args.extend_from_slice(extra);
    let out = run(vault_cmd(bao, &args));
    let doc = std::fs::read_to_string(&file)
        .map(|t| serde_json::from_str(&t).expect("results JSON"))
        .unwrap_or(Value::Null);
    (out, doc)
}

fn samples(doc: &Value) -> &Vec<Value> {
    doc["server_samples"]["nodes"][0]["samples"]
        .as_array()
        .unwrap_or_else(|| panic!("no samples: {doc}"))
}

#[test]
fn sampling_is_on_by_default_and_the_server_counts_what_the_client_had_answered() {
    let bao = OpenBao::start();
    let dir = tempfile::tempdir().unwrap();
    let (out, doc) = sampled(&bao, "3000", &[]);
    out.assert_code(0);
    let nodes = doc["server_samples"]["nodes"].as_array().expect("nodes");
    assert_eq!(nodes.len(), 1, "{doc}");
    assert_eq!(nodes[0]["node"], bao.addr.as_str());
    // One before the load and one after, at least.
    let s = samples(&doc);
    assert!(s.len() >= 2, "{doc}");
    assert!(s[0]["handle_request"]["count"].is_number(), "{doc}");
    assert!(s[0]["host_cpu"]["cpus"].as_u64().unwrap_or(0) >= 1, "{doc}");
    // The accounting: without warm-up the edges are exact.
    let server = &doc["server"];
    assert_eq!(server["client_answered"], 3000, "{server}");
    assert_eq!(server["handled"], 3000, "{server}");
    assert_eq!(server["difference"], 0, "{server}");
    assert_eq!(server["beyond"], false, "{server}");
    assert!(
        server["server_ms"].as_f64().unwrap_or(0.0) > 0.0,
        "{server}"
    );
    // What the sampling cost vblast is measured (its own CPU clock) and said.
    assert!(
        server["sampling_cpu_s"].as_f64().unwrap_or(0.0) > 0.0,
        "{server}"
    );
    assert!(
        doc["server_samples"]["sampler_cpu_s"]
            .as_f64()
            .unwrap_or(0.0)
            > 0.0,
        "the results keep the sampler's CPU: {}",
        doc["server_samples"]
    );
    out.line("Server (sampled on the node)");
    assert!(
        out.stdout.contains("  sampling cost vblast "),
        "{}",
        out.show()
    );
    assert!(
        out.stdout
            .contains("accounting: server handled 3000, client answered 3000, difference +0"),
        "{}",
        out.show()
    );
    // The results file and the JSON report validate against their schemas.
    let file = dir.path().join("r.json");
    std::fs::write(&file, doc.to_string()).unwrap();
    crate::schema::assert_valid("results.schema.json", &[&file]);
    let json = run(vault_cmd(
        &bao,
        &[
            "-c", "1", "-n", "200", "--op", "kv-read", "--format", "json",
        ],
    ));
    json.assert_code(0);
    let report = dir.path().join("report.json");
    std::fs::write(&report, &json.stdout).unwrap();
    crate::schema::assert_valid("report.schema.json", &[&report]);
    assert!(
        json.json()["server"]["nodes"][0]["samples"]
            .as_u64()
            .unwrap_or(0)
            >= 2
    );
}

#[test]
fn no_server_stats_samples_nothing() {
    let bao = OpenBao::start();
    let (out, doc) = sampled(&bao, "300", &["--no-server-stats"]);
    out.assert_code(0);
    assert!(doc.get("server_samples").is_none(), "{doc}");
    assert!(doc.get("server").is_none(), "{doc}");
    assert!(!out.stdout.contains("Server (sampled"), "{}", out.show());
}

#[test]
fn a_token_without_host_info_rights_gets_one_note_and_the_run_goes_on() {
    let bao = OpenBao::start();
    let policy = r#"{"policy": "path \"vblast-*\" { capabilities = [\"create\", \"read\", \"update\", \"delete\", \"list\"] }\npath \"sys/mounts*\" { capabilities = [\"create\", \"read\", \"update\", \"delete\", \"list\", \"sudo\"] }"}"#;
    let (s, b) = bao.api("PUT", "/v1/sys/policies/acl/no-host-info", Some(policy));
    assert!(s == 200 || s == 204, "{s} {b}");
    let (s, b) = bao.api(
        "POST",
        "/v1/auth/token/create",
        Some(r#"{"policies": ["no-host-info"], "no_default_policy": false}"#),
    );
    assert_eq!(s, 200, "{b}");
    let token: Value = serde_json::from_str(&b).unwrap();
    let token = token["auth"]["client_token"].as_str().unwrap().to_string();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("run.json");
    let mut cmd = vault_cmd(
        &bao,
        &[
            "-c",
            "2",
            "-n",
            "500",
            "--op",
            "kv-read",
            "--output",
            file.to_str().unwrap(),
        ],
    );
    cmd.env("VAULT_TOKEN", &token);
    let out = run(cmd);
    out.assert_code(0);
    assert_eq!(
        out.stderr.matches("sys/host-info: HTTP 403").count(),
        1,
        "{}",
        out.show()
    );
    assert!(!out.stderr.contains(&token), "{}", out.show());
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let node = &doc["server_samples"]["nodes"][0];
    assert_eq!(node["missing"].as_array().map(Vec::len), Some(1), "{doc}");
    // The telemetry still came.
    assert!(samples(&doc).iter().all(|s| s.get("host_cpu").is_none()));
    assert!(samples(&doc)[0]["handle_request"].is_object(), "{doc}");
    assert!(
        out.stdout.contains("not sampled: sys/host-info"),
        "{}",
        out.show()
    );
}

#[test]
fn server_pid_gives_the_process_cpu_and_rss_and_a_missing_pid_is_said_once() {
    let bao = OpenBao::start();
    let pid = bao.pid().to_string();
    let (out, doc) = sampled(&bao, "1000", &["--server-pid", &pid]);
    out.assert_code(0);
    assert_eq!(doc["server_samples"]["nodes"][0]["pid"], bao.pid());
    for s in samples(&doc) {
        assert!(s["process"]["rss_bytes"].as_u64().unwrap_or(0) > 0, "{s}");
        assert!(s["process"]["cpu_s"].as_f64().is_some(), "{s}");
    }
    assert!(
        doc["server"]["nodes"][0]["rss_bytes_peak"]
            .as_f64()
            .unwrap_or(0.0)
            > 0.0,
        "{doc}"
    );
    let (out, doc) = sampled(&bao, "300", &["--server-pid", "4294967295"]);
    out.assert_code(0);
    assert_eq!(
        out.stderr.matches("--server-pid 4294967295").count(),
        1,
        "{}",
        out.show()
    );
    assert!(out.stderr.contains("no such process"), "{}", out.show());
    assert!(samples(&doc).iter().all(|s| s.get("process").is_none()));
    // Too short an interval is bad input, before any request.
    let (out, _) = sampled(&bao, "10", &["--server-interval", "10ms"]);
    out.assert_code(2);
    assert!(out.stderr.contains("--server-interval"), "{}", out.show());
}

/// A rate sweep against OpenBao pinned to one core (`taskset`): every step's results hold
/// the node's samples, and at the knee (the step far beyond what one core serves) the
/// sweep names the server's CPU, with its figures, in the footer and the file's answer.
#[test]
fn a_sweep_samples_each_step_and_names_the_server_cpu_of_a_server_on_one_core() {
    let bao = OpenBao::start();
    let pinned = std::process::Command::new("taskset")
        .args(["-a", "-c", "-p", "0", &bao.pid().to_string()])
        .output()
        .expect("taskset");
    assert!(pinned.status.success(), "{pinned:?}");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sweep.json");
    let pid = bao.pid().to_string();
    // Two steps, no bisection: 10 req/s, then 20,000 (far beyond one core); only the
    // achieved-rate bound can break. RSA-2048 signing costs the server milliseconds of CPU
    // per request and the client microseconds, so 16 requests in flight keep the server's
    // core full even when other tests starve the client on a busy machine.
    let out = run(vault_cmd(
        &bao,
        &[
            "sweep",
            "--op",
            "transit-sign",
            "--key-type",
            "rsa-2048",
            "--rate",
            "10..20000",
            "--steps",
            "2",
            "--resolution",
            "20000",
            "--step-duration",
            "4s",
            "--step-warmup",
            "0s",
            "--slo",
            "p50=60s",
            "-c",
            "16",
            "--server-pid",
            &pid,
            "--output",
            file.to_str().unwrap(),
        ],
    ));
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let steps = doc["steps"].as_array().expect("steps");
    assert_eq!(steps.len(), 2, "{}", out.show());
    for s in steps {
        let node = &s["results"]["server_samples"]["nodes"][0];
        assert!(
            node["samples"].as_array().is_some_and(|v| v.len() >= 2),
            "{s}"
        );
        assert_eq!(node["samples"][0]["process"]["cpus_allowed"], 1, "{s}");
        assert!(
            s["results"]["server"]["handled"].as_u64().unwrap_or(0) > 0,
            "{s}"
        );
    }
    let saturated = &doc["answer"]["saturated"];
    assert_eq!(
        saturated["resource"],
        "server-cpu",
        "{}\n{doc:#}",
        out.show()
    );
    assert_eq!(saturated["load"], 20000, "{saturated}");
    crate::schema::assert_valid("results.schema.json", &[&file]);
    out.line("Saturated first at 20000 req/s: server CPU (server CPU ");
    assert!(out.stdout.contains("of 1)"), "{}", out.show());
}

/// The audit devices on `bao` that vblast named.
fn vblast_audit_devices(bao: &OpenBao) -> Vec<String> {
    let (status, body) = bao.api("GET", "/v1/sys/audit", None);
    assert_eq!(status, 200, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    v["data"]
        .as_object()
        .map(|o| {
            o.keys()
                .filter(|k| k.starts_with("vblast-"))
                .cloned()
                .collect()
        })
        .unwrap_or_default()
}

/// `--audit-path`: a file audit device for the run (OpenBao enables one over the API only
/// with `unsafe_allow_api_audit_creation`): a mix's responses in its log match vblast's
/// counts per operation exactly; the device is gone after the run, after SIGTERM, after
/// SIGINT (Ctrl-C), after a run whose requests all failed (exit 1), and a path the server
/// cannot write is refused with exit 2, leaving nothing.
#[test]
fn an_audit_device_counts_what_the_client_counted_and_goes_on_every_exit() {
    let bao = OpenBao::start_with_config("unsafe_allow_api_audit_creation = true\n");
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("audit.log");
    let log_arg = log.to_str().unwrap();
    let out = run(vault_cmd(
        &bao,
        &[
            "-c",
            "2",
            "-n",
            "600",
            "--op",
            "kv-read:3,kv-write:1",
            "--audit-path",
            log_arg,
        ],
    ));
    out.assert_code(0);
    let line = out
        .stderr
        .lines()
        .find(|l| l.starts_with("vblast: audit log: "))
        .unwrap_or_else(|| panic!("no audit line:\n{}", out.show()));
    assert!(
        line.ends_with("exact agreement with the client's counts"),
        "{line}"
    );
    assert!(
        line.contains("kv-read ") && line.contains("kv-write "),
        "{line}"
    );
    assert!(vblast_audit_devices(&bao).is_empty());
    // SIGTERM and SIGINT (Ctrl-C) mid-run, once the device is there: it goes with the cleanup.
    for (signal, status) in [(libc::SIGTERM, 143), (libc::SIGINT, 130)] {
        let running = crate::support::run::spawn(vault_cmd(
            &bao,
            &[
                "-c",
                "1",
                "-z",
                "30s",
                "-R",
                "50",
                "--op",
                "kv-read",
                "--audit-path",
                log_arg,
            ],
        ));
        let began = std::time::Instant::now();
        while vblast_audit_devices(&bao).is_empty() {
            assert!(began.elapsed().as_secs() < 60, "no audit device enabled");
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        // SAFETY: a signal to the child this test started.
        unsafe { libc::kill(running.child.id() as libc::pid_t, signal) };
        let out = running.finish(std::time::Duration::from_secs(60));
        out.assert_code(status);
        assert!(vblast_audit_devices(&bao).is_empty(), "{}", out.show());
    }
    // A run whose every request fails (--no-setup reads secrets that are not there: 404):
    // exit 1, and the device is gone all the same.
    let out = run(vault_cmd(
        &bao,
        &[
            "-c",
            "1",
            "-n",
            "20",
            "--op",
            "kv-read",
            "--no-setup",
            "--audit-path",
            log_arg,
        ],
    ));
    out.assert_code(1);
    assert!(out.stdout.contains("0 ok, 20 failed"), "{}", out.show());
    assert!(vblast_audit_devices(&bao).is_empty(), "{}", out.show());
    // A path the server cannot write: one message, exit 2, nothing left.
    let out = run(vault_cmd(
        &bao,
        &[
            "-c",
            "1",
            "-n",
            "5",
            "--op",
            "kv-read",
            "--audit-path",
            "/proc/vblast/audit.log",
        ],
    ));
    out.assert_code(2);
    assert!(
        out.stderr
            .contains("--audit-path /proc/vblast/audit.log: the server cannot enable"),
        "{}",
        out.show()
    );
    assert!(vblast_audit_devices(&bao).is_empty());
}

/// The `vblast: audit log: ...` line of a run that agreed exactly with the client.
fn exact_audit_line(out: &crate::support::run::Out) {
    out.assert_code(0);
    let line = out
        .stderr
        .lines()
        .find(|l| l.starts_with("vblast: audit log: "))
        .unwrap_or_else(|| panic!("no audit line:\n{}", out.show()));
    assert!(
        line.ends_with("exact agreement with the client's counts"),
        "{}",
        out.show()
    );
}

/// OpenBao on its defaults: its file audit device declared in its configuration, none
/// allowed over the API. `--audit-log FILE` counts that device's log (the run's own
/// entries: not the setup's seeding writes before them); `--audit-path` of the same file
/// finds the device through `sys/audit` and enables nothing; `--audit-path` of another
/// file, refused by the server, counts the declared device's log instead; a log that
/// cannot be read here is one message, exit 2. No audit device is ever created.
#[test]
fn a_declared_audit_device_is_counted_without_creating_one() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("declared.log");
    let bao = OpenBao::start_with_config(&format!(
        "audit \"file\" \"declared\" {{\n  options {{\n    file_path = \"{}\"\n  }}\n}}\n",
        log.display()
    ));
    let (status, body) = bao.api(
        "PUT",
        "/v1/sys/audit/probe",
        Some(r#"{"type":"file","options":{"file_path":"/tmp/vblast-probe.log"}}"#),
    );
    assert!(status >= 400, "audit devices allowed over the API: {body}");
    let log_arg = log.to_str().unwrap();
    let mix = ["-c", "2", "-n", "400", "--op", "kv-read:3,kv-write:1"];
    let with = |extra: &[&str]| {
        let mut a = mix.to_vec();
        a.extend_from_slice(extra);
        run(vault_cmd(&bao, &a))
    };
    let out = with(&["--audit-log", log_arg]);
    exact_audit_line(&out);
    assert!(
        out.stderr.contains("counting the audit log ")
            && out.stderr.contains("file audit device declared"),
        "{}",
        out.show()
    );
    let out = with(&["--audit-path", log_arg]);
    exact_audit_line(&out);
    assert!(
        out.stderr
            .contains("file audit device declared already writes"),
        "{}",
        out.show()
    );
    let other = dir.path().join("other.log");
    let out = with(&["--audit-path", other.to_str().unwrap()]);
    exact_audit_line(&out);
    assert!(
        out.stderr.contains("counted from it instead"),
        "{}",
        out.show()
    );
    assert!(!other.exists());
    assert!(vblast_audit_devices(&bao).is_empty());
    let (_, body) = bao.api("GET", "/v1/sys/audit", None);
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["data"].as_object().map(|o| o.len()), Some(1), "{body}");
    // A log this machine cannot read: one message, exit 2, before the load.
    let missing = dir.path().join("nope.log");
    let out = with(&["--audit-log", missing.to_str().unwrap()]);
    out.assert_code(2);
    assert!(
        out.stderr.contains("--audit-log") && out.stderr.contains("cannot read"),
        "{}",
        out.show()
    );
    assert!(out.stdout.is_empty(), "{}", out.show());
}

/// The first field of a protobuf message: a field number and a known wire type and, when
/// length-delimited, a length that fits in what follows.
fn looks_like_protobuf(b: &[u8]) -> bool {
    let Some(&tag) = b.first() else {
        return false;
    };
    // Go writes its fields in no fixed order: any field number, a known wire type.
    if tag >> 3 == 0 || ![0, 1, 2, 5].contains(&(tag & 7)) {
        return false;
    }
    if tag & 7 != 2 {
        return b.len() > 1;
    }
    let (mut len, mut shift, mut i) = (0usize, 0, 1);
    while let Some(&byte) = b.get(i) {
        len |= ((byte & 0x7f) as usize) << shift;
        i += 1;
        if byte & 0x80 == 0 {
            return len <= b.len() - i;
        }
        shift += 7;
    }
    false
}

/// `--pprof-interval`: CPU, heap and goroutine profiles of the node beside the results
/// file, listed in it, each gzip-compressed protobuf; a directory that cannot be made is
/// refused before any request.
#[test]
fn pprof_profiles_are_saved_beside_the_results_and_listed() {
    let bao = OpenBao::start();
    let dir = tempfile::tempdir().unwrap();
    let (out, doc) = sampled_for(
        &bao,
        dir.path(),
        &["-z", "3s", "-R", "50", "--pprof-interval", "2s"],
    );
    out.assert_code(0);
    let files: Vec<&str> = doc["server_samples"]["profiles"]
        .as_array()
        .unwrap_or_else(|| panic!("no profiles: {}", out.show()))
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for kind in ["-cpu.pb.gz", "-heap.pb.gz", "-goroutine.pb.gz"] {
        assert!(files.iter().any(|f| f.ends_with(kind)), "{kind}: {files:?}");
    }
    for f in &files {
        let path = std::path::Path::new(f);
        assert_eq!(path.parent(), Some(dir.path()), "{f}");
        let bytes = std::fs::read(path).unwrap();
        assert_eq!(&bytes[..2], &[0x1f, 0x8b], "{f} is not gzip");
        let plain = std::process::Command::new("gzip")
            .arg("-dc")
            .arg(path)
            .output()
            .expect("gzip");
        assert!(plain.status.success(), "{f}: {plain:?}");
        assert!(looks_like_protobuf(&plain.stdout), "{f} is not protobuf");
    }
    let bad = run(vault_cmd(
        &bao,
        &[
            "-n",
            "5",
            "--op",
            "kv-read",
            "--pprof-interval",
            "2s",
            "--pprof-dir",
            "/proc/vblast",
        ],
    ));
    bad.assert_code(2);
    assert!(
        bad.stderr.contains("--pprof-dir /proc/vblast"),
        "{}",
        bad.show()
    );
}

/// A kv-read run with `extra` flags, its results file in `dir`, read back.
fn sampled_for(
    bao: &OpenBao,
    dir: &std::path::Path,
    extra: &[&str],
) -> (crate::support::run::Out, Value) {
    let file = dir.join("run.json");
    let mut args = vec![
        "-c",
        "1",
        "--op",
        "kv-read",
        "--output",
        file.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let out = run(vault_cmd(bao, &args));
    let doc = std::fs::read_to_string(&file)
        .map(|t| serde_json::from_str(&t).expect("results JSON"))
        .unwrap_or(Value::Null);
    (out, doc)
}

/// A server whose telemetry keeps no Prometheus form (`prometheus_retention_time = "0s"`)
/// and a `--server-pid` whose process exits once the load runs: the run goes on with the
/// JSON form's gauges, and each missing source is said once, on stderr and in the report.
#[test]
fn telemetry_off_and_a_server_pid_that_exits_mid_run_are_said_once() {
    let bao = OpenBao::start_with_config("telemetry {\n  prometheus_retention_time = \"0s\"\n}\n");
    let mut sleeper = std::process::Command::new("sleep")
        .arg("120")
        .spawn()
        .expect("sleep");
    let gone = sleeper.id().to_string();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("run.json");
    let maddr = format!("127.0.0.1:{}", crate::support::ports::free_port());
    let running = crate::support::run::spawn(vault_cmd(
        &bao,
        &[
            "-c",
            "2",
            "-R",
            "40",
            "-z",
            "5s",
            "--op",
            "kv-read",
            "--server-pid",
            &gone,
            "--metrics-listen",
            &maddr,
            "--output",
            file.to_str().unwrap(),
        ],
    ));
    // Once the load has begun (the first samples are taken before it), the process ends.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let text = crate::support::client::scrape(&maddr);
        let sent = text.lines().find_map(|l| {
            l.strip_prefix("vblast_requests_total ")?
                .parse::<u64>()
                .ok()
        });
        if sent.is_some_and(|n| n > 0) || std::time::Instant::now() > deadline {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let _ = sleeper.kill();
    let _ = sleeper.wait();
    let out = running.finish(std::time::Duration::from_secs(60));
    out.assert_code(0);
    let said = [
        "not kept by this server".to_string(),
        format!("--server-pid {gone}: the process ended during the run"),
    ];
    for s in &said {
        assert_eq!(
            out.stderr.matches(s.as_str()).count(),
            1,
            "{s}:\n{}",
            out.show()
        );
        assert_eq!(
            out.stdout.matches(s.as_str()).count(),
            1,
            "{s}:\n{}",
            out.show()
        );
    }
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(
        doc["server_samples"]["nodes"][0]["missing"]
            .as_array()
            .map(Vec::len),
        Some(2)
    );
    let s = samples(&doc);
    // No request counts or times (the JSON form's gauges, when its current 10 s interval
    // has them); the process until it ended.
    assert!(s.iter().all(|s| s.get("handle_request").is_none()), "{doc}");
    assert!(s[0]["process"].is_object(), "{doc}");
    assert!(s.last().unwrap().get("process").is_none(), "{doc}");
    assert!(doc["requests"].as_u64().unwrap_or(0) > 0, "{}", out.show());
}
