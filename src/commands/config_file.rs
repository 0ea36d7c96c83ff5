//! A vault-benchmark file under a command line: the one place that decides, for every
//! setting such a file can give, which layer wins (a flag given on the command line, then
//! Vault's environment variables, then the file), for `vblast run --config FILE` and for
//! `vblast vault-benchmark run` alike. Which flags were given comes from clap's value
//! sources (`Given`) or from vault-benchmark's own flags; a default is not given.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::config::scenario::OpChoice;
use crate::error::Error;
use crate::results::deliver::OutputFormat;
use crate::vbconfig::{VbConfig, load, load_cluster};

use super::env;

/// What a command line gives of the settings a vault-benchmark file also gives: None (or
/// empty, or false) where it gives nothing, so that the environment, then the file decide.
#[derive(Clone, Debug, Default)]
pub struct Asked {
    /// Addresses given (`--address`, `-vault_addr`).
    pub addresses: Vec<String>,
    /// A cluster file given (`--cluster`, `-cluster_json`).
    pub cluster: Option<PathBuf>,
    /// A token given (`--token`, `-vault_token`); `token_file` says a token file was.
    pub token: Option<String>,
    pub token_file: bool,
    pub namespace: Option<String>,
    pub ca_cert: Option<PathBuf>,
    pub duration: Option<Duration>,
    /// `-n`: a run of a count of requests takes no duration from the file.
    pub requests: Option<u64>,
    /// The open model's rate, as `-R` gives it.
    pub rate: Option<String>,
    /// The closed model asked for (vault-benchmark's `-rps=0`): the file's rps gives way.
    pub closed: bool,
    pub connections: Option<u64>,
    pub keep: bool,
    pub format: Option<OutputFormat>,
    /// `--audit-path`, `-audit_path`.
    pub audit_path: Option<PathBuf>,
    /// `--pprof-interval`, `-pprof_interval`.
    pub pprof_interval: Option<Duration>,
}

/// The settings decided: the command line's where it gave one, else the environment's,
/// else the file's. What the environment gives is left to the scenario (None here).
#[derive(Clone, Debug, Default)]
pub struct Settled {
    pub addresses: Vec<String>,
    pub cluster: Option<PathBuf>,
    pub token: Option<String>,
    pub namespace: Option<String>,
    pub ca_cert: Option<PathBuf>,
    pub duration: Option<Duration>,
    pub rate: Option<String>,
    pub connections: Option<u64>,
    pub keep: bool,
    pub format: Option<OutputFormat>,
    pub audit_path: Option<PathBuf>,
    pub pprof_interval: Option<Duration>,
    /// The file's tests, as the workload (None without a file).
    pub tests: Option<Vec<OpChoice>>,
}

/// Reads the vault-benchmark file at `path` (its notes are said once, by `settle`).
pub fn read(path: &Path) -> Result<VbConfig, Error> {
    load(path).map_err(Error::input)
}

/// Decides every setting a file can give: `asked` over the environment over `file`
/// (flags over environment over file). Without a file, `asked` as it is. The file's notes
/// go to stderr once.
pub fn settle(asked: Asked, file: Option<&VbConfig>) -> Result<Settled, Error> {
    let Some(c) = file else {
        return Ok(Settled {
            addresses: asked.addresses,
            cluster: asked.cluster,
            token: asked.token,
            namespace: asked.namespace,
            ca_cert: asked.ca_cert,
            duration: asked.duration,
            rate: asked.rate,
            connections: asked.connections,
            keep: asked.keep,
            format: asked.format,
            audit_path: asked.audit_path,
            pprof_interval: asked.pprof_interval,
            tests: None,
        });
    };
    let mut notes = c.notes.clone();
    let mut s = Settled {
        addresses: asked.addresses,
        cluster: asked.cluster,
        tests: Some(c.tests.clone()),
        ..Settled::default()
    };
    let mut file_token = c.vault_token.clone();
    let no_address = s.addresses.is_empty() && s.cluster.is_none() && env("VAULT_ADDR").is_none();
    if let Some(cluster) = &c.cluster_json {
        // Checked here for the file's own message; the nodes are read as `--cluster`'s.
        let (_, t, _) = load_cluster(cluster).map_err(Error::input)?;
        file_token = t.or(file_token);
        if no_address {
            s.cluster = Some(cluster.clone());
        }
    } else if no_address {
        s.addresses = c.vault_addr.clone().into_iter().collect();
    }
    s.token = match asked.token {
        Some(t) => Some(t),
        None if !asked.token_file && env("VAULT_TOKEN").is_none() => file_token,
        None => None,
    };
    s.namespace = asked.namespace.or_else(|| {
        env("VAULT_NAMESPACE")
            .is_none()
            .then(|| c.vault_namespace.clone())
            .flatten()
    });
    s.ca_cert = asked.ca_cert.or_else(|| {
        env("VAULT_CACERT")
            .is_none()
            .then(|| c.ca_pem_file.clone())
            .flatten()
    });
    s.duration = match (asked.duration, asked.requests) {
        (None, None) => c.duration,
        (d, _) => d,
    };
    s.rate = match asked.rate {
        Some(r) => Some(r),
        None if asked.closed => None,
        None => c.rps.map(|r| r.to_string()),
    };
    s.connections = asked.connections.or(c.workers);
    s.keep = asked.keep;
    if !s.keep && c.cleanup == Some(false) {
        s.keep = true;
        notes.push(
            "cleanup = false: what vblast creates is kept after the run (vblast removes it by default; set cleanup = true or leave it out to remove it)".into(),
        );
    }
    s.format = asked.format.or(c.report_mode.map(|m| m.format()));
    s.audit_path = asked.audit_path.or_else(|| c.audit_path.clone());
    s.pprof_interval = asked.pprof_interval.or(c.pprof_interval);
    for n in notes {
        eprintln!("vblast: note: {n}");
    }
    Ok(s)
}
