//! Shared integration-test harness: OpenBao dev servers, an nginx with canned
//! Vault-shaped responses, raw fault-injecting TCP servers and a tiny blocking
//! HTTP/1.1 (+TLS) client for checking state.
//!
//! Everything listens on 127.0.0.1 only, on kernel-chosen free ports, and every
//! process started here is killed (by pid) when its handle is dropped.
#![allow(dead_code)]

pub mod cluster;
pub mod run;
pub mod servers;

use std::fs;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// How long we wait for a server we started to become ready.
const READY_TIMEOUT: Duration = Duration::from_secs(30);

// ---------------------------------------------------------------------------
// vblast binary, ports
// ---------------------------------------------------------------------------

/// A `Command` for the vblast binary under test, with every `VAULT_*` and
/// `BAO_*` variable removed from its environment so tests control them.
pub fn vblast() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_vblast"));
    scrub_env(&mut cmd);
    cmd.stdin(Stdio::null());
    cmd
}

fn scrub_env(cmd: &mut Command) {
    for (k, _) in std::env::vars_os() {
        if let Some(k) = k.to_str()
            && (k.starts_with("VAULT_") || k.starts_with("BAO_"))
        {
            cmd.env_remove(k);
        }
    }
}

/// Servers in tests listen below the ephemeral range (32768-60999 here), where every
/// client's outgoing connections take their local ports: a listener port picked from that
/// range can be taken by a load run's connection a moment later.
const LISTEN_PORTS: std::ops::Range<u16> = 10_000..32_000;

fn random_listen_port() -> u16 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0),
    );
    let span = (LISTEN_PORTS.end - LISTEN_PORTS.start) as u64;
    LISTEN_PORTS.start + (h.finish() % span) as u16
}

/// A currently free TCP port on 127.0.0.1, outside the ephemeral range.
pub fn free_port() -> u16 {
    for _ in 0..1000 {
        let p = random_listen_port();
        if TcpListener::bind(("127.0.0.1", p)).is_ok() {
            return p;
        }
    }
    panic!("could not find a free port on 127.0.0.1 in {LISTEN_PORTS:?}");
}

/// A free port P such that P+1 is free too (the OpenBao dev server also
/// binds its cluster listener on port+1).
fn free_port_pair() -> u16 {
    for _ in 0..1000 {
        let p = random_listen_port();
        let Ok(_a) = TcpListener::bind(("127.0.0.1", p)) else {
            continue;
        };
        if TcpListener::bind(("127.0.0.1", p + 1)).is_ok() {
            return p;
        }
    }
    panic!("could not find two adjacent free ports on 127.0.0.1");
}

fn wait_for_port(port: u16, deadline: Instant) -> bool {
    let sa: SocketAddr = ([127, 0, 0, 1], port).into();
    while Instant::now() < deadline {
        if TcpStream::connect_timeout(&sa, Duration::from_millis(200)).is_ok() {
            return true;
        }
        thread::sleep(Duration::from_millis(20));
    }
    false
}

fn find_in_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

fn signal(pid: u32, sig: libc::c_int) {
    // SAFETY: plain kill(2) on a pid we own.
    unsafe {
        libc::kill(pid as libc::pid_t, sig);
    }
}

/// State letter of a /proc stat file ("R", "S", "T", ...).
fn proc_state(stat_path: &Path) -> Option<char> {
    let stat = fs::read_to_string(stat_path).ok()?;
    // Format: pid (comm) state ...; comm may contain spaces/parens.
    stat.rsplit_once(')')?.1.trim_start().chars().next()
}

/// Wait until all threads of `pid` are stopped (state T/t).
fn wait_stopped(pid: u32, timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    let task_dir = PathBuf::from(format!("/proc/{pid}/task"));
    loop {
        let all_stopped = match fs::read_dir(&task_dir) {
            Ok(rd) => rd
                .flatten()
                .all(|t| matches!(proc_state(&t.path().join("stat")), Some('T' | 't') | None)),
            Err(_) => return false,
        };
        if all_stopped {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        thread::sleep(Duration::from_millis(2));
    }
}

/// Wait for `child` to exit for up to `timeout`; returns true if it exited.
fn wait_timeout(child: &mut Child, timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        match child.try_wait() {
            Ok(Some(_)) => return true,
            Ok(None) if Instant::now() < deadline => thread::sleep(Duration::from_millis(10)),
            Ok(None) => return false,
            Err(_) => return true,
        }
    }
}

fn stop_child(child: &mut Child, graceful: bool) {
    if let Ok(Some(_)) = child.try_wait() {
        return;
    }
    let pid = child.id();
    signal(pid, libc::SIGCONT);
    if graceful {
        signal(pid, libc::SIGTERM);
        if wait_timeout(child, Duration::from_secs(5)) {
            return;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
}

// ---------------------------------------------------------------------------
// OpenBao
// ---------------------------------------------------------------------------

/// Path of the `bao` binary: `$VBLAST_BAO`, else `bao` on PATH, else
/// `$HOME/.cache/vblast/venv/bin/bao`, else `/tmp/baovenv/bin/bao`.
pub fn bao_binary() -> PathBuf {
    if let Some(p) = std::env::var_os("VBLAST_BAO").filter(|p| !p.is_empty()) {
        return PathBuf::from(p);
    }
    if let Some(p) = find_in_path("bao") {
        return p;
    }
    let mut candidates = Vec::new();
    if let Some(home) = std::env::var_os("HOME") {
        candidates.push(PathBuf::from(home).join(".cache/vblast/venv/bin/bao"));
    }
    candidates.push(PathBuf::from("/tmp/baovenv/bin/bao"));
    for c in &candidates {
        if c.is_file() {
            return c.clone();
        }
    }
    panic!(
        "OpenBao binary not found: set VBLAST_BAO, put `bao` on PATH, or run tools/deps.sh \
         (looked in {candidates:?})"
    );
}

/// An OpenBao dev server (in-memory, unsealed, root token "root").
pub struct OpenBao {
    /// `http://127.0.0.1:PORT` or `https://127.0.0.1:PORT`.
    pub addr: String,
    pub port: u16,
    /// Root token, always "root".
    pub token: String,
    /// CA certificate to trust (TLS mode only).
    pub ca_cert: Option<PathBuf>,
    child: Child,
    log_path: PathBuf,
    tempdir: tempfile::TempDir,
}

impl OpenBao {
    /// Plain-HTTP dev server.
    pub fn start() -> OpenBao {
        Self::start_inner(false)
    }

    /// Dev server with `-dev-tls`; `ca_cert` points at the generated CA.
    pub fn start_tls() -> OpenBao {
        Self::start_inner(true)
    }

    fn start_inner(tls: bool) -> OpenBao {
        let mut last_err = String::new();
        // Retry a couple of times in case another process grabbed our port
        // (or port+1) between choosing it and the server binding it.
        for _ in 0..3 {
            match Self::try_start(tls) {
                Ok(b) => return b,
                Err(e) => last_err = e,
            }
        }
        panic!("OpenBao dev server did not start:\n{last_err}");
    }

    fn try_start(tls: bool) -> Result<OpenBao, String> {
        let bin = bao_binary();
        let tempdir = tempfile::Builder::new()
            .prefix("vblast-bao-")
            .tempdir()
            .expect("tempdir");
        let port = free_port_pair();
        let log_path = tempdir.path().join("bao.log");
        let log = fs::File::create(&log_path).expect("create bao log");
        let mut cmd = Command::new(&bin);
        scrub_env(&mut cmd);
        cmd.arg("server")
            .arg("-dev")
            .arg("-dev-root-token-id")
            .arg("root")
            .arg("-dev-no-store-token")
            .arg("-dev-listen-address")
            .arg(format!("127.0.0.1:{port}"))
            // Keep the token helper and anything else it writes out of $HOME.
            .env("HOME", tempdir.path())
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log);
        let mut ca_cert = None;
        if tls {
            let dir = tempdir.path().join("tls");
            fs::create_dir_all(&dir).unwrap();
            cmd.arg("-dev-tls").arg("-dev-tls-cert-dir").arg(&dir);
            ca_cert = Some(dir.join("vault-ca.pem"));
        }
        let child = cmd
            .spawn()
            .map_err(|e| format!("failed to spawn {}: {e}", bin.display()))?;
        let scheme = if tls { "https" } else { "http" };
        let mut bao = OpenBao {
            addr: format!("{scheme}://127.0.0.1:{port}"),
            port,
            token: "root".to_string(),
            ca_cert,
            child,
            log_path,
            tempdir,
        };
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            if let Ok(Some(status)) = bao.child.try_wait() {
                return Err(format!(
                    "{} exited early ({status}); log:\n{}",
                    bin.display(),
                    bao.log()
                ));
            }
            let ready = (!tls || bao.ca_cert.as_ref().is_some_and(|p| p.is_file()))
                && matches!(bao.try_api("GET", "/v1/sys/health", None), Ok((200, _)));
            if ready {
                return Ok(bao);
            }
            if Instant::now() > deadline {
                let log = bao.log();
                bao.kill();
                return Err(format!(
                    "{} not healthy at {} after {:?}; log:\n{log}",
                    bin.display(),
                    bao.addr,
                    READY_TIMEOUT
                ));
            }
            thread::sleep(Duration::from_millis(25));
        }
    }

    /// Server log so far (stdout + stderr).
    pub fn log(&self) -> String {
        fs::read_to_string(&self.log_path).unwrap_or_default()
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGSTOP the server (it stops answering but keeps its sockets).
    /// Returns once every thread of the process is in the stopped state
    /// (or after 2 s).
    pub fn stop_signal(&self) {
        signal(self.pid(), libc::SIGSTOP);
        wait_stopped(self.pid(), Duration::from_secs(2));
    }

    /// SIGCONT the server.
    pub fn cont_signal(&self) {
        signal(self.pid(), libc::SIGCONT);
    }

    /// Kill (SIGCONT, SIGKILL) and reap the server. Idempotent.
    pub fn kill(&mut self) {
        stop_child(&mut self.child, false);
    }

    /// Blocking request with `X-Vault-Token: root`; returns (status, body).
    /// Panics on transport errors.
    pub fn api(&self, method: &str, path: &str, body: Option<&str>) -> (u16, String) {
        self.try_api(method, path, body).unwrap_or_else(|e| {
            panic!(
                "{method} {}{path} failed: {e}\nserver log:\n{}",
                self.addr,
                self.log()
            )
        })
    }

    /// Creates namespace `ns` (the dev server has namespaces built in).
    pub fn namespace(&self, ns: &str) {
        let (status, body) = self.api("POST", &format!("/v1/sys/namespaces/{ns}"), Some("{}"));
        assert_eq!(status, 200, "namespace {ns} create: {body}");
    }

    /// Like [`OpenBao::api`] without a body, inside namespace `ns` (`X-Vault-Namespace`).
    pub fn api_in(&self, ns: &str, method: &str, path: &str) -> (u16, String) {
        let r = http_request(
            &self.addr,
            method,
            path,
            &[
                ("X-Vault-Token", self.token.as_str()),
                ("X-Vault-Namespace", ns),
            ],
            None,
            None,
        )
        .unwrap_or_else(|e| panic!("{method} {}{path} in {ns} failed: {e}", self.addr));
        (r.status, r.text())
    }

    /// Like [`OpenBao::api`] but returns transport errors.
    pub fn try_api(
        &self,
        method: &str,
        path: &str,
        body: Option<&str>,
    ) -> io::Result<(u16, String)> {
        let mut headers = vec![("X-Vault-Token", self.token.as_str())];
        if body.is_some() {
            headers.push(("Content-Type", "application/json"));
        }
        let r = http_request(
            &self.addr,
            method,
            path,
            &headers,
            body.map(str::as_bytes),
            self.ca_cert.as_deref(),
        )?;
        let text = r.text();
        Ok((r.status, text))
    }
}

impl Drop for OpenBao {
    fn drop(&mut self) {
        self.kill();
    }
}

// ---------------------------------------------------------------------------
// nginx with canned Vault-shaped responses
// ---------------------------------------------------------------------------

/// Body served for `/v1/...` paths (a kv-v2 read response, ~148 bytes).
pub const KV_BODY: &str = r#"{"request_id":"0b6f5a3e-1c1e-4f3a-9d53-5a3b8f3c2a11","data":{"data":{"value":"bar"},"metadata":{"version":1}},"lease_duration":0,"renewable":false}"#;

/// Body served (chunked) for `/chunked`.
pub const CHUNKED_BODY: &str = r#"{"request_id":"5e0c3b1a-7d1f-4b2e-8c4a-2f9e6d7c1b30","data":{"data":{"value":"chunky"},"metadata":{"version":1}},"lease_duration":0,"renewable":false}"#;

/// An nginx serving canned responses on 127.0.0.1:PORT:
///
/// * any `/v1/...` path: 200 `application/json`, body [`KV_BODY`]
/// * `/status/{404,429,500,503}`: that status, `{"errors":[...]}` body
/// * `/status/307`: 307, `Location: <addr>/v1/secret/data/foo`, JSON body
/// * `/close`: 200 with `Connection: close`
/// * `/chunked`: 200 with `Transfer-Encoding: chunked`, body [`CHUNKED_BODY`]
/// * anything else: 404 JSON
pub struct Nginx {
    pub port: u16,
    /// `http://127.0.0.1:PORT` (or `https://` for TLS).
    pub addr: String,
    /// Certificate to trust when talking to a TLS nginx (set by the TLS
    /// constructors; may be overridden).
    pub ca_cert: Option<PathBuf>,
    child: Child,
    tempdir: tempfile::TempDir,
}

/// PEM files for a test TLS server: a CA, and a leaf for 127.0.0.1/localhost.
pub struct TlsFiles {
    pub ca_cert: PathBuf,
    pub cert: PathBuf,
    pub key: PathBuf,
}

/// Generate a CA and a leaf certificate (SANs 127.0.0.1, localhost) into `dir`
/// as `ca.pem`, `cert.pem`, `key.pem`.
pub fn gen_tls_files(dir: &Path) -> TlsFiles {
    use rcgen::{
        BasicConstraints, CertificateParams, DistinguishedName, DnType, IsCa, Issuer, KeyPair,
    };
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, "vblast test CA");
    ca_params.distinguished_name = dn;
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca_params, &ca_key);

    let leaf_key = KeyPair::generate().unwrap();
    let mut leaf_params =
        CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()]).unwrap();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, "127.0.0.1");
    leaf_params.distinguished_name = dn;
    let leaf = leaf_params.signed_by(&leaf_key, &issuer).unwrap();

    let files = TlsFiles {
        ca_cert: dir.join("ca.pem"),
        cert: dir.join("cert.pem"),
        key: dir.join("key.pem"),
    };
    fs::write(&files.ca_cert, ca_cert.pem()).unwrap();
    fs::write(&files.cert, leaf.pem()).unwrap();
    fs::write(&files.key, leaf_key.serialize_pem()).unwrap();
    files
}

impl Nginx {
    /// Plain HTTP nginx.
    pub fn start() -> Nginx {
        Self::start_with("", "", None)
    }

    /// Plain HTTP nginx with extra server-level directives appended to the
    /// `server { }` block.
    pub fn with_extra(server_snippet: &str) -> Nginx {
        Self::start_with("", server_snippet, None)
    }

    /// Plain HTTP nginx with directives at the `http { }` level too (a `log_format`).
    pub fn with_http_extra(http_snippet: &str, server_snippet: &str) -> Nginx {
        Self::start_full("", http_snippet, server_snippet, None)
    }

    /// TLS nginx using the given certificate chain and key (PEM paths).
    /// `ca_cert` is set to `cert_pem` (right for a self-signed cert; set it to
    /// the CA yourself otherwise).
    pub fn start_tls(cert_pem: &Path, key_pem: &Path) -> Nginx {
        let snippet = format!(
            "ssl_certificate {};\n    ssl_certificate_key {};\n",
            cert_pem.display(),
            key_pem.display()
        );
        Self::start_with(" ssl", &snippet, Some(cert_pem.to_path_buf()))
    }

    /// TLS nginx with extra server directives (e.g. `ssl_protocols TLSv1.2;`).
    pub fn start_tls_with(cert_pem: &Path, key_pem: &Path, directives: &str) -> Nginx {
        let snippet = format!(
            "ssl_certificate {};\n    ssl_certificate_key {};\n    {directives}\n",
            cert_pem.display(),
            key_pem.display()
        );
        Self::start_with(" ssl", &snippet, Some(cert_pem.to_path_buf()))
    }

    /// TLS nginx with a freshly generated CA + leaf (see [`gen_tls_files`]);
    /// `ca_cert` is the generated CA. Returns the files too.
    pub fn start_tls_generated() -> (Nginx, TlsFiles) {
        let dir = tempfile::Builder::new()
            .prefix("vblast-certs-")
            .tempdir()
            .unwrap();
        let files = gen_tls_files(dir.path());
        let mut ng = Self::start_tls(&files.cert, &files.key);
        // Move the cert files into nginx's own tempdir so they live as long as it.
        let own = ng.prefix().join("certs");
        fs::create_dir_all(&own).unwrap();
        let moved = TlsFiles {
            ca_cert: own.join("ca.pem"),
            cert: own.join("cert.pem"),
            key: own.join("key.pem"),
        };
        fs::copy(&files.ca_cert, &moved.ca_cert).unwrap();
        fs::copy(&files.cert, &moved.cert).unwrap();
        fs::copy(&files.key, &moved.key).unwrap();
        ng.ca_cert = Some(moved.ca_cert.clone());
        (ng, moved)
    }

    /// The nginx prefix directory (config, logs, pid file).
    pub fn prefix(&self) -> &Path {
        self.tempdir.path()
    }

    /// nginx error log so far.
    pub fn error_log(&self) -> String {
        fs::read_to_string(self.prefix().join("logs/error.log")).unwrap_or_default()
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    fn start_with(listen_suffix: &str, server_snippet: &str, ca: Option<PathBuf>) -> Nginx {
        Self::start_full(listen_suffix, "", server_snippet, ca)
    }

    fn start_full(
        listen_suffix: &str,
        http_snippet: &str,
        server_snippet: &str,
        ca: Option<PathBuf>,
    ) -> Nginx {
        let mut last_err = String::new();
        for _ in 0..3 {
            match Self::try_start(listen_suffix, http_snippet, server_snippet, ca.clone()) {
                Ok(n) => return n,
                Err(e) => last_err = e,
            }
        }
        panic!("nginx did not start:\n{last_err}");
    }

    fn try_start(
        listen_suffix: &str,
        http_snippet: &str,
        server_snippet: &str,
        ca: Option<PathBuf>,
    ) -> Result<Nginx, String> {
        let tempdir = tempfile::Builder::new()
            .prefix("vblast-nginx-")
            .tempdir()
            .expect("tempdir");
        let p = tempdir.path();
        for d in ["logs", "tmp", "html"] {
            fs::create_dir_all(p.join(d)).unwrap();
        }
        fs::write(p.join("html/chunked.json"), CHUNKED_BODY).unwrap();
        fs::write(
            p.join("html/redirect.json"),
            r#"{"errors":["temporary redirect"]}"#,
        )
        .unwrap();
        let port = free_port();
        let prefix = p.display().to_string();
        // SAFETY: geteuid has no preconditions.
        let user = if unsafe { libc::geteuid() } == 0 {
            "user root;"
        } else {
            ""
        };
        let conf = format!(
            r#"{user}
worker_processes 1;
worker_rlimit_nofile 16384;
pid {prefix}/logs/nginx.pid;
error_log {prefix}/logs/error.log warn;
events {{
    worker_connections 8192;
}}
http {{
    access_log off;
    client_body_temp_path {prefix}/tmp/body;
    proxy_temp_path {prefix}/tmp/proxy;
    fastcgi_temp_path {prefix}/tmp/fastcgi;
    uwsgi_temp_path {prefix}/tmp/uwsgi;
    scgi_temp_path {prefix}/tmp/scgi;
    keepalive_requests 100000000;
    keepalive_timeout 75s;
    default_type application/json;
    server_tokens off;
    {http_snippet}
    server {{
    listen 127.0.0.1:{port}{listen_suffix};
    {server_snippet}
    location /v1/ {{
        return 200 '{KV_BODY}';
    }}
    location = /status/429 {{
        return 429 '{{"errors":["rate limit quota exceeded"]}}';
    }}
    location = /status/503 {{
        return 503 '{{"errors":["Vault is sealed"]}}';
    }}
    location = /status/404 {{
        return 404 '{{"errors":[]}}';
    }}
    location = /status/500 {{
        return 500 '{{"errors":["internal error"]}}';
    }}
    location = /status/307 {{
        error_page 307 /_canned/redirect.json;
        return 307 /v1/secret/data/foo;
    }}
    location /_canned/ {{
        internal;
        alias {prefix}/html/;
    }}
    location = /close {{
        keepalive_timeout 0;
        return 200 '{KV_BODY}';
    }}
    location = /chunked {{
        root {prefix}/html;
        ssi on;
        ssi_types application/json;
        try_files /chunked.json =404;
    }}
    location / {{
        return 404 '{{"errors":["no handler for route"]}}';
    }}
    }}
}}
"#
        );
        let conf_path = p.join("nginx.conf");
        fs::write(&conf_path, conf).unwrap();
        let stderr_path = p.join("logs/stderr.log");
        let stderr = fs::File::create(&stderr_path).unwrap();
        let nginx_bin = find_in_path("nginx")
            .or_else(|| Some(PathBuf::from("/usr/sbin/nginx")).filter(|p| p.is_file()))
            .expect("nginx not found (run tools/deps.sh)");
        let child = Command::new(nginx_bin)
            .arg("-p")
            .arg(p)
            .arg("-c")
            .arg(&conf_path)
            .arg("-e")
            .arg(p.join("logs/error.log"))
            .arg("-g")
            .arg("daemon off;")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .map_err(|e| format!("spawn nginx: {e}"))?;
        let scheme = if listen_suffix.contains("ssl") {
            "https"
        } else {
            "http"
        };
        let mut ng = Nginx {
            port,
            addr: format!("{scheme}://127.0.0.1:{port}"),
            ca_cert: ca,
            child,
            tempdir,
        };
        let deadline = Instant::now() + READY_TIMEOUT;
        let sa: SocketAddr = ([127, 0, 0, 1], port).into();
        loop {
            if let Ok(Some(status)) = ng.child.try_wait() {
                return Err(format!(
                    "nginx exited early ({status}); stderr:\n{}\nerror.log:\n{}",
                    fs::read_to_string(&stderr_path).unwrap_or_default(),
                    ng.error_log()
                ));
            }
            if TcpStream::connect_timeout(&sa, Duration::from_millis(200)).is_ok() {
                return Ok(ng);
            }
            if Instant::now() > deadline {
                stop_child(&mut ng.child, false);
                return Err(format!("nginx not listening on {port}"));
            }
            thread::sleep(Duration::from_millis(10));
        }
    }

    /// GET `path` (no special headers).
    pub fn get(&self, path: &str) -> HttpResponse {
        self.request("GET", path, &[], None)
    }

    /// Arbitrary request; panics on transport errors.
    pub fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&[u8]>,
    ) -> HttpResponse {
        http_request(
            &self.addr,
            method,
            path,
            headers,
            body,
            self.ca_cert.as_deref(),
        )
        .unwrap_or_else(|e| {
            panic!(
                "{method} {}{path} failed: {e}\nerror.log:\n{}",
                self.addr,
                self.error_log()
            )
        })
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        stop_child(&mut self.child, true);
    }
}

// ---------------------------------------------------------------------------
// Raw fault-injecting servers
// ---------------------------------------------------------------------------

/// A TCP server on 127.0.0.1 that answers every connection with fixed bytes
/// (after reading the request head) and then closes. Runs in a background
/// thread for at most 30 s, or until dropped.
pub struct RawServer {
    /// `http://127.0.0.1:PORT`
    pub addr: String,
    pub port: u16,
    stop: Arc<AtomicBool>,
    conns: Arc<AtomicUsize>,
    handle: Option<JoinHandle<()>>,
}

enum RawMode {
    Reply(Vec<u8>),
    Hang,
}

impl RawServer {
    /// Answers every request with `hello there\r\n\r\n` (not HTTP), then closes.
    pub fn garbage() -> RawServer {
        Self::reply(b"hello there\r\n\r\n".to_vec())
    }

    /// Sends a response head promising 100 bytes, 3 bytes of body, then closes.
    pub fn close_mid_response() -> RawServer {
        Self::reply(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nabc".to_vec())
    }

    /// Answers every request with `bytes`, then closes.
    pub fn reply(bytes: Vec<u8>) -> RawServer {
        Self::spawn(RawMode::Reply(bytes))
    }

    /// Accepts connections and never answers (holds them until dropped).
    pub fn silent() -> RawServer {
        Self::spawn(RawMode::Hang)
    }

    /// Number of connections accepted so far.
    pub fn connections(&self) -> usize {
        self.conns.load(Ordering::SeqCst)
    }

    fn spawn(mode: RawMode) -> RawServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let conns = Arc::new(AtomicUsize::new(0));
        let mode = Arc::new(mode);
        let (stop2, conns2) = (stop.clone(), conns.clone());
        let handle = thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(30);
            let mut workers = Vec::new();
            while !stop2.load(Ordering::SeqCst) && Instant::now() < deadline {
                match listener.accept() {
                    Ok((stream, _)) => {
                        conns2.fetch_add(1, Ordering::SeqCst);
                        let mode = mode.clone();
                        let stop3 = stop2.clone();
                        workers.push(thread::spawn(move || {
                            raw_handle(stream, &mode, &stop3, deadline)
                        }));
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        thread::sleep(Duration::from_millis(5));
                    }
                    Err(_) => thread::sleep(Duration::from_millis(5)),
                }
            }
            stop2.store(true, Ordering::SeqCst);
            for w in workers {
                let _ = w.join();
            }
        });
        RawServer {
            addr: format!("http://127.0.0.1:{port}"),
            port,
            stop,
            conns,
            handle: Some(handle),
        }
    }
}

fn raw_handle(mut s: TcpStream, mode: &RawMode, stop: &AtomicBool, deadline: Instant) {
    let _ = s.set_nonblocking(false);
    let _ = s.set_read_timeout(Some(Duration::from_millis(100)));
    let _ = s.set_nodelay(true);
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    // Serve requests until the peer closes (a Reply closes after one).
    loop {
        // Read one request head (best effort).
        let head_deadline = Instant::now() + Duration::from_secs(5);
        loop {
            if stop.load(Ordering::SeqCst) || Instant::now() > deadline {
                return;
            }
            if buf.windows(4).any(|w| w == b"\r\n\r\n") {
                break;
            }
            match s.read(&mut chunk) {
                Ok(0) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
                Err(e)
                    if e.kind() == io::ErrorKind::WouldBlock
                        || e.kind() == io::ErrorKind::TimedOut =>
                {
                    if let RawMode::Reply(_) = mode
                        && Instant::now() > head_deadline
                    {
                        break;
                    }
                }
                Err(_) => return,
            }
        }
        match mode {
            RawMode::Reply(bytes) => {
                let _ = s.write_all(bytes);
                let _ = s.flush();
                let _ = s.shutdown(Shutdown::Write);
                // Drain briefly so the close is a FIN, not an RST.
                let end = Instant::now() + Duration::from_millis(200);
                while Instant::now() < end {
                    match s.read(&mut chunk) {
                        Ok(0) => break,
                        Ok(_) => {}
                        Err(e)
                            if e.kind() == io::ErrorKind::WouldBlock
                                || e.kind() == io::ErrorKind::TimedOut => {}
                        Err(_) => break,
                    }
                }
                return;
            }
            RawMode::Hang => {
                // Hold the connection, discarding input.
                buf.clear();
            }
        }
    }
}

impl Drop for RawServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

// ---------------------------------------------------------------------------
// Tiny blocking HTTP/1.1 client (plain or TLS)
// ---------------------------------------------------------------------------

/// A parsed HTTP response.
#[derive(Debug, Clone)]
pub struct HttpResponse {
    pub status: u16,
    /// Header (name, value) pairs in order; names as sent.
    pub headers: Vec<(String, String)>,
    /// Body, de-chunked.
    pub body: Vec<u8>,
    /// Whether the body was sent with `Transfer-Encoding: chunked`.
    pub chunked: bool,
}

impl HttpResponse {
    /// First header value with this name (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

trait Stream: Read + Write {}
impl<T: Read + Write> Stream for T {}

fn tls_config(ca_cert: Option<&Path>) -> io::Result<Arc<rustls::ClientConfig>> {
    let mut roots = rustls::RootCertStore::empty();
    if let Some(ca) = ca_cert {
        let pem = fs::read(ca)?;
        for c in rustls_pemfile::certs(&mut &pem[..]) {
            roots
                .add(c?)
                .map_err(|e| io::Error::other(format!("bad CA cert {}: {e}", ca.display())))?;
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let cfg = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(io::Error::other)?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(cfg))
}

/// One blocking HTTP/1.1 request to `base` (`http://host:port` or
/// `https://host:port`; TLS trusts only `ca_cert`). The connection is
/// keep-alive style (no `Connection: close` sent) and is dropped afterwards;
/// the response is framed by Content-Length, chunked encoding, or EOF.
pub fn http_request(
    base: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&[u8]>,
    ca_cert: Option<&Path>,
) -> io::Result<HttpResponse> {
    let (tls, hostport) = if let Some(r) = base.strip_prefix("https://") {
        (true, r.trim_end_matches('/'))
    } else if let Some(r) = base.strip_prefix("http://") {
        (false, r.trim_end_matches('/'))
    } else {
        return Err(io::Error::other(format!("bad base URL {base}")));
    };
    let host = hostport
        .rsplit_once(':')
        .map(|(h, _)| h)
        .unwrap_or(hostport)
        .trim_matches(|c| c == '[' || c == ']')
        .to_string();
    let tcp = TcpStream::connect(hostport)?;
    tcp.set_read_timeout(Some(Duration::from_secs(10)))?;
    tcp.set_write_timeout(Some(Duration::from_secs(10)))?;
    tcp.set_nodelay(true)?;
    let mut stream: Box<dyn Stream> = if tls {
        let name = rustls::pki_types::ServerName::try_from(host.clone())
            .map_err(|e| io::Error::other(format!("bad server name {host}: {e}")))?;
        let conn =
            rustls::ClientConnection::new(tls_config(ca_cert)?, name).map_err(io::Error::other)?;
        Box::new(rustls::StreamOwned::new(conn, tcp))
    } else {
        Box::new(tcp)
    };
    let mut req = format!("{method} {path} HTTP/1.1\r\nHost: {hostport}\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    if let Some(b) = body {
        req.push_str(&format!("Content-Length: {}\r\n", b.len()));
    } else if matches!(method, "POST" | "PUT" | "PATCH") {
        req.push_str("Content-Length: 0\r\n");
    }
    req.push_str("\r\n");
    let mut bytes = req.into_bytes();
    if let Some(b) = body {
        bytes.extend_from_slice(b);
    }
    stream.write_all(&bytes)?;
    stream.flush()?;
    read_response(&mut BufReader::new(stream), method == "HEAD")
}

fn read_line(r: &mut impl BufRead) -> io::Result<String> {
    let mut line = String::new();
    let n = r.read_line(&mut line)?;
    if n == 0 {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "connection closed while reading response",
        ));
    }
    Ok(line.trim_end_matches(['\r', '\n']).to_string())
}

fn read_response(r: &mut impl BufRead, head_only: bool) -> io::Result<HttpResponse> {
    let status_line = read_line(r)?;
    let mut parts = status_line.splitn(3, ' ');
    let version = parts.next().unwrap_or("");
    if !version.starts_with("HTTP/1.") {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("bad status line {status_line:?}"),
        ));
    }
    let status: u16 = parts
        .next()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "bad status code"))?;
    let mut headers = Vec::new();
    loop {
        let line = read_line(r)?;
        if line.is_empty() {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            headers.push((k.trim().to_string(), v.trim().to_string()));
        }
    }
    let mut resp = HttpResponse {
        status,
        headers,
        body: Vec::new(),
        chunked: false,
    };
    if head_only || status == 204 || status == 304 || (100..200).contains(&status) {
        return Ok(resp);
    }
    let chunked = resp
        .header("Transfer-Encoding")
        .is_some_and(|v| v.to_ascii_lowercase().contains("chunked"));
    if chunked {
        resp.chunked = true;
        loop {
            let size_line = read_line(r)?;
            let size_hex = size_line.split(';').next().unwrap_or("").trim();
            let size = usize::from_str_radix(size_hex, 16).map_err(|_| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("bad chunk size {size_line:?}"),
                )
            })?;
            if size == 0 {
                // Trailers until empty line.
                while !read_line(r)?.is_empty() {}
                break;
            }
            let start = resp.body.len();
            resp.body.resize(start + size, 0);
            r.read_exact(&mut resp.body[start..])?;
            let crlf = read_line(r)?;
            if !crlf.is_empty() {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "missing CRLF after chunk",
                ));
            }
        }
    } else if let Some(cl) = resp.header("Content-Length") {
        let n: usize = cl
            .parse()
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "bad Content-Length"))?;
        resp.body.resize(n, 0);
        r.read_exact(&mut resp.body)?;
    } else {
        // Read until EOF; tolerate a TLS peer closing without close_notify.
        match r.read_to_end(&mut resp.body) {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {}
            Err(e) => return Err(e),
        }
    }
    Ok(resp)
}
