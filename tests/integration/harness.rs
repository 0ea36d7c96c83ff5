//! Smoke tests of the integration-test harness itself (support/).

use crate::support;
use crate::support::client::http_request;
use crate::support::nginx::Nginx;
use crate::support::openbao::OpenBao;
use crate::support::raw::RawServer;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

#[test]
fn openbao_plain() {
    let bao = OpenBao::start();
    assert!(bao.addr.starts_with("http://127.0.0.1:"));
    assert_eq!(bao.token, "root");
    let (status, body) = bao.api("GET", "/v1/sys/health", None);
    assert_eq!(status, 200, "{body}");
    let (status, body) = bao.api("GET", "/v1/sys/mounts", None);
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"secret/\""), "{body}");

    // Write and read back a kv-v2 secret.
    let (status, body) = bao.api(
        "POST",
        "/v1/secret/data/foo",
        Some(r#"{"data":{"value":"bar"}}"#),
    );
    assert_eq!(status, 200, "{body}");
    let (status, body) = bao.api("GET", "/v1/secret/data/foo", None);
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"bar\""), "{body}");

    // SIGSTOP / SIGCONT: requests time out while stopped, work again after.
    bao.stop_signal();
    let mut s = TcpStream::connect(("127.0.0.1", bao.port)).unwrap();
    s.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    s.write_all(b"GET /v1/sys/health HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut buf = [0u8; 16];
    assert!(s.read(&mut buf).is_err(), "stopped server answered");
    bao.cont_signal();
    let (status, _) = bao.api("GET", "/v1/sys/health", None);
    assert_eq!(status, 200);

    let pid = bao.pid();
    drop(bao);
    // SAFETY: signal 0 only checks for existence.
    assert_ne!(unsafe { libc::kill(pid as i32, 0) }, 0, "bao still alive");
}

#[test]
fn openbao_tls() {
    let bao = OpenBao::start_tls();
    assert!(bao.addr.starts_with("https://127.0.0.1:"));
    let ca = bao.ca_cert.clone().expect("ca_cert");
    assert!(ca.is_file());
    let (status, body) = bao.api("GET", "/v1/sys/health", None);
    assert_eq!(status, 200, "{body}");
    // Without the CA it must fail verification.
    assert!(http_request(&bao.addr, "GET", "/v1/sys/health", &[], None, None).is_err());
}

#[test]
fn nginx_canned() {
    let ng = Nginx::start();
    assert_eq!(ng.addr, format!("http://127.0.0.1:{}", ng.port));

    let r = ng.get("/v1/secret/data/foo");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("Content-Type"), Some("application/json"));
    assert_eq!(r.text(), support::nginx::KV_BODY);
    assert!(!r.chunked);

    let r = ng.get("/v1/sys/anything/else");
    assert_eq!(r.status, 200);

    for code in [429u16, 503, 404, 500] {
        let r = ng.get(&format!("/status/{code}"));
        assert_eq!(r.status, code);
        assert!(r.text().starts_with("{\"errors\":"), "{}", r.text());
        assert_eq!(r.header("Content-Type"), Some("application/json"));
    }

    let r = ng.get("/status/307");
    assert_eq!(r.status, 307);
    assert_eq!(
        r.header("Location"),
        Some(format!("{}/v1/secret/data/foo", ng.addr).as_str())
    );
    assert!(r.text().starts_with("{\"errors\":"), "{}", r.text());

    let r = ng.get("/close");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("Connection"), Some("close"));

    let r = ng.get("/v1/secret/data/foo");
    assert_eq!(r.header("Connection"), Some("keep-alive"));

    let r = ng.get("/chunked");
    assert_eq!(r.status, 200);
    assert!(r.chunked, "{:?}", r.headers);
    assert!(r.header("Content-Length").is_none());
    assert_eq!(r.text(), support::nginx::CHUNKED_BODY);

    // Keep-alive works for many requests on one connection.
    let mut s = TcpStream::connect(("127.0.0.1", ng.port)).unwrap();
    let req = b"GET /v1/secret/data/foo HTTP/1.1\r\nHost: x\r\n\r\n".repeat(50);
    s.write_all(&req).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 65536];
    while got.windows(15).filter(|w| w == b"HTTP/1.1 200 OK").count() < 50 {
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "nginx closed a keep-alive connection");
        got.extend_from_slice(&buf[..n]);
    }
}

#[test]
fn nginx_tls() {
    let (ng, files) = Nginx::start_tls_generated();
    assert!(ng.addr.starts_with("https://127.0.0.1:"));
    assert!(files.ca_cert.is_file());
    let r = ng.get("/v1/secret/data/foo");
    assert_eq!(r.status, 200);
    assert_eq!(r.text(), support::nginx::KV_BODY);
    let r = ng.get("/chunked");
    assert!(r.chunked);

    // A self-signed cert passed to start_tls is trusted directly.
    let dir = tempfile::tempdir().unwrap();
    let ck = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()]).unwrap();
    let (cert, key) = (dir.path().join("c.pem"), dir.path().join("k.pem"));
    std::fs::write(&cert, ck.cert.pem()).unwrap();
    std::fs::write(&key, ck.signing_key.serialize_pem()).unwrap();
    let ng2 = Nginx::start_tls(&cert, &key);
    assert_eq!(ng2.get("/status/429").status, 429);
}

#[test]
fn nginx_extra_snippet() {
    let ng = Nginx::with_extra("location = /extra { return 418 '{\"errors\":[\"teapot\"]}'; }");
    assert_eq!(ng.get("/extra").status, 418);
}

#[test]
fn raw_servers() {
    let g = RawServer::garbage();
    let err = http_request(&g.addr, "GET", "/v1/sys/health", &[], None, None);
    assert!(err.is_err(), "{err:?}");
    assert_eq!(g.connections(), 1);

    let c = RawServer::close_mid_response();
    let mut s = TcpStream::connect(("127.0.0.1", c.port)).unwrap();
    s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let mut got = Vec::new();
    s.read_to_end(&mut got).unwrap();
    assert_eq!(got, b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nabc");
    assert!(http_request(&c.addr, "GET", "/", &[], None, None).is_err());

    let h = RawServer::silent();
    let mut s = TcpStream::connect(("127.0.0.1", h.port)).unwrap();
    s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    s.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let mut buf = [0u8; 8];
    assert!(s.read(&mut buf).is_err());
}

/// The harness removes every `VAULT_*` and `BAO_*` variable from vblast's environment, so
/// that no test runs against whatever server the machine's environment names. Checked in a
/// copy of this test binary started with such variables planted (setting them in this
/// process would race the tests running beside it).
#[test]
fn vblast_env_is_scrubbed() {
    const PROBE: &str = "VBLAST_TEST_SCRUB_PROBE";
    const PLANTED: [(&str, &str); 4] = [
        ("VAULT_ADDR", "http://127.0.0.1:1"),
        ("VAULT_SKIP_VERIFY", "true"),
        ("VAULT_TOKEN", "planted-token"),
        ("BAO_ADDR", "http://127.0.0.1:1"),
    ];
    if std::env::var_os(PROBE).is_some() {
        // The child: the variables are set here, and vblast's command removes them.
        let cmd = support::vblast::vblast();
        let removed: Vec<String> = cmd
            .get_envs()
            .filter(|(_, v)| v.is_none())
            .map(|(k, _)| k.to_string_lossy().into_owned())
            .collect();
        for (k, v) in PLANTED {
            assert_eq!(std::env::var(k).as_deref(), Ok(v), "{k} not planted");
            assert!(
                removed.iter().any(|r| r == k),
                "{k} not removed: {removed:?}"
            );
        }
        assert!(!removed.iter().any(|r| r == PROBE), "{removed:?}");
        // What a process started with those settings really sees.
        let mut env = std::process::Command::new("env");
        env.env_clear();
        for (k, v) in std::env::vars_os() {
            env.env(k, v);
        }
        for (k, v) in cmd.get_envs() {
            match v {
                Some(v) => env.env(k, v),
                None => env.env_remove(k),
            };
        }
        let seen = String::from_utf8(env.output().expect("run env").stdout).unwrap();
        assert!(seen.contains(PROBE), "{seen}");
        for line in seen.lines() {
            assert!(
                !line.starts_with("VAULT_") && !line.starts_with("BAO_"),
                "{line} reached the child"
            );
        }
        return;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "harness::vblast_env_is_scrubbed",
            "--test-threads=1",
        ])
        .env(PROBE, "1")
        .envs(PLANTED)
        .output()
        .expect("run this test binary");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "probe failed:\n{stdout}\n{stderr}");
    assert!(
        stdout.contains("test result: ok. 1 passed"),
        "the probe did not run:\n{stdout}"
    );

    // free_port gives a port below the ephemeral range, free to bind.
    let port = support::ports::free_port();
    assert!((10_000..32_000).contains(&port), "port {port}");
    assert!(std::net::TcpListener::bind(("127.0.0.1", port)).is_ok());
}
