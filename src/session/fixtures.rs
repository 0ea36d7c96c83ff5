//! The fixture the shards of one run share, made or removed in a session of its own
//! (`shared_session`), the shards' rendezvous around it (`rendezvous`), the state file
//! that names what a run made (`state`) and what is on the server under vblast's names
//! (`server`: existence checks, waits for a removal, orphans). How the fixture is named
//! and waited for is `vault::fixture`.

pub mod rendezvous;
pub mod server;
pub mod state;

use crate::config::scenario::Scenario;
use crate::error::{Cause, Error};
use crate::session::Session;
use crate::signals::Stop;
use crate::vault::client::Client;
use crate::vault::fixture::{Mode, Naming};
use crate::vault::ops::{Fixture, fixture_of};
use crate::vault::progress::Display;

use server::Found;

/// The naming of a session of `scenario`: its run id and mode, each name printed and
/// written to the run's state file as it is drawn.
pub fn naming(scenario: &Scenario) -> Naming {
    Naming::new(&scenario.fixtures).with_recorder(state::recorder(
        scenario.fixtures.state_dir.clone(),
        scenario.address.clone(),
        scenario.namespace.clone(),
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
/// stderr, for each of its names, whether it was removed or not found; returns the names
/// and, as an error, what is left. Its waits are shown as `display` says.
pub fn remove_shared(
    scenario: &Scenario,
    stop: &Stop,
    run_id: &str,
    display: Display,
) -> (Vec<String>, Result<(), Error>) {
    let mut scenario = in_mode(scenario, Mode::Remove, run_id);
    scenario.keep = false;
    let mut session = match Session::open_showing(&scenario, stop, display) {
        Ok(s) => s,
        Err(e) => return (Vec::new(), Err(e)),
    };
    let names = session.fixture_names();
    let looked = server::client_of(&scenario, LOOK_TIMEOUT).and_then(|mut client| {
        let before = server::locate(&mut client, &names).map_err(Error::Cleanup)?;
        Ok((client, before))
    });
    let closed = session.close();
    if let Ok((mut client, before)) = looked {
        let after = server::locate(&mut client, &names).unwrap_or_default();
        report(&client, &names, &before, &after);
    }
    (names, closed)
}

/// Each request of a look at the server's tables.
const LOOK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// Says, for each of `names`, whether it was removed (there before, gone after) or not
/// found (there before nothing); what is still there is the caller's to report.
fn report(client: &Client, names: &[String], before: &[Found], after: &[Found]) {
    for n in names {
        match before.iter().find(|f| &f.name == n) {
            Some(f) if !after.contains(f) => eprintln!("vblast: removed {f}"),
            Some(_) => {}
            None => eprintln!(
                "vblast: not found: '{n}' (no mount, auth path or policy by that name on {})",
                client.base()
            ),
        }
    }
}

/// `vblast cleanup` from a state file: looks for each of `names`, removes what is there,
/// waits (bounded by `timeout`, a second signal ends the wait) until the server has
/// removed it, and says for each name removed or not found; the error names what is left
/// with the commands that remove it. The wait has a progress line as `display` says.
pub fn remove_names(
    client: &mut Client,
    names: &[String],
    timeout: std::time::Duration,
    stop: &Stop,
    display: Display,
) -> Result<(), Error> {
    let before = server::locate(client, names).map_err(Error::Cleanup)?;
    for f in &before {
        if stop.is_urgent() {
            break;
        }
        eprintln!("vblast: removing {f}");
        if let Err(e) = server::remove(client, f) {
            eprintln!("vblast: {e} (looking whether the server goes on)");
        }
    }
    let left = server::wait_gone(client, before.clone(), timeout, stop, display);
    report(client, names, &before, &left);
    if left.is_empty() {
        return Ok(());
    }
    Err(server::left_on(client, &left))
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
