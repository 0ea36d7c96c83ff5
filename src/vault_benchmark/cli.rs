//! `vblast vault-benchmark`'s arguments, as given: its Go-style flags are parsed by hand
//! (`vault_benchmark::command`).

use clap::Args;

/// vault-benchmark's arguments, as given: its Go-style flags are parsed by hand
/// (`vault_benchmark::command`).
#[derive(Args, Debug)]
pub struct VaultBenchmarkArgs {
    /// run|review, then vault-benchmark's flags (-config=FILE, -report_mode=verbose, ...).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
    pub args: Vec<String>,
}
