//! Fault tests: bad input, unreachable / rejecting / sealed / stalled / dying
//! servers, protocol garbage and Ctrl-C. Each must end in one clear
//! `vblast: ` message or a report with the failures counted, a non-zero exit
//! code, no panic, and no hang (every run has a watchdog).

use crate::support;
use crate::support::figures::{strict_timing, u};
use crate::support::openbao::{OpenBao, vblast_mounts};
use crate::support::raw::{RawServer, TrickleServer};
use crate::support::run::{Out, run, spawn};
use crate::support::vblast::vault_cmd;
use std::thread;
use std::time::{Duration, Instant};

/// A run that must fail before any load with exactly one `vblast: ` line
/// on stderr, nothing on stdout, and exit code `code`.
fn assert_one_message(out: &Out, code: i32) {
    out.assert_code(code);
    let lines: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| !l.trim().is_empty())
        .collect();
    assert_eq!(lines.len(), 1, "expected one message:\n{}", out.show());
    assert!(lines[0].starts_with("vblast: "), "{}", out.show());
    assert!(out.stdout.trim().is_empty(), "{}", out.show());
}

/// An address nothing listens on.
fn dead_addr() -> String {
    format!("http://127.0.0.1:{}", support::ports::free_port())
}

// ---------------------------------------------------------------------------

#[test]
fn bad_input_exits_2() {
    let dead = dead_addr();
    let url = format!("{dead}/v1/secret/data/foo");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["--op", "nope"], "nope"),
        (vec!["htp:/x"], "htp"),
        (vec!["http://"], "http://"),
        (vec!["-c", "0", "--op", "kv-read"], "-c"),
        (vec!["-R", "0", "--op", "kv-read"], "-R"),
        (vec!["-R", "-5", "--op", "kv-read"], "-R"),
        (
            vec!["--warmup", "10s", "-z", "5s", "--op", "kv-read"],
            "--warmup",
        ),
        // A malformed header is named by its flag, never echoed: it may hold a token.
        (vec!["-H", "X-Vault-Token hvs.SECRET", &url], "-H header"),
        (vec!["-t", "5000", &url], "-t 5000"),
        // An endless body file is refused, not read until memory runs out.
        (vec!["-p", "/dev/zero", &url], "/dev/zero"),
        (vec![], "nothing to do"),
        (vec!["--op", "kv-read", &url], "not both"),
    ];
    for (args, needle) in cases {
        let mut cmd = support::vblast::vblast();
        cmd.env("VAULT_ADDR", &dead)
            .env("VAULT_TOKEN", "root")
            .args(&args);
        let out = run(cmd);
        assert_one_message(&out, 2);
        assert!(!out.stderr.contains("hvs.SECRET"), "{}", out.show());
        assert!(
            out.stderr.contains(needle),
            "{args:?}: message should mention {needle:?}:\n{}",
            out.show()
        );
    }
    // clap's own errors exit 2 too.
    for args in [&["-c", "abc", "--op", "kv-read"][..], &["--bogus"][..]] {
        let mut cmd = support::vblast::vblast();
        cmd.args(args);
        let out = run(cmd);
        out.assert_code(2);
        assert!(out.stderr.contains("error"), "{}", out.show());
    }
}

#[test]
fn unreachable_server_exits_2() {
    let dead = dead_addr();
    let mut cmd = support::vblast::vblast();
    cmd.env("VAULT_ADDR", &dead)
        .env("VAULT_TOKEN", "root")
        .args(["--op", "kv-read", "-n", "10"]);
    let out = run(cmd);
    assert_one_message(&out, 2);
    assert!(out.stderr.contains("Connection refused"), "{}", out.show());
    assert!(out.stderr.contains(&dead), "{}", out.show());

    let mut cmd = support::vblast::vblast();
    cmd.args(["-n", "10", &format!("{dead}/v1/secret/data/foo")]);
    let out = run(cmd);
    assert_one_message(&out, 2);
    assert!(out.stderr.contains("Connection refused"), "{}", out.show());
}

#[test]
fn wrong_token() {
    let bao = OpenBao::start();
    let mut cmd = support::vblast::vblast();
    cmd.env("VAULT_ADDR", &bao.addr)
        .env("VAULT_TOKEN", "wrong-token")
        .args(["--op", "kv-read", "-n", "10"]);
    let out = run(cmd);
    assert_one_message(&out, 2);
    assert!(out.stderr.contains("token"), "{}", out.show());
    assert!(out.stderr.contains("rejected"), "{}", out.show());
    assert!(out.stderr.contains("403"), "{}", out.show());

    // --token wins over the environment.
    let mut cmd = support::vblast::vblast();
    cmd.env("VAULT_ADDR", &bao.addr)
        .env("VAULT_TOKEN", "root")
        .args(["--token", "wrong-token", "--op", "kv-read", "-n", "10"]);
    let out = run(cmd);
    assert_one_message(&out, 2);
    assert!(out.stderr.contains("rejected"), "{}", out.show());

    // URL mode: the 403s are counted as non-2xx errors.
    let mut cmd = support::vblast::vblast();
    cmd.args([
        "-c",
        "2",
        "-n",
        "20",
        "-H",
        "X-Vault-Token: wrong-token",
        "--format",
        "json",
        &format!("{}/v1/secret/data/foo", bao.addr),
    ]);
    let out = run(cmd);
    out.assert_code(1);
    let j = out.json();
    assert_eq!(u(&j["requests"]), 20, "{j:#}");
    assert_eq!(u(&j["ok"]), 0, "{j:#}");
    assert_eq!(u(&j["errors"]["status"]), 20, "{j:#}");
    assert_eq!(u(&j["status"]["403"]), 20, "{j:#}");
    assert!(vblast_mounts(&bao).is_empty());
}

#[test]
fn sealed_server() {
    let bao = OpenBao::start();
    let (status, body) = bao.api("PUT", "/v1/sys/seal", None);
    assert!(status == 204 || status == 200, "seal: {status} {body}");
    let out = run(vault_cmd(&bao, &["--op", "kv-read", "-n", "10"]));
    assert_one_message(&out, 2);
    assert!(out.stderr.contains("sealed"), "{}", out.show());
}

/// Ten requests to a misbehaving raw server: each must fail as a read error, exit 1.
fn ten_requests_all_read_errors(srv: &RawServer) -> (Out, serde_json::Value) {
    let mut cmd = support::vblast::vblast();
    cmd.args([
        "-c",
        "2",
        "-n",
        "10",
        "--timeout",
        "5s",
        "--format",
        "json",
        &format!("{}/v1/secret/data/foo", srv.addr),
    ]);
    let out = run(cmd);
    out.assert_code(1);
    let j = out.json();
    assert_eq!(u(&j["requests"]), 10, "{j:#}");
    assert_eq!(u(&j["ok"]), 0, "{j:#}");
    assert_eq!(u(&j["errors"]["read"]), 10, "{j:#}");
    (out, j)
}

#[test]
fn garbage_response() {
    let srv = RawServer::garbage();
    let (out, j) = ten_requests_all_read_errors(&srv);
    assert!(
        j["status"].as_object().unwrap().is_empty(),
        "no status for a non-HTTP reply: {j:#}"
    );
    let msgs = j["error_messages"].to_string();
    assert!(msgs.contains("bad response"), "{j:#}");
    if strict_timing() {
        assert!(out.elapsed < Duration::from_secs(30), "{}", out.show());
    }
}

#[test]
fn close_mid_response() {
    let srv = RawServer::close_mid_response();
    let (out, _) = ten_requests_all_read_errors(&srv);
    if strict_timing() {
        assert!(out.elapsed < Duration::from_secs(30), "{}", out.show());
    }
    // The text report lists the error.
    let mut cmd = support::vblast::vblast();
    cmd.args(["-c", "1", "-n", "3", &format!("{}/x", srv.addr)]);
    let out = run(cmd);
    out.assert_code(1);
    assert!(out.stdout.contains("read 3"), "{}", out.show());
}

#[test]
fn silent_server_times_out() {
    let srv = RawServer::silent();
    let mut cmd = support::vblast::vblast();
    cmd.args([
        "--timeout",
        "1s",
        "-n",
        "5",
        "-c",
        "1",
        "--format",
        "json",
        &format!("{}/v1/secret/data/foo", srv.addr),
    ]);
    let out = spawn(cmd).finish(Duration::from_secs(30));
    out.assert_code(1);
    let j = out.json();
    assert_eq!(u(&j["requests"]), 5, "{j:#}");
    assert_eq!(u(&j["ok"]), 0, "{j:#}");
    assert_eq!(u(&j["errors"]["timeout"]), 5, "{j:#}");
    // One connection, five requests one after the other, each given up after its 1 s: the
    // timeout never fires early.
    assert!(out.elapsed >= Duration::from_secs(5), "{}", out.show());
    if strict_timing() {
        assert!(out.elapsed < Duration::from_secs(20), "{}", out.show());
    }
    // The reachability check, then the first connection and one re-opened per timeout.
    assert!(srv.connections() >= 2, "{} connections", srv.connections());
}

#[test]
fn server_killed_mid_run() {
    let mut bao = OpenBao::start();
    let running = spawn(vault_cmd(
        &bao,
        &[
            "-z",
            "6s",
            "--op",
            "kv-read",
            "-c",
            "16",
            "--secrets",
            "50",
            "--timeout",
            "2s",
            "--allow-errors",
            "--format",
            "json",
        ],
    ));
    // Let the run get going (setup + some load), then kill the server.
    thread::sleep(Duration::from_millis(2500));
    bao.kill();
    let out = running.finish(Duration::from_secs(30));
    // The report is printed, but the mount could not be removed: a failed cleanup is exit 2
    // whatever --allow-errors says.
    out.assert_code(2);
    let j = out.json();
    let (requests, ok, failed) = (u(&j["requests"]), u(&j["ok"]), u(&j["failed"]));
    assert!(ok > 0, "{j:#}");
    assert!(failed > 0, "{j:#}");
    assert_eq!(requests, ok + failed, "{j:#}");
    // Every failure is counted once, as a refused connect or a lost response (or, if the
    // kill caught a request mid-way, its timeout); nothing answered with a status.
    let e = &j["errors"];
    assert!(u(&e["connect"]) + u(&e["read"]) > 0, "{j:#}");
    let counted: u64 = ["connect", "read", "write", "timeout", "status"]
        .iter()
        .map(|k| u(&e[*k]))
        .sum();
    assert_eq!(counted, failed, "{j:#}");
    assert_eq!(u(&e["status"]), 0, "{j:#}");
    assert_eq!(u(&j["status"]["200"]), ok, "{j:#}");
    // The mount could not be removed: say so, naming it.
    let msg = out
        .stderr
        .lines()
        .find(|l| l.starts_with("vblast: ") && l.contains("cannot remove"))
        .unwrap_or_else(|| panic!("no message naming the mount: {}", out.show()));
    assert!(msg.contains("cannot remove mount 'vblast-"), "{msg}");
}

#[test]
fn ctrl_c_prints_report_and_cleans_up() {
    let bao = OpenBao::start();
    let running = spawn(vault_cmd(
        &bao,
        &["-z", "30s", "--op", "kv-read", "-c", "8", "--secrets", "50"],
    ));
    // Wait until the run is under way (its mount exists), then a bit more.
    let deadline = Instant::now() + Duration::from_secs(20);
    while vblast_mounts(&bao).is_empty() && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(50));
    }
    thread::sleep(Duration::from_secs(2));
    let pid = running.child.id();
    // SAFETY: kill(2) on the child we spawned and have not reaped.
    unsafe {
        libc::kill(pid as libc::pid_t, libc::SIGINT);
    }
    let sent = Instant::now();
    let out = running.finish(Duration::from_secs(60));
    if strict_timing() {
        assert!(
            sent.elapsed() < Duration::from_secs(10),
            "took {:?} after SIGINT",
            sent.elapsed()
        );
    }
    out.assert_code(130);
    out.assert_total_row();
    // The run was cut short: a run left to its -z would report at least 30 s.
    let duration: f64 = out
        .line("Duration ")
        .trim_start_matches("Duration ")
        .split('s')
        .next()
        .and_then(|d| d.parse().ok())
        .unwrap_or_else(|| panic!("no duration in {}", out.show()));
    assert!(duration < 30.0, "{}", out.show());
    assert!(out.stdout.contains("Interrupted"), "{}", out.show());
    assert!(vblast_mounts(&bao).is_empty(), "{:?}", vblast_mounts(&bao));
}

#[test]
fn stalled_server() {
    let bao = OpenBao::start();
    bao.stop_signal();
    let out = spawn(vault_cmd(
        &bao,
        &[
            "--timeout",
            "1s",
            "-n",
            "4",
            "-c",
            "2",
            "--no-setup",
            "--mount",
            "secret",
            "--op",
            "kv-read",
            "--format",
            "json",
        ],
    ))
    .finish(Duration::from_secs(30));
    bao.cont_signal();
    // Connecting works (the kernel accepts for the stopped process); every
    // request then times out and is counted.
    out.assert_code(1);
    if strict_timing() {
        assert!(out.elapsed < Duration::from_secs(15), "{}", out.show());
    }
    let j = out.json();
    assert_eq!(u(&j["requests"]), 4, "{j:#}");
    assert_eq!(u(&j["ok"]), 0, "{j:#}");
    assert_eq!(u(&j["errors"]["timeout"]), 4, "{j:#}");
    // The server is fine afterwards.
    assert_eq!(bao.api("GET", "/v1/sys/health", None).0, 200);
}

/// A server that answers before it has read the whole request (a 413 to a large upload,
/// say) and keeps the connection open: the rest of that request must not reach it as the
/// start of the next one, so vblast re-opens the connection instead of reusing it.
#[test]
fn early_answer_to_a_large_request_does_not_corrupt_the_next() {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = thread::spawn(move || {
        let mut request_lines = Vec::new();
        // Accepts poll against a deadline, so a client that opens fewer connections than
        // expected ends this thread (and fails the count below) instead of hanging it.
        listener.set_nonblocking(true).unwrap();
        let deadline = Instant::now() + Duration::from_secs(40);
        // vblast's reachability check, then one connection per request.
        let mut accepted = 0;
        while accepted < 4 && Instant::now() < deadline {
            let mut s = match listener.accept() {
                Ok((s, _)) => s,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    thread::sleep(Duration::from_millis(10));
                    continue;
                }
                Err(e) => panic!("accept: {e}"),
            };
            accepted += 1;
            s.set_nonblocking(false).unwrap();
            s.write_all(b"HTTP/1.1 413 Payload Too Large\r\nContent-Length: 0\r\n\r\n")
                .unwrap();
            // Read slowly at first, so that the client cannot have written everything.
            thread::sleep(Duration::from_millis(200));
            s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            let mut got = Vec::new();
            let mut buf = vec![0u8; 1 << 16];
            while let Ok(n) = s.read(&mut buf) {
                if n == 0 {
                    break;
                }
                got.extend_from_slice(&buf[..n]);
            }
            let lines = got
                .windows(b"POST /big HTTP/1.1".len())
                .filter(|w| *w == b"POST /big HTTP/1.1")
                .count();
            if !got.is_empty() {
                request_lines.push(lines);
            }
        }
        request_lines
    });
    let dir = tempfile::tempdir().unwrap();
    let body = dir.path().join("body");
    std::fs::write(&body, vec![b'x'; 16 << 20]).unwrap();
    let url = format!("http://127.0.0.1:{port}/big");
    let out = run(support::vblast::url_cmd(&[
        "-c",
        "1",
        "-n",
        "3",
        "-t",
        "1",
        "-p",
        body.to_str().unwrap(),
        "--allow-errors",
        "--format",
        "json",
        &url,
    ]));
    out.assert_code(0);
    let j = out.json();
    assert_eq!(u(&j["status"]["413"]), 3, "{}", out.show());
    // Each of the three requests came on a connection of its own, which carried it alone.
    let lines = server.join().unwrap();
    assert_eq!(lines, [1, 1, 1], "request lines per connection");
}

/// A server that accepts and then says nothing (holding the connection for 30 s) cannot
/// hold setup past `--timeout` either: the setup client's reads wait on the socket in
/// slices with a timeout set, so the health check gives up after 1 s with one message.
#[test]
fn silent_server_times_out_setup() {
    let srv = RawServer::silent();
    let mut cmd = support::vblast::vblast();
    cmd.env("VAULT_ADDR", &srv.addr)
        .env("VAULT_TOKEN", "root")
        .args(["--op", "kv-read", "-n", "1", "--timeout", "1s"]);
    let out = spawn(cmd).finish(Duration::from_secs(15));
    assert_one_message(&out, 2);
    assert!(
        out.stderr
            .contains(&format!("timed out after 1s waiting for {}", srv.addr)),
        "{}",
        out.show()
    );
}

/// Issue 8, defect 10: a server that trickles its answer one byte every 0.5 s (each read
/// well inside `--timeout`) cannot hold setup past `--timeout`: the health check gives up
/// with a timeout, not with whatever the server does once it stops trickling (30 s later).
#[test]
fn trickling_server_times_out_setup() {
    let srv = TrickleServer::start(
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
            .to_vec(),
        Duration::from_millis(500),
    );
    let mut cmd = support::vblast::vblast();
    cmd.env("VAULT_ADDR", &srv.addr)
        .env("VAULT_TOKEN", "root")
        .args(["--op", "kv-read", "-n", "1", "--timeout", "2s"]);
    let out = run(cmd);
    assert_one_message(&out, 2);
    assert!(
        out.stderr
            .contains(&format!("timed out after 2s waiting for {}", srv.addr)),
        "{}",
        out.show()
    );
}
