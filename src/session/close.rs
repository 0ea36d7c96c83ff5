//! Closing a session: everything it created removed (unless kept), newest first, on every
//! exit path (`close`, run on drop too); a removal the server is slow over waited for, what
//! was named looked for afterwards, what is left named with the command that removes it, and
//! the run's state file removed once nothing is left.

use std::time::Duration;

use crate::config::fixtures::Mode;
use crate::error::Error;
use crate::session::Session;
use crate::session::fixtures::{server, state};
use crate::signals::Stop;
use crate::vault::client::Client;

/// Timeout of each cleanup request: a removal the server takes longer over is waited for
/// by looking (`fixtures::server::wait_gone`, bounded by `--cleanup-timeout`).
const CLEANUP_TIMEOUT: Duration = Duration::from_secs(10);

/// How long the cleanup waits for a cluster to have an active node again (a PostgreSQL HA
/// lock outlives a killed node by up to 15 s).
const CLEANUP_ACTIVE_WAIT: Duration = Duration::from_secs(20);

impl Session {
    /// Removes everything the session created (unless asked to keep it). Idempotent. A
    /// removal the server takes long over is waited for (`--cleanup-timeout`), and what
    /// is named is looked for afterwards: a failure names what is left and the command
    /// that removes it. The state file goes once nothing is left.
    pub fn close(&mut self) -> Result<(), Error> {
        if self.closed {
            return Ok(());
        }
        self.closed = true;
        if self.keep {
            for c in self.created() {
                eprintln!("vblast: kept {}", c.what);
            }
            return Ok(());
        }
        let stop = self.stop.clone();
        // A cluster may have failed over since the last step, or during the setup: what
        // was created goes from the node active now.
        if !self.created().is_empty()
            && let Some(c) = &self.cluster
            && let Some(i) = c.active_now(&stop, CLEANUP_ACTIVE_WAIT)
        {
            self.target = c.targets[i].clone();
        }
        let urgent = server::UrgentStop::watch(&stop);
        let mut client = self
            .client(CLEANUP_TIMEOUT)
            .with_stop(urgent.stop().clone());
        let mut left = self.remove_fixtures(&mut client, &stop);
        if left.is_empty() {
            if let Some(dir) = &self.plan.state_dir {
                match self.naming.mode() {
                    Mode::Own | Mode::Remove => state::remove(dir, self.naming.run_id()),
                    Mode::Join => {
                        state::remove_shard(dir, self.naming.run_id(), std::process::id())
                    }
                    Mode::Create => {}
                }
            }
            return Ok(());
        }
        // A shard's own parent token is named by its own state file (it draws no name).
        let named = !self.naming.names().is_empty() || !self.naming.tokens().is_empty();
        if self.plan.state_dir.is_some() && named {
            left.push(format!(
                "or run `vblast cleanup --run-id {}` (with this run's address and token)",
                self.naming.run_id()
            ));
        }
        Err(Error::cleanup(server::one_per_line(&left)))
    }

    /// Each operation's cleanup, newest first, then a bounded look for what it named;
    /// returns a line per thing left.
    fn remove_fixtures(&mut self, client: &mut Client, stop: &Stop) -> Vec<String> {
        let names = self.naming.names();
        let own = self.naming.mode() != Mode::Join && !names.is_empty();
        // What of the names is there now, and of the tokens (a shard's parent token is its
        // own too); a failed look (a busy server's timeout) is made again where a removal
        // fails, so that a slow removal is still waited for.
        let tokens = self.naming.tokens();
        let before = look(client, own, &names, &tokens).ok();
        let mut left = Vec::new();
        let mut reported: Vec<String> = Vec::new();
        for i in (0..self.fixtures.len()).rev() {
            let created = self.fixtures[i].created();
            if created.is_empty() {
                continue;
            }
            let result = if stop.is_urgent() {
                Err(crate::error::Cause::from(
                    "cleanup skipped after a second signal",
                ))
            } else {
                self.fixtures[i].cleanup(client, stop)
            };
            let Err(e) = result else { continue };
            // A removal the server is still busy with (an auth path revoking its
            // tokens, a parent token its children): waited for, bounded.
            let (names_of, tokens_of) = (self.naming.names_of(i), self.naming.tokens_of(i));
            let known = match &before {
                Some(b) => b.clone(),
                None => look(client, own, &names_of, &tokens_of).unwrap_or_default(),
            };
            let mine: Vec<server::Found> = known
                .iter()
                .filter(|f| match f.table {
                    server::Table::Token => tokens_of.contains(&f.name),
                    _ => names_of.contains(&f.name),
                })
                .cloned()
                .collect();
            if !mine.is_empty()
                && !stop.is_urgent()
                && server::wait_gone(
                    client,
                    mine.clone(),
                    self.plan.cleanup_timeout,
                    stop,
                    self.log.display(),
                )
                .is_empty()
            {
                for f in &mine {
                    eprintln!("vblast: the server has removed {f}");
                }
                continue;
            }
            reported.extend(names_of);
            reported.extend(tokens_of);
            for c in created {
                left.push(format!(
                    "{} is left on {} ({e}): remove it with `{}`",
                    c.what,
                    self.target.base(),
                    c.remove_with
                ));
            }
        }
        if (own || !tokens.is_empty()) && !stop.is_urgent() {
            // A removal answered 204 is not yet a removal: look.
            let mut there = if own {
                server::locate(client, &names).unwrap_or_default()
            } else {
                Vec::new()
            };
            there.extend(server::locate_tokens(client, &tokens).unwrap_or_default());
            let there: Vec<server::Found> = there
                .into_iter()
                .filter(|f| !reported.contains(&f.name))
                .collect();
            for f in server::wait_gone(
                client,
                there,
                self.plan.cleanup_timeout,
                stop,
                self.log.display(),
            ) {
                left.push(format!(
                    "{f} is left on {} (still there after {}): remove it with `{}`",
                    self.target.base(),
                    humantime::format_duration(self.plan.cleanup_timeout),
                    f.table.command(&f.name)
                ));
            }
        }
        left
    }

    /// `close`, printing a failure (for paths that already have an error to report).
    pub(super) fn close_reporting(&mut self) {
        if let Err(e) = self.close() {
            eprintln!("vblast: {e}");
        }
    }
}

/// What of `names` (when the session made them: `own`) and of `tokens` is on the server.
fn look(
    client: &mut Client,
    own: bool,
    names: &[String],
    tokens: &[String],
) -> Result<Vec<server::Found>, crate::error::Cause> {
    let mut there = if own {
        server::locate(client, names)?
    } else {
        Vec::new()
    };
    there.extend(server::locate_tokens(client, tokens)?);
    Ok(there)
}

impl Drop for Session {
    fn drop(&mut self) {
        self.close_reporting();
    }
}
