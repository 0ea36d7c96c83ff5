//! `--follow-redirects`: a standby's 307 is followed to the node its Location names, when
//! that node is one of the target's, with the same request; the redirect stays counted
//! (per node, and as followed), a Location elsewhere is a counted error and is never
//! contacted, and a redirect loop ends after a bounded number of hops. Against a real
//! OpenBao HA cluster (`--no-forwarding` makes a standby redirect) and nginx answering
//! canned 307/308s.

use std::net::TcpListener;

use crate::support;
use crate::support::cluster::Cluster;
use crate::support::figures::u;
use crate::support::nginx::Nginx;
use crate::support::run::run;
use crate::support::vblast::url_cmd;
use serde_json::Value;

/// The JSON rows of the nodes, by node index: (requests, ok, redirects, followed, hops).
fn rows(v: &Value) -> Vec<[u64; 5]> {
    v["nodes"]
        .as_array()
        .unwrap_or_else(|| panic!("no nodes rows: {v:#}"))
        .iter()
        .map(|n| ["requests", "ok", "redirects", "followed", "hops"].map(|k| u(&n[k])))
        .collect()
}

fn message_count(v: &Value, text: &str) -> u64 {
    v["error_messages"][text].as_u64().unwrap_or(0)
}

const HEALTH: &str = r#"{"initialized":true,"sealed":false,"standby":false,"cluster_id":"redirect-test","cluster_name":"nginx"}"#;

/// Two nginx as a cluster's nodes: `active` answers, `standby` redirects every
/// seal-status to the active node, as a Vault standby without request forwarding does.
fn nginx_cluster() -> (Nginx, Nginx) {
    let active = Nginx::with_extra(&format!(
        "location = /v1/sys/health {{ return 200 '{HEALTH}'; }}
    location = /v1/sys/seal-status {{ return 200 '{{\"sealed\":false}}'; }}"
    ));
    let standby = Nginx::with_extra(&format!(
        "location = /v1/sys/health {{ return 429 '{}'; }}
    location = /v1/sys/seal-status {{ return 307 {}/v1/sys/seal-status; }}",
        HEALTH.replace("\"standby\":false", "\"standby\":true"),
        active.addr
    ));
    (active, standby)
}

#[test]
fn a_standby_redirect_is_followed_to_the_active_node() {
    let (active, standby) = nginx_cluster();
    let cmd = |follow: bool, format: &'static str| {
        let mut args = vec![
            "--address",
            &standby.addr,
            "--address",
            &active.addr,
            "--nodes",
            "all",
            "-t",
            "1",
            "-c",
            "4",
            "-n",
            "400",
            "--op",
            "seal-status",
            "--format",
            format,
            "--allow-errors",
        ];
        if follow {
            args.push("--follow-redirects");
        }
        let mut c = url_cmd(&args);
        c.env("VAULT_TOKEN", "test-token");
        c
    };
    let out = run(cmd(true, "json"));
    out.assert_code(0);
    let v = out.json();
    assert_eq!(
        (u(&v["requests"]), u(&v["ok"])),
        (400, 400),
        "{}",
        out.show()
    );
    let r = rows(&v);
    let [s, a] = [r[0], r[1]];
    // Half the connections went to the standby: each of its requests was redirected once,
    // followed, and answered by the active node; each counts for the standby, once.
    assert!(s[0] > 0 && a[0] > 0, "{}", out.show());
    assert_eq!(s[0] + a[0], 400, "{}", out.show());
    assert_eq!(
        s,
        [s[0], s[0], s[0], s[0], 0],
        "standby row: {}",
        out.show()
    );
    assert_eq!(a, [a[0], a[0], 0, 0, s[0]], "active row: {}", out.show());
    assert_eq!(u(&v["redirects"]), s[0], "{}", out.show());
    assert_eq!(u(&v["followed"]), s[0], "{}", out.show());
    assert_eq!(v["status"]["200"].as_u64(), Some(400), "{}", out.show());
    let text = run(cmd(true, "text"));
    assert!(
        text.stdout.contains("Redirects followed: ")
            && text
                .stdout
                .contains("redirects followed, 0 answers after a redirect"),
        "{}",
        text.show()
    );

    // Without the flag: the same redirects, counted, as the standby's answers (errors).
    let out = run(cmd(false, "json"));
    out.assert_code(0);
    let v = out.json();
    let r = rows(&v);
    assert_eq!(r[0], [r[0][0], 0, r[0][0], 0, 0], "{}", out.show());
    assert_eq!(u(&v["errors"]["status"]), r[0][0], "{}", out.show());
    assert!(v.get("followed").is_none(), "{}", out.show());
}

#[test]
fn a_location_outside_the_target_is_an_error_and_never_contacted() {
    // A listener that must see no connection at all.
    let elsewhere = TcpListener::bind("127.0.0.1:0").unwrap();
    elsewhere.set_nonblocking(true).unwrap();
    let far = elsewhere.local_addr().unwrap();
    let ng = Nginx::with_extra(&format!(
        "location = /v1/out {{ return 307 http://{far}/v1/out; }}
    location = /v1/moved {{ return 308 /v1/elsewhere; }}
    location = /v1/loop {{ absolute_redirect off; return 307 /v1/loop; }}
    location = /v1/loop-abs {{ return 307 /v1/loop-abs; }}"
    ));
    let go = |path: &str| {
        let url = format!("{}{path}", ng.addr);
        let out = run(url_cmd(&[
            "-t",
            "1",
            "-c",
            "2",
            "-n",
            "20",
            "--follow-redirects",
            "--allow-errors",
            "--format",
            "json",
            &url,
        ]));
        out.assert_code(0);
        let v = out.json();
        assert_eq!(u(&v["requests"]), 20, "{path}: {}", out.show());
        assert_eq!(u(&v["ok"]), 0, "{path}: {}", out.show());
        assert_eq!(u(&v["errors"]["status"]), 20, "{path}: {}", out.show());
        (v, out)
    };
    let (v, out) = go("/v1/out");
    assert_eq!(u(&v["redirects"]), 20, "{}", out.show());
    assert!(v.get("followed").is_none(), "{}", out.show());
    assert_eq!(
        message_count(
            &v,
            "redirect to an address outside the target: not followed"
        ),
        20,
        "{}",
        out.show()
    );
    assert!(
        elsewhere.accept().is_err(),
        "a connection reached the address outside the target"
    );
    // Another path is not the same request: not followed either.
    let (v, out) = go("/v1/moved");
    assert_eq!(u(&v["redirects"]), 20, "{}", out.show());
    assert_eq!(
        message_count(&v, "redirect to another path: not followed"),
        20,
        "{}",
        out.show()
    );
    // A loop (relative and absolute Location): 5 hops each, then the 6th 307 is final.
    for path in ["/v1/loop", "/v1/loop-abs"] {
        let (v, out) = go(path);
        assert_eq!(u(&v["redirects"]), 20 * 6, "{path}: {}", out.show());
        assert_eq!(u(&v["followed"]), 20 * 5, "{path}: {}", out.show());
        assert_eq!(
            message_count(&v, "more than 5 redirects for one request: not followed"),
            20,
            "{path}: {}",
            out.show()
        );
        assert_eq!(v["status"]["307"].as_u64(), Some(20), "{}", out.show());
    }
}

/// OpenBao's own behaviour: with `X-Vault-No-Request-Forwarding` a standby answers a write
/// with a 307 to the active node's api_addr; followed, every write succeeds there.
#[test]
fn an_openbao_standby_redirect_is_followed() {
    let c = Cluster::start(2);
    let active = c.active().expect("an active node");
    let standby = 1 - active;
    // What the standby answers on its own.
    let r = support::client::http_request(
        &c.nodes[standby].addr,
        "PUT",
        "/v1/sys/policies/acl/vblast-probe",
        &[
            ("X-Vault-Token", c.token.as_str()),
            ("X-Vault-No-Request-Forwarding", "true"),
        ],
        Some(br#"{"policy":"path \"x\" { capabilities = [\"read\"] }"}"#),
        None,
    )
    .unwrap();
    assert_eq!(r.status, 307, "{}", r.text());
    assert_eq!(
        r.header("location"),
        Some(format!("{}/v1/sys/policies/acl/vblast-probe", c.nodes[active].addr).as_str())
    );
    let mut cmd = support::vblast::vblast();
    cmd.arg("--address")
        .arg(&c.nodes[standby].addr)
        .arg("--address")
        .arg(&c.nodes[active].addr)
        .env("VAULT_TOKEN", &c.token)
        .args([
            "--nodes",
            "each",
            "--no-forwarding",
            "--follow-redirects",
            "-c",
            "2",
            "-n",
            "200",
            "--op",
            "kv-write",
            "--secrets",
            "10",
            "--format",
            "json",
        ]);
    let out = run(cmd);
    out.assert_code(0);
    let v = out.json();
    assert_eq!(
        (u(&v["requests"]), u(&v["ok"])),
        (400, 400),
        "{}",
        out.show()
    );
    let r = rows(&v);
    // Node 0 is the standby: every write it got was redirected and answered by the active
    // node (node 1), which took its own 200 too.
    assert_eq!(r[0], [200, 200, 200, 200, 0], "{}", out.show());
    assert_eq!(r[1], [200, 200, 0, 0, 200], "{}", out.show());
    assert_eq!(u(&v["followed"]), 200, "{}", out.show());
}

/// The latency of a followed request runs from its first send to the final answer: a
/// standby whose 307 takes about a second to arrive (nginx's `limit_rate`) shows in the
/// standby's row, although the active node answers the hop at once. (A lower bound
/// only: noise cannot make it shorter.)
#[test]
fn the_latency_of_a_followed_request_includes_every_leg() {
    let active = Nginx::with_extra(&format!(
        "location = /v1/sys/health {{ return 200 '{HEALTH}'; }}
    location = /v1/sys/seal-status {{ return 200 '{{\"sealed\":false}}'; }}"
    ));
    let standby = Nginx::with_extra(&format!(
        "location = /v1/sys/health {{ return 429 '{HEALTH}'; }}
    location = /v1/sys/seal-status {{ limit_rate 200; return 307 {}/v1/sys/seal-status; }}",
        active.addr
    ));
    let mut cmd = url_cmd(&[
        "--address",
        &standby.addr,
        "--address",
        &active.addr,
        "--nodes",
        "all",
        "--follow-redirects",
        "-t",
        "1",
        "-c",
        "2",
        "-n",
        "4",
        "--op",
        "seal-status",
        "--format",
        "json",
    ]);
    cmd.env("VAULT_TOKEN", "test-token");
    let out = run(cmd);
    out.assert_code(0);
    let v = out.json();
    let nodes = v["nodes"].as_array().unwrap();
    // (the fast node's connection takes what the slow one leaves of the 4)
    let s = rows(&v)[0];
    assert!(s[0] >= 1, "{}", out.show());
    assert_eq!(s, [s[0], s[0], s[0], s[0], 0], "{}", out.show());
    let p50 = nodes[0]["p50_ms"].as_f64().unwrap();
    assert!(p50 >= 500.0, "standby p50 {p50} ms: {}", out.show());
}
