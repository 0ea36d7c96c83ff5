//! Response capture end to end against a real OpenBao: each connection logs in (userpass)
//! once, keeps the `auth.client_token` of the answer, and sends its next requests with
//! that token, in a header and inside a body of varying length. Driven through the library
//! (`vblast::engine`), as the login-then-read scenario will be.

use crate::support::openbao::OpenBao;
use std::time::Duration;
use vblast::capture::Capture;
use vblast::config::scenario::{Load, StepPlan};
use vblast::engine::{self, EnginePlan, LocalGate};
use vblast::net::target::Target;
use vblast::signals::Stop;
use vblast::template::{Piece, RequestSpec};
use vblast::workload::Operation;

fn op(name: &str, weight: u32, request: RequestSpec) -> Operation {
    let mut o = Operation::new(name, request);
    o.weight = weight;
    o
}

#[test]
fn each_connection_logs_in_then_uses_its_own_token() {
    let bao = OpenBao::start();
    let (s, b) = bao.api(
        "POST",
        "/v1/sys/auth/userpass",
        Some(r#"{"type":"userpass"}"#),
    );
    assert!((200..300).contains(&s), "{b}");
    let (s, b) = bao.api(
        "POST",
        "/v1/auth/userpass/users/alice",
        Some(r#"{"password":"pw","token_ttl":"5m","token_policies":"default"}"#),
    );
    assert!((200..300).contains(&s), "{b}");

    let mut login = op(
        "login",
        1,
        RequestSpec {
            method: "POST".into(),
            path: vec![Piece::lit("/v1/auth/userpass/login/alice")],
            headers: vec![("Content-Type".into(), "application/json".into())],
            body: Some(vec![Piece::lit(r#"{"password":"pw"}"#)]),
            captured_headers: vec![],
        },
    );
    login.capture = Some(Capture {
        slot: 0,
        path: vec!["auth".into(), "client_token".into()],
    });
    // The token in the header: lookup-self answers 403 without a valid one.
    let mut lookup_self = op(
        "lookup-self",
        60,
        RequestSpec {
            method: "GET".into(),
            path: vec![Piece::lit("/v1/auth/token/lookup-self")],
            headers: vec![],
            body: None,
            captured_headers: vec![("X-Vault-Token".into(), 0)],
        },
    );
    lookup_self.needs = Some(0);
    // The token inside a body (its length decides Content-Length), the run's token in the
    // header: lookup answers 403 for a token it does not know.
    let mut lookup = op(
        "lookup",
        40,
        RequestSpec {
            method: "POST".into(),
            path: vec![Piece::lit("/v1/auth/token/lookup")],
            headers: vec![("Content-Type".into(), "application/json".into())],
            body: Some(vec![
                Piece::lit(r#"{"token":""#),
                Piece::Captured { slot: 0 },
                Piece::lit(r#""}"#),
            ]),
            captured_headers: vec![],
        },
    );
    lookup.needs = Some(0);

    let connections = 6;
    let requests = 1200;
    let plan = EnginePlan {
        target: Target::parse(&bao.addr).unwrap(),
        tls: None,
        token: Some(bao.token.clone()),
        namespace: None,
        ops: vec![login, lookup_self, lookup],
        load: Load {
            step: StepPlan {
                requests: Some(requests),
                duration: Some(Duration::from_secs(30)),
                ..StepPlan::default()
            },
            timeout: Duration::from_secs(10),
            pin: false,
            ..Load::closed(connections)
        },
        threads_total: 2,
        thread_offset: 0,
        threads_here: 2,
        nodes: Default::default(),
    };
    let stats = engine::run(&plan, &Stop::new(), &LocalGate::new(2), None).unwrap();
    let [logins, selfs, lookups] = [0, 1, 2].map(|i| stats.ops[i].requests);
    assert_eq!(logins + selfs + lookups, requests, "{:?}", stats.messages);
    assert_eq!(
        stats.ok(),
        requests,
        "every request succeeded: {:?}",
        stats.messages
    );
    // Every connection logged in before anything else (a few more logins come from the
    // weighted pick), and the token-using requests are the great majority.
    assert!(logins >= connections, "{logins} logins");
    assert!(selfs > 0 && lookups > 0, "{selfs} {lookups}");
    assert!(logins < requests / 10, "{logins} logins");
    assert_eq!(stats.status.get(&200), Some(&requests));
}
