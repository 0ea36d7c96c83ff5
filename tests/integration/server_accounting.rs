//! The Server section's accounting and CPU limit against real OpenBao dev servers (issue
//! 36 items 8 and 16): logins (timed apart by the server) are counted with the rest; the
//! requests in flight at a Ctrl-C are the run's own, not requests lost; a shard's own
//! report does not blame the other shards' requests on the server, and the merged report
//! accounts for the shards' rendezvous; a node without `--server-pid` says a quota cannot
//! be seen from there; a server in a cgroup with a CPU quota made here has its quota read
//! and reported, and a sweep far beyond it names "CPU (quota)". No time or throughput is
//! asserted.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use crate::support::openbao::OpenBao;
use crate::support::run::{run, spawn};
use crate::support::vblast::{vault_cmd, vblast};
use serde_json::Value;

fn read(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("results file")).expect("JSON")
}

/// The text report of a results file (or shards' files, merged).
fn text_report(files: &[&Path]) -> String {
    let mut cmd = vblast();
    cmd.arg("report").args(files);
    let out = run(cmd);
    out.assert_code(0);
    out.stdout
}

#[test]
fn logins_are_counted_and_a_node_without_a_pid_says_its_quota_is_not_visible() {
    let bao = OpenBao::start();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("run.json");
    let out = run(vault_cmd(
        &bao,
        &[
            "-c",
            "2",
            "-n",
            "600",
            "--op",
            "kv-read:70,kv-write:20,approle-login:10",
            "--output",
            file.to_str().unwrap(),
        ],
    ));
    out.assert_code(0);
    let doc = read(&file);
    let server = &doc["server"];
    // Without warm-up the edges are exact: every request, logins with the rest.
    assert_eq!(server["client_answered"], 600, "{server}");
    assert_eq!(server["handled"], 600, "{server}");
    assert_eq!(server["difference"], 0, "{server}");
    assert_eq!(server["beyond"], false, "{server}");
    assert_eq!(
        server["nodes"][0]["cpu_limit_seen"], "not-visible",
        "{server}"
    );
    let text = text_report(&[&file]);
    assert!(text.contains("a quota cannot be seen from here"), "{text}");
    assert!(!text.contains("beyond"), "{text}");
}

#[test]
fn the_requests_in_flight_at_a_ctrl_c_are_the_runs_own() {
    let bao = OpenBao::start();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("run.json");
    let running = spawn(vault_cmd(
        &bao,
        &[
            "-c",
            "16",
            "-z",
            "30s",
            "--op",
            "kv-write",
            // Few secrets to seed: the server's count passes 500 in the load, not in the
            // setup (1000 by default: a Ctrl-C there ends the run before any load, with
            // no results file; seen under load).
            "--secrets",
            "10",
            "--output",
            file.to_str().unwrap(),
        ],
    ));
    // Once the load runs (its secrets written), Ctrl-C with requests in flight.
    let began = Instant::now();
    loop {
        let (_, body) = bao.api("GET", "/v1/sys/metrics?format=prometheus", None);
        // Hundreds of requests handled: past the setup's few, the load runs.
        let handled = body
            .lines()
            .filter_map(|l| l.strip_prefix("vault_core_handle_request_count "))
            .find_map(|v| v.trim().parse::<f64>().ok())
            .unwrap_or(0.0);
        if handled > 500.0 && began.elapsed() > Duration::from_secs(2) {
            break;
        }
        assert!(began.elapsed() < Duration::from_secs(60), "no load");
        std::thread::sleep(Duration::from_millis(200));
    }
    // SAFETY: a signal to the child this test started.
    unsafe { libc::kill(running.child.id() as libc::pid_t, libc::SIGINT) };
    let out = running.finish(Duration::from_secs(60));
    out.assert_code(130);
    assert!(file.exists(), "no results file\n{}", out.show());
    let doc = read(&file);
    let server = &doc["server"];
    assert_eq!(server["beyond"], false, "{server}\n{}", out.show());
    let d = server["difference"].as_i64().expect("a difference");
    assert!((0..=16).contains(&d), "{server}");
    if d > 0 {
        let text = text_report(&[&file]);
        assert!(text.contains("in flight at the stop 16"), "{text}");
    }
}

#[test]
fn a_shard_does_not_blame_the_others_requests_on_the_server() {
    let bao = OpenBao::start();
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<PathBuf> = (0..2)
        .map(|i| dir.path().join(format!("shard{i}.json")))
        .collect();
    // Far enough ahead that both shards have started on a loaded machine.
    let at =
        humantime::format_rfc3339_seconds(SystemTime::now() + Duration::from_secs(15)).to_string();
    let running: Vec<_> = (0..2)
        .map(|i| {
            spawn(vault_cmd(
                &bao,
                &[
                    "-c",
                    "2",
                    "-z",
                    // Shard 1 ends a second later: shard 0's polls of the sync mount and its
                    // marker fall in its window.
                    if i == 0 { "2s" } else { "3s" },
                    "--op",
                    "kv-read",
                    "--shard",
                    &format!("{i}/2"),
                    "--start-at",
                    &at,
                    "--run-id",
                    "acct36",
                    "--output",
                    files[i].to_str().unwrap(),
                ],
            ))
        })
        .collect();
    for r in running {
        r.finish(Duration::from_secs(120)).assert_code(0);
    }
    let merged = text_report(&[&files[0], &files[1]]);
    // Whatever fails below says what each shard's sampler measured and took off; a run
    // with --nocapture says the calibrations and the accounting line each time.
    let why = || evidence(&files, &merged);
    for (i, f) in files.iter().enumerate() {
        let cal = &read(f)["server_samples"]["nodes"][0]["calibration"];
        eprintln!("shard accounting: shard {i} calibration {cal}");
    }
    eprintln!(
        "shard accounting: merged {}",
        merged
            .lines()
            .find(|l| l.contains("accounting:"))
            .unwrap_or("")
            .trim()
    );
    for f in &files {
        let server = &read(f)["server"];
        assert_eq!(server["beyond"], false, "{server}\n{}", why());
        assert_eq!(server["shard_of"], 2, "{server}\n{}", why());
        let text = text_report(&[f]);
        assert!(text.contains("1 of 2 shards"), "{text}\n{}", why());
        assert!(!text.contains("beyond"), "{text}\n{}", why());
    }
    let line = merged
        .lines()
        .find(|l| l.contains("accounting:"))
        .unwrap_or_else(|| panic!("no accounting line:\n{}", why()));
    assert!(!line.contains("beyond"), "{line}\n{}", why());
}

/// Each shard's calibration (its own calls' costs, with every try) and its samples of the
/// node as the accounting takes them: the server's handled count (logins with the rest)
/// and the sampler's own requests taken off it, each at its time from the earliest sample
/// of either shard; then the merged report. The shards' files are kept in a directory that
/// is named here.
fn evidence(files: &[PathBuf], merged: &str) -> String {
    let docs: Vec<Value> = files.iter().map(|f| read(f)).collect();
    let earliest = docs
        .iter()
        .flat_map(|d| {
            d["server_samples"]["nodes"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .flat_map(|n| n["samples"].as_array().cloned().unwrap_or_default())
        .filter_map(|s| s["at_ms"].as_u64())
        .min()
        .unwrap_or(0);
    let count = |s: &Value, key: &str| s[key]["count"].as_f64().unwrap_or(0.0);
    let mut out = String::new();
    for (i, d) in docs.iter().enumerate() {
        let started = d["started_at"].as_str().unwrap_or("?");
        out += &format!("shard {i} (load began {started}):\n");
        for n in d["server_samples"]["nodes"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let cal = &n["calibration"];
            let rel = |v: &Value| v.as_u64().map_or(-1, |v| v as i64 - earliest as i64);
            out += &format!(
                "  node {}: calibration metrics_cost {} (tries {}), host_cost {} (tries {}), from {} to {} ms\n  at_ms handled own_requests\n",
                n["node"],
                cal["metrics_cost"],
                cal["metrics_tries"],
                cal["host_cost"],
                cal["host_tries"],
                rel(&cal["at_ms"][0]),
                rel(&cal["at_ms"][1]),
            );
            for s in n["samples"].as_array().into_iter().flatten() {
                out += &format!(
                    "  {:>6} {:>7} {:>3}\n",
                    rel(&s["at_ms"]),
                    count(s, "handle_request") + count(s, "handle_login_request"),
                    s["own_requests"].as_u64().unwrap_or(0),
                );
            }
        }
        out += &format!("  its server summary: {}\n", d["server"]);
    }
    let kept = std::env::temp_dir().join(format!(
        "vblast-shard-accounting-{}-{}",
        std::process::id(),
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis())
    ));
    if std::fs::create_dir_all(&kept).is_ok() {
        for f in files {
            if let Some(name) = f.file_name() {
                let _ = std::fs::copy(f, kept.join(name));
            }
        }
        out += &format!("the shards' files are kept in {}\n", kept.display());
    }
    out + "merged report:\n" + merged
}

/// A CPU cgroup made by the test, removed (its processes moved back to the root) on drop.
struct CpuCgroup {
    dir: PathBuf,
    root: PathBuf,
}

impl CpuCgroup {
    /// A cgroup limited to `quota_us` per 100 ms period, with `pid` in it; None when this
    /// machine has no CPU controller we may write (not root, or no cgroup file system).
    fn new(pid: u32, quota_us: u64) -> Option<CpuCgroup> {
        let name = format!("vblast-test-quota-{}", std::process::id());
        let v2 = Path::new("/sys/fs/cgroup/cgroup.controllers");
        let (root, v2) = if std::fs::read_to_string(v2)
            .is_ok_and(|c| c.split_whitespace().any(|x| x == "cpu"))
        {
            (PathBuf::from("/sys/fs/cgroup"), true)
        } else if Path::new("/sys/fs/cgroup/cpu/cpu.cfs_quota_us").exists() {
            (PathBuf::from("/sys/fs/cgroup/cpu"), false)
        } else {
            return None;
        };
        let dir = root.join(name);
        std::fs::create_dir(&dir).ok()?;
        let g = CpuCgroup { dir, root };
        let limited = if v2 {
            std::fs::write(g.dir.join("cpu.max"), format!("{quota_us} 100000"))
        } else {
            std::fs::write(g.dir.join("cpu.cfs_period_us"), "100000")
                .and_then(|()| std::fs::write(g.dir.join("cpu.cfs_quota_us"), quota_us.to_string()))
        };
        limited.ok()?;
        std::fs::write(g.dir.join("cgroup.procs"), pid.to_string()).ok()?;
        Some(g)
    }
}

impl Drop for CpuCgroup {
    fn drop(&mut self) {
        if let Ok(procs) = std::fs::read_to_string(self.dir.join("cgroup.procs")) {
            for p in procs.lines() {
                let _ = std::fs::write(self.root.join("cgroup.procs"), p);
            }
        }
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// OpenBao held to 0.2 core by a cgroup quota made here: the quota is read and reported
/// in every step, and a sweep from a trickle to far beyond what 0.2 core serves names the
/// quota at its knee ("CPU (quota)"), the server's throttled time having grown there.
#[test]
fn a_server_under_a_cpu_quota_is_reported_and_named_at_the_knee() {
    let bao = OpenBao::start();
    let Some(_cgroup) = CpuCgroup::new(bao.pid(), 20_000) else {
        crate::support::deps::documented_skip(
            "a_server_under_a_cpu_quota_is_reported_and_named_at_the_knee",
            "no writable CPU cgroup controller here (needs root and /sys/fs/cgroup)",
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sweep.json");
    let pid = bao.pid().to_string();
    // RSA-2048 signing costs the server milliseconds of CPU per request: 1 req/s is a
    // trickle under 0.2 core, 16 requests in flight at 5,000 req/s far beyond it. (5 req/s
    // was not sustained once at load 21-23, two CPU hogs beside the tests: the machine gave
    // the server less than its quota, 0.01 core used and 0.33 waited for.)
    let out = run(vault_cmd(
        &bao,
        &[
            "sweep",
            "--op",
            "transit-sign",
            "--key-type",
            "rsa-2048",
            "--rate",
            "1..5000",
            "--steps",
            "2",
            "--resolution",
            "5000",
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
    let doc = read(&file);
    let steps = doc["steps"].as_array().expect("steps");
    assert_eq!(steps.len(), 2, "{}", out.show());
    for s in steps {
        let node = &s["results"]["server"]["nodes"][0];
        assert_eq!(node["cpu_limit_seen"], "read", "{node}");
        let q = node["quota_cores"].as_f64().expect("the quota");
        assert!((q - 0.2).abs() < 1e-9, "{node}");
        assert!(node["cpu_limit_pct_mean"].as_f64().is_some(), "{node}");
    }
    let saturated = &doc["answer"]["saturated"];
    assert_eq!(
        saturated["resource"],
        "cpu-quota",
        "{}\n{saturated}",
        out.show()
    );
    out.line("Saturated first at 5000 req/s: CPU (quota) (");
    crate::schema::assert_valid("results.schema.json", &[&file]);
}
