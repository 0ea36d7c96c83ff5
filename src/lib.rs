//! vblast: a load generator for HashiCorp Vault and OpenBao, as a library of parts: the
//! command line (`cli`) describes a `scenario`; a `session` sets it up on the server, runs
//! load steps through the `engine` (in this process or over worker processes:
//! `orchestrate`) and removes what it created; `stats` are merged losslessly and rendered
//! by `report`; Vault operations live in a registry (`vault::ops`); `error` holds the one
//! error type and the exit statuses.

pub mod ab_cli;
pub mod ab_run;
pub mod ab_tls;
pub mod capture;
pub mod cli;
pub mod cli_ops;
pub mod cluster;
pub mod compare;
pub mod engine;
pub mod error;
pub mod fixtures;
pub mod http;
pub mod live;
pub mod metrics;
pub mod nodes;
pub mod orchestrate;
pub mod pacing;
pub mod redirect;
pub mod report;
pub mod report_command;
pub mod results;
pub mod run;
pub mod scenario;
pub mod schedule;
pub mod session;
pub mod shard;
pub mod signals;
pub mod source_addrs;
pub mod stats;
pub mod sweep;
pub mod sys;
pub mod target;
pub mod template;
pub mod timer;
pub mod tls;
pub mod tlsio;
pub mod transport;
pub mod units;
pub mod url_request;
pub mod vault;
pub mod vault_benchmark_cli;
pub mod vbconfig;
pub mod workload;

use error::{Ending, exit_status};
use signals::Stop;

/// The whole program: parses the command line, runs the command, prints the one error
/// message if any, and returns the exit status.
pub fn main() -> i32 {
    let cli = cli::parse_from(std::env::args_os()).unwrap_or_else(|e| e.exit());
    let stop = Stop::new();
    if let Err(e) = stop.install(cli.worker) {
        eprintln!("vblast: {e}");
        return error::EXIT_BAD_INPUT;
    }
    if cli.worker {
        return orchestrate::worker::main(&stop);
    }
    if let Some(cli::Command::Ab(args)) = &cli.command {
        return ab_run::main(&args.args, &stop);
    }
    let mut cli = cli;
    let ending = match &mut cli.command {
        None => run::run(&cli.run, &stop),
        Some(cli::Command::Run(args)) => run::run(args, &stop),
        Some(cli::Command::Report(args)) => report_command::run(args),
        Some(cli::Command::Compare(args)) => compare::run(args),
        Some(cli::Command::Sweep(args)) => sweep::run(args, &stop),
        Some(cli::Command::Ab(_)) => Ending::Ok,
        Some(cli::Command::VaultBenchmark(args)) => vault_benchmark_cli::run(&args.args, &stop),
        Some(cli::Command::Setup(args)) => fixtures::command(args, &stop, false),
        Some(cli::Command::Cleanup(args)) => fixtures::command(args, &stop, true),
    };
    if let Ending::Failed(e) = &ending {
        eprintln!("vblast: {e}");
    }
    exit_status(&ending)
}
