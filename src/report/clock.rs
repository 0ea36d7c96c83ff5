//! The two clocks of a `--clock kernel` run side by side (`src/stats/clock.rs`): the
//! latency and service time ended by the kernel's receive stamp, the same ended by the
//! user-space clock, and the difference (the client's own delay), with where the send
//! was stamped and, when the socket refused SO_TIMESTAMPING, that the run fell back to
//! the user-space clock. Shared by the text, verbose and HTML renderers; the JSON report
//! carries it as `clock`.

use std::io::{self, Write};

use serde::Serialize;

use super::{Percentiles, fmt_ms};
use crate::net::stamp::Clock;
use crate::stats::Hist;
use crate::stats::clock::ClockFigures;

#[derive(Clone, Debug, Serialize)]
pub struct ClockSummary {
    /// "kernel", or "user" when the run fell back (`refused` says why).
    pub used: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
    /// Where each request's start was taken.
    pub send: String,
    /// Responses ended by a kernel stamp, and those whose completing read had none (their
    /// kernel figures are the user-space clock's).
    pub stamped: u64,
    pub unstamped: u64,
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
}

/// The summary of `c`, beside the run's user-space `latency` and `service`.
pub fn summary(c: &ClockFigures, latency: &Hist, service: &Hist) -> ClockSummary {
    ClockSummary {
        used: c.used.name(),
        refused: c.refused.clone(),
        send: c.send.clone(),
        stamped: c.stamped,
        unstamped: c.unstamped,
        kernel_latency_ms: Percentiles::of(&c.latency),
        user_latency_ms: Percentiles::of(latency),
        kernel_service_ms: Percentiles::of(&c.service),
        user_service_ms: Percentiles::of(service),
        delay_ms: Percentiles::of(&c.delay),
    }
}

impl ClockSummary {
    pub fn fell_back(&self) -> bool {
        self.used != Clock::Kernel.name()
    }

    /// The one-line statement of the clock, for every format.
    pub fn headline(&self) -> String {
        match &self.refused {
            Some(why) => {
                format!("Clock: user-space (kernel clock refused: {why}); no kernel figures")
            }
            None => format!(
                "Clock: kernel (receive stamp of the segment completing each response; send: {}); {} responses stamped, {} not (their end is the user-space clock's)",
                self.send, self.stamped, self.unstamped
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
        )?;
    }
    Ok(())
}
