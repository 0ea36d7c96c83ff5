//! The Vault workload catalogue against a real OpenBao dev server: every operation of the
//! auth, token, transit, KV and cubbyhole families runs at `-c 8` with every request
//! judged a success (answers validated: a token, a ciphertext, the plaintext given back,
//! a valid signature), and leaves the server as it found it: mounts, auth methods,
//! policies and token accessors are the same before and after the run.

use crate::support::openbao::{OpenBao, data_keys as keys, get_json as get, server_state};
use crate::support::run::run;
use crate::support::vblast::{Args, vault_cmd};
use serde_json::Value;

/// Runs `--op op` with `extra` flags at -c 8 for `n` requests: all succeed, the report
/// names the operation, and the server is left as it was.
fn all_ok_and_clean(bao: &OpenBao, op: &str, n: u64, extra: &[&str]) -> Value {
    let before = server_state(bao);
    let r = run(Args::op(op).c(8).n(n).json().extra(extra).vault(bao));
    assert_eq!(r.code, Some(0), "{op}: {}", r.show());
    let j = r.json();
    assert_eq!(j["requests"], n, "{op}: {}", r.show());
    assert_eq!(j["ok"], n, "{op}: {}", r.show());
    let names: Vec<&str> = j["ops"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["name"].as_str().unwrap())
        .collect();
    assert!(names.len() >= op.split(',').count(), "{j}");
    for part in op.split(',') {
        let name = part.split(':').next().unwrap();
        assert!(names.contains(&name), "{name} not in {names:?}");
    }
    assert_eq!(server_state(bao), before, "{op} left something behind");
    j
}

#[test]
fn logins_succeed_and_their_tokens_are_revoked() {
    let bao = OpenBao::start();
    // userpass hashes each password with bcrypt on the server: 100 logins keep the run
    // well inside the harness's per-run limit on a loaded 2-core machine.
    for (op, n) in [("userpass-login", 100), ("approle-login", 400)] {
        let j = all_ok_and_clean(&bao, op, n, &[]);
        assert_eq!(j["status"]["200"], n, "{j}");
    }
    all_ok_and_clean(
        &bao,
        "approle-login",
        100,
        &["--token-type", "batch", "--token-ttl", "30s"],
    );
}

#[test]
fn token_operations_use_children_of_a_parent_revoked_at_cleanup() {
    let bao = OpenBao::start();
    for op in ["token-create", "token-lookup", "token-renew"] {
        all_ok_and_clean(&bao, op, 400, &[]);
    }
    all_ok_and_clean(
        &bao,
        "token-create:2,token-lookup:1,token-renew:1",
        400,
        &["--token-type", "service", "--token-ttl", "1m"],
    );
    all_ok_and_clean(&bao, "token-create", 50, &["--token-type", "batch"]);

    // Each revoke is preceded on its connection by the creation of the token it revokes,
    // reported as its own row; every such token is really revoked by its request: kept
    // (--keep), the server holds only the parent and at most one unrevoked token per
    // connection, not the hundreds created.
    let j = all_ok_and_clean(&bao, "token-revoke", 400, &[]);
    let rows = |j: &Value| -> (u64, u64) {
        let row = |name: &str| {
            j["ops"]
                .as_array()
                .unwrap()
                .iter()
                .find(|o| o["name"] == name)
                .unwrap()["requests"]
                .as_u64()
                .unwrap()
        };
        (row("token-revoke"), row("token-revoke/create"))
    };
    let (revokes, creates) = rows(&j);
    assert_eq!(revokes + creates, 400, "{j}");
    assert!(
        revokes <= creates && creates <= revokes + 8,
        "{revokes} {creates}"
    );
    let before = server_state(&bao).tokens;
    let r = run(vault_cmd(
        &bao,
        &[
            "--op",
            "token-revoke",
            "-c",
            "8",
            "-n",
            "400",
            "--keep",
            "--format",
            "json",
        ],
    ));
    assert_eq!(r.code, Some(0), "{}", r.show());
    let (revokes, creates) = rows(&r.json());
    let kept = server_state(&bao).tokens - before;
    assert_eq!(
        kept as u64,
        1 + creates - revokes,
        "parent and the tokens not yet revoked"
    );
    assert!(creates >= 150, "{creates}");
}

#[test]
fn transit_operations_are_validated() {
    let bao = OpenBao::start();
    for op in [
        "transit-encrypt",
        "transit-decrypt",
        "transit-sign",
        "transit-verify",
        "transit-hmac",
    ] {
        all_ok_and_clean(&bao, op, 300, &[]);
    }
    for key in ["ed25519", "rsa-2048"] {
        all_ok_and_clean(
            &bao,
            "transit-sign,transit-verify",
            100,
            &["--key-type", key],
        );
    }
    all_ok_and_clean(
        &bao,
        "transit-encrypt,transit-decrypt,transit-hmac",
        200,
        &["--key-type", "chacha20-poly1305", "--payload-size", "4096"],
    );
}

#[test]
fn kv_list_delete_and_cubbyhole() {
    let bao = OpenBao::start();
    for version in ["1", "2"] {
        for op in ["kv-list", "kv-delete"] {
            all_ok_and_clean(&bao, op, 300, &["--kv-version", version, "--secrets", "50"]);
        }
    }
    // Inside the user's own mount: only vblast's prefix is touched.
    let (s, b) = bao.api(
        "POST",
        "/v1/secret/data/mine",
        Some(r#"{"data":{"v":"1"}}"#),
    );
    assert_eq!(s, 200, "{b}");
    all_ok_and_clean(
        &bao,
        "kv-list,kv-delete",
        300,
        &["--mount", "secret", "--secrets", "20"],
    );
    assert_eq!(bao.api("GET", "/v1/secret/data/mine", None).0, 200);
    for op in [
        "cubbyhole-read",
        "cubbyhole-write",
        "cubbyhole-read,cubbyhole-write",
    ] {
        all_ok_and_clean(&bao, op, 300, &["--secrets", "40"]);
    }
}

#[test]
fn unusable_settings_are_refused_before_anything_is_created() {
    let bao = OpenBao::start();
    let before = server_state(&bao);
    for (args, needle) in [
        (
            vec!["--op", "transit-sign", "--key-type", "aes256-gcm96"],
            "cannot sign",
        ),
        (
            vec!["--op", "transit-encrypt", "--key-type", "des"],
            "not one of",
        ),
        (
            vec!["--op", "userpass-login", "--token-type", "default"],
            "service, batch",
        ),
        (vec!["--op", "token-create", "--token-ttl", "soon"], "soon"),
        (
            vec!["--op", "token-renew", "--token-type", "batch"],
            "batch",
        ),
        (vec!["--op", "approle-login", "--no-setup"], "--no-setup"),
    ] {
        let mut a = args.clone();
        a.extend_from_slice(&["-n", "10"]);
        let r = run(vault_cmd(&bao, &a));
        assert_eq!(r.code, Some(2), "{args:?}: {}", r.show());
        assert!(r.stderr.contains(needle), "{args:?}: {}", r.show());
        assert!(!r.stderr.contains("panicked"), "{}", r.show());
    }
    assert_eq!(server_state(&bao), before);
}

#[test]
fn login_read_logs_in_then_reads_with_the_new_token() {
    let bao = OpenBao::start();
    for version in ["2", "1"] {
        let j = all_ok_and_clean(
            &bao,
            "login-read",
            400,
            &["--kv-version", version, "--users", "20", "--secrets", "30"],
        );
        let row = |name: &str| {
            j["ops"]
                .as_array()
                .unwrap()
                .iter()
                .find(|o| o["name"] == name)
                .unwrap_or_else(|| panic!("no row {name}: {j}"))["requests"]
                .as_u64()
                .unwrap()
        };
        let (reads, logins) = (row("login-read"), row("login-read/login"));
        // Every read used the token of the login just before it on its connection.
        assert_eq!(reads + logins, 400, "{j}");
        assert!(reads <= logins && logins <= reads + 8, "{reads} {logins}");
    }
    // The scenario flag, as the issue writes it, in the user's own mount.
    let before = server_state(&bao);
    let r = run(vault_cmd(
        &bao,
        &[
            "--scenario",
            "login-read",
            "--auth",
            "userpass",
            "--users",
            "5",
            "--mount",
            "secret",
            "--secrets",
            "10",
            "-c",
            "4",
            "-n",
            "100",
            "--format",
            "json",
        ],
    ));
    assert_eq!(r.code, Some(0), "{}", r.show());
    assert_eq!(r.json()["ok"], 100, "{}", r.show());
    assert_eq!(server_state(&bao), before);
    for (args, needle) in [
        (
            vec!["--scenario", "read-login"],
            "unknown scenario 'read-login'",
        ),
        (
            vec!["--scenario", "login-read", "--auth", "ldap"],
            "--auth ldap",
        ),
        (
            vec!["--scenario", "login-read", "--users", "0"],
            "--users 0",
        ),
    ] {
        let mut a = args.clone();
        a.extend_from_slice(&["-n", "10"]);
        let r = run(vault_cmd(&bao, &a));
        assert_eq!(r.code, Some(2), "{args:?}: {}", r.show());
        assert!(r.stderr.contains(needle), "{args:?}: {}", r.show());
    }
    assert_eq!(server_state(&bao), before);
}

#[test]
fn system_operations_need_no_setup() {
    let bao = OpenBao::start();
    for op in [
        "sys-health",
        "ha-status",
        "seal-status",
        "sys-metrics",
        "sys-health,ha-status,seal-status,sys-metrics",
    ] {
        all_ok_and_clean(&bao, op, 300, &[]);
    }
}

#[test]
fn pki_issue_gives_certificates_of_each_key_type() {
    let bao = OpenBao::start();
    all_ok_and_clean(&bao, "pki-issue", 100, &[]);
    for key in ["rsa-2048", "ed25519"] {
        all_ok_and_clean(&bao, "pki-issue", 40, &["--key-type", key]);
    }
    let r = run(vault_cmd(
        &bao,
        &["--op", "pki-issue", "--key-type", "ecdsa-p256", "-n", "5"],
    ));
    assert_eq!(r.code, Some(2), "{}", r.show());
    assert!(
        r.stderr.contains("not one of") && r.stderr.contains("ec-256"),
        "{}",
        r.show()
    );
}

#[test]
fn totp_codes_of_a_key_made_at_setup() {
    let bao = OpenBao::start();
    all_ok_and_clean(&bao, "totp-generate", 300, &[]);
}

/// The TOTP keys of a fresh mount's, by name (empty when the mount is gone).
fn totp_keys(bao: &OpenBao, mount: &str) -> Vec<String> {
    keys(&get(bao, &format!("/v1/{mount}/keys?list=true")))
}

/// The vblast TOTP mounts on the server.
fn totp_mounts(bao: &OpenBao) -> Vec<String> {
    keys(&get(bao, "/v1/sys/mounts"))
        .into_iter()
        .filter(|m| m.starts_with("vblast-totp-"))
        .map(|m| m.trim_end_matches('/').to_string())
        .collect()
}

/// totp-read reads the settings of the key made at setup; totp-create makes a new key per
/// request (kept with --keep: as many distinct keys as requests), and a normal run
/// deletes them all with the mount; vault-benchmark's TOTP example file runs unchanged.
#[test]
fn totp_read_and_create_leave_no_key_behind() {
    let bao = OpenBao::start();
    all_ok_and_clean(&bao, "totp-read", 300, &[]);
    all_ok_and_clean(&bao, "totp-create", 200, &[]);
    all_ok_and_clean(&bao, "totp-create:1,totp-read:1,totp-generate:1", 300, &[]);

    // Kept: every create made its own key, under a fresh name, in vblast's mount.
    let r = run(vault_cmd(
        &bao,
        &[
            "--op",
            "totp-create",
            "-c",
            "8",
            "-n",
            "120",
            "--keep",
            "--format",
            "json",
        ],
    ));
    assert_eq!(r.code, Some(0), "{}", r.show());
    assert_eq!(r.json()["ok"], 120, "{}", r.show());
    let mounts = totp_mounts(&bao);
    assert_eq!(mounts.len(), 1, "{mounts:?}");
    let made = totp_keys(&bao, &mounts[0]);
    assert_eq!(made.len(), 120, "{made:?}");
    assert!(made.iter().all(|k| k.starts_with("vblast-")), "{made:?}");
    let (status, body) = bao.api("DELETE", &format!("/v1/sys/mounts/{}", mounts[0]), None);
    assert_eq!(status, 204, "{body}");
    assert!(totp_keys(&bao, &mounts[0]).is_empty());

    // vault-benchmark's documented TOTP example, as a --config file: three rows by name,
    // every request a success, nothing left.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("totp.hcl");
    // The file's address is the documentation's; VAULT_ADDR (the environment) wins.
    let mut hcl = String::from(
        "vault_addr = \"http://127.0.0.1:8200\"\nvault_token = \"root\"\nduration = \"30s\"\ncleanup = true\n",
    );
    for (kind, name, weight) in [
        ("totp_create", "totp_create1", 34),
        ("totp_read", "totp_read1", 33),
        ("totp_generate", "totp_generate1", 33),
    ] {
        let generate = if kind == "totp_read" {
            ""
        } else {
            "    generate = true\n"
        };
        hcl.push_str(&format!(
            "test \"{kind}\" \"{name}\" {{\n  weight = {weight}\n  config {{\n    key_name = \"benchmark-key\"\n    issuer = \"Vault Benchmark\"\n    account_name = \"test@user.com\"\n    algorithm = \"SHA1\"\n    digits = 6\n    period = 30\n{generate}  }}\n}}\n"
        ));
    }
    std::fs::write(&file, hcl).unwrap();
    let before = server_state(&bao);
    let file_arg = file.to_str().unwrap();
    let r = run(vault_cmd(
        &bao,
        &[
            "--config", file_arg, "-n", "300", "-c", "8", "--format", "json",
        ],
    ));
    assert_eq!(r.code, Some(0), "{}", r.show());
    let j = r.json();
    assert_eq!(j["ok"], 300, "{}", r.show());
    let mut names: Vec<&str> = j["ops"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["name"].as_str().unwrap())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["totp_create1", "totp_generate1", "totp_read1"],
        "{j}"
    );
    assert_eq!(
        server_state(&bao),
        before,
        "the TOTP config left something behind"
    );
    assert!(totp_mounts(&bao).is_empty());
}

#[test]
fn ssh_sign_certifies_a_client_key_made_at_setup() {
    let bao = OpenBao::start();
    all_ok_and_clean(&bao, "ssh-sign", 200, &[]);
}

/// login-read's logins go to the users in turn (login i as user i mod N): kept (--keep),
/// the server holds one token per login, and the users' token counts differ by at most one.
#[test]
fn login_read_takes_the_users_in_turn() {
    let bao = OpenBao::start();
    let before = server_state(&bao);
    let r = run(vault_cmd(
        &bao,
        &[
            "--scenario",
            "login-read",
            "--users",
            "20",
            "--secrets",
            "10",
            "-c",
            "8",
            "-n",
            "300",
            "--keep",
            "--format",
            "json",
        ],
    ));
    assert_eq!(r.code, Some(0), "{}", r.show());
    let j = r.json();
    let logins = j["ops"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["name"] == "login-read/login")
        .unwrap()["requests"]
        .as_u64()
        .unwrap();
    let mut per_user = std::collections::BTreeMap::<String, u64>::new();
    for accessor in keys(&get(&bao, "/v1/auth/token/accessors?list=true")) {
        let (s, b) = bao.api(
            "POST",
            "/v1/auth/token/lookup-accessor",
            Some(&format!(r#"{{"accessor":"{accessor}"}}"#)),
        );
        assert_eq!(s, 200, "{b}");
        let v: Value = serde_json::from_str(&b).unwrap();
        if let Some(user) = v["data"]["meta"]["username"].as_str() {
            *per_user.entry(user.to_string()).or_default() += 1;
        }
    }
    assert_eq!(per_user.values().sum::<u64>(), logins, "{per_user:?}");
    assert_eq!(per_user.len(), 20, "{per_user:?}");
    let (lo, hi) = (
        *per_user.values().min().unwrap(),
        *per_user.values().max().unwrap(),
    );
    assert!(hi - lo <= 1, "users not taken in turn: {per_user:?}");
    // What --keep kept, removed as an operator would: every `vblast-` object, and the
    // identity entities the logins on its auth path made (one per user).
    let orphans = run(vault_cmd(&bao, &["cleanup", "--orphans", "--yes"]));
    orphans.assert_code(0);
    assert_eq!(server_state(&bao), before, "{}", orphans.show());
}

/// jwt-login: a key pair made by vblast, its public key on a fresh jwt auth method, JWTs
/// from a pre-signed pool; every login answers with a token, and the path, the policy and
/// the tokens are gone afterwards.
#[test]
fn jwt_login_with_a_key_made_at_setup() {
    let bao = OpenBao::start();
    let j = all_ok_and_clean(&bao, "jwt-login", 300, &[]);
    assert_eq!(j["status"]["200"], 300, "{j}");
    all_ok_and_clean(
        &bao,
        "jwt-login",
        100,
        &["--token-type", "batch", "--token-ttl", "30s"],
    );
    let before = server_state(&bao);
    for (args, needle) in [
        (vec!["--token-type", "default"], "service, batch"),
        (vec!["--token-ttl", "soon"], "soon"),
        (vec!["--no-setup"], "--no-setup"),
    ] {
        let mut a = vec!["--op", "jwt-login", "-n", "10"];
        a.extend_from_slice(&args);
        let r = run(vault_cmd(&bao, &a));
        assert_eq!(r.code, Some(2), "{args:?}: {}", r.show());
        assert!(r.stderr.contains(needle), "{args:?}: {}", r.show());
        assert!(!r.stderr.contains("panicked"), "{}", r.show());
    }
    assert_eq!(server_state(&bao), before);
}

/// pki-sign: a root and an intermediate CA made at setup, CSRs made by vblast of each key
/// type signed by the intermediate, every certificate parsed; stored and not stored.
#[test]
fn pki_sign_signs_csrs_made_at_setup_with_an_intermediate() {
    let bao = OpenBao::start();
    all_ok_and_clean(&bao, "pki-sign", 100, &[]);
    for key in ["rsa-2048", "ed25519"] {
        all_ok_and_clean(&bao, "pki-sign", 40, &["--key-type", key]);
    }
    all_ok_and_clean(&bao, "pki-sign,pki-issue", 60, &["--no-store"]);
    let r = run(vault_cmd(
        &bao,
        &["--op", "pki-sign", "--key-type", "rsa-1024", "-n", "5"],
    ));
    assert_eq!(r.code, Some(2), "{}", r.show());
    assert!(
        r.stderr.contains("not one of") && r.stderr.contains("rsa-2048"),
        "{}",
        r.show()
    );
}

/// With --namespace, setup, load and cleanup of jwt-login, pki-sign and login-read all go
/// to the namespace: kept (--keep), what they made is in the namespace and nothing at the
/// root; every request succeeded, so the load found it there too.
#[test]
fn new_operations_run_inside_a_namespace() {
    let bao = OpenBao::start();
    bao.namespace("ns1");
    let in_ns = |method: &str, path: &str| {
        let (status, text) = bao.api_in("ns1", method, path);
        (
            status,
            serde_json::from_str::<Value>(&text).unwrap_or(Value::Null),
        )
    };
    let vblast_keys = |v: &Value| -> Vec<String> {
        keys(v)
            .into_iter()
            .map(|k| k.trim_end_matches('/').to_string())
            .filter(|k| k.starts_with("vblast-"))
            .collect()
    };
    let root_before = server_state(&bao);
    for (op, extra, auths, mounts, policies) in [
        ("jwt-login", vec![], 1, 0, 1),
        ("pki-sign", vec![], 0, 2, 0),
        (
            "login-read",
            vec!["--users", "5", "--secrets", "5"],
            1,
            1,
            1,
        ),
    ] {
        let mut args = vec![
            "--namespace",
            "ns1",
            "--op",
            op,
            "-c",
            "4",
            "-n",
            "60",
            "--keep",
            "--format",
            "json",
        ];
        args.extend_from_slice(&extra);
        let r = run(vault_cmd(&bao, &args));
        assert_eq!(r.code, Some(0), "{op}: {}", r.show());
        assert_eq!(r.json()["ok"], 60, "{op}: {}", r.show());
        assert_eq!(
            server_state(&bao),
            root_before,
            "{op} made something at the root"
        );
        let a = vblast_keys(&in_ns("GET", "/v1/sys/auth").1);
        let m = vblast_keys(&in_ns("GET", "/v1/sys/mounts").1);
        let p = vblast_keys(&in_ns("GET", "/v1/sys/policies/acl?list=true").1);
        assert_eq!(
            (a.len(), m.len(), p.len()),
            (auths, mounts, policies),
            "{op}: {a:?} {m:?} {p:?}"
        );
        for x in a {
            assert_eq!(in_ns("DELETE", &format!("/v1/sys/auth/{x}")).0, 204);
        }
        for x in m {
            assert_eq!(in_ns("DELETE", &format!("/v1/sys/mounts/{x}")).0, 204);
        }
        for x in p {
            assert_eq!(in_ns("DELETE", &format!("/v1/sys/policies/acl/{x}")).0, 204);
        }
    }
}

/// Seeding on one connection (`VBLAST_SEED_CONNS=1`, the sequential baseline of
/// tools/bench/seeding.sh) writes every secret, and `VBLAST_SETUP_TIMING=1` prints the
/// setup's phases to stderr (only then; the results keep them always).
#[test]
fn seeding_on_one_connection_and_its_phases() {
    let bao = OpenBao::start();
    let before = server_state(&bao);
    let args = [
        "--op",
        "kv-read",
        "--secrets",
        "40",
        "-c",
        "4",
        "-n",
        "200",
        "--format",
        "json",
    ];
    let mut cmd = vault_cmd(&bao, &args);
    cmd.env("VBLAST_SEED_CONNS", "1")
        .env("VBLAST_SETUP_TIMING", "1");
    let r = run(cmd);
    assert_eq!(r.code, Some(0), "{}", r.show());
    let j = r.json();
    // Every read found its secret: all 40 were written.
    assert_eq!(j["ok"], 200, "{}", r.show());
    for phase in ["checks ", "kv mount ", "kv seeding 40 in "] {
        assert!(
            r.stderr.contains(&format!("vblast: setup: {phase}")),
            "{phase}: {}",
            r.show()
        );
    }
    assert_eq!(server_state(&bao), before, "left something behind");
    let r = run(vault_cmd(&bao, &args));
    assert_eq!(r.code, Some(0), "{}", r.show());
    assert!(!r.stderr.contains("vblast: setup:"), "{}", r.show());
}
