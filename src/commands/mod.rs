//! One thin file per command: each turns its arguments (`crate::cli`) into library values
//! and calls the library. `scenario` is the one place where a run's flags become a
//! `Scenario` (and the other values the library takes); nothing below the commands reads a
//! flag.

pub mod callers;
pub mod compare;
pub mod fixture;
pub mod login;
pub mod profile;
pub mod recorded;
pub mod replay;
pub mod report;
pub mod run;
pub mod scenario;
pub mod server;
pub mod sweep;
pub mod threshold;
pub mod worker;

use crate::cli::{Cli, Command};

/// Parses a command line: the clap structs, and the matches that say which flags it gave
/// (`Given`).
pub fn parse_from<I, T>(argv: I) -> Result<(Cli, clap::ArgMatches), clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    use clap::{CommandFactory, FromArgMatches};
    let matches = crate::cli::ops::register(Cli::command()).try_get_matches_from(argv)?;
    let mut cli = Cli::from_arg_matches(&matches)?;
    cli.run.op_options = crate::cli::ops::values(&matches);
    match (&mut cli.command, matches.subcommand()) {
        (Some(Command::Run(a) | Command::Setup(a) | Command::Cleanup(a)), Some((_, m))) => {
            a.op_options = crate::cli::ops::values(m);
        }
        (Some(Command::Sweep(a)), Some((_, m))) => a.run.op_options = crate::cli::ops::values(m),
        _ => {}
    }
    Ok((cli, matches))
}

/// The matches of the command's own flags: a subcommand's, or the top level's for
/// `vblast [OPTIONS]`.
pub fn command_matches(matches: &clap::ArgMatches) -> &clap::ArgMatches {
    matches.subcommand().map_or(matches, |(_, m)| m)
}

/// Reads an environment variable, treating empty as unset.
pub fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// Vault's boolean convention for VAULT_SKIP_VERIFY.
pub fn env_true(name: &str) -> bool {
    matches!(
        env(name).as_deref().map(str::to_ascii_lowercase).as_deref(),
        Some("1" | "true" | "t" | "yes" | "y")
    )
}

/// Which of a run's flags the command line gave, from clap's value sources (a default is
/// not given): what the environment and a vault-benchmark file give way to.
#[derive(Clone, Copy, Default)]
pub struct Given<'a>(Option<&'a clap::ArgMatches>);

impl<'a> Given<'a> {
    /// The flags these matches gave.
    pub fn by(matches: &'a clap::ArgMatches) -> Given<'a> {
        Given(Some(matches))
    }

    /// Whether the flag with this clap id was given on the command line.
    pub fn flag(&self, id: &str) -> bool {
        self.0.is_some_and(|m| {
            m.ids().any(|i| i.as_str() == id)
                && m.value_source(id) == Some(clap::parser::ValueSource::CommandLine)
        })
    }
}
