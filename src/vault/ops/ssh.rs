//! The SSH family: `ssh-sign` and `ssh-issue`. ssh-sign's setup enables the SSH secrets engine at a fresh mount
//! (`vblast-ssh-xxxxxxxx`), has it generate a CA signing key, creates the role `vblast`
//! for user certificates, and makes an Ed25519 client key pair (ring) whose public key
//! every request has signed; the answer must hold the signed certificate. Cleanup
//! disables the mount. ssh-issue (vault-benchmark's `ssh_issue`) has the server make a
//! key pair and its certificate in each request, under vault-benchmark's CA, role and
//! request defaults (see `IssueConfig`).
//!
//! Shared by the shards of a run (src/session/fixtures.rs): `vblast setup` makes the mount, the CA
//! and the role under names derived from the run id; a shard makes its own client key
//! pair locally and waits for the role; `vblast cleanup` disables the mount.

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::vb::{Keys, Mapped};
use super::{
    Created, Fixture, OpInfo, OptionValues, SetupCtx, VaultBenchmark, VaultOp, VbType, call,
    disable_mount, mount_created, needs_setup, setup_with,
    shared::{self, Mode},
};
use crate::capture::Expect;
use crate::error::{Cause, Error};
use crate::signals::Stop;
use crate::template::{Piece, RequestSpec};
use crate::vault::client::Client;
use crate::vault::fixture::Naming;
use crate::workload::Operation;

/// The role, and the user the certificates are for.
pub const ROLE: &str = "vblast";

/// vault-benchmark's ssh_sign test: its role, CA and signing settings are vblast's own.
fn ssh_hcl(c: &mut Keys, out: &mut Mapped) -> Result<(), Cause> {
    let mut role = c.block("role")?;
    role.names(&["name"]);
    role.only(
        "allow_user_certificates",
        &[json!(true)],
        "it signs user certificates",
    )?;
    role.only("key_type", &[json!("ca")], "it signs with a CA")?;
    role.finish(&mut out.named)?;
    let mut ca = c.block("ca")?;
    ca.only(
        "generate_signing_key",
        &[json!(true)],
        "the server generates its CA key",
    )?;
    ca.finish(&mut out.named)?;
    let mut ks = c.block("key_signing")?;
    ks.only("cert_type", &[json!("user")], "it signs user certificates")?;
    // Sent in every request, as vault-benchmark sends them.
    for key in ["ttl", "key_id"] {
        if let Some(v) = ks.string(key)? {
            super::vb::set_in(&mut out.config, "sign", key, json!(v));
        }
    }
    ks.finish(&mut out.named)
}

pub const SIGN: OpInfo = OpInfo {
    name: "ssh-sign",
    about: "POST <mount>/sign/vblast: a user certificate for a client key made at setup",
    request: "POST /v1/<mount>/sign/vblast",
    doc: "Setup enables the SSH secrets engine at a fresh mount (`vblast-ssh-xxxxxxxx`), has it generate a CA signing key, creates the role `vblast` for user certificates, and makes an Ed25519 client key pair whose public key every request has signed; the answer must hold the signed certificate. Cleanup disables the mount. Shards share the mount, the CA and the role; each makes its own client key pair.",
    options: &[],
    also: &[],
    config_from,
    build,
    vault_benchmark: VaultBenchmark::Types(&[VbType {
        name: "ssh_sign",
        config: ssh_hcl,
    }]),
    fixture: Fixture::Shared,
};

/// No options of its own; vault-benchmark's `key_signing` `ttl` and `key_id`, sent in
/// every request (`sign`). Unknown keys refused.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SshConfig {
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    sign: Map<String, Value>,
}

fn config_from(_: &OptionValues) -> Value {
    serde_json::to_value(SshConfig::default()).unwrap_or(Value::Null)
}

fn build(v: &Value) -> Result<Box<dyn VaultOp>, Cause> {
    let c =
        serde_json::from_value::<SshConfig>(v.clone()).map_err(|e| format!("bad config: {e}"))?;
    Ok(Box::new(Ssh {
        mount: None,
        public_key: String::new(),
        shared_mount: None,
        sign: c.sign,
    }))
}

/// A fresh Ed25519 public key in OpenSSH's one-line form ("ssh-ed25519 AAAA... vblast").
pub fn client_public_key() -> Result<String, Cause> {
    use ring::signature::{Ed25519KeyPair, KeyPair};
    let rng = ring::rand::SystemRandom::new();
    let pkcs8 = Ed25519KeyPair::generate_pkcs8(&rng)
        .map_err(|_| "cannot generate an Ed25519 client key".to_string())?;
    let pair = Ed25519KeyPair::from_pkcs8(pkcs8.as_ref())
        .map_err(|_| "cannot read the Ed25519 client key".to_string())?;
    // RFC 4253 wire form: string "ssh-ed25519", string key.
    let mut blob = Vec::new();
    for part in [&b"ssh-ed25519"[..], pair.public_key().as_ref()] {
        blob.extend_from_slice(&(part.len() as u32).to_be_bytes());
        blob.extend_from_slice(part);
    }
    Ok(format!(
        "ssh-ed25519 {} vblast",
        base64::engine::general_purpose::STANDARD.encode(blob)
    ))
}

struct Ssh {
    /// The mount, as soon as it may exist.
    mount: Option<String>,
    public_key: String,
    /// A shard's: the mount `vblast setup` made (not its own: never disabled by it).
    shared_mount: Option<String>,
    /// What every request also asks (vault-benchmark's `key_signing` `ttl`, `key_id`).
    sign: Map<String, Value>,
}

impl Ssh {
    fn prepare(&mut self, client: &mut Client, naming: &Naming) -> Result<(), Cause> {
        self.public_key = client_public_key()?;
        let mount = naming.random_name("vblast-ssh-");
        self.mount = Some(mount.clone());
        call(
            client,
            "POST",
            &format!("/v1/sys/mounts/{mount}"),
            Some(&json!({"type": "ssh", "description": "vblast load test (temporary)"})),
            &format!("enabling ssh at '{mount}'"),
        )
        .inspect_err(|_| self.mount = None)?;
        call(
            client,
            "POST",
            &format!("/v1/{mount}/config/ca"),
            Some(&json!({ "generate_signing_key": true })),
            &format!("generating the CA key of '{mount}'"),
        )?;
        call(
            client,
            "POST",
            &format!("/v1/{mount}/roles/{ROLE}"),
            Some(&json!({
                "key_type": "ca",
                "allow_user_certificates": true,
                "allowed_users": ROLE,
                "default_user": ROLE,
                "ttl": "10m",
            })),
            &format!("creating role '{ROLE}' in '{mount}'"),
        )?;
        Ok(())
    }
}

impl VaultOp for Ssh {
    fn check(&self, ctx: &SetupCtx) -> Result<(), Error> {
        needs_setup(ctx, SIGN.name)
    }

    fn setup(&mut self, ctx: &SetupCtx) -> Result<(), Error> {
        match shared::mode(ctx) {
            Mode::Join => {
                self.public_key = client_public_key().map_err(Error::setup)?;
                let mount = ctx.naming.random_name("vblast-ssh-");
                shared::wait_readable(
                    ctx,
                    &format!("the shared ssh role '{ROLE}' in '{mount}'"),
                    &format!("/v1/{mount}/roles/{ROLE}"),
                )?;
                self.shared_mount = Some(mount);
                Ok(())
            }
            // `vblast cleanup`: the mount setup made, to disable.
            Mode::Remove => {
                self.mount = Some(ctx.naming.random_name("vblast-ssh-"));
                Ok(())
            }
            Mode::Own | Mode::Create => {
                setup_with(ctx, SIGN.name, |client| self.prepare(client, ctx.naming))
            }
        }
    }

    fn operation(&self) -> Operation {
        let mount = self
            .mount
            .as_deref()
            .or(self.shared_mount.as_deref())
            .unwrap_or("unset");
        let mut body = json!({ "public_key": self.public_key, "valid_principals": ROLE });
        for (k, v) in &self.sign {
            body[k] = v.clone();
        }
        let mut op = Operation::new(
            SIGN.name,
            RequestSpec {
                method: "POST".into(),
                path: vec![Piece::lit(format!("/v1/{mount}/sign/{ROLE}"))],
                headers: vec![("Content-Type".into(), "application/json".into())],
                body: Some(vec![Piece::lit(body.to_string())]),
                captured_headers: vec![],
            },
        );
        op.expect = Some(Expect::present("data.signed_key"));
        op
    }

    fn created(&self) -> Vec<Created> {
        mount_created("ssh", self.mount.as_deref())
    }

    fn cleanup(&mut self, client: &mut Client, _stop: &Stop) -> Result<(), Cause> {
        disable_mount(client, "ssh", &mut self.mount)
    }
}

/// `--key-type` of ssh-issue: the key the server makes for each certificate.
const ISSUE_KEY_TYPE: super::OptionSpec = super::OptionSpec {
    flag: "key-type",
    value_name: "TYPE",
    kind: super::OptionKind::Text,
    default: None,
    help: "ssh-issue: the key made for each certificate: rsa-2048 (default, as vault-benchmark), rsa-3072, rsa-4096, ec-256, ec-384, ec-521, ed25519",
};

/// The role keys of vault-benchmark's `ssh_issue` `role` block, written to the role as given.
const ISSUE_ROLE_KEYS: &[&str] = &[
    "default_user",
    "default_user_template",
    "cidr_list",
    "exclude_cidr_list",
    "port",
    "key_type",
    "allowed_users",
    "allowed_users_template",
    "allowed_domains",
    "allowed_domains_template",
    "ttl",
    "max_ttl",
    "allowed_critical_options",
    "allowed_extensions",
    "default_critical_options",
    "default_extensions",
    "allow_user_certificates",
    "allow_host_certificates",
    "allow_bare_domains",
    "allow_subdomains",
    "allow_user_key_ids",
    "key_id_format",
    "allowed_user_key_lengths",
    "algorithm_signer",
    "not_before_duration",
    "key",
    "admin_user",
    "key_bits",
    "install_script",
    "key_option_specs",
];

/// The keys of its `ca` block, written to `config/ca` as given.
const ISSUE_CA_KEYS: &[&str] = &[
    "private_key",
    "public_key",
    "generate_signing_key",
    "key_type",
    "key_bits",
];

/// The keys of its `issued_cert` block sent in every request as given (the key's type and
/// size are vblast's `key_type`).
const ISSUE_REQUEST_KEYS: &[&str] = &[
    "ttl",
    "valid_principals",
    "cert_type",
    "key_id",
    "critical_options",
    "extensions",
];

/// vault-benchmark's `ssh_issue`: its CA (the server generates an RSA key, 4096 bits as
/// `key_bits = 0` gives), its role (`ca` type, user certificates) and its request (an
/// RSA-2048 key, a user certificate), each block's keys sent as given. OpenBao refuses a
/// certificate with no principal, which vault-benchmark's defaults ask for: unless the file
/// names them, the role allows and defaults to the user `vblast` (said in a note).
fn ssh_issue_hcl(c: &mut Keys, out: &mut Mapped) -> Result<(), Cause> {
    let mut ca = c.block("ca")?;
    for key in ISSUE_CA_KEYS {
        if let Some(v) = ca.take(key) {
            super::vb::set_in(&mut out.config, "ca", key, v);
        }
    }
    ca.finish(&mut out.named)?;
    let mut role = c.block("role")?;
    role.names(&["name"]);
    for key in ISSUE_ROLE_KEYS {
        if let Some(v) = role.take(key) {
            super::vb::set_in(&mut out.config, "role", key, v);
        }
    }
    role.finish(&mut out.named)?;
    let mut cert = c.block("issued_cert")?;
    cert.names(&["name"]);
    if let Some(k) = super::vb::pki_key(&mut cert)? {
        out.config.insert("key_type".into(), json!(k));
    }
    for key in ISSUE_REQUEST_KEYS {
        if let Some(v) = cert.take(key) {
            super::vb::set_in(&mut out.config, "issue", key, v);
        }
    }
    cert.finish(&mut out.named)?;
    let role_has = |k: &str| out.config.get("role").is_some_and(|r| r.get(k).is_some());
    let principals = out
        .config
        .get("issue")
        .is_some_and(|r| r.get("valid_principals").is_some());
    if !role_has("allowed_users") || !(role_has("default_user") || principals) {
        out.notes.push(format!(
            "test '{}': the ssh role allows and defaults to the user '{ROLE}' where the file leaves allowed_users or default_user out: OpenBao refuses to issue a certificate valid for no principal",
            c.test
        ));
    }
    Ok(())
}

pub const ISSUE: OpInfo = OpInfo {
    name: "ssh-issue",
    about: "POST <mount>/issue/vblast: the server makes a key pair and its user certificate",
    request: "POST /v1/<mount>/issue/vblast",
    doc: "Setup enables the SSH secrets engine at a fresh mount (`vblast-sshi-xxxxxxxx`), has it generate a CA key (RSA-4096, vault-benchmark's `key_type = \"rsa\"`, `key_bits = 0`) and creates the role `vblast` (`key_type = \"ca\"`, user certificates, allowed and default user `vblast`: OpenBao refuses a certificate valid for no principal). Each request has the server make a key of `--key-type` (RSA-2048 unless said, as vault-benchmark) and a user certificate for it; the answer must hold the signed certificate (its private key is never printed or kept). Cleanup disables the mount. Shards share the mount, the CA and the role.",
    options: &[ISSUE_KEY_TYPE],
    also: &[],
    config_from: issue_config_from,
    build: build_issue,
    vault_benchmark: VaultBenchmark::Types(&[VbType {
        name: "ssh_issue",
        config: ssh_issue_hcl,
    }]),
    fixture: Fixture::Shared,
};

/// ssh-issue's config: the key of each certificate (vblast's name, `rsa-2048`), and
/// vault-benchmark's `ca`, `role` and `issued_cert` keys as the file gives them.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IssueConfig {
    pub key_type: String,
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub ca: Map<String, Value>,
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub role: Map<String, Value>,
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub issue: Map<String, Value>,
}

fn issue_config_from(f: &OptionValues) -> Value {
    serde_json::to_value(IssueConfig {
        key_type: f.text("key-type").unwrap_or_else(|| "rsa-2048".into()),
        ca: Map::new(),
        role: Map::new(),
        issue: Map::new(),
    })
    .unwrap_or(Value::Null)
}

/// Vault's `key_type` and `key_bits` of a vblast key name (rsa-2048, ec-256, ed25519).
fn issue_key(name: &str) -> Result<(&'static str, u64), Cause> {
    let bad = || {
        Cause::from(format!(
            "unknown ssh key type '{name}': choose rsa-2048, rsa-3072, rsa-4096, ec-256, ec-384, ec-521 or ed25519"
        ))
    };
    match name.split_once('-') {
        None if name == "ed25519" => Ok(("ed25519", 0)),
        Some(("rsa", b)) => match b.parse() {
            Ok(b @ (2048 | 3072 | 4096)) => Ok(("rsa", b)),
            _ => Err(bad()),
        },
        Some(("ec", b)) => match b.parse() {
            Ok(b @ (256 | 384 | 521)) => Ok(("ec", b)),
            _ => Err(bad()),
        },
        _ => Err(bad()),
    }
}

fn build_issue(v: &Value) -> Result<Box<dyn VaultOp>, Cause> {
    let c =
        serde_json::from_value::<IssueConfig>(v.clone()).map_err(|e| format!("bad config: {e}"))?;
    issue_key(&c.key_type)?;
    Ok(Box::new(SshIssue {
        mount: None,
        shared_mount: None,
        config: c,
    }))
}

struct SshIssue {
    /// The mount, as soon as it may exist.
    mount: Option<String>,
    /// A shard's: the mount `vblast setup` made (not its own: never disabled by it).
    shared_mount: Option<String>,
    config: IssueConfig,
}

/// The mount name prefix of ssh-issue (apart from ssh-sign's, so that both share a run).
const ISSUE_PREFIX: &str = "vblast-sshi-";

impl SshIssue {
    /// The CA's and the role's bodies: vault-benchmark's defaults, then the file's keys.
    fn bodies(&self) -> (Value, Value) {
        let mut ca = json!({"generate_signing_key": true, "key_type": "rsa", "key_bits": 0});
        for (k, v) in &self.config.ca {
            ca[k] = v.clone();
        }
        let mut role = json!({"key_type": "ca", "allow_user_certificates": true});
        for (k, v) in &self.config.role {
            role[k] = v.clone();
        }
        if role.get("allowed_users").is_none() {
            role["allowed_users"] = json!(ROLE);
        }
        if role.get("default_user").is_none() && !self.config.issue.contains_key("valid_principals")
        {
            role["default_user"] = json!(ROLE);
        }
        (ca, role)
    }

    fn prepare(&mut self, client: &mut Client, naming: &Naming) -> Result<(), Cause> {
        let mount = naming.random_name(ISSUE_PREFIX);
        self.mount = Some(mount.clone());
        call(
            client,
            "POST",
            &format!("/v1/sys/mounts/{mount}"),
            Some(&json!({"type": "ssh", "description": "vblast load test (temporary)"})),
            &format!("enabling ssh at '{mount}'"),
        )
        .inspect_err(|_| self.mount = None)?;
        let (ca, role) = self.bodies();
        call(
            client,
            "POST",
            &format!("/v1/{mount}/config/ca"),
            Some(&ca),
            &format!("configuring the CA of '{mount}'"),
        )?;
        call(
            client,
            "POST",
            &format!("/v1/{mount}/roles/{ROLE}"),
            Some(&role),
            &format!("creating role '{ROLE}' in '{mount}'"),
        )?;
        Ok(())
    }
}

impl VaultOp for SshIssue {
    fn check(&self, ctx: &SetupCtx) -> Result<(), Error> {
        needs_setup(ctx, ISSUE.name)
    }

    fn setup(&mut self, ctx: &SetupCtx) -> Result<(), Error> {
        match shared::mode(ctx) {
            Mode::Join => {
                let mount = ctx.naming.random_name(ISSUE_PREFIX);
                shared::wait_readable(
                    ctx,
                    &format!("the shared ssh role '{ROLE}' in '{mount}'"),
                    &format!("/v1/{mount}/roles/{ROLE}"),
                )?;
                self.shared_mount = Some(mount);
                Ok(())
            }
            Mode::Remove => {
                self.mount = Some(ctx.naming.random_name(ISSUE_PREFIX));
                Ok(())
            }
            Mode::Own | Mode::Create => {
                setup_with(ctx, ISSUE.name, |client| self.prepare(client, ctx.naming))
            }
        }
    }

    fn operation(&self) -> Operation {
        let mount = self
            .mount
            .as_deref()
            .or(self.shared_mount.as_deref())
            .unwrap_or("unset");
        let (kind, bits) = issue_key(&self.config.key_type).unwrap_or(("rsa", 2048));
        let mut body = json!({ "key_type": kind, "key_bits": bits, "cert_type": "user" });
        for (k, v) in &self.config.issue {
            body[k] = v.clone();
        }
        let mut op = Operation::new(
            ISSUE.name,
            RequestSpec {
                method: "POST".into(),
                path: vec![Piece::lit(format!("/v1/{mount}/issue/{ROLE}"))],
                headers: vec![("Content-Type".into(), "application/json".into())],
                body: Some(vec![Piece::lit(body.to_string())]),
                captured_headers: vec![],
            },
        );
        op.expect = Some(Expect::present("data.signed_key"));
        op
    }

    fn created(&self) -> Vec<Created> {
        mount_created("ssh", self.mount.as_deref())
    }

    fn cleanup(&mut self, client: &mut Client, _stop: &Stop) -> Result<(), Cause> {
        disable_mount(client, "ssh", &mut self.mount)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_keys_are_in_openssh_form() {
        let k = client_public_key().unwrap();
        let b64 = k
            .strip_prefix("ssh-ed25519 ")
            .unwrap()
            .strip_suffix(" vblast")
            .unwrap();
        let blob = base64::engine::general_purpose::STANDARD
            .decode(b64)
            .unwrap();
        assert_eq!(blob.len(), 4 + 11 + 4 + 32);
        assert_eq!(&blob[4..15], b"ssh-ed25519");
        assert_ne!(client_public_key().unwrap(), k);
    }

    #[test]
    fn issue_keys_are_vaults_and_bad_ones_refused() {
        assert_eq!(issue_key("rsa-2048").unwrap(), ("rsa", 2048));
        assert_eq!(issue_key("ec-521").unwrap(), ("ec", 521));
        assert_eq!(issue_key("ed25519").unwrap(), ("ed25519", 0));
        for bad in ["rsa-1024", "ec-255", "dsa", "rsa", ""] {
            assert!(issue_key(bad).is_err(), "{bad}");
        }
    }
}
