//! Revoking every lease under a prefix (a database mount's credentials: each revocation
//! drops a database user) so that the mount never stays behind: the revocation is queued
//! on the server and watched, with progress on stderr, bounded by `--cleanup-timeout`;
//! past the bound the leases still there are forced out (`sys/leases/revoke-force`: the
//! server forgets them without asking the backend), and the message says how many and
//! what became of their users. The mount can then be disabled. The wait is shown on the
//! setup's progress line (`vault::progress`).

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::error::Cause;
use crate::signals::Stop;
use crate::vault::client::Client;
use crate::vault::progress::{Display, SetupLog};

/// What became of the leases under a prefix.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Revoked {
    /// Leases there when the revocation started.
    pub found: u64,
    /// Leases forced out past the bound (their backend objects, a database's users, remain).
    pub forced: u64,
}

/// How often the count is read, and how often the wait says so.
const POLL: Duration = Duration::from_millis(500);
const PROGRESS_EVERY: Duration = Duration::from_secs(5);

/// The leases under `prefix` ("vblast-db-x/creds/"), counted one directory level deep
/// (`LIST sys/leases/lookup/...`).
pub fn count(client: &mut Client, prefix: &str) -> Result<u64, Cause> {
    let mut n = 0;
    let mut dirs = vec![format!("{}/", prefix.trim_end_matches('/'))];
    while let Some(dir) = dirs.pop() {
        for key in list(client, &dir)? {
            if key.ends_with('/') {
                dirs.push(format!("{dir}{key}"));
            } else {
                n += 1;
            }
        }
    }
    Ok(n)
}

fn list(client: &mut Client, dir: &str) -> Result<Vec<String>, Cause> {
    let path = format!("/v1/sys/leases/lookup/{dir}");
    let r = client
        .request("LIST", &path, None)
        .map_err(|e| e.within(format!("listing the leases under '{dir}' failed")))?;
    match r.status {
        200..=299 => Ok(r
            .json()
            .and_then(|v| {
                v.pointer("/data/keys").and_then(Value::as_array).map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(String::from)
                        .collect()
                })
            })
            .unwrap_or_default()),
        404 => Ok(Vec::new()),
        status => Err(Cause::Http {
            what: format!(
                "listing the leases under '{dir}' on {} failed",
                client.base()
            ),
            status,
            excerpt: r.error_text(),
        }),
    }
}

fn put(client: &mut Client, path: &str, what: &str) -> Result<(), Cause> {
    let r = client
        .request("PUT", path, None)
        .map_err(|e| e.within(format!("{what} failed")))?;
    if (200..300).contains(&r.status) {
        Ok(())
    } else {
        Err(Cause::Http {
            what: format!("{what} on {} failed", client.base()),
            status: r.status,
            excerpt: r.error_text(),
        })
    }
}

/// Revokes every lease under `prefix`, waiting as long as the server takes up to `bound`
/// (a second signal ends the wait), then forces out what is left; says on stderr what it
/// waits for and what it forced.
/// The wait has the setup's progress line (`display`): leases revoked of those found, the
/// rate and the ETA.
pub fn revoke_all(
    client: &mut Client,
    prefix: &str,
    bound: Duration,
    stop: &Stop,
    display: Display,
) -> Result<Revoked, Cause> {
    let found = count(client, prefix)?;
    if found == 0 {
        return Ok(Revoked::default());
    }
    // Queued: the server revokes in the background, whatever becomes of this client. It
    // answers only once every lease is queued (about 10 s for 1,000 on OpenBao 2.7 dev,
    // past the setup client's timeout), so this call has the cleanup's own bound, on a
    // connection of its own; the bound covers it and the wait after it.
    let start = Instant::now();
    let mut queueing = client.clone_fresh().with_timeout(bound);
    put(
        &mut queueing,
        &format!("/v1/sys/leases/revoke-prefix/{prefix}?sync=false"),
        &format!("revoking the leases under '{prefix}'"),
    )?;
    let log = SetupLog::new(display);
    let mut line = log.start(&format!("revoking the leases under '{prefix}'"), found);
    let mut said = start;
    let mut left = found;
    while left > 0 && start.elapsed() < bound && !stop.is_urgent() {
        std::thread::sleep(POLL);
        if let Ok(n) = count(client, prefix) {
            left = n;
        }
        line.show(found.saturating_sub(left));
        if left > 0 && said.elapsed() >= PROGRESS_EVERY {
            said = Instant::now();
            line.say(&format!(
                "revoking the leases under '{prefix}': {left} of {found} left ({} s so far, at most {}; a second Ctrl-C stops the wait)",
                start.elapsed().as_secs(),
                humantime::format_duration(bound)
            ));
        }
    }
    line.finish(found.saturating_sub(left), 1);
    if left == 0 {
        return Ok(Revoked { found, forced: 0 });
    }
    put(
        client,
        &format!("/v1/sys/leases/revoke-force/{prefix}"),
        &format!("forcing out the leases under '{prefix}'"),
    )?;
    eprintln!(
        "vblast: {left} of {found} leases under '{prefix}' were not revoked {}: forced out (the server forgot them without asking the backend: their database users remain until their VALID UNTIL, or until dropped by hand); the mount goes now",
        if stop.is_urgent() {
            "before the second signal".to_string()
        } else {
            format!("within {}", humantime::format_duration(bound))
        }
    );
    Ok(Revoked {
        found,
        forced: left,
    })
}
