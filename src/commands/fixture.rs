//! `vblast setup` and `vblast cleanup`: the fixture the shards of one run share, made
//! once before them and removed once after them (`--run-id ID` and the run's --op flags);
//! `vblast cleanup --run-id ID` also removes what any run listed in its state file
//! (docs/cleanup.md), and `vblast cleanup --orphans` lists every `vblast-` object on the
//! server (`--yes` removes them).

use std::time::Duration;

use crate::cli::RunArgs;
use crate::config::scenario::{Scenario, Workload};
use crate::error::{Ending, Error};
use crate::session::fixtures::{
    check_ops, late, remove_names, remove_shared, server, shared_session, state,
};
use crate::signals::Stop;
use crate::vault::fixture::{Made, Mode};
use crate::vault::progress::Display;

use super::Given;
use super::scenario::{scenario, state_dir, validate};

/// `--orphans` (and `--yes`, which clap lets through only with it) anywhere but
/// `vblast cleanup`: refused, since a run, a sweep or a setup would otherwise take and
/// ignore them.
pub fn orphans_refused() -> Error {
    Error::input(
        "--orphans and --yes are for `vblast cleanup --orphans`: a run removes what it made by itself",
    )
}

/// Each request of a cleanup that looks at the server.
const LOOK_TIMEOUT: Duration = Duration::from_secs(30);

/// `vblast setup` (`remove` false) and `vblast cleanup` (`remove` true).
pub fn run(args: &RunArgs, given: Given, stop: &Stop, remove: bool) -> Ending {
    // The login (`--auth-method`), before anything else: its token is the one every
    // scenario below is given, and is revoked when `_logged_in` drops, on every exit path.
    let (args, _logged_in) = match logged_in(args, given) {
        Ok(a) => a,
        Err(e) => return Ending::Failed(e),
    };
    let args = &args;
    let name = if remove { "cleanup" } else { "setup" };
    if args.cleanup.orphans {
        if !remove {
            return Ending::Failed(orphans_refused());
        }
        return orphans(args, given, stop);
    }
    let Some(run_id) = args.shard.run_id.clone() else {
        return Ending::Failed(Error::input(format!(
            "vblast {name} needs --run-id (the one the shards are given)"
        )));
    };
    let recorded = match state_dir().map(|d| state::read(&d, &run_id).map(|s| (d, s))) {
        Some(Err(e)) if remove => return Ending::Failed(e),
        Some(Ok((dir, Some((path, st))))) if remove => Some((dir, path, st)),
        _ => None,
    };
    if let Some((dir, path, st)) = &recorded
        && args.ops.op.is_none()
    {
        return from_state(args, given, stop, dir, path, st, &Made::default());
    }
    let Some(op) = args.ops.op.as_deref() else {
        return Ending::Failed(Error::input(if remove {
            format!(
                "vblast cleanup: no state file of run {run_id} (in {}) and no --op to name its fixtures by: give the run's --op flags",
                state_dir().map_or("no state directory".into(), |d| d.display().to_string())
            )
        } else {
            format!("vblast {name} needs --op (the operations and flags the shards run)")
        }));
    };
    if args.ops.no_setup || args.url.is_some() || args.shard.shard.is_some() {
        return Ending::Failed(Error::input(format!(
            "vblast {name} takes the run's Vault flags without --no-setup, --shard or a URL"
        )));
    }
    if let Err(e) = check_ops(op, &format!("vblast {name}"))
        .map_err(Error::input)
        .and_then(|_| validate(args))
    {
        return Ending::Failed(e);
    }
    let scenario = match scenario(args, given) {
        Ok(s) => s,
        Err(e) => return Ending::Failed(e),
    };
    if !matches!(scenario.workload, Workload::Vault(_)) {
        return Ending::Failed(Error::input(format!("vblast {name} needs --op")));
    }
    if !remove {
        return match shared_session(
            &scenario,
            stop,
            Mode::Create,
            &run_id,
            Display::new(args.show.quiet, args.show.progress),
        ) {
            Ok(_) => Ending::Ok,
            Err(e) => Ending::Failed(e),
        };
    }
    let (done, removed) = remove_shared(
        &scenario,
        stop,
        &run_id,
        Display::new(args.show.quiet, args.show.progress),
    );
    // What a shard 0 that was killed left of the shards' rendezvous.
    let leftover = leftover(&scenario, &run_id);
    if let Err(e) = removed.and(leftover) {
        return Ending::Failed(e);
    }
    // What the state file lists beyond the shared fixture (a run of its own).
    match &recorded {
        Some((dir, path, st)) => from_state(args, given, stop, dir, path, st, &done),
        None => Ending::Ok,
    }
}

/// `args` with the login's token as its token when `--auth-method` is given (logged in at
/// the target `args` name), and the login, whose token lives as long as it does; `args`
/// as they are without it.
fn logged_in(
    args: &RunArgs,
    given: Given,
) -> Result<(RunArgs, Option<crate::vault::login::LoggedIn>), Error> {
    let Some(login) = super::login::admin_login(&args.login, &args.target)? else {
        return Ok((args.clone(), None));
    };
    let mut at = target_scenario(args, given)?;
    let logged = super::login::log_in(&login, &mut at, super::login::FlagStyle::Gnu)?;
    let mut args = args.clone();
    args.target.token = Some(logged.token().to_string());
    args.login.auth_method = None;
    Ok((args, Some(logged)))
}

/// Removes the sync mount a killed shard 0 left, if any, saying so.
fn leftover(scenario: &Scenario, run_id: &str) -> Result<(), Error> {
    match crate::session::fixtures::rendezvous::remove_leftover(scenario, run_id) {
        Ok(Some(m)) => {
            eprintln!("vblast: removed {m}");
            Ok(())
        }
        Ok(None) => Ok(()),
        Err(e) => Err(e),
    }
}

/// The scenario of `args` for its target alone (address, token, namespace, TLS): a
/// cleanup from a state file or of orphans needs no --op.
fn target_scenario(args: &RunArgs, given: Given) -> Result<Scenario, Error> {
    let mut args = args.clone();
    if args.ops.op.is_none() && args.ops.scenario.is_none() {
        args.ops.op = Some("sys-health".into());
    }
    args.url = None;
    scenario(&args, given)
}

/// `vblast cleanup --run-id ID` with the run's state file: what it names goes.
fn from_state(
    args: &RunArgs,
    given: Given,
    stop: &Stop,
    dir: &std::path::Path,
    path: &std::path::Path,
    st: &state::StateFile,
    done: &Made,
) -> Ending {
    let mut scenario = match target_scenario(args, given) {
        Ok(s) => s,
        Err(e) => return Ending::Failed(e),
    };
    if scenario.address.trim_end_matches('/') != st.address.trim_end_matches('/') {
        return Ending::Failed(Error::input(format!(
            "run {}'s fixtures are on {} (its state file {} says so), not on {}: give --address {}",
            st.run_id,
            st.address,
            path.display(),
            scenario.address,
            st.address
        )));
    }
    if scenario.namespace.is_none() {
        scenario.namespace = st.namespace.clone();
    }
    let mut made = st.made.clone();
    made.names.retain(|n| !done.names.contains(n));
    made.prefixes.retain(|p| !done.prefixes.contains(p));
    if made.is_empty() {
        state::remove_all(dir, &st.run_id);
        return Ending::Ok;
    }
    eprintln!(
        "vblast: run {}: removing what its state file {} lists ({} name{})",
        st.run_id,
        path.display(),
        made.len(),
        if made.len() == 1 { "" } else { "s" }
    );
    let client = match server::client_of(&scenario, LOOK_TIMEOUT) {
        Ok(c) => c,
        Err(e) => return Ending::Failed(e),
    };
    let urgent = server::UrgentStop::watch(stop);
    let mut client = client.with_stop(urgent.stop().clone());
    let removed = remove_names(
        &mut client,
        &made,
        args.cleanup.cleanup_timeout,
        stop,
        Display::new(args.show.quiet, args.show.progress),
    );
    // A login or token-create the server was still answering at the kill may have made
    // its token after the removal: looked for once those requests have ended.
    if removed.is_ok() {
        match late::revoke_late(&mut client, &st.made, args.cleanup.cleanup_timeout, stop) {
            Ok(said) => said.iter().for_each(|s| eprintln!("vblast: {s}")),
            Err(e) => eprintln!(
                "vblast: note: tokens that requests in flight at the kill made after the removal were not looked for: {e}"
            ),
        }
    }
    if let Some(note) = crate::vault::ops::database::unleased_users_note(&made.names) {
        eprintln!("vblast: {note}");
    }
    let sync = leftover(&scenario, &st.run_id);
    match (removed, sync) {
        (Ok(()), Ok(())) => {
            state::remove_all(dir, &st.run_id);
            Ending::Ok
        }
        (Err(e), _) | (Ok(()), Err(e)) => Ending::Failed(Error::cleanup(format!(
            "{e}\nor run `vblast cleanup --run-id {}` again (the state file {} stays)",
            st.run_id,
            path.display()
        ))),
    }
}

/// `vblast cleanup --orphans [--yes]`: every `vblast-` object on the server, with its age;
/// `--yes` removes them.
fn orphans(args: &RunArgs, given: Given, stop: &Stop) -> Ending {
    let scenario = match target_scenario(args, given) {
        Ok(s) => s,
        Err(e) => return Ending::Failed(e),
    };
    let mut client = match server::client_of(&scenario, LOOK_TIMEOUT) {
        Ok(c) => c,
        Err(e) => return Ending::Failed(e),
    };
    let mut list = match server::orphans(&mut client) {
        Ok(l) => l,
        Err(e) => return Ending::Failed(Error::Unreachable(e)),
    };
    // The server keeps no creation time for mounts, auth paths and policies: this
    // machine's state files may.
    let states = state_dir().map(|d| state::all(&d)).unwrap_or_default();
    for o in list.iter_mut().filter(|o| o.age.is_none()) {
        o.age = states
            .iter()
            .find(|s| {
                s.made.names.contains(&o.found.name)
                    || s.made.prefixes.iter().any(|p| o.found.name.starts_with(p))
            })
            .and_then(|s| s.started.as_deref())
            .and_then(|t| humantime::parse_rfc3339_weak(t.trim_end_matches('Z')).ok())
            .and_then(|t| std::time::SystemTime::now().duration_since(t).ok());
    }
    if list.is_empty() {
        eprintln!("vblast: no vblast- object on {}", client.base());
        return Ending::Ok;
    }
    print_orphans(&list);
    if !args.cleanup.yes {
        eprintln!(
            "vblast: {} vblast- object{} on {}; `vblast cleanup --orphans --yes` removes them",
            list.len(),
            if list.len() == 1 { "" } else { "s" },
            client.base()
        );
        return Ending::Ok;
    }
    remove_orphans(
        client,
        &list,
        args.cleanup.cleanup_timeout,
        stop,
        Display::new(args.show.quiet, args.show.progress),
    )
}

/// The orphans' table on stdout: table, name, type, age.
fn print_orphans(list: &[server::Orphan]) {
    for o in list {
        println!(
            "{:<16} {:<40} {:<10} {}",
            o.found.table.label(),
            o.found.name,
            o.kind.as_deref().unwrap_or("-"),
            o.age
                .map_or("age unknown (the server does not say)".to_string(), |a| {
                    format!(
                        "{} old",
                        humantime::format_duration(Duration::from_secs(a.as_secs()))
                    )
                })
        );
    }
}

/// `--orphans --yes`: removes `list`, waits (bounded) for what the server is slow over,
/// looks again; the error names what is left.
fn remove_orphans(
    client: crate::vault::client::Client,
    list: &[server::Orphan],
    timeout: Duration,
    stop: &Stop,
    display: Display,
) -> Ending {
    let urgent = server::UrgentStop::watch(stop);
    let mut client = client.with_stop(urgent.stop().clone());
    let mut left = Vec::new();
    for o in list {
        if stop.is_urgent() {
            left.push(o.found.clone());
            continue;
        }
        match server::remove(&mut client, &o.found) {
            Ok(()) => eprintln!("vblast: removing {}", o.found),
            Err(e) => eprintln!("vblast: {e}"),
        }
    }
    // Mounts and auth paths may take the server a while; the rest is gone or not.
    let slow: Vec<server::Found> = list
        .iter()
        .filter(|o| matches!(o.found.table, server::Table::Mount | server::Table::Auth))
        .map(|o| o.found.clone())
        .collect();
    left.extend(server::wait_gone(&mut client, slow, timeout, stop, display));
    if let Ok(now) = server::orphans(&mut client) {
        for o in now {
            if !left.contains(&o.found) {
                left.push(o.found);
            }
        }
    }
    if left.is_empty() {
        eprintln!(
            "vblast: removed {} vblast- object{}",
            list.len(),
            if list.len() == 1 { "" } else { "s" }
        );
        return Ending::Ok;
    }
    Ending::Failed(server::left_on(&client, &left))
}
