//! One thin file per command: each turns its arguments (`crate::cli`) into library values
//! and calls the library. `scenario` is the one place where a run's flags become a
//! `Scenario` (and the other values the library takes); nothing below the commands reads a
//! flag.

pub mod ab;
pub mod ab_options;
pub mod compare;
pub mod config_file;
pub mod fixture;
pub mod report;
pub mod run;
pub mod scenario;
pub mod sweep;
pub mod vault_benchmark;
pub mod worker;

use crate::cli::{Cli, Command};

/// Parses a command line, noting which flags of `run` it gave (so that a config file's
/// values give way only to flags actually given, not to clap's defaults).
pub fn parse_from<I, T>(argv: I) -> Result<Cli, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    use clap::{CommandFactory, FromArgMatches};
    let matches = Cli::command().try_get_matches_from(argv)?;
    let mut cli = Cli::from_arg_matches(&matches)?;
    let given = |m: &clap::ArgMatches| -> Vec<String> {
        m.ids()
            .filter(|id| {
                m.value_source(id.as_str()) == Some(clap::parser::ValueSource::CommandLine)
            })
            .map(|id| id.as_str().to_string())
            .collect()
    };
    cli.run.explicit = given(&matches);
    if let (Some(Command::Run(args)), Some(("run", m))) = (&mut cli.command, matches.subcommand()) {
        args.explicit = given(m);
    }
    Ok(cli)
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
