//! kube-login and kube-creds against OpenBao's real kubernetes auth method and kubernetes
//! secrets engine, pointed at the Kubernetes API stand-in (support::kube_api): every
//! request succeeds, and nothing is left, on the server or in the API; each bad input is
//! one message and exit 2 with nothing left behind.

use crate::support::kube_api::KubeApi;
use crate::support::openbao::{OpenBao, server_state};
use crate::support::run::run;
use crate::support::vblast::{Args, vault_cmd};

const NS: &str = "apps";
const SA: &str = "web";

fn api() -> KubeApi {
    KubeApi::start(&[
        (NS, SA),
        ("default", "vault-test"),
        ("kube-system", "vault"),
    ])
}

fn path_str(p: &std::path::Path) -> String {
    p.display().to_string()
}

/// kube-login with the stand-in's CA and `jwt` as the login token, plus `extra`.
fn login_args(api: &KubeApi, jwt: &std::path::Path, extra: &[&str]) -> Args {
    Args::op("kube-login")
        .flag("--kubernetes-host", &api.url)
        .flag("--kubernetes-ca-file", path_str(&api.ca_file))
        .flag("--kube-jwt-file", path_str(jwt))
        .extra(extra)
}

#[test]
fn kube_logins_succeed_through_token_review_and_leave_nothing() {
    let bao = OpenBao::start();
    let api = api();
    let before = server_state(&bao);
    let jwt = api.token_file(NS, SA);
    let reviewer = api.token_file("kube-system", "vault");
    for extra in [
        vec![],
        vec!["--kube-api-jwt-file", reviewer.to_str().unwrap()],
        vec!["--token-type", "batch"],
    ] {
        let reviews = api.calls("POST tokenreviews");
        let r = run(login_args(&api, &jwt, &extra).c(4).n(60).json().vault(&bao));
        assert_eq!(r.code, Some(0), "{extra:?}: {}", r.show());
        let j = r.json();
        assert_eq!(j["ok"], 60, "{}", r.show());
        // Every login was reviewed by the API (and the first login of setup).
        assert!(
            api.calls("POST tokenreviews") >= reviews + 61,
            "{}",
            r.show()
        );
        assert_eq!(
            server_state(&bao),
            before,
            "kube-login left something behind"
        );
    }
    assert!(api.left().is_empty(), "{:?}", api.left());
}

#[test]
fn kube_login_bad_input_is_one_message_and_exit_2_with_nothing_left() {
    let bao = OpenBao::start();
    let api = api();
    let before = server_state(&bao);
    let jwt = api.token_file(NS, SA);
    let other = KubeApi::start(&[]);
    // A token the API never signed: another stand-in's key.
    let foreign = {
        let o = KubeApi::start(&[(NS, SA)]);
        let p = api.dir().join("foreign");
        std::fs::write(&p, o.token(NS, SA)).unwrap();
        p
    };
    let closed = format!("https://127.0.0.1:{}", crate::support::ports::free_port());
    let cases: Vec<(&str, Args, &str)> = vec![
        (
            "a host that does not answer",
            Args::op("kube-login")
                .flag("--kubernetes-host", &closed)
                .flag("--kubernetes-ca-file", path_str(&api.ca_file))
                .flag("--kube-jwt-file", path_str(&jwt)),
            "does not answer",
        ),
        (
            "a CA that does not verify it",
            Args::op("kube-login")
                .flag("--kubernetes-host", &api.url)
                .flag("--kubernetes-ca-file", path_str(&other.ca_file))
                .flag("--kube-jwt-file", path_str(&jwt)),
            "does not verify",
        ),
        (
            "a JWT the API rejects",
            login_args(&api, &foreign, &[]),
            "rejects the jwt",
        ),
    ];
    for (what, args, words) in cases {
        let r = run(args.c(2).n(10).vault(&bao));
        assert_eq!(r.code, Some(2), "{what}: {}", r.show());
        assert!(
            r.stderr.to_lowercase().contains(words)
                && r.stderr.contains("first login")
                && r.stderr.contains("permission denied"),
            "{what}: {}",
            r.show()
        );
        assert_eq!(server_state(&bao), before, "{what} left something behind");
    }
    // A role bound to another namespace: vault-benchmark's keys in a file.
    let hcl = format!(
        r#"vault_addr = "{addr}"
vault_token = "root"
duration = "1s"
cleanup = true
test "kube_auth" "k" {{
  weight = 100
  config {{
    auth {{
      kubernetes_host = "{url}"
      kubernetes_ca_cert = {ca:?}
      disable_local_ca_jwt = true
    }}
    role {{
      name = "r"
      bound_service_account_names = ["{SA}"]
      bound_service_account_namespaces = ["elsewhere"]
      token_ttl = "1m"
    }}
  }}
}}
"#,
        addr = bao.addr,
        url = api.url,
        ca = api.ca_pem,
    );
    let file = api.dir().join("ns.hcl");
    std::fs::write(&file, hcl).unwrap();
    let mut cmd = vault_cmd(
        &bao,
        &["vault-benchmark", "run", "-config", file.to_str().unwrap()],
    );
    cmd.env("VBLAST_KUBE_TOKEN_FILE", &jwt);
    let r = run(cmd);
    assert_eq!(r.code, Some(2), "{}", r.show());
    assert!(
        r.stderr.contains("namespace not authorized"),
        "{}",
        r.show()
    );
    assert_eq!(
        server_state(&bao),
        before,
        "the namespace case left something"
    );
}

#[test]
fn kube_creds_of_every_kind_are_made_and_all_removed_from_the_api() {
    let bao = OpenBao::start();
    let api = api();
    let before = server_state(&bao);
    let admin = api.token_file("kube-system", "vault");
    let rules = api.dir().join("rules.yaml");
    std::fs::write(
        &rules,
        "rules:\n- apiGroups: [\"\"]\n  resources: [\"pods\"]\n  verbs: [\"get\", \"list\"]\n",
    )
    .unwrap();
    let kinds: Vec<(&str, Vec<&str>, &[&str])> = vec![
        (
            "an existing service account",
            vec!["--kube-service-account", "vault-test"],
            &[],
        ),
        (
            "an existing role",
            vec!["--kube-role", "viewer"],
            &["serviceaccounts", "rolebindings"],
        ),
        (
            "an existing cluster role",
            vec!["--kube-role", "view", "--kube-role-type", "ClusterRole"],
            &["serviceaccounts", "clusterrolebindings"],
        ),
        (
            "generated rules",
            vec!["--kube-role-rules", rules.to_str().unwrap()],
            &["serviceaccounts", "roles", "rolebindings"],
        ),
    ];
    for (what, flags, made) in kinds {
        let tokens = api.calls("POST serviceaccounts/token");
        let created = api.created().len();
        let r = run(Args::op("kube-creds")
            .flag("--kubernetes-host", &api.url)
            .flag("--kubernetes-ca-file", path_str(&api.ca_file))
            .flag("--kube-api-jwt-file", path_str(&admin))
            .extra(&flags)
            .c(2)
            .n(20)
            .json()
            .vault(&bao));
        assert_eq!(r.code, Some(0), "{what}: {}", r.show());
        assert_eq!(r.json()["ok"], 20, "{what}: {}", r.show());
        // Each request (and setup's first) asked the API for a token.
        assert_eq!(
            api.calls("POST serviceaccounts/token"),
            tokens + 21,
            "{what}"
        );
        let new: Vec<_> = api.created()[created..].to_vec();
        for kind in made {
            assert_eq!(
                new.iter().filter(|k| k.kind == *kind).count(),
                21,
                "{what}: {kind} in {new:?}"
            );
        }
        assert_eq!(new.len(), 21 * made.len(), "{what}: {new:?}");
        assert!(api.left().is_empty(), "{what} left {:?}", api.left());
        assert_eq!(
            server_state(&bao),
            before,
            "{what} left something on the server"
        );
    }
    // The existing service account is still there.
    assert_eq!(api.live("serviceaccounts").len(), 3);
}

#[test]
fn kube_creds_whose_rules_the_api_refuses_are_exit_2_with_nothing_left() {
    let bao = OpenBao::start();
    let api = api();
    let before = server_state(&bao);
    let admin = api.token_file("kube-system", "vault");
    let rules = api.dir().join("rules.json");
    std::fs::write(
        &rules,
        r#"{"rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": []}]}"#,
    )
    .unwrap();
    let r = run(Args::op("kube-creds")
        .flag("--kubernetes-host", &api.url)
        .flag("--kubernetes-ca-file", path_str(&api.ca_file))
        .flag("--kube-api-jwt-file", path_str(&admin))
        .flag("--kube-role-rules", path_str(&rules))
        .n(5)
        .vault(&bao));
    assert_eq!(r.code, Some(2), "{}", r.show());
    assert!(r.stderr.contains("verbs"), "{}", r.show());
    assert!(api.left().is_empty(), "{:?}", api.left());
    assert_eq!(server_state(&bao), before);
}

/// The test's name in a vault-benchmark file of one test (`test "TYPE" "NAME"`).
fn vb_test_name(hcl: &str) -> String {
    let at = hcl.find("test \"").expect("a test block");
    hcl[at..].split('"').nth(3).unwrap_or("").to_string()
}

/// vault-benchmark's kube_auth and kubernetes_secret docs examples, by their tests' names:
/// taken byte for byte from the two pages of the vault-benchmark checkout `VBLAST_VB_SRC`
/// names (the kube_auth ConfigMap's `k8s.hcl` with its YAML indent removed), else
/// vblast's files of their shape (tests/data/vb-docs, which say why).
fn vb_docs_examples() -> std::collections::BTreeMap<String, String> {
    let texts: Vec<String> = match std::env::var_os("VBLAST_VB_SRC").filter(|s| !s.is_empty()) {
        Some(src) => {
            let dir = std::path::Path::new(&src).join("docs/tests");
            let read = |f: &str| {
                std::fs::read_to_string(dir.join(f))
                    .unwrap_or_else(|e| panic!("VBLAST_VB_SRC: {}: {e}", dir.join(f).display()))
            };
            let auth = read("auth-k8s.md");
            let mark = "k8s.hcl: |\n";
            let from = &auth[auth.find(mark).expect("the ConfigMap's k8s.hcl") + mark.len()..];
            let block = &from[..from.find("```").expect("the end of the block")];
            let lines: Vec<&str> = block
                .lines()
                .map(|l| l.strip_prefix("    ").unwrap_or(l.trim()))
                .collect();
            let mut texts = vec![lines.join("\n")];
            let secret = read("secret-k8s.md");
            for part in secret.split("```hcl\n").skip(1) {
                texts.push(part[..part.find("```").expect("the end of a block")].to_string());
            }
            texts
        }
        None => [
            "auth-k8s",
            "secret-k8s-sa",
            "secret-k8s-role",
            "secret-k8s-generated",
            "secret-k8s-env",
            "secret-k8s-advanced",
        ]
        .iter()
        .map(|f| {
            std::fs::read_to_string(format!(
                "{}/tests/data/vb-docs/{f}.hcl",
                env!("CARGO_MANIFEST_DIR")
            ))
            .unwrap()
        })
        .collect(),
    };
    texts.into_iter().map(|t| (vb_test_name(&t), t)).collect()
}

/// A vault-benchmark JSON report's row `name`: every request a success.
fn all_succeeded(r: &crate::support::run::Out, name: &str) {
    assert_eq!(r.code, Some(0), "{name}: {}", r.show());
    let j: serde_json::Value = serde_json::from_str(r.stdout.lines().next().unwrap_or(""))
        .unwrap_or_else(|e| panic!("{name}: {e}: {}", r.show()));
    assert!(
        j["metrics"][name]["requests"].as_u64().unwrap_or(0) > 0,
        "{name}: {j}"
    );
    assert_eq!(j["metrics"]["total"]["success"], 1.0, "{name}: {j}");
}

/// vault-benchmark's own docs examples for `kube_auth` (docs/tests/auth-k8s.md) and
/// `kubernetes_secret` (docs/tests/secret-k8s.md), each file unchanged, with the API at
/// the addresses they name: in a pod's view (support::kube_pod) `kubernetes.default.svc`
/// and `kubernetes.example.com` resolve to the stand-in on port 443, `vault` to OpenBao on
/// port 8200, and the pod's CA and token are at /var/run/secrets/kubernetes.io/
/// serviceaccount, where OpenBao and vblast read them as in a pod. The kube_auth example
/// and the two kubernetes_secret examples without placeholders run with every request a
/// success and nothing left on the server or in the API; the three whose
/// `kubernetes_ca_cert` is the docs' shortened placeholder are refused before anything is
/// made (no TLS client can load it: OpenBao would fail every credentials request).
#[test]
fn vault_benchmark_docs_examples_run_at_their_documented_addresses() {
    use crate::support::kube_pod::{API_ADDR, API_NAMES, in_pod};
    use crate::support::vblast::{env_cmd, url_cmd};
    let examples = vb_docs_examples();
    let names: Vec<&str> = examples.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        [
            "k8s_advanced_test",
            "k8s_env_test",
            "k8s_generated_test",
            "k8s_role_test",
            "k8s_sa_test",
            "kube_auth_test1"
        ],
        "the docs' examples changed"
    );
    let files = tempfile::tempdir().unwrap();
    let file = |name: &str| -> String {
        let p = files.path().join(format!("{name}.hcl"));
        std::fs::write(&p, &examples[name]).unwrap();
        format!("-config={}", p.display())
    };
    let ran = in_pod(|pod| {
        let mut names = API_NAMES.to_vec();
        names.push(API_ADDR);
        let api = KubeApi::start_at(
            &format!("{API_ADDR}:443"),
            &names,
            &[
                ("default", "vault-benchmark"),
                ("vault-system", "vault-benchmark"),
                ("default", "vault-test"),
            ],
            &["development", "staging", "production"],
        );
        // The pod's files: the API's CA and the token of default/vault-benchmark.
        let token = api.token("default", "vault-benchmark");
        pod.place("ca.crt", &api.ca_pem);
        pod.place("token", &token);
        pod.place("namespace", "default");
        let bao = OpenBao::start_on_port(8200);
        let before = server_state(&bao);

        // kube_auth: the ConfigMap's file names vault (http://vault:8200), its token and
        // its terse report; nothing is given beside it.
        let reviews = api.calls("POST tokenreviews");
        let r = run(url_cmd(&[
            "vault-benchmark",
            "run",
            &file("kube_auth_test1"),
        ]));
        assert_eq!(r.code, Some(0), "kube_auth_test1: {}", r.show());
        let row = r
            .stdout
            .lines()
            .find(|l| l.starts_with("kube_auth_test1 "))
            .unwrap_or_else(|| panic!("no kube_auth_test1 row: {}", r.show()));
        assert!(row.trim_end().ends_with("100.00%"), "{}", r.show());
        assert!(api.calls("POST tokenreviews") > reviews + 1, "{}", r.show());
        assert_eq!(server_state(&bao), before, "kube_auth_test1 left something");

        // kubernetes_secret without placeholders: as in a pod (the engine reads the pod's
        // CA and token), and "Using Environment Variables" once more with vault-benchmark's
        // two variables.
        let vb_env = [
            ("VAULT_BENCHMARK_KUBERNETES_CA_CERT", api.ca_pem.as_str()),
            (
                "VAULT_BENCHMARK_KUBERNETES_SERVICE_ACCOUNT_JWT",
                token.as_str(),
            ),
        ];
        let runs: [(&str, bool, &[&str]); 3] = [
            ("k8s_env_test", false, &[]),
            ("k8s_env_test", true, &[]),
            (
                "k8s_advanced_test",
                false,
                &["serviceaccounts", "rolebindings"],
            ),
        ];
        for (name, with_env, made) in runs {
            let tokens = api.calls("POST serviceaccounts/token");
            let created = api.created().len();
            let config = file(name);
            let mut all = vec![("VAULT_ADDR", bao.addr.as_str()), ("VAULT_TOKEN", "root")];
            if with_env {
                all.extend(vb_env);
            }
            let r = run(env_cmd(
                &[
                    "vault-benchmark",
                    "run",
                    &config,
                    "-duration=2s",
                    "-report_mode=json",
                ],
                &all,
            ));
            all_succeeded(&r, name);
            assert!(
                api.calls("POST serviceaccounts/token") > tokens + 1,
                "{name}: {}",
                r.show()
            );
            let new = api.created()[created..].to_vec();
            for k in &new {
                assert!(made.contains(&k.kind.as_str()), "{name}: {k:?}");
            }
            if name == "k8s_advanced_test" {
                // The role's name template, in its one allowed namespace.
                assert!(!new.is_empty(), "{}", r.show());
                for k in &new {
                    assert_eq!(k.namespace, "production", "{k:?}");
                    assert!(
                        k.name.starts_with("vault-benchmark-advanced-role-"),
                        "{k:?}"
                    );
                }
            }
            assert!(api.left().is_empty(), "{name} left {:?}", api.left());
            assert_eq!(server_state(&bao), before, "{name} left something");
        }

        // The three with the docs' placeholder CA (`MIIC...`): one message, exit 2, nothing
        // made on the server and no call to the API.
        for name in ["k8s_sa_test", "k8s_role_test", "k8s_generated_test"] {
            let calls = api.calls("POST serviceaccounts/token");
            let config = file(name);
            let r = run(env_cmd(
                &["vault-benchmark", "run", &config, "-duration=2s"],
                &[("VAULT_ADDR", bao.addr.as_str()), ("VAULT_TOKEN", "root")],
            ));
            assert_eq!(r.code, Some(2), "{name}: {}", r.show());
            assert!(
                r.stderr.contains("kubernetes_ca_cert") && r.stderr.contains("MIIC"),
                "{name}: {}",
                r.show()
            );
            assert_eq!(api.calls("POST serviceaccounts/token"), calls, "{name}");
            assert_eq!(server_state(&bao), before, "{name} left something");
        }
        assert!(api.left().is_empty(), "{:?}", api.left());
        // The pod's service account is still there, and the two others.
        assert_eq!(api.live("serviceaccounts").len(), 3);
    });
    if let Err(why) = ran {
        crate::support::deps::documented_skip(
            "kubernetes::vault_benchmark_docs_examples_run_at_their_documented_addresses",
            &why,
        );
    }
}

/// OpenBao's CPU time (user + system) so far, in seconds, from /proc.
fn server_cpu(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = after.split_whitespace().collect();
    // utime and stime are fields 14 and 15 (11 and 12 after the state).
    let ticks: f64 = f[11].parse::<f64>().unwrap() + f[12].parse::<f64>().unwrap();
    ticks / 100.0
}

/// tools/bench/logins.sh: server CPU per login for approle, userpass, jwt, cert and
/// kubernetes side by side on one OpenBao (-dev-tls), RUNS rounds in turn, the median of
/// each printed (LOGINS each run). Figures are printed, never asserted.
#[test]
#[ignore = "a measurement: run by tools/bench/logins.sh"]
fn logins_server_cpu_side_by_side() {
    use crate::support::vblast::env_cmd;
    let runs: usize = std::env::var("RUNS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    let logins: u64 = std::env::var("LOGINS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(400);
    let bao = OpenBao::start_tls();
    let api = api();
    let jwt = api.token_file(NS, SA);
    let ca = bao.ca_cert.clone().unwrap();
    let (cert, key) = {
        use rcgen::{CertificateParams, DistinguishedName, DnType, KeyPair};
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, "vblast bench");
        params.distinguished_name = dn;
        let cert = params.self_signed(&key).unwrap();
        let (c, k) = (
            api.dir().join("client.pem"),
            api.dir().join("client-key.pem"),
        );
        std::fs::write(&c, cert.pem()).unwrap();
        std::fs::write(&k, key.serialize_pem()).unwrap();
        (path_str(&c), path_str(&k))
    };
    let kube_ca = path_str(&api.ca_file);
    let jwt = path_str(&jwt);
    let methods: Vec<(&str, Vec<&str>)> = vec![
        ("approle", vec!["--op", "approle-login"]),
        ("userpass", vec!["--op", "userpass-login"]),
        ("jwt", vec!["--op", "jwt-login"]),
        (
            "cert",
            vec![
                "--op",
                "cert-login",
                "--client-cert",
                &cert,
                "--client-key",
                &key,
            ],
        ),
        (
            "kubernetes",
            vec![
                "--op",
                "kube-login",
                "--kubernetes-host",
                &api.url,
                "--kubernetes-ca-file",
                &kube_ca,
                "--kube-jwt-file",
                &jwt,
            ],
        ),
    ];
    let env = [
        ("VAULT_ADDR", bao.addr.as_str()),
        ("VAULT_TOKEN", "root"),
        ("VAULT_CACERT", ca.to_str().unwrap()),
    ];
    let n = logins.to_string();
    let mut per: Vec<Vec<f64>> = vec![Vec::new(); methods.len()];
    for _ in 0..runs {
        for (i, (name, args)) in methods.iter().enumerate() {
            let mut all = args.clone();
            all.extend(["-c", "4", "-n", &n, "--format", "json"]);
            // Setup and cleanup are outside the clock but not outside the server's CPU:
            // a run of 0 logins (setup and cleanup alone) is subtracted.
            let before = server_cpu(bao.pid());
            let r = run(env_cmd(&all, &env));
            let used = server_cpu(bao.pid()) - before;
            assert_eq!(r.code, Some(0), "{name}: {}", r.show());
            let ok = r.json()["ok"].as_u64().unwrap_or(0).max(1);
            let mut base_args = args.clone();
            base_args.extend(["-c", "1", "-n", "1", "--format", "json"]);
            let b0 = server_cpu(bao.pid());
            let r0 = run(env_cmd(&base_args, &env));
            let base = server_cpu(bao.pid()) - b0;
            assert_eq!(r0.code, Some(0), "{name}: {}", r0.show());
            per[i].push(((used - base).max(0.0)) * 1000.0 / (ok as f64 - 1.0).max(1.0));
        }
    }
    println!(
        "method       server CPU per login (ms, median of {runs} runs of {logins} logins, -c 4)"
    );
    for (i, (name, _)) in methods.iter().enumerate() {
        let mut v = per[i].clone();
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        println!(
            "{name:<12} {:.3}   (runs: {:?})",
            v[v.len() / 2],
            v.iter()
                .map(|x| (x * 1000.0).round() / 1000.0)
                .collect::<Vec<_>>()
        );
    }
}
