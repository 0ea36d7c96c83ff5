//! `--config FILE`: a vault-benchmark file fills in what the flags and the environment leave
//! open (flags over environment over file), the report format included.

use std::path::Path;

use crate::cli::RunArgs;
use crate::vbconfig::{load, load_cluster};

use super::Given;
use super::env;

/// `args` with the file's values where neither a flag nor the environment gives one
/// (flags over environment over file), and the file's tests as the workload. Notes go to
/// stderr once.
pub fn merge(args: &RunArgs, given: Given, path: &Path) -> Result<RunArgs, String> {
    if args.ops.op.is_some() || args.ops.scenario.is_some() || args.url.is_some() {
        return Err("--config gives the tests: leave out --op, --scenario and the URL".into());
    }
    let c = load(path).map_err(|e| e.to_string())?;
    let mut notes = c.notes.clone();
    let mut m = args.clone();
    m.config = None;
    let (addr, mut token) = (c.vault_addr.clone(), c.vault_token.clone());
    let no_address =
        m.target.address.is_empty() && m.cluster.cluster.is_none() && env("VAULT_ADDR").is_none();
    if let Some(cluster) = &c.cluster_json {
        // Checked here for the file's own message; the nodes are read by `--cluster`.
        let (_, t, _) = load_cluster(cluster).map_err(|e| e.to_string())?;
        token = t.or(token);
        if no_address {
            m.cluster.cluster = Some(cluster.clone());
        }
    } else if no_address {
        m.target.address = addr.into_iter().collect();
    }
    if m.target.token.is_none() && m.target.token_file.is_none() && env("VAULT_TOKEN").is_none() {
        m.target.token = token;
    }
    if m.target.namespace.is_none() && env("VAULT_NAMESPACE").is_none() {
        m.target.namespace = c.vault_namespace.clone();
    }
    if m.tls.ca_cert.is_none() && env("VAULT_CACERT").is_none() {
        m.tls.ca_cert = c.ca_pem_file.clone();
    }
    if m.load.duration.is_none() && m.load.requests.is_none() {
        m.load.duration = c.duration;
    }
    if m.load.rate.is_none()
        && !given.flag("rate")
        && let Some(r) = c.rps
    {
        m.load.rate = Some(r.to_string());
    }
    if !given.flag("connections")
        && let Some(w) = c.workers
    {
        m.load.connections = w;
    }
    if !m.ops.keep && c.cleanup == Some(false) {
        m.ops.keep = true;
        notes.push(
            "cleanup = false: what vblast creates is kept after the run (vblast removes it by default; set cleanup = true or leave it out to remove it)".into(),
        );
    }
    if !given.flag("format")
        && let Some(mode) = c.report_mode
    {
        m.out.format = mode.format();
    }
    m.preset_ops = Some(c.tests);
    for n in notes {
        eprintln!("vblast: note: {n}");
    }
    Ok(m)
}
