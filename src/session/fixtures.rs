//! The fixture the shards of one run share, made or removed in a session of its own
//! (`shared_session`), the shards' rendezvous around it (`rendezvous`), the state file
//! that names what a run made (`state`), what is on the server under vblast's names
//! (`server`: existence checks, waits for a removal, orphans) and the tokens a killed
//! run's last requests made after its removal (`late`). How the fixture is named
//! and waited for is `vault::fixture`.

pub mod late;
pub mod rendezvous;
pub mod server;
pub mod state;

use crate::config::scenario::Scenario;
use crate::error::{Cause, Error};
use crate::session::Session;
use crate::signals::Stop;
use crate::vault::client::Client;
use crate::vault::fixture::{Made, Mode, Naming};
use crate::vault::ops::{Fixture, fixture_of};
use crate::vault::progress::Display;

use server::{Found, Table};

/// The naming of a session of `scenario`: its run id and mode, each name printed and
/// written to the run's state file as it is drawn (a shard's own tokens to a state file
/// of the shard process's own).
pub fn naming(scenario: &Scenario) -> Naming {
    Naming::new(&scenario.fixtures).with_recorder(state::recorder(
        scenario.fixtures.state_dir.clone(),
        scenario.address.clone(),
        scenario.namespace.clone(),
        (scenario.fixtures.mode == Mode::Join).then(std::process::id),
    ))
}

/// `scenario` with its fixtures in `mode` under run `run_id`.
pub fn in_mode(scenario: &Scenario, mode: Mode, run_id: &str) -> Scenario {
    let mut s = scenario.clone();
    s.fixtures.mode = mode;
    s.fixtures.run_id = Some(run_id.to_string());
    s
}

/// Opens and closes one session of the shared fixture in `mode` (Create keeps what it
/// made, Remove removes it: `remove_shared` says what) and returns the fixture names the
/// session drew. Its progress (setup, the waits of its cleanup) is shown as `display` says.
pub fn shared_session(
    scenario: &Scenario,
    stop: &Stop,
    mode: Mode,
    run_id: &str,
    display: Display,
) -> Result<Vec<String>, Error> {
    let mut scenario = in_mode(scenario, mode, run_id);
    // A setup failing half-way removes what it made; cleanup removes the fixture on close.
    scenario.keep = false;
    let mut session = Session::open_showing(&scenario, stop, display)?;
    // A complete setup keeps the fixture (the shards use it).
    session.set_keep(mode == Mode::Create);
    let names = session.fixture_names();
    session.close()?;
    Ok(names)
}

/// Removes the shared fixture of run `run_id` (a `Mode::Remove` session), saying on
/// stderr, for each of its names and prefixes, whether it was removed or not found;
/// returns them and, as an error, what is left. Its waits are shown as `display` says.
pub fn remove_shared(
    scenario: &Scenario,
    stop: &Stop,
    run_id: &str,
    display: Display,
) -> (Made, Result<(), Error>) {
    let mut scenario = in_mode(scenario, Mode::Remove, run_id);
    scenario.keep = false;
    let mut session = match Session::open_showing(&scenario, stop, display) {
        Ok(s) => s,
        Err(e) => return (Made::default(), Err(e)),
    };
    let made = session.fixture_made();
    let looked = server::client_of(&scenario, LOOK_TIMEOUT).and_then(|mut client| {
        let before = server::locate_made(&mut client, &made).map_err(Error::Cleanup)?;
        Ok((client, before))
    });
    let closed = session.close();
    if let Ok((mut client, before)) = looked {
        let after = server::locate_made(&mut client, &made).unwrap_or_default();
        report(&client, &made, &before, &after);
    }
    (made, closed)
}

/// Each request of a look at the server's tables.
const LOOK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// Says, for each name, prefix and token of `made`, whether it was removed (there
/// before, gone after) or not found (there before nothing); what is still there is the
/// caller's to report. More than `ONE_BY_ONE` objects of one table under a prefix (an
/// identity run's entities) are said on one line.
fn report(client: &Client, made: &Made, before: &[Found], after: &[Found]) {
    let removed = |f: &Found| !after.contains(f);
    for n in &made.names {
        match before.iter().find(|f| &f.name == n) {
            Some(f) if removed(f) => eprintln!("vblast: removed {f}"),
            Some(_) => {}
            None => eprintln!(
                "vblast: not found: '{n}' (no mount, auth path or policy by that name on {})",
                client.base()
            ),
        }
    }
    for p in &made.prefixes {
        let under: Vec<&Found> = before
            .iter()
            .filter(|f| f.name.starts_with(p.as_str()))
            .collect();
        if under.is_empty() {
            eprintln!(
                "vblast: not found: '{p}*' (no mount, auth path, policy, identity entity or group so named on {})",
                client.base()
            );
        }
        for table in [
            Table::Group,
            Table::Entity,
            Table::Policy,
            Table::Auth,
            Table::Mount,
        ] {
            let gone: Vec<&&Found> = under
                .iter()
                .filter(|f| f.table == table && removed(f))
                .collect();
            if gone.len() > ONE_BY_ONE {
                let label = table.label();
                let many = match label.strip_suffix('y') {
                    Some(stem) => format!("{stem}ies"),
                    None => format!("{label}s"),
                };
                eprintln!("vblast: removed {} {many} named '{p}*'", gone.len());
            } else {
                for f in gone {
                    eprintln!("vblast: removed {f}");
                }
            }
        }
    }
    for t in &made.tokens {
        match before
            .iter()
            .find(|f| f.table == Table::Token && &f.name == t)
        {
            Some(f) if removed(f) => eprintln!("vblast: removed {f}"),
            Some(_) => {}
            None => eprintln!(
                "vblast: not found: token with accessor '{t}' (no such token on {}: revoked, with its child tokens, or expired)",
                client.base()
            ),
        }
    }
}

/// Up to this many objects of one table under a prefix get a line each.
const ONE_BY_ONE: usize = 5;

/// `vblast cleanup` from a state file: looks for each name, prefix and token of `made`,
/// removes what is there (a token by its accessor, with its children), waits (bounded by
/// `timeout`, a second signal ends the wait) until the server has removed it, and says
/// for each removed or not found; the error names what is left with the commands that
/// remove it. The wait has a progress line as `display` says.
pub fn remove_names(
    client: &mut Client,
    made: &Made,
    timeout: std::time::Duration,
    stop: &Stop,
    display: Display,
) -> Result<(), Error> {
    let before = server::locate_made(client, made).map_err(Error::Cleanup)?;
    for f in &before {
        if stop.is_urgent() {
            break;
        }
        // Identity objects go at once, and may be many: said once removed.
        if !matches!(f.table, Table::Entity | Table::Group) {
            eprintln!("vblast: removing {f}");
        }
        if let Err(e) = server::remove(client, f) {
            eprintln!("vblast: {e} (looking whether the server goes on)");
        }
    }
    let left = server::wait_gone(client, before.clone(), timeout, stop, display);
    report(client, made, &before, &left);
    let secrets = remove_secrets(client, &made.secrets, stop, display);
    match (left.is_empty(), secrets) {
        (true, Ok(())) => Ok(()),
        (true, Err(e)) => Err(Error::cleanup(e)),
        (false, Ok(())) => Err(server::left_on(client, &left)),
        (false, Err(e)) => Err(Error::cleanup(format!(
            "{}\nvblast: {e}",
            server::left_on(client, &left)
        ))),
    }
}

/// The secrets written under each of `all` (prefixes of mounts the run did not make):
/// removed, each said removed (with its count) or not found; the error says what is left.
fn remove_secrets(
    client: &Client,
    all: &[crate::vault::fixture::SecretsUnder],
    stop: &Stop,
    display: Display,
) -> Result<(), String> {
    let mut left = Vec::new();
    for under in all {
        let place = format!("'{}/{}'", under.mount, under.prefix);
        if stop.is_urgent() {
            left.push(format!(
                "the secrets under {place} are left (cleanup stopped)"
            ));
            continue;
        }
        match crate::vault::ops::kv::remove_secrets_under(client, under, display, stop) {
            Ok(0) => eprintln!(
                "vblast: not found: secrets under {place} (none on {}{})",
                client.base(),
                if under.mount == "cubbyhole" {
                    ", in this token's cubbyhole: a cubbyhole is its token's own"
                } else {
                    ""
                }
            ),
            Ok(n) => eprintln!("vblast: removed {n} secrets under {place}"),
            Err(e) => left.push(e.to_string()),
        }
    }
    if left.is_empty() {
        Ok(())
    } else {
        Err(server::one_per_line(&left))
    }
}

/// The operation names of a `--op` (or `--scenario`) text.
pub fn op_names(op: &str) -> impl Iterator<Item = &str> {
    crate::config::mix::names(op)
}

/// Refuses operations whose fixture cannot be shared, naming the first.
pub fn check_ops(op: &str, context: &str) -> Result<(), Cause> {
    if let Some(name) =
        op_names(op).find(|n| !matches!(fixture_of(n), Some(Fixture::Shared | Fixture::None)))
    {
        return Err(Cause::Said(format!(
            "{context} with {name}: its fixture cannot be shared by shards (shared: {}); set the data up once and run the shards with --no-setup (and --mount), or use URL mode",
            crate::vault::ops::shared_names().join(", ")
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_shareable_fixtures_are_accepted() {
        assert!(check_ops("kv-read:80,kv-write:20", "x").is_ok());
        assert!(check_ops("approle-login,sys-health", "x").is_ok());
        assert!(check_ops("jwt-login", "x").is_ok());
        assert!(check_ops("login-read", "x").is_ok());
        let e = check_ops("kv-read,cubbyhole-read", "--shard 1/2")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("cubbyhole-read") && e.contains("--shard 1/2"),
            "{e}"
        );
    }
}
