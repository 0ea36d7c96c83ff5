//! The second clock of a `--clock kernel` run (`src/net/stamp.rs`): each request's
//! latency and service time ended by the kernel's receive stamp of the segment that
//! completed its response, and the client's own delay (the user-space clock's end less
//! the kernel's), beside the user-space figures every run keeps (`OpStats`), run-wide and
//! per operation. The send is the user-space clock's, read just before the write; with
//! `--clock kernel-tx`, the kernel's TX stamp of the request's last byte, where one was
//! tied (the others counted apart).

use serde::{Deserialize, Serialize};

use super::Hist;
use crate::net::stamp::Clock;

/// What the send instant of every request is, said in every format.
pub const SEND: &str = "user-space clock just before the write";
/// The send of `--clock kernel-tx` (`send_unstamped` requests fell back to `SEND`).
pub const SEND_TX: &str = "kernel TX stamp of the request's last byte";

/// Where one measured request's send was taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TxSend {
    /// Not asked (`--clock kernel`): the user-space clock before the write.
    NotAsked,
    /// The kernel's TX stamp of its last byte.
    Stamped,
    /// `--clock kernel-tx`, but no stamp was tied: the user-space clock before the write.
    FellBack,
    /// The kernel's TX stamp, but after the kernel's RX end (never expected: counted,
    /// its service time 0).
    AfterEnd,
}

/// One operation's figures from the kernel's clock.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct OpClock {
    pub latency: Hist,
    pub service: Hist,
    pub delay: Hist,
}

impl OpClock {
    fn add(&mut self, o: &OpClock) {
        self.latency.add(&o.latency);
        self.service.add(&o.service);
        self.delay.add(&o.delay);
    }
}

/// A `--clock kernel` run's figures from the kernel's clock.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ClockFigures {
    /// The clock that ended the latencies: kernel or kernel-tx, or user when the socket
    /// refused SO_TIMESTAMPING (then `refused` says why, and only the user figures exist).
    pub used: Clock,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
    /// `--clock kernel-tx` asked and its TX stamps refused: why (the run is `kernel`,
    /// its sends the user-space clock's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_refused: Option<String>,
    /// Where each request's start was taken (`SEND`, `SEND_TX`).
    pub send: String,
    /// Measured responses ended by a kernel stamp.
    pub stamped: u64,
    /// Measured responses whose completing read carried no stamp: their kernel figures
    /// are the user-space clock's.
    pub unstamped: u64,
    /// `--clock kernel-tx`: measured requests sent by the kernel's TX stamp, those that
    /// fell back to the user-space send, and those whose TX stamp came after the RX end
    /// (among the stamped; never expected).
    #[serde(default)]
    pub send_stamped: u64,
    #[serde(default)]
    pub send_unstamped: u64,
    #[serde(default)]
    pub send_after_end: u64,
    /// From the intended start (the open model's) to the kernel's end.
    pub latency: Hist,
    /// From the send to the kernel's end.
    pub service: Hist,
    /// The user-space clock's end less the kernel's: the client's own delay.
    pub delay: Hist,
    /// Per operation, in the mix's order (several operations; allocated up front).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ops: Vec<OpClock>,
}

/// How much of the kernel's clock a run has: user < kernel < kernel-tx.
fn rank(c: Clock) -> u8 {
    match c {
        Clock::User => 0,
        Clock::Kernel => 1,
        Clock::KernelTx => 2,
    }
}

impl ClockFigures {
    /// The figures of a run of `ops` operations that asked for the kernel clock and got
    /// `used` (`refused`: why not; `send_refused`: why not its TX stamps).
    pub fn new(
        used: Clock,
        refused: Option<String>,
        send_refused: Option<String>,
        ops: usize,
    ) -> ClockFigures {
        ClockFigures {
            used,
            refused,
            send_refused,
            send: if used == Clock::KernelTx {
                SEND_TX
            } else {
                SEND
            }
            .into(),
            ops: if ops > 1 {
                vec![OpClock::default(); ops]
            } else {
                Vec::new()
            },
            ..Default::default()
        }
    }

    /// One measured response of operation `op`: latency and service in microseconds
    /// ended by the kernel (`delay_us`: how much later the user-space clock ended it;
    /// None: no stamp), and where its send was taken.
    #[inline]
    pub fn record(
        &mut self,
        op: usize,
        latency_us: u64,
        service_us: u64,
        delay_us: Option<u64>,
        send: TxSend,
    ) {
        match delay_us {
            Some(d) => {
                self.stamped += 1;
                self.delay.record(d);
            }
            None => self.unstamped += 1,
        }
        match send {
            TxSend::NotAsked => {}
            TxSend::Stamped => self.send_stamped += 1,
            TxSend::FellBack => self.send_unstamped += 1,
            TxSend::AfterEnd => {
                self.send_stamped += 1;
                self.send_after_end += 1;
            }
        }
        self.latency.record(latency_us);
        self.service.record(service_us);
        if let Some(o) = self.ops.get_mut(op) {
            o.latency.record(latency_us);
            o.service.record(service_us);
            if let Some(d) = delay_us {
                o.delay.record(d);
            }
        }
    }

    /// Where the sends were taken, in words, with the fallbacks counted.
    pub fn send_said(&self) -> String {
        match (&self.send_refused, self.used) {
            (Some(why), _) => format!("{SEND} (kernel TX stamps refused: {why})"),
            (None, Clock::KernelTx) => format!(
                "{SEND_TX}; {} requests fell back to the user-space clock before the write",
                self.send_unstamped
            ),
            _ => self.send.clone(),
        }
    }

    pub fn merge(&mut self, o: &ClockFigures) {
        if rank(o.used) < rank(self.used) {
            self.used = o.used;
            self.send.clone_from(&o.send);
        }
        if self.refused.is_none() {
            self.refused.clone_from(&o.refused);
        }
        if self.send_refused.is_none() {
            self.send_refused.clone_from(&o.send_refused);
        }
        self.stamped += o.stamped;
        self.unstamped += o.unstamped;
        self.send_stamped += o.send_stamped;
        self.send_unstamped += o.send_unstamped;
        self.send_after_end += o.send_after_end;
        self.latency.add(&o.latency);
        self.service.add(&o.service);
        self.delay.add(&o.delay);
        if self.ops.len() < o.ops.len() {
            self.ops.resize(o.ops.len(), OpClock::default());
        }
        for (mine, theirs) in self.ops.iter_mut().zip(&o.ops) {
            mine.add(theirs);
        }
    }
}
