//! Confidence intervals and the sweep's margin against real servers: the text report's
//! `--ci` columns and the JSON report's intervals (nginx), a sweep against OpenBao whose
//! short steps are unclear until their pooled samples bound the p99 (repeated, pooled,
//! marked, re-rendered exactly by `vblast report`, compared with its margins), a step
//! still unclear with no repeats counted as failed, and bad `--confidence` / `--max-repeats`
//! refused before any request. No time or throughput is asserted.

use crate::support::nginx::Nginx;
use crate::support::openbao::OpenBao;
use crate::support::raw::RawServer;
use crate::support::run::run;
use crate::support::vblast::{url_cmd, vault_cmd, vblast};
use serde_json::Value;

fn read_json(path: &std::path::Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("read")).expect("JSON")
}

#[test]
fn a_run_reports_each_percentile_with_its_interval() {
    let ng = Nginx::start();
    let url = format!("{}/v1/secret/data/foo", ng.addr);
    let out = run(url_cmd(&["-n", "2000", "-c", "2", "--ci", &url]));
    out.assert_code(0);
    let header = out.line("op ");
    assert!(header.contains("99th% CI"), "{}", out.show());
    // 2,000 samples bound p95 and p99 on both sides: "low-high" with a unit.
    let total = out.total_row();
    let cells = &total[total.len() - 2..];
    for c in cells {
        assert!(
            c.contains('-') && !c.contains('?'),
            "{c} in\n{}",
            out.show()
        );
    }
    assert!(
        out.stdout.contains("CI: 95% confidence interval"),
        "{}",
        out.show()
    );

    // JSON: the level and every key's interval, enclosing its value.
    let json = run(url_cmd(&[
        "-n",
        "300",
        "-c",
        "1",
        "--format",
        "json",
        "--confidence",
        "0.9",
        &url,
    ]));
    json.assert_code(0);
    let l = &json.json()["latency_ms"];
    assert_eq!(l["confidence"], 0.9);
    let p50 = &l["ci"]["p50"];
    let (lo, hi, v) = (
        p50["low"].as_f64().unwrap(),
        p50["high"].as_f64().unwrap(),
        l["p50"].as_f64().unwrap(),
    );
    assert!(lo <= v && v <= hi, "{l}");
    // 300 samples cannot bound p99.99 from above: that side is unknown, never invented.
    assert!(l["ci"]["p9999"]["high"].is_null(), "{l}");
    // Bad levels: one message, exit 2, nothing sent.
    let raw = RawServer::silent();
    for bad in ["1.5", "0", "1", "x"] {
        let url = format!("{}/x", raw.addr);
        let out = run(url_cmd(&["-n", "1", "--confidence", bad, &url]));
        out.assert_code(2);
        assert!(
            out.stderr.contains("not a confidence level"),
            "{}",
            out.show()
        );
    }
    assert_eq!(raw.connections(), 0);
}

/// A sweep of kv-read with 1 s steps at `rate` req/s and `extra` flags, saved in `file`.
fn sweep(
    bao: &OpenBao,
    rate: &str,
    file: &std::path::Path,
    extra: &[&str],
) -> crate::support::run::Out {
    let mut args = vec![
        "sweep",
        "--op",
        "kv-read",
        "--secrets",
        "5",
        "--rate",
        rate,
        "--steps",
        "2",
        "--step-duration",
        "1s",
        "--step-warmup",
        "200ms",
        "--resolution",
        "50%",
        // Bounds only a busy machine's stalls cannot reach (at load average ~23 a 150 req/s
        // step over 2 connections measured p99 2.47 s and 36 req/s achieved): the steps
        // are unclear because they are short, never because they are slow.
        "--slo",
        "p99=10s",
        "--slo",
        "rate=90%",
        "-c",
        "2",
        "--output",
        file.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    run(vault_cmd(bao, &args))
}

#[test]
fn unclear_steps_are_measured_again_and_the_answer_has_its_margin() {
    let bao = OpenBao::start();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sweep.json");
    // 150 requests cannot bound a p99 from above at 95% (it takes about 450, more when the
    // samples are correlated in time: a busy machine's stalls): the first step is unclear,
    // measured again with its samples pooled until they do (up to 1,650 requests).
    let out = sweep(&bao, "150..300", &file, &["--max-repeats", "10"]);
    assert!(out.stdout.contains("p99 CI"), "{}", out.show());
    assert!(out.stderr.contains("is unclear"), "{}", out.show());
    assert!(out.stderr.contains("measuring it again"), "{}", out.show());
    let doc = read_json(&file);
    let first = &doc["steps"][0];
    let repeats = first["repeats"].as_u64().unwrap();
    assert!(repeats >= 1, "{first}");
    assert_eq!(
        first["repeated_because"].as_array().unwrap().len() as u64,
        repeats
    );
    // The step's results pool every measurement: more requests than one second's 150.
    assert!(
        first["results"]["requests"].as_u64().unwrap() > 200,
        "{first}"
    );
    assert!(
        out.stdout
            .contains(&format!("[measured {}x, pooled]", repeats + 1)),
        "{}",
        out.show()
    );
    if out.code == Some(1) {
        // A busy machine's stalls make neighbouring samples move together (a large design
        // effect), so that even eleven pooled seconds may not bound the p99: then every
        // repeat was spent, and the step is said to be still unclear and counted as failed.
        // That is the right answer on such a machine; the quiet one's is below.
        assert_eq!(repeats, 10, "{first}");
        assert_eq!(first["verdict"], "unclear", "{first}");
        assert!(
            out.line("Repeats: ")
                .contains("still unclear, counted as failed: step 1"),
            "{}",
            out.show()
        );
        return;
    }
    out.assert_code(0);
    let answer = out.line("Answer: ");
    assert!(
        answer.contains("p99") && answer.contains("95% CI"),
        "{answer}"
    );
    let repeated = out.line("Repeats: ");
    assert!(repeated.contains("step 1 at 150 req/s"), "{repeated}");
    // The file says the same, and re-renders exactly.
    assert_eq!(doc["sweep"]["max_repeats"], 10);
    assert_eq!(doc["answer"]["repeats"], repeated);
    assert!(first["p99_ci_ms"].is_object(), "{first}");
    let again = run({
        let mut c = vblast();
        c.args(["report", file.to_str().unwrap()]);
        c
    });
    again.assert_code(0);
    assert_eq!(again.stdout, out.stdout);
    // Compared with itself: within its margins.
    let cmp = run({
        let mut c = vblast();
        c.args(["compare", file.to_str().unwrap(), file.to_str().unwrap()]);
        c
    });
    cmp.assert_code(0);
    assert!(
        cmp.stdout.contains("do not differ beyond their margins"),
        "{}",
        cmp.show()
    );

    // No repeats: the unclear first step counts as failed, and says so.
    let none = dir.path().join("none.json");
    let out = sweep(&bao, "150..300", &none, &["--max-repeats", "0"]);
    out.assert_code(1);
    assert!(
        out.stdout.contains("UNCLEAR, counted as FAIL"),
        "{}",
        out.show()
    );
    assert!(!out.stderr.contains("measuring it again"), "{}", out.show());
    let doc = read_json(&none);
    assert_eq!(doc["steps"][0]["verdict"], "unclear");
    assert_eq!(doc["steps"][0]["repeats"], 0);
    assert!(
        out.line("Repeats: ")
            .contains("still unclear, counted as failed: step 1"),
        "{}",
        out.show()
    );
}

#[test]
fn bad_repeats_and_levels_are_refused_before_any_request() {
    let raw = RawServer::silent();
    let base = [
        "sweep",
        "--address",
        raw.addr.as_str(),
        "--token",
        "t",
        "--op",
        "kv-read",
        "--rate",
        "100..500",
        "--slo",
        "p99=20ms",
    ];
    for (extra, message) in [
        (["--max-repeats", "11"], "from 0 to 10"),
        (["--max-repeats=-1", "--steps=4"], "from 0 to 10"),
        (["--max-repeats", "1.5"], "from 0 to 10"),
        (["--max-repeats", "many"], "from 0 to 10"),
        (["--confidence", "1.5"], "not a confidence level"),
        (["--confidence", "0"], "not a confidence level"),
    ] {
        let mut args: Vec<&str> = base.to_vec();
        args.extend_from_slice(&extra);
        let mut cmd = vblast();
        cmd.args(&args);
        let out = run(cmd);
        out.assert_code(2);
        assert!(out.stderr.contains(message), "{args:?}\n{}", out.show());
    }
    assert_eq!(raw.connections(), 0, "a request reached the server");
}

/// The worker processes of nginx (children of its master, `pid`), from /proc.
fn children(pid: u32) -> Vec<u32> {
    let mut kids = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(p) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        // pid (comm) state ppid ...: the fields after the last ')'.
        let after = stat.rsplit(')').next().unwrap_or("");
        if after.split_whitespace().nth(1) == Some(&pid.to_string()) {
            kids.push(p);
        }
    }
    kids
}

/// Stalls nginx's worker (SIGSTOP, then SIGCONT) from a thread of its own: `stall` long,
/// then free for `free`, until told to change or stop; always let go at the end.
struct Staller {
    mode: std::sync::Arc<std::sync::Mutex<Option<(u64, u64)>>>,
    thread: Option<std::thread::JoinHandle<()>>,
    worker: u32,
}

impl Staller {
    fn start(worker: u32, stall_ms: u64, free_ms: u64) -> Staller {
        use crate::support::process::signal;
        let mode = std::sync::Arc::new(std::sync::Mutex::new(Some((stall_ms, free_ms))));
        let m = mode.clone();
        let thread = std::thread::spawn(move || {
            let ms = std::time::Duration::from_millis;
            loop {
                // Read and let go at once (a `while let` would hold the lock all round).
                let mode = *m.lock().unwrap();
                let Some((stall, free)) = mode else {
                    break;
                };
                signal(worker, libc::SIGSTOP);
                std::thread::sleep(ms(stall));
                signal(worker, libc::SIGCONT);
                std::thread::sleep(ms(free));
            }
        });
        Staller {
            mode,
            thread: Some(thread),
            worker,
        }
    }

    fn set(&self, mode: Option<(u64, u64)>) {
        *self.mode.lock().unwrap() = mode;
    }
}

impl Drop for Staller {
    fn drop(&mut self) {
        self.set(None);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        crate::support::process::signal(self.worker, libc::SIGCONT);
    }
}

/// A sweep's lower step measured clearly slower than its higher one, near the bound: the
/// lower step (200 req/s) runs while nginx's worker is stopped 1.2 s in every 1.4 s (its
/// p99 about 1.2 s, within the 2.5 s bound), the higher (250 req/s) while it is stopped only
/// 30 ms in every 1.6 s (its p99 interval spans the fast requests and the few held up, far
/// below the lower step's). The bound leaves 1.3 s for a busy machine's own stalls (the
/// stopping thread's wake-ups late, the client's): with 300 ms stops under a 400 ms bound,
/// other load tests beside the suite made the lower step's p99 806 ms, a failed step. The
/// sweep measures again only a pair whose noise could move the higher step past the bound
/// (`sweep::monotone`: its upper end times the pair's ratio, lower high over higher low);
/// at load average ~10 the higher step's p99 interval was 30.61-70.59 ms, whose 2.3 times
/// over 1 s stays under 2.5 s, and nothing was measured again: the lower step's p99 is
/// near enough to the bound that a ratio of 2.1 is material (at load average ~23, with a
/// 2 s bound, the lower step itself measured p99 3.29 s: its bound is the tighter limit). The sweep says the two are not monotone on stderr, measures
/// both again, and keeps the reason in the file. The same file with its intervals' keys
/// removed (as a file from before intervals) still reports: its intervals are read from its
/// histograms, a side too few samples bound is `?`, and nothing is repeated.
/// Needs a quiet machine (run by `tools/quiet-tests.sh`): the pattern it provokes, a lower
/// step measured wholly slower than a higher one, comes from stalls timed against the
/// steps, and a busy machine's own stalls blur it (the steps stay unclear instead). The
/// recheck's logic is unit-tested without timing (`sweep::monotone`).
#[test]
#[ignore = "needs a quiet machine: tools/quiet-tests.sh"]
fn a_lower_step_measured_slower_is_measured_again() {
    let ng = Nginx::start();
    let url = format!("{}/v1/secret/data/foo", ng.addr);
    // The master listens before its worker is forked: wait for the worker.
    let mut workers = children(ng.pid());
    for _ in 0..500 {
        if !workers.is_empty() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
        workers = children(ng.pid());
    }
    assert_eq!(workers.len(), 1, "nginx workers: {workers:?}");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sweep.json");
    let staller = Staller::start(workers[0], 1200, 200);
    let mut live = crate::support::run::Live::start(url_cmd(&[
        "sweep",
        "--rate",
        "200..250",
        "--steps",
        "2",
        "--step-duration",
        "5s",
        "--step-warmup",
        "300ms",
        "--slo",
        "p99=2500ms",
        // Correlated samples (the stalls) may need more of them to bound the p99.
        "--max-repeats",
        "10",
        // Requests held up at a step's end are answered after it: not a rate to judge.
        "--slo",
        "rate=50%",
        "-c",
        "100",
        "--output",
        file.to_str().unwrap(),
        &url,
    ]));
    let first = live.next_row();
    staller.set(Some((30, 1600)));
    let out = live.finish();
    drop(staller);
    let first = first.unwrap_or_else(|| panic!("no first step:\n{}", out.show()));
    assert!(first.contains("pass"), "{}", out.show());
    out.assert_code(0);
    assert!(
        out.stderr.contains("not monotone: p99 at 200 req/s")
            && out.stderr.contains("lies wholly above p99 at 250 req/s")
            && out.stderr.contains("measuring both again"),
        "{}",
        out.show()
    );
    let doc = read_json(&file);
    let steps = doc["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 2, "{}", out.show());
    let second = &steps[1];
    // The recheck, and perhaps a repeat of an unclear measurement before or after it (the
    // stalls make the samples correlated, so the interval may need more of them).
    let because = second["repeated_because"].as_array().unwrap();
    assert_eq!(second["repeats"], because.len(), "{second}");
    assert!(
        because
            .iter()
            .filter_map(|b| b.as_str())
            .any(|b| b.contains("not monotone")
                && b.contains("step 1 at 200 re-measured and pooled")),
        "{second}"
    );
    assert!(
        out.line("Repeats: ").contains("not monotone"),
        "{}",
        out.show()
    );

    // From before intervals: no level, no interval keys, no repeats.
    let mut old = doc.clone();
    old["sweep"].as_object_mut().unwrap().remove("confidence");
    old["sweep"].as_object_mut().unwrap().remove("max_repeats");
    old["answer"].as_object_mut().unwrap().remove("repeats");
    for s in old["steps"].as_array_mut().unwrap() {
        let s = s.as_object_mut().unwrap();
        for key in [
            "p50_ci_ms",
            "p99_ci_ms",
            "p999_ci_ms",
            "unclear",
            "repeats",
            "repeated_because",
        ] {
            s.remove(key);
        }
        let l = s["results"]["latency_ms"].as_object_mut().unwrap();
        l.remove("ci");
        l.remove("confidence");
    }
    let old_file = dir.path().join("old.json");
    std::fs::write(&old_file, old.to_string()).unwrap();
    let report = run({
        let mut c = vblast();
        c.args(["report", old_file.to_str().unwrap()]);
        c
    });
    report.assert_code(0);
    assert!(!report.stdout.contains("Repeats:"), "{}", report.show());
    // Each step's p99 interval, read from its histograms: the same as the live file's.
    let rows: Vec<&str> = report
        .stdout
        .lines()
        .filter(|l| crate::support::run::is_sweep_row(l))
        .collect();
    assert_eq!(rows.len(), 2, "{}", report.show());
    for (row, step) in rows.iter().zip(steps) {
        let ci = &step["p99_ci_ms"];
        assert!(ci["low"].is_number() && ci["high"].is_number(), "{step}");
        assert!(!row.contains("unknown"), "{row}");
    }
    // A side the samples do not bound is unknown, never a number: 300 requests and p99.99.
    let run_file = dir.path().join("run.json");
    run(url_cmd(&[
        "-n",
        "300",
        "-c",
        "1",
        "-q",
        "--output",
        run_file.to_str().unwrap(),
        &url,
    ]))
    .assert_code(0);
    let mut old_run = read_json(&run_file);
    let l = old_run["latency_ms"].as_object_mut().unwrap();
    l.remove("ci");
    l.remove("confidence");
    std::fs::write(&run_file, old_run.to_string()).unwrap();
    let json = run({
        let mut c = vblast();
        c.args(["report", "--format", "json", run_file.to_str().unwrap()]);
        c
    });
    json.assert_code(0);
    let ci = &json.json()["latency_ms"]["ci"];
    assert!(ci["p9999"]["high"].is_null(), "{ci}");
    assert!(ci["p50"]["low"].is_number(), "{ci}");
}
