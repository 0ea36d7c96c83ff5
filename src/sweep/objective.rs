//! The sweep's objective: `--slo` texts parsed into bounds (`p50`, `p90`, `p99`, `p999`
//! latency at most a duration; `success` at least a percentage; `rate`, open model only,
//! the achieved rate at most a percentage under the offered one), and a step's figures
//! checked against them, each failure said with its measured value and by how much it
//! missed. Rate sweeps always check the achieved rate (2% unless `--slo rate=N%` says
//! otherwise): a server that answers fast but only half of what was offered did not
//! sustain the load.
//!
//! A latency bound is judged with the percentile's confidence interval (`report::ci`,
//! widened where the step's samples are correlated in time: `stats::interval`): it
//! holds when the whole interval is within the bound, misses when the whole interval is
//! beyond it, and is unclear otherwise (the interval straddles the bound, or too few samples
//! bound the side that would decide). The success and rate bounds are judged on their
//! figures.

use serde::{Deserialize, Serialize};

use crate::config::units::parse_duration;
use crate::report::ci::{Ci, cell};
use crate::report::fmt_ms;

/// The tolerance of the achieved rate when `--slo rate=` is not given.
pub const DEFAULT_RATE_TOLERANCE: f64 = 2.0;

/// Which latency percentile a bound is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Pct {
    P50,
    P90,
    P99,
    P999,
}

impl Pct {
    /// "p99", "p99.9": as the tables name it.
    pub fn label(self) -> &'static str {
        match self {
            Pct::P50 => "p50",
            Pct::P90 => "p90",
            Pct::P99 => "p99",
            Pct::P999 => "p99.9",
        }
    }

    /// "p99", "p999": the key of the report's percentiles.
    pub fn key(self) -> &'static str {
        match self {
            Pct::P50 => "p50",
            Pct::P90 => "p90",
            Pct::P99 => "p99",
            Pct::P999 => "p999",
        }
    }
}

/// One bound of the objective.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", tag = "kind")]
pub enum Objective {
    /// The percentile at most `max_ms`.
    Latency { pct: Pct, max_ms: f64 },
    /// Successful requests at least `min_percent` of all.
    Success { min_percent: f64 },
    /// Open model: achieved rate at most `tolerance_percent` under the offered rate.
    Rate { tolerance_percent: f64 },
}

/// What a step measured, as the objective reads it.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StepFigures {
    pub requests: u64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub p999_ms: f64,
    pub success_percent: f64,
    /// The offered rate (open model).
    pub offered: Option<f64>,
    /// Responses per second over the measured window.
    pub achieved: f64,
    /// The confidence intervals of p50, p90, p99 and p99.9 (None: unknown).
    pub p50_ci: Option<Ci>,
    pub p90_ci: Option<Ci>,
    pub p99_ci: Option<Ci>,
    pub p999_ci: Option<Ci>,
}

impl StepFigures {
    /// Percentile `pct`'s figure and interval.
    pub fn at(&self, pct: Pct) -> (f64, Option<Ci>) {
        match pct {
            Pct::P50 => (self.p50_ms, self.p50_ci),
            Pct::P90 => (self.p90_ms, self.p90_ci),
            Pct::P99 => (self.p99_ms, self.p99_ci),
            Pct::P999 => (self.p999_ms, self.p999_ci),
        }
    }
}

/// How a step measures against one bound.
#[derive(Clone, Debug, PartialEq)]
pub enum Call {
    Holds,
    /// Missed, and why (the measured value and by how much).
    Misses(String),
    /// Neither clearly held nor clearly missed, and why.
    Unclear(String),
}

fn percent(text: &str, slo: &str) -> Result<f64, ObjectiveError> {
    let t = text.trim().trim_end_matches('%').trim();
    let v: f64 = t.parse().map_err(|_| ObjectiveError::NotAPercentage {
        slo: slo.into(),
        value: text.into(),
    })?;
    if !(v.is_finite() && v > 0.0 && v <= 100.0) {
        return Err(ObjectiveError::PercentageRange {
            slo: slo.into(),
            value: text.into(),
        });
    }
    Ok(v)
}

/// A `--slo` that is refused; `slo` is the text given, which the message names.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ObjectiveError {
    #[error(
        "--slo {0}: an objective is NAME=BOUND: p50, p90, p99 or p999 = a duration (p99=20ms), success = a percentage (success=99.9), rate = a tolerance (rate=2%)"
    )]
    NotNameBound(String),
    #[error("--slo {slo}: '{value}' is not a percentage (e.g. 99.9)")]
    NotAPercentage { slo: String, value: String },
    #[error("--slo {slo}: '{value}' is not a percentage above 0 and at most 100")]
    PercentageRange { slo: String, value: String },
    #[error("--slo {0}: the tolerance must be below 100%")]
    Tolerance(String),
    #[error(
        "--slo {slo}: unknown objective '{name}': the objectives are p50, p90, p99, p999, success and rate"
    )]
    Unknown { slo: String, name: String },
    #[error("--slo {slo}: {source}")]
    Duration {
        slo: String,
        source: crate::config::units::DurationError,
    },
    #[error("--slo {0}: the bound must be longer than zero")]
    ZeroBound(String),
    #[error("--slo {slo}: {bound} is bounded twice")]
    Twice { slo: String, bound: &'static str },
    #[error("give an objective: --slo p99=20ms (also p50, p90, p999), --slo success=99.9")]
    None,
    #[error(
        "--slo {0}: a rate objective needs rate steps (--rate FROM..TO); concurrency steps offer no rate"
    )]
    RateInClosedModel(String),
}

/// For the sweep's flag checks, whose own errors are still sentences (the same text).
impl Objective {
    /// Parses one `--slo`: `p99=20ms`, `p50=5ms`, `p90=1s`, `p999=100ms`, `success=99.9`,
    /// `rate=2%`.
    pub fn parse(text: &str) -> Result<Objective, ObjectiveError> {
        let Some((key, value)) = text.split_once('=') else {
            return Err(ObjectiveError::NotNameBound(text.into()));
        };
        let pct = match key.trim().to_ascii_lowercase().as_str() {
            "p50" => Pct::P50,
            "p90" => Pct::P90,
            "p99" => Pct::P99,
            "p999" | "p99.9" => Pct::P999,
            "success" => {
                return Ok(Objective::Success {
                    min_percent: percent(value, text)?,
                });
            }
            "rate" => {
                let v = percent(value, text)?;
                if v >= 100.0 {
                    return Err(ObjectiveError::Tolerance(text.into()));
                }
                return Ok(Objective::Rate {
                    tolerance_percent: v,
                });
            }
            other => {
                return Err(ObjectiveError::Unknown {
                    slo: text.into(),
                    name: other.into(),
                });
            }
        };
        let d = parse_duration(value).map_err(|source| ObjectiveError::Duration {
            slo: text.into(),
            source,
        })?;
        if d.is_zero() {
            return Err(ObjectiveError::ZeroBound(text.into()));
        }
        Ok(Objective::Latency {
            pct,
            max_ms: d.as_secs_f64() * 1000.0,
        })
    }

    /// The bound as a user reads it: "p99 <= 20.00ms".
    pub fn describe(&self) -> String {
        match *self {
            Objective::Latency { pct, max_ms } => format!("{} <= {}", pct.label(), fmt_ms(max_ms)),
            Objective::Success { min_percent } => format!("success >= {min_percent}%"),
            Objective::Rate { tolerance_percent } => {
                format!("achieved rate within {tolerance_percent}% of offered")
            }
        }
    }

    /// Whether `f` holds this bound, misses it or is unclear: a latency bound with the
    /// percentile's interval (see the module's doc), the others on their figures.
    pub fn call(&self, f: &StepFigures) -> Call {
        let Objective::Latency { pct, max_ms } = *self else {
            return match self.miss(f) {
                Some(why) => Call::Misses(why),
                None => Call::Holds,
            };
        };
        let (v, ci) = f.at(pct);
        let low = ci.and_then(|c| c.low);
        let high = ci.and_then(|c| c.high);
        let interval = format!("{} CI {}", pct.label(), cell(ci.as_ref()));
        if high.is_some_and(|h| h <= max_ms) {
            Call::Holds
        } else if low.is_some_and(|l| l > max_ms) {
            Call::Misses(format!(
                "{} {} > {} (+{:.0}%; {interval})",
                pct.label(),
                fmt_ms(v),
                fmt_ms(max_ms),
                (v / max_ms - 1.0) * 100.0
            ))
        } else if high.is_none() {
            Call::Unclear(format!(
                "{} {}, {interval}: too few samples to bound it from above against {}",
                pct.label(),
                fmt_ms(v),
                fmt_ms(max_ms)
            ))
        } else {
            Call::Unclear(format!(
                "{} {}, {interval} straddles {}",
                pct.label(),
                fmt_ms(v),
                fmt_ms(max_ms)
            ))
        }
    }

    /// Why `f` misses this bound on its figure alone, or None when it holds.
    pub fn miss(&self, f: &StepFigures) -> Option<String> {
        match *self {
            Objective::Latency { pct, max_ms } => {
                let v = match pct {
                    Pct::P50 => f.p50_ms,
                    Pct::P90 => f.p90_ms,
                    Pct::P99 => f.p99_ms,
                    Pct::P999 => f.p999_ms,
                };
                (v > max_ms).then(|| {
                    format!(
                        "{} {} > {} (+{:.0}%)",
                        pct.label(),
                        fmt_ms(v),
                        fmt_ms(max_ms),
                        (v / max_ms - 1.0) * 100.0
                    )
                })
            }
            Objective::Success { min_percent } => (f.success_percent < min_percent).then(|| {
                format!(
                    "success {:.2}% < {min_percent}% ({:.2} points short)",
                    f.success_percent,
                    min_percent - f.success_percent
                )
            }),
            Objective::Rate { tolerance_percent } => {
                let offered = f.offered?;
                let under = (1.0 - f.achieved / offered) * 100.0;
                (under > tolerance_percent + 1e-9).then(|| {
                    format!(
                        "achieved {:.1}/s is {under:.1}% under the offered {offered}/s (allowed {tolerance_percent}%)",
                        f.achieved
                    )
                })
            }
        }
    }
}

/// The objective of a sweep from its `--slo` texts: each parsed, none repeated; for rate
/// sweeps (`open`) the achieved-rate bound is added at 2% unless given; refused in the
/// closed model, where no rate is offered.
pub fn objectives(texts: &[String], open: bool) -> Result<Vec<Objective>, ObjectiveError> {
    let mut out: Vec<Objective> = Vec::new();
    let key = |o: &Objective| match o {
        Objective::Latency { pct, .. } => pct.label(),
        Objective::Success { .. } => "success",
        Objective::Rate { .. } => "rate",
    };
    for t in texts {
        let o = Objective::parse(t)?;
        if out.iter().any(|x| key(x) == key(&o)) {
            return Err(ObjectiveError::Twice {
                slo: t.clone(),
                bound: key(&o),
            });
        }
        if !open && matches!(o, Objective::Rate { .. }) {
            return Err(ObjectiveError::RateInClosedModel(t.clone()));
        }
        out.push(o);
    }
    if open && !out.iter().any(|o| matches!(o, Objective::Rate { .. })) {
        out.push(Objective::Rate {
            tolerance_percent: DEFAULT_RATE_TOLERANCE,
        });
    }
    if out.is_empty() {
        return Err(ObjectiveError::None);
    }
    Ok(out)
}

/// Every bound `f` misses on its figure alone, in the objective's order; a step in which
/// nothing completed misses by that alone.
pub fn misses(objectives: &[Objective], f: &StepFigures) -> Vec<String> {
    if f.requests == 0 {
        return vec!["no request completed".into()];
    }
    objectives.iter().filter_map(|o| o.miss(f)).collect()
}

/// The bounds `f` clearly misses, and those it neither clearly holds nor misses, each with
/// why, in the objective's order; a step in which nothing completed misses by that alone.
pub fn calls(objectives: &[Objective], f: &StepFigures) -> (Vec<String>, Vec<String>) {
    if f.requests == 0 {
        return (vec!["no request completed".into()], Vec::new());
    }
    let (mut missed, mut unclear) = (Vec::new(), Vec::new());
    for o in objectives {
        match o.call(f) {
            Call::Holds => {}
            Call::Misses(why) => missed.push(why),
            Call::Unclear(why) => unclear.push(why),
        }
    }
    (missed, unclear)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figures() -> StepFigures {
        StepFigures {
            requests: 1000,
            p50_ms: 1.0,
            p90_ms: 5.0,
            p99_ms: 31.2,
            p999_ms: 80.0,
            success_percent: 99.95,
            offered: Some(1000.0),
            achieved: 990.0,
            ..StepFigures::default()
        }
    }

    #[test]
    fn a_latency_bound_is_judged_with_its_interval() {
        let ci = |low, high| {
            Some(Ci {
                low: Some(low),
                high: Some(high),
                wide: false,
            })
        };
        let bound = Objective::parse("p99=20ms").unwrap();
        let mut f = figures();
        f.p99_ms = 18.0;
        f.p99_ci = ci(16.0, 19.5);
        assert_eq!(bound.call(&f), Call::Holds);
        f.p99_ci = ci(16.0, 21.0);
        let Call::Unclear(why) = bound.call(&f) else {
            panic!("{:?}", bound.call(&f))
        };
        assert!(why.contains("straddles 20.00ms"), "{why}");
        f.p99_ms = 24.0;
        f.p99_ci = ci(21.0, 26.0);
        let Call::Misses(why) = bound.call(&f) else {
            panic!()
        };
        assert!(
            why.contains("p99 24.00ms > 20.00ms (+20%; p99 CI 21.00-26.00ms)"),
            "{why}"
        );
        // Too few samples to bound the upper side: unclear, never a pass.
        f.p99_ms = 10.0;
        f.p99_ci = None;
        assert!(matches!(bound.call(&f), Call::Unclear(_)));
        // The other bounds are judged on their figures.
        let (missed, unclear) = calls(&[Objective::parse("success=99.99").unwrap()], &f);
        assert_eq!((missed.len(), unclear.len()), (1, 0));
    }

    #[test]
    fn parses_every_kind() {
        assert_eq!(
            Objective::parse("p99=20ms").unwrap(),
            Objective::Latency {
                pct: Pct::P99,
                max_ms: 20.0
            }
        );
        assert_eq!(
            Objective::parse("p999=1s").unwrap(),
            Objective::Latency {
                pct: Pct::P999,
                max_ms: 1000.0
            }
        );
        assert_eq!(
            Objective::parse("success=99.9").unwrap(),
            Objective::Success { min_percent: 99.9 }
        );
        assert_eq!(
            Objective::parse("rate=5%").unwrap(),
            Objective::Rate {
                tolerance_percent: 5.0
            }
        );
        for bad in [
            "p99",
            "p98=20ms",
            "p99=fast",
            "p99=0ms",
            "success=101",
            "success=x",
            "rate=100%",
            "=",
            "",
        ] {
            assert!(Objective::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn misses_say_what_and_by_how_much() {
        let f = figures();
        let o = objectives(&["p99=20ms".into(), "success=99.9".into()], true).unwrap();
        assert_eq!(o.len(), 3, "the rate bound is added: {o:?}");
        assert_eq!(
            misses(&o, &f),
            vec!["p99 31.20ms > 20.00ms (+56%)".to_string()]
        );
        let mut g = f;
        g.success_percent = 98.1;
        g.achieved = 900.0;
        let m = misses(&o, &g);
        assert_eq!(m.len(), 3, "{m:?}");
        assert!(m[1].starts_with("success 98.10% < 99.9%"), "{m:?}");
        assert!(m[2].contains("10.0% under the offered 1000/s"), "{m:?}");
        g.requests = 0;
        assert_eq!(misses(&o, &g), vec!["no request completed".to_string()]);
        // At the bound is within it.
        g = f;
        g.p99_ms = 20.0;
        g.achieved = 980.0;
        assert!(misses(&o, &g).is_empty());
    }

    #[test]
    fn objectives_are_checked_as_a_set() {
        assert!(objectives(&["p99=1ms".into(), "p99=2ms".into()], true).is_err());
        assert!(objectives(&["rate=2%".into()], false).is_err());
        assert!(objectives(&[], false).is_err());
        // Rate sweeps always bound the rate; an explicit one replaces the default.
        assert_eq!(
            objectives(&[], true).unwrap(),
            vec![Objective::Rate {
                tolerance_percent: 2.0
            }]
        );
        assert_eq!(objectives(&["rate=10%".into()], true).unwrap().len(), 1);
    }
}
