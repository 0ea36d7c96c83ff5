//! HTTP/2 end to end (docs/http2.md) against real servers: nginx with `listen ... ssl
//! http2` (ALPN h2) and `listen ... http2` (h2c), with a lowered
//! `http2_max_concurrent_streams`, a `keepalive_requests` that sends GOAWAY mid-run and a
//! 1 MiB response; nginx without h2 for the ALPN refusal; OpenBao `-dev-tls` (Go's HTTP/2
//! server) for a Vault operation, with `ss` showing one TCP connection per `-c`; and
//! `nghttp` as an independent client where the frame sequence matters.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::nginx::Nginx;
use crate::support::openbao::OpenBao;
use crate::support::run::{Out, run};
use crate::support::vblast::{env_cmd, url_cmd};
use serde_json::Value;

/// A run of `n` requests that all succeeded; its JSON report.
fn all_ok(r: &Out, n: u64) -> Value {
    assert_eq!(r.code, Some(0), "{}", r.show());
    let j = r.json();
    assert_eq!(j["requests"], n, "{}", r.show());
    assert_eq!(j["ok"], n, "{}", r.show());
    j
}

/// `vblast run URL` over HTTP/2 with `extra` flags, as JSON.
fn h2_run(ng: &Nginx, path: &str, extra: &[&str]) -> Out {
    let url = format!("{}{path}", ng.addr);
    let mut args = vec![url.as_str(), "--format", "json"];
    let ca;
    if let Some(c) = &ng.ca_cert {
        ca = c.display().to_string();
        args.extend(["--http2", "--ca-cert", ca.as_str()]);
    } else {
        args.push("--http2-prior-knowledge");
    }
    args.extend(extra);
    run(url_cmd(&args))
}

#[test]
fn h2_by_alpn_and_h2c_carry_many_streams_per_connection() {
    for tls in [true, false] {
        let ng = Nginx::start_h2(tls, "", "");
        let r = h2_run(
            &ng,
            "/v1/kv/data/foo",
            &["-c", "2", "--streams", "8", "-n", "800"],
        );
        let j = all_ok(&r, 800);
        assert_eq!(j["status"]["200"], 800, "{}", r.show());
        let want = if tls { "HTTP/2 (h2)" } else { "HTTP/2 (h2c)" };
        assert_eq!(j["run"]["protocol"], want, "{}", r.show());
        assert_eq!(j["http2"]["streams_asked"], 8, "{j}");
        assert_eq!(j["http2"]["streams_allowed"], 8, "{j}");
        // One connection per -c: 400 requests each, under nginx's keepalive_requests 1000.
        assert_eq!(j["connections_opened"], 2, "{j}");
    }
    // The text report's header names the protocol and the streams allowed, and so does
    // the HTML report's description.
    let ng = Nginx::start_h2(false, "", "");
    let url = format!("{}/v1/x", ng.addr);
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("run.html");
    let r = run(url_cmd(&[
        &url,
        "--http2-prior-knowledge",
        "--streams",
        "4",
        "-c",
        "1",
        "-n",
        "50",
        "--html",
        html.to_str().unwrap(),
    ]));
    let page = std::fs::read_to_string(&html).unwrap_or_default();
    assert!(page.contains("HTTP/2 (h2c)"), "{}", r.show());
    assert!(
        page.contains("4 streams per connection asked, 4 allowed"),
        "{}",
        r.show()
    );
    assert_eq!(r.code, Some(0), "{}", r.show());
    assert!(r.stdout.contains("HTTP/2 (h2c)"), "{}", r.show());
    assert!(
        r.stdout
            .contains("4 streams per connection asked, 4 allowed"),
        "{}",
        r.show()
    );
}

#[test]
fn the_servers_max_concurrent_streams_caps_the_streams_and_is_reported() {
    let ng = Nginx::start_h2(true, "http2_max_concurrent_streams 3;", "");
    let r = h2_run(&ng, "/v1/x", &["-c", "2", "--streams", "50", "-n", "600"]);
    let j = all_ok(&r, 600);
    assert_eq!(j["http2"]["streams_asked"], 50, "{j}");
    assert_eq!(j["http2"]["streams_allowed"], 3, "{j}");
    assert_eq!(j["http2"]["server_limit"], 3, "{j}");
    // Never above the limit: nginx would have refused (reset) a stream over it.
    assert!(
        j["http2"]["resets"]
            .as_object()
            .is_none_or(|m| m.is_empty()),
        "{j}"
    );
}

#[test]
fn goaway_mid_run_completes_what_it_covered_and_resends_the_rest() {
    // nginx sends GOAWAY after 40 requests on a connection: every request still succeeds,
    // over connections opened again.
    let ng = Nginx::start_h2(false, "", "keepalive_requests 40;");
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("h2.json");
    let out = results.display().to_string();
    let r = h2_run(
        &ng,
        "/v1/x",
        &["-c", "2", "--streams", "8", "-n", "1000", "--output", &out],
    );
    let j = all_ok(&r, 1000);
    let goaways = j["http2"]["goaways"]["NO_ERROR"].as_u64().unwrap_or(0);
    assert!(goaways >= 10, "{j}");
    assert!(j["connections_opened"].as_u64().unwrap() >= 20, "{j}");
    // The HTTP/2 keys are in the schemas: the report and the results file validate.
    let report = dir.path().join("report.json");
    std::fs::write(&report, &r.stdout).unwrap();
    crate::schema::assert_valid("report.schema.json", &[&report]);
    crate::schema::assert_valid("results.schema.json", &[&results]);
}

#[test]
fn a_mebibyte_response_flows_with_window_updates() {
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big.json");
    std::fs::write(&big, vec![b'x'; 1 << 20]).unwrap();
    let loc = format!("location = /big {{ alias {}; }}", big.display());
    for tls in [true, false] {
        let ng = Nginx::start_h2(tls, "", &loc);
        let r = h2_run(&ng, "/big", &["-c", "1", "--streams", "4", "-n", "12"]);
        let j = all_ok(&r, 12);
        assert!(j["bytes_received"].as_u64().unwrap() >= 12 << 20, "{j}");
    }
}

#[test]
fn a_server_without_h2_is_refused_naming_its_choice_unless_fallback() {
    let (ng, files) = Nginx::start_tls_generated();
    let ca = files.ca_cert.display().to_string();
    let url = format!("{}/v1/x", ng.addr);
    let base = [
        url.as_str(),
        "--http2",
        "--ca-cert",
        ca.as_str(),
        "-n",
        "20",
    ];
    let r = run(url_cmd(&base));
    assert_eq!(r.code, Some(2), "{}", r.show());
    assert!(
        r.stderr.contains("does not offer h2") && r.stderr.contains("http/1.1"),
        "{}",
        r.show()
    );
    assert!(
        r.stdout.is_empty() && !r.stderr.contains("panicked"),
        "{}",
        r.show()
    );
    let mut args = base.to_vec();
    args.extend(["--http2-fallback", "--format", "json"]);
    let r = run(url_cmd(&args));
    let j = all_ok(&r, 20);
    assert!(j.to_string().contains("--http2-fallback"), "{j}");
    // --streams 0, and --streams without HTTP/2: one message each, exit 2.
    for bad in [&["--http2", "--streams", "0"][..], &["--streams", "4"][..]] {
        let mut args = vec![url.as_str(), "-n", "1"];
        args.extend(bad);
        let r = run(url_cmd(&args));
        assert_eq!(r.code, Some(2), "{}", r.show());
        assert!(r.stderr.contains("--streams"), "{}", r.show());
    }
}

/// The TCP connections process `pid` has open to `port`, as `ss` sees them.
fn connections_of(pid: u32, port: u16) -> usize {
    let out = Command::new("ss")
        .args(["-Htnp", "state", "established"])
        .output()
        .expect("ss (iproute2)");
    let text = String::from_utf8_lossy(&out.stdout);
    let peer = format!("127.0.0.1:{port}");
    text.lines()
        .filter(|l| l.contains(&peer) && l.contains(&format!("pid={pid},")))
        .count()
}

#[test]
fn openbao_kv_read_over_h2_uses_one_connection_per_c() {
    let bao = OpenBao::start_tls();
    let ca = bao.ca_cert.clone().unwrap();
    let port: u16 = bao.addr.rsplit(':').next().unwrap().parse().unwrap();
    let env = [
        ("VAULT_ADDR", bao.addr.as_str()),
        ("VAULT_TOKEN", "root"),
        ("VAULT_CACERT", ca.to_str().unwrap()),
    ];
    let args = [
        "--op",
        "kv-read",
        "--secrets",
        "10",
        "--http2",
        "--streams",
        "8",
        "-c",
        "3",
    ];
    let mut a = args.to_vec();
    a.extend(["-n", "600", "--format", "json"]);
    let r = run(env_cmd(&a, &env));
    let j = all_ok(&r, 600);
    assert_eq!(j["run"]["protocol"], "HTTP/2 (h2)", "{j}");
    assert_eq!(j["connections_opened"], 3, "{j}");
    // Over a timed run, the server's side of it as `ss` sees it: 3 connections.
    let mut a = args.to_vec();
    // Without the server-stats sampler's own connection (docs/server-stats.md).
    a.extend(["-z", "3s", "--format", "json", "--no-server-stats"]);
    let mut cmd = env_cmd(&a, &env);
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let child = cmd.spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut seen = 0;
    while Instant::now() < deadline && seen == 0 {
        std::thread::sleep(Duration::from_millis(300));
        seen = connections_of(child.id(), port);
    }
    std::thread::sleep(Duration::from_millis(500));
    let seen = seen.max(connections_of(child.id(), port));
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(seen, 3, "ss saw {seen} connections of vblast to the server");
}

#[test]
fn nghttp_agrees_on_the_frame_sequence_nginx_sends() {
    // The independent client's view of the same server: SETTINGS, the response HEADERS
    // and DATA ending the stream, as vblast's connection reads them.
    // Missing, the test fails naming the package (tools/deps.sh installs it).
    let nghttp = crate::support::deps::program(&["nghttp"], "nghttp2-client");
    let ng = Nginx::start_h2(false, "", "");
    let out = Command::new(nghttp)
        .args(["-nv", &format!("{}/v1/x", ng.addr)])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    for frame in ["recv SETTINGS frame", "recv DATA frame", "END_STREAM"] {
        assert!(text.contains(frame), "{frame} missing:\n{text}");
    }
    let r = h2_run(&ng, "/v1/x", &["-c", "1", "-n", "5"]);
    all_ok(&r, 5);
}

/// nginx numbers the streams of a connection (`$connection_requests`): every fifth one
/// (5, 10, ...) is `$special`, so that a run on one connection knows how many.
const EVERY_FIFTH: &str = "map $connection_requests $special { ~[05]$ 1; default 0; }";

#[test]
fn an_rst_stream_from_nginx_fails_its_request_counted_by_code_and_the_rest_go_on() {
    // `return 444` over HTTP/2: nginx resets the stream (RST_STREAM PROTOCOL_ERROR) and
    // keeps the connection; its other streams are answered.
    let loc = "location = /reset { if ($special) { return 444; } return 200 'ok'; }";
    for tls in [false, true] {
        let ng = Nginx::start_h2(tls, EVERY_FIFTH, loc);
        let r = h2_run(&ng, "/reset", &["-c", "1", "--streams", "4", "-n", "40"]);
        assert!(!r.stderr.contains("panicked"), "{}", r.show());
        let j = r.json();
        assert_eq!(j["requests"], 40, "{j}");
        assert_eq!(j["ok"], 32, "{j}");
        assert_eq!(j["errors"]["read"], 8, "{j}");
        assert_eq!(j["http2"]["resets"]["PROTOCOL_ERROR"], 8, "{j}");
        // Failed, not sent again: only REFUSED_STREAM (and a GOAWAY) say "unprocessed".
        assert_eq!(j["http2"]["resent"], 0, "{j}");
        assert_eq!(j["connections_opened"], 1, "{j}");
        assert_eq!(
            j["error_messages"]["stream reset: PROTOCOL_ERROR"], 8,
            "{j}"
        );
    }
}

#[test]
fn a_timed_out_stream_is_cancelled_and_its_connection_goes_on() {
    // Every fifth stream is proxied to a port that accepts nothing (a listener never
    // accepting), so it never answers; the others answer at once.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let http = format!("{EVERY_FIFTH}\n    error_log logs/error.log info;");
    let loc = format!(
        "location = /slow {{ proxy_read_timeout 60s; if ($special = 0) {{ return 200 'ok'; }} \
         proxy_pass http://127.0.0.1:{port}; }}"
    );
    let ng = Nginx::start_h2(false, &http, &loc);
    let r = h2_run(
        &ng,
        "/slow",
        &["-c", "1", "--streams", "4", "-n", "40", "--timeout", "2s"],
    );
    assert!(!r.stderr.contains("panicked"), "{}", r.show());
    let j = r.json();
    // The 8 silent streams time out, alone: the 32 others succeed on the same connection.
    assert_eq!(j["requests"], 40, "{j}");
    assert_eq!(j["ok"], 32, "{j}");
    assert_eq!(j["errors"]["timeout"], 8, "{j}");
    assert_eq!(j["connections_opened"], 1, "{j}");
    assert_eq!(j["error_messages"]["no response within 2s"], 8, "{j}");
    // nginx's view: each was reset by the client with CANCEL.
    let log = ng.error_log();
    assert_eq!(
        log.matches("client canceled stream").count(),
        8,
        "nginx's error log:\n{log}"
    );
    drop(silent);
}

/// What HTTP/2 cannot do yet is refused before anything is sent: the address here
/// listens on nothing, so any setup or preflight would fail otherwise, with other words.
#[test]
fn what_http2_does_not_do_is_refused_before_anything_is_sent() {
    let env = [("VAULT_ADDR", "https://127.0.0.1:1"), ("VAULT_TOKEN", "t")];
    for (extra, says) in [
        (
            &["--http2", "--no-keepalive"][..],
            "--no-keepalive does not apply",
        ),
        (&["--http2-prior-knowledge"], "speaks h2c on http://"),
    ] {
        let mut a = vec!["--op", "kv-read", "-n", "10"];
        a.extend(extra);
        let r = run(env_cmd(&a, &env));
        assert_eq!(r.code, Some(2), "{extra:?}: {}", r.show());
        assert!(r.stderr.contains(says), "{extra:?}: {}", r.show());
        assert!(!r.stderr.contains("fixture"), "{extra:?}: {}", r.show());
    }
}

/// `--respect-retry-after` over h2c: a 429's Retry-After holds its connection's new
/// streams off (the streams already sent are answered), here past the end of a timed
/// run, which still ends with its time; the 429s, read with their headers, are counted
/// as throttled (a quota's answer), not as errors. nginx answers every request 429
/// `Retry-After: 3600`.
#[test]
fn a_retry_after_holds_an_h2_connection_off_and_429s_are_throttled() {
    let loc = "location = /v1/quota { add_header Retry-After 3600 always; return 429 '{\"errors\":[\"rate limit quota exceeded\"]}'; }";
    let ng = Nginx::start_h2(false, "", loc);
    let r = h2_run(
        &ng,
        "/v1/quota",
        &[
            "-t",
            "1",
            "-c",
            "2",
            "--streams",
            "4",
            "-z",
            "2s",
            "--respect-retry-after",
            "--allow-errors",
        ],
    );
    assert_eq!(r.code, Some(0), "{}", r.show());
    let j = r.json();
    // The 4 streams each connection opened at once; then each waits an hour.
    assert_eq!(j["requests"], 8, "{}", r.show());
    assert_eq!(j["throttled"], 8, "{}", r.show());
    assert_eq!(j["retry_after_s"], 3600, "{}", r.show());
    assert_eq!(j["errors"]["status"], 0, "{}", r.show());
    assert_eq!(j["connections_opened"], 2, "{}", r.show());
}

/// The open model over h2c: the schedule's requests go to free streams, and every one is
/// sent or counted as not sent; a rate sweep's steps run over HTTP/2, each step over
/// connections of its own (steps are not held over HTTP/2 yet), each with exactly its
/// rate's requests.
/// nginx's count of the connections it has accepted (`stub_status`), read over HTTP/1.1
/// from `status` (a plain server block of the same nginx), which the count includes.
fn accepted(status: &str) -> u64 {
    let text = crate::support::client::http_request(status, "GET", "/s", &[], None, None)
        .expect("stub_status")
        .text();
    // "Active connections: 1 \nserver accepts handled requests\n 5 5 7 \n..."
    text.lines()
        .nth(2)
        .and_then(|l| l.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("stub_status: {text}"))
}

/// The open model, and a rate sweep whose steps are held over one set of HTTP/2
/// connections, as over HTTP/1.1 (`sweep_steps.rs`): nginx accepts `-c` connections for
/// the whole sweep, not a set per step, and each step has its own statistics.
#[test]
fn the_open_model_and_a_rate_sweep_run_over_h2c() {
    let sport = crate::support::ports::free_port();
    let ng = Nginx::start_h2(
        false,
        &format!("server {{ listen 127.0.0.1:{sport}; location = /s {{ stub_status; }} }}"),
        "",
    );
    let status = format!("http://127.0.0.1:{sport}");
    let r = h2_run(
        &ng,
        "/v1/x",
        &["-R", "200", "-z", "2s", "-c", "2", "--streams", "4"],
    );
    assert_eq!(r.code, Some(0), "{}", r.show());
    let j = r.json();
    let sent = crate::support::figures::u(&j["requests"]);
    let not_sent = j["not_sent"].as_u64().unwrap_or(0);
    assert_eq!(sent + not_sent, 400, "{}", r.show());
    assert_eq!(j["ok"], j["requests"], "{}", r.show());
    assert_eq!(j["run"]["protocol"], "HTTP/2 (h2c)", "{j}");

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sweep.json");
    let url = format!("{}/v1/x", ng.addr);
    let conns = 2u64;
    let before = accepted(&status);
    let r = run(url_cmd(&[
        "sweep",
        "--rate",
        "50..200",
        "--steps",
        "3",
        "--step-duration",
        "1s",
        "--step-warmup",
        "200ms",
        "--slo",
        "success=100",
        // The achieved rate's default bound (2%) is a timing: a busy machine's stall at a
        // 1 s step's end left a step 4.6% under and moved the search (seen at load 23), and
        // at load average ~14 a starved client achieved 17.3 of 50 req/s (65% under). The
        // test is about the connections and each step's counts: any rate the machine gives.
        "--slo",
        "rate=95%",
        "--http2-prior-knowledge",
        "--streams",
        "4",
        "-c",
        &conns.to_string(),
        "-t",
        "2",
        "--output",
        file.to_str().unwrap(),
        &url,
    ]));
    assert_eq!(r.code, Some(0), "{}", r.show());
    assert!(
        !r.stderr.contains("each step opens its own connections"),
        "{}",
        r.show()
    );
    // This read's own connection is counted; before it, the load connections and at
    // most the reachability check URL mode makes before any load.
    let during = accepted(&status) - before - 1;
    assert!(
        (conns..=conns + 1).contains(&during),
        "three rate steps at -c {conns} must open {conns} load connections, not a set per step: {during}\n{}",
        r.show()
    );
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let steps = doc["steps"].as_array().expect("steps");
    let loads: Vec<u64> = steps.iter().map(|s| s["load"].as_u64().unwrap()).collect();
    assert_eq!(loads, [50, 100, 200], "{}", r.show());
    for s in steps {
        // Each step's own statistics: its warm-up left out, nothing of the other steps.
        let res = &s["results"];
        assert_eq!(
            res["requests"].as_u64(),
            Some(crate::support::figures::step_requests(s)),
            "{s}"
        );
        assert_eq!(res["failed"], 0, "{s}");
        assert_eq!(res["run"]["protocol"], "HTTP/2 (h2c)", "{s}");
        assert_eq!(
            res["run"]["target_rate"].as_f64(),
            s["load"].as_f64(),
            "{s}"
        );
        assert_eq!(res["http2"]["streams_allowed"], 4, "{s}");
    }
    assert_eq!(doc["interrupted"], false);
}

/// A Vault mix, the login-read scenario (each login's token captured and used on later
/// streams of the same connection) and the open model, over h2 to a TLS OpenBao: every
/// request answered, each operation its own row, the protocol named.
#[test]
fn a_mix_login_read_and_the_open_model_run_over_h2_to_openbao() {
    let bao = OpenBao::start_tls();
    let ca = bao.ca_cert.clone().unwrap();
    let env = [
        ("VAULT_ADDR", bao.addr.as_str()),
        ("VAULT_TOKEN", "root"),
        ("VAULT_CACERT", ca.to_str().unwrap()),
    ];
    let h2 = ["--http2", "--streams", "4", "-c", "2", "--format", "json"];
    let ops = |j: &Value| -> Vec<(String, u64, u64)> {
        j["ops"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| {
                let n = |k: &str| o[k].as_u64().unwrap();
                (
                    o["name"].as_str().unwrap().to_string(),
                    n("requests"),
                    n("ok"),
                )
            })
            .collect()
    };
    let mut a = vec![
        "--op",
        "kv-read:3,kv-write:1",
        "--secrets",
        "20",
        "-n",
        "200",
    ];
    a.extend(h2);
    let r = run(env_cmd(&a, &env));
    let j = all_ok(&r, 200);
    assert_eq!(j["run"]["protocol"], "HTTP/2 (h2)", "{j}");
    let rows = ops(&j);
    let names: Vec<&str> = rows.iter().map(|o| o.0.as_str()).collect();
    assert_eq!(names, ["kv-read", "kv-write"], "{j}");
    assert!(rows.iter().all(|o| o.1 > 0 && o.1 == o.2), "{rows:?}");

    let mut a = vec![
        "--scenario",
        "login-read",
        "--users",
        "4",
        "--secrets",
        "10",
    ];
    a.extend(["-n", "40"]);
    a.extend(h2);
    let r = run(env_cmd(&a, &env));
    let j = all_ok(&r, 40);
    let rows = ops(&j);
    let names: Vec<&str> = rows.iter().map(|o| o.0.as_str()).collect();
    assert_eq!(names, ["login-read", "login-read/login"], "{j}");
    // A read answered 200 used a token its connection's login captured.
    assert!(rows.iter().all(|o| o.1 > 0 && o.1 == o.2), "{rows:?}");

    let mut a = vec![
        "--op",
        "kv-read",
        "--secrets",
        "10",
        "-R",
        "100",
        "-z",
        "2s",
    ];
    a.extend(h2);
    let r = run(env_cmd(&a, &env));
    assert_eq!(r.code, Some(0), "{}", r.show());
    let j = r.json();
    let sent = crate::support::figures::u(&j["requests"]);
    assert_eq!(sent + j["not_sent"].as_u64().unwrap_or(0), 200, "{j}");
    assert_eq!(j["ok"], j["requests"], "{j}");
    assert_eq!(j["run"]["model"], "open", "{j}");
}

/// An h2c "server" (`RawServer`: it reads the client's preface, answers with `frames`,
/// then closes) that breaks the protocol: vblast closes the connection with the right
/// GOAWAY code, counts it by code and opens the connection again, never hangs. The first
/// and last break the connection before any stream starts (streams wait for the server's
/// SETTINGS): a due request fails with the error and the link backs off, so the run ends
/// (it used to reconnect in a tight loop, 24,673 connections in 15 s, and send nothing).
#[test]
fn a_malformed_frame_an_oversized_block_and_a_window_overflow_are_counted_and_reopened() {
    fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let n = payload.len() as u32;
        let mut f = vec![(n >> 16) as u8, (n >> 8) as u8, n as u8, kind, flags];
        f.extend_from_slice(&stream.to_be_bytes());
        f.extend_from_slice(payload);
        f
    }
    let settings = frame(0x4, 0, 0, &[]);
    // HEADERS on stream 1 without END_HEADERS, then CONTINUATIONs past 64 KiB.
    let mut oversized = frame(0x1, 0, 1, &[0x88]);
    for _ in 0..5 {
        oversized.extend(frame(0x9, 0, 1, &[0x40; 16_000]));
    }
    for (name, bad, code) in [
        // A PING of 7 bytes (PINGs are 8).
        ("malformed", frame(0x6, 0, 0, &[0; 7]), "FRAME_SIZE_ERROR"),
        ("oversized block", oversized, "ENHANCE_YOUR_CALM"),
        // The connection's window raised past 2^31 - 1.
        (
            "window overflow",
            frame(0x8, 0, 0, &0x7fff_ffffu32.to_be_bytes()),
            "FLOW_CONTROL_ERROR",
        ),
    ] {
        let mut bytes = settings.clone();
        bytes.extend(bad);
        let server = crate::support::raw::RawServer::reply(bytes);
        let url = format!("{}/v1/x", server.addr);
        let r = run(url_cmd(&[
            &url,
            "--http2-prior-knowledge",
            "-c",
            "1",
            "-n",
            "3",
            "--timeout",
            "5s",
            "--format",
            "json",
        ]));
        // Every request failed (no server answered one): exit 1, a report, no hang.
        assert_eq!(r.code, Some(1), "{name}: {}", r.show());
        let j = r.json();
        let errors = j["http2"]["conn_errors"][code].as_u64().unwrap_or(0);
        assert!(errors >= 1, "{name}: no {code} counted: {j}");
        assert!(
            server.connections() >= 2,
            "{name}: the connection was not opened again ({} accepted): {}",
            server.connections(),
            r.show()
        );
        assert_eq!(j["ok"], 0, "{name}: {j}");
    }
}

/// Every Vault operation that needs no outside service (a database, redis, RabbitMQ, a
/// client certificate) over h2 to a TLS OpenBao: every request answered, and the server
/// as before (mounts, auth paths, policies, identity entities).
#[test]
fn every_vault_operation_runs_over_h2_and_leaves_nothing() {
    let bao = OpenBao::start_tls();
    let ca = bao.ca_cert.clone().unwrap();
    let env = [
        ("VAULT_ADDR", bao.addr.as_str()),
        ("VAULT_TOKEN", "root"),
        ("VAULT_CACERT", ca.to_str().unwrap()),
    ];
    let before = crate::support::openbao::server_state(&bao);
    let ops = [
        "kv-read",
        "kv-write",
        "kv-list",
        "kv-delete",
        "cubbyhole-read",
        "cubbyhole-write",
        "approle-login",
        "userpass-login",
        "jwt-login",
        "token-create",
        "token-lookup",
        "token-renew",
        "token-revoke",
        "transit-encrypt",
        "transit-decrypt",
        "transit-sign",
        "transit-verify",
        "transit-hmac",
        "pki-issue",
        "pki-sign",
        "ssh-sign",
        "ssh-issue",
        "totp-generate",
        "totp-read",
        "totp-create",
        "identity",
        "sys-health",
        "ha-status",
        "seal-status",
        "sys-metrics",
    ];
    for op in ops
        .iter()
        .map(|o| ["--op", o])
        .chain([["--scenario", "login-read"]])
    {
        let mut a = op.to_vec();
        a.extend(["--http2", "--streams", "4", "-c", "2", "-n", "16"]);
        a.extend(["--format", "json", "--no-server-stats"]);
        if op[1] == "login-read" {
            a.extend(["--users", "2"]);
        }
        let r = run(env_cmd(&a, &env));
        let j = all_ok(&r, 16);
        assert_eq!(j["run"]["protocol"], "HTTP/2 (h2)", "{op:?}: {j}");
        assert_eq!(
            crate::support::openbao::server_state(&bao),
            before,
            "{op:?} left something: {}",
            r.show()
        );
    }
}

/// `--http2-fallback`'s note is no failure: it is listed apart from the errors, in the
/// text report (`Note: ...` above `Errors:`) and in JSON (`notes`, not `error_messages`).
#[test]
fn the_fallback_note_is_listed_apart_from_the_errors() {
    let (ng, files) = Nginx::start_tls_generated();
    let ca = files.ca_cert.display().to_string();
    let url = format!("{}/v1/x", ng.addr);
    let base = [
        url.as_str(),
        "--http2",
        "--http2-fallback",
        "--ca-cert",
        ca.as_str(),
        "-n",
        "10",
    ];
    let mut args = base.to_vec();
    args.extend(["--format", "json"]);
    let j = all_ok(&run(url_cmd(&args)), 10);
    let notes = j["notes"].as_array().cloned().unwrap_or_default();
    assert!(
        notes.len() == 1 && notes[0].as_str().unwrap().contains("--http2-fallback"),
        "{j:#}"
    );
    assert!(
        j["error_messages"]
            .as_object()
            .is_some_and(|m| m.is_empty()),
        "{j:#}"
    );
    let r = run(url_cmd(&base));
    r.assert_code(0);
    let note = r.line("Note: --http2-fallback");
    let errors = r.line("Errors: ");
    let at = |l: &str| r.stdout.find(l).unwrap();
    assert!(at(note) < at(errors), "{}", r.show());
    assert!(!r.stdout.contains("x --http2-fallback"), "{}", r.show());
}

/// `--http2-prior-knowledge` against servers that speak only HTTP/1.1 (nginx without
/// `http2`, OpenBao's plain listener): the run ends at once with one message naming the
/// cause, before any load (it used to say FRAME_SIZE_ERROR, back off for 45 s and print a
/// message per failed request); against OpenBao, what the setup created is removed.
#[test]
fn prior_knowledge_against_an_http1_server_fails_fast_with_one_message() {
    let ng = Nginx::start();
    let url = format!("{}/v1/x", ng.addr);
    let r = crate::support::run::spawn(url_cmd(&[
        &url,
        "--http2-prior-knowledge",
        "-c",
        "4",
        "-n",
        "100",
    ]))
    .finish(Duration::from_secs(30));
    let bao = OpenBao::start();
    let before = crate::support::openbao::server_state(&bao);
    let env = [("VAULT_ADDR", bao.addr.as_str()), ("VAULT_TOKEN", "root")];
    let a = [
        "--op",
        "kv-read",
        "--secrets",
        "5",
        "--http2-prior-knowledge",
        "-c",
        "2",
        "-z",
        "10s",
    ];
    let rb = crate::support::run::spawn(env_cmd(&a, &env)).finish(Duration::from_secs(30));
    for r in [&r, &rb] {
        assert_ne!(r.code, Some(0), "{}", r.show());
        assert!(r.stderr.contains("does not speak h2c"), "{}", r.show());
        assert!(!r.stderr.contains("FRAME_SIZE_ERROR"), "{}", r.show());
        let said = r.stderr.matches("does not speak h2c").count();
        assert_eq!(said, 1, "one message: {}", r.show());
    }
    assert_eq!(
        crate::support::openbao::server_state(&bao),
        before,
        "the run left something behind"
    );
}
