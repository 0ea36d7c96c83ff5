//! The fixture the shards of one run share, made or removed in a session of its own
//! (`shared_session`), and the shards' rendezvous around it (`rendezvous`). How the
//! fixture is named and waited for is `vault::fixture`.

pub mod rendezvous;

use crate::config::scenario::Scenario;
use crate::error::Error;
use crate::session::Session;
use crate::signals::Stop;
use crate::vault::fixture::{Mode, enter};

/// Opens and closes one session of the shared fixture in `mode` (Create keeps what it
/// made, Remove removes it) and returns what the session held, for messages.
pub fn shared_session(
    scenario: &Scenario,
    stop: &Stop,
    mode: Mode,
    run_id: &str,
) -> Result<Vec<String>, Error> {
    enter(mode, run_id);
    let mut scenario = scenario.clone();
    // A setup failing half-way removes what it made; cleanup removes the fixture on close.
    scenario.keep = false;
    let mut session = Session::open(&scenario, stop)?;
    // A complete setup keeps the fixture (the shards use it).
    session.set_keep(mode == Mode::Create);
    let what: Vec<String> = session.created().into_iter().map(|c| c.what).collect();
    session.close()?;
    Ok(what)
}
