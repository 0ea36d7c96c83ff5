//! The operations' options on the command line: one clap argument per option of the
//! registry (deduplicated by flag, under the heading "Operation options"), registered on
//! every command that runs operations (the default command, `run`, `setup`, `cleanup`,
//! `sweep`), and the matches turned into the typed `OptionValues` the families read.
//! Only a value given on the command line (or by the environment) is taken: a default
//! stays the registry's, so that it never overrides a config file's value.

use std::path::PathBuf;

use clap::parser::ValueSource;
use clap::{Arg, ArgAction, ArgMatches, Command, value_parser};

use crate::vault::ops::options::all_options;
use crate::vault::ops::{OptionKind, OptionSpec, OptionValue, OptionValues};

/// The heading of the operations' options in `--help`.
pub const HEADING: &str = "Operation options";

/// The subcommands that take operation options (besides the default command).
const COMMANDS: &[&str] = &["run", "setup", "cleanup", "sweep"];

/// `cmd` (vblast's command) with the operations' options on it and on each of its
/// subcommands that runs operations.
pub fn register(cmd: Command) -> Command {
    let mut cmd = with_options(cmd);
    for name in COMMANDS {
        if cmd.find_subcommand(name).is_some() {
            cmd = cmd.mut_subcommand(*name, with_options);
        }
    }
    cmd
}

fn with_options(mut cmd: Command) -> Command {
    for spec in all_options() {
        cmd = cmd.arg(arg_of(spec));
    }
    cmd
}

/// The clap argument of one option: its long flag, its kind's parser, its default.
fn arg_of(spec: &OptionSpec) -> Arg {
    let a = Arg::new(spec.id())
        .long(spec.flag)
        .help(spec.help)
        .help_heading(HEADING);
    let a = match spec.kind {
        OptionKind::Switch => return a.action(ArgAction::SetTrue),
        OptionKind::Number { min, max } => a.value_parser(value_parser!(u64).range(min..=max)),
        OptionKind::Count { .. } => a.value_parser(value_parser!(u64)),
        OptionKind::Bytes { .. } => a.value_parser(value_parser!(usize)),
        OptionKind::Text => a.value_parser(value_parser!(String)),
        OptionKind::Path => a.value_parser(value_parser!(PathBuf)),
    };
    let a = a
        .value_name(spec.id().to_uppercase())
        .action(ArgAction::Set);
    match spec.default {
        Some(d) => a.default_value(d),
        None => a,
    }
}

/// The options given in `m` (matches of a command `register` prepared), typed.
pub fn values(m: &ArgMatches) -> OptionValues {
    let mut out = OptionValues::new();
    for spec in all_options() {
        let id = spec.id();
        if !matches!(
            m.value_source(&id),
            Some(ValueSource::CommandLine | ValueSource::EnvVariable)
        ) {
            continue;
        }
        let v = match spec.kind {
            OptionKind::Switch => Some(OptionValue::Switch(m.get_flag(&id))),
            OptionKind::Number { .. } | OptionKind::Count { .. } => {
                m.get_one::<u64>(&id).map(|n| OptionValue::Number(*n))
            }
            OptionKind::Bytes { .. } => m
                .get_one::<usize>(&id)
                .map(|n| OptionValue::Number(*n as u64)),
            OptionKind::Text => m.get_one::<String>(&id).cloned().map(OptionValue::Text),
            OptionKind::Path => m.get_one::<PathBuf>(&id).cloned().map(OptionValue::Path),
        };
        if let Some(v) = v {
            // Every id comes from the registry: `set` cannot refuse it.
            let _ = out.set(spec.flag, v);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> OptionValues {
        let cmd = register(Command::new("t").subcommand(Command::new("run")));
        let m = cmd.try_get_matches_from(args).unwrap();
        match m.subcommand() {
            Some((_, sub)) => values(sub),
            None => values(&m),
        }
    }

    #[test]
    fn given_values_are_typed_and_defaults_stay_the_registrys() {
        let v = parse(&["t", "--secrets", "7", "--no-store", "--client-ca", "ca.pem"]);
        assert!(v.is_given("secrets") && !v.is_given("secret-size"));
        assert_eq!(v.number("secrets"), Some(7));
        assert_eq!(v.number("secret-size"), Some(100));
        assert!(v.switch("no-store"));
        assert_eq!(v.path("client-ca"), Some(PathBuf::from("ca.pem")));
        let v = parse(&["t", "run", "--kv-version", "1", "--token-ttl", "1m"]);
        assert_eq!(v.number("kv-version"), Some(1));
        assert_eq!(v.text("token-ttl").as_deref(), Some("1m"));
        assert_eq!(v.given().count(), 2);
        let cmd = register(Command::new("t"));
        let e = cmd
            .try_get_matches_from(["t", "--kv-version", "3"])
            .unwrap_err()
            .to_string();
        assert!(e.contains("3 is not in 1..=2"), "{e}");
    }
}
