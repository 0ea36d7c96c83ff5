//! `--workload FILE` with `--speed` and `--scale`, for `vblast run` and `vblast sweep`: the
//! flags read once, the workload file read and checked (`profile::workload_file`), its
//! notes said on stderr, and the run it describes with the operations it implies (a kv
//! fixture per recorded kv mount, seeded with its distinct paths, unless `--secrets` is
//! given; a file written before mounts had their operations: as many secrets as the log's
//! busiest kv mount had distinct paths); and a run's recorded callers (`with_callers`): a session per
//! caller in its namespace, as `vblast replay` makes them (`commands::callers`).

use std::time::Duration;

use crate::cli::RunArgs;
use crate::config::scenario::{OpChoice, Scenario, Workload};
use crate::config::schedule::{Instants, Schedule};
use crate::error::{Cause, Ending, Error};
use crate::profile::workload_file::{self, Factor, MAX_SENDS, RecordedRun};
use crate::signals::Stop;
use crate::vault::ops::{OptionValue, OptionValues};

use super::callers::CallersMade;
use super::scenario::Planned;

/// Most secrets a workload's run seeds on its own (`--secrets` gives more).
pub const MAX_SEEDED: u64 = 100_000;

/// A workload file's run and the options its operations are built with.
pub struct Recorded {
    pub run: RecordedRun,
    pub options: OptionValues,
    /// `--secrets` was given: every kv fixture seeds that many.
    pub given: bool,
}

impl Recorded {
    /// The run's operations for the fixtures of the log's `namespace` ("root",
    /// `team-a/`; None: every namespace's requests go to one): with a file that has each
    /// mount's operations, one per entry of the mix, a kv one per recorded kv mount with
    /// a fixture of its own size (`callers::kv_choices`; `--secrets` given sizes them
    /// all); the mix's operations otherwise.
    pub fn choices(&self, namespace: Option<&str>) -> Result<Vec<OpChoice>, Error> {
        let base =
            crate::vault::ops::parse_mix(&self.run.mix, &self.options).map_err(Error::input)?;
        let Some(entries) = &self.run.entries else {
            return Ok(base);
        };
        let given = (self.given)
            .then(|| self.options.number("secrets"))
            .flatten();
        super::callers::kv_choices(&base, entries, &self.run.kv, namespace, given)
    }

    /// The log's namespace the run's own fixtures stand for: the root when the run sends
    /// as its callers did, every namespace otherwise.
    pub fn own_namespace(&self) -> Option<&'static str> {
        self.run.callers.as_ref().map(|_| "root")
    }
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
    if let Some(n) = run.kv.capped_note()
        && !args.op_options.is_given("secrets")
    {
        eprintln!("vblast: note: {n} (--secrets N seeds N in each)");
    }
    let options = seeding(&args.op_options, run.secrets, run.entries.is_none());
    Ok(Some(Recorded {
        run,
        options,
        given: args.op_options.is_given("secrets"),
    }))
}

/// `options` with `secrets` seeded, unless `--secrets` gave it (`say`: note a count
/// past `MAX_SEEDED`).
fn seeding(options: &OptionValues, secrets: Option<u64>, say: bool) -> OptionValues {
    let mut options = options.clone();
    if !options.is_given("secrets")
        && let Some(n) = secrets
    {
        if n > MAX_SEEDED && say {
            eprintln!(
                "vblast: note: the log read {n} distinct paths on a kv mount: {MAX_SEEDED} secrets are seeded (--secrets {n} seeds them all)"
            );
        }
        // "secrets" is an option of the registry: `set` cannot refuse it.
        let _ = options.set("secrets", OptionValue::Number(n.min(MAX_SEEDED)));
    }
    options
}

/// A run of a workload file with recorded callers: its curve placed send by send
/// (`workload_file::step_instants`), each send given its caller and operation in their
/// recorded proportions (`RunCallers::sends`), and the callers made on the server as a
/// replay makes them (a token each, the namespaces the server lacks, each other
/// namespace's fixtures seeded with its own kv mounts' distinct paths). None when the run
/// has no callers (a file without them, or only the run's token in the root), or when
/// it would place more than `MAX_SENDS` sends (said in a note).
pub fn with_callers(planned: &mut Planned, stop: &Stop) -> Result<Option<CallersMade>, Error> {
    if (planned.recorded.as_ref()).is_none_or(|r| r.run.callers.is_none()) {
        return Ok(None);
    }
    let step = &planned.scenario.load.step;
    let Some(Schedule::Steps(steps)) = &step.schedule else {
        return Ok(None);
    };
    let until = step.duration.unwrap_or(Duration::MAX);
    let most = step.requests.unwrap_or(u64::MAX).min(MAX_SENDS + 1);
    let offsets = workload_file::step_instants(steps, until, most);
    if offsets.len() as u64 > MAX_SENDS {
        eprintln!(
            "vblast: note: the run places more than {MAX_SENDS} requests: it runs without the workload's callers (every request with the run's token, in its namespace)"
        );
        return Ok(None);
    }
    let span = Duration::from_nanos(offsets.last().copied().unwrap_or(0)) + Duration::from_secs(1);
    let Some((made, sent, deck)) =
        make_callers(&planned.scenario, planned.recorded.as_ref(), span, stop)?
    else {
        return Ok(None);
    };
    let count = offsets.len() as u64;
    let schedule = Schedule::Instants(Instants {
        ops: workload_file::deal(&deck, count).into(),
        offsets: offsets.into(),
        callers: sent.callers.into(),
        request_sets: sent.request_sets.into(),
    });
    schedule
        .validate()
        .map_err(|e| Error::input(e.to_string()))?;
    let step = &mut planned.scenario.load.step;
    step.schedule = Some(schedule);
    step.requests = Some(count);
    Ok(Some(made))
}

/// A workload sweep's recorded callers, made once for every step (`with_callers`' sessions,
/// the steps' curves placed by `sweep::plan::StepCallers`); None without callers. `span`:
/// how long the sweep may last (the tokens' TTL, with an hour more).
pub fn sweep_callers(
    scenario: &Scenario,
    recorded: Option<&Recorded>,
    span: Duration,
    stop: &Stop,
) -> Result<Option<(CallersMade, crate::sweep::plan::StepCallers)>, Error> {
    Ok(
        make_callers(scenario, recorded, span, stop)?.map(|(made, sent, deck)| {
            (
                made,
                crate::sweep::plan::StepCallers {
                    callers: sent.callers,
                    request_sets: sent.request_sets,
                    deck,
                },
            )
        }),
    )
}

/// The recorded callers of `recorded` made on the server of `scenario` for a run of
/// `span`, and the deck of their sends; None when it has none.
fn make_callers(
    scenario: &Scenario,
    recorded: Option<&Recorded>,
    span: Duration,
    stop: &Stop,
) -> Result<Option<(CallersMade, super::callers::CallersSent, Vec<u16>)>, Error> {
    let Some(recorded) = recorded else {
        return Ok(None);
    };
    let Some(callers) = &recorded.run.callers else {
        return Ok(None);
    };
    if callers.folded_requests > 0 {
        eprintln!(
            "vblast: note: {} recorded requests were made by callers past the workload's bound: each is sent by its namespace's requests without a token",
            callers.folded_requests
        );
    }
    let deck = callers.deck(recorded.run.mix_len());
    let sessions = crate::replay::callers::Sessions::listed(&callers.sessions);
    let for_namespace = |ns: &str| -> Result<Scenario, Error> {
        if recorded.run.entries.is_some() {
            let mut sc = scenario.clone();
            sc.workload = Workload::Vault(recorded.choices(Some(ns))?);
            return Ok(sc);
        }
        let secrets = (recorded.run.secrets_in.iter())
            .find(|s| s.0 == ns)
            .map(|s| s.1)
            .or(recorded.run.secrets);
        let mut sc = scenario.clone();
        if secrets != recorded.run.secrets {
            let options = seeding(&recorded.options, secrets, false);
            sc.workload = Workload::Vault(
                crate::vault::ops::parse_mix(&recorded.run.mix, &options).map_err(Error::input)?,
            );
        }
        Ok(sc)
    };
    let (made, sent) = CallersMade::set_up(scenario, &sessions, span, &for_namespace, stop)?;
    Ok(Some((made, sent, deck)))
}

/// How a run with callers ended once they were removed (`removed`): a removal that failed
/// fails a run that would have exited 0, and is said otherwise.
pub fn ended(ending: Ending, removed: Option<Result<(), Error>>) -> Ending {
    match (ending, removed) {
        (Ending::Ok, Some(Err(e))) => Ending::Failed(e),
        (ending, Some(Err(e))) => {
            eprintln!("vblast: {e}");
            ending
        }
        (ending, _) => ending,
    }
}
