//! Shared fixtures of the operation families beyond KV and AppRole, end to end against an
//! OpenBao dev server: two shards (`--shard 0/2`, `--shard 1/2`, one `--run-id`) started
//! first, so each waits for the fixture; `vblast setup` once; every request of each shard
//! succeeds; what the shards made for themselves is gone when they end while the fixture
//! outlives them; `vblast cleanup` once leaves `sys/mounts`, `sys/auth` and the ACL
//! policies as they were before.

use std::time::Duration;

use crate::support::figures::u;
use crate::support::mariadb::MariaDb;
use crate::support::openbao::{OpenBao, server_state};
use crate::support::postgres::Postgres;
use crate::support::process::signal;
use crate::support::run::{Out, Running, run, spawn};
use crate::support::vblast::vault_cmd;
use serde_json::Value;

/// A jwt-login or login-read shard's own auth path: `vblast-jwt-xxxxxxxx-yyyyyyyy/`,
/// `vblast-read-xxxxxxxx-yyyyyyyy/`.
fn is_shards_own_jwt_path(p: &str) -> bool {
    p.strip_prefix("vblast-jwt-")
        .or_else(|| p.strip_prefix("vblast-read-"))
        .and_then(|r| r.strip_suffix('/'))
        .is_some_and(|r| r.len() == 17 && r.as_bytes()[8] == b'-')
}

/// What `shared_run` saw: every output, and the mounts and auth paths setup made.
struct Shared {
    outs: Vec<Out>,
    mounts: Vec<String>,
    auth: Vec<String>,
}

/// `vblast setup`, two shards of `requests` in all (started before setup, so they wait)
/// and `vblast cleanup`, all with `flags` (the operations and their flags). `between`
/// runs after the shards ended, before cleanup, with the mounts and auth paths setup
/// made. Asserts each shard's every request succeeded, the fixture outlived the shards
/// and the server is as before after cleanup.
fn shared_run(
    bao: &OpenBao,
    flags: &[&str],
    requests: u64,
    between: &dyn Fn(&[String], &[String]),
) -> Shared {
    let before = server_state(bao);
    static RUNS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let k = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let run_id = format!("shard-ops-{}-{k}", std::process::id());
    let n = requests.to_string();
    let mut common = flags.to_vec();
    common.extend_from_slice(&["--run-id", &run_id]);
    let shards: Vec<_> = ["0/2", "1/2"]
        .iter()
        .map(|shard| {
            // The fixture comes from the separate `vblast setup` step.
            let mut args = vec![
                "-n",
                &n,
                "-c",
                "4",
                "--shard",
                shard,
                "--external-setup",
                "--format",
                "json",
            ];
            args.extend_from_slice(&common);
            spawn(vault_cmd(bao, &args))
        })
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let mut args = vec!["setup"];
    args.extend_from_slice(&common);
    let setup = run(vault_cmd(bao, &args));
    setup.assert_code(0);
    // A shard may already have made its own jwt auth path: not the fixture's.
    let mut during = server_state(bao);
    during.auth.retain(|p| !is_shards_own_jwt_path(p));
    let made = |now: &[String], then: &[String]| -> Vec<String> {
        now.iter()
            .filter(|m| !then.contains(m))
            .map(|m| m.trim_end_matches('/').to_string())
            .collect()
    };
    let new_mounts = made(&during.mounts, &before.mounts);
    let new_auth = made(&during.auth, &before.auth);
    assert!(
        new_mounts
            .iter()
            .chain(&new_auth)
            .all(|m| m.starts_with("vblast-")),
        "{new_mounts:?} {new_auth:?}"
    );
    let mut outs = vec![setup];
    for (i, s) in shards.into_iter().enumerate() {
        let out = s.finish(Duration::from_secs(150));
        out.assert_code(0);
        let j = out.json();
        assert_eq!(u(&j["requests"]), requests / 2, "shard {i}: {}", out.show());
        assert_eq!(u(&j["ok"]), requests / 2, "shard {i}: {}", out.show());
        // Every operation of the mix ran in each shard.
        for name in flags[1].split(',').map(|p| p.split(':').next().unwrap()) {
            let row = j["ops"]
                .as_array()
                .unwrap()
                .iter()
                .find(|o| o["name"] == name);
            assert!(
                row.is_some_and(|r| u(&r["requests"]) > 0),
                "shard {i}: no {name}: {}",
                out.show()
            );
        }
        outs.push(out);
    }
    // The fixture outlived the shards; what they made for themselves went with them (the
    // identity entities their logins made on a shared auth path go with the path).
    let fixtures = crate::support::openbao::fixtures_only;
    assert_eq!(fixtures(server_state(bao)), fixtures(during.clone()));
    between(&new_mounts, &new_auth);
    let mut args = vec!["cleanup"];
    args.extend_from_slice(&common);
    let cleanup = run(vault_cmd(bao, &args));
    cleanup.assert_code(0);
    for m in new_mounts.iter().chain(&new_auth) {
        assert!(cleanup.stderr.contains(m.as_str()), "{}", cleanup.show());
    }
    assert_eq!(server_state(bao), before);
    outs.push(cleanup);
    for o in &outs {
        assert!(!o.stderr.contains("panicked"), "{}", o.show());
    }
    Shared {
        outs,
        mounts: new_mounts,
        auth: new_auth,
    }
}

/// Each of `ops` alone (its wait is then a shard's only one, so a missing wait shows),
/// then all of them in one mix (fixture names derived per occurrence of a prefix), with
/// `extra` flags; returns what the mix saw.
fn each_then_mixed(
    bao: &OpenBao,
    ops: &[&str],
    extra: &[&str],
    between: &dyn Fn(&[String], &[String]),
) -> Shared {
    for op in ops {
        let mut flags = vec!["--op", op];
        flags.extend_from_slice(extra);
        shared_run(bao, &flags, 40, between);
    }
    let mix = ops.join(",");
    let mut flags = vec!["--op", &mix];
    flags.extend_from_slice(extra);
    shared_run(bao, &flags, 40 * ops.len() as u64, between)
}

fn no_check(_: &[String], _: &[String]) {}

fn count(names: &[String], prefix: &str) -> usize {
    names.iter().filter(|m| m.starts_with(prefix)).count()
}

#[test]
fn transit_shares_one_setup_and_one_cleanup() {
    let bao = OpenBao::start();
    let ops = [
        "transit-encrypt",
        "transit-decrypt",
        "transit-sign",
        "transit-verify",
        "transit-hmac",
    ];
    let r = each_then_mixed(&bao, &ops, &[], &no_check);
    // One mount per operation, each with its key.
    assert_eq!(count(&r.mounts, "vblast-transit-"), 5, "{:?}", r.mounts);
    assert!(r.auth.is_empty(), "{:?}", r.auth);
}

#[test]
fn pki_and_ssh_share_one_setup_and_one_cleanup() {
    let bao = OpenBao::start();
    let r = each_then_mixed(&bao, &["pki-issue", "pki-sign", "ssh-sign"], &[], &no_check);
    // pki-issue's mount, and pki-sign's root and intermediate.
    assert_eq!(count(&r.mounts, "vblast-pki-"), 3, "{:?}", r.mounts);
    assert_eq!(count(&r.mounts, "vblast-ssh-"), 1, "{:?}", r.mounts);
}

/// The names a LIST of `path` gives (none when it answers 404).
fn listed(bao: &OpenBao, path: &str) -> Vec<String> {
    let (st, body) = bao.api("LIST", path, None);
    if st == 404 {
        return Vec::new();
    }
    assert_eq!(st, 200, "{path}: {body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    v["data"]["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn totp_shares_one_setup_and_one_cleanup() {
    let bao = OpenBao::start();
    let ops = ["totp-generate", "totp-read", "totp-create"];
    // When the shards have ended, only setup's key is left: totp-create's shards deleted
    // the keys they made.
    let only_setups_key = |mounts: &[String], _: &[String]| {
        for m in mounts {
            let keys = listed(&bao, &format!("/v1/{m}/keys"));
            assert!(keys.is_empty() || keys == ["vblast"], "{m}: {keys:?}");
        }
    };
    let r = each_then_mixed(&bao, &ops, &[], &only_setups_key);
    assert_eq!(count(&r.mounts, "vblast-totp-"), 3, "{:?}", r.mounts);
}

/// db-creds of `url` shared by two shards: no database user of the run is left when the
/// shards have ended (each revoked the leases it was given) nor after cleanup, and the
/// database's URL (its password) is never printed.
fn db_creds_shared(bao: &OpenBao, url: &str, users: &dyn Fn() -> u64, extra: &[&str]) {
    let before = users();
    let mut flags = vec!["--op", "db-creds", "--db-url", url];
    flags.extend_from_slice(extra);
    let r = shared_run(bao, &flags, 60, &|mounts, _| {
        assert_eq!(users(), before, "database users outlived the shards");
        // Each shard's own role went with it: setup's is the only one.
        for m in mounts {
            assert_eq!(listed(bao, &format!("/v1/{m}/roles")), ["vblast"], "{m}");
        }
    });
    assert_eq!(count(&r.mounts, "vblast-db-"), 1, "{:?}", r.mounts);
    assert_eq!(users(), before, "database users outlived the run");
    for o in &r.outs {
        assert!(
            !o.stdout.contains(url) && !o.stderr.contains(url),
            "URL shown: {}",
            o.show()
        );
    }
}

#[test]
fn db_creds_postgresql_shares_one_setup_and_one_cleanup() {
    let pg = Postgres::start().expect("PostgreSQL missing: run tools/deps.sh");
    let bao = OpenBao::start();
    db_creds_shared(&bao, &pg.url(), &|| pg.vault_users(), &[]);

    // A shard killed mid-run leaves its role and its users: cleanup revokes every lease
    // under the mount, so none outlives the run.
    let before = (server_state(&bao), pg.vault_users());
    let url = pg.url();
    let run_id = format!("shard-ops-killed-{}", std::process::id());
    let flags = ["--op", "db-creds", "--db-url", &url, "--run-id", &run_id];
    setup_and_kill_a_shard(
        &bao,
        &flags,
        "the shard made no users",
        &|| pg.vault_users() >= before.1 + 5,
        &|shard| {
            // Stopped first, so that the requests in flight are answered (their leases
            // registered) before the kill: a request the server is still handling when its
            // connection drops can leave a database user for which the server never
            // registers a lease, which no cleanup through the server can see.
            // SAFETY: kill(2) on the pid of a child this test started and has not reaped.
            unsafe {
                libc::kill(shard.child.id() as libc::pid_t, libc::SIGSTOP);
            }
            std::thread::sleep(Duration::from_secs(1));
        },
    );
    assert!(pg.vault_users() >= before.1 + 5);
    let mut args = vec!["cleanup"];
    args.extend_from_slice(&flags);
    run(vault_cmd(&bao, &args)).assert_code(0);
    assert_eq!((server_state(&bao), pg.vault_users()), before);
}

#[test]
fn db_creds_mariadb_shares_one_setup_and_one_cleanup() {
    let db = MariaDb::start().expect("MariaDB missing: run tools/deps.sh");
    let bao = OpenBao::start();
    db_creds_shared(
        &bao,
        &db.url(),
        &|| db.vault_users(),
        &["--db-plugin", "mysql"],
    );
}

#[test]
fn userpass_shares_one_setup_and_one_cleanup() {
    let bao = OpenBao::start();
    // When the shards have ended, the users they made for themselves are gone.
    let no_users = |_: &[String], auth: &[String]| {
        for p in auth {
            assert_eq!(
                listed(&bao, &format!("/v1/auth/{p}/users")),
                Vec::<String>::new()
            );
        }
    };
    let r = shared_run(&bao, &["--op", "userpass-login"], 40, &no_users);
    assert_eq!(r.auth.len(), 1, "{:?}", r.auth);
    assert!(r.auth[0].starts_with("vblast-userpass-"), "{:?}", r.auth);
    assert!(r.mounts.is_empty(), "{:?}", r.mounts);
}

/// A self-signed client certificate (trusted as itself by cert-login's role) in `dir`.
fn self_signed(dir: &std::path::Path) -> (String, String) {
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "vblast shard client");
    let cert = params.self_signed(&key).unwrap();
    let (c, k) = (dir.join("client-cert.pem"), dir.join("client-key.pem"));
    std::fs::write(&c, cert.pem()).unwrap();
    std::fs::write(&k, key.serialize_pem()).unwrap();
    (c.display().to_string(), k.display().to_string())
}

#[test]
fn cert_login_shares_one_setup_and_one_cleanup() {
    let bao = OpenBao::start_tls();
    let ca = bao.ca_cert.clone().unwrap().display().to_string();
    let dir = tempfile::tempdir().unwrap();
    // Every shard is given the client certificate and key by its flags, as setup is.
    let (cert, key) = self_signed(dir.path());
    let flags = [
        "--op",
        "cert-login",
        "--ca-cert",
        &ca,
        "--client-cert",
        &cert,
        "--client-key",
        &key,
    ];
    let r = shared_run(&bao, &flags, 40, &no_check);
    assert_eq!(r.auth.len(), 1, "{:?}", r.auth);
    assert!(r.auth[0].starts_with("vblast-cert-"), "{:?}", r.auth);
}

/// How many tokens the server holds.
fn tokens(bao: &OpenBao) -> usize {
    listed(bao, "/v1/auth/token/accessors").len()
}

#[test]
fn token_operations_share_one_setup_and_one_cleanup() {
    let bao = OpenBao::start();
    let before = tokens(&bao);
    // When the shards have ended, their parent tokens and every child are revoked.
    let no_tokens = |_: &[String], _: &[String]| assert_eq!(tokens(&bao), before);
    let ops = [
        "token-create",
        "token-lookup",
        "token-renew",
        "token-revoke",
    ];
    let r = each_then_mixed(&bao, &ops, &[], &no_tokens);
    assert!(
        r.mounts.is_empty() && r.auth.is_empty(),
        "{:?}",
        (r.mounts, r.auth)
    );
    assert_eq!(tokens(&bao), before);
}

/// A token-create shard killed (SIGKILL) under load leaves its own parent token and every
/// child it made: the shard's own state file names the parent's accessor, so `vblast
/// cleanup --run-id ID` alone (no --op) revokes it with its children and deletes the
/// policy `vblast setup` wrote; the server's tokens are as before the moment it ends.
#[test]
fn a_killed_token_create_shards_parent_is_revoked_by_cleanup_from_its_state_file() {
    let bao = OpenBao::start();
    let before = tokens(&bao);
    let run_id = format!("shard-ops-token-killed-{}", std::process::id());
    let flags = ["--op", "token-create", "--run-id", run_id.as_str()];
    setup_and_kill_a_shard(
        &bao,
        &flags,
        "the shard made no tokens",
        &|| tokens(&bao) > before + 20,
        &|_| {},
    );
    assert!(tokens(&bao) > before);
    let cleanup = run(vault_cmd(&bao, &["cleanup", "--run-id", &run_id]));
    cleanup.assert_code(0);
    assert!(
        cleanup.stderr.contains("removed token with accessor"),
        "{}",
        cleanup.show()
    );
    assert_eq!(tokens(&bao), before, "{}", cleanup.show());
    // The state files went with what they named: no state file, no --op, refused.
    let again = run(vault_cmd(&bao, &["cleanup", "--run-id", &run_id]));
    assert_eq!(again.code, Some(2), "{}", again.show());
}

/// A token-create shard whose own cleanup is cut short (its server stopped, then a second
/// SIGTERM: the urgent stop) says its parent token is left and names the command that
/// finishes the job, `vblast cleanup --run-id ID`, which revokes it from the shard's own
/// state file once the server answers again.
#[test]
fn a_shard_stopped_during_its_cleanup_names_the_command_that_finishes_it() {
    let bao = OpenBao::start();
    let before = tokens(&bao);
    let run_id = format!("shard-ops-token-cut-{}", std::process::id());
    let flags = ["--op", "token-create", "--run-id", run_id.as_str()];
    let mut args = vec!["setup"];
    args.extend_from_slice(&flags);
    run(vault_cmd(&bao, &args)).assert_code(0);
    let mut args = vec!["-z", "30s", "-R", "40", "-c", "2", "--shard", "0/2"];
    args.extend_from_slice(&["--external-setup"]);
    args.extend_from_slice(&flags);
    let shard = spawn(vault_cmd(&bao, &args));
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    while tokens(&bao) <= before + 20 {
        assert!(
            std::time::Instant::now() < deadline,
            "the shard made no tokens"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    bao.stop_signal();
    let pid = shard.child.id();
    signal(pid, libc::SIGTERM);
    std::thread::sleep(Duration::from_millis(1500));
    signal(pid, libc::SIGTERM);
    let out = shard.finish(Duration::from_secs(30));
    bao.cont_signal();
    assert!(
        out.stderr
            .contains(&format!("or run `vblast cleanup --run-id {run_id}`")),
        "{}",
        out.show()
    );
    let cleanup = run(vault_cmd(&bao, &["cleanup", "--run-id", &run_id]));
    cleanup.assert_code(0);
    assert_eq!(tokens(&bao), before, "{}", cleanup.show());
}

/// The server's auth paths under `prefix`.
fn auth_paths(bao: &OpenBao, prefix: &str) -> Vec<String> {
    server_state(bao)
        .auth
        .into_iter()
        .filter(|p| p.starts_with(prefix))
        .collect()
}

/// `vblast setup` with `flags` (an `--external-setup` run), then its shard 0 of 2 (-R 40
/// for up to 30 s), killed (SIGKILL) once `made` holds (within 15 s, else `what`) and
/// `before_kill` has run.
fn setup_and_kill_a_shard(
    bao: &OpenBao,
    flags: &[&str],
    what: &str,
    made: &dyn Fn() -> bool,
    before_kill: &dyn Fn(&Running),
) {
    let mut args = vec!["setup"];
    args.extend_from_slice(flags);
    run(vault_cmd(bao, &args)).assert_code(0);
    let mut args = vec![
        "-z",
        "30s",
        "-R",
        "40",
        "-c",
        "2",
        "--shard",
        "0/2",
        "--external-setup",
    ];
    args.extend_from_slice(flags);
    let mut shard = spawn(vault_cmd(bao, &args));
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    while !made() {
        assert!(std::time::Instant::now() < deadline, "{what}");
        std::thread::sleep(Duration::from_millis(100));
    }
    before_kill(&shard);
    shard.child.kill().unwrap();
    shard.finish(Duration::from_secs(10));
}

/// A shard killed mid-run (SIGKILL) leaves the auth path it made for itself (`prefix`):
/// cleanup disables it by the run's prefix, and the server is as before. `from_state`:
/// `vblast cleanup --run-id ID` alone, the prefix coming from `vblast setup`'s state file;
/// else with the run's --op flags.
fn killed_shards_path_is_swept(
    bao: &OpenBao,
    name: &str,
    op_flags: &[&str],
    prefix: &str,
    from_state: bool,
) {
    let before = server_state(bao);
    let run_id = format!("shard-ops-{name}-killed-{}", std::process::id());
    let mut flags = op_flags.to_vec();
    flags.extend_from_slice(&["--run-id", &run_id]);
    setup_and_kill_a_shard(
        bao,
        &flags,
        "the shard made no path",
        &|| !auth_paths(bao, prefix).is_empty(),
        &|_| std::thread::sleep(Duration::from_millis(500)),
    );
    assert_eq!(auth_paths(bao, prefix).len(), 1);
    let mut args = vec!["cleanup"];
    if from_state {
        args.extend_from_slice(&["--run-id", &run_id]);
    } else {
        args.extend_from_slice(&flags);
    }
    let cleanup = run(vault_cmd(bao, &args));
    cleanup.assert_code(0);
    assert!(
        cleanup.stderr.contains("removed auth path"),
        "{}",
        cleanup.show()
    );
    assert_eq!(server_state(bao), before, "{}", cleanup.show());
}

#[test]
fn jwt_login_shards_each_make_their_own_key_and_path() {
    let bao = OpenBao::start();
    // Setup makes no auth path (only the policy); each shard's own path went with it.
    let none_left = |_: &[String], _: &[String]| {
        assert_eq!(auth_paths(&bao, "vblast-jwt-"), Vec::<String>::new());
    };
    let r = shared_run(&bao, &["--op", "jwt-login"], 40, &none_left);
    assert!(
        r.auth.is_empty() && r.mounts.is_empty(),
        "{:?} {:?}",
        r.auth,
        r.mounts
    );

    killed_shards_path_is_swept(&bao, "jwt", &["--op", "jwt-login"], "vblast-jwt-", true);

    // The default mode: shard 0 sets up, runs, waits for shard 1 and cleans up.
    let before = server_state(&bao);
    let run_id = format!("shard-ops-jwt-default-{}", std::process::id());
    let shards: Vec<_> = ["1/2", "0/2"]
        .iter()
        .map(|shard| {
            let args = [
                "-n",
                "40",
                "-c",
                "4",
                "--shard",
                shard,
                "--format",
                "json",
                "--op",
                "jwt-login",
                "--run-id",
                &run_id,
            ];
            let s = spawn(vault_cmd(&bao, &args));
            std::thread::sleep(Duration::from_millis(300));
            s
        })
        .collect();
    for (i, s) in shards.into_iter().enumerate() {
        let out = s.finish(Duration::from_secs(150));
        out.assert_code(0);
        let j = out.json();
        assert_eq!(u(&j["requests"]), 20, "shard {i}: {}", out.show());
        assert_eq!(u(&j["ok"]), 20, "shard {i}: {}", out.show());
        assert!(!out.stderr.contains("panicked"), "{}", out.show());
    }
    assert_eq!(server_state(&bao), before);
}

#[test]
fn login_read_shards_each_make_their_own_users() {
    let bao = OpenBao::start();
    // Setup makes the secrets' mount and the policy, no auth path; each shard's own path
    // (its users) went with it.
    let none_left = |_: &[String], _: &[String]| {
        assert_eq!(auth_paths(&bao, "vblast-read-"), Vec::<String>::new());
    };
    let flags = ["--op", "login-read", "--users", "5", "--secrets", "10"];
    let r = shared_run(&bao, &flags, 40, &none_left);
    assert!(r.auth.is_empty(), "{:?}", r.auth);
    assert_eq!(count(&r.mounts, "vblast-"), 1, "{:?}", r.mounts);

    killed_shards_path_is_swept(&bao, "read", &flags, "vblast-read-", false);
}
