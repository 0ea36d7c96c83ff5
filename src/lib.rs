//! vblast: a load generator for HashiCorp Vault and OpenBao, as a library of parts: the
//! command line (`cli`) describes a `scenario`; a `session` sets it up on the server, runs
//! load steps through the `engine` (in this process or over worker processes:
//! `orchestrate`) and removes what it created; `stats` are merged losslessly and rendered
//! by `report`; Vault operations live in a registry (`vault::ops`); `error` holds the one
//! error type and the exit statuses.

pub mod capture;
pub mod cli;
pub mod compare;
pub mod engine;
pub mod error;
pub mod http;
pub mod live;
pub mod metrics;
pub mod orchestrate;
pub mod pacing;
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
pub mod workload;

use clap::Parser;

use error::{Ending, exit_status};
use signals::Stop;

/// The whole program: parses the command line, runs the command, prints the one error
/// message if any, and returns the exit status.
pub fn main() -> i32 {
    let cli = cli::Cli::parse();
    let stop = Stop::new();
    if let Err(e) = stop.install(cli.worker) {
        eprintln!("vblast: {e}");
        return error::EXIT_BAD_INPUT;
    }
    if cli.worker {
        return orchestrate::worker::main(&stop);
    }
    let ending = match &cli.command {
        None => run::run(&cli.run, &stop),
        Some(cli::Command::Run(args)) => run::run(args, &stop),
        Some(cli::Command::Report(args)) => report_command::run(args),
        Some(cli::Command::Compare(args)) => compare::run(args),
    };
    if let Ending::Failed(e) = &ending {
        eprintln!("vblast: {e}");
    }
    exit_status(&ending)
}
