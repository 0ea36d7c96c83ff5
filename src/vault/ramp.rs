//! How many connections a setup phase's requests use, at the server's pace: start with a
//! few, double them while the server's throughput grows, and once a doubling brings no
//! gain (in two windows running, so that one noisy window does not decide) go back to the
//! best level and hold it to the end (a server with no spare core is not made faster by
//! more connections, only more crowded). Pure: fed the throughput of each window at the
//! current level, it says the level of the next (`vault/bulk.rs` runs it).

/// Where the search stands.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RampState {
    /// Trying `level` connections; the best so far was `best` per second at `best_level`.
    Probing {
        level: usize,
        best: f64,
        best_level: usize,
    },
    /// `level` brought no gain in one window, which another window at `level` confirms
    /// (the two windows' mean is judged) or not.
    Confirming {
        level: usize,
        best: f64,
        best_level: usize,
        first: f64,
    },
    /// The level found (or given): kept to the end.
    Holding { level: usize },
}

/// The search for the level of most throughput.
#[derive(Clone, Debug)]
pub struct Ramp {
    state: RampState,
    max: usize,
}

/// A doubling must raise the throughput by more than this share to count as growth.
pub const GAIN: f64 = 0.08;

impl Ramp {
    /// A search from `start` connections, never above `max`.
    pub fn new(start: usize, max: usize) -> Ramp {
        let max = max.max(1);
        let start = start.clamp(1, max);
        Ramp {
            state: if start == max {
                RampState::Holding { level: start }
            } else {
                RampState::Probing {
                    level: start,
                    best: 0.0,
                    best_level: start,
                }
            },
            max,
        }
    }

    /// No search: `level` connections throughout.
    pub fn fixed(level: usize) -> Ramp {
        let level = level.max(1);
        Ramp {
            state: RampState::Holding { level },
            max: level,
        }
    }

    pub fn state(&self) -> RampState {
        self.state
    }

    /// The connections to use now.
    pub fn level(&self) -> usize {
        match self.state {
            RampState::Probing { level, .. }
            | RampState::Confirming { level, .. }
            | RampState::Holding { level } => level,
        }
    }

    /// Whether the level may still change (a window's throughput is wanted).
    pub fn probing(&self) -> bool {
        !matches!(self.state, RampState::Holding { .. })
    }

    /// One window's throughput (per second) at the current level; returns the next level.
    pub fn observe(&mut self, rate: f64) -> usize {
        self.state = match self.state {
            RampState::Probing {
                level,
                best,
                best_level,
            } => {
                if grew(rate, best) {
                    self.up(level, rate)
                } else if best > 0.0 {
                    RampState::Confirming {
                        level,
                        best,
                        best_level,
                        first: rate,
                    }
                } else {
                    RampState::Holding { level: best_level }
                }
            }
            RampState::Confirming {
                level,
                best,
                best_level,
                first,
            } => {
                let mean = (first + rate) / 2.0;
                if grew(mean, best) {
                    self.up(level, mean)
                } else {
                    RampState::Holding { level: best_level }
                }
            }
            held => held,
        };
        self.level()
    }

    /// `level` gave `rate`, the best so far: double it, or hold it at the cap.
    fn up(&self, level: usize, rate: f64) -> RampState {
        let next = (level * 2).min(self.max);
        if next == level {
            RampState::Holding { level }
        } else {
            RampState::Probing {
                level: next,
                best: rate,
                best_level: level,
            }
        }
    }
}

/// Whether `rate` is more than the noise above `best`.
fn grew(rate: f64, best: f64) -> bool {
    rate > 0.0 && rate > best * (1.0 + GAIN)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server whose throughput grows with connections up to `knee`, then stays flat.
    fn server(knee: usize) -> impl Fn(usize) -> f64 {
        move |c| 100.0 * c.min(knee) as f64
    }

    #[test]
    fn ramps_up_while_throughput_grows_and_holds_the_best_level() {
        let s = server(6);
        let mut r = Ramp::new(1, 64);
        let mut seen = vec![r.level()];
        while r.probing() {
            let l = r.observe(s(r.level()));
            seen.push(l);
        }
        // 1, 2, 4, 8 (6 is the knee: 8 gains 50% over 4), 16 gains nothing in two
        // windows: back to 8.
        assert_eq!(seen, vec![1, 2, 4, 8, 16, 16, 8]);
        assert_eq!(r.state(), RampState::Holding { level: 8 });
        // Held: later windows change nothing, whatever they measure.
        assert_eq!(r.observe(1.0), 8);
        assert_eq!(r.observe(1e9), 8);
    }

    #[test]
    fn a_server_with_no_spare_capacity_is_held_where_it_started() {
        let mut r = Ramp::new(2, 64);
        assert_eq!(r.observe(500.0), 4);
        // 4 connections: 3% more, within the noise; and again: back to 2.
        assert_eq!(r.observe(515.0), 4);
        assert!(matches!(r.state(), RampState::Confirming { level: 4, .. }));
        assert_eq!(r.observe(505.0), 2);
        assert_eq!(r.state(), RampState::Holding { level: 2 });
    }

    #[test]
    fn one_noisy_window_does_not_stop_the_ramp() {
        let mut r = Ramp::new(2, 64);
        assert_eq!(r.observe(500.0), 4);
        // A window that a busy machine slowed, then the real gain: the mean grew.
        assert_eq!(r.observe(300.0), 4);
        assert_eq!(r.observe(1000.0), 8);
        assert!(matches!(
            r.state(),
            RampState::Probing {
                level: 8,
                best_level: 4,
                ..
            }
        ));
    }

    #[test]
    fn the_level_stops_at_the_cap_and_a_fixed_ramp_never_moves() {
        let s = server(1000);
        let mut r = Ramp::new(4, 20);
        while r.probing() {
            r.observe(s(r.level()));
        }
        assert_eq!(r.level(), 20);
        let mut f = Ramp::fixed(3);
        assert!(!f.probing());
        assert_eq!(f.observe(10.0), 3);
        assert_eq!(Ramp::fixed(0).level(), 1);
        assert_eq!(Ramp::new(8, 8).state(), RampState::Holding { level: 8 });
        // A stalled first window (nothing done) holds the start level.
        let mut z = Ramp::new(2, 64);
        assert_eq!(z.observe(0.0), 2);
        assert!(!z.probing());
    }
}
