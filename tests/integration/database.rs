//! db-creds against real databases: a private PostgreSQL and a private MariaDB started by
//! the harness (support/postgres.rs, support/mariadb.rs), an OpenBao dev server's database
//! secrets engine connected to each. Every request gets a new database user; after the run
//! the users are counted in the database itself: none of the run's is left, and the
//! server's mounts are as before. Kept (--keep), the users are there, so the count can see
//! them.

use crate::support;
use crate::support::mariadb::MariaDb;
use crate::support::openbao::{OpenBao, server_state};
use crate::support::postgres::Postgres;
use crate::support::run::run;
use crate::support::vblast::{Args, vault_cmd};
use serde_json::Value;

/// Runs db-creds at -c 8: all succeed, no user of the run is left, nothing on the server;
/// then a kept run whose users are counted, removed by hand.
fn creds_and_nothing_left(bao: &OpenBao, url: &str, users: &dyn Fn() -> u64, extra: &[&str]) {
    let before = (server_state(bao), users());
    let creds = Args::op("db-creds").flag("--db-url", url);
    let r = run(creds.clone().c(8).n(200).json().extra(extra).vault(bao));
    assert_eq!(r.code, Some(0), "{}", r.show());
    assert_eq!(r.json()["ok"], 200, "{}", r.show());
    assert!(
        !r.stdout.contains(url) && !r.stderr.contains(url),
        "URL shown"
    );
    assert_eq!(
        (server_state(bao), users()),
        before,
        "users or mounts left behind"
    );

    let r = run(creds
        .c(4)
        .n(30)
        .extra(&["--keep"])
        .json()
        .extra(extra)
        .vault(bao));
    assert_eq!(r.code, Some(0), "{}", r.show());
    assert_eq!(users(), before.1 + 30, "every request made one user");
    let now = server_state(bao).mounts;
    for m in now.iter().filter(|m| !before.0.mounts.contains(m)) {
        let m = m.trim_end_matches('/');
        let (s, b) = bao.api(
            "PUT",
            &format!("/v1/sys/leases/revoke-prefix/{m}/creds/vblast"),
            None,
        );
        assert_eq!(s, 204, "{b}");
        assert_eq!(
            bao.api("DELETE", &format!("/v1/sys/mounts/{m}"), None).0,
            204
        );
    }
    assert_eq!((server_state(bao), users()), before);
}

#[test]
fn postgresql_users_are_made_and_all_dropped() {
    let pg = Postgres::start().expect("PostgreSQL missing: run tools/deps.sh");
    let bao = OpenBao::start();
    creds_and_nothing_left(&bao, &pg.url(), &|| pg.vault_users(), &[]);
}

#[test]
fn mariadb_users_are_made_and_all_dropped() {
    let db = MariaDb::start().expect("MariaDB missing: run tools/deps.sh");
    let bao = OpenBao::start();
    creds_and_nothing_left(
        &bao,
        &db.url(),
        &|| db.vault_users(),
        &["--db-plugin", "mysql"],
    );
}

#[test]
fn unusable_databases_are_one_message_and_leave_nothing() {
    let bao = OpenBao::start();
    let before = server_state(&bao);
    let port = support::ports::free_port();
    let down = format!("postgres://vbroot:sekrit-pw@127.0.0.1:{port}/postgres");
    for (args, needle) in [
        (vec!["--db-url", down.as_str()], "connecting"),
        (vec![], "needs a database: --db-url"),
        (
            vec!["--db-url", "redis://u:sekrit-pw@127.0.0.1:1/"],
            "'redis'",
        ),
        (
            vec!["--db-url", down.as_str(), "--db-plugin", "oracle"],
            "'oracle' is not one of postgresql, mysql",
        ),
        (vec!["--db-url", "sekrit-pw"], "not a URL"),
        (vec!["--db-url", "postgres://127.0.0.1:1/"], "names no user"),
    ] {
        let mut a = vec!["--op", "db-creds", "-n", "5"];
        a.extend_from_slice(&args);
        let r = run(vault_cmd(&bao, &a));
        assert_eq!(r.code, Some(2), "{args:?}: {}", r.show());
        assert!(r.stderr.contains(needle), "{args:?}: {}", r.show());
        // One message, beside the run's fixture names (docs/cleanup.md).
        let message = r
            .stderr
            .trim()
            .lines()
            .filter(|l| !l.starts_with("vblast: run "))
            .count();
        assert_eq!(message, 1, "{}", r.show());
        assert!(!r.stderr.contains("sekrit"), "password shown: {}", r.show());
        assert!(!r.stderr.contains("panicked"), "{}", r.show());
        assert_eq!(server_state(&bao), before, "{args:?} left a mount");
    }
}

/// With --namespace, db-creds' setup, load and cleanup all go to the namespace: every
/// request succeeds (so the load found the role there), nothing is made at the root, and
/// afterwards neither the namespace's mounts nor the database's users hold anything of
/// the run; kept (--keep), its mount is in the namespace and its users in the database.
#[test]
fn db_creds_run_inside_a_namespace() {
    let pg = Postgres::start().expect("PostgreSQL missing: run tools/deps.sh");
    let bao = OpenBao::start();
    bao.namespace("ns1");
    let in_ns = |method: &str, path: &str| bao.api_in("ns1", method, path);
    let ns_mounts = || -> Vec<String> {
        let (s, b) = in_ns("GET", "/v1/sys/mounts");
        assert_eq!(s, 200, "{b}");
        let v: Value = serde_json::from_str(&b).unwrap();
        let mut k: Vec<String> = v["data"].as_object().unwrap().keys().cloned().collect();
        k.sort();
        k
    };
    let url = pg.url();
    let before = (server_state(&bao), ns_mounts(), pg.vault_users());
    let r = run(vault_cmd(
        &bao,
        &[
            "--namespace",
            "ns1",
            "--op",
            "db-creds",
            "--db-url",
            &url,
            "-c",
            "8",
            "-n",
            "100",
            "--format",
            "json",
        ],
    ));
    assert_eq!(r.code, Some(0), "{}", r.show());
    assert_eq!(r.json()["ok"], 100, "{}", r.show());
    assert_eq!(
        (server_state(&bao), ns_mounts(), pg.vault_users()),
        before,
        "mounts or users left behind"
    );

    let r = run(vault_cmd(
        &bao,
        &[
            "--namespace",
            "ns1",
            "--op",
            "db-creds",
            "--db-url",
            &url,
            "-c",
            "4",
            "-n",
            "20",
            "--keep",
            "--format",
            "json",
        ],
    ));
    assert_eq!(r.code, Some(0), "{}", r.show());
    assert_eq!(r.json()["ok"], 20, "{}", r.show());
    assert_eq!(server_state(&bao), before.0, "made something at the root");
    assert_eq!(
        pg.vault_users(),
        before.2 + 20,
        "every request made one user"
    );
    let made: Vec<String> = ns_mounts()
        .into_iter()
        .filter(|m| !before.1.contains(m))
        .collect();
    assert_eq!(made.len(), 1, "{made:?}");
    let m = made[0].trim_end_matches('/');
    let (s, b) = in_ns(
        "PUT",
        &format!("/v1/sys/leases/revoke-prefix/{m}/creds/vblast"),
    );
    assert_eq!(s, 204, "{b}");
    assert_eq!(in_ns("DELETE", &format!("/v1/sys/mounts/{m}")).0, 204);
    assert_eq!((server_state(&bao), ns_mounts(), pg.vault_users()), before);
}

/// vault-benchmark's postgresql_secret test, as a --config file (db_connection and role
/// blocks): every request gets credentials, the row is the test's name, no user is left.
#[test]
fn postgresql_secret_config_runs() {
    let pg = Postgres::start().expect("PostgreSQL missing: run tools/deps.sh");
    let bao = OpenBao::start();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("pg.hcl");
    let hcl = format!(
        "vault_addr = \"http://127.0.0.1:8200\"\nvault_token = \"root\"\nduration = \"2s\"\ncleanup = true\n\
         test \"postgresql_secret\" \"postgres_test_1\" {{\n  weight = 100\n  config {{\n    db_connection {{\n      \
         connection_url = \"postgresql://{{{{username}}}}:{{{{password}}}}@127.0.0.1:{}/postgres\"\n      \
         username = \"{}\"\n      password = \"{}\"\n    }}\n    role {{\n      default_ttl = \"1h\"\n    }}\n  }}\n}}\n",
        pg.port, pg.user, pg.password
    );
    std::fs::write(&file, hcl).unwrap();
    let before = (server_state(&bao), pg.vault_users());
    let f = file.to_str().unwrap();
    let r = run(vault_cmd(
        &bao,
        &["--config", f, "-n", "100", "-c", "8", "--format", "json"],
    ));
    assert_eq!(r.code, Some(0), "{}", r.show());
    let j = r.json();
    assert_eq!(j["ok"], 100, "{}", r.show());
    assert_eq!(j["ops"][0]["name"], "postgres_test_1", "{j}");
    assert!(!r.stdout.contains(&pg.password) && !r.stderr.contains(&pg.password));
    assert_eq!(
        (server_state(&bao), pg.vault_users()),
        before,
        "left behind"
    );
}
