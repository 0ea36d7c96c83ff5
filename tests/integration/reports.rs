//! Report formats against real peers: `--format ab` beside the real ApacheBench run
//! against the same nginx, both parsed by one parser; `--ab-csv` beside ab `-e`; and
//! `vblast report` printing a saved run exactly as the live run did; `--format verbose`.

use std::collections::BTreeMap;
use std::process::Command;

use crate::support;
use crate::support::deps::program;
use crate::support::nginx::Nginx;
use crate::support::openbao::OpenBao;
use crate::support::run::{WATCHDOG, run, spawn};
use crate::support::vblast::{url_cmd, vault_cmd};

/// An ApacheBench report as a script reads it.
#[derive(Debug, Default)]
struct AbReport {
    /// `Label: value` lines from "Server Software" on; the second "Time per request"
    /// line is `Time per request (all)`.
    fields: BTreeMap<String, String>,
    /// The `(Connect: N, Receive: N, Length: N, Exceptions: N)` line.
    failed: Option<[u64; 4]>,
    /// "Connection Times (ms)" rows: min, mean, sd, median, max.
    times: BTreeMap<String, [f64; 5]>,
    /// The percentage rows, 100 included.
    percents: Vec<(u64, u64)>,
}

impl AbReport {
    fn parse(text: &str) -> AbReport {
        let mut r = AbReport::default();
        let mut in_fields = false;
        let mut in_times = false;
        for line in text.lines() {
            if line.starts_with("Server Software:") {
                in_fields = true;
            }
            if line == "Connection Times (ms)" {
                in_fields = false;
                in_times = true;
                continue;
            }
            if line.starts_with("Percentage of the requests") {
                in_times = false;
                continue;
            }
            if let Some(rest) = line.trim_start().strip_prefix('(') {
                let nums: Vec<u64> = rest
                    .trim_end_matches(')')
                    .split(", ")
                    .map(|kv| kv.split_once(": ").unwrap().1.parse().unwrap())
                    .collect();
                let labels: Vec<&str> = rest
                    .split(", ")
                    .map(|kv| kv.split_once(':').unwrap().0)
                    .collect();
                assert_eq!(labels, ["Connect", "Receive", "Length", "Exceptions"]);
                r.failed = Some([nums[0], nums[1], nums[2], nums[3]]);
                continue;
            }
            if in_times {
                // Rows only: ab's ERROR / WARNING lines about mean and median follow them.
                if let Some((label, nums)) = line.split_once(':')
                    && ["Connect", "Processing", "Waiting", "Total"].contains(&label)
                {
                    let v: Vec<f64> = nums
                        .split_whitespace()
                        .map(|n| n.parse().unwrap())
                        .collect();
                    // ab -S: min, avg, max only (kept as min, mean, sd 0, median = mean, max).
                    let v = if v.len() == 3 {
                        vec![v[0], v[1], 0.0, v[1], v[2]]
                    } else {
                        v
                    };
                    assert_eq!(v.len(), 5, "{line}");
                    r.times
                        .insert(label.to_string(), [v[0], v[1], v[2], v[3], v[4]]);
                }
                continue;
            }
            let t = line.trim_start();
            if let Some((p, rest)) = t.split_once("%  ")
                && let Ok(p) = p.parse::<u64>()
            {
                let v = rest.split_whitespace().next().unwrap().parse().unwrap();
                r.percents.push((p, v));
                continue;
            }
            if in_fields && let Some((label, value)) = line.split_once(':') {
                let mut label = label.to_string();
                if label == "Time per request" && r.fields.contains_key(&label) {
                    label.push_str(" (all)");
                }
                assert!(
                    !r.fields.contains_key(&label),
                    "label {label} twice in\n{text}"
                );
                r.fields.insert(label, value.trim().to_string());
            }
        }
        r
    }

    fn get(&self, label: &str) -> &str {
        self.fields
            .get(label)
            .unwrap_or_else(|| panic!("no {label} in {:?}", self.fields))
    }

    /// The leading number of a field's value.
    fn num(&self, label: &str) -> f64 {
        let v = self.get(label);
        v.split_whitespace().next().unwrap().parse().unwrap()
    }

    /// What must hold within one report, whoever wrote it.
    fn assert_consistent(&self, who: &str) {
        let done = self.num("Complete requests");
        let rps = self.num("Requests per second");
        let conc = self.num("Concurrency Level");
        let tpr = self.num("Time per request");
        let tpr_all = self.num("Time per request (all)");
        assert!(
            (tpr_all - 1000.0 / rps).abs() <= 0.0006 + 1000.0 / rps * 0.001,
            "{who}: {tpr_all} ms per request against {rps} req/s"
        );
        assert!(
            (tpr - conc * tpr_all).abs() <= 0.0006 * conc + 0.001,
            "{who}: mean time per request {tpr} is not {conc} x {tpr_all}"
        );
        let total = self.num("Total transferred");
        let html = self.num("HTML transferred");
        assert!(
            total > html,
            "{who}: {total} bytes in all, {html} of bodies"
        );
        let rate = self.num("Transfer rate");
        let per_request = rate * 1024.0 / rps;
        assert!(
            (per_request - total / done).abs() <= total / done * 0.01 + 1.0,
            "{who}: transfer rate {rate} KB/s at {rps} req/s is not {total} bytes over {done}"
        );
        for (row, [min, mean, sd, median, max]) in &self.times {
            assert!(
                min <= median && median <= max && min <= mean && mean <= max && *sd >= 0.0,
                "{who}: {row} {min} {mean} {sd} {median} {max}"
            );
        }
        let ps: Vec<u64> = self.percents.iter().map(|(p, _)| *p).collect();
        assert_eq!(ps, [50, 66, 75, 80, 90, 95, 98, 99, 100], "{who}");
        assert!(
            self.percents.windows(2).all(|w| w[0].1 <= w[1].1),
            "{who}: percentages not increasing: {:?}",
            self.percents
        );
        assert_eq!(
            self.percents.last().unwrap().1 as f64,
            self.times["Total"][4],
            "{who}: the longest request is the Total row's max"
        );
    }
}

/// Runs the real ab with `args`; its stdout.
fn ab(args: &[&str]) -> String {
    let mut cmd = Command::new(program(&["ab"], "apache2-utils"));
    cmd.args(args);
    let out = spawn(cmd).finish(WATCHDOG);
    assert_eq!(out.code, Some(0), "ab {args:?}\n{}", out.show());
    out.stdout
}

/// vblast's `--format ab` with `args`; its stdout.
fn vblast_ab(args: &[&str]) -> String {
    let mut all = vec!["--format", "ab", "--allow-errors"];
    all.extend_from_slice(args);
    let out = run(url_cmd(&all));
    out.assert_code(0);
    out.stdout
}

/// The fields both reports must agree on exactly.
const SAME: [&str; 9] = [
    "Server Software",
    "Server Hostname",
    "Server Port",
    "Document Path",
    "Document Length",
    "Concurrency Level",
    "Complete requests",
    "Failed requests",
    "HTML transferred",
];

fn assert_same(a: &AbReport, v: &AbReport) {
    let labels = |r: &AbReport| r.fields.keys().cloned().collect::<Vec<_>>();
    assert_eq!(labels(a), labels(v), "ab's fields against vblast's");
    for label in SAME {
        assert_eq!(a.get(label), v.get(label), "{label}");
    }
    assert_eq!(a.failed, v.failed, "the failed breakdown");
    assert_eq!(
        a.fields.get("Non-2xx responses"),
        v.fields.get("Non-2xx responses")
    );
    assert_eq!(
        a.fields.get("Keep-Alive requests"),
        v.fields.get("Keep-Alive requests")
    );
    assert_eq!(
        a.times.keys().collect::<Vec<_>>(),
        v.times.keys().collect::<Vec<_>>()
    );
    a.assert_consistent("ab");
    v.assert_consistent("vblast");
}

#[test]
fn ab_format_reads_like_real_ab() {
    let ng = Nginx::with_extra("location = /vary { return 200 'n=$connection_requests'; }");
    let dir = tempfile::tempdir().unwrap();
    let csv = |name: &str| dir.path().join(name).display().to_string();
    let (ab_csv, vb_csv) = (csv("ab.csv"), csv("vblast.csv"));

    // A new connection per request (ab without -k), a Vault-shaped document.
    let url = format!("{}/v1/secret/data/foo", ng.addr);
    let a = ab(&["-n", "300", "-c", "4", "-e", &ab_csv, &url]);
    let v = vblast_ab(&[
        "--no-keepalive",
        "-n",
        "300",
        "-c",
        "4",
        "--ab-csv",
        &vb_csv,
        &url,
    ]);
    let (ra, rv) = (AbReport::parse(&a), AbReport::parse(&v));
    assert_same(&ra, &rv);
    assert_eq!(rv.get("Complete requests"), "300");
    assert_eq!(
        rv.get("Document Length"),
        format!("{} bytes", support::nginx::KV_BODY.len())
    );
    assert_eq!(
        rv.get("HTML transferred"),
        format!("{} bytes", 300 * support::nginx::KV_BODY.len())
    );
    assert_eq!(rv.failed, None);
    assert!(!rv.fields.contains_key("Keep-Alive requests"));

    // -e's CSV: the same layout from both.
    for path in [&ab_csv, &vb_csv] {
        let text = std::fs::read_to_string(path).unwrap();
        let mut lines = text.lines();
        assert_eq!(lines.next(), Some("Percentage served,Time in ms"), "{path}");
        let rows: Vec<(u64, f64)> = lines
            .map(|l| {
                let (p, t) = l.split_once(',').unwrap();
                assert_eq!(t.split_once('.').map(|(_, d)| d.len()), Some(3), "{l}");
                (p.parse().unwrap(), t.parse().unwrap())
            })
            .collect();
        assert_eq!(
            rows.iter().map(|r| r.0).collect::<Vec<_>>(),
            (0..=100).collect::<Vec<_>>(),
            "{path}"
        );
        assert!(
            rows.windows(2).all(|w| w[0].1 <= w[1].1),
            "{path}: {rows:?}"
        );
    }

    // Keep-alive on one connection to a document whose length changes with the
    // connection's request count (1-9, 10-99, 100-200): ab's "Length" failures.
    let vary = format!("{}/vary", ng.addr);
    let a = ab(&["-k", "-n", "200", "-c", "1", &vary]);
    let v = vblast_ab(&["-t", "1", "-n", "200", "-c", "1", &vary]);
    let (ra, rv) = (AbReport::parse(&a), AbReport::parse(&v));
    assert_same(&ra, &rv);
    assert_eq!(rv.failed, Some([0, 0, 191, 0]));
    assert_eq!(rv.get("Failed requests"), "191");
    assert_eq!(rv.get("Keep-Alive requests"), "200");

    // Non-2xx answers are counted apart from failures.
    let sealed = format!("{}/status/503", ng.addr);
    let a = ab(&["-n", "40", "-c", "2", &sealed]);
    let v = vblast_ab(&["--no-keepalive", "-n", "40", "-c", "2", &sealed]);
    let (ra, rv) = (AbReport::parse(&a), AbReport::parse(&v));
    assert_same(&ra, &rv);
    assert_eq!(rv.get("Non-2xx responses"), "40");
    assert_eq!(rv.get("Failed requests"), "0");
}

#[test]
fn report_prints_a_saved_run_as_the_run_did() {
    let ng = Nginx::start();
    let url = format!("{}/v1/secret/data/foo", ng.addr);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("run.json").display().to_string();
    let csv = dir.path().join("run.csv").display().to_string();
    let again = dir.path().join("again.csv").display().to_string();
    let live = run(url_cmd(&[
        "-n", "500", "-c", "4", "--format", "ab", "--ab-csv", &csv, "--output", &file, &url,
    ]));
    live.assert_code(0);
    for command in ["report", "review"] {
        let saved = run(url_cmd(&[
            command, &file, "--format", "ab", "--ab-csv", &again,
        ]));
        saved.assert_code(0);
        assert_eq!(saved.stdout, live.stdout, "{command}");
        assert_eq!(
            std::fs::read_to_string(&again).unwrap(),
            std::fs::read_to_string(&csv).unwrap(),
            "{command}"
        );
    }
}

/// The value after a verbose report's `Label [keys]` label, in the block of `section`.
fn verbose_value<'a>(text: &'a str, section: &str, label: &str) -> &'a str {
    let mut inside = false;
    for line in text.lines() {
        if !line.starts_with(' ') {
            inside = line == section;
            continue;
        }
        if inside && let Some(rest) = line.trim_start().strip_prefix(label) {
            let rest = rest.trim_start();
            let rest = match rest.strip_prefix('[') {
                Some(r) => r.split_once(']').unwrap().1,
                None => rest,
            };
            return rest.trim();
        }
    }
    panic!("no {label} in {section} of\n{text}");
}

/// A verbose latency cell in milliseconds ("26us", "1.18ms", "1.50s"; a thin tail's
/// "1.18ms*" too).
fn cell_ms(c: &str) -> f64 {
    let c = c.strip_suffix('*').unwrap_or(c);
    if let Some(v) = c.strip_suffix("us") {
        v.parse::<f64>().unwrap() / 1000.0
    } else if let Some(v) = c.strip_suffix("ms") {
        v.parse().unwrap()
    } else {
        c.strip_suffix('s').unwrap().parse::<f64>().unwrap() * 1000.0
    }
}

fn assert_latency_cells(text: &str, section: &str, label: &str) {
    let cells: Vec<f64> = verbose_value(text, section, label)
        .split(", ")
        .map(cell_ms)
        .collect();
    assert_eq!(cells.len(), 9, "{section} {label}: {cells:?}");
    // min, 50, 90, 95, 99, 99.9, max never decrease; the mean lies between min and max.
    let ordered = [0, 3, 4, 5, 6, 7, 8].map(|i| cells[i]);
    assert!(
        ordered.windows(2).all(|w| w[0] <= w[1]),
        "{section} {label}: {cells:?}"
    );
    assert!(cells[0] <= cells[1] && cells[1] <= cells[8], "{cells:?}");
}

#[test]
fn verbose_report_per_operation_with_bytes_codes_errors_and_setup() {
    let bao = OpenBao::start();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("run.json").display().to_string();
    let out = run(vault_cmd(
        &bao,
        &[
            "-c",
            "4",
            "-n",
            "400",
            "--op",
            "kv-read:3,kv-write:1",
            "--format",
            "verbose",
            "--output",
            &file,
        ],
    ));
    out.assert_code(0);
    let text = &out.stdout;
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let mut sum = 0;
    for op in ["kv-read", "kv-write"] {
        let requests = verbose_value(text, op, "Requests");
        let n: u64 = requests.split(", ").next().unwrap().parse().unwrap();
        sum += n;
        assert!(n > 0, "{op}: {requests}");
        assert_latency_cells(text, op, "Latency");
        assert_eq!(verbose_value(text, op, "Success"), "100.00%");
    }
    assert_eq!(sum, 400);
    assert!(verbose_value(text, "total", "Requests").starts_with("400, "));
    assert_latency_cells(text, "total", "Latency");
    let bytes_in = verbose_value(text, "total", "Bytes In");
    assert_eq!(
        bytes_in.split(", ").next().unwrap(),
        j["stats"]["bytes_received"].to_string()
    );
    let bytes_out = verbose_value(text, "total", "Bytes Out");
    assert_eq!(
        bytes_out.split(", ").next().unwrap(),
        j["stats"]["bytes_sent"].to_string()
    );
    // kv-write answers 200 on KV v2, kv-read 200.
    assert_eq!(verbose_value(text, "total", "Status Codes"), "200:400");
    assert_eq!(verbose_value(text, "total", "Errors"), "0, 0, 0, 0, 0");
    // Setup seeds 1000 secrets: it takes time; cleanup removes the mount.
    let times: Vec<f64> = verbose_value(text, "total", "Setup, cleanup")
        .split(", ")
        .map(|t| t.strip_suffix('s').unwrap().parse().unwrap())
        .collect();
    assert!(times[0] > 0.0 && times[1] > 0.0, "{times:?}");
    // The saved run prints the same.
    let again = run(url_cmd(&["review", &file, "--format", "verbose"]));
    again.assert_code(0);
    assert_eq!(&again.stdout, text);

    // Failures: statuses and messages.
    let ng = Nginx::start();
    let out = run(url_cmd(&[
        "--format",
        "verbose",
        "--allow-errors",
        "-c",
        "2",
        "-n",
        "50",
        &format!("{}/status/503", ng.addr),
    ]));
    out.assert_code(0);
    assert_eq!(
        verbose_value(&out.stdout, "total", "Status Codes"),
        "503:50"
    );
    assert_eq!(
        verbose_value(&out.stdout, "total", "Errors"),
        "0, 0, 0, 0, 50"
    );
    assert_eq!(verbose_value(&out.stdout, "url", "Success"), "0.00%");
    // Lost responses: counted as read errors, listed by message in the error set.
    let srv = support::raw::RawServer::garbage();
    let out = run(url_cmd(&[
        "--format",
        "verbose",
        "--allow-errors",
        "-c",
        "1",
        "-n",
        "10",
        &format!("{}/", srv.addr),
    ]));
    out.assert_code(0);
    assert_eq!(
        verbose_value(&out.stdout, "total", "Errors"),
        "0, 10, 0, 0, 0"
    );
    let set: Vec<&str> = out
        .stdout
        .lines()
        .skip_while(|l| *l != "  Error Set:")
        .skip(1)
        .take_while(|l| !l.trim_start().starts_with("Setup"))
        .collect();
    assert_eq!(set.len(), 1, "{}", out.stdout);
    assert!(set[0].starts_with("  10 x bad response"), "{set:?}");
}

/// The rows of one compare table (title line first), as label -> cells.
fn compare_table(text: &str, title: &str) -> Vec<(String, Vec<String>)> {
    let mut rows = Vec::new();
    let mut lines = text
        .lines()
        .skip_while(|l| !l.starts_with(&format!("{title} ")));
    lines
        .next()
        .unwrap_or_else(|| panic!("no {title} table in\n{text}"));
    for line in lines.take_while(|l| !l.is_empty()) {
        // The label may hold one space ("success ratio"); cells are split by 2+ spaces.
        let (label, cells) = line.split_at(14);
        let cells: Vec<String> = cells
            .split("  ")
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .map(String::from)
            .collect();
        rows.push((label.trim().to_string(), cells));
    }
    rows
}

#[test]
fn compare_puts_runs_side_by_side_with_ratios() {
    let ng = Nginx::start();
    let url = format!("{}/v1/secret/data/foo", ng.addr);
    let dir = tempfile::tempdir().unwrap();
    let file = |n: &str| dir.path().join(n).display().to_string();
    let (a, b) = (file("small.json"), file("large.json"));
    for (c, f) in [("2", &a), ("4", &b)] {
        run(url_cmd(&["-q", "-c", c, "-n", "400", "--output", f, &url])).assert_code(0);
    }
    let out = run(url_cmd(&["compare", &a, &b]));
    out.assert_code(0);
    let rows = compare_table(&out.stdout, "total");
    let labels: Vec<&str> = rows.iter().map(|(l, _)| l.as_str()).collect();
    assert_eq!(
        labels,
        [
            "rate",
            "throughput",
            "p50",
            "p99",
            "p99.9",
            "max",
            "success ratio"
        ]
    );
    let json = |f: &str| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap()
    };
    let (ja, jb) = (json(&a), json(&b));
    let (ra, rb) = (ja["rps"].as_f64().unwrap(), jb["rps"].as_f64().unwrap());
    let rate = &rows[0].1;
    assert_eq!(rate[0], format!("{ra:.2}"), "{}", out.stdout);
    assert_eq!(
        rate[1],
        format!("{rb:.2} ({:.2}x)", rb / ra),
        "{}",
        out.stdout
    );
    assert_eq!(rows[6].1, ["100.00%", "100.00% (1.00x)"]);
    assert!(
        out.stdout
            .contains("The runs differ in:\n  connections  2 | 4\n"),
        "{}",
        out.stdout
    );
    assert!(!out.stdout.contains("  target"), "{}", out.stdout);

    // Different operations: the totals, the one they share, and what cannot be compared.
    let bao = OpenBao::start();
    let (mix, read) = (file("mix.json"), file("read.json"));
    for (op, f) in [("kv-read:3,kv-write:1", &mix), ("kv-read", &read)] {
        run(vault_cmd(
            &bao,
            &["-q", "-c", "2", "-n", "200", "--op", op, "--output", f],
        ))
        .assert_code(0);
    }
    let out = run(url_cmd(&["compare", &mix, &read]));
    out.assert_code(0);
    assert_eq!(compare_table(&out.stdout, "kv-read").len(), 7);
    assert!(!out.stdout.contains("\nkv-write "), "{}", out.stdout);
    assert!(
        out.stdout
            .contains("  operation    kv-read,kv-write | kv-read\n"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains("only kv-read (common to all runs) can be compared like for like"),
        "{}",
        out.stdout
    );

    // Bad input: one message naming the file, non-zero exit, no table.
    let one = run(url_cmd(&["compare", &a]));
    assert_eq!(one.code, Some(2), "{}", one.show());
    assert!(
        one.stderr
            .contains("compare needs at least two results files")
            && one.stderr.contains("small.json"),
        "{}",
        one.show()
    );
    let truncated = file("truncated.json");
    let text = std::fs::read_to_string(&a).unwrap();
    std::fs::write(&truncated, &text[..text.len() / 2]).unwrap();
    let other = file("other.json");
    std::fs::write(&other, r#"{"name":"not vblast"}"#).unwrap();
    for (bad, why) in [
        (&truncated, "not JSON"),
        (&other, "not a vblast results file"),
    ] {
        let out = run(url_cmd(&["compare", &a, bad]));
        assert_eq!(out.code, Some(2), "{}", out.show());
        assert!(
            out.stderr.contains(bad.as_str()) && out.stderr.contains(why),
            "{}",
            out.show()
        );
        assert!(out.stdout.is_empty(), "{}", out.show());
    }
}

/// The venv tools/deps.sh installs (Python hdrhistogram among others).
fn venv_python() -> std::path::PathBuf {
    let venv = std::env::var_os("VBLAST_VENV")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cache/vblast/venv")
        });
    venv.join("bin/python")
}

/// Reads an interval log with the Python hdrhistogram package; per tag: intervals, total
/// count, p99 (us), max (us).
const READ_HLOG: &str = r#"
import sys
from hdrh.histogram import HdrHistogram
from hdrh.log import HistogramLogReader
reader = HistogramLogReader(sys.argv[1], HdrHistogram(1, 3600000000, 3))
tags = {}
while True:
    h = reader.get_next_interval_histogram()
    if h is None:
        break
    tag = h.get_tag()
    if tag not in tags:
        tags[tag] = [0, HdrHistogram(1, 3600000000, 3)]
    tags[tag][0] += 1
    tags[tag][1].add(h)
for tag, (n, h) in sorted(tags.items()):
    print(tag, n, h.get_total_count(), h.get_value_at_percentile(99), h.get_max_value())
"#;

#[test]
fn hlog_reads_back_with_python_hdrhistogram() {
    let python = venv_python();
    assert!(
        python.exists(),
        "{} missing: run tools/deps.sh (it installs the Python hdrhistogram package)",
        python.display()
    );
    let ng = Nginx::start();
    let url = format!("{}/v1/secret/data/foo", ng.addr);
    let dir = tempfile::tempdir().unwrap();
    let hlog = dir.path().join("run.hlog").display().to_string();
    let hlog2 = dir.path().join("run2.hlog").display().to_string();
    let file = dir.path().join("run.json").display().to_string();
    let out = run(url_cmd(&[
        "-R", "300", "-z", "4s", "-c", "4", "--format", "json", "--hlog", &hlog, "--output", &file,
        &url,
    ]));
    out.assert_code(0);
    let j = out.json();
    let text = std::fs::read_to_string(&hlog).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "#[Histogram log format version 1.2]");
    assert!(text.contains("\n#[StartTime: "), "{text}");
    assert!(
        text.contains(
            "\n\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n"
        ),
        "{text}"
    );
    let read = |path: &str| -> BTreeMap<String, (u64, u64, f64, f64)> {
        let out = Command::new(&python)
            .args(["-c", READ_HLOG, path])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "python: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                (
                    f[0].to_string(),
                    (
                        f[1].parse().unwrap(),
                        f[2].parse().unwrap(),
                        f[3].parse().unwrap(),
                        f[4].parse().unwrap(),
                    ),
                )
            })
            .collect()
    };
    let tags = read(&hlog);
    assert_eq!(
        tags.keys().collect::<Vec<_>>(),
        ["corrected", "uncorrected"],
        "{text}"
    );
    let count = j["latency_ms"]["count"].as_u64().unwrap();
    assert_eq!(count, 1200, "-R 300 for 4 s");
    let close = |a: f64, b: f64| (a - b).abs() <= b * 0.002 + 0.002;
    for (tag, key) in [("corrected", "latency_ms"), ("uncorrected", "service_ms")] {
        let (intervals, n, p99_us, max_us) = tags[tag];
        // One interval per second of the run, whatever the second held.
        assert!((4..=6).contains(&intervals), "{tag}: {intervals} intervals");
        assert_eq!(n, count, "{tag}");
        let p99 = j[key]["p99"].as_f64().unwrap();
        let max = j[key]["max"].as_f64().unwrap();
        assert!(
            close(p99_us / 1000.0, p99),
            "{tag}: p99 {p99_us} us, report {p99} ms"
        );
        assert!(
            close(max_us / 1000.0, max),
            "{tag}: max {max_us} us, report {max} ms"
        );
    }
    // From the saved run, in 2 s intervals: the same totals in fewer intervals.
    let again = run(url_cmd(&[
        "report",
        &file,
        "--hlog",
        &hlog2,
        "--hlog-interval",
        "2s",
    ]));
    again.assert_code(0);
    let tags2 = read(&hlog2);
    for tag in ["corrected", "uncorrected"] {
        assert_eq!(tags2[tag].1, count, "{tag}");
        assert!(
            tags2[tag].0 < tags[tag].0,
            "{tag}: {:?} {:?}",
            tags2[tag],
            tags[tag]
        );
    }
    // An interval that is not whole seconds: one message, before anything runs.
    let bad = run(url_cmd(&[
        "report",
        &file,
        "--hlog",
        &hlog2,
        "--hlog-interval",
        "500ms",
    ]));
    assert_eq!(bad.code, Some(2), "{}", bad.show());
    assert!(
        bad.stderr
            .contains("500ms is not a whole number of seconds"),
        "{}",
        bad.show()
    );
}

// ---------------------------------------------------------------------------
// `vblast ab`: ab's command lines, run by real ab and by vblast, one parser
// ---------------------------------------------------------------------------

/// `vblast ab ARGS`, finished (any exit status).
fn dropin(args: &[&str]) -> support::run::Out {
    let mut all = vec!["ab"];
    all.extend_from_slice(args);
    run(url_cmd(&all))
}

/// Real `ab ARGS`, finished (any exit status).
fn real_ab(args: &[&str]) -> support::run::Out {
    let mut cmd = Command::new(program(&["ab"], "apache2-utils"));
    cmd.args(args);
    spawn(cmd).finish(WATCHDOG)
}

/// The same command line through real ab and `vblast ab`: both exit 0 (vblast with
/// `--ab-exit`, ab's statuses), both reports parse with the one parser and agree.
fn both(args: &[&str]) -> (AbReport, AbReport) {
    let a = real_ab(args);
    assert_eq!(a.code, Some(0), "ab {args:?}\n{}", a.show());
    let mut with_exit = vec!["--ab-exit"];
    with_exit.extend_from_slice(args);
    let v = dropin(&with_exit);
    v.assert_code(0);
    let (ra, rv) = (AbReport::parse(&a.stdout), AbReport::parse(&v.stdout));
    let labels = |r: &AbReport| r.fields.keys().cloned().collect::<Vec<_>>();
    assert_eq!(
        labels(&ra),
        labels(&rv),
        "ab {args:?}: ab's fields against vblast's"
    );
    for label in SAME {
        // Bodies of variable length (-l): each client's own sum.
        if label == "HTML transferred" && args.contains(&"-l") {
            continue;
        }
        assert_eq!(ra.get(label), rv.get(label), "ab {args:?}: {label}");
    }
    for label in ["Non-2xx responses", "Keep-Alive requests"] {
        assert_eq!(
            ra.fields.get(label),
            rv.fields.get(label),
            "ab {args:?}: {label}"
        );
    }
    assert_eq!(ra.failed, rv.failed, "ab {args:?}: the failed breakdown");
    assert_eq!(
        ra.times.keys().collect::<Vec<_>>(),
        rv.times.keys().collect::<Vec<_>>(),
        "ab {args:?}"
    );
    (ra, rv)
}

#[test]
fn ab_command_lines_run_by_vblast_ab_read_like_real_ab() {
    // /method answers with what arrived: method, Content-Length and Content-Type, so
    // equal Document Lengths mean the same request. /varlen's length follows the
    // server's connection number (4 or 5 bytes), /vary the connection's request count.
    let ng = Nginx::with_extra(
        "location = /method { return 200 '$request_method $content_length $content_type'; }
    location = /vary { return 200 'n=$connection_requests'; }
    location = /varlen { if ($connection ~ \"[02468]$\") { return 200 'even'; } return 200 'odd!!'; }",
    );
    let dir = tempfile::tempdir().unwrap();
    let url = format!("{}/v1/secret/data/foo", ng.addr);

    // A connection per request (no -k), and keep-alive (-k), getopt's forms mixed.
    let (_, v) = both(&["-n", "300", "-c", "4", &url]);
    assert_eq!(v.get("Complete requests"), "300");
    assert!(!v.fields.contains_key("Keep-Alive requests"));
    assert_eq!(v.failed, None);
    v.assert_consistent("vblast ab");
    let (_, v) = both(&["-kn300", "-c4", &url]);
    assert_eq!(v.get("Keep-Alive requests"), "300");
    v.assert_consistent("vblast ab");

    // -p (POST) and -u (PUT) bodies from a file with -T, -i (HEAD), -m.
    let body = dir.path().join("body.json");
    std::fs::write(&body, r#"{"value":"bar"}"#).unwrap();
    let body = body.display().to_string();
    let method = format!("{}/method", ng.addr);
    for args in [
        vec![
            "-p",
            &body,
            "-T",
            "application/json",
            "-n",
            "50",
            "-c",
            "2",
            &method,
        ],
        vec!["-u", &body, "-n", "50", "-c", "2", &method],
        vec!["-k", "-i", "-n", "50", "-c", "2", &method],
        vec!["-m", "DELETE", "-n", "50", &method],
    ] {
        let (a, v) = both(&args);
        assert_eq!(
            a.get("Document Length"),
            v.get("Document Length"),
            "{args:?}"
        );
        v.assert_consistent("vblast ab");
        let sends = args.contains(&"-p") || args.contains(&"-u");
        assert_eq!(v.fields.contains_key("Total body sent"), sends, "{args:?}");
    }
    let (_, v) = both(&["-p", &body, "-T", "application/json", "-n", "50", &method]);
    assert_eq!(
        v.get("Document Length"),
        format!("{} bytes", "POST 15 application/json".len())
    );
    // 50 requests of the body and their heads.
    assert!(v.num("Total body sent") > 50.0 * 15.0, "{:?}", v.fields);

    // `vblast run -p FILE --format ab` prints Total body sent too, as ab -p does.
    let a = AbReport::parse(&real_ab(&["-p", &body, "-n", "20", &method]).stdout);
    let v = AbReport::parse(&vblast_ab(&[
        "--no-keepalive",
        "-p",
        &body,
        "-n",
        "20",
        "-c",
        "1",
        &method,
    ]));
    assert!(a.fields.contains_key("Total body sent"));
    assert!(v.fields.contains_key("Total body sent"), "{:?}", v.fields);

    // -t with a later -n: the count ends the run; -t alone implies -n 50000.
    let (_, v) = both(&["-t", "30", "-n", "500", "-c", "2", &url]);
    assert_eq!(v.get("Complete requests"), "500");
    let t = dropin(&["-k", "-t", "1", "-c", "2", "-q", &url]);
    t.assert_code(0);
    let done = AbReport::parse(&t.stdout).num("Complete requests");
    assert!(done > 0.0 && done <= 50_000.0, "{}", t.show());

    // -l: variable lengths are no failures; without it, ab's Length failures.
    let vary = format!("{}/vary", ng.addr);
    let (_, v) = both(&["-k", "-l", "-n", "200", "-c", "1", &vary]);
    assert_eq!(v.get("Document Length"), "Variable");
    assert_eq!(v.get("Failed requests"), "0");
    let (_, v) = both(&["-k", "-n", "200", "-c", "1", &vary]);
    assert_eq!(v.failed, Some([0, 0, 191, 0]));
    let varlen = format!("{}/varlen", ng.addr);
    let (_, v) = both(&["-l", "-n", "200", "-c", "2", &varlen]);
    assert_eq!(v.get("Document Length"), "Variable");
    assert_eq!(v.get("Failed requests"), "0");
    let html = v.num("HTML transferred");
    assert!(html > 800.0 && html < 1000.0, "both lengths came: {html}");
    // The same target without -l: Length failures, from both.
    for out in [
        real_ab(&["-n", "200", "-c", "2", &varlen]),
        dropin(&["-n", "200", "-c", "2", &varlen]),
    ] {
        let r = AbReport::parse(&out.stdout);
        assert!(r.failed.is_some_and(|f| f[2] > 0), "{}", out.show());
    }

    // -S and -d: the short table, no percentages, in both.
    let a = real_ab(&["-S", "-d", "-n", "100", "-c", "2", &url]);
    let v = dropin(&["-S", "-d", "-n", "100", "-c", "2", &url]);
    v.assert_code(0);
    for out in [&a.stdout, &v.stdout] {
        assert!(out.contains("\n              min   avg   max\n"), "{out}");
        assert!(!out.contains("Percentage of the requests"), "{out}");
        assert!(!out.contains("+/-sd"), "{out}");
        let r = AbReport::parse(out);
        assert_eq!(r.times.len(), 4, "{out}");
        assert!(r.percents.is_empty(), "{out}");
    }

    // -e: ab's CSV; -H and -C headers go out (nginx answers 200 either way).
    let csv = dir.path().join("pct.csv");
    let v = dropin(&[
        "-e",
        &csv.display().to_string(),
        "-H",
        "X-Vault-Token: root",
        "-C",
        "a=1",
        "-A",
        "u:p",
        "-n",
        "100",
        &url,
    ]);
    v.assert_code(0);
    let text = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(text.lines().next(), Some("Percentage served,Time in ms"));
    assert_eq!(text.lines().count(), 102);

    // Non-2xx: counted apart, as ab does; vblast's status is 1, ab's (--ab-exit) 0.
    let sealed = format!("{}/status/503", ng.addr);
    let (_, v) = both(&["-n", "40", "-c", "2", &sealed]);
    assert_eq!(v.get("Non-2xx responses"), "40");
    dropin(&["-n", "40", "-c", "2", &sealed]).assert_code(1);
}

#[test]
fn vblast_ab_prints_abs_tls_lines() {
    let (ng, files) = Nginx::start_tls_generated();
    let url = format!("https://localhost:{}/v1/secret/data/foo", ng.port);
    let (a, v) = both(&["-n", "20", "-c", "2", &url]);
    // Version, cipher, server key bits, cipher bits: the server's key is the same;
    // version and cipher are each client's offer against nginx's.
    let proto = |r: &AbReport| {
        let v: Vec<String> = r
            .get("SSL/TLS Protocol")
            .split(',')
            .map(String::from)
            .collect();
        assert_eq!(v.len(), 4, "{v:?}");
        assert!(v[0].starts_with("TLSv1."), "{v:?}");
        v
    };
    assert_eq!(proto(&a)[2], proto(&v)[2], "server key bits");
    assert_eq!(proto(&v)[2], "256", "rcgen's default key is P-256");
    assert_eq!(a.get("Server Temp Key"), v.get("Server Temp Key"));
    assert_eq!(v.get("TLS Server Name"), "localhost");
    // `vblast run --format ab` prints the same lines, and saves them with the results:
    // `vblast report FILE --format ab` prints the live report again, TLS lines included.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tls.json").display().to_string();
    let ca = files.ca_cert.display().to_string();
    let live = run(url_cmd(&[
        "-n",
        "20",
        "-c",
        "2",
        "--ca-cert",
        &ca,
        "--format",
        "ab",
        "--output",
        &file,
        &url,
    ]));
    live.assert_code(0);
    let r = AbReport::parse(&live.stdout);
    assert_eq!(proto(&r), proto(&v), "{}", live.stdout);
    assert_eq!(r.get("Server Temp Key"), a.get("Server Temp Key"));
    assert_eq!(r.get("TLS Server Name"), "localhost");
    let saved = run(url_cmd(&["report", &file, "--format", "ab"]));
    saved.assert_code(0);
    assert_eq!(saved.stdout, live.stdout);
    // An IP address: no SNI, no TLS Server Name line, in both.
    let ip = format!("https://127.0.0.1:{}/v1/secret/data/foo", ng.port);
    let (_, v) = both(&["-k", "-n", "20", "-c", "2", &ip]);
    assert!(!v.fields.contains_key("TLS Server Name"));
    assert_eq!(v.get("Keep-Alive requests"), "20");
    // `--tls-server-name` to an IP address: that name is sent, and printed.
    let named = run(url_cmd(&[
        "-n",
        "4",
        "-c",
        "1",
        "--ca-cert",
        &ca,
        "--tls-server-name",
        "localhost",
        "--format",
        "ab",
        &ip,
    ]));
    named.assert_code(0);
    assert_eq!(
        AbReport::parse(&named.stdout).get("TLS Server Name"),
        "localhost"
    );
}

#[test]
fn vblast_ab_refuses_bad_input_like_ab() {
    let ng = Nginx::start();
    let url = format!("{}/v1/secret/data/foo", ng.addr);
    // ab's own usage error: the same words from both; vblast exits 2, or 22 as ab does.
    let a = real_ab(&["-n", "10", "-c", "20", &url]);
    assert_eq!(a.code, Some(22), "{}", a.show());
    let words = "Cannot use concurrency level greater than total number of requests";
    assert!(a.stderr.contains(words), "{}", a.show());
    let v = dropin(&["-n", "10", "-c", "20", &url]);
    v.assert_code(2);
    assert!(v.stderr.contains(words), "{}", v.show());
    assert_eq!(v.stderr.lines().count(), 1, "{}", v.show());
    assert!(v.stdout.is_empty(), "{}", v.show());
    dropin(&["--ab-exit", "-n", "10", "-c", "20", &url]).assert_code(22);

    // What vblast does not do: one message naming the option, exit 2.
    for (args, name) in [
        (vec!["-X", "127.0.0.1:3128"], "-X"),
        (vec!["-P", "u:p"], "-P"),
        (vec!["-w"], "-w"),
        (vec!["-g", "out.tsv"], "-g"),
        (vec!["-Z", "AES128-SHA"], "-Z"),
        (vec!["-f", "TLS1.2"], "-f"),
    ] {
        let mut all = args.clone();
        all.push(&url);
        let v = dropin(&all);
        v.assert_code(2);
        assert!(v.stderr.contains(&format!("ab's {name} ")), "{}", v.show());
        assert_eq!(v.stderr.lines().count(), 1, "{}", v.show());
    }
    // Unknown options, a missing value, no URL, options after the URL, a bad URL, a bad
    // number: one message, exit 2, never a panic.
    for (args, words) in [
        (vec!["-Q", &url], "illegal option -- Q"),
        (vec!["--bogus", &url], "--bogus"),
        (vec!["-n"], "option requires an argument -- n"),
        (vec!["-n", "10"], "wrong number of arguments"),
        (vec![&url, "-k"], "wrong number of arguments"),
        (vec!["-n", "ten", &url], "-n ten"),
        (vec!["-n", "0", &url], "Invalid number of requests"),
        (vec!["127.0.0.1"], "invalid URL"),
        (vec!["-i", "-p", "/dev/null", &url], "Cannot mix POST"),
    ] {
        let v = dropin(&args);
        v.assert_code(2);
        assert!(v.stderr.contains(words), "{args:?}: {}", v.show());
        assert_eq!(v.stderr.lines().count(), 1, "{}", v.show());
    }
    // An unreadable -p file: vblast's input error (2); ab's fatal error (1).
    let v = dropin(&["-p", "/nonexistent/body", "-n", "2", &url]);
    v.assert_code(2);
    assert!(v.stderr.contains("/nonexistent/body"), "{}", v.show());
    dropin(&["--ab-exit", "-p", "/nonexistent/body", "-n", "2", &url]).assert_code(1);
    // -h and -V: vblast's usage and version, exit 0.
    let h = dropin(&["-h"]);
    h.assert_code(0);
    assert!(
        h.stdout.contains("-k              Use HTTP KeepAlive"),
        "{}",
        h.show()
    );
    dropin(&["-V"]).assert_code(0);
}

#[test]
fn vblast_ab_receive_errors_and_ab_exit() {
    // Responses cut short: receive errors, counted, never a stop; ab's status without
    // -r is a failure (1), with -r 0; vblast's own status is 1 either way.
    let raw = support::raw::RawServer::close_mid_response();
    let url = format!("{}/x", raw.addr);
    let v = dropin(&["-n", "5", "-q", &url]);
    v.assert_code(1);
    let r = AbReport::parse(&v.stdout);
    assert_eq!(r.get("Complete requests"), "5", "{}", v.show());
    assert_eq!(r.failed.map(|f| f[1]), Some(5), "{}", v.show());
    dropin(&["--ab-exit", "-n", "5", &url]).assert_code(1);
    dropin(&["--ab-exit", "-r", "-n", "5", &url]).assert_code(0);
}

#[test]
fn vblast_ab_client_certificate_with_e() {
    // nginx asks for a client certificate signed by the test CA; -E gives the chain and
    // key in one PEM file, as ab's -E does.
    let dir = tempfile::tempdir().unwrap();
    let server = support::certs::gen_tls_files(dir.path());
    let client_dir = dir.path().join("client");
    std::fs::create_dir_all(&client_dir).unwrap();
    let client = support::certs::gen_tls_files(&client_dir);
    let ng = Nginx::start_tls_with(
        &server.cert,
        &server.key,
        &format!(
            "ssl_client_certificate {};\n    ssl_verify_client on;",
            client.ca_cert.display()
        ),
    );
    let both_pem = dir.path().join("client.pem");
    let pem = std::fs::read_to_string(&client.cert).unwrap()
        + &std::fs::read_to_string(&client.key).unwrap();
    std::fs::write(&both_pem, pem).unwrap();
    let both_pem = both_pem.display().to_string();
    let url = format!("https://127.0.0.1:{}/v1/secret/data/foo", ng.port);
    let (_, v) = both(&["-E", &both_pem, "-n", "10", "-c", "2", &url]);
    assert_eq!(v.get("Complete requests"), "10");
    assert!(
        !v.fields.contains_key("Non-2xx responses"),
        "{:?}",
        v.fields
    );
    // Without it, nginx answers 400 to every request, for both.
    let (_, v) = both(&["-n", "10", "-c", "2", &url]);
    assert_eq!(v.get("Non-2xx responses"), "10");
}

/// Health answers of a fake two-node cluster (nginx): one active, one standby.
const NODE_HEALTH: &str = r#"{"initialized":true,"sealed":false,"standby":false,"cluster_id":"reports-test","cluster_name":"nginx"}"#;

/// An nginx node of that cluster: `standby` answers sys/health 429; both answer
/// seal-status themselves.
fn cluster_node(standby: bool) -> Nginx {
    let (status, health) = if standby {
        (
            429,
            NODE_HEALTH.replace("\"standby\":false", "\"standby\":true"),
        )
    } else {
        (200, NODE_HEALTH.to_string())
    };
    Nginx::with_extra(&format!(
        "location = /v1/sys/health {{ return {status} '{health}'; }}
    location = /v1/sys/seal-status {{ return 200 '{{\"sealed\":false}}'; }}"
    ))
}

/// The per-node table line of `addr` in a text layout: (role, requests, ok).
fn node_line(text: &str, addr: &str) -> Option<(String, u64, u64)> {
    text.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() < 5 || f[1] != addr {
            return None;
        }
        Some((f[2].to_string(), f[3].parse().ok()?, f[4].parse().ok()?))
    })
}

/// Several nodes as one target: every report format carries a row per node, and the
/// windows of unavailability: ab's and vault-benchmark's layouts after their own lines,
/// vault-benchmark's JSON as `nodes`/`windows`, the HTML report as tables. Rendered from
/// the results files of two runs against two nginx nodes, one of them stopped mid-run.
#[test]
fn every_format_carries_the_node_rows_and_the_windows() {
    let dir = tempfile::tempdir().unwrap();
    let (active, standby) = (cluster_node(false), cluster_node(true));
    let all = dir.path().join("all.json");
    let mut cmd = url_cmd(&[
        "--address",
        &active.addr,
        "--address",
        &standby.addr,
        "--nodes",
        "all",
        "-t",
        "1",
        "-c",
        "4",
        "-n",
        "200",
        "--op",
        "seal-status",
        "--output",
        all.to_str().unwrap(),
    ]);
    cmd.env("VAULT_TOKEN", "test-token");
    let out = run(cmd);
    out.assert_code(0);
    let report = |file: &std::path::Path, extra: &[&str]| {
        let mut args = vec!["report", file.to_str().unwrap()];
        args.extend(extra);
        let out = run(url_cmd(&args));
        out.assert_code(0);
        out.stdout
    };
    for format in ["text", "verbose", "ab", "vb-terse", "vb-verbose"] {
        let text = report(&all, &["--format", format]);
        let a = node_line(&text, &active.addr);
        let s = node_line(&text, &standby.addr);
        let (Some(a), Some(s)) = (a, s) else {
            panic!("{format}: no row per node:\n{text}")
        };
        assert_eq!(
            (a.0.as_str(), s.0.as_str()),
            ("active", "standby"),
            "{format}:\n{text}"
        );
        assert!(
            a.1 > 0 && s.1 > 0 && a.1 == a.2 && s.1 == s.2,
            "{format}:\n{text}"
        );
        assert_eq!(a.1 + s.1, 200, "{format}:\n{text}");
    }
    let vb: serde_json::Value =
        serde_json::from_str(&report(&all, &["--format", "vb-json"])).unwrap();
    let rows = vb["nodes"].as_array().unwrap_or_else(|| panic!("{vb:#}"));
    let addrs: Vec<&str> = rows.iter().map(|r| r["addr"].as_str().unwrap()).collect();
    assert_eq!(
        addrs,
        [active.addr.as_str(), standby.addr.as_str()],
        "{vb:#}"
    );
    let sum: u64 = rows.iter().map(|r| r["requests"].as_u64().unwrap()).sum();
    assert_eq!(sum, 200, "{vb:#}");
    assert!(vb["metrics"]["total"].is_object(), "{vb:#}");
    let html = dir.path().join("all.html");
    report(&all, &["--html", html.to_str().unwrap()]);
    let page = std::fs::read_to_string(&html).unwrap();
    let nodes = page
        .split("<h2>Nodes</h2>")
        .nth(1)
        .unwrap_or_else(|| panic!("no node table: {page}"));
    assert!(
        nodes.contains(&format!("<td>{}</td><td>active</td>", active.addr)),
        "{nodes}"
    );
    assert!(
        nodes.contains(&format!("<td>{}</td><td>standby</td>", standby.addr)),
        "{nodes}"
    );
    assert!(!page.contains("Unavailability"), "no window in this run");

    // The active node stops answering mid-run (SIGSTOP) and the standby never takes over:
    // one window, open to the end of the run.
    let (active, standby) = (cluster_node(false), cluster_node(true));
    let failed = dir.path().join("failed.json");
    let mut cmd = url_cmd(&[
        "--address",
        &active.addr,
        "--address",
        &standby.addr,
        "-c",
        "2",
        "-R",
        "200",
        "-z",
        "2s",
        "--timeout",
        "1s",
        "--op",
        "seal-status",
        "--allow-errors",
        "--output",
        failed.to_str().unwrap(),
    ]);
    cmd.env("VAULT_TOKEN", "test-token");
    let running = spawn(cmd);
    std::thread::sleep(std::time::Duration::from_millis(700));
    // nginx's master and its worker are stopped (the worker answers; stopping the master
    // alone would change nothing), and woken after the run so that it can be stopped.
    let pids = Command::new("pgrep")
        .args(["-P", &active.pid().to_string()])
        .output()
        .unwrap();
    let mut pids: Vec<String> = String::from_utf8_lossy(&pids.stdout)
        .split_whitespace()
        .map(String::from)
        .collect();
    assert!(!pids.is_empty(), "no nginx worker");
    pids.push(active.pid().to_string());
    let signal = |sig: &str| {
        let s = Command::new("kill").arg(sig).args(&pids).status().unwrap();
        assert!(s.success());
    };
    signal("-STOP");
    let out = running.finish(WATCHDOG);
    signal("-CONT");
    assert!(out.code.is_some(), "{}", out.show());
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&failed).unwrap()).unwrap();
    let windows = v["windows"]
        .as_array()
        .unwrap_or_else(|| panic!("{}", out.show()));
    assert_eq!(windows.len(), 1, "{}", out.show());
    assert!(windows[0]["end_s"].is_null(), "{}", out.show());
    for format in ["ab", "vb-terse", "vb-verbose"] {
        let text = report(&failed, &["--format", format]);
        assert!(text.contains("Unavailable from "), "{format}:\n{text}");
    }
    let vb: serde_json::Value =
        serde_json::from_str(&report(&failed, &["--format", "vb-json"])).unwrap();
    assert_eq!(vb["windows"].as_array().map(Vec::len), Some(1), "{vb:#}");
    let html = dir.path().join("failed.html");
    report(&failed, &["--html", html.to_str().unwrap()]);
    let page = std::fs::read_to_string(&html).unwrap();
    let w = page
        .split("<h2>Unavailability</h2>")
        .nth(1)
        .unwrap_or_else(|| panic!("no window table: {page}"));
    assert!(w.contains("<td class=\"num\">end of run</td>"), "{w}");

    // A single target's ab report stays ab's, line for line: no node table after it.
    let single = dir.path().join("single.json");
    let out = run(url_cmd(&[
        "-c",
        "1",
        "-n",
        "20",
        "--output",
        single.to_str().unwrap(),
        &format!("{}/v1/sys/seal-status", standby.addr),
    ]));
    out.assert_code(0);
    let text = report(&single, &["--format", "ab"]);
    // (vblast's thin-tail note goes below ab's table, where no ab parser reads.)
    let table = text.split("\nThin tail: ").next().unwrap();
    assert!(table.trim_end().ends_with("(longest request)"), "{text}");
}

// ---------------------------------------------------------------------------
// ab's layout, line by line: labels and units against real ab, plain and TLS
// ---------------------------------------------------------------------------

/// A report's lines as a parser sees their shape: every number `#`, spaces collapsed;
/// from "Benchmarking" on (the banners differ by design), without ab's data-dependent
/// median-and-mean warnings, and without vblast's notes under the table.
fn shape(report: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut warning = false;
    let mut started = false;
    for line in report.lines() {
        started |= line.starts_with("Benchmarking ");
        if !started {
            continue;
        }
        if line.starts_with("WARNING: ") || line.starts_with("ERROR: ") {
            warning = true;
            continue;
        }
        if warning && line.starts_with("      ") {
            continue;
        }
        warning = false;
        if line.starts_with("Thin tail: ") || line.starts_with("Length failures are not counted") {
            continue;
        }
        let mut shaped = String::new();
        let mut in_number = false;
        for c in line.chars() {
            if c.is_ascii_digit() || (in_number && c == '.') {
                if !in_number {
                    shaped.push('#');
                }
                in_number = true;
            } else {
                in_number = false;
                shaped.push(c);
            }
        }
        out.push(shaped.split_whitespace().collect::<Vec<_>>().join(" "));
    }
    while out.last().is_some_and(|l| l.is_empty()) {
        out.pop();
    }
    out
}

/// Real ab and `vblast ab` on one command line: every line's label and unit the same,
/// in the same order, and the same progress lines on stderr.
fn same_lines(args: &[&str]) {
    let a = real_ab(args);
    assert_eq!(a.code, Some(0), "ab {args:?}\n{}", a.show());
    let v = dropin(args);
    v.assert_code(0);
    let (sa, sv) = (shape(&a.stdout), shape(&v.stdout));
    for (i, (la, lv)) in sa.iter().zip(&sv).enumerate() {
        assert_eq!(
            la, lv,
            "ab {args:?}: line {i}\nab:\n{}\nvblast:\n{}",
            a.stdout, v.stdout
        );
    }
    assert_eq!(
        sa.len(),
        sv.len(),
        "ab {args:?}\nab:\n{}\nvblast:\n{}",
        a.stdout,
        v.stdout
    );
    assert_eq!(a.stderr, v.stderr, "ab {args:?}: the progress lines");
}

#[test]
fn vblast_ab_lines_match_real_ab_label_for_label() {
    let ng = Nginx::start();
    let url = format!("{}/v1/secret/data/foo", ng.addr);
    same_lines(&["-n", "300", "-c", "4", &url]);
    same_lines(&["-n", "1000", "-c", "4", "-k", &url]);
    same_lines(&["-q", "-n", "50", "-c", "2", &url]);
    let (tls, _files) = Nginx::start_tls_generated();
    let url = format!("https://localhost:{}/v1/secret/data/foo", tls.port);
    same_lines(&["-n", "200", "-c", "2", &url]);
    same_lines(&["-n", "200", "-c", "2", "-k", &url]);
    // Over TLS, Connect includes the handshake: a connection per request, each Connect
    // is its TCP connect and handshake together, as ab counts it.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tls.json");
    let saved = run(url_cmd(&[
        "-q",
        "-n",
        "40",
        "-c",
        "2",
        "--no-keepalive",
        "--insecure",
        "--output",
        file.to_str().unwrap(),
        &url,
    ]));
    saved.assert_code(0);
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert!(
        doc["stats"]["connect_tls"].is_string() || doc["stats"]["connect_tls"].is_object(),
        "{:#}",
        doc["stats"]
    );
}

#[test]
fn format_ab_on_vault_operations_counts_no_length_failures() {
    let bao = OpenBao::start();
    let out = run(vault_cmd(
        &bao,
        &[
            "-c",
            "4",
            "-n",
            "300",
            "--op",
            "kv-read:1,kv-write:1",
            "--format",
            "ab",
        ],
    ));
    out.assert_code(0);
    let r = AbReport::parse(&out.stdout);
    assert_eq!(r.get("Failed requests"), "0", "{}", out.stdout);
    assert_eq!(r.get("Document Length"), "Variable", "{}", out.stdout);
    assert_eq!(
        out.stdout
            .lines()
            .filter(|l| l.starts_with("Length failures are not counted"))
            .count(),
        1,
        "{}",
        out.stdout
    );
}

/// `--format ab --ci`: each percentage row but 100% ends in its interval, in parentheses
/// after the figure (as ab's own 100% row ends in "(longest request)"), so the parser that
/// reads the real ab reads it the same; `vblast report FILE --format ab --ci` prints it
/// again, and without `--ci` the rows are ab's alone.
#[test]
fn ab_format_with_ci_still_reads_like_real_ab() {
    let ng = Nginx::start();
    let url = format!("{}/v1/secret/data/foo", ng.addr);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("run.json").display().to_string();
    let a = ab(&["-n", "2000", "-c", "4", &url]);
    let v = vblast_ab(&[
        "--no-keepalive",
        "-n",
        "2000",
        "-c",
        "4",
        "--ci",
        "--output",
        &file,
        &url,
    ]);
    let (ra, rv) = (AbReport::parse(&a), AbReport::parse(&v));
    assert_same(&ra, &rv);
    let rows: Vec<&str> = v
        .lines()
        .filter(|l| l.trim_start().split_once("%  ").is_some())
        .collect();
    assert_eq!(rows.len(), 9, "{v}");
    for (line, (p, figure)) in rows.iter().zip(&rv.percents) {
        if *p == 100 {
            assert!(line.ends_with(" (longest request)"), "{line}");
            continue;
        }
        // "(95% CI 1-4 ms)", "(95% CI 1-4 ms!)" when wider than the value itself (a loaded
        // machine's tail), a side "?" when too few samples bound it.
        let ci = line
            .split_once(" (95% CI ")
            .and_then(|(_, ci)| ci.strip_suffix(" ms)").or_else(|| ci.strip_suffix(" ms!)")))
            .unwrap_or_else(|| panic!("no interval in {line:?}\n{v}"));
        let (lo, hi) = ci.split_once('-').unwrap();
        let side = |s: &str| (s != "?").then(|| s.parse::<u64>().unwrap());
        let (lo, hi) = (side(lo), side(hi));
        assert!(lo.is_some() || hi.is_some(), "{line}");
        assert!(lo.is_none_or(|lo| lo <= *figure), "{line}");
        assert!(hi.is_none_or(|hi| *figure <= hi), "{line}");
    }
    assert!(
        v.trim_end()
            .lines()
            .last()
            .unwrap()
            .starts_with("CI: 95% confidence interval"),
        "{v}"
    );
    let again = run(url_cmd(&["report", &file, "--format", "ab", "--ci"]));
    again.assert_code(0);
    assert_eq!(again.stdout, v);
    let plain = run(url_cmd(&["report", &file, "--format", "ab"]));
    plain.assert_code(0);
    assert!(!plain.stdout.contains("CI"), "{}", plain.stdout);
    assert_eq!(AbReport::parse(&plain.stdout).percents, rv.percents);
}
