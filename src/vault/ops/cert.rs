//! The cert family: `cert-login`, logins to the TLS certificate auth method (auth/cert)
//! over mutual TLS. Setup enables the method at a fresh path and trusts the client
//! certificate's issuer as the role `vblast`; cleanup disables it again.
//!
//! Shared by the shards of a run (src/session/fixtures.rs): `vblast setup` makes the path and the
//! role under a name derived from the run id; a shard waits for the role and logs in with
//! the client certificate its own flags give (vblast hands no key from one step to
//! another); `vblast cleanup` disables the path.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::shared::{self, Mode};
use super::vb::{Keys, Mapped};
use super::{
    Created, Fixture, OpInfo, OptionKind, OptionSpec, OptionValues, SetupCtx, VaultBenchmark,
    VaultOp, VbType,
};
use crate::error::{Cause, Error};
use crate::signals::Stop;
use crate::template::{Piece, RequestSpec};
use crate::vault::client::Client;
use crate::vault::fixture::Naming;
use crate::workload::Operation;

fn cert_hcl(c: &mut Keys, out: &mut Mapped) -> Result<(), Cause> {
    c.names(&["name", "display_name"]);
    // PEM text, as vault-benchmark documents it, or a file holding it.
    if let Some(ca) = c.string("certificate")? {
        let key = if ca.contains("-----BEGIN") {
            "client_ca_pem"
        } else {
            "client_ca"
        };
        out.config.insert(key.into(), json!(ca));
    }
    if !c.has("token_ttl") {
        out.notes.push(format!(
            "test '{}': config.token_ttl not given: vblast's tokens live {TOKEN_TTL}, where vault-benchmark sends none and the mount's default applies (768h on a default server); set token_ttl to choose",
            c.test
        ));
    }
    // The role's token settings and name constraints, sent in the role's write as
    // vault-benchmark sends them.
    for key in CERT_ROLE_KEYS {
        if let Some(v) = c.take(key) {
            super::vb::set_in(&mut out.config, "role", key, v);
        }
    }
    Ok(())
}

/// The keys of vault-benchmark's cert_auth role beyond its name and certificate.
const CERT_ROLE_KEYS: &[&str] = &[
    "allowed_names",
    "allowed_common_names",
    "allowed_dns_sans",
    "allowed_email_sans",
    "allowed_uri_sans",
    "allowed_organizational_units",
    "required_extensions",
    "allowed_metadata_extensions",
    "token_ttl",
    "token_max_ttl",
    "token_policies",
    "policies",
    "token_bound_cidrs",
    "token_explicit_max_ttl",
    "token_no_default_policy",
    "token_num_uses",
    "token_period",
    "token_type",
];

pub const LOGIN: OpInfo = OpInfo {
    name: "cert-login",
    about: "POST auth/<path>/login over mutual TLS (https:// address and a client certificate)",
    request: "POST /v1/auth/<path>/login (over mutual TLS)",
    doc: "Setup enables the TLS certificate auth method at a fresh path and trusts the client certificate's issuer as the role `vblast`; cleanup disables it again. Shards share the path and the role; each logs in with the client certificate its own flags give.",
    options: &[
        OptionSpec {
            flag: "client-ca",
            value_name: "FILE",
            kind: OptionKind::Path,
            default: None,
            help: "cert-login: CA certificate (PEM) that issued the client certificate, registered as the trusted role (default: the --client-cert file itself)",
        },
        OptionSpec {
            flag: "mount",
            value_name: "NAME",
            kind: OptionKind::Text,
            default: None,
            help: "with --no-setup: the existing auth path to log in at (default cert)",
        },
    ],
    also: &[
        (
            "--client-cert/--client-key",
            "the client certificate presented (or VAULT_CLIENT_CERT/KEY)",
        ),
        (
            "--no-setup",
            "log in at the existing auth path --mount (default cert)",
        ),
    ],
    config_from,
    build,
    vault_benchmark: VaultBenchmark::Types(&[VbType {
        name: "cert_auth",
        config: cert_hcl,
    }]),
    fixture: Fixture::Shared,
    bounds: &[],
};

/// The family's config.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CertConfig {
    /// CA certificate registered as the trusted role (None: the client certificate).
    pub client_ca: Option<PathBuf>,
    /// The same given as PEM text (vault-benchmark's `certificate`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_ca_pem: Option<String>,
    /// With --no-setup: the existing auth path.
    pub path: Option<String>,
    /// vault-benchmark's role keys (token settings, name constraints), sent as given.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub role: Map<String, Value>,
}

fn config_from(f: &OptionValues) -> Value {
    serde_json::to_value(CertConfig {
        client_ca: f.path("client-ca"),
        client_ca_pem: None,
        path: f.text("mount"),
        role: Map::new(),
    })
    .unwrap_or(Value::Null)
}

fn build(v: &Value) -> Result<Box<dyn VaultOp>, Cause> {
    let config: CertConfig =
        serde_json::from_value(v.clone()).map_err(|e| format!("bad config: {e}"))?;
    Ok(Box::new(CertLogin {
        config,
        setup: None,
    }))
}

struct CertLogin {
    config: CertConfig,
    setup: Option<CertSetup>,
}

impl CertLogin {
    /// The client certificate presented over mutual TLS, or why there is none.
    fn client_cert<'a>(&self, ctx: &'a SetupCtx) -> Result<&'a Path, Error> {
        let Some(opts) = ctx.tls else {
            let base = (ctx.make_client)().base();
            return Err(Error::input(format!(
                "cert-login needs an https:// address (mutual TLS), not {base}"
            )));
        };
        opts.client_cert.as_deref().ok_or_else(|| {
            Error::input(
                "cert-login needs a client certificate and key: --client-cert/--client-key or VAULT_CLIENT_CERT/VAULT_CLIENT_KEY",
            )
        })
    }
}

impl CertLogin {
    /// The CA certificate to trust: the config's PEM text, its file, or the client's own.
    fn ca_pem(&self, client_cert: &Path) -> Result<String, Cause> {
        match &self.config.client_ca_pem {
            Some(text) => certificates_of(text, "config.certificate"),
            None => read_ca_pem(self.config.client_ca.as_deref().unwrap_or(client_cert)),
        }
    }
}

impl VaultOp for CertLogin {
    fn check(&self, ctx: &SetupCtx) -> Result<(), Error> {
        let client_cert = self.client_cert(ctx)?;
        if !ctx.no_setup {
            self.ca_pem(client_cert).map_err(Error::input)?;
        }
        Ok(())
    }

    fn setup(&mut self, ctx: &SetupCtx) -> Result<(), Error> {
        let client_cert = self.client_cert(ctx)?;
        if ctx.no_setup {
            self.setup = Some(existing(self.config.path.as_deref().unwrap_or("cert")));
            return Ok(());
        }
        match shared::mode(ctx) {
            Mode::Join => {
                let path = random_auth_path(ctx.naming);
                shared::wait_readable(
                    ctx,
                    &format!("the shared cert role '{ROLE}' at '{path}'"),
                    &format!("/v1/auth/{path}/certs/{ROLE}"),
                )?;
                // Not its own: never disabled by the shard.
                self.setup = Some(CertSetup {
                    path,
                    created: false,
                    role: Some(ROLE.into()),
                });
                return Ok(());
            }
            // `vblast cleanup`: the path setup made, to disable.
            Mode::Remove => {
                self.setup = Some(CertSetup {
                    path: random_auth_path(ctx.naming),
                    created: true,
                    role: Some(ROLE.into()),
                });
                return Ok(());
            }
            Mode::Own | Mode::Create => {}
        }
        let ca_pem = self.ca_pem(client_cert).map_err(Error::input)?;
        let mut client = (ctx.make_client)();
        prepare(
            &mut client,
            ctx.naming,
            &ca_pem,
            &self.config.role,
            &mut self.setup,
        )
        .map_err(Error::setup)
    }

    fn operation(&self) -> Operation {
        let s = self
            .setup
            .clone()
            .unwrap_or_else(|| existing(self.config.path.as_deref().unwrap_or("cert")));
        login(&s)
    }

    fn created(&self) -> Vec<Created> {
        match &self.setup {
            Some(s) if s.created => vec![Created::auth_path("cert", &s.path, "")],
            _ => Vec::new(),
        }
    }

    fn cleanup(&mut self, client: &mut Client, _stop: &Stop) -> Result<(), Cause> {
        if let Some(s) = &self.setup {
            cleanup(client, s)?;
        }
        self.setup = None;
        Ok(())
    }
}

/// The role vblast registers.
pub const ROLE: &str = "vblast";
/// TTL of the tokens each login creates.
pub const TOKEN_TTL: &str = "2m";

/// The auth mount in place.
#[derive(Clone, Debug)]
pub struct CertSetup {
    /// Auth path without slashes ("vblast-cert-1a2b3c4d").
    pub path: String,
    /// Whether we enabled it (and so must disable it).
    pub created: bool,
    /// Role to log in with (None: let the server match any trusted role).
    pub role: Option<String>,
}

/// "vblast-cert-" and 8 hex digits (`Naming::random_name`).
pub fn random_auth_path(naming: &Naming) -> String {
    naming.random_name("vblast-cert-")
}

/// The PEM CERTIFICATE blocks of `path` (other blocks, such as a key, are left out).
pub fn read_ca_pem(path: &Path) -> Result<String, Cause> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        format!(
            "cannot read client CA file {}: {}",
            path.display(),
            crate::error::io_text(&e)
        )
    })?;
    certificates_of(&text, &path.display().to_string())
}

/// The PEM CERTIFICATE blocks of `text` (read from `source`).
fn certificates_of(text: &str, source: &str) -> Result<String, Cause> {
    let mut out = String::new();
    let mut inside = false;
    for line in text.lines() {
        let line = line.trim();
        if line == "-----BEGIN CERTIFICATE-----" {
            inside = true;
        }
        if inside {
            out.push_str(line);
            out.push('\n');
        }
        if line == "-----END CERTIFICATE-----" {
            inside = false;
        }
    }
    if out.is_empty() || inside {
        return Err(Cause::from(format!(
            "no complete PEM certificate found in {source}"
        )));
    }
    Ok(out)
}

fn check(r: &crate::vault::client::Response, what: &str, base: &str) -> Result<(), Cause> {
    if (200..300).contains(&r.status) {
        Ok(())
    } else {
        Err(Cause::from(format!(
            "{what} on {base} failed: HTTP {}: {}",
            r.status,
            r.error_text()
        )))
    }
}

/// Enables cert auth at a fresh path and registers `ca_pem` as the trusted certificate
/// of role `vblast`. `slot` holds the path as soon as it may exist, so that the session
/// disables it whatever happens next.
fn prepare(
    client: &mut Client,
    naming: &Naming,
    ca_pem: &str,
    extra: &Map<String, Value>,
    slot: &mut Option<CertSetup>,
) -> Result<(), Cause> {
    let base = client.base();
    let path = random_auth_path(naming);
    let body = serde_json::json!({
        "type": "cert",
        "description": "vblast load test (temporary)",
    });
    // From here on the path may exist (a timed-out request may still have enabled it).
    *slot = Some(CertSetup {
        path: path.clone(),
        created: true,
        role: Some(ROLE.into()),
    });
    let r = client
        .request(
            "POST",
            &format!("/v1/sys/auth/{path}"),
            Some(body.to_string().as_bytes()),
        )
        .map_err(|e| format!("enabling cert auth at '{path}' failed: {e}"))?;
    if !(200..300).contains(&r.status) {
        *slot = None;
    }
    check(&r, &format!("enabling cert auth at '{path}'"), &base)?;
    let mut role = serde_json::json!({
        "certificate": ca_pem,
        "token_ttl": TOKEN_TTL,
        "display_name": ROLE,
    });
    for (k, v) in extra {
        role[k] = v.clone();
    }
    let r = client.request(
        "POST",
        &format!("/v1/auth/{path}/certs/{ROLE}"),
        Some(role.to_string().as_bytes()),
    )?;
    check(
        &r,
        &format!("registering the client CA as role '{ROLE}'"),
        &base,
    )
}

/// `--no-setup`: an existing cert auth mount, any trusted role.
pub fn existing(path: &str) -> CertSetup {
    CertSetup {
        path: path.trim().trim_matches('/').to_string(),
        created: false,
        role: None,
    }
}

/// The login request; the TLS layer presents the client certificate.
pub fn login(setup: &CertSetup) -> Operation {
    let body = match &setup.role {
        Some(role) => serde_json::json!({ "name": role }).to_string(),
        None => "{}".to_string(),
    };
    Operation::new(
        "cert-login",
        RequestSpec {
            method: "POST".into(),
            path: vec![Piece::lit(format!("/v1/auth/{}/login", setup.path))],
            headers: vec![("Content-Type".into(), "application/json".into())],
            body: Some(vec![Piece::lit(body)]),
            captured_headers: vec![],
        },
    )
}

/// Disables the auth path when we enabled it, its logins' identity entities first
/// (`super::delete_login_entities`).
pub fn cleanup(client: &mut Client, setup: &CertSetup) -> Result<(), Cause> {
    if !setup.created {
        return Ok(());
    }
    let entities = super::delete_login_entities(client, &setup.path);
    let r = client.request("DELETE", &format!("/v1/sys/auth/{}", setup.path), None)?;
    check(
        &r,
        &format!("disabling cert auth at '{}'", setup.path),
        &client.base(),
    )?;
    entities.map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::template::{Common, Rng, Template};

    #[test]
    fn paths_and_bodies() {
        let p = random_auth_path(&Naming::own());
        assert!(p.starts_with("vblast-cert-") && p.len() == 20, "{p}");
        let s = CertSetup {
            path: p.clone(),
            created: true,
            role: Some(ROLE.into()),
        };
        let mut t = Template::build(&login(&s).request, &Common::default());
        let text = String::from_utf8(t.render(&mut Rng::new(1)).to_vec()).unwrap();
        assert!(text.starts_with(&format!("POST /v1/auth/{p}/login HTTP/1.1\r\n")));
        assert!(text.ends_with("\r\n\r\n{\"name\":\"vblast\"}"), "{text}");
        assert_eq!(existing("/cert/").path, "cert");
    }

    #[test]
    fn ca_pem_keeps_only_certificates() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("both.pem");
        std::fs::write(
            &f,
            "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n-----BEGIN CERTIFICATE-----\nBBBB\n-----END CERTIFICATE-----\n",
        )
        .unwrap();
        assert_eq!(
            read_ca_pem(&f).unwrap(),
            "-----BEGIN CERTIFICATE-----\nBBBB\n-----END CERTIFICATE-----\n"
        );
        std::fs::write(&f, "nothing").unwrap();
        assert!(
            read_ca_pem(&f)
                .unwrap_err()
                .to_string()
                .contains("no complete PEM")
        );
        assert!(read_ca_pem(&dir.path().join("missing")).is_err());
    }
}
