//! vblast: a load generator for HashiCorp Vault and OpenBao, in layers (docs/design.md):
//! the command line (`cli`, clap structs only); one thin file per command (`commands`),
//! which turns the flags into a `config::scenario::Scenario` once; below them the library:
//! a `session` sets a scenario up on the server, runs load steps through the `engine` (in
//! this process or over worker processes: `orchestrate`) and removes what it created;
//! `stats` are merged losslessly, kept in `results` files and rendered by `report`; Vault
//! operations live in a registry (`vault::ops`); `net` is the wire; `error` holds the one
//! error type and the exit statuses. Nothing imports upward (tools/check-layers.sh).

pub mod ab;
pub mod capture;
pub mod cli;
pub mod commands;
pub mod compare;
pub mod config;
pub mod engine;
pub mod error;
pub mod metrics;
pub mod net;
pub mod orchestrate;
pub mod pacing;
pub mod packed;
pub mod profile;
pub mod redact;
pub mod replay;
pub mod report;
pub mod results;
pub mod server_stats;
pub mod session;
pub mod signals;
pub mod stats;
pub mod sweep;
pub mod sys;
pub mod template;
pub mod threshold;
pub mod timer;
pub mod vault;
pub mod vault_benchmark;
pub mod workload;

use error::{Ending, exit_status};
use signals::Stop;

/// The whole program: parses the command line, runs the command, prints the one error
/// message if any, and returns the exit status.
pub fn main() -> i32 {
    let (cli, matches) = commands::parse_from(std::env::args_os()).unwrap_or_else(|e| e.exit());
    let given = commands::Given::by(commands::command_matches(&matches));
    let stop = Stop::new();
    if let Err(e) = stop.install(cli.worker) {
        eprintln!("vblast: {e}");
        return error::EXIT_BAD_INPUT;
    }
    if cli.worker {
        return commands::worker::run(&stop);
    }
    if let Some(cli::Command::Ab(args)) = &cli.command {
        return ab::command::main(&args.args, &stop);
    }
    let mut cli = cli;
    let ending = match &mut cli.command {
        None => commands::run::run(&cli.run, given, &stop),
        Some(cli::Command::Run(args)) => commands::run::run(args, given, &stop),
        Some(cli::Command::Report(args)) => commands::report::run(args),
        Some(cli::Command::Compare(args)) => commands::compare::run(args),
        Some(cli::Command::Sweep(args)) => commands::sweep::run(args, given, &stop),
        Some(cli::Command::Ab(_)) => Ending::Ok,
        Some(cli::Command::VaultBenchmark(args)) => {
            vault_benchmark::command::run(&args.args, &stop)
        }
        Some(cli::Command::Setup(args)) => commands::fixture::run(args, given, &stop, false),
        Some(cli::Command::Cleanup(args)) => commands::fixture::run(args, given, &stop, true),
        Some(cli::Command::Profile(args)) => commands::profile::run(args, &stop),
        Some(cli::Command::Replay(args)) => commands::replay::run(args, &stop),
    };
    if let Ending::Failed(e) = &ending {
        eprintln!("vblast: {e}");
    }
    exit_status(&ending)
}

#[cfg(test)]
mod layers {
    /// Runs one of tools/'s checks and fails with what it printed.
    fn check_passes(script: &str) {
        let script = format!("{}/tools/{script}", env!("CARGO_MANIFEST_DIR"));
        let out = std::process::Command::new("bash")
            .arg(&script)
            .output()
            .expect("bash runs");
        assert!(
            out.status.success(),
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// docs/design.md: no module naming one its layer table puts above it, no cycle between
    /// the top-level modules, no `cli::` below the commands.
    #[test]
    fn the_layer_check_passes() {
        check_passes("check-layers.sh");
    }

    /// Issue 35, item 10: the check reads the layer table of a design document and fails
    /// on a module that names one the table puts above it, though no cycle forms; on a
    /// module the table leaves out; and, on a copy of src/ with one upward `use` added
    /// (the base naming Vault's layer), against docs/design.md itself.
    #[test]
    fn the_layer_check_fails_on_an_upward_import() {
        use std::path::Path;
        fn copy(from: &Path, to: &Path) {
            std::fs::create_dir_all(to).unwrap();
            for e in std::fs::read_dir(from).unwrap() {
                let e = e.unwrap();
                let dest = to.join(e.file_name());
                if e.file_type().unwrap().is_dir() {
                    copy(&e.path(), &dest);
                } else {
                    std::fs::copy(e.path(), dest).unwrap();
                }
            }
        }
        let root = env!("CARGO_MANIFEST_DIR");
        let run = |src: &Path, design: &Path| {
            let out = std::process::Command::new("bash")
                .arg(format!("{root}/tools/check-layers.sh"))
                .arg(src)
                .arg(design)
                .output()
                .expect("bash runs");
            (
                out.status.success(),
                String::from_utf8_lossy(&out.stdout).to_string(),
            )
        };
        let tmp = std::env::temp_dir().join(format!("vblast-layers-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&tmp);
        // Two layers, `high` over `low`, and `low` naming `high`: no cycle, only the order.
        let (src, design) = (tmp.join("toy"), tmp.join("design.md"));
        std::fs::create_dir_all(&src).unwrap();
        std::fs::write(
            &design,
            "| Layer | Folder / file | Its one job |\n|---|---|---|\n\
             | top | `high.rs` | above |\n| bottom | `low.rs` | below |\n| | `side.rs` | beside |\n",
        )
        .unwrap();
        std::fs::write(src.join("high.rs"), "use crate::low::f;\n").unwrap();
        std::fs::write(src.join("low.rs"), "pub fn f() {}\n").unwrap();
        std::fs::write(src.join("side.rs"), "use crate::low::f;\n").unwrap();
        let (ok, said) = run(&src, &design);
        assert!(ok, "{said}");
        std::fs::write(src.join("low.rs"), "use crate::high::g;\npub fn f() {}\n").unwrap();
        std::fs::write(src.join("high.rs"), "pub fn g() {}\n").unwrap();
        let (ok, said) = run(&src, &design);
        assert!(!ok, "{said}");
        assert!(said.contains("low.rs (bottom) names high, which"), "{said}");
        assert!(!said.contains("cycle"), "{said}");
        std::fs::write(src.join("extra.rs"), "").unwrap();
        let (ok, said) = run(&src, &design);
        assert!(
            !ok && said.contains("src/extra is not in the layer table"),
            "{said}"
        );
        // The real tree and table, with the base naming Vault's layer.
        let copied = tmp.join("src");
        copy(&Path::new(root).join("src"), &copied);
        let real_design = Path::new(root).join("docs/design.md");
        let (ok, said) = run(&copied, &real_design);
        assert!(ok, "{said}");
        let timer = copied.join("timer.rs");
        let mut text = std::fs::read_to_string(&timer).unwrap();
        text.push_str("\n#[allow(unused_imports)]\nuse crate::vault::client::Client;\n");
        std::fs::write(&timer, text).unwrap();
        let (ok, said) = run(&copied, &real_design);
        assert!(!ok, "{said}");
        assert!(
            said.contains("timer.rs (base) names vault, which"),
            "{said}"
        );
        let _ = std::fs::remove_dir_all(&tmp);
    }

    /// Issue 21, item 7: no function over 100 lines without its reason in a comment.
    #[test]
    fn no_function_is_over_100_lines_without_its_reason() {
        check_passes("check-fn-length.sh");
    }

    /// Issue 21, item 9: one meaning per type name.
    #[test]
    fn every_type_name_is_defined_once() {
        check_passes("check-type-names.sh");
    }
}
