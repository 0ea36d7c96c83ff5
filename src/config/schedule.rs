//! Load schedules of the open model: how the target rate moves over a run (constant, a
//! linear ramp, steps), and the pure function the pacer needs from one: the intended start
//! of global request number g.
//!
//! A schedule is a rate r(t) in requests per second, piecewise linear in t and held at its
//! last value for ever. N(t), the integral of r from 0 to t, is the number of requests it
//! intends by t. Request g (g = 0, 1, 2, ... numbered over every thread of every process)
//! is intended to start at the first instant the integral reaches g:
//!
//! ```text
//! offset_of(g) = min { t >= 0 : N(t) >= g }
//! ```
//!
//! So request 0 always starts at the origin, whatever the starting rate (a ramp from 0
//! included), and request g once g whole requests' worth of rate has accumulated; for a
//! constant rate this is g / rate, as before schedules existed. Within a ramp N is a
//! quadratic, solved in closed form (no iteration over requests). The count the schedule
//! intends before t is `requests_before(t)`, the number of g with `offset_of(g) < t`,
//! computed from N(t) and made to agree exactly with `offset_of`.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Lowest non-zero rate vblast paces: one request per hour. Below it the gap between two
/// requests no longer fits a run (and at 1e-300 it overflows to infinity).
pub const MIN_RATE: f64 = 1.0 / 3600.0;
/// Highest rate: what one client could conceivably send.
pub const MAX_RATE: f64 = 10_000_000.0;
/// Longest shaped part of a schedule (a ramp's length, the steps' total): a year.
pub const MAX_SPAN: Duration = Duration::from_secs(365 * 86_400);
/// Most steps in one schedule (each request's start looks its step up).
pub const MAX_STEPS: usize = 1000;

/// How the target rate (requests per second, over the whole run) moves with time since
/// the origin of the schedule.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Schedule {
    /// The same rate throughout.
    Constant { rate: f64 },
    /// The rate moves linearly from `from` to `to` over `over`, then stays at `to`.
    Ramp { from: f64, to: f64, over: Duration },
    /// Each rate held for its duration, in order; after the last, its rate is held.
    /// A rate of 0 pauses (not allowed for the last step).
    Steps(Vec<(f64, Duration)>),
    /// Each request's own instant (`vblast replay`: a log's requests, placed by
    /// `replay::schedule`); none after the last.
    Instants(Instants),
}

/// Intended starts given one by one: request g at `offsets[g]` nanoseconds from the
/// origin, non-decreasing, and, when `ops` is not empty, as the mix's operation `ops[g]`
/// (an index into the run's weighted operations, in the mix's order) instead of one
/// picked by weight. Shared, not copied, by every thread's pacer; looked up in O(1).
///
/// With `callers` (a replay's sessions, one per recorded caller), `ops[g]` is
/// `caller * mix + op` (`mix`: the run's weighted operations): request g is sent with
/// caller `caller`'s token and namespace, caller 0 being the run's own (`callers[c - 1]`
/// is caller c), and with the requests of its namespace's fixtures (`request_sets`), when
/// it has its own. The engine builds each caller's requests once
/// (`engine::driver::Requests`).
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(from = "InstantsFile", into = "InstantsFile")]
pub struct Instants {
    pub offsets: std::sync::Arc<[u64]>,
    pub ops: std::sync::Arc<[u16]>,
    pub callers: std::sync::Arc<[Caller]>,
    /// The run's operations' requests as another namespace's fixtures make them (its
    /// own mount names, role ids), one set per namespace, in the run's operations' order.
    pub request_sets: std::sync::Arc<[Vec<crate::template::RequestSpec>]>,
}

/// Counts only: the sets' requests may hold a fixture's token.
impl std::fmt::Debug for Instants {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Instants")
            .field("offsets", &self.offsets.len())
            .field("ops", &self.ops.len())
            .field("callers", &self.callers)
            .field("request_sets", &self.request_sets.len())
            .finish()
    }
}

/// A replay's session: the token made for one recorded caller at setup (None: the run's,
/// for requests the log shows without a caller, such as logins), the namespace its
/// requests go to (None: the run's) and the set of requests it sends there (an index into
/// `Instants::request_sets`; None: the run's operations' own). Its Debug form hides the
/// token; a results file describes the instants without them (`Scenario::redacted`).
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Caller {
    #[serde(default)]
    pub token: Option<String>,
    #[serde(default)]
    pub namespace: Option<String>,
    #[serde(default)]
    pub requests: Option<usize>,
}

impl std::fmt::Debug for Caller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Caller")
            .field("token", &"<redacted>")
            .field("namespace", &self.namespace)
            .field("requests", &self.requests)
            .finish()
    }
}

/// `Instants` as saved (worker processes receive it so).
#[derive(Clone, Serialize, Deserialize)]
struct InstantsFile {
    offsets: Vec<u64>,
    #[serde(default)]
    ops: Vec<u16>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    callers: Vec<Caller>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    request_sets: Vec<Vec<crate::template::RequestSpec>>,
}

impl From<InstantsFile> for Instants {
    fn from(v: InstantsFile) -> Instants {
        Instants {
            offsets: v.offsets.into(),
            ops: v.ops.into(),
            callers: v.callers.into(),
            request_sets: v.request_sets.into(),
        }
    }
}

impl From<Instants> for InstantsFile {
    fn from(i: Instants) -> InstantsFile {
        InstantsFile {
            offsets: i.offsets.to_vec(),
            ops: i.ops.to_vec(),
            callers: i.callers.to_vec(),
            request_sets: i.request_sets.to_vec(),
        }
    }
}

impl Instants {
    /// How many offsets are below `t`.
    fn before(&self, t: Duration) -> u64 {
        let t = u64::try_from(t.as_nanos()).unwrap_or(u64::MAX);
        self.offsets.partition_point(|&o| o < t) as u64
    }

    /// The most requests in any one second from an offset (the peak rate).
    fn peak_per_second(&self) -> f64 {
        let (mut best, mut from) = (0usize, 0usize);
        for (i, &o) in self.offsets.iter().enumerate() {
            while o - self.offsets[from] >= 1_000_000_000 {
                from += 1;
            }
            best = best.max(i + 1 - from);
        }
        best as f64
    }

    /// The operation request `g` is, when the instants say.
    #[inline]
    pub fn op_of(&self, g: u64) -> Option<u16> {
        self.ops.get(usize::try_from(g).ok()?).copied()
    }
}

/// One piece of the rate function: `rate + slope * (t - start)` for `len` seconds
/// (infinite for the last piece, which is held).
#[derive(Clone, Copy, Debug)]
struct Segment {
    start: f64,
    len: f64,
    rate: f64,
    slope: f64,
}

impl Segment {
    /// Requests intended within the piece's first `dt` seconds.
    fn integral(&self, dt: f64) -> f64 {
        if dt <= 0.0 {
            return 0.0;
        }
        self.rate * dt + 0.5 * self.slope * dt * dt
    }

    /// Requests intended over the whole (finite) piece.
    fn total(&self) -> f64 {
        self.integral(self.len)
    }

    /// Seconds into the piece at which `m` more requests have accumulated: the root of
    /// slope/2 dt^2 + rate dt - m = 0, in the form that is stable for any sign of the slope
    /// and for a rate of 0 at the start. None when the rate never gets there.
    fn solve(&self, m: f64) -> Option<f64> {
        if m <= 0.0 {
            return Some(0.0);
        }
        // Never below 0 for m within the piece; rounding may take it a hair under.
        let disc = (self.rate * self.rate + 2.0 * self.slope * m).max(0.0);
        let denom = self.rate + disc.sqrt();
        if denom <= 0.0 {
            return None;
        }
        let dt = 2.0 * m / denom;
        dt.is_finite().then_some(dt)
    }
}

/// The pieces of a schedule in order, without allocating.
struct Pieces<'a> {
    schedule: &'a Schedule,
    i: usize,
    start: f64,
}

impl Iterator for Pieces<'_> {
    type Item = Segment;

    fn next(&mut self) -> Option<Segment> {
        let i = self.i;
        let start = self.start;
        let piece = match self.schedule {
            Schedule::Constant { rate } => (i == 0).then_some(Segment {
                start,
                len: f64::INFINITY,
                rate: *rate,
                slope: 0.0,
            }),
            Schedule::Ramp { from, to, over } => {
                let len = over.as_secs_f64();
                match i {
                    0 if len > 0.0 => Some(Segment {
                        start,
                        len,
                        rate: *from,
                        slope: (to - from) / len,
                    }),
                    0 | 1 => {
                        // A ramp of no length is its end rate.
                        self.i = 1;
                        Some(Segment {
                            start,
                            len: f64::INFINITY,
                            rate: *to,
                            slope: 0.0,
                        })
                    }
                    _ => None,
                }
            }
            Schedule::Steps(steps) => steps.get(i).map(|&(rate, d)| Segment {
                start,
                len: if i + 1 == steps.len() {
                    f64::INFINITY
                } else {
                    d.as_secs_f64()
                },
                rate,
                slope: 0.0,
            }),
            Schedule::Instants(_) => None,
        }?;
        self.i += 1;
        self.start += piece.len;
        Some(piece)
    }
}

impl Schedule {
    fn pieces(&self) -> Pieces<'_> {
        Pieces {
            schedule: self,
            i: 0,
            start: 0.0,
        }
    }

    /// Intended start of global request `g`, as an offset from the schedule's origin;
    /// None when it lies beyond what a `Duration` holds (or the rate never reaches it).
    /// Non-decreasing in g; request 0 starts at the origin.
    pub fn offset_of(&self, g: u64) -> Option<Duration> {
        if let Schedule::Instants(i) = self {
            return i
                .offsets
                .get(usize::try_from(g).ok()?)
                .map(|&o| Duration::from_nanos(o));
        }
        if g == 0 {
            return Some(Duration::ZERO);
        }
        let want = g as f64;
        let mut before = 0.0;
        for p in self.pieces() {
            let m = want - before;
            let last = p.len.is_infinite();
            let total = if last { f64::INFINITY } else { p.total() };
            if last || m <= total {
                let dt = p.solve(m)?;
                // Never past the piece's end, whatever the rounding.
                let dt = if last { dt } else { dt.min(p.len) };
                return Duration::try_from_secs_f64(p.start + dt).ok();
            }
            before += total;
        }
        None
    }

    /// N(t): requests the schedule intends in its first `secs` seconds (fractional).
    pub fn integral(&self, secs: f64) -> f64 {
        if let Schedule::Instants(i) = self {
            return i.before(Duration::try_from_secs_f64(secs.max(0.0)).unwrap_or(Duration::MAX))
                as f64;
        }
        let mut before = 0.0;
        for p in self.pieces() {
            let dt = secs - p.start;
            if p.len.is_infinite() || dt <= p.len {
                return before + p.integral(dt);
            }
            before += p.total();
        }
        before
    }

    /// Requests the schedule intends to start before `t`: the number of g with
    /// `offset_of(g) < t` (exactly, rounding included).
    pub fn requests_before(&self, t: Duration) -> u64 {
        if t.is_zero() {
            return 0;
        }
        if let Schedule::Instants(i) = self {
            return i.before(t);
        }
        // f64 -> u64 saturates; N(t) is within a rounding error of the answer.
        let mut c = self.integral(t.as_secs_f64()).ceil() as u64;
        while c > 0 && self.offset_of(c - 1).is_none_or(|o| o >= t) {
            c -= 1;
        }
        while self.offset_of(c).is_some_and(|o| o < t) {
            c += 1;
        }
        c
    }

    /// The rate at `t` into the schedule, requests per second.
    pub fn rate_at(&self, t: Duration) -> f64 {
        if let Schedule::Instants(i) = self {
            // Those of the second around t.
            let half = Duration::from_millis(500);
            return (i.before(t.saturating_add(half)) - i.before(t.saturating_sub(half))) as f64;
        }
        let secs = t.as_secs_f64();
        let mut rate = 0.0;
        for p in self.pieces() {
            let dt = secs - p.start;
            rate = p.rate + p.slope * dt.min(p.len).max(0.0);
            if p.len.is_infinite() || dt < p.len {
                break;
            }
        }
        rate
    }

    /// The same schedule at `factor` times the rate at every instant (a workload sweep's
    /// step at a scale of the recorded traffic).
    pub fn times(&self, factor: f64) -> Schedule {
        match self {
            Schedule::Constant { rate } => Schedule::Constant {
                rate: rate * factor,
            },
            Schedule::Ramp { from, to, over } => Schedule::Ramp {
                from: from * factor,
                to: to * factor,
                over: *over,
            },
            Schedule::Steps(steps) => {
                Schedule::Steps(steps.iter().map(|&(r, d)| (r * factor, d)).collect())
            }
            // Recorded instants are scaled where they are placed (`replay::schedule`, which
            // spreads a scaled second's arrivals over it); no sweep holds them.
            Schedule::Instants(i) => Schedule::Instants(i.clone()),
        }
    }

    /// The highest rate anywhere in the schedule.
    pub fn peak_rate(&self) -> f64 {
        match self {
            Schedule::Constant { rate } => *rate,
            Schedule::Ramp { from, to, .. } => from.max(*to),
            Schedule::Steps(steps) => steps.iter().map(|s| s.0).fold(0.0, f64::max),
            Schedule::Instants(i) => i.peak_per_second(),
        }
    }

    /// The rate, when it is the same throughout.
    pub fn constant_rate(&self) -> Option<f64> {
        match self {
            Schedule::Constant { rate } => Some(*rate),
            _ => None,
        }
    }

    /// Length of the shaped part (a ramp's, all steps'); after it the rate is held. Zero
    /// for a constant rate.
    pub fn span(&self) -> Duration {
        match self {
            Schedule::Constant { .. } => Duration::ZERO,
            Schedule::Ramp { over, .. } => *over,
            Schedule::Steps(steps) => steps
                .iter()
                .fold(Duration::ZERO, |a, s| a.saturating_add(s.1)),
            Schedule::Instants(i) => Duration::from_nanos(i.offsets.last().copied().unwrap_or(0)),
        }
    }

    /// Refuses schedules whose requests cannot be placed in time: rates that are not
    /// finite, below `MIN_RATE` (other than a ramp's start or a pausing step at 0) or above
    /// `MAX_RATE`; ramps and steps of no length or longer than `MAX_SPAN`.
    pub fn validate(&self) -> Result<(), Refusal> {
        match self {
            Schedule::Constant { rate } => check_rate(*rate, false),
            Schedule::Ramp { from, to, over } => {
                check_rate(*from, true).map_err(|e| Refusal::RampStart(Box::new(e)))?;
                check_rate(*to, false).map_err(|e| Refusal::RampEnd(Box::new(e)))?;
                check_span(*over, "the ramp")
            }
            Schedule::Steps(steps) => {
                if steps.is_empty() {
                    return Err(Refusal::NoSteps);
                }
                if steps.len() > MAX_STEPS {
                    return Err(Refusal::TooManySteps(steps.len()));
                }
                for (i, &(rate, d)) in steps.iter().enumerate() {
                    let last = i + 1 == steps.len();
                    check_rate(rate, !last).map_err(|e| {
                        if last && rate == 0.0 {
                            Refusal::LastStepZero(i + 1)
                        } else {
                            Refusal::Step(i + 1, Box::new(e))
                        }
                    })?;
                    if d.is_zero() {
                        return Err(Refusal::ZeroStep(i + 1));
                    }
                }
                check_span(self.span(), "the steps")
            }
            Schedule::Instants(i) => {
                if i.offsets.is_empty() {
                    return Err(Refusal::NoSteps);
                }
                if !i.ops.is_empty() && i.ops.len() != i.offsets.len() {
                    return Err(Refusal::NotInOrder);
                }
                if i.offsets.windows(2).any(|w| w[1] < w[0]) {
                    return Err(Refusal::NotInOrder);
                }
                if self.span() > MAX_SPAN {
                    return Err(Refusal::OverAYear("the recorded instants"));
                }
                Ok(())
            }
        }
    }

    /// The schedule of the command line's `-R RATE` (and `--ramp DURATION`):
    /// `2000` is a constant rate, `100..5000` with `--ramp 60s` a ramp, and
    /// `100:10s,500:10s,1000:20s` steps. Validated; errors name the flag.
    pub fn from_flags(rate: &str, ramp: Option<Duration>) -> Result<Schedule, ScheduleError> {
        let text = rate.trim();
        let refused = |source| ScheduleError::Refused {
            text: text.into(),
            source,
        };
        let schedule = if text.is_empty() {
            return Err(ScheduleError::NoRate);
        } else if text.contains(':') || text.contains(',') {
            if ramp.is_some() {
                return Err(ScheduleError::RampOnSteps(text.into()));
            }
            let mut steps = Vec::new();
            for (i, part) in text.split(',').enumerate() {
                let part = part.trim();
                let Some((r, d)) = part.split_once(':') else {
                    return Err(ScheduleError::NotAStep {
                        text: text.into(),
                        step: i + 1,
                        part: part.into(),
                    });
                };
                let r = parse_rate(r).map_err(|e| refused(Refusal::Step(i + 1, Box::new(e))))?;
                let d = crate::config::units::parse_duration(d)
                    .map_err(|e| refused(Refusal::Step(i + 1, Box::new(Refusal::Duration(e)))))?;
                steps.push((r, d));
            }
            Schedule::Steps(steps)
        } else if let Some((from, to)) = text.split_once("..") {
            let from = parse_rate(from).map_err(|e| refused(Refusal::RampStart(Box::new(e))))?;
            let to = parse_rate(to).map_err(|e| refused(Refusal::RampEnd(Box::new(e))))?;
            let Some(over) = ramp else {
                return Err(ScheduleError::RampWithoutLength(text.into()));
            };
            Schedule::Ramp { from, to, over }
        } else {
            let rate = parse_rate(text).map_err(refused)?;
            if ramp.is_some() {
                return Err(ScheduleError::RampWithoutRange(text.into()));
            }
            Schedule::Constant { rate }
        };
        schedule.validate().map_err(refused)?;
        Ok(schedule)
    }
}

/// A `-R` (and `--ramp`) that is refused; its text names the flag.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ScheduleError {
    #[error("-R needs a rate: e.g. -R 2000, -R 100..5000 --ramp 60s, or -R 100:10s,500:20s")]
    NoRate,
    #[error("-R {0} is a step schedule: --ramp applies only to a ramp (-R FROM..TO)")]
    RampOnSteps(String),
    #[error("-R {text}: step {step} '{part}' is not RATE:DURATION (e.g. 500:10s)")]
    NotAStep {
        text: String,
        step: usize,
        part: String,
    },
    #[error("-R {0} is a ramp: give its length with --ramp (e.g. --ramp 60s)")]
    RampWithoutLength(String),
    #[error("-R {0}: --ramp needs a range to ramp over: -R FROM..TO (e.g. -R 100..{0} --ramp 60s)")]
    RampWithoutRange(String),
    /// What is wrong with the schedule `-R text` gives: "-R 0 is not a usable rate..." when
    /// the refusal starts with the rate itself, "-R 0..0: ramp end: ..." otherwise.
    #[error("{}", refused_text(text, source))]
    Refused { text: String, source: Refusal },
}

fn refused_text(text: &str, source: &Refusal) -> String {
    if source.starts_with_a_number() {
        format!("-R {source}")
    } else {
        format!("-R {text}: {source}")
    }
}

impl From<ScheduleError> for crate::error::Cause {
    fn from(e: ScheduleError) -> Self {
        crate::error::Cause::Said(e.to_string())
    }
}

/// Why a schedule (or a rate in it) is refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Refusal {
    #[error("missing rate")]
    MissingRate,
    #[error("'{0}' is not a rate in requests per second")]
    NotARate(String),
    #[error("{} is not a usable rate: give requests per second above 0", show_rate(*.0))]
    Unusable(f64),
    #[error("{} requests per second is below the lowest rate vblast paces (1 per hour, {MIN_RATE:.6}/s)", show_rate(*.0))]
    BelowMin(f64),
    #[error("{} requests per second is beyond what one client can send (at most {MAX_RATE:.0})", show_rate(*.0))]
    AboveMax(f64),
    #[error("{0} must last longer than zero")]
    NoLength(&'static str),
    #[error("{0} last longer than a year")]
    OverAYear(&'static str),
    #[error("a step schedule needs at least one step")]
    NoSteps,
    #[error("the recorded instants are not in order (or not one operation each)")]
    NotInOrder,
    #[error("{0} steps are more than vblast paces (at most {MAX_STEPS})")]
    TooManySteps(usize),
    #[error("step {0}: the last step's rate is held after it, so it cannot be 0")]
    LastStepZero(usize),
    #[error("step {0}: its duration must be longer than zero")]
    ZeroStep(usize),
    #[error("step {0}: {1}")]
    Step(usize, Box<Refusal>),
    #[error("ramp start: {0}")]
    RampStart(Box<Refusal>),
    #[error("ramp end: {0}")]
    RampEnd(Box<Refusal>),
    #[error("{0}")]
    Duration(crate::config::units::DurationError),
}

impl Refusal {
    /// Whether the text starts with a number (the rate or the count refused).
    fn starts_with_a_number(&self) -> bool {
        let shown = match self {
            Refusal::Unusable(r) | Refusal::BelowMin(r) | Refusal::AboveMax(r) => show_rate(*r),
            Refusal::TooManySteps(_) => return true,
            _ => return false,
        };
        shown.starts_with(|c: char| c.is_ascii_digit() || c == '-')
    }
}

fn parse_rate(text: &str) -> Result<f64, Refusal> {
    let t = text.trim();
    if t.is_empty() {
        return Err(Refusal::MissingRate);
    }
    t.parse::<f64>().map_err(|_| Refusal::NotARate(t.into()))
}

/// A rate as people write it: "2000", "0.5", "1e-300" (not 300 decimal places).
fn show_rate(rate: f64) -> String {
    let plain = rate.to_string();
    if plain.len() > 12 {
        format!("{rate:e}")
    } else {
        plain
    }
}

fn check_rate(rate: f64, zero_ok: bool) -> Result<(), Refusal> {
    if !rate.is_finite() || rate < 0.0 || (rate == 0.0 && !zero_ok) {
        return Err(Refusal::Unusable(rate));
    }
    if rate > 0.0 && rate < MIN_RATE {
        return Err(Refusal::BelowMin(rate));
    }
    if rate > MAX_RATE {
        return Err(Refusal::AboveMax(rate));
    }
    Ok(())
}

fn check_span(d: Duration, what: &'static str) -> Result<(), Refusal> {
    if d.is_zero() {
        return Err(Refusal::NoLength(what));
    }
    if d > MAX_SPAN {
        return Err(Refusal::OverAYear(what));
    }
    Ok(())
}

/// For reports: "2000 req/s", "ramp 100 to 5000 req/s over 1m, then held", ...
impl fmt::Display for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use crate::config::units::show_duration;
        match self {
            Schedule::Constant { rate } => write!(f, "{rate} req/s"),
            Schedule::Ramp { from, to, over } => write!(
                f,
                "ramp {from} to {to} req/s over {}, then held",
                show_duration(*over)
            ),
            Schedule::Steps(steps) => {
                f.write_str("steps ")?;
                for (i, (rate, d)) in steps.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{rate} req/s for {}", show_duration(*d))?;
                }
                f.write_str(", then held")
            }
            Schedule::Instants(i) => write!(
                f,
                "{} recorded instants over {}",
                i.offsets.len(),
                show_duration(self.span())
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_multiplies_the_rate_at_every_instant() {
        for s in samples() {
            let t = s.times(2.5);
            for at in [0.0, 0.7, 1.9, 4.0, 30.0] {
                let d = secs(at);
                assert!(
                    (t.rate_at(d) - 2.5 * s.rate_at(d)).abs() < 1e-9,
                    "{s} at {at}"
                );
            }
            assert_eq!(t.span(), s.span());
        }
    }

    fn secs(s: f64) -> Duration {
        Duration::from_secs_f64(s)
    }

    fn ramp(from: f64, to: f64, over: f64) -> Schedule {
        Schedule::Ramp {
            from,
            to,
            over: secs(over),
        }
    }

    fn steps(s: &[(f64, f64)]) -> Schedule {
        Schedule::Steps(s.iter().map(|&(r, d)| (r, secs(d))).collect())
    }

    fn samples() -> Vec<Schedule> {
        vec![
            Schedule::Constant { rate: 1000.0 },
            Schedule::Constant { rate: 7.5 },
            ramp(0.0, 1000.0, 10.0),
            ramp(100.0, 5000.0, 3.0),
            ramp(5000.0, 100.0, 3.0),
            ramp(250.0, 250.0, 2.0),
            steps(&[(100.0, 1.0), (500.0, 1.0), (1000.0, 2.0)]),
            steps(&[(2000.0, 0.5), (0.0, 0.5), (300.0, 1.0)]),
            steps(&[(1234.5, 0.25)]),
        ]
    }

    #[test]
    fn constant_rate_is_g_over_rate() {
        let s = Schedule::Constant { rate: 1000.0 };
        assert_eq!(s.offset_of(0), Some(Duration::ZERO));
        assert_eq!(s.offset_of(1), Some(Duration::from_millis(1)));
        assert_eq!(s.offset_of(2500), Some(Duration::from_millis(2500)));
        assert_eq!(s.requests_before(Duration::from_secs(2)), 2000);
        // The request at exactly t is not before t.
        assert_eq!(s.requests_before(Duration::from_millis(1)), 1);
        assert_eq!(s.requests_before(Duration::from_micros(1001)), 2);
        assert_eq!(s.requests_before(Duration::ZERO), 0);
        assert_eq!(s.requests_before(Duration::from_nanos(1)), 1);
    }

    #[test]
    fn ramp_from_zero_starts_at_the_origin_then_follows_the_quadratic() {
        // 0 -> 1000/s over 10 s: N(t) = 50 t^2 for t <= 10, so request g is at
        // sqrt(g / 50) s; 5000 requests by the end of the ramp, then 1000/s.
        let s = ramp(0.0, 1000.0, 10.0);
        assert_eq!(s.offset_of(0), Some(Duration::ZERO));
        let near = |g: u64, want: f64| {
            let got = s.offset_of(g).unwrap().as_secs_f64();
            assert!((got - want).abs() < 1e-9, "g {g}: {got} vs {want}");
        };
        near(1, (1.0f64 / 50.0).sqrt());
        near(2, (2.0f64 / 50.0).sqrt());
        near(1250, 5.0);
        near(5000, 10.0);
        near(5001, 10.001);
        near(6000, 11.0);
        assert_eq!(s.requests_before(secs(10.0)), 5000);
        assert_eq!(s.requests_before(secs(5.0)), 1250);
        assert_eq!(s.requests_before(secs(11.0)), 6000);
        // One request at the origin, then nothing until 1/50 of a second's square root.
        assert_eq!(s.requests_before(secs(0.1)), 1);
        assert_eq!(s.requests_before(secs(0.15)), 2);
    }

    #[test]
    fn ramps_up_and_down_and_steps_hit_their_integrals() {
        // 100 -> 5000 over 3 s: (100 + 5000) / 2 * 3 = 7650 requests, then 5000/s.
        assert_eq!(ramp(100.0, 5000.0, 3.0).requests_before(secs(3.0)), 7650);
        assert_eq!(ramp(5000.0, 100.0, 3.0).requests_before(secs(3.0)), 7650);
        assert_eq!(ramp(5000.0, 100.0, 3.0).requests_before(secs(4.0)), 7750);
        let s = steps(&[(100.0, 10.0), (500.0, 10.0), (1000.0, 20.0)]);
        assert_eq!(s.requests_before(secs(10.0)), 1000);
        assert_eq!(s.requests_before(secs(20.0)), 6000);
        assert_eq!(s.requests_before(secs(40.0)), 26000);
        // The last rate is held afterwards.
        assert_eq!(s.requests_before(secs(41.0)), 27000);
        assert_eq!(s.offset_of(1000), Some(secs(10.0)));
        assert_eq!(s.offset_of(6000), Some(secs(20.0)));
        assert_eq!(s.rate_at(secs(5.0)), 100.0);
        assert_eq!(s.rate_at(secs(15.0)), 500.0);
        assert_eq!(s.rate_at(secs(100.0)), 1000.0);
        let r = ramp(100.0, 5000.0, 3.0);
        assert!((r.rate_at(secs(1.5)) - 2550.0).abs() < 1e-9);
        assert_eq!(r.rate_at(secs(30.0)), 5000.0);
        assert_eq!(r.peak_rate(), 5000.0);
        assert_eq!(s.span(), secs(40.0));
    }

    #[test]
    fn a_pause_holds_requests_until_it_ends() {
        // 2000/s for 0.5 s (1000 requests), nothing for 0.5 s, then 300/s.
        let s = steps(&[(2000.0, 0.5), (0.0, 0.5), (300.0, 1.0)]);
        assert_eq!(s.requests_before(secs(0.5)), 1000);
        // Request 1000 falls exactly on the start of the pause.
        assert_eq!(s.offset_of(1000), Some(secs(0.5)));
        assert_eq!(s.requests_before(secs(0.75)), 1001);
        assert_eq!(s.requests_before(secs(1.0)), 1001);
        let next = s.offset_of(1001).unwrap().as_secs_f64();
        assert!((next - (1.0 + 1.0 / 300.0)).abs() < 1e-9, "{next}");
    }

    #[test]
    fn offsets_never_go_back_and_counts_agree_with_them() {
        for s in samples() {
            let mut prev = Duration::ZERO;
            for g in 0..20_000u64 {
                let o = s.offset_of(g).unwrap();
                assert!(o >= prev, "{s}: g {g} at {o:?} before {prev:?}");
                prev = o;
            }
            // Exact agreement at arbitrary instants and at the offsets themselves.
            for i in 0..4000u64 {
                let t = Duration::from_nanos(i * 1_234_567 + 1);
                let c = s.requests_before(t);
                assert!(c == 0 || s.offset_of(c - 1).unwrap() < t, "{s} at {t:?}");
                assert!(s.offset_of(c).unwrap() >= t, "{s} at {t:?}: {c}");
            }
            for g in (1..20_000u64).step_by(97) {
                let t = s.offset_of(g).unwrap();
                let c = s.requests_before(t);
                assert!(c <= g && s.offset_of(c).unwrap() == t, "{s}: g {g}");
            }
        }
    }

    #[test]
    fn integral_of_the_offsets_is_the_request_number() {
        // A second formula (the forward integral) checks the closed-form inverse.
        for s in samples() {
            for g in (1..20_000u64).step_by(13) {
                let t = s.offset_of(g).unwrap().as_secs_f64();
                let n = s.integral(t);
                assert!((n - g as f64).abs() < 1e-4, "{s}: g {g} at {t}: N = {n}");
            }
        }
    }

    #[test]
    fn unrepresentable_offsets_are_none() {
        let s = Schedule::Constant { rate: MIN_RATE };
        assert_eq!(s.offset_of(1), Some(Duration::from_secs(3600)));
        assert_eq!(s.offset_of(u64::MAX), None);
        // Not a valid schedule, but still no flood: request 1 never comes.
        let tiny = Schedule::Constant { rate: 1e-300 };
        assert_eq!(tiny.offset_of(0), Some(Duration::ZERO));
        assert_eq!(tiny.offset_of(1), None);
        assert_eq!(tiny.requests_before(Duration::from_secs(3600)), 1);
        let stopped = steps(&[(100.0, 1.0), (0.0, 1.0)]);
        assert_eq!(stopped.offset_of(101), None);
    }

    #[test]
    fn validation_refuses_what_cannot_be_paced() {
        for bad in [
            Schedule::Constant { rate: 1e-300 },
            Schedule::Constant { rate: 0.0 },
            Schedule::Constant { rate: -5.0 },
            Schedule::Constant { rate: f64::NAN },
            Schedule::Constant {
                rate: f64::INFINITY,
            },
            Schedule::Constant { rate: 1e12 },
            ramp(100.0, 0.0, 10.0),
            ramp(1e-9, 100.0, 10.0),
            ramp(100.0, 200.0, 0.0),
            Schedule::Ramp {
                from: 1.0,
                to: 2.0,
                over: MAX_SPAN + Duration::from_secs(1),
            },
            Schedule::Steps(vec![]),
            steps(&[(100.0, 1.0), (0.0, 1.0)]),
            steps(&[(100.0, 0.0), (10.0, 1.0)]),
            steps(&[(100.0, 1.0), (f64::NAN, 1.0)]),
            Schedule::Steps(vec![(1.0, Duration::from_secs(1)); MAX_STEPS + 1]),
        ] {
            let e = bad.validate().expect_err(&format!("{bad:?} accepted"));
            assert!(!e.to_string().is_empty());
        }
        let e = Schedule::Constant { rate: 1e-300 }
            .validate()
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("1e-300 requests per second is below the lowest rate"),
            "{e}"
        );
        for good in samples() {
            good.validate().unwrap();
        }
        Schedule::Constant { rate: MIN_RATE }.validate().unwrap();
        Schedule::Constant { rate: MAX_RATE }.validate().unwrap();
    }

    #[test]
    fn flags() {
        let ok = |r: &str, ramp: Option<&str>| {
            Schedule::from_flags(
                r,
                ramp.map(|d| crate::config::units::parse_duration(d).unwrap()),
            )
        };
        assert_eq!(ok("2000", None), Ok(Schedule::Constant { rate: 2000.0 }));
        assert_eq!(ok(" 0.5 ", None), Ok(Schedule::Constant { rate: 0.5 }));
        assert_eq!(ok("100..5000", Some("60s")), Ok(ramp(100.0, 5000.0, 60.0)));
        assert_eq!(ok("0..5000", Some("1m")), Ok(ramp(0.0, 5000.0, 60.0)));
        assert_eq!(ok("1.5..3", Some("2s")), Ok(ramp(1.5, 3.0, 2.0)));
        assert_eq!(
            ok("100:10s,500:10s,1000:20s", None),
            Ok(steps(&[(100.0, 10.0), (500.0, 10.0), (1000.0, 20.0)]))
        );
        assert_eq!(
            ok("100:500ms, 0:1s ,50:1m", None),
            Ok(steps(&[(100.0, 0.5), (0.0, 1.0), (50.0, 60.0)]))
        );
        assert_eq!(ok("300:2s", None), Ok(steps(&[(300.0, 2.0)])));
        let err = |r: &str, ramp: Option<&str>, want: &str| {
            let e = ok(r, ramp).expect_err(r).to_string();
            assert!(e.contains(want), "-R {r}: '{e}' lacks '{want}'");
        };
        err("", None, "-R needs a rate");
        err("abc", None, "'abc' is not a rate");
        err("1e-300", None, "below the lowest rate");
        err("0", None, "not a usable rate");
        err("-5", None, "not a usable rate");
        err("nan", None, "not a usable rate");
        err("inf", None, "not a usable rate");
        err("1e12", None, "beyond what one client");
        err("2000", Some("60s"), "--ramp needs a range");
        err("100..5000", None, "give its length with --ramp");
        err("100..", Some("60s"), "ramp end: missing rate");
        err("..5000", Some("60s"), "ramp start: missing rate");
        err("100..x", Some("60s"), "'x' is not a rate");
        err("100..0", Some("60s"), "ramp end");
        err(
            "100..5000",
            Some("0s"),
            "the ramp must last longer than zero",
        );
        err("100:10s,500", None, "step 2 '500' is not RATE:DURATION");
        err("100:10s,500:abc", None, "step 2: invalid duration");
        err("100:10s,x:5s", None, "step 2: 'x' is not a rate");
        err("100:10s,0:5s", None, "the last step's rate is held");
        err("100:0s,200:5s", None, "step 1: its duration");
        err(
            "100:10s,200:5s",
            Some("60s"),
            "--ramp applies only to a ramp",
        );
        err("100:10s,,200:5s", None, "step 2 '' is not RATE:DURATION");
    }

    #[test]
    fn serde_round_trip() {
        for s in samples() {
            let text = serde_json::to_string(&s).unwrap();
            let back: Schedule = serde_json::from_str(&text).unwrap();
            assert_eq!(back, s, "{text}");
        }
        assert_eq!(
            serde_json::to_value(Schedule::Constant { rate: 5.0 }).unwrap(),
            serde_json::json!({"constant": {"rate": 5.0}})
        );
    }

    #[test]
    fn display() {
        assert_eq!(
            Schedule::Constant { rate: 2000.0 }.to_string(),
            "2000 req/s"
        );
        assert_eq!(
            ramp(100.0, 5000.0, 60.0).to_string(),
            "ramp 100 to 5000 req/s over 1m, then held"
        );
        assert_eq!(
            steps(&[(100.0, 10.0), (500.0, 20.0)]).to_string(),
            "steps 100 req/s for 10s, 500 req/s for 20s, then held"
        );
    }

    /// A replay's instants: each request at its own offset, none after the last; the
    /// counts before an instant exact; out of order or with an operation missing, refused.
    #[test]
    fn instants_place_each_request_at_its_own_offset() {
        let ms = |m: u64| Duration::from_millis(m);
        let s = Schedule::Instants(Instants {
            offsets: vec![0, 0, 400_000_000, 1_500_000_000].into(),
            ops: vec![1, 0, 1, 2].into(),
            callers: vec![Caller {
                token: Some("hvs.CALLER".into()),
                namespace: Some("ns1".into()),
                requests: None,
            }]
            .into(),
            request_sets: Vec::new().into(),
        });
        s.validate().unwrap();
        let placed: Vec<Option<Duration>> = (0..5).map(|g| s.offset_of(g)).collect();
        assert_eq!(
            placed,
            [
                Some(ms(0)),
                Some(ms(0)),
                Some(ms(400)),
                Some(ms(1500)),
                None
            ]
        );
        assert_eq!(s.requests_before(ms(1)), 2);
        assert_eq!(s.requests_before(ms(1500)), 3);
        assert_eq!(s.requests_before(ms(1501)), 4);
        assert_eq!(s.peak_rate(), 3.0);
        assert_eq!(s.span(), ms(1500));
        let Schedule::Instants(i) = &s else {
            unreachable!()
        };
        assert_eq!((i.op_of(3), i.op_of(4)), (Some(2), None));
        let json = serde_json::to_string(&s).unwrap();
        assert_eq!(serde_json::from_str::<Schedule>(&json).unwrap(), s);
        assert!(!format!("{s:?}").contains("hvs.CALLER"));
        for bad in [
            (vec![5, 1], vec![]),
            (vec![1, 5], vec![0]),
            (vec![], vec![]),
        ] {
            let s = Schedule::Instants(Instants {
                offsets: bad.0.into(),
                ops: bad.1.into(),
                callers: Vec::new().into(),
                request_sets: Vec::new().into(),
            });
            assert!(s.validate().is_err(), "{s}");
        }
    }
}
