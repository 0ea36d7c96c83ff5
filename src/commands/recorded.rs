//! `--workload FILE` with `--speed` and `--scale`, for `vblast run` and `vblast sweep`: the
//! flags read once, the workload file read and checked (`profile::workload_file`), its
//! notes said on stderr, and the run it describes with the operations' options it implies
//! (as many secrets seeded as the log's busiest kv mount had distinct paths, unless
//! `--secrets` is given).

use crate::cli::RunArgs;
use crate::error::{Cause, Error};
use crate::profile::workload_file::{self, Factor, RecordedRun};
use crate::vault::ops::{OptionValue, OptionValues};

/// Most secrets a workload's run seeds on its own (`--secrets` gives more).
pub const MAX_SEEDED: u64 = 100_000;

/// A workload file's run and the options its operations are built with.
pub struct Recorded {
    pub run: RecordedRun,
    pub options: OptionValues,
}

/// `--speed` (1 when not given).
pub fn speed(args: &RunArgs) -> Result<Factor, Error> {
    factor("--speed", args.load.speed.as_deref())
}

fn factor(flag: &str, text: Option<&str>) -> Result<Factor, Error> {
    text.map_or(Ok(Factor::ONE), |t| Factor::parse(flag, t))
        .map_err(Error::input)
}

/// The run of `--workload` at `--speed` and `scale` (a run's `--scale`; a sweep passes
/// 1 and scales each step); None without `--workload`.
pub fn resolve(args: &RunArgs, scale: Option<&str>) -> Result<Option<Recorded>, Error> {
    let Some(path) = &args.load.workload else {
        return Ok(None);
    };
    let speed = speed(args)?;
    let scale = factor("--scale", scale)?;
    let file = workload_file::read(path).map_err(|e| Error::input(Cause::from(e)))?;
    let run = file
        .plan(speed, scale, |n| crate::vault::ops::find(n).is_some())
        .map_err(|e| Error::input(e.within(format!("the workload file {}", path.display()))))?;
    for n in &run.notes {
        eprintln!("vblast: note: {n}");
    }
    let mut options = args.op_options.clone();
    if !options.is_given("secrets")
        && let Some(n) = run.secrets
    {
        if n > MAX_SEEDED {
            eprintln!(
                "vblast: note: the log read {n} distinct paths on a kv mount: {MAX_SEEDED} secrets are seeded (--secrets {n} seeds them all)"
            );
        }
        // "secrets" is an option of the registry: `set` cannot refuse it.
        let _ = options.set("secrets", OptionValue::Number(n.min(MAX_SEEDED)));
    }
    Ok(Some(Recorded { run, options }))
}
