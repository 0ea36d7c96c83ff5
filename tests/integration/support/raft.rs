//! A raft cluster started by `tools/raft-cluster.sh` (the script operators use, tested
//! here): N `bao server` nodes on loopback with integrated storage, initialised, unsealed
//! and joined; or with the last nodes left unjoined. Dropped: the script stops the nodes
//! by the pids it recorded and removes its directory.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::openbao::bao_binary;
use super::vblast::{scrub_env, vblast};

pub struct RaftCluster {
    dir: PathBuf,
    pub addrs: Vec<String>,
    pub token: String,
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tools/raft-cluster.sh")
}

impl RaftCluster {
    /// `n` nodes, every one joined.
    pub fn start(n: usize) -> RaftCluster {
        Self::start_unjoined(n, 0)
    }

    /// `n` nodes, the last `unjoined` started but not unsealed (not joined yet).
    pub fn start_unjoined(n: usize, unjoined: usize) -> RaftCluster {
        let dir = tempfile::Builder::new()
            .prefix("vblast-raft-script-")
            .tempdir()
            .expect("tempdir")
            .keep();
        Self::start_in(n, unjoined, dir)
    }

    /// `n` nodes keeping their data in `dir` (absent or empty; the script removes it when
    /// the cluster is dropped), the last `unjoined` not joined yet.
    pub fn start_in(n: usize, unjoined: usize, dir: PathBuf) -> RaftCluster {
        let mut cmd = Command::new(script());
        scrub_env(&mut cmd);
        let out = cmd
            .arg(n.to_string())
            .arg(&dir)
            .env("VBLAST_BAO", bao_binary())
            .env("UNJOINED", unjoined.to_string())
            .output()
            .expect("run tools/raft-cluster.sh");
        let c = RaftCluster {
            addrs: std::fs::read_to_string(dir.join("addrs"))
                .unwrap_or_default()
                .lines()
                .map(str::to_string)
                .collect(),
            token: std::fs::read_to_string(dir.join("root-token")).unwrap_or_default(),
            dir,
        };
        assert!(
            out.status.success() && c.addrs.len() == n,
            "tools/raft-cluster.sh {n} failed:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        c
    }

    /// The nodes' `bao server` pids, in the nodes' order (for `--server-pid`).
    pub fn pids(&self) -> Vec<u32> {
        std::fs::read_to_string(self.dir.join("pids"))
            .unwrap_or_default()
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect()
    }

    /// `bao ARGS` against node `i` with the root token; whether it succeeded.
    pub fn bao(&self, i: usize, args: &[&str]) -> bool {
        let mut cmd = Command::new(bao_binary());
        scrub_env(&mut cmd);
        cmd.args(args)
            .env("VAULT_ADDR", &self.addrs[i])
            .env("VAULT_TOKEN", &self.token)
            .env("HOME", &self.dir)
            .output()
            .is_ok_and(|o| o.status.success())
    }

    pub fn seal(&self, i: usize) {
        assert!(self.bao(i, &["operator", "seal"]), "sealing node {i}");
    }

    /// Unseals node `i` (an unjoined node joins with it).
    pub fn unseal(&self, i: usize) -> bool {
        let key = std::fs::read_to_string(self.dir.join("unseal-key")).unwrap_or_default();
        self.bao(i, &["operator", "unseal", &key])
    }

    /// vblast against every node (`--address` each), with the root token and `args`.
    pub fn vblast(&self, args: &[&str]) -> Command {
        let mut cmd = vblast();
        cmd.env("VAULT_TOKEN", &self.token).args(args);
        for a in &self.addrs {
            cmd.arg("--address").arg(a);
        }
        cmd
    }
}

impl Drop for RaftCluster {
    fn drop(&mut self) {
        let _ = Command::new(script()).arg("stop").arg(&self.dir).output();
    }
}
