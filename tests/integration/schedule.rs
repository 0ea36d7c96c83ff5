//! A schedule that was not kept (docs/exit-status.md): an open-model run against a real
//! OpenBao dev server that is SIGSTOPped once the schedule has begun, until after the run's
//! end. The run exits 3, every format says so, and the requests never sent have a latency
//! figure of their own. Counts and statuses only: nothing here depends on the machine's
//! speed (the server is stopped for most of the run whatever the load beside it).

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::client::scrape;
use crate::support::openbao::OpenBao;
use crate::support::ports::free_port;
use crate::support::run::{WATCHDOG, run, spawn};
use crate::support::vblast::{url_cmd, vault_cmd};

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

/// The value of `name` in the exporter's text.
fn series(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{name} ")))
        .and_then(|v| v.trim().parse().ok())
}

#[test]
fn a_schedule_not_kept_is_its_own_status_and_every_report_says_so() {
    let bao = OpenBao::start();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("stalled.json");
    let page = dir.path().join("stalled.html");
    let maddr = format!("127.0.0.1:{}", free_port());
    let running = spawn(vault_cmd(
        &bao,
        &[
            "-R",
            "500",
            "-z",
            "8s",
            "-c",
            "8",
            "--timeout",
            "2s",
            "--op",
            "kv-read",
            "--format",
            "json",
            "--output",
            file.to_str().unwrap(),
            "--html",
            page.to_str().unwrap(),
            "--metrics-listen",
            &maddr,
            "--metrics-hold",
            "20s",
        ],
    ));
    // The schedule has begun once a request is counted: the server is stopped then, and
    // stays stopped until after the run's end (its 8 s and the 2 s of grace).
    let deadline = Instant::now() + Duration::from_secs(60);
    while series(&scrape(&maddr), "vblast_requests_total").unwrap_or(0.0) < 1.0 {
        assert!(Instant::now() < deadline, "the run never began");
        std::thread::sleep(Duration::from_millis(50));
    }
    bao.stop_signal();
    // The run's end: the exporter serves the verdict once the run's figures are final.
    let deadline = Instant::now() + Duration::from_secs(90);
    let text = loop {
        let text = scrape(&maddr);
        if text.contains("vblast_schedule_kept ") {
            break text;
        }
        assert!(Instant::now() < deadline, "no verdict served:\n{text}");
        std::thread::sleep(Duration::from_millis(200));
    };
    bao.cont_signal();
    assert_eq!(series(&text, "vblast_schedule_kept"), Some(0.0), "{text}");
    let not_sent_served = series(&text, "vblast_not_sent_total").unwrap_or(0.0);
    let out = running.finish(WATCHDOG);
    out.assert_code(3);
    assert!(
        out.stderr
            .contains("vblast: warning: the schedule was not kept: "),
        "{}",
        out.show()
    );
    let j = out.json();
    let not_sent = u(&j["not_sent"]);
    let requests = u(&j["requests"]);
    // The server stopped for most of the 8 s: more than 1% of the 4,000 never sent (the
    // threshold), and what was sent and not sent is never more than the schedule.
    assert!(not_sent * 100 > 4000, "{j:#}");
    assert!(requests + not_sent <= 4000, "{j:#}");
    assert_eq!(not_sent_served, not_sent as f64, "{text}");
    let warning = j["schedule_not_kept"].as_str().unwrap_or_default();
    assert!(
        warning.contains(&format!("{not_sent} of the ")) && warning.contains("never sent"),
        "{j:#}"
    );
    // Each request never sent is in a figure of its own, and in every scheduled request's
    // figure beside the sent ones; each waited at least the grace after the deadline.
    assert_eq!(u(&j["unsent_ms"]["count"]), not_sent, "{j:#}");
    assert_eq!(
        u(&j["scheduled_ms"]["count"]),
        u(&j["latency_ms"]["count"]) + not_sent,
        "{j:#}"
    );
    assert!(j["unsent_ms"]["min"].as_f64().unwrap() >= 1999.0, "{j:#}");
    assert!(
        j["scheduled_ms"]["max"].as_f64() >= j["unsent_ms"]["max"].as_f64(),
        "{j:#}"
    );
    // The results file keeps it, and every format read back from it says it.
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(saved["schedule_not_kept"], j["schedule_not_kept"]);
    assert!(saved["stats"]["unsent"].is_string(), "{saved:#}");
    for format in ["text", "verbose", "ab", "vb-terse", "vb-verbose"] {
        let r = run(url_cmd(&[
            "report",
            file.to_str().unwrap(),
            "--format",
            format,
        ]));
        r.assert_code(0);
        assert!(
            r.stdout.contains("WARNING: the schedule was not kept: "),
            "{format}: {}",
            r.show()
        );
        if format == "text" {
            assert!(
                r.stdout
                    .contains("Not sent, each as waiting until the run ended (at least): ")
                    && r.stdout.contains("Every scheduled request, sent or not"),
                "{}",
                r.show()
            );
        }
    }
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("the schedule was not kept: "), "{html}");
}
