//! `vblast sweep`'s flags (the run's flags, plus the range, the steps and the objective),
//! checked into a `Plan` before anything is sent: a range upside down, an objective that
//! does not parse or a step shorter than its warm-up is one message and exit 2.

use std::time::Duration;

use clap::Args;
use serde::{Deserialize, Serialize};

use crate::cli::{Format, RunArgs};
use crate::report::Model;
use crate::scenario::{Load, Scenario};
use crate::schedule::Schedule;
use crate::units::{parse_duration, show_duration};

use super::objective::{self, Objective};
use super::search::{Resolution, Search};

/// Connections of a rate sweep when -c is not given: enough for the open model to offer
/// thousands of requests per second to a server answering in milliseconds.
pub const DEFAULT_SWEEP_CONNECTIONS: &str = "100";

#[derive(Args, Debug)]
#[command(mut_arg("connections", |a| a
    .default_value(DEFAULT_SWEEP_CONNECTIONS)
    .long("connections")
    .help("Rate sweeps: the open connections every step uses (concurrency sweeps: --concurrency)")))]
#[command(mut_arg("rate", |a| a
    .help("Open model: the range of target rates, FROM..TO req/s (corrected latency)")
    .value_name("FROM..TO")))]
pub struct SweepArgs {
    #[command(flatten)]
    pub run: RunArgs,

    /// Closed model: the range of connections, FROM..TO (each step's connections).
    #[arg(long = "concurrency", value_name = "FROM..TO", conflicts_with = "rate")]
    pub concurrency: Option<String>,

    /// How long each step is measured, after its warm-up.
    #[arg(long, default_value = "20s", value_parser = parse_duration)]
    pub step_duration: Duration,

    /// Load before each step's measurement, left out of its figures.
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    pub step_warmup: Duration,

    /// Steps of the coarse pass, geometrically spaced from FROM to TO (both included).
    #[arg(long, default_value_t = 6)]
    pub steps: usize,

    /// When the bisection after the coarse pass stops: a percentage of the load (5%) or a
    /// whole number of req/s or connections (250).
    #[arg(long, default_value = "5%")]
    pub resolution: String,

    /// A step failing with more errors than this (10% or 0.1) ends the sweep at once.
    #[arg(long, default_value = "10%")]
    pub max_error_ratio: String,

    /// Objective, repeatable: p50|p90|p99|p999=DURATION, success=PERCENT, rate=PERCENT
    /// (rate sweeps always bound the achieved rate: 2% under the offered unless given).
    #[arg(long = "slo", value_name = "OBJECTIVE")]
    pub slo: Vec<String>,
}

/// What a sweep was asked to do; saved with it, and all `vblast report` needs to render it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Spec {
    /// Open: rate steps; closed: concurrency steps.
    pub model: Model,
    pub from: u64,
    pub to: u64,
    pub steps: usize,
    pub resolution: String,
    pub max_error_ratio: f64,
    pub objectives: Vec<Objective>,
    pub step_duration_s: f64,
    pub step_warmup_s: f64,
    /// Rate sweeps: the open connections of every step.
    pub connections: Option<u64>,
    pub target: String,
    pub operation: String,
}

impl Spec {
    /// What a load is counted in.
    pub fn unit(&self) -> &'static str {
        match self.model {
            Model::Open => "req/s",
            Model::Closed => "connections",
        }
    }

    pub fn search(&self) -> Result<Search, String> {
        Search::new(
            self.from,
            self.to,
            self.steps,
            Resolution::parse(&self.resolution)?,
        )
        .map_err(String::from)
    }
}

/// A checked sweep.
#[derive(Debug)]
pub struct Plan {
    pub scenario: Scenario,
    pub spec: Spec,
}

/// "500..20000" into whole numbers.
fn parse_range(flag: &str, text: &str) -> Result<(u64, u64), String> {
    let bad =
        || format!("{flag} {text}: give a range FROM..TO of whole numbers, e.g. {flag} 500..20000");
    let (a, b) = text.split_once("..").ok_or_else(bad)?;
    let a: u64 = a.trim().parse().map_err(|_| bad())?;
    let b: u64 = b.trim().parse().map_err(|_| bad())?;
    if a == 0 {
        return Err(format!("{flag} {text}: the range must start at 1 or more"));
    }
    if a >= b {
        return Err(format!(
            "{flag} {text}: the range is upside down or empty: FROM must be below TO"
        ));
    }
    Ok((a, b))
}

/// "10%" or "0.1" as a fraction in (0, 1].
fn parse_ratio(text: &str) -> Result<f64, String> {
    let t = text.trim();
    let v = match t.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|v| v / 100.0),
        None => t.parse::<f64>(),
    }
    .map_err(|_| {
        format!("--max-error-ratio {text}: give a percentage (10%) or a fraction (0.1)")
    })?;
    if !(v.is_finite() && v > 0.0 && v <= 1.0) {
        return Err(format!(
            "--max-error-ratio {text}: must be above 0 and at most 100%"
        ));
    }
    Ok(v)
}

impl SweepArgs {
    /// The sweep these flags describe, checked; nothing is sent before this succeeds.
    pub fn plan(&mut self) -> Result<Plan, String> {
        let r = &self.run;
        if r.list_ops {
            return Err("--list-ops is vblast --list-ops, not a sweep".into());
        }
        for (given, flag) in [
            (r.requests.is_some(), "-n"),
            (r.duration.is_some(), "-z"),
            (r.warmup.is_some(), "--warmup"),
            (r.ramp.is_some(), "--ramp"),
        ] {
            if given {
                return Err(format!(
                    "{flag} does not go with sweep: each step lasts --step-duration after --step-warmup"
                ));
            }
        }
        let (model, (from, to)) = match (&r.rate, &self.concurrency) {
            (Some(rate), None) => (Model::Open, parse_range("--rate", rate)?),
            (None, Some(c)) => (Model::Closed, parse_range("--concurrency", c)?),
            _ => {
                return Err(
                    "give the range to sweep: --rate FROM..TO (open model) or --concurrency FROM..TO (closed model)"
                        .into(),
                );
            }
        };
        if model == Model::Open {
            Schedule::Constant { rate: to as f64 }
                .validate()
                .map_err(|e| format!("--rate {}: {e}", r.rate.as_deref().unwrap_or("")))?;
        }
        if self.step_duration.is_zero() {
            return Err("--step-duration must be longer than zero".into());
        }
        if self.step_duration < self.step_warmup {
            return Err(format!(
                "--step-duration {} is shorter than --step-warmup {}: a step is measured after its warm-up, and should be at least as long",
                show_duration(self.step_duration),
                show_duration(self.step_warmup)
            ));
        }
        let resolution = self.resolution.trim().to_string();
        Search::new(from, to, self.steps, Resolution::parse(&resolution)?)?;
        let max_error_ratio = parse_ratio(&self.max_error_ratio)?;
        let objectives = objective::objectives(&self.slo, model == Model::Open)?;
        let o = &r.out;
        if !matches!(o.format, Format::Text | Format::Json) {
            return Err("sweep prints --format text or json".into());
        }
        if o.latency || o.hgrm.is_some() || o.ab_csv.is_some() || o.hlog.is_some() {
            return Err(
                "--latency, --hgrm, --ab-csv and --hlog are for single runs: a sweep saves every step with its histograms in --output".into(),
            );
        }
        // The run's own checks, on the largest load a step will put up (layout, -c).
        // The range is not a -R or -c of its own: taken out for the check, then put back.
        let connections = r.connections;
        let rate = self.run.rate.take();
        if model == Model::Closed {
            self.run.connections = to;
        }
        let scenario = self.run.scenario();
        self.run.rate = rate;
        self.run.connections = connections;
        let r = &self.run;
        let mut scenario = scenario.map_err(|e| e.to_string())?;
        // A sweep searches one edge of one target; over nodes in turn its steps would
        // judge every node's figures as one, and find no node's edge.
        if scenario
            .cluster
            .as_ref()
            .is_some_and(|c| c.mode == crate::cluster::NodesMode::Each)
        {
            return Err(
                "--nodes each does not go with sweep: a sweep finds the edge of one target, and each node has its own; sweep each node on its own (`vblast sweep --address NODE ... --output NODE.json`, one per node) and put them side by side with `vblast compare NODE1.json NODE2.json`"
                    .into(),
            );
        }
        // The engine measures `duration` after `warmup` (as `-z` after `--warmup`).
        scenario.load.duration = Some(self.step_duration);
        scenario.load.warmup = self.step_warmup;
        scenario.load.requests = None;
        let spec = Spec {
            model,
            from,
            to,
            steps: self.steps,
            resolution,
            max_error_ratio,
            objectives,
            step_duration_s: self.step_duration.as_secs_f64(),
            step_warmup_s: self.step_warmup.as_secs_f64(),
            connections: (model == Model::Open).then_some(r.connections),
            target: String::new(),
            operation: String::new(),
        };
        Ok(Plan { scenario, spec })
    }
}

impl Plan {
    /// The load of one step at `load` req/s or connections.
    pub fn load_for(&self, load: u64) -> Load {
        let mut l = self.scenario.load.clone();
        match self.spec.model {
            Model::Open => l.schedule = Some(Schedule::Constant { rate: load as f64 }),
            Model::Closed => {
                l.connections = load;
                l.schedule = None;
            }
        }
        l
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::{CommandFactory, Parser};

    fn sweep(args: &[&str]) -> Result<Plan, String> {
        let mut v = vec!["vblast", "sweep", "--op", "kv-read"];
        v.extend_from_slice(args);
        match Cli::try_parse_from(v).map_err(|e| e.to_string())?.command {
            Some(Command::Sweep(mut a)) => a.plan(),
            _ => Err("not a sweep".into()),
        }
    }

    #[test]
    fn the_command_line_is_consistent() {
        // clap's own checks (names, shorts, conflicts), which release builds skip.
        Cli::command().debug_assert();
    }

    #[test]
    fn plans_and_refusals() {
        let p = sweep(&["--rate", "500..20000", "--slo", "p99=20ms"]).unwrap();
        assert_eq!(
            (p.spec.from, p.spec.to, p.spec.model),
            (500, 20000, Model::Open)
        );
        assert_eq!(p.spec.connections, Some(100), "the sweep's default -c");
        assert_eq!(p.scenario.load.duration, Some(Duration::from_secs(20)));
        assert_eq!(p.scenario.load.warmup, Duration::from_secs(2));
        assert_eq!(
            p.load_for(700).schedule,
            Some(Schedule::Constant { rate: 700.0 })
        );
        let p = sweep(&["--concurrency", "10..200", "--slo", "p50=5ms", "-c", "7"]).unwrap();
        assert_eq!(p.spec.model, Model::Closed);
        assert_eq!(p.spec.connections, None);
        assert_eq!(p.load_for(42).connections, 42);
        assert!(p.load_for(42).schedule.is_none());
        for (args, why) in [
            (&["--rate", "9..3", "--slo", "p99=1s"][..], "upside down"),
            (&["--rate", "0..3", "--slo", "p99=1s"], "at 1 or more"),
            (&["--concurrency", "1..3"], "give an objective"),
            (
                &["--rate", "1..3", "--slo", "p99=1s", "--format", "ab"],
                "text or json",
            ),
            (
                &["--rate", "1..3", "--slo", "p99=1s", "--hgrm", "x"],
                "single runs",
            ),
            (
                &["--rate", "1..3", "--slo", "p99=1s", "--step-duration", "0s"],
                "longer than zero",
            ),
            (&["--rate", "1..30000000", "--slo", "p99=1s"], "--rate"),
        ] {
            let e = sweep(args).unwrap_err();
            assert!(e.contains(why), "{args:?}: {e}");
        }
        assert!(sweep(&["--rate", "1..3", "--concurrency", "1..3", "--slo", "p99=1s"]).is_err());
    }
}
