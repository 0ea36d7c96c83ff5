//! The command line as clap structs, and nothing else: `Cli` and its subcommands here, the
//! flags grouped by concern in the files below (each group under its own heading in
//! `--help`). The commands (`crate::commands`) turn them into library values.

pub mod cleanup;
pub mod cluster;
pub mod load;
pub mod login;
pub mod metrics;
pub mod operations;
pub mod ops;
pub mod output;
pub mod profile;
pub mod replay;
pub mod report;
pub mod server;
pub mod shards;
pub mod source;
pub mod sweep;
pub mod target;
pub mod threshold;
pub mod tls;

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

pub use crate::ab::cli::AbArgs;
pub use crate::vault_benchmark::cli::VaultBenchmarkArgs;
pub use output::{OutputArgs, ShowArgs};
pub use report::{CompareArgs, ReportArgs};

const EXAMPLES: &str = "Examples:\n  vblast -c 20000 -n 20000 --op kv-read\n  vblast -c 64 -z 30s --op kv-read:80,kv-write:20 --secret-size 1024\n  vblast -R 2000 -c 100 -z 60s --op kv-read --latency --output run.json\n  vblast -c 64 -n 500000 -H \"X-Vault-Token: root\" http://127.0.0.1:8200/v1/secret/data/foo\n  vblast report shard-1.json shard-2.json\n  vblast --list-ops\n\nEnvironment: VAULT_ADDR (default http://127.0.0.1:8200), VAULT_TOKEN, VAULT_NAMESPACE,\nVAULT_CACERT, VAULT_CAPATH, VAULT_SKIP_VERIFY, VAULT_CLIENT_CERT, VAULT_CLIENT_KEY,\nVAULT_TLS_SERVER_NAME. Flags win over the environment. Prefer VAULT_TOKEN or --token-file\nto --token: a flag's value is visible to every user of the machine (ps).";

#[derive(Parser, Debug)]
#[command(
    name = "vblast",
    version,
    about = "Load generator for HashiCorp Vault and OpenBao: thread-per-core HTTP/1.1, honest latency.",
    after_help = EXAMPLES,
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,

    /// `vblast [OPTIONS]` is `vblast run [OPTIONS]`.
    #[command(flatten)]
    pub run: RunArgs,

    /// Internal: run as a worker process (protocol on stdin and stdout).
    #[arg(long, hide = true)]
    pub worker: bool,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run a load test (the default when no command is given).
    #[command(after_help = EXAMPLES)]
    Run(Box<RunArgs>),
    /// Render saved results files (--output); several files are merged into one report.
    /// `review` (vault-benchmark's word) is the same command.
    #[command(visible_alias = "review")]
    Report(ReportArgs),
    /// Saved runs side by side, with ratios against the first, and how their descriptions differ.
    Compare(CompareArgs),
    /// Right-sizing: steps of increasing load (--rate or --concurrency FROM..TO) until an
    /// objective (--slo p99=20ms) breaks; the highest load sustained within it.
    Sweep(Box<sweep::SweepArgs>),
    /// ApacheBench's command line with ab's meaning: `vblast ab -n 4000 -c 40 -k URL`
    /// (`vblast ab -h` lists the options); exit statuses vblast's, or ab's with --ab-exit.
    #[command(disable_help_flag = true, disable_version_flag = true)]
    Ab(AbArgs),
    /// vault-benchmark's command lines: `vault-benchmark run -config=FILE ...`,
    /// `vault-benchmark review -result_file=FILE ...` (its flags, its report layouts).
    #[command(name = "vault-benchmark", disable_help_flag = true)]
    VaultBenchmark(VaultBenchmarkArgs),
    /// Sets up the fixture the shards of one run share, once, for shards run with
    /// --external-setup (`--run-id ID` and the run's --op flags; names follow the run id,
    /// nothing secret is written or printed).
    Setup(Box<RunArgs>),
    /// Removes the fixture `vblast setup --run-id ID` made, or what a killed shard 0 left
    /// (same --run-id and --op flags).
    Cleanup(Box<RunArgs>),
    /// The workload of OpenBao/Vault file audit logs: rate, operation mix in vblast's names,
    /// namespaces, mounts, tokens, errors, server time, audit volume (docs/production-load.md).
    Profile(profile::ProfileArgs),
    /// Sends an audit log's requests again at their recorded instants (--speed, --scale),
    /// with the fixtures they need set up and removed (docs/production-load.md).
    Replay(Box<replay::ReplayArgs>),
}

/// A run's flags: the URL of URL mode, or a vault-benchmark file, and the groups.
#[derive(Args, Debug, Clone)]
pub struct RunArgs {
    /// URL mode: send this request (like ab, wrk, oha), with no Vault setup.
    pub url: Option<String>,

    /// A vault-benchmark HCL file, unchanged: its global keys and its tests (environment
    /// variables override the file, flags override both).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["op", "scenario"])]
    pub config: Option<PathBuf>,

    /// The operations' options given (filled after parsing from the arguments
    /// `ops::register` adds: their defaults are the registry's).
    #[arg(skip)]
    pub op_options: crate::vault::ops::OptionValues,

    #[command(flatten)]
    pub ops: operations::OperationArgs,

    #[command(flatten)]
    pub load: load::LoadArgs,

    #[command(flatten)]
    pub target: target::TargetArgs,

    #[command(flatten)]
    pub login: login::LoginArgs,

    #[command(flatten)]
    pub cluster: cluster::ClusterArgs,

    #[command(flatten)]
    pub tls: tls::TlsArgs,

    #[command(flatten)]
    pub request: operations::RequestArgs,

    #[command(flatten)]
    pub out: OutputArgs,

    #[command(flatten)]
    pub show: ShowArgs,

    #[command(flatten)]
    pub shard: shards::ShardArgs,

    #[command(flatten)]
    pub metrics: metrics::MetricsArgs,

    #[command(flatten)]
    pub source: source::SourceArgs,

    #[command(flatten)]
    pub cleanup: cleanup::CleanupArgs,

    #[command(flatten)]
    pub server: server::ServerArgs,

    #[command(flatten)]
    pub thresholds: threshold::ThresholdArgs,
}
