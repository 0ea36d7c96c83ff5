//! The setup's phases as the reports show them: each phase's name, how many things it made
//! (secrets written, users created; 1 for a phase that is one step), its seconds and its
//! rate. Kept in `run.setup_phases` of the JSON report and the results file; rendered as
//! one `Setup` line of the text and verbose reports.

use std::io::{self, Write};

use serde::{Deserialize, Serialize};

/// One phase of a run's setup (or of its cleanup: the name then starts with "cleanup").
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct SetupPhase {
    pub name: String,
    /// How many things the phase made (or removed).
    pub count: u64,
    pub seconds: f64,
    /// `count` per second.
    pub rate: f64,
    /// The connections the phase ended on (its requests at the server's pace); 0: one
    /// request, or a phase of several kinds.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub connections: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl SetupPhase {
    pub fn new(name: &str, count: u64, seconds: f64) -> SetupPhase {
        SetupPhase {
            name: name.to_string(),
            count,
            seconds,
            rate: if seconds > 0.0 {
                count as f64 / seconds
            } else {
                0.0
            },
            connections: 0,
        }
    }

    /// "kv seeding 20000 in 12.30s (1626/s, 8 connections)", or "kv mount 0.005s" for a
    /// one-step phase.
    pub fn text(&self) -> String {
        if self.count > 1 || self.connections > 0 {
            let conns = match self.connections {
                0 => String::new(),
                1 => ", 1 connection".to_string(),
                n => format!(", {n} connections"),
            };
            format!(
                "{} {} in {:.2}s ({:.0}/s{conns})",
                self.name, self.count, self.seconds, self.rate
            )
        } else {
            format!("{} {:.3}s", self.name, self.seconds)
        }
    }
}

/// Each phase with the longest time any part gave it (shards set up their own users; the
/// fixture they share is set up once), in the order first seen.
pub fn merge<'a>(lists: impl Iterator<Item = &'a [SetupPhase]>) -> Vec<SetupPhase> {
    let mut out: Vec<SetupPhase> = Vec::new();
    for list in lists {
        for p in list {
            match out.iter_mut().find(|q| q.name == p.name) {
                Some(q) if p.seconds > q.seconds => *q = p.clone(),
                Some(_) => {}
                None => out.push(p.clone()),
            }
        }
    }
    out
}

/// The `Setup` line: the setup's seconds and its phases (nothing when none was recorded).
pub fn write(setup_s: f64, phases: &[SetupPhase], o: &mut dyn Write) -> io::Result<()> {
    if phases.is_empty() {
        return Ok(());
    }
    let list: Vec<String> = phases.iter().map(SetupPhase::text).collect();
    writeln!(o, "Setup {setup_s:.2}s: {}", list.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_read_as_one_line_and_merge_by_name() {
        let a = vec![
            SetupPhase::new("kv mount", 1, 0.05),
            SetupPhase {
                connections: 8,
                ..SetupPhase::new("kv seeding", 20000, 12.5)
            },
        ];
        let mut out = Vec::new();
        write(12.6, &a, &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "Setup 12.60s: kv mount 0.050s; kv seeding 20000 in 12.50s (1600/s, 8 connections)\n"
        );
        let b = [SetupPhase::new("kv seeding", 20000, 14.0)];
        let m = merge([&a[..], &b[..]].into_iter());
        assert_eq!(m.len(), 2);
        assert_eq!(m[1].seconds, 14.0);
        let mut none = Vec::new();
        write(1.0, &[], &mut none).unwrap();
        assert!(none.is_empty());
        assert_eq!(SetupPhase::new("x", 3, 0.0).rate, 0.0);
    }
}
