//! One redaction policy, checked end to end: every secret-bearing flag (--token,
//! --token-file, -H X-Vault-Token/Authorization/Cookie, -d with a password, --db-url with a
//! password, --client-key), environment variable (VAULT_TOKEN, VAULT_CLIENT_KEY) and
//! vault-benchmark HCL key (vault_token, a database's password and a connection_url holding
//! one, a userpass password) is given a distinctive value; real runs against an OpenBao dev
//! server, nginx and PostgreSQL write every output file (--output, --html, --hgrm, --hlog,
//! --ab-csv) in every report format, then `vblast report` renders the results files in
//! every format and `vblast compare --html` compares them. No secret value may appear in
//! any of them, nor on stdout or stderr; refused credentials are not echoed either.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::certs::gen_tls_files;
use crate::support::nginx::Nginx;
use crate::support::openbao::OpenBao;
use crate::support::postgres::Postgres;
use crate::support::run::{Out, run};
use crate::support::vblast::vblast;

const FORMATS: &[&str] = &[
    "text",
    "json",
    "ab",
    "verbose",
    "vb-terse",
    "vb-verbose",
    "vb-json",
];

/// The secret values given so far, and the outputs checked against them.
struct Check {
    secrets: Vec<String>,
    dir: tempfile::TempDir,
    results: Vec<PathBuf>,
    runs: usize,
}

impl Check {
    fn new() -> Check {
        Check {
            secrets: Vec::new(),
            dir: tempfile::tempdir().unwrap(),
            results: Vec::new(),
            runs: 0,
        }
    }

    fn secret(&mut self, s: &str) -> String {
        self.secrets.push(s.to_string());
        s.to_string()
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// No secret in `text`.
    fn clean(&self, what: &str, text: &str) {
        for s in &self.secrets {
            assert!(
                !text.contains(s.as_str()),
                "secret {s:?} in {what}:\n{text}"
            );
        }
    }

    fn clean_out(&self, what: &str, r: &Out) {
        self.clean(&format!("{what}: stdout"), &r.stdout);
        self.clean(&format!("{what}: stderr"), &r.stderr);
    }

    fn clean_file(&self, path: &Path) {
        let text = std::fs::read_to_string(path)
            .unwrap_or_else(|e| panic!("{} not written: {e}", path.display()));
        assert!(!text.is_empty(), "{} is empty", path.display());
        self.clean(&path.display().to_string(), &text);
    }

    /// Runs `cmd` (built by `make`) once per report format, each run writing every output
    /// file; checks the outputs, and keeps the results files for `reports`.
    fn runs(&mut self, name: &str, make: &dyn Fn() -> Command, ok: i32) {
        for format in FORMATS {
            self.runs += 1;
            let stem = format!("{name}-{format}-{}", self.runs);
            let files =
                ["json", "html", "hgrm", "hlog", "csv"].map(|e| self.path(&format!("{stem}.{e}")));
            let mut cmd = make();
            cmd.args(["--format", format]);
            for (flag, f) in ["--output", "--html", "--hgrm", "--hlog", "--ab-csv"]
                .iter()
                .zip(&files)
            {
                cmd.arg(flag).arg(f);
            }
            let r = run(cmd);
            assert_eq!(r.code, Some(ok), "{name} --format {format}: {}", r.show());
            self.clean_out(&format!("{name} --format {format}"), &r);
            for f in &files {
                self.clean_file(f);
            }
            self.results.push(files[0].clone());
        }
    }

    /// A command that must fail: its message names no secret.
    fn refused(&self, what: &str, mut cmd: Command) {
        cmd.args(["--format", "json"]);
        let r = run(cmd);
        assert_ne!(r.code, Some(0), "{what}: {}", r.show());
        self.clean_out(what, &r);
    }

    /// `vblast report` of every results file in every format (with its files), then
    /// `vblast compare --html` over them.
    fn reports(&self) {
        for (i, file) in self.results.iter().enumerate() {
            for format in FORMATS {
                let html = self.path(&format!("report-{i}-{format}.html"));
                let hgrm = self.path(&format!("report-{i}-{format}.hgrm"));
                let mut cmd = vblast();
                cmd.arg("report").arg(file).args(["--format", format]);
                cmd.arg("--html").arg(&html).arg("--hgrm").arg(&hgrm);
                let r = run(cmd);
                assert_eq!(r.code, Some(0), "report {format}: {}", r.show());
                self.clean_out(&format!("report {} --format {format}", file.display()), &r);
                self.clean_file(&html);
                self.clean_file(&hgrm);
            }
        }
        // One compare per scenario (its text-format run against the others').
        let firsts: Vec<&PathBuf> = self.results.iter().step_by(FORMATS.len()).collect();
        let html = self.path("compare.html");
        let mut cmd = vblast();
        cmd.arg("compare").args(&firsts).arg("--html").arg(&html);
        let r = run(cmd);
        self.clean_out("compare", &r);
        self.clean_file(&html);
    }
}

/// A token with this id and the root policy, made through the API.
fn token(bao: &OpenBao, id: &str) {
    let body = format!(r#"{{"id":"{id}","policies":["root"],"ttl":"1h"}}"#);
    let (s, b) = bao.api("POST", "/v1/auth/token/create", Some(&body));
    assert_eq!(s, 200, "{b}");
}

/// vblast pointed at `bao` by VAULT_ADDR only (the token comes from the arguments).
fn at(bao: &OpenBao, args: &[&str]) -> Command {
    let mut cmd = vblast();
    cmd.env("VAULT_ADDR", &bao.addr).env_remove("VAULT_TOKEN");
    cmd.args(args);
    cmd
}

/// The middle line of a PEM file: what would show if its text were printed.
fn pem_body(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with("-----")).collect();
    lines[lines.len() / 2].to_string()
}

#[test]
fn no_secret_reaches_any_output_file_report_or_message() {
    let pg = Postgres::start().expect("PostgreSQL missing: run tools/deps.sh");
    let bao = OpenBao::start();
    let mut c = Check::new();
    let n = ["-c", "2", "-n", "20"];

    // Flags and the environment: --token, --token-file, VAULT_TOKEN.
    let flag = c.secret("vbsecret-token-flag-7c1e");
    let file = c.secret("vbsecret-token-file-93ad");
    let env = c.secret("vbsecret-token-env-51f0");
    for t in [&flag, &file, &env] {
        token(&bao, t);
    }
    let token_file = c.path("token");
    std::fs::write(&token_file, format!("{file}\n")).unwrap();
    let base = [&["--op", "kv-read,kv-write"][..], &n].concat();
    c.runs(
        "token-flag",
        &|| {
            let mut cmd = at(&bao, &base);
            cmd.args(["--token", &flag]);
            cmd
        },
        0,
    );
    c.runs(
        "token-file",
        &|| {
            let mut cmd = at(&bao, &base);
            cmd.arg("--token-file").arg(&token_file);
            cmd
        },
        0,
    );
    c.runs(
        "token-env",
        &|| {
            let mut cmd = at(&bao, &base);
            cmd.env("VAULT_TOKEN", &env);
            cmd
        },
        0,
    );

    // --db-url with the database's password (and a refused one, not echoed).
    let pg_url = pg.url();
    let pg_password = pg_url
        .split_once("://")
        .and_then(|(_, r)| r.split_once('@'))
        .and_then(|(u, _)| u.split_once(':'))
        .map(|(_, p)| p.to_string())
        .unwrap();
    c.secret(&pg_password);
    c.runs(
        "db-url",
        &|| {
            let mut cmd = at(
                &bao,
                &[&["--op", "db-creds", "--db-url", &pg_url][..], &n].concat(),
            );
            cmd.env("VAULT_TOKEN", &env);
            cmd
        },
        0,
    );
    let wrong = c.secret("vbsecret-db-wrong-2b7d");
    let wrong_url = pg_url.replace(&pg_password, &wrong);
    let mut cmd = at(
        &bao,
        &[&["--op", "db-creds", "--db-url", &wrong_url][..], &n].concat(),
    );
    cmd.env("VAULT_TOKEN", &env);
    c.refused("a refused database password", cmd);
    let refused_token = c.secret("vbsecret-token-refused-0e4f");
    let mut cmd = at(&bao, &base);
    cmd.args(["--token", &refused_token]);
    c.refused("a refused token", cmd);

    // vault-benchmark HCL: vault_token, a database's password, a connection_url holding
    // one, a userpass password; read by `vblast run --config` and `vblast vault-benchmark`.
    let hcl_token = c.secret("vbsecret-token-hcl-6d2a");
    token(&bao, &hcl_token);
    let userpass = c.secret("vbsecret-userpass-hcl-48c3");
    let (pg_host, pg_port) = {
        let rest = pg_url.rsplit_once('@').unwrap().1;
        let hp = rest.split_once('/').unwrap().0;
        let (h, p) = hp.split_once(':').unwrap();
        (h.to_string(), p.to_string())
    };
    let hcl = format!(
        r#"vault_addr  = "{addr}"
vault_token = "{hcl_token}"
duration    = "1s"

test "kvv2_read" "reads" {{
  weight = 40
  config {{
    numkvs = 10
  }}
}}

test "userpass_auth" "logins" {{
  weight = 20
  config {{
    username = "vbuser"
    password = "{userpass}"
  }}
}}

test "postgresql_secret" "creds" {{
  weight = 20
  config {{
    db_connection {{
      connection_url = "postgresql://{{{{username}}}}:{{{{password}}}}@{pg_host}:{pg_port}/postgres"
      username       = "vbroot"
      password       = "{pg_password}"
    }}
  }}
}}

test "postgresql_secret" "creds_in_url" {{
  weight = 20
  config {{
    db_connection {{
      name           = "inurl"
      connection_url = "postgresql://vbroot:{pg_password}@{pg_host}:{pg_port}/postgres"
    }}
  }}
}}
"#,
        addr = bao.addr
    );
    let hcl_file = c.path("bench.hcl");
    std::fs::write(&hcl_file, hcl).unwrap();
    c.runs(
        "hcl",
        &|| {
            let mut cmd = vblast();
            cmd.env_remove("VAULT_TOKEN").env_remove("VAULT_ADDR");
            cmd.arg("--config")
                .arg(&hcl_file)
                .args(["-n", "40", "-c", "2"]);
            cmd
        },
        0,
    );
    for mode in ["terse", "verbose", "json"] {
        let saved = c.path(&format!("vb-{mode}.json"));
        let mut cmd = vblast();
        cmd.env_remove("VAULT_TOKEN").env_remove("VAULT_ADDR");
        cmd.args(["vault-benchmark", "run", "-workers=2"]);
        cmd.arg(format!("-config={}", hcl_file.display()));
        cmd.arg(format!("-report_mode={mode}"));
        cmd.arg(format!("-result_file={}", saved.display()));
        let r = run(cmd);
        assert_eq!(r.code, Some(0), "vault-benchmark {mode}: {}", r.show());
        c.clean_out(&format!("vault-benchmark -report_mode={mode}"), &r);
        c.clean_file(&saved);
        let mut cmd = vblast();
        cmd.args([
            "vault-benchmark",
            "review",
            &format!("-result_file={}", saved.display()),
        ]);
        cmd.arg(format!("-report_mode={mode}"));
        let r = run(cmd);
        assert_eq!(r.code, Some(0), "review {mode}: {}", r.show());
        c.clean_out(&format!("vault-benchmark review -report_mode={mode}"), &r);
    }

    // URL mode: credential headers and a body with a password.
    let ng = Nginx::with_extra("location = /login { return 200 'ok'; }");
    let header_token = c.secret("vbsecret-header-token-c3a9");
    let bearer = c.secret("vbsecret-bearer-1f8e");
    let cookie = c.secret("vbsecret-cookie-77b2");
    let body_password = c.secret("vbsecret-body-password-d40c");
    let login = format!("{}/login", ng.addr);
    let body = format!(r#"{{"username":"u","password":"{body_password}"}}"#);
    c.runs(
        "headers",
        &|| {
            let mut cmd = vblast();
            cmd.args(["-m", "POST", "-c", "2", "-n", "20"]);
            cmd.args(["-H", &format!("X-Vault-Token: {header_token}")]);
            cmd.args(["-H", &format!("Authorization: Bearer {bearer}")]);
            cmd.args(["-H", &format!("Cookie: session={cookie}")]);
            cmd.args(["-d", &body, "-T", "application/json", &login]);
            cmd
        },
        0,
    );

    // A password in a target URL is refused, and not echoed.
    let in_url = c.secret("vbsecret-url-password-a61b");
    let mut cmd = vblast();
    cmd.args(["-n", "1", &format!("http://u:{in_url}@127.0.0.1:1/")]);
    c.refused("a URL with a password", cmd);
    let mut cmd = at(&bao, &base);
    cmd.args(["--address", &format!("http://u:{in_url}@127.0.0.1:1")]);
    cmd.env("VAULT_TOKEN", &env);
    c.refused("an address with a password", cmd);

    // --client-key and VAULT_CLIENT_KEY: the key's text is never shown.
    let (tls, files) = Nginx::start_tls_generated();
    let client = gen_tls_files(c.dir.path());
    c.secret(&pem_body(&client.key));
    let _ = files;
    // nginx answers 404 here: the run is about what is shown, not what is served.
    let url = format!("{}/", tls.addr);
    let ca = tls.ca_cert.clone().unwrap();
    c.runs(
        "client-key",
        &|| {
            let mut cmd = vblast();
            cmd.args(["-c", "2", "-n", "20", "--allow-errors"])
                .arg("--ca-cert")
                .arg(&ca);
            cmd.arg("--client-cert").arg(&client.cert);
            cmd.arg("--client-key").arg(&client.key).arg(&url);
            cmd
        },
        0,
    );
    c.runs(
        "client-key-env",
        &|| {
            let mut cmd = vblast();
            cmd.env("VAULT_CLIENT_CERT", &client.cert);
            cmd.env("VAULT_CLIENT_KEY", &client.key);
            cmd.args(["-c", "2", "-n", "20", "--allow-errors"])
                .arg("--ca-cert")
                .arg(&ca)
                .arg(&url);
            cmd
        },
        0,
    );

    c.reports();
}
