//! A real OpenBao HA cluster for the tests: a private PostgreSQL (never the system
//! service) holding the storage and the HA lock, and two or three `bao server` nodes on
//! loopback ports sharing it, initialised once and unsealed each; or (`start_raft`) nodes
//! with integrated storage (raft), the first initialised and unsealed, the others joining it
//! (`retry_join`) and unsealed; `start_tls`: the PostgreSQL cluster with its listeners
//! over TLS (one generated CA, `ca`), as HTTP/2 runs need (Go's server speaks h2 only by
//! ALPN). Every process started here is stopped by its pid when the
//! handle is dropped, and the temporary directory goes with it.

use std::fs;
use std::io;

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use super::client::http_request;
use super::openbao::bao_binary;
use super::ports::{free_port_run, wait_for_port};
use super::postgres::Postgres;
use super::process::{READY_TIMEOUT, signal, stop_child};
use super::vblast::scrub_env;

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

/// One `bao server` of the cluster.
pub struct Node {
    /// `http://127.0.0.1:PORT`
    pub addr: String,
    child: Option<Child>,
    log_path: PathBuf,
}

/// A private PostgreSQL and the OpenBao nodes sharing it.
pub struct Cluster {
    pub nodes: Vec<Node>,
    /// The root token from `bao operator init`.
    pub token: String,
    unseal_key: String,
    /// The storage: a private PostgreSQL (support/postgres.rs), stopped after the
    /// nodes (fields drop after `Drop::drop`); None: integrated storage (raft).
    pg: Option<Postgres>,
    /// Configuration added to every node's (a `telemetry` stanza).
    extra: String,
    /// `start_tls`: the CA the nodes' certificate is signed by (their listeners are TLS).
    pub ca: Option<PathBuf>,
    tls: Option<super::certs::TlsFiles>,
    dir: tempfile::TempDir,
}

impl Cluster {
    /// Starts PostgreSQL and `n` nodes, initialises the cluster, unseals every node and
    /// waits for one active node and `n - 1` standbys.
    pub fn start(n: usize) -> Cluster {
        Self::start_postgres(n, false, "")
    }

    /// `start`, with every node's API listener over TLS (`https://`, trusting `ca`).
    pub fn start_tls(n: usize) -> Cluster {
        Self::start_postgres(n, true, "")
    }

    /// As `start`, with `extra` added to every node's configuration.
    pub fn start_with(n: usize, extra: &str) -> Cluster {
        Self::start_postgres(n, false, extra)
    }

    fn start_postgres(n: usize, tls: bool, extra: &str) -> Cluster {
        let dir = tempfile::Builder::new()
            .prefix("vblast-ha-")
            .tempdir()
            .expect("tempdir");
        let pg = Postgres::start().expect("PostgreSQL missing: run tools/deps.sh");
        assert!(
            pg.query(SCHEMA).is_some(),
            "creating the storage tables failed"
        );
        let tls = tls.then(|| super::certs::gen_tls_files(dir.path()));
        let mut cluster = Cluster {
            nodes: Vec::new(),
            token: String::new(),
            unseal_key: String::new(),
            pg: Some(pg),
            extra: extra.to_string(),
            ca: tls.as_ref().map(|t| t.ca_cert.clone()),
            tls,
            dir,
        };
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
        cluster.wait_ready();
        cluster
    }

    /// Starts `n` nodes with integrated storage (raft): node 0 initialised and unsealed,
    /// the others joining it (`retry_join`) and unsealed; waits for one active node and
    /// `n - 1` standbys.
    pub fn start_raft(n: usize) -> Cluster {
        let dir = tempfile::Builder::new()
            .prefix("vblast-raft-")
            .tempdir()
            .expect("tempdir");
        let mut cluster = Cluster {
            nodes: Vec::new(),
            token: String::new(),
            unseal_key: String::new(),
            pg: None,
            extra: String::new(),
            ca: None,
            tls: None,
            dir,
        };
        let base = free_port_run(2 * n as u16);
        for i in 0..n {
            let node = cluster.spawn_node(i, base + 2 * i as u16);
            cluster.nodes.push(node);
        }
        cluster.init();
        cluster.unseal(0);
        assert!(
            cluster.wait_active(None, READY_TIMEOUT) == Some(0),
            "raft node 0 did not become active:\n{}",
            cluster.logs()
        );
        // Autopilot adds a joining node as a non-voter until it has been healthy for the
        // stabilisation time (10 s by default); a leader killed before then leaves no
        // quorum. Shortened here, and the start waits for every node to vote.
        let _ = cluster.try_bao(
            0,
            &[
                "operator",
                "raft",
                "autopilot",
                "set-config",
                "-server-stabilization-time=1s",
            ],
            Some(&cluster.token),
        );
        // A joining node completes its join with the unseal key (the leader's challenge is
        // sealed with it); until it has joined, an unseal may be refused: asked again.
        let deadline = Instant::now() + READY_TIMEOUT;
        for i in 1..n {
            while cluster.health(i) != Some(429) {
                let key = cluster.unseal_key.clone();
                let _ = cluster.try_bao(i, &["operator", "unseal", &key], None);
                assert!(
                    Instant::now() < deadline,
                    "raft node {i} did not join:\n{}",
                    cluster.logs()
                );
                thread::sleep(Duration::from_millis(500));
            }
        }
        cluster.wait_ready();
        loop {
            let voters = cluster
                .try_api(0, "GET", "/v1/sys/storage/raft/configuration", None)
                .ok()
                .and_then(|(_, body)| serde_json::from_str::<serde_json::Value>(&body).ok())
                .and_then(|v| {
                    v["data"]["config"]["servers"].as_array().map(|s| {
                        s.iter()
                            .filter(|x| x["voter"].as_bool() == Some(true))
                            .count()
                    })
                })
                .unwrap_or(0);
            if voters == n {
                return cluster;
            }
            assert!(
                Instant::now() < deadline + READY_TIMEOUT,
                "raft: {voters} of {n} nodes vote:\n{}",
                cluster.logs()
            );
            thread::sleep(Duration::from_millis(200));
        }
    }

    /// Waits for one active node and the others standbys.
    fn wait_ready(&self) {
        let n = self.nodes.len();
        let cluster = self;
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            let states: Vec<Option<u16>> = (0..n).map(|i| cluster.health(i)).collect();
            let active = states.iter().filter(|s| **s == Some(200)).count();
            let standby = states.iter().filter(|s| **s == Some(429)).count();
            if active == 1 && standby == n - 1 {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "cluster not ready after {READY_TIMEOUT:?}: sys/health {states:?}\n{}",
                cluster.logs()
            );
            thread::sleep(Duration::from_millis(50));
        }
    }

    fn spawn_node(&self, i: usize, port: u16) -> Node {
        let storage = match &self.pg {
            Some(pg) => format!(
                r#"storage "postgresql" {{
  connection_url = "{}?sslmode=disable"
  ha_enabled = "true"
}}"#,
                pg.url()
            ),
            // Raft: node 0 is the first leader, every node joins it; a performance
            // multiplier of 1 (production timing) rather than the default's relaxed 5.
            None => {
                let path = self.dir.path().join(format!("raft{i}"));
                fs::create_dir_all(&path).unwrap();
                let join = self.nodes.first().map_or(String::new(), |n| {
                    format!(
                        "\n  retry_join {{\n    leader_api_addr = \"{}\"\n  }}",
                        n.addr
                    )
                });
                format!(
                    r#"storage "raft" {{
  path = "{}"
  node_id = "node{i}"
  performance_multiplier = 1{join}
}}"#,
                    path.display()
                )
            }
        };
        let (scheme, tls) = match &self.tls {
            Some(t) => (
                "https",
                format!(
                    "tls_cert_file = \"{}\"\n  tls_key_file = \"{}\"",
                    t.cert.display(),
                    t.key.display()
                ),
            ),
            None => ("http", "tls_disable = true".to_string()),
        };
        let config = format!(
            r#"{storage}
listener "tcp" {{
  address = "127.0.0.1:{port}"
  cluster_address = "127.0.0.1:{cport}"
  {tls}
}}
api_addr = "{scheme}://127.0.0.1:{port}"
cluster_addr = "https://127.0.0.1:{cport}"
disable_mlock = true
{}
"#,
            self.extra,
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
            addr: format!("{scheme}://127.0.0.1:{port}"),
            child: Some(child),
            log_path,
        };
        let deadline = Instant::now() + READY_TIMEOUT;
        while !wait_for_port(port, Instant::now() + Duration::from_millis(200)) {
            assert!(
                Instant::now() < deadline,
                "node {i} did not listen: {}",
                fs::read_to_string(&node.log_path).unwrap_or_default()
            );
        }
        node
    }

    fn bao(&self, i: usize, args: &[&str]) -> String {
        self.bao_as(i, args, None)
    }

    /// `bao ARGS` against node `i`, with `token` as VAULT_TOKEN if given.
    fn bao_as(&self, i: usize, args: &[&str], token: Option<&str>) -> String {
        self.try_bao(i, args, token)
            .unwrap_or_else(|e| panic!("bao {args:?} failed: {e}\n{}", self.logs()))
    }

    /// `bao ARGS` against node `i`: its stdout, or its stderr when it failed.
    fn try_bao(&self, i: usize, args: &[&str], token: Option<&str>) -> Result<String, String> {
        let mut cmd = Command::new(bao_binary());
        scrub_env(&mut cmd);
        if let Some(t) = token {
            cmd.env("VAULT_TOKEN", t);
        }
        if let Some(ca) = &self.ca {
            cmd.env("VAULT_CACERT", ca);
        }
        let out = cmd
            .args(args)
            .env("VAULT_ADDR", &self.nodes[i].addr)
            .env("HOME", self.dir.path())
            .output()
            .expect("run bao");
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).into_owned())
        }
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
            self.ca.as_deref(),
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
            self.ca.as_deref(),
        )?;
        Ok((r.status, r.text()))
    }

    /// `bao operator seal` on node `i` (with the root token).
    pub fn seal(&self, i: usize) {
        self.bao_root(i, &["operator", "seal"]);
    }

    /// `bao operator step-down` on node `i` (with the root token): it gives up the HA lock
    /// and stays a standby.
    pub fn step_down(&self, i: usize) {
        self.bao_root(i, &["operator", "step-down"]);
    }

    fn bao_root(&self, i: usize, args: &[&str]) -> String {
        self.bao_as(i, args, Some(&self.token))
    }

    /// Waits (up to `limit`) until node `i` has a mount whose path starts with `vblast-`
    /// (a run's setup has begun there); whether it has.
    pub fn wait_for_vblast_mount(&self, i: usize, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if let Ok((200, body)) = self.try_api(i, "GET", "/v1/sys/mounts", None)
                && body.contains("\"vblast-")
            {
                return true;
            }
            thread::sleep(Duration::from_millis(100));
        }
        false
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

    /// Node `i`'s process id (while it runs).
    pub fn pid(&self, i: usize) -> u32 {
        self.nodes[i].child.as_ref().map_or(0, Child::id)
    }

    /// The PostgreSQL holding the storage (None with raft).
    pub fn pg(&self) -> Option<&Postgres> {
        self.pg.as_ref()
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
    }
}
