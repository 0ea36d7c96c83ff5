//! Rate-limit quotas: a quota's 429 answers (with `Retry-After` / `X-Ratelimit-*`) are
//! counted as throttled, apart from errors, and `--respect-retry-after` makes connections
//! wait as told. Against a real OpenBao dev server with a quota created on it.

use crate::support;
use crate::support::figures::u;
use crate::support::openbao::OpenBao;
use crate::support::run::run;
use crate::support::vblast::{Args, url_cmd};

fn lookup_self(bao: &OpenBao, extra: &[&str]) -> support::run::Out {
    let url = format!("{}/v1/auth/token/lookup-self", bao.addr);
    let header = format!("X-Vault-Token: {}", bao.token);
    let args = Args::default().flag("-H", header).json();
    run(args.extra(&["--allow-errors"]).extra(extra).url(&url))
}

#[test]
fn quota_answers_are_throttled_not_errors() {
    let bao = OpenBao::start();
    let (s, b) = bao.api(
        "POST",
        "/v1/sys/quotas/config",
        Some(r#"{"enable_rate_limit_response_headers": true}"#),
    );
    assert_eq!(s, 204, "{b}");
    // 50 requests per second for the whole server.
    let (s, b) = bao.api(
        "POST",
        "/v1/sys/quotas/rate-limit/vblast-test",
        Some(r#"{"rate": 50, "interval": "1s"}"#),
    );
    assert_eq!(s, 204, "{b}");
    let out = lookup_self(&bao, &["-c", "4", "-z", "3s"]);
    out.assert_code(0);
    let v = out.json();
    let (requests, ok, throttled) = (u(&v["requests"]), u(&v["ok"]), u(&v["throttled"]));
    assert!(throttled > 0 && ok > 0, "{}", out.show());
    assert_eq!(ok + throttled, requests, "{}", out.show());
    assert_eq!(u(&v["errors"]["status"]), 0, "{}", out.show());
    assert_eq!(u(&v["failed"]), throttled, "{}", out.show());
    assert_eq!(u(&v["ratelimit_limit"]), 50, "{}", out.show());
    // The quota lets at most 50 a second through (one interval of slack at each end).
    let secs = v["duration_s"].as_f64().unwrap().ceil() as u64;
    assert!(ok <= 50 * (secs + 2), "{ok} ok in {secs}s: {}", out.show());

    // A quota over a longer interval: its Retry-After is seconds away, and connections that
    // respect it wait instead of hammering.
    let (s, b) = bao.api(
        "POST",
        "/v1/sys/quotas/rate-limit/vblast-test",
        Some(r#"{"rate": 5, "interval": "10s", "block_interval": "10s"}"#),
    );
    assert_eq!(s, 204, "{b}");
    let hammer = lookup_self(&bao, &["-c", "2", "-z", "2s"]);
    let hv = hammer.json();
    assert!(u(&hv["retry_after_s"]) >= 1, "{}", hammer.show());
    let polite = lookup_self(&bao, &["-c", "2", "-z", "2s", "--respect-retry-after"]);
    let pv = polite.json();
    // Each connection is throttled once, then waits past the end of the run.
    assert!(u(&pv["throttled"]) <= 2, "{}", polite.show());
    assert!(
        u(&hv["throttled"]) > 10 * u(&pv["throttled"]).max(1),
        "{}\n{}",
        hammer.show(),
        polite.show()
    );
}

/// `--respect-retry-after` with a Retry-After far past the run's end: a timed run still
/// ends with its time (the connections told to wait close once no work is left), and the
/// throttled answers are counted. nginx answers every request 429 `Retry-After: 3600`.
#[test]
fn a_long_retry_after_does_not_hold_a_timed_run_open() {
    let ng = support::nginx::Nginx::with_extra(
        "location = /v1/quota { add_header Retry-After 3600 always; return 429 '{\"errors\":[\"rate limit quota exceeded\"]}'; }",
    );
    let url = format!("{}/v1/quota", ng.addr);
    for shape in [&["-z", "2s"][..], &["-R", "20", "-z", "2s"]] {
        let mut args = vec!["-t", "1", "-c", "4", "--respect-retry-after"];
        args.extend_from_slice(shape);
        args.extend_from_slice(&["--allow-errors", "--format", "json", &url]);
        // (run's watchdog, 60 s, is the hang guard: no time is asserted)
        let out = run(url_cmd(&args));
        // Open model: the requests the hour's wait held back were never sent, a schedule
        // not kept (exit 3, docs/exit-status.md), said as such.
        let open = shape.contains(&"-R");
        out.assert_code(if open { 3 } else { 0 });
        assert_eq!(
            open,
            out.stderr.contains("the schedule was not kept"),
            "{shape:?}: {}",
            out.show()
        );
        let v = out.json();
        // Each connection was told to wait an hour after its first answer.
        assert_eq!(u(&v["requests"]), 4, "{shape:?}: {}", out.show());
        assert_eq!(u(&v["throttled"]), 4, "{shape:?}: {}", out.show());
        assert_eq!(u(&v["retry_after_s"]), 3600, "{shape:?}: {}", out.show());
        assert_eq!(u(&v["errors"]["status"]), 0, "{shape:?}: {}", out.show());
    }
}
