//! The session through the library: one setup, several load steps over it (as the sweep
//! will run them), one cleanup.

use crate::support::openbao::{OpenBao, vblast_mounts};
use std::time::Duration;
use vblast::session::Session;
use vblast::signals::Stop;

#[test]
fn many_steps_over_one_setup() {
    let bao = OpenBao::start();
    let (args, _) = vblast::commands::parse_from([
        "vblast",
        "--address",
        &bao.addr,
        "--token",
        &bao.token,
        "--op",
        "kv-read:3,kv-write:1",
        "--secrets",
        "20",
        "-c",
        "4",
        "-n",
        "200",
    ])
    .unwrap();
    let scenario = vblast::commands::scenario::scenario(&args.run, Default::default()).unwrap();
    let stop = Stop::new();
    let mut session = Session::open(&scenario, &stop).unwrap();
    let mounts = vblast_mounts(&bao);
    assert_eq!(mounts.len(), 2, "one fixture per operation: {mounts:?}");
    let mut load = scenario.load.clone();
    for (connections, requests) in [(4, 200), (8, 400), (2, 100)] {
        load.connections = connections;
        load.step.requests = Some(requests);
        load.step.duration = Some(Duration::from_secs(30));
        let step = session.step(&load, None).unwrap();
        assert!(step.outcome.lost.is_none());
        assert_eq!(step.outcome.stats.requests(), requests);
        assert_eq!(step.outcome.stats.ok(), requests);
        assert_eq!(step.outcome.stats.connections_opened, connections);
        // The same fixtures for every step: nothing created or removed in between.
        assert_eq!(vblast_mounts(&bao), mounts);
    }
    session.close().unwrap();
    assert!(vblast_mounts(&bao).is_empty(), "{:?}", vblast_mounts(&bao));
    // Closing twice (and dropping) removes nothing more and fails nothing.
    session.close().unwrap();
    drop(session);

    // Dropped without close (an early return, a panic unwinding): still removed.
    let session = Session::open(&scenario, &stop).unwrap();
    assert_eq!(vblast_mounts(&bao).len(), 2);
    drop(session);
    assert!(vblast_mounts(&bao).is_empty(), "{:?}", vblast_mounts(&bao));
}
