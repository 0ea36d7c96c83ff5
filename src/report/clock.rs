//! The two clocks of a `--clock kernel` run side by side (`src/stats/clock.rs`): the
//! latency and service time ended by the kernel's receive stamp, the same ended by the
//! user-space clock, and the difference (the client's own delay), with where the send
//! was stamped (with `--clock kernel-tx`, how many sends fell back to the user-space
//! clock) and, when the socket refused SO_TIMESTAMPING, that the run fell back to the
//! user-space clock; with several operations, each operation's kernel figures. Shared by the text, verbose and HTML renderers; the JSON report
//! carries it as `clock`.

use std::io::{self, Write};

use serde::Serialize;

use super::{Percentiles, fmt_ms};
use crate::net::stamp::Clock;
use crate::stats::clock::ClockFigures;
use crate::stats::{Hist, OpStats};

#[derive(Clone, Debug, Serialize)]
pub struct ClockSummary {
    /// "kernel" or "kernel-tx", or "user" when the run fell back (`refused` says why).
    pub used: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
    /// `--clock kernel-tx` asked and its TX stamps refused: why (sends by the user clock).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub send_refused: Option<String>,
    /// Where each request's start was taken (with kernel-tx, how many fell back).
    pub send: String,
    /// Responses ended by a kernel stamp, and those whose completing read had none (their
    /// kernel figures are the user-space clock's).
    pub stamped: u64,
    pub unstamped: u64,
    /// `--clock kernel-tx`: requests sent by the kernel's TX stamp, those whose send fell
    /// back to the user-space clock, and those whose TX stamp came after the kernel's RX
    /// end (never expected: their service time counted as 0).
    pub send_stamped: u64,
    pub send_unstamped: u64,
    pub send_after_end: u64,
    /// From the intended start (open model; the send in the closed model) to the end,
    /// by each clock.
    pub kernel_latency_ms: Percentiles,
    pub user_latency_ms: Percentiles,
    /// From the send to the end, by each clock.
    pub kernel_service_ms: Percentiles,
    pub user_service_ms: Percentiles,
    /// The user-space clock's end less the kernel's, per stamped response: the client's
    /// own delay.
    pub delay_ms: Percentiles,
    /// Several operations: each one's figures by both clocks, in the mix's order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ops: Vec<OpClockSummary>,
}

/// One operation's figures by both clocks.
#[derive(Clone, Debug, Serialize)]
pub struct OpClockSummary {
    pub name: String,
    pub kernel_latency_ms: Percentiles,
    pub user_latency_ms: Percentiles,
    pub kernel_service_ms: Percentiles,
    pub user_service_ms: Percentiles,
    pub delay_ms: Percentiles,
}

/// The summary of `c`, beside the run's user-space `latency` and `service`, and each
/// operation's (`ops`, named by `names`).
pub fn summary(
    c: &ClockFigures,
    latency: &Hist,
    service: &Hist,
    ops: &[OpStats],
    names: &[String],
) -> ClockSummary {
    ClockSummary {
        used: c.used.name(),
        refused: c.refused.clone(),
        send_refused: c.send_refused.clone(),
        send: c.send_said(),
        stamped: c.stamped,
        unstamped: c.unstamped,
        send_stamped: c.send_stamped,
        send_unstamped: c.send_unstamped,
        send_after_end: c.send_after_end,
        kernel_latency_ms: Percentiles::of(&c.latency),
        user_latency_ms: Percentiles::of(latency),
        kernel_service_ms: Percentiles::of(&c.service),
        user_service_ms: Percentiles::of(service),
        delay_ms: Percentiles::of(&c.delay),
        ops: c
            .ops
            .iter()
            .zip(ops)
            .enumerate()
            .map(|(i, (k, u))| OpClockSummary {
                name: names.get(i).cloned().unwrap_or_else(|| format!("op{i}")),
                kernel_latency_ms: Percentiles::of(&k.latency),
                user_latency_ms: Percentiles::of(&u.latency),
                kernel_service_ms: Percentiles::of(&k.service),
                user_service_ms: Percentiles::of(&u.service),
                delay_ms: Percentiles::of(&k.delay),
            })
            .collect(),
    }
}

impl ClockSummary {
    pub fn fell_back(&self) -> bool {
        self.used == Clock::User.name()
    }

    /// The one-line statement of the clock, for every format.
    pub fn headline(&self) -> String {
        match &self.refused {
            Some(why) => {
                format!("Clock: user-space (kernel clock refused: {why}); no kernel figures")
            }
            None => format!(
                "Clock: {} (receive stamp of the segment completing each response; send: {}); {} responses stamped, {} not (their end is the user-space clock's)",
                self.used, self.send, self.stamped, self.unstamped
            ),
        }
    }

    /// The rows of the side-by-side table: name and figures.
    pub fn rows(&self) -> [(&'static str, &Percentiles); 5] {
        [
            ("latency, kernel", &self.kernel_latency_ms),
            ("latency, user", &self.user_latency_ms),
            ("service, kernel", &self.kernel_service_ms),
            ("service, user", &self.user_service_ms),
            ("client delay", &self.delay_ms),
        ]
    }
}

/// The clock lines of the text report, after the node table.
pub fn write(s: &super::Summary, o: &mut dyn Write) -> io::Result<()> {
    let Some(c) = &s.clock else {
        return Ok(());
    };
    writeln!(o)?;
    writeln!(o, "{}", c.headline())?;
    if c.fell_back() {
        return Ok(());
    }
    writeln!(
        o,
        "  {:<16} {:>9} {:>10} {:>10} {:>10} {:>10} {:>10}",
        "", "count", "p50", "p90", "p99", "p99.9", "max"
    )?;
    for (name, p) in c.rows() {
        row(o, name, p)?;
    }
    for op in &c.ops {
        writeln!(o, "  {}", op.name)?;
        for (name, p) in op.rows() {
            row(o, name, p)?;
        }
    }
    Ok(())
}

impl OpClockSummary {
    /// Its rows in the side-by-side table: the kernel's figures and the client's delay.
    pub fn rows(&self) -> [(&'static str, &Percentiles); 3] {
        [
            ("latency, kernel", &self.kernel_latency_ms),
            ("service, kernel", &self.kernel_service_ms),
            ("client delay", &self.delay_ms),
        ]
    }
}

fn row(o: &mut dyn Write, name: &str, p: &Percentiles) -> io::Result<()> {
    writeln!(
        o,
        "  {:<16} {:>9} {:>10} {:>10} {:>10} {:>10} {:>10}",
        name,
        p.count,
        fmt_ms(p.p50),
        fmt_ms(p.p90),
        fmt_ms(p.p99),
        fmt_ms(p.p999),
        fmt_ms(p.max)
    )
}
