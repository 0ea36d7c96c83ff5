//! The tool's own login (`--auth-method`) against OpenBao's real auth methods: approle,
//! userpass, jwt, cert, and kubernetes pointed at the Kubernetes API stand-in
//! (support::kube_api, a TokenReview endpoint: no Kubernetes API server runs here). Each
//! run works with the login's token (VAULT_TOKEN, root, is set and loses), and afterwards
//! that token is revoked: root's lookup of its accessor fails. A refused login is exit 2
//! with the server's error named, no secret printed, and nothing created.

use serde_json::{Value, json};

use crate::support::kube_api::{DEFAULT_AUDIENCE, KubeApi};
use crate::support::openbao::{OpenBao, ServerState, server_state, vblast_mounts};
use crate::support::run::{Out, run, spawn};
use crate::support::vblast::Args;

/// A policy that allows the run's setup and cleanup, but is not root.
const ADMIN: &str =
    r#"path "*" { capabilities = ["create", "read", "update", "delete", "list", "sudo"] }"#;

fn post(bao: &OpenBao, path: &str, body: Value) -> Value {
    let (status, text) = bao.api("POST", path, Some(&body.to_string()));
    assert!(status < 300, "POST {path}: {status} {text}");
    serde_json::from_str(&text).unwrap_or(Value::Null)
}

/// The admin policy, and auth method `kind` mounted at its name.
fn enable(bao: &OpenBao, kind: &str) {
    post(
        bao,
        "/v1/sys/policies/acl/bench-admin",
        json!({"policy": ADMIN}),
    );
    post(bao, &format!("/v1/sys/auth/{kind}"), json!({"type": kind}));
}

/// The accessor vblast says it logged in with.
fn accessor(r: &Out) -> String {
    accessors(r)
        .into_iter()
        .next()
        .unwrap_or_else(|| panic!("no login line: {}", r.show()))
}

/// The server's state but its identity entities: a login makes (or finds) the entity of
/// whoever logs in, as any login does, and vblast leaves it (it is the operator's).
fn state(bao: &OpenBao) -> ServerState {
    ServerState {
        entities: Vec::new(),
        ..server_state(bao)
    }
}

/// A kv-read run with `login` flags: it works, and the login's token is gone afterwards.
fn run_logged_in(bao: &OpenBao, login: &[&str]) -> Out {
    let before = state(bao);
    let r = run(Args::op("kv-read")
        .c(2)
        .n(40)
        .json()
        .extra(login)
        .vault(bao));
    assert_eq!(r.code, Some(0), "{}", r.show());
    assert_eq!(r.json()["ok"], 40, "{}", r.show());
    assert_revoked(bao, &r);
    assert_eq!(state(bao), before, "the run left something");
    r
}

/// Root's lookup of the login's token by its accessor fails: it was revoked.
fn assert_revoked(bao: &OpenBao, r: &Out) {
    assert_accessor_revoked(bao, &accessor(r), r);
}

fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> String {
    let p = dir.path().join(name);
    std::fs::write(&p, format!("{text}\n")).unwrap();
    p.display().to_string()
}

#[test]
fn approle_login_runs_and_is_revoked_and_a_policy_less_role_is_used_not_root() {
    let bao = OpenBao::start();
    enable(&bao, "approle");
    let dir = tempfile::tempdir().unwrap();
    for (role, policies) in [("bench", "bench-admin"), ("weak", "default")] {
        post(
            &bao,
            &format!("/v1/auth/approle/role/{role}"),
            json!({"token_policies": policies, "token_ttl": "1h"}),
        );
    }
    let ids = |role: &str| {
        let (_, text) = bao.api(
            "GET",
            &format!("/v1/auth/approle/role/{role}/role-id"),
            None,
        );
        let role_id: Value = serde_json::from_str(&text).unwrap();
        let secret = post(
            &bao,
            &format!("/v1/auth/approle/role/{role}/secret-id"),
            json!({}),
        );
        (
            write(
                &dir,
                &format!("{role}-role-id"),
                role_id["data"]["role_id"].as_str().unwrap(),
            ),
            write(
                &dir,
                &format!("{role}-secret-id"),
                secret["data"]["secret_id"].as_str().unwrap(),
            ),
        )
    };
    let (rid, sid) = ids("bench");
    run_logged_in(
        &bao,
        &[
            "--auth-method",
            "approle",
            "--auth-role-id-file",
            &rid,
            "--auth-secret-id-file",
            &sid,
        ],
    );
    // The same secrets from the environment instead of files.
    let before = state(&bao);
    let mut cmd = Args::op("kv-read")
        .c(2)
        .n(40)
        .json()
        .extra(&["--auth-method", "approle"])
        .vault(&bao);
    let secret_of = |f: &str| std::fs::read_to_string(f).unwrap().trim().to_string();
    cmd.env("VBLAST_AUTH_ROLE_ID", secret_of(&rid))
        .env("VBLAST_AUTH_SECRET_ID", secret_of(&sid));
    let r = run(cmd);
    assert_eq!(r.code, Some(0), "{}", r.show());
    assert_eq!(r.json()["ok"], 40, "{}", r.show());
    assert!(r.stderr.contains("logged in with approle"), "{}", r.show());
    assert_revoked(&bao, &r);
    assert_eq!(state(&bao), before, "the run left something");
    // The login's token, not VAULT_TOKEN (root), does the setup: with only the default
    // policy it is refused.
    let (rid, sid) = ids("weak");
    let before = state(&bao);
    let r = run(Args::op("kv-read")
        .c(1)
        .n(5)
        .extra(&[
            "--auth-method",
            "approle",
            "--auth-role-id-file",
            &rid,
            "--auth-secret-id-file",
            &sid,
        ])
        .vault(&bao));
    assert_ne!(r.code, Some(0), "{}", r.show());
    assert!(r.stderr.contains("permission denied"), "{}", r.show());
    // A failed setup revokes the token too.
    assert_revoked(&bao, &r);
    assert_eq!(state(&bao), before);
}

#[test]
fn userpass_login_runs_and_is_revoked_and_a_wrong_password_is_exit_2() {
    let bao = OpenBao::start();
    enable(&bao, "userpass");
    post(
        &bao,
        "/v1/auth/userpass/users/bench",
        json!({"password": "right-pw-4711", "token_policies": "bench-admin"}),
    );
    let dir = tempfile::tempdir().unwrap();
    let pw = write(&dir, "pw", "right-pw-4711");
    run_logged_in(
        &bao,
        &[
            "--auth-method",
            "userpass",
            "--auth-username",
            "bench",
            "--auth-password-file",
            &pw,
        ],
    );
    // The refused login: its error named, no secret, exit 2, nothing created.
    let wrong = write(&dir, "wrong", "wrong-pw-0815");
    let before = server_state(&bao);
    let r = run(Args::op("kv-read")
        .c(1)
        .n(5)
        .extra(&[
            "--auth-method",
            "userpass",
            "--auth-username",
            "bench",
            "--auth-password-file",
            &wrong,
        ])
        .vault(&bao));
    assert_eq!(r.code, Some(2), "{}", r.show());
    assert!(
        r.stderr
            .contains("userpass login at auth/userpass was refused"),
        "{}",
        r.show()
    );
    assert!(r.stderr.contains("invalid"), "{}", r.show());
    assert!(!r.show().contains("wrong-pw-0815"), "{}", r.show());
    assert_eq!(server_state(&bao), before);
    // With --token-file it is refused, before anything is sent.
    let r = run(Args::op("kv-read")
        .n(1)
        .extra(&[
            "--auth-method",
            "userpass",
            "--auth-username",
            "bench",
            "--auth-password-file",
            &pw,
            "--token-file",
            &pw,
        ])
        .vault(&bao));
    assert_eq!(r.code, Some(2), "{}", r.show());
    assert!(r.stderr.contains("leave out --token"), "{}", r.show());
}

#[test]
fn jwt_login_runs_and_is_revoked() {
    let bao = OpenBao::start();
    let api = KubeApi::start(&[("apps", "web")]);
    enable(&bao, "jwt");
    post(
        &bao,
        "/v1/auth/jwt/config",
        json!({"jwt_validation_pubkeys": [api.public_key_pem()]}),
    );
    post(
        &bao,
        "/v1/auth/jwt/role/bench",
        json!({"role_type": "jwt", "user_claim": "sub", "bound_audiences": [DEFAULT_AUDIENCE],
               "token_policies": "bench-admin"}),
    );
    let jwt = api.token_file("apps", "web").display().to_string();
    run_logged_in(
        &bao,
        &[
            "--auth-method",
            "jwt",
            "--auth-role",
            "bench",
            "--auth-jwt-file",
            &jwt,
        ],
    );
}

#[test]
fn kubernetes_login_through_the_token_review_stand_in_runs_and_is_revoked() {
    let bao = OpenBao::start();
    let api = KubeApi::start(&[("apps", "web"), ("kube-system", "vault")]);
    enable(&bao, "kubernetes");
    post(
        &bao,
        "/v1/auth/kubernetes/config",
        json!({"kubernetes_host": api.url, "kubernetes_ca_cert": api.ca_pem,
               "token_reviewer_jwt": api.token("kube-system", "vault")}),
    );
    post(
        &bao,
        "/v1/auth/kubernetes/role/bench",
        json!({"bound_service_account_names": "web", "bound_service_account_namespaces": "apps",
               "token_policies": "bench-admin"}),
    );
    let jwt = api.token_file("apps", "web").display().to_string();
    let reviews = api.calls("POST tokenreviews");
    run_logged_in(
        &bao,
        &[
            "--auth-method",
            "kubernetes",
            "--auth-role",
            "bench",
            "--auth-jwt-file",
            &jwt,
        ],
    );
    assert!(api.calls("POST tokenreviews") > reviews);
}

/// `--auth-method kubernetes` with no `--auth-jwt-file` (and nothing in the environment
/// but VAULT_TOKEN, root, which loses), in a pod's view (support::kube_pod): /var/run
/// (here a link to /run) holds only the pod's `secrets/kubernetes.io/serviceaccount/`, and
/// the TokenReview stand-in answers at the `kubernetes` service's address. Before the
/// pod's files are placed the run is refused (exit 2, the default path named, no review
/// asked for, nothing created); with them it logs in with the pod's projected token (the
/// server asks the stand-in to review it), runs, and revokes its token at the end.
#[test]
fn kubernetes_login_without_a_token_file_reads_the_pods_projected_token() {
    use crate::support::kube_pod::{API_ADDR, SA_DIR, in_pod};
    let ran = in_pod(|pod| {
        let api = KubeApi::start_at(
            &format!("{API_ADDR}:443"),
            &[API_ADDR],
            &[("apps", "web"), ("kube-system", "vault")],
            &[],
        );
        let bao = OpenBao::start();
        enable(&bao, "kubernetes");
        post(
            &bao,
            "/v1/auth/kubernetes/config",
            json!({"kubernetes_host": api.url, "kubernetes_ca_cert": api.ca_pem,
                   "token_reviewer_jwt": api.token("kube-system", "vault")}),
        );
        post(
            &bao,
            "/v1/auth/kubernetes/role/bench",
            json!({"bound_service_account_names": "web",
                   "bound_service_account_namespaces": "apps",
                   "token_policies": "bench-admin"}),
        );
        let login = ["--auth-method", "kubernetes", "--auth-role", "bench"];
        // No token at the default path: one message naming it, exit 2, nothing sent.
        let before = server_state(&bao);
        let reviews = api.calls("POST tokenreviews");
        let r = run(Args::op("kv-read").c(1).n(5).extra(&login).vault(&bao));
        assert_eq!(r.code, Some(2), "{}", r.show());
        assert!(
            r.stderr.contains(&format!("{SA_DIR}/token")),
            "the default path is not named: {}",
            r.show()
        );
        assert!(r.stderr.contains("service-account token"), "{}", r.show());
        assert!(!r.stderr.contains("logged in with"), "{}", r.show());
        assert_eq!(api.calls("POST tokenreviews"), reviews, "{}", r.show());
        assert_eq!(
            server_state(&bao),
            before,
            "a refused run created something"
        );
        // The pod's files: the run logs in with its projected token.
        let token = api.token("apps", "web");
        pod.place("ca.crt", &api.ca_pem);
        pod.place("token", &token);
        pod.place("namespace", "apps");
        let r = run_logged_in(&bao, &login);
        assert!(
            r.stderr
                .contains("logged in with kubernetes at auth/kubernetes"),
            "{}",
            r.show()
        );
        assert!(!r.show().contains(&token), "the token was printed");
        assert!(api.calls("POST tokenreviews") > reviews, "{}", r.show());
    });
    if let Err(why) = ran {
        crate::support::deps::documented_skip(
            "login::kubernetes_login_without_a_token_file_reads_the_pods_projected_token",
            &why,
        );
    }
}

#[test]
fn cert_login_runs_and_is_revoked() {
    let bao = OpenBao::start_tls();
    let ca = bao.ca_cert.clone().unwrap().display().to_string();
    let dir = tempfile::tempdir().unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "vblast admin client");
    let cert = params.self_signed(&key).unwrap();
    let c = write(&dir, "client-cert.pem", &cert.pem());
    let k = write(&dir, "client-key.pem", &key.serialize_pem());
    enable(&bao, "cert");
    post(
        &bao,
        "/v1/auth/cert/certs/bench",
        json!({"certificate": cert.pem(), "token_policies": "bench-admin"}),
    );
    run_logged_in(
        &bao,
        &[
            "--ca-cert",
            &ca,
            "--client-cert",
            &c,
            "--client-key",
            &k,
            "--auth-method",
            "cert",
            "--auth-role",
            "bench",
        ],
    );
}

/// Userpass login flags with the password in `dir`.
fn userpass(bao: &OpenBao, dir: &tempfile::TempDir, ttl: &str) -> Vec<String> {
    enable(bao, "userpass");
    post(
        bao,
        "/v1/auth/userpass/users/bench",
        json!({"password": "pw-2342", "token_policies": "bench-admin", "token_ttl": ttl,
               "token_max_ttl": "1h"}),
    );
    let pw = write(dir, "pw", "pw-2342");
    [
        "--auth-method",
        "userpass",
        "--auth-username",
        "bench",
        "--auth-password-file",
        &pw,
    ]
    .map(String::from)
    .to_vec()
}

#[test]
fn a_run_longer_than_the_tokens_ttl_renews_it_and_cleans_up_with_it() {
    let bao = OpenBao::start();
    let dir = tempfile::tempdir().unwrap();
    let login = userpass(&bao, &dir, "6s");
    let login: Vec<&str> = login.iter().map(String::as_str).collect();
    let before = state(&bao);
    // Cleanup after 10 s of load needs the token the 6 s TTL would have ended.
    let r = run(Args::op("kv-read")
        .c(1)
        .z("10s")
        .rate(20)
        .json()
        .extra(&login)
        .vault(&bao));
    assert_eq!(r.code, Some(0), "{}", r.show());
    assert!(!r.stderr.contains("warning"), "{}", r.show());
    assert_revoked(&bao, &r);
    assert_eq!(state(&bao), before, "the run left something");
}

#[test]
fn sigint_and_sigterm_revoke_the_logins_token() {
    let bao = OpenBao::start();
    let dir = tempfile::tempdir().unwrap();
    let login = userpass(&bao, &dir, "1h");
    let login: Vec<&str> = login.iter().map(String::as_str).collect();
    let before = state(&bao);
    for (sig, code) in [(libc::SIGINT, 130), (libc::SIGTERM, 143)] {
        let running = spawn(Args::op("kv-read").c(2).z("60s").extra(&login).vault(&bao));
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while vblast_mounts(&bao).is_empty() {
            assert!(std::time::Instant::now() < deadline, "no setup");
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        std::thread::sleep(std::time::Duration::from_millis(500));
        // SAFETY: kill(2) on a child this test started and has not reaped.
        unsafe {
            libc::kill(running.child.id() as libc::pid_t, sig);
        }
        let r = running.finish(std::time::Duration::from_secs(60));
        assert_eq!(r.code, Some(code), "{}", r.show());
        assert_revoked(&bao, &r);
        assert_eq!(state(&bao), before, "the run left something");
    }
}

#[test]
fn a_sweep_logs_in_too_and_revokes_its_token() {
    let bao = OpenBao::start();
    let dir = tempfile::tempdir().unwrap();
    let login = userpass(&bao, &dir, "1h");
    let before = state(&bao);
    let mut args = vec![
        "sweep",
        "--op",
        "kv-read",
        "--rate",
        "50..400",
        "--steps",
        "2",
        "--step-duration",
        "1s",
        "--step-warmup",
        "200ms",
        "-c",
        "1",
    ];
    args.extend(login.iter().map(String::as_str));
    let r = run(crate::support::vblast::vault_cmd(&bao, &args));
    assert!(r.stderr.contains("logged in with userpass"), "{}", r.show());
    assert!(!r.stderr.contains("permission denied"), "{}", r.show());
    assert_revoked(&bao, &r);
    assert_eq!(state(&bao), before, "the sweep left something");
}

/// The login's accessors, in the order vblast said them.
fn accessors(r: &Out) -> Vec<String> {
    r.stderr
        .lines()
        .filter(|l| l.contains("logged in with"))
        .map(|l| {
            let after = l.split("token accessor ").nth(1).unwrap();
            after.split(',').next().unwrap().to_string()
        })
        .collect()
}

/// Root's lookup of `acc` fails: the token was revoked.
fn assert_accessor_revoked(bao: &OpenBao, acc: &str, r: &Out) {
    let (status, text) = bao.api(
        "POST",
        "/v1/auth/token/lookup-accessor",
        Some(&json!({"accessor": acc}).to_string()),
    );
    assert_ne!(
        status,
        200,
        "token {acc} is still there: {text}\n{}",
        r.show()
    );
}

/// Approle login flags (a role with the admin policy), as `(role id file, secret id file)`.
fn approle(bao: &OpenBao, dir: &tempfile::TempDir) -> (String, String) {
    enable(bao, "approle");
    post(
        bao,
        "/v1/auth/approle/role/bench",
        json!({"token_policies": "bench-admin", "token_ttl": "1h"}),
    );
    let (_, text) = bao.api("GET", "/v1/auth/approle/role/bench/role-id", None);
    let role_id: Value = serde_json::from_str(&text).unwrap();
    let secret = post(bao, "/v1/auth/approle/role/bench/secret-id", json!({}));
    (
        write(dir, "role-id", role_id["data"]["role_id"].as_str().unwrap()),
        write(
            dir,
            "secret-id",
            secret["data"]["secret_id"].as_str().unwrap(),
        ),
    )
}

#[test]
fn vault_benchmark_run_logs_in_with_go_style_flags_and_revokes() {
    let bao = OpenBao::start();
    let dir = tempfile::tempdir().unwrap();
    let (rid, sid) = approle(&bao, &dir);
    let hcl = write(
        &dir,
        "kv.hcl",
        "test \"kvv2_read\" \"r\" {\n  weight = 100\n  config {\n    numkvs = 5\n  }\n}\n",
    );
    let before = state(&bao);
    let config = format!("-config={hcl}");
    let rid_flag = format!("-auth_role_id_file={rid}");
    let r = run(crate::support::vblast::vault_cmd(
        &bao,
        &[
            "vault-benchmark",
            "run",
            &config,
            "-duration=1s",
            "-workers=2",
            "-auth_method=approle",
            &rid_flag,
            "-auth_secret_id_file",
            &sid,
        ],
    ));
    assert_eq!(r.code, Some(0), "{}", r.show());
    assert!(r.stderr.contains("logged in with approle"), "{}", r.show());
    assert_revoked(&bao, &r);
    assert_eq!(state(&bao), before, "the run left something");

    // userpass, with its password file.
    let login = userpass(&bao, &dir, "1h");
    let pw = login.last().unwrap();
    let pw_flag = format!("-auth_password_file={pw}");
    let r = run(crate::support::vblast::vault_cmd(
        &bao,
        &[
            "vault-benchmark",
            "run",
            &config,
            "-duration=1s",
            "-auth_method=userpass",
            "-auth_username=bench",
            &pw_flag,
        ],
    ));
    assert_eq!(r.code, Some(0), "{}", r.show());
    assert!(r.stderr.contains("logged in with userpass"), "{}", r.show());
    assert_revoked(&bao, &r);

    // A login flag without -auth_method, and -vault_token beside it: exit 2, no login.
    for extra in [
        vec!["-auth_username=bench"],
        vec!["-auth_method=userpass", "-vault_token=x"],
        vec!["-auth_method=ldap"],
    ] {
        let mut args = vec!["vault-benchmark", "run", config.as_str(), "-duration=1s"];
        args.extend(extra);
        let r = run(crate::support::vblast::vault_cmd(&bao, &args));
        assert_eq!(r.code, Some(2), "{}", r.show());
        assert!(!r.stderr.contains("logged in"), "{}", r.show());
    }
}

/// A login setting missing or bad is named as the command takes it: `vblast run`'s
/// `--auth-role`, `vblast vault-benchmark run`'s `-auth_role` (never the other form); exit
/// 2, no login, nothing created.
#[test]
fn login_errors_name_the_flag_in_the_form_it_was_given() {
    let bao = OpenBao::start();
    let dir = tempfile::tempdir().unwrap();
    let hcl = write(
        &dir,
        "kv.hcl",
        "test \"kvv2_read\" \"r\" {\n  weight = 100\n  config {\n    numkvs = 5\n  }\n}\n",
    );
    let config = format!("-config={hcl}");
    let before = state(&bao);
    let refused = |mut cmd: std::process::Command, said: &str, other_form: &str| {
        for var in [
            "VBLAST_AUTH_ROLE_ID",
            "VBLAST_AUTH_SECRET_ID",
            "VBLAST_AUTH_PASSWORD",
            "VAULT_CLIENT_CERT",
            "VAULT_CLIENT_KEY",
        ] {
            cmd.env_remove(var);
        }
        let r = run(cmd);
        assert_eq!(r.code, Some(2), "{}", r.show());
        assert!(r.stderr.contains(said), "wanted {said:?}: {}", r.show());
        assert!(!r.stderr.contains(other_form), "{}", r.show());
        assert!(!r.stderr.contains("logged in"), "{}", r.show());
    };
    // vblast's own flags.
    let gnu = |login: &[&str]| Args::op("kv-read").n(10).extra(login).vault(&bao);
    let missing_role: &[&str] = &["--auth-method", "jwt"];
    refused(
        gnu(missing_role),
        "--auth-method jwt needs --auth-role NAME",
        "-auth_",
    );
    let no_role_id: &[&str] = &["--auth-method", "approle"];
    refused(
        gnu(no_role_id),
        "--auth-method approle needs the role id: give --auth-role-id-file FILE or VBLAST_AUTH_ROLE_ID",
        "-auth_",
    );
    let bad_name: &[&str] = &["--auth-method", "userpass", "--auth-username", "a/b"];
    refused(
        gnu(bad_name),
        "--auth-username \"a/b\": a user name",
        "-auth_",
    );
    let unreadable: &[&str] = &[
        "--auth-method",
        "approle",
        "--auth-role-id-file",
        "/nonexistent/role-id",
    ];
    refused(
        gnu(unreadable),
        "--auth-role-id-file: cannot read the role id file /nonexistent/role-id",
        "-auth_",
    );
    // vault-benchmark's Go-style flags.
    let go = |login: &[&str]| {
        let mut a = vec!["vault-benchmark", "run", config.as_str(), "-duration=1s"];
        a.extend(login);
        crate::support::vblast::vault_cmd(&bao, &a)
    };
    refused(
        go(&["-auth_method=jwt"]),
        "-auth_method=jwt needs -auth_role=NAME",
        "--auth",
    );
    refused(
        go(&["-auth_method=approle"]),
        "-auth_method=approle needs the role id: give -auth_role_id_file=FILE or VBLAST_AUTH_ROLE_ID",
        "--auth",
    );
    refused(
        go(&["-auth_method=userpass", "-auth_username=a/b"]),
        "-auth_username=\"a/b\": a user name",
        "--auth",
    );
    refused(
        go(&[
            "-auth_method=approle",
            "-auth_role_id_file=/nonexistent/role-id",
        ]),
        "-auth_role_id_file: cannot read the role id file /nonexistent/role-id",
        "--auth",
    );
    refused(
        go(&["-auth_method=cert"]),
        "-auth_method=cert logs in with the client certificate: give VAULT_CLIENT_CERT",
        "--auth",
    );
    assert_eq!(state(&bao), before, "a refused login left something");
}

#[test]
fn setup_and_cleanup_take_the_login_and_revoke_its_token() {
    let bao = OpenBao::start();
    let dir = tempfile::tempdir().unwrap();
    let before = state(&bao);
    let (rid, sid) = approle(&bao, &dir);
    let approle_flags = [
        "--auth-method",
        "approle",
        "--auth-role-id-file",
        &rid,
        "--auth-secret-id-file",
        &sid,
    ];
    let login = userpass(&bao, &dir, "1h");
    let with_auth = state(&bao);
    let run_id = "login38";
    let mut setup = vec!["setup", "--op", "kv-read", "--run-id", run_id];
    setup.extend(approle_flags);
    let r = run(crate::support::vblast::vault_cmd(&bao, &setup));
    assert_eq!(r.code, Some(0), "{}", r.show());
    assert_eq!(accessors(&r).len(), 1, "{}", r.show());
    assert_revoked(&bao, &r);
    assert!(!vblast_mounts(&bao).is_empty(), "setup made nothing");
    let mut cleanup = vec!["cleanup", "--op", "kv-read", "--run-id", run_id];
    cleanup.extend(login.iter().map(String::as_str));
    let r = run(crate::support::vblast::vault_cmd(&bao, &cleanup));
    assert_eq!(r.code, Some(0), "{}", r.show());
    for acc in accessors(&r) {
        assert_accessor_revoked(&bao, &acc, &r);
    }
    assert!(r.stderr.contains("logged in with userpass"), "{}", r.show());
    assert_eq!(state(&bao), with_auth, "cleanup left something");
    assert_ne!(before, with_auth);
}

/// A run of sys-health (no setup, no token needed for its requests) longer than the token.
fn outliving_the_token(bao: &OpenBao, login: &[String]) -> Out {
    let login: Vec<&str> = login.iter().map(String::as_str).collect();
    let r = run(Args::op("sys-health")
        .c(1)
        .z("15s")
        .rate(10)
        .json()
        .extra(&login)
        .extra(&["--allow-errors"])
        .vault(bao));
    // The run goes on to its end (documented in docs/login.md).
    assert_eq!(r.code, Some(0), "{}", r.show());
    assert!(!r.stderr.contains("stopped early"), "{}", r.show());
    r
}

#[test]
fn a_token_at_its_max_ttl_or_not_renewable_is_said_once_and_the_run_goes_on() {
    let bao = OpenBao::start();
    let dir = tempfile::tempdir().unwrap();
    let login = userpass(&bao, &dir, "1h");
    // A max TTL (6 s) shorter than the run (15 s): renewed once, cut short, expired.
    post(
        &bao,
        "/v1/auth/userpass/users/bench",
        json!({"password": "pw-2342", "token_policies": "bench-admin", "token_ttl": "4s",
               "token_max_ttl": "6s"}),
    );
    let r = outliving_the_token(&bao, &login);
    let said = |r: &Out, text: &str| r.stderr.lines().filter(|l| l.contains(text)).count();
    assert_eq!(
        said(&r, "reached its max TTL and expired during the run"),
        1,
        "{}",
        r.show()
    );
    assert_eq!(said(&r, "expired during the run"), 1, "{}", r.show());
    // A batch token: not renewable.
    post(
        &bao,
        "/v1/auth/userpass/users/bench",
        json!({"password": "pw-2342", "token_policies": "bench-admin", "token_ttl": "3s",
               "token_type": "batch"}),
    );
    let r = outliving_the_token(&bao, &login);
    assert_eq!(
        said(&r, "is not renewable and expired during the run"),
        1,
        "{}",
        r.show()
    );
    assert_eq!(said(&r, "expired during the run"), 1, "{}", r.show());
}
