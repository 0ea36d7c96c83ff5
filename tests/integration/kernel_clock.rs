//! `--clock kernel` (docs/reports.md) against real servers: the kernel's receive stamps
//! are present, and no later than the user-space clock, over HTTP/1.1, HTTP/2 (h2c and h2
//! by ALPN) and TLS against nginx, and over HTTP/1.1 against OpenBao; and a socket that
//! refuses SO_TIMESTAMPING (simulated by the test-only `VBLAST_TEST_REFUSE_TIMESTAMPING`,
//! src/net/stamp.rs) falls back to the user-space clock, said once and marked in every
//! format, whether the kernel clock was asked or is the default. Mechanism only: no figure is asserted beyond the order of the two clocks.

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
    assert_eq!(c["used"], "kernel", "{what}: {c}");
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
    let mut args = vec![
        url.as_str(),
        "-c",
        "2",
        "-n",
        &n,
        "--clock",
        "kernel",
        "--format",
        "json",
    ];
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
