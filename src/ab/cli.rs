//! `vblast ab`'s arguments, as given: ApacheBench's flags are parsed as ab parses them
//! (`ab::options`).

use clap::Args;

/// `vblast ab`'s arguments, parsed as ab parses them (src/ab/options.rs).
#[derive(Args, Debug)]
pub struct AbArgs {
    /// ab's options and URL.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
    pub args: Vec<String>,
}
