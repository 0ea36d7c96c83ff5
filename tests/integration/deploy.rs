//! deploy/kubernetes/ and the image: the manifests pass the Kubernetes schemas offline
//! (PyPI `kubernetes-validate`), the token only ever comes from a Secret; the FROM-scratch
//! image builds with podman (`tools/image.sh`), and the binary copied back out of it
//! (`podman create` + `podman cp`) runs two shards against nginx whose logs `collect.sh`
//! turns into one merged report; the nightly CronJob (deploy/kubernetes/nightly/) logs in with
//! Kubernetes auth by its projected token, judges thresholds, pushes its figures, and its
//! vault-benchmark file is one vblast reads. Each part fails, naming the tool, when its
//! tool is absent.

use std::path::PathBuf;
use std::process::Command;

use crate::support::deps::{program, venv_tool};
use crate::support::figures::u;
use crate::support::nginx::Nginx;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn manifests() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(root().join("deploy/kubernetes"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    // The --external-setup alternative: the setup and cleanup Jobs, applied one by one;
    // the nightly CronJob with its service account and its vault-benchmark file.
    for folder in ["external-setup", "nightly"] {
        if let Ok(after) = std::fs::read_dir(root().join("deploy/kubernetes").join(folder)) {
            v.extend(
                after
                    .map(|e| e.unwrap().path())
                    .filter(|p| p.extension().is_some_and(|e| e == "yaml")),
            );
        }
    }
    v.sort();
    v
}

#[test]
fn manifests_pass_the_kubernetes_schemas() {
    let kv = venv_tool("kubernetes-validate");
    let files = manifests();
    assert!(files.len() >= 2, "{files:?}");
    let out = Command::new(kv)
        .arg("--strict")
        .args(&files)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    assert_eq!(text.matches(" passed ").count(), files.len(), "{text}");
    let job = std::fs::read_to_string(root().join("deploy/kubernetes/job.yaml")).unwrap();
    assert!(job.contains("completionMode: Indexed"), "{job}");
    assert!(
        job.contains("job-completion-index"),
        "shard index from the completion index"
    );
    // Every $(NAME) the Job's args use is a ConfigMap key or one of its env entries (a
    // missing one would reach vblast as the literal text); fixtures: pod 0 sets up and
    // cleans up unless EXTERNAL_SETUP says otherwise, so no setup Job starts with the shards.
    let config = std::fs::read_to_string(root().join("deploy/kubernetes/configmap.yaml")).unwrap();
    for var in job.split("$(").skip(1).filter_map(|r| r.split(')').next()) {
        assert!(
            config.contains(&format!("\n  {var}: ")) || job.contains(&format!("- name: {var}\n")),
            "job.yaml uses $({var}), which neither the ConfigMap nor the Job defines"
        );
    }
    assert!(
        job.contains("\"--external-setup=$(EXTERNAL_SETUP)\""),
        "{job}"
    );
    assert!(config.contains("EXTERNAL_SETUP: \"false\""), "{config}");
    for f in files
        .iter()
        .filter(|f| f.parent() == Some(&root().join("deploy/kubernetes")))
    {
        let text = std::fs::read_to_string(f).unwrap();
        assert!(
            !text.contains("- \"setup\""),
            "{} starts a setup Job",
            f.display()
        );
    }
    // The token: from the Secret, never a value in a manifest.
    let token_env = job.split("- name: VAULT_TOKEN").nth(1).unwrap_or("");
    assert!(
        token_env.trim_start().starts_with("valueFrom:\n") && token_env.contains("secretKeyRef:"),
        "{job}"
    );
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        assert!(
            !text.contains("VAULT_TOKEN:") && !text.contains("hvs."),
            "{} holds a token",
            f.display()
        );
    }
}

/// The nightly CronJob (docs/ci.md): its arguments, one value each, in order.
fn cronjob_args(cron: &str) -> Vec<String> {
    let args = cron.split("args:\n").nth(1).expect("the container's args");
    args.lines()
        .map_while(|l| l.trim_start().strip_prefix("- "))
        .map(|a| a.trim_matches('"').to_string())
        .collect()
}

#[test]
fn the_nightly_cronjob_logs_in_with_kubernetes_judges_and_pushes() {
    let dir = root().join("deploy/kubernetes/nightly");
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap();
    let (cron, sa, bench) = (
        read("cronjob.yaml"),
        read("serviceaccount.yaml"),
        read("benchmark.yaml"),
    );
    assert!(cron.contains("kind: CronJob\n"), "{cron}");
    // One night at a time, and a failed night is not run again.
    for line in [
        "concurrencyPolicy: Forbid",
        "backoffLimit: 0",
        "restartPolicy: Never",
    ] {
        assert!(cron.contains(line), "{line} not in {cron}");
    }
    let args = cronjob_args(&cron);
    let after = |flag: &str| -> Vec<&str> {
        args.windows(2)
            .filter(|w| w[0] == flag)
            .map(|w| w[1].as_str())
            .collect()
    };
    // Its own login: Kubernetes auth with the projected service-account token, for
    // Vault's audience; no other token is mounted and none is in the environment.
    assert_eq!(after("--auth-method"), ["kubernetes"], "{args:?}");
    assert!(cron.contains("serviceAccountToken:\n"), "{cron}");
    assert!(cron.contains("audience: vault"), "{cron}");
    assert!(
        cron.contains("automountServiceAccountToken: false"),
        "{cron}"
    );
    assert!(
        !cron.contains("VAULT_TOKEN") && !cron.contains("secretKeyRef"),
        "{cron}"
    );
    assert!(
        args.iter()
            .any(|a| a.starts_with("/var/run/secrets/vblast/")),
        "the login reads the projected token: {args:?}"
    );
    assert!(
        cron.contains("mountPath: /var/run/secrets/vblast\n"),
        "{cron}"
    );
    // The service account it runs as is the one defined beside it.
    let name = sa
        .split("name: ")
        .nth(1)
        .and_then(|r| r.lines().next())
        .unwrap();
    assert!(
        cron.contains(&format!("serviceAccountName: {name}\n")),
        "{cron}"
    );
    // Thresholds judge it; its figures are pushed.
    assert!(!after("--threshold").is_empty(), "{args:?}");
    assert_eq!(after("--metrics-push").len(), 1, "{args:?}");
    assert!(
        after("--metrics-push-label")
            .iter()
            .any(|l| l.starts_with("instance=")),
        "{args:?}"
    );
    // Its workload: the ConfigMap's vault-benchmark file, which vblast reads as it is (it
    // goes as far as connecting to the server, which does not answer here).
    assert_eq!(after("--config"), ["/etc/vblast/benchmark.hcl"], "{args:?}");
    assert!(cron.contains("name: vblast-nightly\n"), "{cron}");
    assert!(bench.contains("name: vblast-nightly\n"), "{bench}");
    let hcl: String = bench
        .split("benchmark.hcl: |\n")
        .nth(1)
        .expect("benchmark.hcl")
        .lines()
        .map(|l| format!("{}\n", l.strip_prefix("    ").unwrap_or(l)))
        .collect();
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("benchmark.hcl");
    std::fs::write(&file, hcl).unwrap();
    let port = crate::support::ports::free_port();
    let addr = format!("http://127.0.0.1:{port}");
    let out = crate::support::run::run(crate::support::vblast::env_cmd(
        &["--config", file.to_str().unwrap()],
        &[("VAULT_ADDR", addr.as_str()), ("VAULT_TOKEN", "root")],
    ));
    out.assert_code(2);
    assert!(
        out.stderr.contains(&format!("cannot connect to {addr}")) && !out.stderr.contains(".hcl:"),
        "{}",
        out.show()
    );
}

#[test]
fn image_builds_and_its_binary_runs_shards_that_collect_merges() {
    let podman_bin = program(&["podman"], "podman");
    let out = Command::new(root().join("tools/image.sh"))
        .arg("localhost/vblast-test:latest")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "tools/image.sh: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tag = stdout.lines().last().unwrap().to_string();
    let dir = tempfile::tempdir().unwrap();
    let name = format!("vblast-test-{}", std::process::id());
    let podman = |args: &[&str]| {
        let o = Command::new(&podman_bin).args(args).output().unwrap();
        assert!(
            o.status.success(),
            "podman {args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    };
    podman(&["create", "--name", &name, &tag]);
    let bin = dir.path().join("vblast");
    let copied = Command::new(&podman_bin)
        .args(["cp", &format!("{name}:/vblast"), bin.to_str().unwrap()])
        .output()
        .unwrap();
    podman(&["rm", &name]);
    assert!(
        copied.status.success(),
        "{}",
        String::from_utf8_lossy(&copied.stderr)
    );
    // The binary of the image: static, and a shard of a run against nginx.
    let ldd = Command::new("ldd").arg(&bin).output().unwrap();
    let ldd = format!(
        "{}{}",
        String::from_utf8_lossy(&ldd.stdout),
        String::from_utf8_lossy(&ldd.stderr)
    );
    assert!(
        ldd.contains("statically linked") || ldd.contains("not a dynamic executable"),
        "the image's vblast is dynamically linked: {ldd}"
    );
    let ng = Nginx::start();
    let url = format!("{}/v1/secret/data/foo", ng.addr);
    let logs = dir.path().join("logs");
    std::fs::create_dir(&logs).unwrap();
    for i in 0..2 {
        let o = Command::new(&bin)
            .args([
                "-c",
                "4",
                "-n",
                "301",
                "--shard",
                &format!("{i}/2"),
                "--run-id",
                "image-test",
                "--output",
                "-",
                "-q",
                &url,
            ])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        std::fs::write(logs.join(format!("vblast-{i}.log")), &o.stdout).unwrap();
    }
    let merged = Command::new(root().join("deploy/kubernetes/collect.sh"))
        .args(["--from-logs", logs.to_str().unwrap(), "--format", "json"])
        .env("VBLAST", &bin)
        .output()
        .unwrap();
    assert!(
        merged.status.success(),
        "{}",
        String::from_utf8_lossy(&merged.stderr)
    );
    let j: serde_json::Value = serde_json::from_slice(&merged.stdout).unwrap();
    assert_eq!(u(&j["requests"]), 301, "{j:#}");
    assert_eq!(u(&j["ok"]), 301);
    assert_eq!(u(&j["run"]["connections"]), 4);
    // A pod whose log lacks the results is named.
    std::fs::write(logs.join("vblast-2.log"), "Duration 1s\n").unwrap();
    let o = Command::new(root().join("deploy/kubernetes/collect.sh"))
        .args(["--from-logs", logs.to_str().unwrap()])
        .env("VBLAST", &bin)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("vblast-2 printed no complete results"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}
