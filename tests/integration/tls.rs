//! TLS end to end against real servers (OpenBao -dev-tls, nginx with generated
//! certificates): verification settings and their environment variables, session
//! resumption, clear errors for bad TLS input, and the cert-login operation over mutual TLS.

use std::fs;
use std::path::{Path, PathBuf};

use crate::support;
use crate::support::certs::gen_tls_files;
use crate::support::nginx::Nginx;
use crate::support::openbao::OpenBao;
use crate::support::raw::RawServer;
use crate::support::run::{Out, run};
use crate::support::tls_server::{TlsMode, TlsServer};
use crate::support::vblast::{env_cmd, url_cmd};
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, IsCa, Issuer, KeyPair,
};
use serde_json::Value;

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// A successful run: exit 0, every request 200.
fn all_ok(r: &Out, requests: u64) -> Value {
    assert_eq!(r.code, Some(0), "{}", r.show());
    let j = r.json();
    assert_eq!(j["requests"], requests, "{}", r.show());
    assert_eq!(j["ok"], requests, "{}", r.show());
    assert_eq!(j["status"]["200"], requests, "{}", r.show());
    j
}

/// A run refused before it started: exit 2, one message mentioning every `needle`.
fn refused(r: &Out, needles: &[&str]) {
    assert_eq!(r.code, Some(2), "{}", r.show());
    assert!(r.stdout.is_empty(), "report printed: {}", r.show());
    for n in needles {
        assert!(r.stderr.contains(n), "missing '{n}': {}", r.show());
    }
    assert!(!r.stderr.contains("panicked"), "{}", r.show());
    assert_eq!(r.stderr.trim().lines().count(), 1, "{}", r.show());
}

fn count(j: &Value, key: &str) -> u64 {
    j[key]["count"].as_u64().unwrap_or(0)
}

/// A CA, and under it a leaf for the given names (or a client certificate when empty).
struct Pki {
    ca: PathBuf,
    cert: PathBuf,
    key: PathBuf,
}

fn make_pki(dir: &Path, tag: &str, names: &[&str], expired: bool) -> Pki {
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, format!("vblast {tag} CA"));
    ca_params.distinguished_name = dn;
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca_params, &ca_key);
    let key = KeyPair::generate().unwrap();
    let mut params =
        CertificateParams::new(names.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, format!("vblast {tag}"));
    params.distinguished_name = dn;
    if expired {
        params.not_before = rcgen::date_time_ymd(2020, 1, 1);
        params.not_after = rcgen::date_time_ymd(2021, 1, 1);
    }
    let leaf = params.signed_by(&key, &issuer).unwrap();
    let pki = Pki {
        ca: dir.join(format!("{tag}-ca.pem")),
        cert: dir.join(format!("{tag}-cert.pem")),
        key: dir.join(format!("{tag}-key.pem")),
    };
    fs::write(&pki.ca, ca.pem()).unwrap();
    fs::write(&pki.cert, leaf.pem()).unwrap();
    fs::write(&pki.key, key.serialize_pem()).unwrap();
    pki
}

/// A self-signed client certificate and its key.
fn self_signed(dir: &Path, tag: &str) -> (PathBuf, PathBuf) {
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, format!("vblast {tag}"));
    params.distinguished_name = dn;
    let cert = params.self_signed(&key).unwrap();
    let (c, k) = (
        dir.join(format!("{tag}-cert.pem")),
        dir.join(format!("{tag}-key.pem")),
    );
    fs::write(&c, cert.pem()).unwrap();
    fs::write(&k, key.serialize_pem()).unwrap();
    (c, k)
}

/// A self-signed client certificate and key from the openssl command (rcgen cannot make
/// RSA keys with ring).
fn openssl_self_signed(
    dir: &Path,
    tag: &str,
    newkey: &str,
    traditional: bool,
) -> (PathBuf, PathBuf) {
    let (c, k) = (
        dir.join(format!("{tag}-cert.pem")),
        dir.join(format!("{tag}-key.pem")),
    );
    let mut cmd = std::process::Command::new("openssl");
    cmd.args(["req", "-x509", "-newkey", newkey]);
    if newkey == "ec" {
        cmd.args(["-pkeyopt", "ec_paramgen_curve:prime256v1"]);
    }
    cmd.args([
        "-nodes",
        "-days",
        "2",
        "-subj",
        &format!("/CN=vblast-{tag}"),
    ])
    .arg("-keyout")
    .arg(&k)
    .arg("-out")
    .arg(&c);
    let out = cmd
        .output()
        .expect("run openssl (tools/deps.sh installs it)");
    assert!(
        out.status.success(),
        "openssl req: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    if traditional {
        let out = std::process::Command::new("openssl")
            .args(["rsa", "-traditional", "-in"])
            .arg(&k)
            .arg("-out")
            .arg(&k)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "openssl rsa: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            fs::read_to_string(&k)
                .unwrap()
                .contains("BEGIN RSA PRIVATE KEY")
        );
    }
    (c, k)
}

#[test]
fn openbao_kv_read_over_tls() {
    let bao = OpenBao::start_tls();
    let ca = bao.ca_cert.clone().unwrap();
    let env = [
        ("VAULT_ADDR", bao.addr.as_str()),
        ("VAULT_TOKEN", "root"),
        ("VAULT_CACERT", p(&ca)),
    ];
    let base = [
        "--op",
        "kv-read",
        "-c",
        "8",
        "-n",
        "300",
        "--secrets",
        "20",
        "--format",
        "json",
    ];
    let j = all_ok(&run(env_cmd(&base, &env)), 300);
    assert!(count(&j, "tls_ms") >= 1, "{j}");
    assert!(count(&j, "connect_ms") >= 1, "{j}");

    let mut args = base.to_vec();
    args.push("--no-keepalive");
    let j = all_ok(&run(env_cmd(&args, &env)), 300);
    assert_eq!(count(&j, "tls_ms"), 300, "{j}");
    assert_eq!(count(&j, "connect_ms"), 300, "{j}");
    assert_eq!(count(&j, "ttfb_ms"), 300, "{j}");
    // Go's TLS server issues tickets: later connections resume.
    assert!(j["tls_resumed"].as_u64().unwrap() > 0, "{j}");

    // Bodies larger than one TLS record (16 KiB) in both directions: 40 KB writes are
    // sealed as several records, 100 KB reads (chunked by the server) arrive as many,
    // split across reads.
    let big_write = [
        "--op",
        "kv-write",
        "-c",
        "4",
        "-n",
        "200",
        "--secrets",
        "10",
        "--secret-size",
        "40000",
        "--format",
        "json",
    ];
    let j = all_ok(&run(env_cmd(&big_write, &env)), 200);
    assert!(j["bytes_sent"].as_u64().unwrap() > 200 * 40_000, "{j}");
    let big_read = [
        "--op",
        "kv-read",
        "-c",
        "4",
        "-n",
        "200",
        "--secrets",
        "10",
        "--secret-size",
        "100000",
        "--format",
        "json",
    ];
    let j = all_ok(&run(env_cmd(&big_read, &env)), 200);
    assert!(j["bytes_received"].as_u64().unwrap() > 200 * 100_000, "{j}");

    // Without the CA the setup client refuses the server, naming it.
    let r = run(env_cmd(
        &base,
        &[("VAULT_ADDR", bao.addr.as_str()), ("VAULT_TOKEN", "root")],
    ));
    refused(
        &r,
        &[
            &format!("127.0.0.1:{}", bao.port),
            "invalid peer certificate",
            "UnknownIssuer",
        ],
    );
    // A plain http:// address for a TLS server: Go answers 400 and says why.
    let plain = bao.addr.replace("https://", "http://");
    let r = run(env_cmd(
        &base,
        &[("VAULT_ADDR", plain.as_str()), ("VAULT_TOKEN", "root")],
    ));
    refused(&r, &["400", "HTTPS"]);
}

#[test]
fn nginx_url_mode_verification_and_resumption() {
    let (ng, files) = Nginx::start_tls_generated();
    let url = format!("{}/v1/secret/data/foo", ng.addr);
    let ca = p(&files.ca_cert);
    let common = ["-c", "8", "-n", "300", "--format", "json"];
    let with = |extra: &[&str], env: &[(&str, &str)]| {
        let mut a = common.to_vec();
        a.extend_from_slice(extra);
        a.push(&url);
        run(env_cmd(&a, env))
    };

    // Keep-alive: one handshake per connection, none resumed (nothing to resume from).
    let j = all_ok(&with(&["--ca-cert", ca], &[]), 300);
    let handshakes = count(&j, "tls_ms");
    assert!((1..=8).contains(&handshakes), "{j}");
    assert_eq!(j["connections_opened"], handshakes, "{j}");
    assert!(count(&j, "connect_ms") >= 1, "{j}");

    // Connection per request: every request a handshake, and after the first ones
    // (which bring the session tickets) they resume.
    let j = all_ok(&with(&["--ca-cert", ca, "--no-keepalive"], &[]), 300);
    assert_eq!(count(&j, "tls_ms"), 300, "{j}");
    let resumed = j["tls_resumed"].as_u64().unwrap();
    assert!(
        resumed >= 150,
        "only {resumed} of 300 handshakes resumed: {j}"
    );

    // --no-tls-resume: full handshakes only.
    let r = with(&["--ca-cert", ca, "--no-keepalive", "--no-tls-resume"], &[]);
    let j = all_ok(&r, 300);
    assert_eq!(count(&j, "tls_ms"), 300, "{j}");
    assert_eq!(j["tls_resumed"], 0, "{j}");
    let r = with(&["--ca-cert", ca, "--no-tls-resume"], &[]);
    all_ok(&r, 300);

    // Spread over worker processes: each verifies with the same CA, resumes on its own,
    // and the counts merge.
    let r = run(env_cmd(
        &[
            "-c",
            "40",
            "-n",
            "400",
            "--no-keepalive",
            "--format",
            "json",
            "--ca-cert",
            ca,
            &url,
        ],
        &[("VBLAST_PROCESS_FDS", "120")],
    ));
    let j = all_ok(&r, 400);
    assert!(j["run"]["processes"].as_u64().unwrap() >= 2, "{j}");
    assert_eq!(count(&j, "tls_ms"), 400, "{j}");
    assert!(j["tls_resumed"].as_u64().unwrap() >= 200, "{j}");

    // --ca-path: a directory of CA files.
    let dir = tempfile::tempdir().unwrap();
    fs::copy(&files.ca_cert, dir.path().join("ca.pem")).unwrap();
    let other = make_pki(dir.path(), "other", &["127.0.0.1"], false);
    fs::remove_file(&other.cert).unwrap();
    fs::remove_file(&other.key).unwrap();
    all_ok(&with(&["--ca-path", p(dir.path())], &[]), 300);
    all_ok(&with(&[], &[("VAULT_CAPATH", p(dir.path()))]), 300);

    // The environment's CA, and flags over the environment.
    all_ok(&with(&[], &[("VAULT_CACERT", ca)]), 300);
    let r = with(&["--ca-cert", ca], &[("VAULT_CACERT", p(&other.ca))]);
    all_ok(&r, 300);
    let r = with(&[], &[("VAULT_CACERT", p(&other.ca))]);
    refused(&r, &["UnknownIssuer"]);
    let r = with(&["--ca-cert", p(&other.ca)], &[("VAULT_CACERT", ca)]);
    refused(&r, &["UnknownIssuer"]);

    // Server name: --tls-server-name must match the certificate (and wins over the env).
    let r = with(&["--ca-cert", ca, "--tls-server-name", "localhost"], &[]);
    all_ok(&r, 300);
    let r = with(
        &["--ca-cert", ca, "--tls-server-name", "wrong.example"],
        &[],
    );
    refused(
        &r,
        &[
            &format!("TLS handshake with 127.0.0.1:{} failed", ng.port),
            "not valid for name \"wrong.example\"",
        ],
    );
    let r = with(
        &["--ca-cert", ca, "--tls-server-name", "localhost"],
        &[("VAULT_TLS_SERVER_NAME", "wrong.example")],
    );
    all_ok(&r, 300);
    // VAULT_TLS_SERVER_NAME alone: used when no flag is given.
    let r = with(
        &["--ca-cert", ca],
        &[("VAULT_TLS_SERVER_NAME", "wrong.example")],
    );
    refused(
        &r,
        &[
            &format!("TLS handshake with 127.0.0.1:{} failed", ng.port),
            "not valid for name \"wrong.example\"",
        ],
    );
    let r = with(
        &["--ca-cert", ca],
        &[("VAULT_TLS_SERVER_NAME", "localhost")],
    );
    all_ok(&r, 300);
}

#[test]
fn skip_verify_against_an_untrusted_certificate() {
    let (ng, _files) = Nginx::start_tls_generated();
    let url = format!("{}/v1/secret/data/foo", ng.addr);
    let args = ["-c", "4", "-n", "100", "--format", "json", url.as_str()];
    // No CA given: the system roots do not know the test CA.
    let r = run(url_cmd(&args));
    refused(
        &r,
        &[
            &format!("TLS handshake with 127.0.0.1:{} failed", ng.port),
            "invalid peer certificate: UnknownIssuer",
            "--ca-cert",
        ],
    );
    let mut k = vec!["-k"];
    k.extend_from_slice(&args);
    all_ok(&run(url_cmd(&k)), 100);
    let mut k = vec!["--insecure", "--no-keepalive"];
    k.extend_from_slice(&args);
    let j = all_ok(&run(url_cmd(&k)), 100);
    assert_eq!(count(&j, "tls_ms"), 100, "{j}");
    all_ok(&run(env_cmd(&args, &[("VAULT_SKIP_VERIFY", "true")])), 100);
    all_ok(&run(env_cmd(&args, &[("VAULT_SKIP_VERIFY", "1")])), 100);
    // Anything else leaves verification on.
    let r = run(env_cmd(&args, &[("VAULT_SKIP_VERIFY", "false")]));
    refused(&r, &["UnknownIssuer"]);
    let r = run(env_cmd(&args, &[("VAULT_SKIP_VERIFY", "no")]));
    refused(&r, &["UnknownIssuer"]);
}

#[test]
fn bad_tls_input_is_refused_before_the_run() {
    let dir = tempfile::tempdir().unwrap();

    // An expired server certificate.
    let expired = make_pki(dir.path(), "expired", &["127.0.0.1", "localhost"], true);
    let ng = Nginx::start_tls(&expired.cert, &expired.key);
    let url = format!("{}/v1/secret/data/foo", ng.addr);
    let r = run(url_cmd(&["-n", "10", "--ca-cert", p(&expired.ca), &url]));
    refused(
        &r,
        &[
            &format!("TLS handshake with 127.0.0.1:{} failed", ng.port),
            "expired",
        ],
    );
    // -k still connects (that is what it is for).
    let r = run(url_cmd(&["-n", "10", "-k", "--format", "json", &url]));
    all_ok(&r, 10);
    drop(ng);

    let (ng, files) = Nginx::start_tls_generated();
    let url = format!("{}/v1/secret/data/foo", ng.addr);

    // Missing and unreadable CA files, empty CA directory.
    let missing = dir.path().join("nope.pem");
    let r = run(url_cmd(&["-n", "10", "--ca-cert", p(&missing), &url]));
    refused(&r, &["cannot read certificate file", p(&missing)]);
    let r = run(env_cmd(
        &["-n", "10", &url],
        &[("VAULT_CACERT", p(&missing))],
    ));
    refused(&r, &[p(&missing)]);
    let junk = dir.path().join("junk.pem");
    fs::write(&junk, "not a certificate\n").unwrap();
    let r = run(url_cmd(&["-n", "10", "--ca-cert", p(&junk), &url]));
    refused(&r, &["no PEM certificate found", p(&junk)]);
    let empty = dir.path().join("empty-dir");
    fs::create_dir(&empty).unwrap();
    let r = run(url_cmd(&["-n", "10", "--ca-path", p(&empty), &url]));
    refused(&r, &["no CA certificate found", p(&empty)]);
    let r = run(url_cmd(&["-n", "10", "--ca-path", p(&missing), &url]));
    refused(&r, &["cannot read CA directory", p(&missing)]);

    // Client certificate problems.
    let client = make_pki(dir.path(), "client", &[], false);
    let other = make_pki(dir.path(), "other", &[], false);
    let ca = p(&files.ca_cert);
    let r = run(url_cmd(&[
        "-n",
        "10",
        "--ca-cert",
        ca,
        "--client-cert",
        p(&client.cert),
        "--client-key",
        p(&other.key),
        &url,
    ]));
    refused(&r, &[p(&client.cert), p(&other.key), "do not go together"]);
    let r = run(url_cmd(&[
        "-n",
        "10",
        "--ca-cert",
        ca,
        "--client-cert",
        p(&client.cert),
        &url,
    ]));
    refused(&r, &["--client-key"]);
    let r = run(env_cmd(
        &[
            "-n",
            "10",
            "--ca-cert",
            ca,
            "--client-key",
            p(&missing),
            &url,
        ],
        &[("VAULT_CLIENT_CERT", p(&client.cert))],
    ));
    refused(&r, &["cannot read key file", p(&missing)]);
    // A matching pair is accepted (nginx does not ask for it).
    let r = run(env_cmd(
        &["-n", "10", "--ca-cert", ca, "--format", "json", &url],
        &[
            ("VAULT_CLIENT_CERT", p(&client.cert)),
            ("VAULT_CLIENT_KEY", p(&client.key)),
        ],
    ));
    all_ok(&r, 10);

    // A plain-HTTP server at an https:// address.
    let plain = Nginx::start();
    let url = format!("https://127.0.0.1:{}/v1/secret/data/foo", plain.port);
    let r = run(url_cmd(&["-n", "10", "-k", &url]));
    refused(
        &r,
        &[
            &format!("127.0.0.1:{}", plain.port),
            "plain HTTP",
            "http://",
        ],
    );
    let r = run(env_cmd(
        &["-n", "10", "-k", "--no-setup", "--op", "kv-read"],
        &[("VAULT_ADDR", &format!("https://127.0.0.1:{}", plain.port))],
    ));
    refused(&r, &["plain HTTP"]);
}

#[test]
fn tls_server_at_an_http_address() {
    // nginx answers plain HTTP on its TLS port with 400 (counted, run fails, no hang).
    let (ng, _files) = Nginx::start_tls_generated();
    let url = format!("http://127.0.0.1:{}/v1/secret/data/foo", ng.port);
    let r = run(url_cmd(&["-n", "20", "-c", "2", "--format", "json", &url]));
    assert_eq!(r.code, Some(1), "{}", r.show());
    assert_eq!(r.json()["status"]["400"], 20, "{}", r.show());
    // A TLS server that answers with an alert record: read errors with a clear message.
    let raw = RawServer::reply(vec![0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x46]);
    let url = format!("{}/v1/secret/data/foo", raw.addr);
    let r = run(url_cmd(&["-n", "5", "-c", "1", "--format", "json", &url]));
    assert_eq!(r.code, Some(1), "{}", r.show());
    let j = r.json();
    assert_eq!(j["errors"]["read"], 5, "{j}");
    let msgs = j["error_messages"].to_string();
    assert!(
        msgs.contains("TLS bytes") && msgs.contains("https://"),
        "{j}"
    );
}

#[test]
fn cert_login_over_mutual_tls() {
    let bao = OpenBao::start_tls();
    let ca = bao.ca_cert.clone().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let client = make_pki(dir.path(), "client", &[], false);
    let env = [
        ("VAULT_ADDR", bao.addr.as_str()),
        ("VAULT_TOKEN", "root"),
        ("VAULT_CACERT", p(&ca)),
    ];
    let auth_paths = || {
        let (status, body) = bao.api("GET", "/v1/sys/auth", None);
        assert_eq!(status, 200, "{body}");
        body.matches("vblast-cert-").count()
    };

    // Client certificate issued by a CA given with --client-ca.
    let r = run(env_cmd(
        &[
            "--op",
            "cert-login",
            "-c",
            "4",
            "-n",
            "100",
            "--format",
            "json",
            "--client-cert",
            p(&client.cert),
            "--client-key",
            p(&client.key),
            "--client-ca",
            p(&client.ca),
        ],
        &env,
    ));
    let j = all_ok(&r, 100);
    assert_eq!(j["run"]["operation"], "cert-login", "{j}");
    assert_eq!(auth_paths(), 0, "auth path left behind");

    // A self-signed client certificate trusts itself (no --client-ca), from the env,
    // with a connection per login.
    let (cert, key) = self_signed(dir.path(), "selfsigned");
    let mut env2 = env.to_vec();
    env2.push(("VAULT_CLIENT_CERT", p(&cert)));
    env2.push(("VAULT_CLIENT_KEY", p(&key)));
    let r = run(env_cmd(
        &[
            "--op",
            "cert-login",
            "-c",
            "2",
            "-n",
            "20",
            "--no-keepalive",
            "--format",
            "json",
        ],
        &env2,
    ));
    all_ok(&r, 20);
    assert_eq!(auth_paths(), 0, "auth path left behind");

    // Client keys of every kind Vault users hold: Ed25519, RSA (PKCS#8 and the traditional
    // PKCS#1 "RSA PRIVATE KEY" form) and ECDSA, made by the openssl command.
    for (tag, newkey, traditional) in [
        ("ed25519", "ed25519", false),
        ("rsa", "rsa:2048", false),
        ("rsa1", "rsa:2048", true),
        ("ecdsa", "ec", false),
    ] {
        let (cert, key) = openssl_self_signed(dir.path(), tag, newkey, traditional);
        let r = run(env_cmd(
            &[
                "--op",
                "cert-login",
                "-c",
                "2",
                "-n",
                "10",
                "--client-cert",
                p(&cert),
                "--client-key",
                p(&key),
                "--format",
                "json",
            ],
            &env,
        ));
        all_ok(&r, 10);
    }
    assert_eq!(auth_paths(), 0, "auth path left behind");

    // A certificate the role does not trust: logins fail (counted), cleanup still runs.
    let stranger = make_pki(dir.path(), "stranger", &[], false);
    let r = run(env_cmd(
        &[
            "--op",
            "cert-login",
            "-c",
            "1",
            "-n",
            "5",
            "--format",
            "json",
            "--client-cert",
            p(&stranger.cert),
            "--client-key",
            p(&stranger.key),
            "--client-ca",
            p(&client.ca),
        ],
        &env,
    ));
    assert_eq!(r.code, Some(1), "{}", r.show());
    let j = r.json();
    assert_eq!(j["ok"], 0, "{j}");
    assert_eq!(j["errors"]["status"], 5, "{j}");
    assert_eq!(auth_paths(), 0, "auth path left behind");

    // Bad input: no client certificate; an http:// address.
    let r = run(env_cmd(&["--op", "cert-login", "-n", "5"], &env));
    refused(&r, &["cert-login needs a client certificate"]);
    let plain = bao.addr.replace("https://", "http://");
    let r = run(env_cmd(
        &["--op", "cert-login", "-n", "5"],
        &[("VAULT_ADDR", plain.as_str()), ("VAULT_TOKEN", "root")],
    ));
    refused(&r, &["cert-login needs an https:// address"]);
    let r = run(env_cmd(
        &[
            "--op",
            "cert-login",
            "-n",
            "5",
            "--client-ca",
            p(&dir.path().join("none.pem")),
        ],
        &env2,
    ));
    refused(&r, &["cannot read client CA file", "none.pem"]);
    assert_eq!(auth_paths(), 0);
}

/// vault-benchmark's `cert_auth` through `vblast --config` with `cleanup = false`: the
/// `certificate` given as PEM text (as its docs show) and some of its role keys. The role
/// read back from the server holds the file's values and, where the file is silent, what
/// vault-benchmark's write leaves (the server's defaults; the display name the role's
/// name); then `vblast cleanup --orphans --yes` leaves the server as it was.
#[test]
fn cert_auth_file_creates_the_role_vault_benchmark_creates() {
    let bao = OpenBao::start_tls();
    let ca = bao.ca_cert.clone().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let client = make_pki(dir.path(), "client", &[], false);
    let ca_pem = fs::read_to_string(&client.ca).unwrap();
    let before = support::openbao::server_state(&bao);
    let file = dir.path().join("cert.hcl");
    fs::write(
        &file,
        format!(
            "cleanup = false\ntest \"cert_auth\" \"cert_logins\" {{\n  weight = 100\n  config {{\n    certificate = <<EOT\n{}EOT\n    token_ttl = \"10m\"\n    token_max_ttl = \"1h\"\n    token_num_uses = 7\n    allowed_common_names = [\"vblast client\"]\n  }}\n}}\n",
            ca_pem
        ),
    )
    .unwrap();
    let env = [
        ("VAULT_ADDR", bao.addr.as_str()),
        ("VAULT_TOKEN", "root"),
        ("VAULT_CACERT", p(&ca)),
        ("VAULT_CLIENT_CERT", p(&client.cert)),
        ("VAULT_CLIENT_KEY", p(&client.key)),
    ];
    let r = run(env_cmd(
        &[
            "--config",
            p(&file),
            "-c",
            "2",
            "-n",
            "40",
            "--format",
            "json",
        ],
        &env,
    ));
    all_ok(&r, 40);
    let (status, body) = bao.api("GET", "/v1/sys/auth", None);
    assert_eq!(status, 200, "{body}");
    let auth: Value = serde_json::from_str(&body).unwrap();
    let kept: Vec<&String> = auth["data"]
        .as_object()
        .unwrap()
        .keys()
        .filter(|k| k.starts_with("vblast-cert-"))
        .collect();
    assert_eq!(kept.len(), 1, "cleanup = false keeps the auth path: {body}");
    let path = kept[0].trim_end_matches('/');
    assert_eq!(auth["data"][kept[0]]["type"], "cert", "{body}");
    // vblast's role is `vblast` where vault-benchmark's is `benchmark-vault` (the docs'
    // table of defaults).
    let (status, body) = bao.api("GET", &format!("/v1/auth/{path}/certs/vblast"), None);
    assert_eq!(status, 200, "{body}");
    let role = serde_json::from_str::<Value>(&body).unwrap()["data"].clone();
    // The file's values.
    assert_eq!(
        role["certificate"].as_str().map(str::trim),
        Some(ca_pem.trim()),
        "{role}"
    );
    assert_eq!(role["token_ttl"], 600, "{role}");
    assert_eq!(role["token_max_ttl"], 3600, "{role}");
    assert_eq!(role["token_num_uses"], 7, "{role}");
    assert_eq!(
        role["allowed_common_names"],
        serde_json::json!(["vblast client"])
    );
    // Where the file is silent: what vault-benchmark's write of empty values leaves.
    let empty = |key: &str| {
        let v = &role[key];
        assert!(
            v.is_null() || v.as_array().is_some_and(Vec::is_empty) || v == "",
            "{key}: {role}"
        );
    };
    for key in [
        "allowed_names",
        "allowed_dns_sans",
        "allowed_email_sans",
        "allowed_uri_sans",
        "allowed_organizational_units",
        "required_extensions",
        "allowed_metadata_extensions",
        "token_policies",
        "policies",
        "token_bound_cidrs",
    ] {
        empty(key);
    }
    assert_eq!(role["token_explicit_max_ttl"], 0, "{role}");
    assert_eq!(role["token_period"], 0, "{role}");
    assert_eq!(role["token_no_default_policy"], false, "{role}");
    assert_eq!(role["token_type"], "default", "{role}");
    assert_eq!(role["display_name"], "vblast", "{role}");
    // What was kept goes with `vblast cleanup --orphans`, the login's entity with it.
    let r = run(env_cmd(&["cleanup", "--orphans", "--yes"], &env));
    assert_eq!(r.code, Some(0), "{}", r.show());
    assert_eq!(support::openbao::server_state(&bao), before, "{}", r.show());
}

#[test]
fn gen_tls_files_round_trip() {
    // The harness's generated files work with --ca-cert against start_tls().
    let dir = tempfile::tempdir().unwrap();
    let files = gen_tls_files(dir.path());
    let ng = Nginx::start_tls(&files.cert, &files.key);
    let url = format!("{}/v1/x", ng.addr);
    let r = run(url_cmd(&[
        "-n",
        "5",
        "--ca-cert",
        p(&files.ca_cert),
        "--format",
        "json",
        &url,
    ]));
    all_ok(&r, 5);
}

/// vblast seals and opens TLS records itself after rustls's handshake (src/tlsio.rs): every
/// protocol version and AEAD the client offers must carry requests both ways, keep-alive
/// and with a handshake per request (resumed sessions included).
#[test]
fn every_tls_version_and_cipher_carries_requests() {
    let dir = tempfile::tempdir().unwrap();
    let files = gen_tls_files(dir.path());
    let cases = [
        (
            "TLSv1.3",
            "ssl_conf_command Ciphersuites TLS_AES_128_GCM_SHA256;",
        ),
        (
            "TLSv1.3",
            "ssl_conf_command Ciphersuites TLS_AES_256_GCM_SHA384;",
        ),
        (
            "TLSv1.3",
            "ssl_conf_command Ciphersuites TLS_CHACHA20_POLY1305_SHA256;",
        ),
        (
            "TLSv1.2",
            "ssl_ciphers ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256;",
        ),
        (
            "TLSv1.2",
            "ssl_ciphers ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384;",
        ),
        (
            "TLSv1.2",
            "ssl_ciphers ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305;",
        ),
    ];
    for (version, cipher) in cases {
        let nginx = Nginx::start_tls_with(
            &files.cert,
            &files.key,
            &format!("ssl_protocols {version}; {cipher}"),
        );
        let url = format!("https://127.0.0.1:{}/v1/secret/data/foo", nginx.port);
        let ca = p(&files.ca_cert);
        let j = all_ok(
            &run(url_cmd(&[
                "-c",
                "4",
                "-n",
                "300",
                "--ca-cert",
                ca,
                "--format",
                "json",
                &url,
            ])),
            300,
        );
        assert!(
            j["bytes_received"].as_u64().unwrap() > 300 * 100,
            "{version} {cipher}: {j}"
        );
        let j = all_ok(
            &run(url_cmd(&[
                "-c",
                "4",
                "-n",
                "60",
                "--no-keepalive",
                "--ca-cert",
                ca,
                "--format",
                "json",
                &url,
            ])),
            60,
        );
        assert!(
            j["tls_resumed"].as_u64().unwrap() > 0,
            "{version} {cipher}: {j}"
        );
    }
}

/// The two TLS engines: the in-place record layer (default) and rustls's own.
const ENGINES: [&str; 2] = ["in-place", "rustls"];

/// A run against an in-process TLS server with the TLS `engine`.
fn tls_server_run(srv: &TlsServer, engine: &str, extra: &[&str]) -> Out {
    let mut args = vec![
        "--ca-cert",
        p(&srv.ca_cert),
        "--timeout",
        "3s",
        "--format",
        "json",
    ];
    args.extend_from_slice(&["--tls-engine", engine]);
    args.extend_from_slice(extra);
    args.push(&srv.url);
    run(env_cmd(&args, &[]))
}

/// Issue 8, defect 6: a close-delimited response followed by close_notify in the same
/// segment, TCP left open (OpenSSL's two-way shutdown), completes at the close_notify
/// instead of waiting for a TCP close that never comes.
#[test]
fn close_notify_ends_a_close_delimited_response() {
    let srv = TlsServer::start(TlsMode::CloseDelimitedCloseNotify);
    for engine in ENGINES {
        for mode in [&[][..], &["--no-keepalive"][..]] {
            let mut args = vec!["-c", "2", "-n", "6"];
            args.extend_from_slice(mode);
            let j = all_ok(&tls_server_run(&srv, engine, &args), 6);
            assert_eq!(j["errors"]["timeout"], 0, "{engine}: {j}");
        }
    }
    assert_eq!(srv.responses(), 24);
}

/// Issue 8, defect 6: a keep-alive connection the server closed with close_notify (TCP
/// left open) is not reused: each request goes out once, on a connection that answers it.
#[test]
fn close_notify_retires_a_keep_alive_connection() {
    let srv = TlsServer::start(TlsMode::KeepAliveCloseNotify);
    for (k, engine) in ENGINES.into_iter().enumerate() {
        let j = all_ok(&tls_server_run(&srv, engine, &["-c", "1", "-n", "5"]), 5);
        assert_eq!(j["errors"]["timeout"], 0, "{engine}: {j}");
        assert_eq!(j["connections_opened"], 5, "{engine}: {j}");
        assert_eq!(
            srv.responses(),
            5 * (k + 1),
            "each request answered once: {j}"
        );
    }
}

/// Issue 8, defect 7: with tiny records (32 bytes), TLS 1.3 session tickets span several
/// records; they are reassembled and stored (the connection-per-request run resumes), and
/// key updates before every response work too. TLS 1.2 with tiny records as well.
#[test]
fn post_handshake_messages_split_across_records() {
    for key_update in [false, true] {
        let srv = TlsServer::start(TlsMode::Fragmented {
            frag: 32,
            key_update,
        });
        for engine in ENGINES {
            let j = all_ok(&tls_server_run(&srv, engine, &["-c", "2", "-n", "40"]), 40);
            assert_eq!(j["connections_opened"], 2, "{engine}: {j}");
            let j = all_ok(
                &tls_server_run(&srv, engine, &["-c", "2", "-n", "10", "--no-keepalive"]),
                10,
            );
            assert!(
                j["tls_resumed"].as_u64().unwrap() > 0,
                "{engine}: split session tickets were stored: {j}"
            );
        }
    }
    let srv = TlsServer::start_version(
        TlsMode::Fragmented {
            frag: 32,
            key_update: false,
        },
        true,
    );
    for engine in ENGINES {
        all_ok(&tls_server_run(&srv, engine, &["-c", "2", "-n", "20"]), 20);
    }
}

/// Issue 8, defect 13: a close-delimited body ended by a TCP close without close_notify
/// may have been cut short (a truncation attack looks the same): an error, not a success,
/// in the engine and in the setup client.
#[test]
fn close_delimited_tls_body_without_close_notify_is_an_error() {
    let srv = TlsServer::start(TlsMode::CloseDelimitedBareFin);
    for engine in ENGINES {
        let r = tls_server_run(&srv, engine, &["-c", "1", "-n", "3"]);
        r.assert_code(1);
        let j = r.json();
        assert_eq!(j["requests"], 3, "{}", r.show());
        assert_eq!(j["ok"], 0, "{}", r.show());
        assert_eq!(j["errors"]["read"], 3, "{}", r.show());
        assert!(
            j["error_messages"].to_string().contains("close_notify"),
            "{}",
            r.show()
        );
    }
    // The setup client: the health check's answer is refused the same way.
    let base = srv.url.trim_end_matches("/v1/secret/data/foo");
    let r = run(env_cmd(
        &["--op", "kv-read", "-n", "1", "--timeout", "3s"],
        &[
            ("VAULT_ADDR", base),
            ("VAULT_TOKEN", "root"),
            ("VAULT_CACERT", p(&srv.ca_cert)),
        ],
    ));
    r.assert_code(2);
    assert!(r.stderr.contains("close_notify"), "{}", r.show());
}

/// The TLS cross-check (issue 8): rustls's own record layer carries requests for every
/// protocol version and AEAD nginx offers, keep-alive and with a handshake per request
/// (resumed sessions included), as the in-place layer does in
/// `every_tls_version_and_cipher_carries_requests`.
#[test]
fn rustls_engine_carries_every_version_and_cipher() {
    let dir = tempfile::tempdir().unwrap();
    let files = gen_tls_files(dir.path());
    let ca = p(&files.ca_cert);
    for (version, cipher) in [
        (
            "TLSv1.3",
            "ssl_conf_command Ciphersuites TLS_AES_128_GCM_SHA256;",
        ),
        (
            "TLSv1.3",
            "ssl_conf_command Ciphersuites TLS_AES_256_GCM_SHA384;",
        ),
        (
            "TLSv1.3",
            "ssl_conf_command Ciphersuites TLS_CHACHA20_POLY1305_SHA256;",
        ),
        ("TLSv1.2", "ssl_ciphers ECDHE-ECDSA-AES128-GCM-SHA256;"),
        ("TLSv1.2", "ssl_ciphers ECDHE-ECDSA-AES256-GCM-SHA384;"),
        ("TLSv1.2", "ssl_ciphers ECDHE-ECDSA-CHACHA20-POLY1305;"),
    ] {
        let nginx = Nginx::start_tls_with(
            &files.cert,
            &files.key,
            &format!("ssl_protocols {version}; {cipher}"),
        );
        let url = format!("https://127.0.0.1:{}/v1/secret/data/foo", nginx.port);
        let engine = [("VBLAST_TLS_ENGINE", "rustls")];
        let args = [
            "-c",
            "4",
            "-n",
            "300",
            "--ca-cert",
            ca,
            "--format",
            "json",
            &url,
        ];
        let j = all_ok(&run(env_cmd(&args, &engine)), 300);
        assert!(
            j["bytes_received"].as_u64().unwrap() > 300 * 100,
            "{version} {cipher}: {j}"
        );
        let args = [
            "-c",
            "4",
            "-n",
            "60",
            "--no-keepalive",
            "--ca-cert",
            ca,
            "--format",
            "json",
            &url,
        ];
        let j = all_ok(&run(env_cmd(&args, &engine)), 60);
        assert!(
            j["tls_resumed"].as_u64().unwrap() > 0,
            "{version} {cipher}: {j}"
        );
    }
}

/// Several nodes over TLS: each node is reached under its own name (SNI and certificate
/// verification), not the first node's: by the engine, and by the setup client when the
/// active node is not the first. Two nginx as a cluster's nodes on two loopback addresses,
/// each with a certificate for its own address only.
#[test]
fn each_node_is_verified_under_its_own_name() {
    let dir = tempfile::tempdir().unwrap();
    let a = make_pki(dir.path(), "node-a", &["127.0.0.1"], false);
    let b = make_pki(dir.path(), "node-b", &["127.0.0.2"], false);
    let bundle = dir.path().join("cas.pem");
    let cas = [fs::read(&a.ca).unwrap(), fs::read(&b.ca).unwrap()].concat();
    fs::write(&bundle, cas).unwrap();
    let health = |active: bool| {
        format!(
            "location = /v1/sys/health {{ return {} '{{\"initialized\":true,\"sealed\":false,\"standby\":{},\"cluster_id\":\"tls-nodes\"}}'; }}
    location = /v1/sys/seal-status {{ return 200 '{{\"sealed\":false}}'; }}",
            if active { 200 } else { 429 },
            !active
        )
    };
    // seal-status needs no setup; kv-read is set up on the active node, here the second.
    for (first_active, op) in [(true, "seal-status"), (false, "kv-read")] {
        let first = Nginx::start_tls_with(&a.cert, &a.key, &health(first_active));
        // The second node answers on 127.0.0.2 (its certificate names that address alone;
        // nginx listens on both addresses once it listens on one).
        let port = support::ports::free_port();
        let _second = Nginx::start_tls_with(
            &b.cert,
            &b.key,
            &format!(
                "listen 127.0.0.2:{port} ssl;\n    {}",
                health(!first_active)
            ),
        );
        let second = format!("https://127.0.0.2:{port}");
        let mut args = vec![
            "--address",
            &first.addr,
            "--address",
            &second,
            "--ca-cert",
            p(&bundle),
            "--nodes",
            "all",
            "-t",
            "1",
            "-c",
            "4",
            "-n",
            "200",
            "--op",
            op,
            "--format",
            "json",
        ];
        if op == "kv-read" {
            args.extend_from_slice(&["--secrets", "10"]);
        }
        let out = run(env_cmd(&args, &[("VAULT_TOKEN", "test-token")]));
        assert_eq!(out.code, Some(0), "{op}: {}", out.show());
        let j = out.json();
        assert_eq!(
            (j["requests"].as_u64(), j["ok"].as_u64()),
            (Some(200), Some(200)),
            "{op}: {}",
            out.show()
        );
        let nodes = j["nodes"].as_array().unwrap();
        assert_eq!(nodes.len(), 2, "{op}: {}", out.show());
        for n in nodes {
            assert!(n["ok"].as_u64().unwrap() > 0, "{op}: {}", out.show());
        }
        assert_eq!(count(&j, "tls_ms"), 4, "{op}: {}", out.show());
    }
}

/// Issue 26's bad input: a TLS handshake storm the server refuses. A connection per request
/// on 600 connections against a real nginx; a second in, nginx is stopped (SIGSTOP) for 2 s,
/// so its accept queue (511) overflows and the handshakes it had accepted stall; then its
/// worker is killed (SIGKILL: the connections it held are reset; its master starts another).
/// Every failure is counted under its kind, the kinds add up to the failures, the requests
/// to ok + failed, and the run ends by its deadline. (No sleep decides the outcome: whatever
/// the faults hit, the accounting must hold.)
#[test]
fn a_handshake_storm_the_server_refuses_is_counted_per_kind_and_ends() {
    use std::time::Duration;
    let (ng, files) = Nginx::start_tls_generated();
    let url = format!("{}/v1/secret/data/foo", ng.addr);
    let ca = p(&files.ca_cert).to_string();
    let args = [
        "--no-keepalive",
        "-c",
        "600",
        "-z",
        "6s",
        "--timeout",
        "1s",
        "--ca-cert",
        &ca,
        "--format",
        "json",
        &url,
    ];
    let running = support::run::spawn(url_cmd(&args));
    std::thread::sleep(Duration::from_millis(1500));
    let master = ng.pid();
    let workers = support::process::children(master);
    for pid in std::iter::once(master).chain(workers.iter().copied()) {
        support::process::signal(pid, libc::SIGSTOP);
    }
    std::thread::sleep(Duration::from_secs(2));
    for pid in std::iter::once(master).chain(workers.iter().copied()) {
        support::process::signal(pid, libc::SIGCONT);
    }
    std::thread::sleep(Duration::from_millis(500));
    for pid in &workers {
        support::process::signal(*pid, libc::SIGKILL);
    }
    let out = running.finish(Duration::from_secs(60));
    // Failed requests without --allow-errors: exit 1 (a counted run, not a refusal or a
    // crash); `failed > 0` below is why.
    assert_eq!(out.code, Some(1), "{}", out.show());
    let j = out.json();
    let u = support::figures::u;
    let (requests, ok, failed) = (u(&j["requests"]), u(&j["ok"]), u(&j["failed"]));
    assert_eq!(requests, ok + failed, "{}", out.show());
    assert!(
        ok > 0,
        "the storm was served before and after: {}",
        out.show()
    );
    assert!(
        failed > 0,
        "the stop and the kill cost requests: {}",
        out.show()
    );
    let e = &j["errors"];
    let kinds = ["connect", "read", "write", "timeout", "status"];
    let counted: u64 = kinds.iter().map(|k| u(&e[*k])).sum();
    assert_eq!(counted, failed, "every failure under one kind: {e}");
    assert!(
        u(&e["timeout"]) + u(&e["connect"]) > 0,
        "the stopped server's handshakes and connects: {e}"
    );
    // nginx lives on (its master started a new worker) and answers again.
    assert_eq!(ng.get("/v1/secret/data/foo").status, 200);
}

/// A server certificate made by `openssl req -x509` (which marks it a CA), for `names`
/// (none: a CN only).
fn openssl_server_cert(dir: &Path, tag: &str, names: &str) -> (PathBuf, PathBuf) {
    let (c, k) = (
        dir.join(format!("{tag}-cert.pem")),
        dir.join(format!("{tag}-key.pem")),
    );
    let mut cmd = std::process::Command::new("openssl");
    cmd.args(["req", "-x509", "-newkey", "ec", "-pkeyopt"])
        .args(["ec_paramgen_curve:prime256v1", "-nodes", "-days", "2"])
        .args(["-subj", "/CN=localhost"]);
    if !names.is_empty() {
        cmd.args(["-addext", &format!("subjectAltName={names}")]);
    }
    let out = cmd
        .arg("-keyout")
        .arg(&k)
        .arg("-out")
        .arg(&c)
        .output()
        .expect("run openssl (tools/deps.sh installs it)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::process::Command::new("openssl")
        .args(["x509", "-noout", "-text", "-in"])
        .arg(&c)
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&text.stdout).contains("CA:TRUE"),
        "openssl req -x509 no longer marks its certificate a CA"
    );
    (c, k)
}

#[test]
fn a_self_signed_server_certificate_given_as_the_ca_is_trusted_as_itself() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = openssl_server_cert(dir.path(), "server", "IP:127.0.0.1,DNS:localhost");
    let ng = Nginx::start_tls(&cert, &key);
    let url = format!("{}/v1/secret/data/foo", ng.addr);
    let args = |extra: &[&str]| {
        let mut a = vec!["-c", "2", "-n", "40", "--format", "json"];
        a.extend_from_slice(extra);
        a.push(url.as_str());
        run(url_cmd(&a))
    };
    // The very certificate as the CA: trusted as the server's (as curl and Vault's CLI do),
    // with fresh handshakes too, and through VAULT_CACERT.
    all_ok(&args(&["--ca-cert", p(&cert)]), 40);
    let j = all_ok(&args(&["--ca-cert", p(&cert), "--no-keepalive"]), 40);
    assert_eq!(count(&j, "tls_ms"), 40, "{j}");
    let ca_dir = dir.path().join("cas");
    fs::create_dir(&ca_dir).unwrap();
    fs::copy(&cert, ca_dir.join("server.pem")).unwrap();
    all_ok(&args(&["--ca-path", p(&ca_dir)]), 40);
    let r = run(env_cmd(
        &["-n", "10", "--format", "json", &url],
        &[("VAULT_CACERT", p(&cert))],
    ));
    all_ok(&r, 10);
    // Its name is still checked.
    let r = args(&["--ca-cert", p(&cert), "--tls-server-name", "wrong.example"]);
    refused(
        &r,
        &["not valid for name \"wrong.example\"", "--tls-server-name"],
    );
    // Another self-signed certificate given: refused, with what to do in plain words.
    let (other, _) = openssl_server_cert(dir.path(), "other", "IP:127.0.0.1");
    let r = args(&["--ca-cert", p(&other)]);
    refused(
        &r,
        &[
            "marked as a CA",
            "give that very certificate with --ca-cert",
        ],
    );
    drop(ng);
    // A certificate naming the server only in its CN: the way out said.
    let (cn_only, cn_key) = openssl_server_cert(dir.path(), "cn-only", "");
    let ng = Nginx::start_tls(&cn_only, &cn_key);
    let url = format!("{}/v1/secret/data/foo", ng.addr);
    let r = run(url_cmd(&[
        "-n",
        "10",
        "--ca-cert",
        p(&cn_only),
        "--tls-server-name",
        "localhost",
        &url,
    ]));
    refused(&r, &["only in its CN", "subjectAltName="]);
}
