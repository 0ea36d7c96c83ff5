//! OpenBao dev servers (in-memory, unsealed, root token "root"; plain or `-dev-tls`) on
//! private loopback ports, their blocking API, SIGSTOP/SIGCONT to freeze one, and what a
//! run leaves on a server (its mounts, auth paths and policies). Each server is killed by
//! its pid when its handle is dropped.

use std::fs;
use std::io;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::client::http_request;
use super::ports::free_port_pair;
use super::process::{READY_TIMEOUT, find_in_path, signal, stop_child, wait_stopped};
use super::vblast::scrub_env;

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
    /// The server's home, log and certificates; removed when the handle is dropped.
    _tempdir: tempfile::TempDir,
}

impl OpenBao {
    /// Plain-HTTP dev server.
    pub fn start() -> OpenBao {
        Self::start_inner(false, None)
    }

    /// Plain-HTTP dev server with `hcl` as an extra configuration file (`-config`).
    pub fn start_with_config(hcl: &str) -> OpenBao {
        Self::start_inner(false, Some(hcl))
    }

    /// Dev server with `-dev-tls`; `ca_cert` points at the generated CA.
    pub fn start_tls() -> OpenBao {
        Self::start_inner(true, None)
    }

    /// `start_tls` with `hcl` as an extra configuration file (`-config`).
    pub fn start_tls_with_config(hcl: &str) -> OpenBao {
        Self::start_inner(true, Some(hcl))
    }

    /// Plain-HTTP dev server on 127.0.0.1:`port` (and `port`+1 for its cluster address):
    /// for a private network namespace, where the port is known to be free.
    pub fn start_on_port(port: u16) -> OpenBao {
        Self::try_start(false, None, Some(port))
            .unwrap_or_else(|e| panic!("OpenBao dev server did not start:\n{e}"))
    }

    fn start_inner(tls: bool, config: Option<&str>) -> OpenBao {
        let mut last_err = String::new();
        // Retry a couple of times in case another process grabbed our port
        // (or port+1) between choosing it and the server binding it.
        for _ in 0..3 {
            match Self::try_start(tls, config, None) {
                Ok(b) => return b,
                Err(e) => last_err = e,
            }
        }
        panic!("OpenBao dev server did not start:\n{last_err}");
    }

    fn try_start(tls: bool, config: Option<&str>, port: Option<u16>) -> Result<OpenBao, String> {
        let bin = bao_binary();
        let tempdir = tempfile::Builder::new()
            .prefix("vblast-bao-")
            .tempdir()
            .expect("tempdir");
        let port = port.unwrap_or_else(free_port_pair);
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
        if let Some(hcl) = config {
            let file = tempdir.path().join("extra.hcl");
            fs::write(&file, hcl).expect("write the extra config");
            cmd.arg(format!("-config={}", file.display()));
        }
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
            _tempdir: tempdir,
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

    /// Enables a file audit device `by-hand` writing to `log` (the server's own record of
    /// what it served; its config must allow `unsafe_allow_api_audit_creation`).
    pub fn audit_to_file(&self, log: &std::path::Path) {
        let device = format!(
            r#"{{"type":"file","options":{{"file_path":"{}"}}}}"#,
            log.display()
        );
        let (status, body) = self.api("PUT", "/v1/sys/audit/by-hand", Some(&device));
        assert!(status < 300, "{body}");
    }

    /// Disables the audit device of `audit_to_file`.
    pub fn audit_off(&self) {
        let (status, body) = self.api("DELETE", "/v1/sys/audit/by-hand", None);
        assert!(status < 300, "{body}");
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

/// All mounts on the server: (path without trailing slash, JSON description).
pub fn mounts(bao: &OpenBao) -> Vec<(String, Value)> {
    let (status, body) = bao.api("GET", "/v1/sys/mounts", None);
    assert_eq!(status, 200, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    v["data"]
        .as_object()
        .expect("sys/mounts data")
        .iter()
        .map(|(k, d)| (k.trim_end_matches('/').to_string(), d.clone()))
        .collect()
}

/// What a run must leave on the server as it found it, the one snapshot every test takes:
/// the mounts, the auth paths, the ACL policies, the identity entities (the server makes
/// one for each identity that logs in, and disabling the auth path leaves it unless vblast
/// deletes it) and groups, the tokens (by their accessors) and the root token's cubbyhole.
/// Every list is sorted, so two snapshots compare with `==`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerState {
    pub mounts: Vec<String>,
    pub auth: Vec<String>,
    pub policies: Vec<String>,
    pub entities: Vec<String>,
    pub groups: Vec<String>,
    pub tokens: usize,
    pub cubbyhole: Vec<String>,
}

impl ServerState {
    /// The server's state now.
    pub fn of(bao: &OpenBao) -> ServerState {
        ServerState {
            // (without their trailing slash, as `mounts` gives them)
            mounts: keys(bao, "/v1/sys/mounts")
                .into_iter()
                .map(|m| m.trim_end_matches('/').to_string())
                .collect(),
            auth: keys(bao, "/v1/sys/auth"),
            policies: keys(bao, "/v1/sys/policies/acl?list=true"),
            entities: keys(bao, "/v1/identity/entity/id?list=true"),
            groups: keys(bao, "/v1/identity/group/id?list=true"),
            tokens: keys(bao, "/v1/auth/token/accessors?list=true").len(),
            cubbyhole: keys(bao, "/v1/cubbyhole/?list=true"),
        }
    }

    /// The server's state once it equals `want`, or as it is after 30 s: a token revoked
    /// with its parent, or by its mount's removal, can leave the accessor list a moment after
    /// the answer on a busy server.
    pub fn settled(bao: &OpenBao, want: &ServerState) -> ServerState {
        let until = std::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            let now = ServerState::of(bao);
            if &now == want || std::time::Instant::now() >= until {
                return now;
            }
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
    }

    /// The fixtures alone (mounts, auth paths, policies): what a shared fixture must hold
    /// while it outlives the shards that use it (the entities, groups and tokens their
    /// logins made go with the auth path, at the shared cleanup).
    pub fn fixtures(&self) -> ServerState {
        ServerState {
            mounts: self.mounts.clone(),
            auth: self.auth.clone(),
            policies: self.policies.clone(),
            entities: Vec::new(),
            groups: Vec::new(),
            tokens: 0,
            cubbyhole: Vec::new(),
        }
    }
}

/// A GET of `path` as JSON; Null for a 404 (an empty LIST); any other status fails the test.
pub fn get_json(bao: &OpenBao, path: &str) -> Value {
    let (status, body) = bao.api("GET", path, None);
    if status == 404 {
        return Value::Null;
    }
    assert_eq!(status, 200, "{path}: {body}");
    serde_json::from_str(&body).unwrap()
}

/// The sorted keys of an answer's `data`: its `keys` list, or its object's keys.
pub fn data_keys(v: &Value) -> Vec<String> {
    let mut k: Vec<String> = match &v["data"] {
        Value::Object(m) if m.contains_key("keys") => m["keys"]
            .as_array()
            .expect("data.keys is a list")
            .iter()
            .map(|k| k.as_str().unwrap_or_default().to_string())
            .collect(),
        Value::Object(m) => m.keys().cloned().collect(),
        _ => Vec::new(),
    };
    k.sort();
    k
}

/// `data_keys` of a GET of `path`.
pub fn keys(bao: &OpenBao, path: &str) -> Vec<String> {
    data_keys(&get_json(bao, path))
}

/// The tokens on the server: the accessors that name one (`lookup-accessor` 200). An
/// accessor left by a token creation the server cut short (its client gone) names none,
/// and is said on stderr.
pub fn live_tokens(bao: &OpenBao) -> u64 {
    let (st, body) = bao.api("LIST", "/v1/auth/token/accessors", None);
    assert_eq!(st, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    let mut live = 0;
    for a in v["data"]["keys"].as_array().into_iter().flatten() {
        let req = serde_json::json!({ "accessor": a }).to_string();
        let (st, body) = bao.api("POST", "/v1/auth/token/lookup-accessor", Some(&req));
        if st == 200 {
            live += 1;
        } else {
            eprintln!("an accessor that names no token ({st}): {body}");
        }
    }
    live
}

/// `ServerState::of`: what a run must leave as it found it.
pub fn server_state(bao: &OpenBao) -> ServerState {
    ServerState::of(bao)
}

/// `ServerState::fixtures` of a snapshot.
pub fn fixtures_only(s: ServerState) -> ServerState {
    s.fixtures()
}

/// The mounts a vblast run created (named `vblast-...`), without trailing slash.
pub fn vblast_mounts(bao: &OpenBao) -> Vec<String> {
    mounts(bao)
        .into_iter()
        .map(|(k, _)| k)
        .filter(|k| k.starts_with("vblast-"))
        .collect()
}
