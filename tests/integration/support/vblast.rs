//! The vblast binary under test as a `Command`: its environment scrubbed of every
//! `VAULT_*` and `BAO_*` variable, pointed at an OpenBao through the environment, in URL
//! mode, or with extra variables; its state files in a directory of the test binary's own.

use std::process::{Command, Stdio};

use super::openbao::OpenBao;

/// A `Command` for the vblast binary under test, with every `VAULT_*` and
/// `BAO_*` variable removed from its environment so tests control them.
pub fn vblast() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_vblast"));
    scrub_env(&mut cmd);
    cmd.stdin(Stdio::null());
    cmd
}

pub fn scrub_env(cmd: &mut Command) {
    for (k, _) in std::env::vars_os() {
        if let Some(k) = k.to_str()
            && (k.starts_with("VAULT_") || k.starts_with("BAO_"))
        {
            cmd.env_remove(k);
        }
    }
    // Runs' state files go to the test binary's own directory, never the user's.
    cmd.env("VBLAST_STATE_DIR", state_dir());
}

/// Where the runs of this test binary write their state files (docs/cleanup.md).
pub fn state_dir() -> std::path::PathBuf {
    std::env::temp_dir().join(format!("vblast-test-state-{}", std::process::id()))
}

/// `vblast` pointed at `bao` through the environment, with `args`.
pub fn vault_cmd(bao: &OpenBao, args: &[&str]) -> Command {
    let mut cmd = vblast();
    cmd.env("VAULT_ADDR", &bao.addr)
        .env("VAULT_TOKEN", &bao.token)
        .args(args);
    cmd
}

/// `vblast` with `args` (URL mode, or anything set up by the arguments alone).
pub fn url_cmd(args: &[&str]) -> Command {
    let mut cmd = vblast();
    cmd.args(args);
    cmd
}

/// `vblast` with `args` and the variables `env` added to its environment.
pub fn env_cmd(args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut cmd = url_cmd(args);
    cmd.envs(env.iter().copied());
    cmd
}

/// A run's arguments, built: the flags most tests give by name (`--op`, `-c`, `-n`, `-z`,
/// `-R`, `--format json`), any other with `flag` or `extra`, so that a test spells out only
/// what it varies. `Args::op("kv-read").c(8).n(200).json().vault(&bao)`.
#[derive(Clone, Debug, Default)]
pub struct Args(Vec<String>);

impl Args {
    /// `--op OP`: a Vault-mode run.
    pub fn op(op: &str) -> Args {
        Args::default().flag("--op", op)
    }

    /// `NAME VALUE`.
    pub fn flag(mut self, name: &str, value: impl ToString) -> Args {
        self.0.push(name.to_string());
        self.0.push(value.to_string());
        self
    }

    /// `-c N` connections.
    pub fn c(self, n: u64) -> Args {
        self.flag("-c", n)
    }

    /// `-n N` requests.
    pub fn n(self, n: u64) -> Args {
        self.flag("-n", n)
    }

    /// `-z DURATION`.
    pub fn z(self, duration: &str) -> Args {
        self.flag("-z", duration)
    }

    /// `-R RATE`: the open model.
    pub fn rate(self, rate: u64) -> Args {
        self.flag("-R", rate)
    }

    /// `--format json`: the report as JSON on stdout.
    pub fn json(self) -> Args {
        self.flag("--format", "json")
    }

    /// Further arguments as given.
    pub fn extra(mut self, more: &[&str]) -> Args {
        self.0.extend(more.iter().map(|a| a.to_string()));
        self
    }

    /// The arguments, as a `Command` would take them.
    pub fn list(&self) -> Vec<&str> {
        self.0.iter().map(String::as_str).collect()
    }

    /// `vblast` against `bao` with these arguments (`vault_cmd`).
    pub fn vault(&self, bao: &OpenBao) -> Command {
        vault_cmd(bao, &self.list())
    }

    /// `vblast` with these arguments and then `url` (URL mode, `url_cmd`).
    pub fn url(&self, url: &str) -> Command {
        let mut all = self.list();
        all.push(url);
        url_cmd(&all)
    }
}
