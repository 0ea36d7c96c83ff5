//! vault-benchmark's test types whose engines OpenBao ships, end to end against a real
//! OpenBao dev server: `identity` (its login, group_read and populate workloads),
//! `ssh_issue`, `redis_dynamic_secret` and `redis_static_secret` (a private redis-server)
//! and `rabbitmq_secret` (a private RabbitMQ), each as a vblast operation (`--op`) and as a
//! vault-benchmark file, at `-c 8` with every request a success, leaving the server as it
//! found it (mounts, auth paths, policies, identity entities and groups) and no user made
//! in redis or RabbitMQ.

use std::path::Path;

use crate::support::openbao::{OpenBao, data_keys as keys, get_json as get, server_state};
use crate::support::run::run;
use crate::support::vblast::{Args, vault_cmd};
use serde_json::Value;

/// Runs vblast with `args` (plus `-c 8 -n n --format json`): every request succeeds.
fn all_ok(bao: &OpenBao, n: u64, args: &[&str]) -> Value {
    let r = run(Args::default().extra(args).c(8).n(n).json().vault(bao));
    assert_eq!(r.code, Some(0), "{args:?}: {}", r.show());
    let j = r.json();
    assert_eq!(j["requests"], n, "{args:?}: {}", r.show());
    assert_eq!(j["ok"], n, "{args:?}: {}", r.show());
    j
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

#[test]
fn identity_workloads_log_in_and_read_groups_and_leave_nothing() {
    let bao = OpenBao::start();
    let before = server_state(&bao);
    // Logins: 40 entities with 2 aliases each (two userpass paths), a pool of 10 users,
    // 8 groups and 4 policies spread over them. userpass hashes each password with bcrypt
    // on the server: a short run.
    let j = all_ok(
        &bao,
        120,
        &[
            "--op",
            "identity",
            "--identity-workload",
            "login",
            "--entities",
            "40",
            "--entity-aliases",
            "80",
            "--login-users",
            "10",
            "--groups",
            "8",
            "--identity-policies",
            "4",
        ],
    );
    assert_eq!(j["status"]["200"], 120, "{j}");
    assert_eq!(
        server_state(&bao),
        before,
        "the login workload left something behind"
    );
    // Group reads and populate, from vault-benchmark files through `vault-benchmark run`.
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "groups.hcl",
        "test \"identity\" \"identity_partial_groups\" {\n  weight = 70\n  config {\n    workload = \"group_read\"\n    entity_count = 30\n    group_count = 10\n    groups {\n      count = 5\n      size = 4\n    }\n  }\n}\ntest \"identity\" \"identity_seed\" {\n  weight = 30\n  config {\n    workload = \"populate\"\n    entity_count = 20\n    policy_count = 3\n    policies {\n      preset = \"full\"\n    }\n  }\n}\n",
    );
    let j = all_ok(&bao, 300, &["--config", &file]);
    let rows: Vec<&str> = j["ops"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["name"].as_str().unwrap())
        .collect();
    assert_eq!(rows, ["identity_partial_groups", "identity_seed"], "{j}");
    assert_eq!(server_state(&bao), before, "the file left something behind");
}

/// With cleanup off, what the documented keys made is read back: the entities, their
/// aliases on one userpass path per slot, the groups' members, the policies everywhere
/// `full` puts them; the ssh CA is RSA (vault-benchmark's default) and the role its.
/// The keys the server generates are small ones (a 2048-bit CA, EC-256 certificates'
/// keys), given in the file's `ca` and `issued_cert` blocks: the test is about what the
/// file makes, and an RSA-4096 key per request, 8 at once, outlasted the 30 s request
/// timeout at load average ~23 (`ssh_issue_makes_keys_and_certificates_of_each_type`
/// covers the key types).
#[test]
fn identity_and_ssh_issue_files_create_what_vault_benchmark_creates() {
    let bao = OpenBao::start();
    let before = server_state(&bao);
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "kept.hcl",
        "cleanup = false\ntest \"identity\" \"seed\" {\n  weight = 50\n  config {\n    workload = \"populate\"\n    entity_count = 12\n    alias_count = 24\n    login_users = 3\n    group_count = 4\n    groups {\n      count = 2\n      size = 5\n    }\n    policy_count = 2\n    policies {\n      preset = \"full\"\n    }\n  }\n}\ntest \"ssh_issue\" \"ssh_issue_test1\" {\n  weight = 50\n  config {\n    ca {\n      key_bits = 2048\n    }\n    role {\n      allow_user_certificates = true\n    }\n    issued_cert {\n      key_type = \"ec\"\n      key_bits = 256\n    }\n  }\n}\n",
    );
    let cfg = format!("-config={file}");
    let r = run(vault_cmd(
        &bao,
        &[
            "vault-benchmark",
            "run",
            &cfg,
            "-duration=1s",
            "-workers",
            "8",
        ],
    ));
    assert_eq!(r.code, Some(0), "{}", r.show());
    assert!(
        r.stderr.contains("OpenBao refuses to issue"),
        "the difference is said: {}",
        r.show()
    );
    assert!(r.stderr.contains("populate"), "{}", r.show());
    let entities = keys(&get(&bao, "/v1/identity/entity/name?list=true"));
    assert_eq!(entities.len(), 12, "{entities:?}");
    let auth = keys(&get(&bao, "/v1/sys/auth"));
    let paths: Vec<&String> = auth
        .iter()
        .filter(|a| a.starts_with("vblast-id-"))
        .collect();
    assert_eq!(paths.len(), 2, "one userpass path per alias slot: {auth:?}");
    let first = get(&bao, &format!("/v1/identity/entity/name/{}", entities[0]));
    assert_eq!(
        first["data"]["aliases"].as_array().unwrap().len(),
        2,
        "{first}"
    );
    assert_eq!(
        first["data"]["policies"].as_array().unwrap().len(),
        2,
        "{first}"
    );
    let mut members = Vec::new();
    for g in keys(&get(&bao, "/v1/identity/group/name?list=true")) {
        let v = get(&bao, &format!("/v1/identity/group/name/{g}"));
        members.push(
            v["data"]["member_entity_ids"]
                .as_array()
                .map_or(0, Vec::len),
        );
        assert_eq!(v["data"]["policies"].as_array().unwrap().len(), 2, "{v}");
    }
    members.sort();
    assert_eq!(members, [0, 0, 5, 5]);
    let mounts = crate::support::openbao::vblast_mounts(&bao);
    assert_eq!(mounts.len(), 1, "{mounts:?}");
    let m = mounts[0].trim_end_matches('/');
    let ca = get(&bao, &format!("/v1/{m}/config/ca"));
    assert!(
        ca["data"]["public_key"]
            .as_str()
            .unwrap()
            .starts_with("ssh-rsa "),
        "{ca}"
    );
    let role = get(&bao, &format!("/v1/{m}/roles/vblast"))["data"].clone();
    assert_eq!(role["key_type"], "ca", "{role}");
    assert_eq!(role["allow_user_certificates"], true, "{role}");
    assert_eq!(role["allowed_users"], "vblast", "{role}");
    // `vblast cleanup --orphans --yes` removes every vblast- object it finds.
    let r = run(vault_cmd(&bao, &["cleanup", "--orphans", "--yes"]));
    assert_eq!(r.code, Some(0), "{}", r.show());
    assert_eq!(server_state(&bao), before, "cleanup left something behind");
}

#[test]
fn ssh_issue_makes_keys_and_certificates_of_each_type() {
    let bao = OpenBao::start();
    let before = server_state(&bao);
    for key in ["rsa-2048", "ed25519"] {
        all_ok(&bao, 40, &["--op", "ssh-issue", "--key-type", key]);
        assert_eq!(server_state(&bao), before, "{key} left something behind");
    }
    let r = run(vault_cmd(
        &bao,
        &["--op", "ssh-issue", "--key-type", "dsa-1024", "-n", "1"],
    ));
    assert_eq!(r.code, Some(2), "{}", r.show());
    assert!(
        r.stderr.contains("unknown ssh key type 'dsa-1024'"),
        "{}",
        r.show()
    );
    assert_eq!(server_state(&bao), before);
}

/// redis_dynamic_secret and redis_static_secret against a private redis-server: each
/// dynamic credential is a real redis user, all deleted by the cleanup (redis revokes
/// about one lease in 0.2-0.3 s here: short runs); the static role really rotates the
/// existing user's password, and the user stays.
#[test]
fn redis_credentials_are_real_users_and_none_is_left() {
    let redis = crate::support::redis::Redis::start()
        .expect("redis-server is not installed: run tools/deps.sh (Debian package redis-server)");
    let bao = OpenBao::start();
    let before = server_state(&bao);
    let url = redis.url();
    all_ok(&bao, 24, &["--op", "redis-creds", "--redis-url", &url]);
    assert_eq!(
        redis.users(),
        Vec::<String>::new(),
        "every dynamic user deleted"
    );
    assert_eq!(server_state(&bao), before);
    assert_eq!(
        redis
            .cli(&[
                "ACL",
                "SETUSER",
                "bench-static",
                "on",
                ">first-pw",
                "~*",
                "+@read"
            ])
            .as_deref(),
        Some("OK")
    );
    let dir = tempfile::tempdir().unwrap();
    let conn = format!(
        "    db_connection {{\n      host = \"127.0.0.1\"\n      name = \"redis\"\n      port = \"{}\"\n      allowed_roles = [\"my-*-role\"]\n      username = \"default\"\n      password = \"{}\"\n      tls = false\n    }}\n",
        redis.port, redis.password
    );
    let file = write(
        dir.path(),
        "redis.hcl",
        &format!(
            "test \"redis_static_secret\" \"redis_static_secret_1\" {{\n  weight = 80\n  config {{\n{conn}    role {{\n      name = \"my-s-role\"\n      db_name = \"redis\"\n      rotation_period = \"5m\"\n      username = \"bench-static\"\n    }}\n  }}\n}}\ntest \"redis_dynamic_secret\" \"redis_dynamic_secret_1\" {{\n  weight = 20\n  config {{\n{conn}    role {{\n      role_name = \"my-dynamic-role\"\n      creation_statements = \"[\\\"+@admin\\\"]\"\n      default_ttl = \"5m\"\n      max_ttl = \"1h\"\n    }}\n  }}\n}}\n"
        ),
    );
    let j = all_ok(&bao, 100, &["--config", &file]);
    let rows: Vec<&str> = j["ops"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        rows,
        ["redis_static_secret_1", "redis_dynamic_secret_1"],
        "{j}"
    );
    assert_eq!(
        redis.users(),
        ["bench-static"],
        "the static user stays, no dynamic one"
    );
    let old = std::process::Command::new("redis-cli")
        .args([
            "-p",
            &redis.port.to_string(),
            "--user",
            "bench-static",
            "--pass",
            "first-pw",
            "--no-auth-warning",
            "PING",
        ])
        .output()
        .unwrap();
    assert!(
        !String::from_utf8_lossy(&old.stdout).contains("PONG"),
        "Vault rotated the static user's password"
    );
    assert_eq!(server_state(&bao), before);
    // An unreachable redis: one message, exit 2, nothing left.
    let port = crate::support::ports::free_port();
    let bad = format!("redis://default:x@127.0.0.1:{port}");
    let r = run(vault_cmd(
        &bao,
        &["--op", "redis-creds", "--redis-url", &bad, "-n", "1"],
    ));
    assert_eq!(r.code, Some(2), "{}", r.show());
    assert!(
        r.stderr.contains(&format!("127.0.0.1:{port}")) && !r.stderr.contains("default:x"),
        "{}",
        r.show()
    );
    assert_eq!(server_state(&bao), before);
}

/// rabbitmq_secret against a private RabbitMQ (started once: it takes about 10 s): each
/// credential is a real RabbitMQ user, all deleted by the cleanup; the same through a
/// vault-benchmark file with its documented keys.
#[test]
fn rabbitmq_credentials_are_real_users_and_none_is_left() {
    let mq = crate::support::rabbitmq::RabbitMq::start().expect(
        "rabbitmq-server is not installed: run tools/deps.sh (Debian package rabbitmq-server)",
    );
    let bao = OpenBao::start();
    let before = server_state(&bao);
    let users = mq.users().unwrap();
    all_ok(
        &bao,
        60,
        &["--op", "rabbitmq-creds", "--rabbitmq-url", &mq.url()],
    );
    assert_eq!(mq.users().unwrap(), users, "every RabbitMQ user deleted");
    assert_eq!(server_state(&bao), before);
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "rabbit.hcl",
        &format!(
            "test \"rabbitmq_secret\" \"rabbit_test\" {{\n  weight = 100\n  config {{\n    connection {{\n      connection_uri = \"http://127.0.0.1:{}\"\n      username = \"guest\"\n      password = \"guest\"\n    }}\n    role {{\n      name = \"bench\"\n      vhosts = \"{{\\\"/\\\":{{\\\"write\\\": \\\".*\\\", \\\"read\\\": \\\".*\\\"}}}}\"\n      tags = \"management\"\n    }}\n  }}\n}}\n",
            mq.port
        ),
    );
    let j = all_ok(&bao, 60, &["--config", &file]);
    assert_eq!(j["ops"][0]["name"], "rabbit_test", "{j}");
    assert_eq!(mq.users().unwrap(), users, "every RabbitMQ user deleted");
    assert_eq!(server_state(&bao), before);
}
