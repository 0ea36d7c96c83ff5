//! vblast: a load generator for HashiCorp Vault and OpenBao.

mod cli;
mod engine;
mod http;
mod pacing;
mod procs;
mod report;
mod results;
mod run;
mod schedule;
mod stats;
mod target;
mod template;
mod timer;
mod tls;
mod tlsio;
mod transport;
mod vault;
mod workload;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use clap::Parser;

fn main() {
    let cli = cli::Cli::parse();
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let worker = cli.worker;
    // Ctrl-C stops the run; the report is still printed and created mounts removed.
    // A second Ctrl-C gives up at once.
    let _ = ctrlc::set_handler(move || {
        if flag.swap(true, Ordering::SeqCst) {
            std::process::exit(run::EXIT_INTERRUPTED);
        }
        if !worker {
            eprintln!("\nvblast: stopping (Ctrl-C again to quit at once)");
        }
    });
    let code = if worker {
        procs::worker_main(&stop)
    } else {
        run::main(cli, stop)
    };
    std::process::exit(code);
}
