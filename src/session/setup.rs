//! Setting a session's operations up: each fixture's checks, the server's preflight, each
//! operation's setup (its phases timed), the wait for a cluster's standbys to serve the new
//! fixtures, the `--audit-path` device enabled last (and its count read back), and the
//! requests each configured operation sends.

use std::time::{Duration, SystemTime};

use crate::config::cluster::NodesMode;
use crate::config::scenario::OpChoice;
use crate::error::Error;
use crate::session::Session;
use crate::vault::ops::{SetupCtx, VaultOp};
use crate::vault::preflight::preflight;
use crate::workload::Operation;

/// How long standbys may take to serve a fresh fixture (`Session::wait_for_standbys`).
const STANDBY_READY_WAIT: Duration = Duration::from_secs(10);

impl Session {
    /// The checks, then each operation's setup, stopping at a signal.
    pub(super) fn set_up(&mut self, no_setup: bool) -> Result<(), Error> {
        // Setup requests end soon after a signal; cleanup's client has no such stop.
        let proto = self.client(self.timeout).with_stop(self.stop.clone());
        let make = || proto.clone_fresh();
        let ctx = SetupCtx {
            make_client: &make,
            tls: self.tls.as_ref(),
            no_setup,
            stop: &self.stop,
            naming: &self.naming,
            log: &self.log,
        };
        for f in &self.fixtures {
            f.check(&ctx)?;
        }
        self.log.fixture("checks", || {
            if no_setup {
                self.check_reachable()
            } else {
                preflight(&mut proto.clone_fresh()).map_err(Error::unreachable)
            }
        })?;
        for (i, f) in self.fixtures.iter_mut().enumerate() {
            if let Some(s) = self.stop.signal() {
                return Err(Error::Stopped(s));
            }
            self.naming.set_owner(i);
            if no_setup {
                f.setup(&ctx)?;
                continue;
            }
            // An operation that kept no phase of its own is one phase, with its line.
            let name = format!("{} setup", f.operation().name);
            self.log.fixture(&name, || f.setup(&ctx))?;
        }
        if let Some(s) = self.stop.signal() {
            return Err(Error::Stopped(s));
        }
        Ok(())
    }

    /// `--nodes all` / `each` send load to standbys, which load a new fixture (a mount) a
    /// moment after the active node it was made on: wait, bounded, until every unsealed
    /// node answers for each fixture itself (asked without forwarding), so the run does
    /// not count that moment as failures. A node still not ready is only noted: its
    /// answers are then measured as they are.
    pub(super) fn wait_for_standbys(&self) {
        let Some(cluster) = self
            .cluster
            .as_ref()
            .filter(|c| c.mode != NodesMode::Active)
        else {
            return;
        };
        let active = cluster.route.active();
        let deadline = std::time::Instant::now() + STANDBY_READY_WAIT;
        for i in cluster.view.unsealed().into_iter().filter(|&i| i != active) {
            let t = &cluster.targets[i];
            let mut client = self.client_for(t, self.timeout).without_forwarding();
            for f in &self.fixtures {
                loop {
                    if self.stop.signal().is_some() {
                        return;
                    }
                    match f.ready_on(&mut client) {
                        Ok(true) => break,
                        Ok(false) | Err(_) if std::time::Instant::now() < deadline => {
                            std::thread::sleep(Duration::from_millis(50));
                        }
                        Ok(false) | Err(_) => {
                            eprintln!(
                                "vblast: note: {} does not serve the fixture yet after {} s; its answers are measured as they come",
                                t.base(),
                                STANDBY_READY_WAIT.as_secs()
                            );
                            break;
                        }
                    }
                }
            }
        }
    }

    /// `--audit-path`: the file audit device, the session's last fixture (so that its
    /// cleanup disables it on every exit path), enabled after the operations' setup.
    pub(super) fn enable_audit(&mut self) -> Result<(), Error> {
        let (path, log) = (self.plan.audit_path.clone(), self.plan.audit_log.clone());
        if path.is_none() && log.is_none() {
            return Ok(());
        }
        let proto = self.client(self.timeout).with_stop(self.stop.clone());
        let make = || proto.clone_fresh();
        let ctx = SetupCtx {
            make_client: &make,
            tls: self.tls.as_ref(),
            no_setup: false,
            stop: &self.stop,
            naming: &self.naming,
            log: &self.log,
        };
        self.naming.set_owner(self.fixtures.len());
        let (device, counted) = crate::vault::audit::prepare(&ctx, path.as_deref(), log.as_deref());
        self.fixtures.push(Box::new(device));
        self.audit = counted?;
        Ok(())
    }

    /// `--audit-path`, `--audit-log` of a local server: the responses its audit log holds
    /// per operation (from `from` and the log's start for the run on, up to `until`), in
    /// the order of `op_names`, beside the client's `counts` (`in_flight`: the requests a
    /// stop left under way), as the report's line. None without an audit log.
    pub fn audit_line(
        &self,
        from: Option<SystemTime>,
        until: Option<SystemTime>,
        counts: &[u64],
        in_flight: u64,
    ) -> Option<String> {
        let log = self.audit.as_ref()?;
        let from = from.map_or(log.since, |f| f.max(log.since));
        Some(
            match crate::vault::audit::count(&log.file, &self.operations, Some(from), until) {
                Ok(audit) => {
                    crate::vault::audit::agreement(&self.op_names(), &audit, counts, in_flight)
                }
                Err(e) => format!("audit log not counted (a server on another machine?): {e}"),
            },
        )
    }
}

/// The report rows `choices` will have, known before setup: each operation's name (or
/// label), then its steps' (`NAME/STEP`). What a threshold may name.
pub fn row_names(choices: &[OpChoice]) -> Result<Vec<String>, crate::error::Cause> {
    let fixtures = crate::vault::ops::build(choices)?;
    Ok(fixtures
        .iter()
        .zip(choices)
        .flat_map(|(f, c)| steps_of(f.as_ref(), c))
        .map(|o| o.name)
        .collect())
}

/// The requests of one configured operation (`labelled`).
pub(super) fn steps_of(fixture: &dyn VaultOp, choice: &OpChoice) -> Vec<Operation> {
    labelled(fixture.operations(), choice)
}

/// An operation's requests as configured: the first with the choice's weight; a labelled
/// operation (a vault-benchmark test's name) reports under its label, its steps keeping
/// their suffix ("NAME/create").
fn labelled(mut steps: Vec<Operation>, choice: &OpChoice) -> Vec<Operation> {
    if let Some(first) = steps.first_mut() {
        first.weight = choice.weight;
    }
    if let Some(label) = &choice.label {
        for step in &mut steps {
            step.name = match step.name.strip_prefix(choice.name.as_str()) {
                Some(rest) => format!("{label}{rest}"),
                None => label.clone(),
            };
        }
    }
    steps
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::template::RequestSpec;

    fn op(name: &str) -> Operation {
        Operation::new(
            name,
            RequestSpec {
                method: "GET".into(),
                path: Vec::new(),
                headers: Vec::new(),
                body: None,
                captured_headers: Vec::new(),
            },
        )
    }

    fn choice(label: Option<&str>) -> OpChoice {
        OpChoice {
            name: "approle-login".into(),
            weight: 7,
            config: serde_json::Value::Null,
            label: label.map(String::from),
        }
    }

    fn names_weights(steps: &[Operation]) -> Vec<(String, u32)> {
        steps.iter().map(|o| (o.name.clone(), o.weight)).collect()
    }

    #[test]
    fn the_first_step_takes_the_weight_and_names_stay_without_a_label() {
        let mut second = op("approle-login/read");
        second.weight = 0;
        let steps = labelled(vec![op("approle-login"), second], &choice(None));
        assert_eq!(
            names_weights(&steps),
            [
                ("approle-login".to_string(), 7),
                ("approle-login/read".to_string(), 0)
            ]
        );
        assert!(labelled(Vec::new(), &choice(None)).is_empty());
    }

    #[test]
    fn a_label_replaces_the_name_and_keeps_each_suffix() {
        let steps = labelled(
            vec![op("approle-login"), op("approle-login/read"), op("other")],
            &choice(Some("logins")),
        );
        let names: Vec<String> = steps.into_iter().map(|o| o.name).collect();
        assert_eq!(names, ["logins", "logins/read", "logins"]);
    }
}
