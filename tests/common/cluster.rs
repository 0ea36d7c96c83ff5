//! A real OpenBao HA cluster for the tests: a private PostgreSQL (never the system
//! service) holding the storage and the HA lock, and two or three `bao server` nodes on
//! loopback ports sharing it, initialised once and unsealed each. Every process started
//! here is stopped by its pid when the handle is dropped, and the temporary directory goes
//! with it.

use std::fs;
use std::io;
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use super::{READY_TIMEOUT, bao_binary, http_request, scrub_env, signal, stop_child};

/// Tables the PostgreSQL storage backend uses (OpenBao's default names). OpenBao creates
/// them itself when they are missing; the harness creates them first, as an operator
/// following the storage documentation would, so a backend that does not create them
/// works too.
const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS openbao_kv_store (
  parent_path TEXT COLLATE \"C\" NOT NULL,
  path        TEXT COLLATE \"C\",
  key         TEXT COLLATE \"C\",
  value       BYTEA,
  CONSTRAINT pkey PRIMARY KEY (path, key)
);
CREATE INDEX IF NOT EXISTS parent_path_idx ON openbao_kv_store (parent_path);
CREATE TABLE IF NOT EXISTS openbao_ha_locks (
  ha_key      TEXT COLLATE \"C\" NOT NULL,
  ha_identity TEXT COLLATE \"C\" NOT NULL,
  ha_value    TEXT COLLATE \"C\",
  valid_until TIMESTAMP WITH TIME ZONE NOT NULL,
  CONSTRAINT ha_key PRIMARY KEY (ha_key)
);
";

/// Directory of PostgreSQL's server programs (initdb, postgres, psql).
fn pg_bin_dir() -> PathBuf {
    let mut found: Vec<PathBuf> = fs::read_dir("/usr/lib/postgresql")
        .map(|rd| rd.flatten().map(|e| e.path().join("bin")).collect())
        .unwrap_or_default();
    found.retain(|p| p.join("initdb").is_file());
    found.sort();
    found.pop().unwrap_or_else(|| {
        panic!(
            "PostgreSQL not found under /usr/lib/postgresql: run tools/deps.sh (Debian postgresql)"
        )
    })
}

/// PostgreSQL refuses to run as root: the `postgres` account's uid and gid then.
fn pg_identity() -> Option<(u32, u32)> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return None;
    }
    let name = std::ffi::CString::new("postgres").unwrap();
    // SAFETY: getpwnam with a valid C string; the result is read at once.
    let pw = unsafe { libc::getpwnam(name.as_ptr()) };
    assert!(
        !pw.is_null(),
        "running as root and there is no `postgres` account to run PostgreSQL as"
    );
    // SAFETY: pw is non-null and points at libc's static passwd record.
    unsafe { Some(((*pw).pw_uid, (*pw).pw_gid)) }
}

fn as_pg(cmd: &mut Command, id: Option<(u32, u32)>) {
    if let Some((uid, gid)) = id {
        cmd.uid(uid).gid(gid);
    }
}

/// `count` ports from P on, every one of them free (nodes take P, P+2, ...; their cluster
/// listeners P+1, P+3, ...).
fn free_port_run(count: u16) -> u16 {
    for _ in 0..1000 {
        let p = super::random_listen_port();
        if p.checked_add(count)
            .is_none_or(|e| e >= super::LISTEN_PORTS.end)
        {
            continue;
        }
        let held: Vec<_> = (p..p + count)
            .map_while(|q| TcpListener::bind(("127.0.0.1", q)).ok())
            .collect();
        if held.len() == count as usize {
            return p;
        }
    }
    panic!("could not find {count} consecutive free ports on 127.0.0.1");
}

/// One `bao server` of the cluster.
pub struct Node {
    /// `http://127.0.0.1:PORT`
    pub addr: String,
    pub port: u16,
    child: Option<Child>,
    log_path: PathBuf,
}

/// A private PostgreSQL and the OpenBao nodes sharing it.
pub struct Cluster {
    pub nodes: Vec<Node>,
    /// The root token from `bao operator init`.
    pub token: String,
    unseal_key: String,
    pg: Child,
    pub pg_port: u16,
    dir: tempfile::TempDir,
}

impl Cluster {
    /// Starts PostgreSQL and `n` nodes, initialises the cluster, unseals every node and
    /// waits for one active node and `n - 1` standbys.
    pub fn start(n: usize) -> Cluster {
        let dir = tempfile::Builder::new()
            .prefix("vblast-ha-")
            .tempdir()
            .expect("tempdir");
        let id = pg_identity();
        let pgdata = dir.path().join("pg");
        fs::create_dir_all(&pgdata).unwrap();
        if let Some((uid, gid)) = id {
            for p in [dir.path(), pgdata.as_path()] {
                std::os::unix::fs::chown(p, Some(uid), Some(gid)).expect("chown to postgres");
            }
        }
        let bin = pg_bin_dir();
        let mut init = Command::new(bin.join("initdb"));
        init.args(["-A", "trust", "-U", "postgres", "-E", "UTF8", "-D"])
            .arg(&pgdata)
            .current_dir(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        as_pg(&mut init, id);
        let out = init.output().expect("run initdb");
        assert!(
            out.status.success(),
            "initdb failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let pg_port = super::free_port();
        let pg_log = fs::File::create(dir.path().join("pg.log")).unwrap();
        if let Some((uid, gid)) = id {
            std::os::unix::fs::chown(dir.path().join("pg.log"), Some(uid), Some(gid)).unwrap();
        }
        let mut cmd = Command::new(bin.join("postgres"));
        cmd.arg("-D")
            .arg(&pgdata)
            .arg("-p")
            .arg(pg_port.to_string())
            .arg("-k")
            .arg(&pgdata)
            .args(["-c", "listen_addresses=127.0.0.1", "-c", "fsync=off"])
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(pg_log.try_clone().unwrap())
            .stderr(pg_log);
        as_pg(&mut cmd, id);
        let pg = cmd.spawn().expect("start postgres");
        let mut cluster = Cluster {
            nodes: Vec::new(),
            token: String::new(),
            unseal_key: String::new(),
            pg,
            pg_port,
            dir,
        };
        cluster.wait_pg(&bin);
        let psql = Command::new(bin.join("psql"))
            .args([
                "-h",
                "127.0.0.1",
                "-p",
                &pg_port.to_string(),
                "-U",
                "postgres",
            ])
            .args(["-v", "ON_ERROR_STOP=1", "-q", "-c", SCHEMA])
            .output()
            .expect("run psql");
        assert!(
            psql.status.success(),
            "creating the storage tables failed: {}",
            String::from_utf8_lossy(&psql.stderr)
        );
        let base = free_port_run(2 * n as u16);
        for i in 0..n {
            let port = base + 2 * i as u16;
            let node = cluster.spawn_node(i, port);
            cluster.nodes.push(node);
        }
        cluster.init();
        for i in 0..n {
            cluster.unseal(i);
        }
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            let states: Vec<Option<u16>> = (0..n).map(|i| cluster.health(i)).collect();
            let active = states.iter().filter(|s| **s == Some(200)).count();
            let standby = states.iter().filter(|s| **s == Some(429)).count();
            if active == 1 && standby == n - 1 {
                return cluster;
            }
            assert!(
                Instant::now() < deadline,
                "cluster not ready after {READY_TIMEOUT:?}: sys/health {states:?}\n{}",
                cluster.logs()
            );
            thread::sleep(Duration::from_millis(50));
        }
    }

    fn wait_pg(&mut self, bin: &Path) {
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            let ok = Command::new(bin.join("pg_isready"))
                .args(["-h", "127.0.0.1", "-p", &self.pg_port.to_string()])
                .stdout(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if ok {
                return;
            }
            if let Ok(Some(st)) = self.pg.try_wait() {
                panic!("postgres exited ({st}): {}", self.pg_log());
            }
            assert!(
                Instant::now() < deadline,
                "postgres not ready: {}",
                self.pg_log()
            );
            thread::sleep(Duration::from_millis(50));
        }
    }

    fn pg_log(&self) -> String {
        fs::read_to_string(self.dir.path().join("pg.log")).unwrap_or_default()
    }

    fn spawn_node(&self, i: usize, port: u16) -> Node {
        let config = format!(
            r#"storage "postgresql" {{
  connection_url = "postgres://postgres@127.0.0.1:{pg}/postgres?sslmode=disable"
  ha_enabled = "true"
}}
listener "tcp" {{
  address = "127.0.0.1:{port}"
  cluster_address = "127.0.0.1:{cport}"
  tls_disable = true
}}
api_addr = "http://127.0.0.1:{port}"
cluster_addr = "https://127.0.0.1:{cport}"
disable_mlock = true
"#,
            pg = self.pg_port,
            cport = port + 1,
        );
        let cfg = self.dir.path().join(format!("node{i}.hcl"));
        fs::write(&cfg, config).unwrap();
        let log_path = self.dir.path().join(format!("node{i}.log"));
        let log = fs::File::create(&log_path).unwrap();
        let mut cmd = Command::new(bao_binary());
        scrub_env(&mut cmd);
        cmd.arg("server")
            .arg("-config")
            .arg(&cfg)
            .env("HOME", self.dir.path())
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log);
        let child = cmd.spawn().expect("start bao server");
        let node = Node {
            addr: format!("http://127.0.0.1:{port}"),
            port,
            child: Some(child),
            log_path,
        };
        let deadline = Instant::now() + READY_TIMEOUT;
        while !super::wait_for_port(port, Instant::now() + Duration::from_millis(200)) {
            assert!(
                Instant::now() < deadline,
                "node {i} did not listen: {}",
                fs::read_to_string(&node.log_path).unwrap_or_default()
            );
        }
        node
    }

    fn bao(&self, i: usize, args: &[&str]) -> String {
        let mut cmd = Command::new(bao_binary());
        scrub_env(&mut cmd);
        let out = cmd
            .args(args)
            .env("VAULT_ADDR", &self.nodes[i].addr)
            .env("HOME", self.dir.path())
            .output()
            .expect("run bao");
        assert!(
            out.status.success(),
            "bao {args:?} failed: {}\n{}",
            String::from_utf8_lossy(&out.stderr),
            self.logs()
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn init(&mut self) {
        let out = self.bao(
            0,
            &[
                "operator",
                "init",
                "-key-shares=1",
                "-key-threshold=1",
                "-format=json",
            ],
        );
        let v: serde_json::Value = serde_json::from_str(&out).expect("init output is JSON");
        self.token = v["root_token"].as_str().expect("root_token").to_string();
        self.unseal_key = v["unseal_keys_b64"][0]
            .as_str()
            .expect("unseal key")
            .to_string();
    }

    /// `bao operator unseal` on node `i`.
    pub fn unseal(&self, i: usize) {
        let key = self.unseal_key.clone();
        self.bao(i, &["operator", "unseal", &key]);
    }

    /// Status of node `i`'s `sys/health` (200 active, 429 standby, 503 sealed), None when
    /// it does not answer.
    pub fn health(&self, i: usize) -> Option<u16> {
        http_request(
            &self.nodes[i].addr,
            "GET",
            "/v1/sys/health",
            &[],
            None,
            None,
        )
        .ok()
        .map(|r| r.status)
    }

    /// Index of the node answering `sys/health` with 200, if one does.
    pub fn active(&self) -> Option<usize> {
        (0..self.nodes.len()).find(|&i| self.health(i) == Some(200))
    }

    /// Waits (up to `limit`) for an active node other than `not`.
    pub fn wait_active(&self, not: Option<usize>, limit: Duration) -> Option<usize> {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if let Some(a) = self.active()
                && Some(a) != not
            {
                return Some(a);
            }
            thread::sleep(Duration::from_millis(50));
        }
        None
    }

    /// A request to node `i` with the root token; (status, body).
    pub fn api(&self, i: usize, method: &str, path: &str, body: Option<&str>) -> (u16, String) {
        self.try_api(i, method, path, body)
            .unwrap_or_else(|e| panic!("{method} {path} on node {i}: {e}"))
    }

    pub fn try_api(
        &self,
        i: usize,
        method: &str,
        path: &str,
        body: Option<&str>,
    ) -> io::Result<(u16, String)> {
        let mut headers = vec![("X-Vault-Token", self.token.as_str())];
        if body.is_some() {
            headers.push(("Content-Type", "application/json"));
        }
        let r = http_request(
            &self.nodes[i].addr,
            method,
            path,
            &headers,
            body.map(str::as_bytes),
            None,
        )?;
        Ok((r.status, r.text()))
    }

    /// SIGKILL node `i` (no goodbye to the cluster) and reap it.
    pub fn kill(&mut self, i: usize) {
        if let Some(c) = self.nodes[i].child.as_mut() {
            let pid = c.id();
            signal(pid, libc::SIGKILL);
            let _ = c.wait();
        }
        self.nodes[i].child = None;
    }

    pub fn pid(&self, i: usize) -> Option<u32> {
        self.nodes[i].child.as_ref().map(Child::id)
    }

    /// Node `i`'s log so far.
    pub fn log(&self, i: usize) -> String {
        fs::read_to_string(&self.nodes[i].log_path).unwrap_or_default()
    }

    /// Every node's log, for failure messages.
    pub fn logs(&self) -> String {
        (0..self.nodes.len())
            .map(|i| format!("--- node {i} ({}) ---\n{}", self.nodes[i].addr, self.log(i)))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The addresses, comma-separated (as `VAULT_ADDR` takes them).
    pub fn addrs(&self) -> Vec<String> {
        self.nodes.iter().map(|n| n.addr.clone()).collect()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for n in &mut self.nodes {
            if let Some(c) = n.child.as_mut() {
                stop_child(c, true);
            }
        }
        // SIGINT: PostgreSQL's fast shutdown (its children go with it).
        if let Ok(None) = self.pg.try_wait() {
            signal(self.pg.id(), libc::SIGINT);
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline && matches!(self.pg.try_wait(), Ok(None)) {
                thread::sleep(Duration::from_millis(20));
            }
            stop_child(&mut self.pg, false);
        }
    }
}
