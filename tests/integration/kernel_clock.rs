//! `--clock kernel` (docs/reports.md) against real servers: the kernel's receive stamps
//! are present, and no later than the user-space clock, over HTTP/1.1, HTTP/2 (h2c and h2
//! by ALPN) and TLS against nginx, and over HTTP/1.1 against OpenBao; and a socket that
//! refuses SO_TIMESTAMPING (simulated by the test-only `VBLAST_TEST_REFUSE_TIMESTAMPING`,
//! src/net/stamp.rs) falls back to the user-space clock, said once and marked in every
//! format, whether the kernel clock was asked or is the default. `--clock kernel-tx`:
//! the sends are the kernel's TX stamps of each request's last byte (nearly all on
//! loopback), never after the response's RX end, over HTTP/1.1, TLS, h2c and h2 against
//! nginx and with a mix of operations against OpenBao (each operation's kernel figures);
//! a socket refusing the TX flags (`VBLAST_TEST_REFUSE_TIMESTAMPING=tx`) keeps the RX
//! clock with user-space sends, said once. Mechanism only: no figure is asserted beyond
//! the order of the two clocks.

use std::path::Path;

use serde_json::Value;

use crate::schema::assert_valid;
use crate::support::nginx::Nginx;
use crate::support::openbao::OpenBao;
use crate::support::run::{Out, run};
use crate::support::vblast::{Args, env_cmd, url_cmd};

const N: u64 = 400;

/// Both clocks' figures of a run of `N` requests that all succeeded, checked: stamped by
/// the kernel, and each figure of the kernel's clock no later than the user-space one's.
fn kernel_figures(r: &Out, what: &str) -> Value {
    assert_eq!(r.code, Some(0), "{what}: {}", r.show());
    let j = r.json();
    assert_eq!(j["ok"], N, "{what}: {}", r.show());
    let c = &j["clock"];
    assert!(
        c["used"] == "kernel" || c["used"] == "kernel-tx",
        "{what}: {c}"
    );
    let stamped = c["stamped"].as_u64().unwrap();
    let unstamped = c["unstamped"].as_u64().unwrap();
    assert_eq!(stamped + unstamped, N, "{what}: {c}");
    // Present: most responses end on a stamped read (a response whose last read carried
    // no stamp is counted apart, its end the user-space clock's).
    assert!(stamped * 2 >= N, "{what}: {c}");
    assert_eq!(c["delay_ms"]["count"], stamped, "{what}: {c}");
    assert_eq!(c["kernel_latency_ms"]["count"], N, "{what}: {c}");
    // No later than the user-space clock: the kernel stamps a segment before the event
    // loop reads it.
    for (kernel, user) in [
        ("kernel_latency_ms", "user_latency_ms"),
        ("kernel_service_ms", "user_service_ms"),
    ] {
        for key in ["mean", "p50", "min"] {
            let (k, u) = (
                c[kernel][key].as_f64().unwrap(),
                c[user][key].as_f64().unwrap(),
            );
            assert!(k <= u, "{what}: {kernel}.{key} {k} > {user}.{key} {u}: {c}");
        }
    }
    assert!(c["delay_ms"]["min"].as_f64().unwrap() >= 0.0, "{what}: {c}");
    j
}

fn nginx_run(ng: &Nginx, extra: &[&str]) -> Out {
    let url = format!("{}/v1/secret/data/foo", ng.addr);
    let n = N.to_string();
    let mut args = vec![url.as_str(), "-c", "2", "-n", &n, "--format", "json"];
    // `--clock kernel` unless `extra` names the clock.
    if !extra.contains(&"--clock") {
        args.extend(["--clock", "kernel"]);
    }
    let ca = ng.ca_cert.as_ref().map(|c| c.display().to_string());
    if let Some(ca) = &ca {
        args.extend(["--ca-cert", ca.as_str()]);
    }
    args.extend(extra);
    run(url_cmd(&args))
}

#[test]
fn kernel_stamps_over_http1_http2_and_tls_against_nginx() {
    let ng = Nginx::start();
    kernel_figures(&nginx_run(&ng, &[]), "HTTP/1.1");
    let (tls, _files) = Nginx::start_tls_generated();
    kernel_figures(&nginx_run(&tls, &[]), "HTTP/1.1 over TLS");
    let h2c = Nginx::start_h2(false, "", "");
    let j = kernel_figures(
        &nginx_run(&h2c, &["--http2-prior-knowledge", "--streams", "4"]),
        "h2c",
    );
    assert_eq!(j["run"]["protocol"], "HTTP/2 (h2c)", "{j}");
    let h2 = Nginx::start_h2(true, "", "");
    let j = kernel_figures(&nginx_run(&h2, &["--http2", "--streams", "4"]), "h2");
    assert_eq!(j["run"]["protocol"], "HTTP/2 (h2)", "{j}");
    // The open model: its latency runs from the intended start to the kernel's end.
    let r = nginx_run(&ng, &["-R", "400"]);
    let j = kernel_figures(&r, "open model");
    assert!(
        j["latency_measured_from"]
            .as_str()
            .unwrap()
            .contains("intended"),
        "{j}"
    );
}

#[test]
fn kernel_stamps_against_openbao() {
    let bao = OpenBao::start();
    let r = run(Args::op("kv-read")
        .c(2)
        .n(N)
        .json()
        .extra(&["--clock", "kernel"])
        .vault(&bao));
    kernel_figures(&r, "OpenBao");
}

#[test]
fn a_socket_refusing_timestamps_falls_back_to_the_user_clock_in_every_format() {
    let ng = Nginx::start();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("run.json");
    let html = dir.path().join("run.html");
    let url = format!("{}/v1/secret/data/foo", ng.addr);
    let refuse = [("VBLAST_TEST_REFUSE_TIMESTAMPING", "1")];
    let base = [url.as_str(), "-c", "2", "-n", "100", "--clock", "kernel"];
    let mut args = base.to_vec();
    let (f, h) = (file.display().to_string(), html.display().to_string());
    args.extend(["--format", "json", "--output", &f, "--html", &h]);
    let r = run(env_cmd(&args, &refuse));
    assert_eq!(r.code, Some(0), "{}", r.show());
    // One clear message, at the start.
    assert_eq!(r.stderr.matches("kernel clock").count(), 1, "{}", r.show());
    assert!(r.stderr.contains("user-space clock"), "{}", r.show());
    let j = r.json();
    assert_eq!(j["requests"], 100, "{j}");
    assert_eq!(j["clock"]["used"], "user", "{j}");
    assert!(
        j["clock"]["refused"]
            .as_str()
            .unwrap()
            .contains("SO_TIMESTAMPING"),
        "{j}"
    );
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(saved["stats"]["clock"]["used"], "user", "{saved}");
    assert_valid("results.schema.json", &[Path::new(&file)]);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("Clock: user-space"),
        "no fallback in the page"
    );
    // The text report, and the report of the saved file, say it too.
    let text = run(env_cmd(&base, &refuse));
    assert!(text.stdout.contains("Clock: user-space"), "{}", text.show());
    let again = run(url_cmd(&["report", &f]));
    assert!(
        again.stdout.contains("Clock: user-space"),
        "{}",
        again.show()
    );
    // Without the knob, the same run is stamped by the kernel.
    let r = run(url_cmd(&args));
    assert_eq!(r.json()["clock"]["used"], "kernel", "{}", r.show());
    // The kernel clock not asked (the default), refused: the same line once, the same
    // mark, and the run's own exit status. `vblast ab` keeps ab's user-space clock
    // (docs/reports.md): nothing to refuse, nothing said.
    let r = run(env_cmd(
        &[&url, "-c", "2", "-n", "100", "--format", "json"],
        &refuse,
    ));
    assert_eq!(r.code, Some(0), "{}", r.show());
    assert_eq!(r.stderr.matches("kernel clock").count(), 1, "{}", r.show());
    assert_eq!(r.json()["clock"]["used"], "user", "{}", r.show());
    let ab = run(env_cmd(&["ab", "-n", "100", "-c", "2", &url], &refuse));
    assert_eq!(ab.code, Some(0), "{}", ab.show());
    assert!(!ab.stderr.contains("kernel clock"), "{}", ab.show());
    assert!(
        ab.stdout.contains("Complete requests:      100"),
        "{}",
        ab.show()
    );
}

#[test]
fn the_kernel_clock_is_the_default_and_the_user_clock_is_asked_for() {
    let ng = Nginx::start();
    let url = format!("{}/v1/secret/data/foo", ng.addr);
    let n = N.to_string();
    let base = [url.as_str(), "-c", "2", "-n", &n, "--format", "json"];
    let r = run(url_cmd(&base));
    let j = kernel_figures(&r, "the default");
    assert!(!r.stderr.contains("kernel clock"), "{}", r.show());
    assert_eq!(
        j["clock"]["send"], "user-space clock just before the write",
        "{j}"
    );
    // --clock user: the user-space clock alone, no kernel figures.
    let mut args = base.to_vec();
    args.extend(["--clock", "user"]);
    let r = run(url_cmd(&args));
    assert_eq!(r.code, Some(0), "{}", r.show());
    assert!(r.json().get("clock").is_none(), "{}", r.show());
}

/// A `--clock kernel-tx` run of `n` requests, checked: its RX figures as `kernel_figures`
/// says (for `N`), nearly every send the kernel's TX stamp, none after its response's RX
/// end, and the report naming the send.
fn tx_figures(r: &Out, what: &str, n: u64) -> Value {
    assert_eq!(r.code, Some(0), "{what}: {}", r.show());
    let j = r.json();
    assert_eq!(j["ok"], n, "{what}: {}", r.show());
    let c = &j["clock"];
    assert_eq!(c["used"], "kernel-tx", "{what}: {c}");
    let stamped = c["send_stamped"].as_u64().unwrap();
    let fell = c["send_unstamped"].as_u64().unwrap();
    assert_eq!(stamped + fell, n, "{what}: {c}");
    // Present: on loopback the kernel stamps a write before the syscall returns, so
    // nearly every send is tied (a few may be lost to an untied write; counted).
    assert!(stamped * 10 >= n * 9, "{what}: {c}");
    // Never after the end: the TX stamp of a request precedes its response's RX stamp.
    assert_eq!(c["send_after_end"], 0, "{what}: {c}");
    let send = c["send"].as_str().unwrap();
    assert!(
        send.starts_with("kernel TX stamp of the request's last byte;")
            && send.contains(&format!("{fell} requests fell back")),
        "{what}: {c}"
    );
    // The kernel's service time is no longer than the user-space one's.
    for key in ["mean", "p50", "min"] {
        let (k, u) = (
            c["kernel_service_ms"][key].as_f64().unwrap(),
            c["user_service_ms"][key].as_f64().unwrap(),
        );
        assert!(k <= u, "{what}: kernel_service_ms.{key} {k} > {u}: {c}");
    }
    j
}

#[test]
fn kernel_tx_stamps_the_send_over_http1_tls_and_http2_against_nginx() {
    let ng = Nginx::start();
    let tx = ["--clock", "kernel-tx"];
    let plain = nginx_run(&ng, &tx);
    tx_figures(&plain, "HTTP/1.1", N);
    kernel_figures(&plain, "HTTP/1.1 RX");
    let (tls, _files) = Nginx::start_tls_generated();
    tx_figures(&nginx_run(&tls, &tx), "HTTP/1.1 over TLS", N);
    // rustls's own record layer: its bytes on the wire counted as it writes them.
    let rustls = ["--clock", "kernel-tx", "--tls-engine", "rustls"];
    tx_figures(&nginx_run(&tls, &rustls), "HTTP/1.1 over TLS (rustls)", N);
    let h2c = Nginx::start_h2(false, "", "");
    let j = tx_figures(
        &nginx_run(
            &h2c,
            &[
                "--clock",
                "kernel-tx",
                "--http2-prior-knowledge",
                "--streams",
                "4",
            ],
        ),
        "h2c",
        N,
    );
    assert_eq!(j["run"]["protocol"], "HTTP/2 (h2c)", "{j}");
    let h2 = Nginx::start_h2(true, "", "");
    let j = tx_figures(
        &nginx_run(&h2, &["--clock", "kernel-tx", "--http2", "--streams", "4"]),
        "h2",
        N,
    );
    assert_eq!(j["run"]["protocol"], "HTTP/2 (h2)", "{j}");
    // The text report names the send.
    let url = format!("{}/v1/secret/data/foo", ng.addr);
    let r = run(url_cmd(&[
        &url,
        "-c",
        "2",
        "-n",
        "200",
        "--clock",
        "kernel-tx",
    ]));
    assert_eq!(r.code, Some(0), "{}", r.show());
    assert!(
        r.stdout
            .contains("Clock: kernel-tx (receive stamp of the segment completing each response; send: kernel TX stamp of the request's last byte;"),
        "{}",
        r.show()
    );
}

#[test]
fn kernel_tx_and_each_operations_kernel_figures_against_openbao() {
    let bao = OpenBao::start();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("run.json");
    let f = file.display().to_string();
    let r = run(Args::op("kv-read:4,kv-write:1")
        .c(2)
        .n(N)
        .json()
        .extra(&["--clock", "kernel-tx", "--output", &f])
        .vault(&bao));
    let j = tx_figures(&r, "OpenBao", N);
    let ops = j["clock"]["ops"].as_array().unwrap();
    let names: Vec<&str> = ops.iter().map(|o| o["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["kv-read", "kv-write"], "{j}");
    let mut sum = 0;
    for (o, mine) in ops.iter().zip(j["ops"].as_array().unwrap()) {
        let count = o["kernel_latency_ms"]["count"].as_u64().unwrap();
        // Each operation's kernel figures count its own requests, and its kernel service
        // time is no longer than its user-space one.
        assert_eq!(count, mine["requests"].as_u64().unwrap(), "{j}");
        assert!(count > 0, "{j}");
        let (k, u) = (
            o["kernel_service_ms"]["p50"].as_f64().unwrap(),
            o["user_service_ms"]["p50"].as_f64().unwrap(),
        );
        assert!(k <= u, "{}: {k} > {u}: {j}", o["name"]);
        sum += count;
    }
    assert_eq!(sum, N, "{j}");
    let report = dir.path().join("report.json");
    std::fs::write(&report, &r.stdout).unwrap();
    assert_valid("report.schema.json", &[report.as_path()]);
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let c = &saved["stats"]["clock"];
    assert_eq!(c["used"], "kernel-tx", "{c}");
    assert_eq!(c["ops"].as_array().unwrap().len(), 2, "{c}");
    assert_eq!(c["send_after_end"], 0, "{c}");
    assert_valid("results.schema.json", &[Path::new(&file)]);
    // The report of the saved file gives each operation's rows.
    let again = run(url_cmd(&["report", &f]));
    assert!(
        again.stdout.contains("Clock: kernel-tx"),
        "{}",
        again.show()
    );
    assert!(again.stdout.contains("  kv-write\n"), "{}", again.show());
}

#[test]
fn a_socket_refusing_tx_stamps_keeps_the_kernel_clock_with_user_space_sends() {
    let ng = Nginx::start();
    let url = format!("{}/v1/secret/data/foo", ng.addr);
    let refuse = [("VBLAST_TEST_REFUSE_TIMESTAMPING", "tx")];
    let n = N.to_string();
    let args = [
        url.as_str(),
        "-c",
        "2",
        "-n",
        &n,
        "--clock",
        "kernel-tx",
        "--format",
        "json",
    ];
    let r = run(env_cmd(&args, &refuse));
    // One clear line, the run's own exit status, the RX clock kept.
    assert_eq!(r.code, Some(0), "{}", r.show());
    assert_eq!(r.stderr.matches("kernel clock").count(), 1, "{}", r.show());
    assert!(r.stderr.contains("TX stamps"), "{}", r.show());
    let j = kernel_figures(&r, "TX refused");
    let c = &j["clock"];
    assert_eq!(c["used"], "kernel", "{c}");
    assert!(
        c["send_refused"].as_str().unwrap().contains("TX stamps"),
        "{c}"
    );
    assert!(
        c["send"]
            .as_str()
            .unwrap()
            .starts_with("user-space clock just before the write (kernel TX stamps refused"),
        "{c}"
    );
    assert_eq!(c["send_stamped"], 0, "{c}");
    // Both refused: the user-space clock, as with `--clock kernel`.
    let r = run(env_cmd(&args, &[("VBLAST_TEST_REFUSE_TIMESTAMPING", "1")]));
    assert_eq!(r.code, Some(0), "{}", r.show());
    assert_eq!(r.stderr.matches("kernel clock").count(), 1, "{}", r.show());
    assert_eq!(r.json()["clock"]["used"], "user", "{}", r.show());
}
