//! `vblast profile`: the audit logs to read and how to show their workload.

use std::path::PathBuf;

use clap::Args;

use crate::profile::render::ProfileFormat;

#[derive(Args, Debug)]
pub struct ProfileArgs {
    /// OpenBao or Vault file audit logs (JSON lines; plain or gzip'd, rotated ones in any
    /// order: they are read by the time of their first entry).
    #[arg(required = true, value_name = "AUDIT_LOG")]
    pub files: Vec<PathBuf>,

    /// What to print on standard output.
    #[arg(long, value_enum, default_value = "text")]
    pub format: ProfileFormat,

    /// Also save the profile as one self-contained HTML page (the rate over time, the mix).
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,

    /// Print the most frequent unmapped paths themselves, not only their shapes (a path
    /// may name a secret: off by default).
    #[arg(long)]
    pub show_paths: bool,

    /// Also write a workload file: the mix in vblast's operations (those it cannot run
    /// listed apart), the rate curve, the fixture sizes and the namespaces, for
    /// `vblast run --workload FILE` and `vblast sweep --workload FILE`.
    #[arg(long, value_name = "FILE")]
    pub workload: Option<PathBuf>,
}
