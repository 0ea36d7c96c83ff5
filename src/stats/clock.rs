//! The second clock of a `--clock kernel` run (`src/net/stamp.rs`): each request's
//! latency and service time ended by the kernel's receive stamp of the segment that
//! completed its response, and the client's own delay (the user-space clock's end less
//! the kernel's), beside the user-space figures every run keeps (`OpStats`). The send is
//! the user-space clock's, read just before the write (no TX stamp is taken).

use serde::{Deserialize, Serialize};

use super::Hist;
use crate::net::stamp::Clock;

/// What the send instant of every request is, said in every format.
pub const SEND: &str = "user-space clock just before the write";

/// A `--clock kernel` run's figures from the kernel's clock.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ClockFigures {
    /// The clock that ended the latencies: kernel, or user when the socket refused
    /// SO_TIMESTAMPING (then `refused` says why, and only the user figures exist).
    pub used: Clock,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
    /// Where each request's start was taken (`SEND`).
    pub send: String,
    /// Measured responses ended by a kernel stamp.
    pub stamped: u64,
    /// Measured responses whose completing read carried no stamp: their kernel figures
    /// are the user-space clock's.
    pub unstamped: u64,
    /// From the intended start (the open model's) to the kernel's end.
    pub latency: Hist,
    /// From the send to the kernel's end.
    pub service: Hist,
    /// The user-space clock's end less the kernel's: the client's own delay.
    pub delay: Hist,
}

impl ClockFigures {
    /// The figures of a run that asked for the kernel clock and got `used` (`refused`:
    /// why not).
    pub fn new(used: Clock, refused: Option<String>) -> ClockFigures {
        ClockFigures {
            used,
            refused,
            send: SEND.into(),
            ..Default::default()
        }
    }

    /// One measured response: latency and service in microseconds ended by the kernel
    /// (`delay_us`: how much later the user-space clock ended it; None: no stamp).
    #[inline]
    pub fn record(&mut self, latency_us: u64, service_us: u64, delay_us: Option<u64>) {
        match delay_us {
            Some(d) => {
                self.stamped += 1;
                self.delay.record(d);
            }
            None => self.unstamped += 1,
        }
        self.latency.record(latency_us);
        self.service.record(service_us);
    }

    pub fn merge(&mut self, o: &ClockFigures) {
        if o.used == Clock::User {
            self.used = Clock::User;
            if self.refused.is_none() {
                self.refused.clone_from(&o.refused);
            }
        }
        self.stamped += o.stamped;
        self.unstamped += o.unstamped;
        self.latency.add(&o.latency);
        self.service.add(&o.service);
        self.delay.add(&o.delay);
    }
}
