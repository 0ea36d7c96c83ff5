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

use super::mounted::{self, Mounted, Mounts};
use super::vb::{Keys, Mapped};
use super::{
    Created, Fixture, OpInfo, OptionValues, SetupCtx, VaultBenchmark, VaultOp, VbType, needs_setup,
    setup_with,
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

/// vault-benchmark's ssh_sign test: its role and CA keys sent in their writes, its
/// `key_signing` keys in every request, its client key (RSA-4096 unless
/// `key_signing.public_key` gives one).
fn ssh_hcl(c: &mut Keys, out: &mut Mapped) -> Result<(), Cause> {
    let mut role = c.block("role")?;
    role.names(&["name"]);
    role.only("key_type", &[json!("ca")], "it signs with a CA")?;
    let unset: Vec<&str> = ["allowed_users", "default_user", "ttl"]
        .into_iter()
        .filter(|k| !role.has(k))
        .collect();
    take_into(&mut role, ROLE_KEYS, &mut out.config, "role");
    role.finish(&mut out.named)?;
    let mut ca = c.block("ca")?;
    take_into(&mut ca, CA_KEYS, &mut out.config, "ca");
    ca.finish(&mut out.named)?;
    let mut ks = c.block("key_signing")?;
    // vault-benchmark's client key: a fresh RSA-4096 one, unless the file gives one.
    out.config.insert("client_key".into(), json!(RSA_4096));
    if let Some(key) = ks.string("public_key")? {
        match public_key_text(&key) {
            Ok(k) => super::vb::set_in(&mut out.config, "sign", "public_key", json!(k)),
            Err(why) => {
                let m = format!("{}: {why}", ks.where_("public_key"));
                ks.refuse_with("public_key", m);
            }
        }
    }
    let principals = !ks.has("valid_principals");
    take_into(&mut ks, SIGN_KEYS, &mut out.config, "sign");
    if !unset.is_empty() || principals {
        let mut what: Vec<String> = unset
            .iter()
            .map(|k| match *k {
                "ttl" => "role.ttl = 10m".to_string(),
                k => format!("role.{k} = \"{ROLE}\""),
            })
            .collect();
        if principals {
            what.push(format!("key_signing.valid_principals = \"{ROLE}\""));
        }
        out.notes.push(format!(
            "test '{}': vblast sets {} where the file is silent (vault-benchmark sends none): a user certificate needs a principal its role allows",
            c.test,
            what.join(", ")
        ));
    }
    ks.finish(&mut out.named)
}

/// vault-benchmark's `role` keys of ssh_sign and ssh_issue (all but its name and key type),
/// sent in the role's write.
const ROLE_KEYS: &[&str] = &[
    "allowed_domains_template",
    "key",
    "admin_user",
    "key_bits",
    "install_script",
    "key_option_specs",
    "default_user",
    "default_user_template",
    "cidr_list",
    "exclude_cidr_list",
    "port",
    "allowed_users",
    "allowed_users_template",
    "allowed_domains",
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
];

/// vault-benchmark's `ca` keys (ssh_sign, ssh_issue), sent in the CA's write (`config/ca`).
const CA_KEYS: &[&str] = &[
    "private_key",
    "public_key",
    "generate_signing_key",
    "key_type",
    "key_bits",
];

/// vault-benchmark's `key_signing` keys besides `public_key` (ssh_sign), and its
/// `issued_cert` keys besides the key's type and size (ssh_issue), sent in every request.
const SIGN_KEYS: &[&str] = &[
    "ttl",
    "valid_principals",
    "cert_type",
    "key_id",
    "critical_options",
    "extensions",
];

/// Takes each of `keys` the block has into `cfg[into]`, as given.
fn take_into(k: &mut Keys, keys: &[&str], cfg: &mut Map<String, Value>, into: &str) {
    for key in keys {
        if let Some(v) = k.take(key) {
            super::vb::set_in(cfg, into, key, v);
        }
    }
}

/// `key_signing.public_key`: an OpenSSH public key line, or a file holding one (as
/// vault-benchmark reads it).
fn public_key_text(given: &str) -> Result<String, String> {
    let looks_like_key = |t: &str| {
        let t = t.trim();
        t.split_whitespace().count() >= 2
            && ["ssh-", "ecdsa-", "sk-"].iter().any(|p| t.starts_with(p))
    };
    if looks_like_key(given) {
        return Ok(given.trim().to_string());
    }
    let text = std::fs::read_to_string(given)
        .map_err(|e| format!("neither an OpenSSH public key nor a readable file ({e})"))?;
    if looks_like_key(&text) {
        Ok(text.trim().to_string())
    } else {
        Err(format!("{given} holds no OpenSSH public key"))
    }
}

/// The client key vault-benchmark signs (its default), and vblast's own (`--op ssh-sign`).
const RSA_4096: &str = "rsa-4096";
const ED25519: &str = "ed25519";

pub const SIGN: OpInfo = OpInfo {
    name: "ssh-sign",
    about: "POST <mount>/sign/vblast: a user certificate for a client key made at setup",
    request: "POST /v1/<mount>/sign/vblast",
    doc: "Setup enables the SSH secrets engine at a fresh mount (`vblast-ssh-xxxxxxxx`), has it generate a CA signing key, creates the role `vblast` for user certificates, and makes an Ed25519 client key pair (from a vault-benchmark file: RSA-4096, as vault-benchmark makes it, or the file's `key_signing.public_key`) whose public key every request has signed; the answer must hold the signed certificate. Cleanup disables the mount. Shards share the mount, the CA and the role; each makes its own client key pair.",
    options: &[],
    also: &[],
    config_from,
    build,
    vault_benchmark: VaultBenchmark::Types(&[VbType {
        name: "ssh_sign",
        config: ssh_hcl,
    }]),
    fixture: Fixture::Shared,
    bounds: &[],
};

/// No options of its own; vault-benchmark's `key_signing` keys, sent in every request
/// (`sign`), its `role` and `ca` keys, sent in their writes, and the client key made at
/// setup (`ed25519`, vblast's; `rsa-4096`, vault-benchmark's). Unknown keys refused.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SshConfig {
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    sign: Map<String, Value>,
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    role: Map<String, Value>,
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    ca: Map<String, Value>,
    #[serde(default = "ed25519")]
    client_key: String,
}

fn ed25519() -> String {
    ED25519.into()
}

fn config_from(_: &OptionValues) -> Value {
    serde_json::to_value(SshConfig {
        sign: Map::new(),
        role: Map::new(),
        ca: Map::new(),
        client_key: ed25519(),
    })
    .unwrap_or(Value::Null)
}

fn build(v: &Value) -> Result<Box<dyn VaultOp>, Cause> {
    let c =
        serde_json::from_value::<SshConfig>(v.clone()).map_err(|e| format!("bad config: {e}"))?;
    if c.client_key != ED25519 && c.client_key != RSA_4096 {
        return Err(Cause::from(format!(
            "client_key '{}' is not one of {ED25519}, {RSA_4096}",
            c.client_key
        )));
    }
    Ok(Box::new(Ssh::new(Request::Sign {
        config: c,
        public_key: String::new(),
    })))
}

/// The public key every request has signed: the file's, else a fresh one of the kind
/// the config names.
fn request_key(c: &SshConfig) -> Result<String, Cause> {
    match c.sign.get("public_key").and_then(Value::as_str) {
        Some(k) => Ok(k.to_string()),
        None if c.client_key == RSA_4096 => rsa_public_key(4096),
        None => client_public_key(),
    }
}

/// A fresh RSA public key of `bits` in OpenSSH's one-line form ("ssh-rsa AAAA... vblast"),
/// as vault-benchmark makes its client key.
pub fn rsa_public_key(bits: usize) -> Result<String, Cause> {
    use rsa::traits::PublicKeyParts;
    let key = rsa::RsaPrivateKey::new(&mut rsa::rand_core::OsRng, bits)
        .map_err(|e| format!("cannot generate an RSA-{bits} client key: {e}"))?;
    // RFC 4253: string "ssh-rsa", mpint e, mpint n (a leading zero where the top bit is set).
    let mut blob = Vec::new();
    let mut put = |part: &[u8], mpint: bool| {
        let pad = mpint && part.first().is_some_and(|b| b & 0x80 != 0);
        let len = part.len() + usize::from(pad);
        blob.extend_from_slice(&(len as u32).to_be_bytes());
        if pad {
            blob.push(0);
        }
        blob.extend_from_slice(part);
    };
    put(b"ssh-rsa", false);
    put(&key.e().to_bytes_be(), true);
    put(&key.n().to_bytes_be(), true);
    Ok(format!(
        "ssh-rsa {} vblast",
        base64::engine::general_purpose::STANDARD.encode(blob)
    ))
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

/// What ssh-sign and ssh-issue do differently, as data; the rest (the mount, its CA and
/// role, the shards, cleanup) is one path: `Ssh`.
enum Request {
    /// ssh-sign: every request has the server sign `public_key`, made at setup (or the
    /// file's); the config holds the file's `key_signing`, `role` and `ca` keys.
    Sign {
        config: SshConfig,
        public_key: String,
    },
    /// ssh-issue: every request has the server make a key pair and its certificate.
    Issue(IssueConfig),
}

/// The mount name prefix of ssh-sign, and ssh-issue's (apart, so that both share a run).
const SIGN_PREFIX: &str = "vblast-ssh-";
const ISSUE_PREFIX: &str = "vblast-sshi-";

/// `defaults` with each of `keys` set over them (the file's keys win).
fn over(mut defaults: Value, keys: &Map<String, Value>) -> Value {
    for (k, v) in keys {
        defaults[k] = v.clone();
    }
    defaults
}

impl Request {
    /// The operation's name, its mount's prefix, and its request's path under the mount
    /// (`sign/vblast`, `issue/vblast`).
    fn what(&self) -> (&'static str, &'static str, &'static str) {
        match self {
            Request::Sign { .. } => (SIGN.name, SIGN_PREFIX, "sign"),
            Request::Issue(_) => (ISSUE.name, ISSUE_PREFIX, "issue"),
        }
    }

    /// What this session needs before its requests (a shard's too): ssh-sign's client key.
    fn ready(&mut self) -> Result<(), Cause> {
        if let Request::Sign { config, public_key } = self {
            *public_key = request_key(config)?;
        }
        Ok(())
    }

    /// The CA's write (`config/ca`) and the role's: vblast's defaults (vault-benchmark's
    /// for ssh-issue), then the file's keys over them.
    fn ca_and_role(&self) -> (Value, Value) {
        match self {
            Request::Sign { config, .. } => {
                // The server generates the key unless the file gives one.
                let given = ["private_key", "public_key", "generate_signing_key"]
                    .iter()
                    .any(|k| config.ca.contains_key(*k));
                let ca = if given {
                    json!({})
                } else {
                    json!({"generate_signing_key": true})
                };
                let role = json!({
                    "key_type": "ca",
                    "allow_user_certificates": true,
                    "allowed_users": ROLE,
                    "default_user": ROLE,
                    "ttl": "10m",
                });
                (over(ca, &config.ca), over(role, &config.role))
            }
            Request::Issue(c) => {
                let ca = json!({"generate_signing_key": true, "key_type": "rsa", "key_bits": 0});
                let mut role = over(
                    json!({"key_type": "ca", "allow_user_certificates": true}),
                    &c.role,
                );
                if role.get("allowed_users").is_none() {
                    role["allowed_users"] = json!(ROLE);
                }
                if role.get("default_user").is_none() && !c.issue.contains_key("valid_principals") {
                    role["default_user"] = json!(ROLE);
                }
                (over(ca, &c.ca), role)
            }
        }
    }

    /// Every request's body: what vblast sends, then the file's request keys over it.
    fn body(&self) -> Value {
        match self {
            Request::Sign { config, public_key } => over(
                json!({ "public_key": public_key, "valid_principals": ROLE }),
                &config.sign,
            ),
            Request::Issue(c) => {
                let (kind, bits) = issue_key(&c.key_type).unwrap_or(("rsa", 2048));
                over(
                    json!({ "key_type": kind, "key_bits": bits, "cert_type": "user" }),
                    &c.issue,
                )
            }
        }
    }
}

/// ssh-sign and ssh-issue: the SSH engine at a fresh mount, its CA and the role `vblast`
/// made at setup (a shard joins the mount `vblast setup` made), each request `request`'s,
/// and the mount disabled at cleanup.
struct Ssh {
    mounted: Mounted,
    /// A shard's: the mount `vblast setup` made (not its own: never disabled by it).
    shared_mount: Option<String>,
    request: Request,
}

impl Ssh {
    fn new(request: Request) -> Ssh {
        Ssh {
            mounted: Mounted::new("ssh", "ssh", "ssh"),
            shared_mount: None,
            request,
        }
    }

    fn prepare(&mut self, client: &mut Client, naming: &Naming) -> Result<(), Cause> {
        self.request.ready()?;
        let (_, prefix, _) = self.request.what();
        let mount = naming.random_name(prefix);
        let (ca, role) = self.request.ca_and_role();
        let what = format!("configuring the CA of '{mount}'");
        self.mounted.with_ca_and_role(
            client,
            &mount,
            None,
            ("config/ca", &ca, &what),
            (ROLE, &role),
        )
    }
}

impl VaultOp for Ssh {
    fn check(&self, ctx: &SetupCtx) -> Result<(), Error> {
        needs_setup(ctx, self.request.what().0)
    }

    fn setup(&mut self, ctx: &SetupCtx) -> Result<(), Error> {
        let (name, prefix, _) = self.request.what();
        match mounted::shared(ctx, &[prefix], "ssh", ROLE)? {
            Mounts::Joined(mount) => {
                // A shard's own client key pair, made here.
                self.request.ready().map_err(Error::setup)?;
                self.shared_mount = Some(mount);
            }
            // `vblast cleanup`: the mount setup made, to disable.
            Mounts::Remove(mut names) => self.mounted.mount = names.pop(),
            Mounts::Make => setup_with(ctx, name, |client| self.prepare(client, ctx.naming))?,
        }
        Ok(())
    }

    fn operation(&self) -> Operation {
        let (name, _, verb) = self.request.what();
        let mount = self.mounted.mount_or(self.shared_mount.as_deref());
        let mut op = Operation::new(
            name,
            RequestSpec {
                method: "POST".into(),
                path: vec![Piece::lit(format!("/v1/{mount}/{verb}/{ROLE}"))],
                headers: vec![("Content-Type".into(), "application/json".into())],
                body: Some(vec![Piece::lit(self.request.body().to_string())]),
                captured_headers: vec![],
            },
        );
        op.expect = Some(Expect::present("data.signed_key"));
        op
    }

    fn created(&self) -> Vec<Created> {
        self.mounted.created()
    }

    fn cleanup(&mut self, client: &mut Client, _stop: &Stop) -> Result<(), Cause> {
        self.mounted.disable(client)
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

/// vault-benchmark's `ssh_issue`: its CA (the server generates an RSA key, 4096 bits as
/// `key_bits = 0` gives), its role (`ca` type, user certificates) and its request (an
/// RSA-2048 key, a user certificate), each block's keys sent as given. OpenBao refuses a
/// certificate with no principal, which vault-benchmark's defaults ask for: unless the file
/// names them, the role allows and defaults to the user `vblast` (said in a note).
fn ssh_issue_hcl(c: &mut Keys, out: &mut Mapped) -> Result<(), Cause> {
    let mut ca = c.block("ca")?;
    take_into(&mut ca, CA_KEYS, &mut out.config, "ca");
    ca.finish(&mut out.named)?;
    let mut role = c.block("role")?;
    role.names(&["name"]);
    // ssh_sign's role keys, and the role's `key_type` as given.
    take_into(&mut role, ROLE_KEYS, &mut out.config, "role");
    take_into(&mut role, &["key_type"], &mut out.config, "role");
    role.finish(&mut out.named)?;
    let mut cert = c.block("issued_cert")?;
    cert.names(&["name"]);
    if let Some(k) = super::vb::pki_key(&mut cert)? {
        out.config.insert("key_type".into(), json!(k));
    }
    // The same request keys as ssh_sign's `key_signing`.
    take_into(&mut cert, SIGN_KEYS, &mut out.config, "issue");
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
    bounds: &[],
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
    Ok(Box::new(Ssh::new(Request::Issue(c))))
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
