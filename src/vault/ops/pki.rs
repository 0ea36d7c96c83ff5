//! The PKI family: `pki-issue` and `pki-sign` (below: a root and an intermediate CA made
//! at setup, CSRs made by vblast signed by the intermediate). Setup enables PKI at a fresh mount (`vblast-pki-xxxxxxxx`),
//! generates a root CA in it and a role `vblast` for `*.vblast.test` with keys of
//! `--key-type` (rsa-2048, ec-256, ed25519); each request issues a certificate with a new
//! key, and the answer must hold it. Cleanup disables the mount, and with it every
//! certificate it stored.
//!
//! Shared by the shards of a run (src/session/fixtures.rs): `vblast setup` makes the mounts, CAs
//! and role under names derived from the run id; a shard waits for the role (pki-sign:
//! after making its own CSRs and their keys locally); `vblast cleanup` disables the mounts.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::mounted::{self, Mounted, Mounts};
use super::vb::{Keys, Mapped, pki_key, set_in};
use super::{
    Bound, ConfigBound, Created, Fixture, OpInfo, OptionKind, OptionSpec, OptionValues, SetupCtx,
    VaultBenchmark, VaultOp, VbType, fresh_name, mount_created, needs_setup, setup_with,
};
use crate::capture::Expect;
use crate::error::{Cause, Error};
use crate::signals::Stop;
use crate::template::{Piece, RequestSpec};
use crate::vault::client::Client;
use crate::vault::fixture::Naming;
use crate::workload::Operation;

/// The role vblast creates.
pub const ROLE: &str = "vblast";
/// Key types of issued certificates: (name, Vault's key_type, key_bits).
const KEY_TYPES: &[(&str, &str, u32)] = &[
    ("rsa-2048", "rsa", 2048),
    ("rsa-3072", "rsa", 3072),
    ("rsa-4096", "rsa", 4096),
    ("ec-256", "ec", 256),
    ("ec-384", "ec", 384),
    ("ec-521", "ec", 521),
    ("ed25519", "ed25519", 0),
];

/// The CAs' `key_bits` OpenBao accepts for each `key_type` (0: its default, RSA 2048 or
/// P-256), as a dev server answers `root/generate/internal`; it ignores the bits of an
/// ed25519 key, so that type is not listed.
const CA_KEY_BITS: &[(&str, &[u64])] = &[
    ("rsa", &[0, 2048, 3072, 4096, 8192]),
    ("ec", &[0, 224, 256, 384, 521]),
];

/// A CA's `key_bits` at `key` in the config (`file_key` in a file, when not the same),
/// held to `CA_KEY_BITS` by the CA's `key_type`.
const fn ca_key_bits(key: &'static str, file_key: &'static str) -> ConfigBound {
    ConfigBound {
        key,
        file_key,
        bound: Bound::OneOf {
            by: "key_type",
            values: CA_KEY_BITS,
        },
    }
}

/// The most CSRs pki-sign makes at setup: each with a key of its own made in this process
/// (an RSA-4096 key takes up to a second), none written to the server.
const CSRS_MAX: usize = 10_000;

/// Every PKI mount's max lease TTL (vault-benchmark's: ten years).
const MOUNT_MAX_TTL: &str = "87600h";

const DOC: &str = "Setup enables PKI at a fresh mount (`vblast-pki-xxxxxxxx`), generates a root CA in it and a role `vblast` for `*.vblast.test` with keys of `--key-type`; each pki-issue request issues a certificate with a new key, and the answer must hold it. pki-sign makes a root and an intermediate CA at setup and has the intermediate sign CSRs vblast made. Cleanup disables the mounts, and with them every certificate they stored. Shards share the mounts, CAs and role.";

const NO_STORE: OptionSpec = OptionSpec {
    flag: "no-store",
    value_name: "",
    kind: OptionKind::Switch,
    default: None,
    help: "pki-issue, pki-sign: certificates are not stored on the server (no_store)",
};

const KEY_TYPE: OptionSpec = OptionSpec {
    flag: "key-type",
    value_name: "TYPE",
    kind: OptionKind::Text,
    default: None,
    help: "key of each certificate: ec-256 (default), ec-384, rsa-2048, rsa-3072, rsa-4096, ed25519",
};

/// vault-benchmark's PKI tests, with its defaults: a root CA and an intermediate signed
/// by it, both RSA-2048 unless the file says (the server's default key, as
/// vault-benchmark leaves `key_type` out), `example.com` and `example.com Intermediate
/// Authority`; a role allowing any name (`allow_any_name`, `allow_subdomains`), RSA-2048
/// keys, 5m TTL; pki_issue issues `test.vault.benchmark`, pki_sign signs an RSA-2048 CSR of
/// `test.vault.benchmark` (or `sign.csr`, PEM text or a file). The CA, role and request
/// keys vault-benchmark sends to the server as they are are sent as they are.
fn pki_hcl(sign: bool, c: &mut Keys, out: &mut Mapped) -> Result<(), Cause> {
    c.names(&["setup_delay"]);
    let mut chain = serde_json::Map::new();
    for (block, cn) in [
        ("root_ca", "example.com"),
        ("intermediate_csr", "example.com Intermediate Authority"),
        ("intermediate_ca", ""),
    ] {
        let mut b = c.block(block)?;
        b.only(
            "type",
            &[json!("internal")],
            "its CA keys are made by the server",
        )?;
        b.names(&["csr"]);
        let mut ca = serde_json::Map::new();
        if block != "intermediate_ca" {
            ca.insert("common_name".into(), json!(cn));
            let (kind, bits) = vb_key(&mut b)?;
            ca.insert("key_type".into(), json!(kind));
            ca.insert("key_bits".into(), json!(bits));
        }
        if let Some(ttl) = b.string("ttl")? {
            ca.insert("ttl".into(), json!(ttl));
        }
        let params = pass_through(&mut b);
        if let Some(cn) = params.get("common_name").and_then(Value::as_str) {
            ca.insert("common_name".into(), json!(cn));
        }
        let mut params = params;
        params.remove("common_name");
        ca.insert("params".into(), Value::Object(params));
        b.finish(&mut out.named)?;
        chain.insert(block.into(), Value::Object(ca));
    }
    let mut role = c.block("role")?;
    role.names(&["name"]);
    let key = pki_key(&mut role)?.unwrap_or_else(|| "rsa-2048".into());
    let ttl = role.string("ttl")?.unwrap_or_else(|| "5m".into());
    let no_store = role.boolean("no_store")?.unwrap_or(false);
    let generate_lease = role.boolean("generate_lease")?.unwrap_or(false);
    let mut role_params = serde_json::Map::new();
    role_params.insert("allow_any_name".into(), json!(true));
    role_params.insert("allow_subdomains".into(), json!(true));
    role_params.extend(pass_through(&mut role));
    role.finish(&mut out.named)?;
    let mut req = c.block(if sign { "sign" } else { "issue" })?;
    req.names(&["name"]);
    let csr = if sign { sign_csr(&mut req)? } else { None };
    let mut req_params = serde_json::Map::new();
    if !sign {
        req_params.insert("common_name".into(), json!("test.vault.benchmark"));
    }
    req_params.extend(pass_through(&mut req));
    req.finish(&mut out.named)?;
    let cfg = &mut out.config;
    if sign {
        for (k, v) in chain {
            cfg.insert(k, v);
        }
        set_in(cfg, "role", "key_type", json!(key));
        set_in(cfg, "role", "ttl", json!(ttl));
        set_in(cfg, "role", "no_store", json!(no_store));
        set_in(cfg, "role", "generate_lease", json!(generate_lease));
        set_in(cfg, "role", "params", Value::Object(role_params));
        cfg.insert("csrs".into(), json!(1));
        cfg.insert("common_name".into(), json!("test.vault.benchmark"));
        if let Some(csr) = csr {
            cfg.insert("csr".into(), json!(csr));
        }
        cfg.insert("params".into(), Value::Object(req_params));
    } else {
        cfg.insert("key_type".into(), json!(key));
        cfg.insert("ttl".into(), json!(ttl));
        cfg.insert("no_store".into(), json!(no_store));
        cfg.insert("generate_lease".into(), json!(generate_lease));
        cfg.insert("chain".into(), Value::Object(chain));
        cfg.insert("role_params".into(), Value::Object(role_params));
        cfg.insert("params".into(), Value::Object(req_params));
    }
    Ok(())
}

/// A CA's key in Vault's names: vault-benchmark leaves it to the server, RSA-2048.
fn vb_key(b: &mut Keys) -> Result<(String, u64), Cause> {
    let kind = b.string("key_type")?.unwrap_or_else(|| "rsa".into());
    let bits = b.number("key_bits")?.unwrap_or(0);
    let bits = match (kind.as_str(), bits) {
        ("rsa", 0) => 2048,
        ("ec", 0) => 256,
        (_, b) => b,
    };
    Ok((kind, bits))
}

/// The keys left in a block, which vault-benchmark sends to the server as they are: sent
/// as they are (the server checks them).
fn pass_through(b: &mut Keys) -> serde_json::Map<String, Value> {
    let keys: Vec<String> = b.left().cloned().collect();
    keys.into_iter()
        .filter_map(|k| b.take(&k).map(|v| (k, v)))
        .collect()
}

/// `sign.csr`: PEM text, or the path of a file holding it (as vault-benchmark reads it).
fn sign_csr(req: &mut Keys) -> Result<Option<String>, Cause> {
    let Some(csr) = req.string("csr")? else {
        return Ok(None);
    };
    let pem = if csr.trim_start().starts_with("-----BEGIN") {
        csr
    } else {
        match std::fs::read_to_string(&csr) {
            Ok(text) => text,
            Err(e) => {
                let m = format!(
                    "{} = {csr:?} is neither a PEM CSR nor a readable file: {}",
                    req.where_("csr"),
                    crate::error::io_text(&e)
                );
                req.refuse_with("csr", m);
                return Ok(None);
            }
        }
    };
    if rustls_pemfile::csr(&mut pem.as_bytes())
        .ok()
        .flatten()
        .is_none()
    {
        let m = format!("{} holds no PEM certificate request", req.where_("csr"));
        req.refuse_with("csr", m);
        return Ok(None);
    }
    Ok(Some(pem))
}

fn issue_hcl(c: &mut Keys, out: &mut Mapped) -> Result<(), Cause> {
    pki_hcl(false, c, out)
}

fn sign_hcl(c: &mut Keys, out: &mut Mapped) -> Result<(), Cause> {
    pki_hcl(true, c, out)
}

pub const ISSUE: OpInfo = OpInfo {
    name: "pki-issue",
    about: "POST <mount>/issue/vblast: a certificate and key for a *.vblast.test name",
    request: "POST /v1/<mount>/issue/vblast",
    doc: DOC,
    options: &[KEY_TYPE, NO_STORE],
    also: &[],
    config_from,
    build,
    vault_benchmark: VaultBenchmark::Types(&[VbType {
        name: "pki_issue",
        config: issue_hcl,
    }]),
    fixture: Fixture::Shared,
    bounds: &[
        ca_key_bits("chain.root_ca.key_bits", "root_ca.key_bits"),
        ca_key_bits(
            "chain.intermediate_csr.key_bits",
            "intermediate_csr.key_bits",
        ),
    ],
};

/// The family's config (vault-benchmark's pki role `key_type`/`key_bits`, `no_store`).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PkiConfig {
    pub key_type: String,
    /// Certificates are not stored on the server (faster; no revocation list entries).
    #[serde(default)]
    pub no_store: bool,
    /// TTL of each certificate.
    pub ttl: String,
    /// Each certificate gets a lease (vault-benchmark's `role.generate_lease`).
    #[serde(default)]
    pub generate_lease: bool,
    /// vault-benchmark's chain: issue from an intermediate signed by a root, each of the
    /// configured key (None: vblast's own, one EC P-256 root).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chain: Option<PkiChain>,
    /// The role's other settings, sent as they are (vault-benchmark's role keys; empty:
    /// vblast's role for `*.vblast.test`).
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub role_params: serde_json::Map<String, Value>,
    /// The issue request's body (empty: a fresh `hXXXXXXXX.vblast.test` name each time).
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub params: serde_json::Map<String, Value>,
}

/// A root CA and an intermediate signed by it.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PkiChain {
    pub root_ca: PkiCaConfig,
    pub intermediate_csr: PkiCaConfig,
    #[serde(default)]
    pub intermediate_ca: PkiIntCaConfig,
}

fn config_from(f: &OptionValues) -> Value {
    serde_json::to_value(PkiConfig {
        key_type: f.text("key-type").unwrap_or_else(|| "ec-256".into()),
        no_store: f.switch("no-store"),
        ttl: "1h".into(),
        generate_lease: false,
        chain: None,
        role_params: serde_json::Map::new(),
        params: serde_json::Map::new(),
    })
    .unwrap_or(Value::Null)
}

fn build(v: &Value) -> Result<Box<dyn VaultOp>, Cause> {
    let config: PkiConfig =
        serde_json::from_value(v.clone()).map_err(|e| format!("bad config: {e}"))?;
    if !KEY_TYPES.iter().any(|k| k.0 == config.key_type) {
        let names: Vec<&str> = KEY_TYPES.iter().map(|k| k.0).collect();
        return Err(Cause::from(format!(
            "key type '{}' is not one of {}",
            config.key_type,
            names.join(", ")
        )));
    }
    crate::config::units::parse_duration(&config.ttl)
        .map_err(|e| format!("certificate TTL '{}' is not a duration: {e}", config.ttl))?;
    if let Some(chain) = &config.chain {
        check_chain(&chain.root_ca, &chain.intermediate_ca)?;
    }
    Ok(Box::new(Pki {
        config,
        mounts: PkiMounts::new(),
    }))
}

struct Pki {
    config: PkiConfig,
    mounts: PkiMounts,
}

/// The start of the names of the root CA's mount and the intermediate's.
const ROOT_PREFIX: &str = "vblast-pki-";
const INT_PREFIX: &str = "vblast-pki-int-";

/// The mounts of pki-issue and pki-sign: the root CA's, and with a chain the
/// intermediate's, which holds the role; a shard's, the one `vblast setup` made that
/// issues.
struct PkiMounts {
    root: Mounted,
    int: Mounted,
    /// A shard's: the issuing mount `vblast setup` made (not its own: never disabled by it).
    shared: Option<String>,
}

impl PkiMounts {
    fn new() -> PkiMounts {
        let pki = || Mounted::new("pki", "pki", "pki");
        PkiMounts {
            root: pki(),
            int: pki(),
            shared: None,
        }
    }

    /// This session's part in the mounts of `prefixes` (setup's order; the role `role` in
    /// the last): a shard keeps the last, `vblast cleanup` names them all to disable.
    /// True when this session makes its own.
    fn share(&mut self, ctx: &SetupCtx, prefixes: &[&str], role: &str) -> Result<bool, Error> {
        match mounted::shared(ctx, prefixes, "pki", role)? {
            Mounts::Joined(mount) => self.shared = Some(mount),
            Mounts::Remove(names) => {
                let mut names = names.into_iter();
                self.root.mount = names.next();
                self.int.mount = names.next();
            }
            Mounts::Make => return Ok(true),
        }
        Ok(false)
    }

    /// The mount the requests go to: the intermediate's when there is one, else the root's.
    fn issuing(&self) -> &str {
        let own = if self.int.mount.is_some() {
            &self.int
        } else {
            &self.root
        };
        own.mount_or(self.shared.as_deref())
    }

    /// The mounts made, the root's as `root` names it.
    fn created(&self, root: &str) -> Vec<Created> {
        let mut out = mount_created("pki (intermediate CA)", self.int.mount.as_deref());
        out.extend(mount_created(root, self.root.mount.as_deref()));
        out
    }

    /// Disables the intermediate's mount, then the root's.
    fn disable(&mut self, client: &mut Client) -> Result<(), Cause> {
        self.int.disable(client)?;
        self.root.disable(client)
    }
}

/// A PKI mount's settings: max lease TTL ten years, as vault-benchmark's.
fn pki_mount_config() -> Option<Value> {
    Some(json!({"config": {"max_lease_ttl": MOUNT_MAX_TTL}}))
}

impl Pki {
    fn prepare(&mut self, client: &mut Client, naming: &Naming) -> Result<(), Cause> {
        let mount = naming.random_name(ROOT_PREFIX);
        let c = &self.config;
        let (kind, bits) = vault_key(&c.key_type)?;
        let role = role_body(
            kind,
            bits,
            &c.ttl,
            c.no_store,
            c.generate_lease,
            &c.role_params,
        );
        if let Some(chain) = self.config.chain.clone() {
            let int = naming.random_name(INT_PREFIX);
            make_chain(
                client,
                [&mount, &int],
                &chain,
                [&mut self.mounts.root, &mut self.mounts.int],
            )?;
            return self.mounts.int.write_role(client, ROLE, &role);
        }
        let root = json!({"common_name": "vblast test root", "ttl": "720h", "key_type": "ec", "key_bits": 256});
        let what = format!("generating the root CA of '{mount}'");
        self.mounts.root.with_ca_and_role(
            client,
            &mount,
            pki_mount_config(),
            ("root/generate/internal", &root, &what),
            (ROLE, &role),
        )
    }
}

/// Vault's key_type and key_bits of vblast's key name.
fn vault_key(name: &str) -> Result<(&'static str, u32), Cause> {
    KEY_TYPES
        .iter()
        .find(|k| k.0 == name)
        .map(|&(_, kind, bits)| (kind, bits))
        .ok_or_else(|| Cause::from(format!("unknown key type '{name}'")))
}

/// A role's body: vblast's (`*.vblast.test`, max TTL = TTL) when `params` is empty, else
/// vault-benchmark's (its settings, then the file's role keys as they are).
fn role_body(
    kind: &str,
    bits: u32,
    ttl: &str,
    no_store: bool,
    generate_lease: bool,
    params: &serde_json::Map<String, Value>,
) -> Value {
    let mut role = if params.is_empty() {
        json!({
            "allowed_domains": "vblast.test",
            "allow_subdomains": true,
            "max_ttl": ttl,
        })
    } else {
        Value::Object(params.clone())
    };
    role["key_type"] = json!(kind);
    role["ttl"] = json!(ttl);
    role["no_store"] = json!(no_store);
    if generate_lease {
        role["generate_lease"] = json!(true);
    }
    if bits > 0 {
        role["key_bits"] = json!(bits);
    }
    role
}

/// The TTLs of a chain, checked (empty: the server's default).
fn check_chain(root: &PkiCaConfig, int: &PkiIntCaConfig) -> Result<(), Cause> {
    for (what, ttl) in [("root CA", &root.ttl), ("intermediate CA", &int.ttl)] {
        if !ttl.is_empty() {
            crate::config::units::parse_duration(ttl)
                .map_err(|e| format!("{what} TTL '{ttl}' is not a duration: {e}"))?;
        }
    }
    Ok(())
}

/// A CA request's body: its name and key, its TTL if given, then the file's other keys.
fn ca_body(ca: &PkiCaConfig) -> Value {
    let mut body = Value::Object(ca.params.clone());
    body["common_name"] = json!(ca.common_name);
    body["key_type"] = json!(ca.key_type);
    if ca.key_bits > 0 {
        body["key_bits"] = json!(ca.key_bits);
    }
    if !ca.ttl.is_empty() {
        body["ttl"] = json!(ca.ttl);
    }
    body
}

/// The chain: PKI at `root` with a root CA, PKI at `int` with an intermediate CA signed by
/// it. Each slot holds its mount's name as soon as the mount may exist.
fn make_chain(
    client: &mut Client,
    [root, int]: [&str; 2],
    chain: &PkiChain,
    [root_m, int_m]: [&mut Mounted; 2],
) -> Result<(), Cause> {
    root_m.enable(client, root, pki_mount_config())?;
    root_m.write(
        client,
        "root/generate/internal",
        &ca_body(&chain.root_ca),
        &format!("generating the root CA of '{root}'"),
    )?;
    int_m.enable(client, int, pki_mount_config())?;
    let what = format!("generating the intermediate CA's CSR in '{int}'");
    let mut csr_body = ca_body(&chain.intermediate_csr);
    if let Some(m) = csr_body.as_object_mut() {
        m.remove("ttl");
    }
    let v = int_m.write(client, "intermediate/generate/internal", &csr_body, &what)?;
    let csr = super::json_str(&v, "data.csr", &what)?;
    let what = format!("signing the intermediate CA with the root of '{root}'");
    let mut sign = Value::Object(chain.intermediate_ca.params.clone());
    sign["csr"] = json!(csr);
    sign["common_name"] = json!(chain.intermediate_csr.common_name);
    sign["format"] = json!("pem_bundle");
    if !chain.intermediate_ca.ttl.is_empty() {
        sign["ttl"] = json!(chain.intermediate_ca.ttl);
    }
    let v = root_m.write(client, "root/sign-intermediate", &sign, &what)?;
    let cert = super::json_str(&v, "data.certificate", &what)?;
    let issuing = super::json_str(&v, "data.issuing_ca", &what)?;
    // The intermediate and its root, as vault-benchmark installs them.
    int_m
        .write(
            client,
            "intermediate/set-signed",
            &json!({ "certificate": format!("{cert}\n{issuing}") }),
            &format!("installing the intermediate CA in '{int}'"),
        )
        .map(drop)
}

impl VaultOp for Pki {
    fn check(&self, ctx: &SetupCtx) -> Result<(), Error> {
        needs_setup(ctx, ISSUE.name)
    }

    fn setup(&mut self, ctx: &SetupCtx) -> Result<(), Error> {
        // With a chain, the role is in the intermediate's mount, named after the root's.
        let prefixes: &[&str] = if self.config.chain.is_some() {
            &[ROOT_PREFIX, INT_PREFIX]
        } else {
            &[ROOT_PREFIX]
        };
        if self.mounts.share(ctx, prefixes, ROLE)? {
            setup_with(ctx, ISSUE.name, |client| self.prepare(client, ctx.naming))?;
        }
        Ok(())
    }

    fn operation(&self) -> Operation {
        let mount = self.mounts.issuing();
        let body = if self.config.params.is_empty() {
            vec![
                Piece::lit(r#"{"common_name":"h"#),
                Piece::Hex { width: 8 },
                Piece::lit(r#".vblast.test"}"#),
            ]
        } else {
            // vault-benchmark's: the same request every time.
            vec![Piece::lit(
                Value::Object(self.config.params.clone()).to_string(),
            )]
        };
        let mut op = Operation::new(
            ISSUE.name,
            RequestSpec {
                method: "POST".into(),
                path: vec![Piece::lit(format!("/v1/{mount}/issue/{ROLE}"))],
                headers: vec![("Content-Type".into(), "application/json".into())],
                body: Some(body),
                captured_headers: vec![],
            },
        );
        op.expect = Some(Expect::present("data.certificate"));
        op
    }

    fn created(&self) -> Vec<Created> {
        self.mounts.created("pki")
    }

    fn cleanup(&mut self, client: &mut Client, _stop: &Stop) -> Result<(), Cause> {
        self.mounts.disable(client)
    }
}

// ---------------------------------------------------------------------------------------
// pki-sign
// ---------------------------------------------------------------------------------------

pub const SIGN: OpInfo = OpInfo {
    name: "pki-sign",
    about: "POST <int-mount>/sign/vblast: a CSR made at setup, signed by an intermediate CA",
    request: "POST /v1/<int-mount>/sign/vblast",
    doc: DOC,
    options: &[
        OptionSpec {
            help: "key of the CSRs and the role: ec-256 (default), ec-384, rsa-2048, rsa-3072, rsa-4096, ed25519",
            ..KEY_TYPE
        },
        OptionSpec {
            help: "certificates are not stored on the server (vault-benchmark's not-stored examples)",
            ..NO_STORE
        },
    ],
    also: &[],
    config_from: sign_config_from,
    build: build_sign,
    vault_benchmark: VaultBenchmark::Types(&[VbType {
        name: "pki_sign",
        config: sign_hcl,
    }]),
    fixture: Fixture::Shared,
    bounds: &[
        ca_key_bits("root_ca.key_bits", ""),
        ca_key_bits("intermediate_csr.key_bits", ""),
        // No file sets it (vault-benchmark signs one CSR); held to what build takes.
        ConfigBound {
            key: "csrs",
            file_key: "",
            bound: Bound::Range {
                min: 1,
                max: CSRS_MAX as u64,
            },
        },
    ],
};

/// pki-sign's config: vault-benchmark's `pki_sign` blocks, with the keys vblast uses.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PkiSignConfig {
    #[serde(default)]
    pub root_ca: PkiCaConfig,
    #[serde(default = "default_intermediate_csr")]
    pub intermediate_csr: PkiCaConfig,
    #[serde(default)]
    pub intermediate_ca: PkiIntCaConfig,
    pub role: PkiSignRoleConfig,
    /// CSRs made at setup, sent in turn.
    #[serde(default = "default_csrs")]
    pub csrs: usize,
    /// The CSRs' common name (None: a fresh `hXXXXXXXX.vblast.test` each).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub common_name: Option<String>,
    /// A CSR given (vault-benchmark's `sign.csr`, PEM): the one sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub csr: Option<String>,
    /// The sign request's other fields, sent as they are.
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub params: serde_json::Map<String, Value>,
}

/// `root_ca` and `intermediate_csr`: the CA's name and key (Vault's key_type/key_bits).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PkiCaConfig {
    pub common_name: String,
    pub key_type: String,
    #[serde(default)]
    pub key_bits: u32,
    /// Root only: its lifetime (empty: the server's default).
    #[serde(default)]
    pub ttl: String,
    /// The request's other fields, sent as they are (vault-benchmark's CA keys).
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub params: serde_json::Map<String, Value>,
}

impl Default for PkiCaConfig {
    fn default() -> Self {
        PkiCaConfig {
            common_name: "vblast test root".into(),
            key_type: "ec".into(),
            key_bits: 256,
            ttl: default_root_ttl(),
            params: serde_json::Map::new(),
        }
    }
}

/// `intermediate_ca`: how the root signs the intermediate.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PkiIntCaConfig {
    /// Empty: the server's default.
    #[serde(default)]
    pub ttl: String,
    /// The sign-intermediate request's other fields, sent as they are.
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub params: serde_json::Map<String, Value>,
}

impl Default for PkiIntCaConfig {
    fn default() -> Self {
        PkiIntCaConfig {
            ttl: "360h".into(),
            params: serde_json::Map::new(),
        }
    }
}

/// `role`: the issuing role; `key_type` is vblast's name (ec-256, rsa-2048, ed25519),
/// which also sets the CSRs' keys.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PkiSignRoleConfig {
    #[serde(default = "default_sign_role")]
    pub name: String,
    pub key_type: String,
    pub ttl: String,
    #[serde(default)]
    pub no_store: bool,
    #[serde(default)]
    pub generate_lease: bool,
    /// The role's other settings, sent as they are (empty: vblast's `*.vblast.test` role).
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub params: serde_json::Map<String, Value>,
}

fn default_root_ttl() -> String {
    "720h".into()
}
fn default_intermediate_csr() -> PkiCaConfig {
    PkiCaConfig {
        common_name: "vblast test intermediate".into(),
        ..PkiCaConfig::default()
    }
}
fn default_csrs() -> usize {
    16
}
fn default_sign_role() -> String {
    ROLE.into()
}

fn sign_config_from(f: &OptionValues) -> Value {
    serde_json::to_value(PkiSignConfig {
        root_ca: PkiCaConfig::default(),
        intermediate_csr: default_intermediate_csr(),
        intermediate_ca: PkiIntCaConfig::default(),
        role: PkiSignRoleConfig {
            name: ROLE.into(),
            key_type: f.text("key-type").unwrap_or_else(|| "ec-256".into()),
            ttl: "1h".into(),
            no_store: f.switch("no-store"),
            generate_lease: false,
            params: serde_json::Map::new(),
        },
        csrs: default_csrs(),
        common_name: None,
        csr: None,
        params: serde_json::Map::new(),
    })
    .unwrap_or(Value::Null)
}

fn build_sign(v: &Value) -> Result<Box<dyn VaultOp>, Cause> {
    let config: PkiSignConfig =
        serde_json::from_value(v.clone()).map_err(|e| format!("bad config: {e}"))?;
    if !KEY_TYPES.iter().any(|k| k.0 == config.role.key_type) {
        let names: Vec<&str> = KEY_TYPES.iter().map(|k| k.0).collect();
        return Err(Cause::from(format!(
            "key type '{}' is not one of {}",
            config.role.key_type,
            names.join(", ")
        )));
    }
    crate::config::units::parse_duration(&config.role.ttl).map_err(|e| {
        format!(
            "certificate TTL '{}' is not a duration: {e}",
            config.role.ttl
        )
    })?;
    check_chain(&config.root_ca, &config.intermediate_ca)?;
    if config.role.key_type == "ec-521" && config.csr.is_none() {
        return Err(Cause::from(
            "vblast cannot make P-521 CSRs itself (its crypto library has no P-521): give one as sign.csr, or choose ec-384",
        ));
    }
    if config.csrs == 0 || config.csrs > CSRS_MAX {
        return Err(Cause::from(format!(
            "{} CSRs is not between 1 and {CSRS_MAX}",
            config.csrs
        )));
    }
    Ok(Box::new(PkiSign {
        config,
        mounts: PkiMounts::new(),
        bodies: Vec::new(),
    }))
}

struct PkiSign {
    config: PkiSignConfig,
    /// The root CA's mount and the intermediate's.
    mounts: PkiMounts,
    /// The sign requests' bodies, padded to one length.
    bodies: Vec<Vec<u8>>,
}

/// A CSR (PEM) for `name` with a fresh key of `kind`/`bits` (Vault's names). ECDSA and
/// Ed25519 keys come from ring through rcgen; ring cannot make RSA keys, so those come from
/// the `rsa` crate and are handed to rcgen (and ring) as PKCS#8 to sign the request.
fn make_csr(kind: &str, bits: u32, name: &str) -> Result<String, Cause> {
    use rcgen::{CertificateParams, DnType, KeyPair};
    let fail = |e: &dyn std::fmt::Display| format!("making a {kind} CSR failed: {e}");
    let key = match (kind, bits) {
        ("ec", 256) => KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256),
        ("ec", 384) => KeyPair::generate_for(&rcgen::PKCS_ECDSA_P384_SHA384),
        ("ed25519", _) => KeyPair::generate_for(&rcgen::PKCS_ED25519),
        ("rsa", bits) => {
            use rsa::pkcs8::EncodePrivateKey;
            let k = rsa::RsaPrivateKey::new(&mut rsa::rand_core::OsRng, bits as usize)
                .map_err(|e| fail(&e))?;
            let der = k.to_pkcs8_der().map_err(|e| fail(&e))?;
            KeyPair::from_pkcs8_der_and_sign_algo(
                &rustls::pki_types::PrivatePkcs8KeyDer::from(der.as_bytes()),
                &rcgen::PKCS_RSA_SHA256,
            )
        }
        _ => return Err(Cause::from(format!("no CSR key of type {kind} {bits}"))),
    }
    .map_err(|e| fail(&e))?;
    let mut params = CertificateParams::new(vec![name.to_string()]).map_err(|e| fail(&e))?;
    params.distinguished_name.push(DnType::CommonName, name);
    let csr = params.serialize_request(&key).map_err(|e| fail(&e))?;
    csr.pem().map_err(|e| Cause::from(fail(&e)))
}

impl PkiSign {
    /// Makes the CSRs (their keys stay in this process) and the request bodies; returns
    /// the role's key type and bits in Vault's names.
    fn make_bodies(&mut self) -> Result<(&'static str, u32), Cause> {
        let &(_, kind, bits) = KEY_TYPES
            .iter()
            .find(|k| k.0 == self.config.role.key_type)
            .ok_or("unknown key type")?;
        let salt = fresh_name("");
        let body = |csr: String| {
            let mut b = Value::Object(self.config.params.clone());
            b["csr"] = json!(csr);
            b.to_string().into_bytes()
        };
        let mut bodies: Vec<Vec<u8>> = match (&self.config.csr, &self.config.common_name) {
            (Some(csr), _) => vec![body(csr.clone())],
            (None, Some(cn)) => vec![body(make_csr(kind, bits, cn)?)],
            (None, None) => (0..self.config.csrs)
                .map(|i| {
                    let csr = make_csr(kind, bits, &format!("h{salt}{i:05}.vblast.test"))?;
                    Ok(body(csr))
                })
                .collect::<Result<_, Cause>>()?,
        };
        let width = bodies.iter().map(Vec::len).max().unwrap_or(0);
        for b in &mut bodies {
            // JSON allows whitespace before the closing brace: one length for the pool.
            let close = b.pop().unwrap_or(b'}');
            b.resize(width - 1, b' ');
            b.push(close);
        }
        self.bodies = bodies;
        Ok((kind, bits))
    }

    fn prepare(&mut self, client: &mut Client, naming: &Naming) -> Result<(), Cause> {
        // The CSRs first: nothing is on the server if making them fails.
        let (kind, bits) = self.make_bodies()?;
        let c = self.config.clone();
        let root = naming.random_name(ROOT_PREFIX);
        let int = naming.random_name(INT_PREFIX);
        let chain = PkiChain {
            root_ca: c.root_ca,
            intermediate_csr: c.intermediate_csr,
            intermediate_ca: c.intermediate_ca,
        };
        make_chain(
            client,
            [&root, &int],
            &chain,
            [&mut self.mounts.root, &mut self.mounts.int],
        )?;
        let r = &c.role;
        let role = role_body(kind, bits, &r.ttl, r.no_store, r.generate_lease, &r.params);
        self.mounts.int.write_role(client, &r.name, &role)
    }
}

impl VaultOp for PkiSign {
    fn check(&self, ctx: &SetupCtx) -> Result<(), Error> {
        needs_setup(ctx, SIGN.name)
    }

    fn setup(&mut self, ctx: &SetupCtx) -> Result<(), Error> {
        // The root's name is derived too, in setup's order, though a shard uses only the
        // intermediate's.
        let role = self.config.role.name.clone();
        if self.mounts.share(ctx, &[ROOT_PREFIX, INT_PREFIX], &role)? {
            setup_with(ctx, SIGN.name, |client| self.prepare(client, ctx.naming))?;
        } else if self.mounts.shared.is_some() {
            // A shard: its own CSRs (keys made here, never sent).
            self.make_bodies().map_err(Error::setup)?;
        }
        Ok(())
    }

    fn operation(&self) -> Operation {
        let int = self.mounts.issuing();
        let mut op = Operation::new(
            SIGN.name,
            RequestSpec {
                method: "POST".into(),
                path: vec![Piece::lit(format!(
                    "/v1/{int}/sign/{}",
                    self.config.role.name
                ))],
                headers: vec![("Content-Type".into(), "application/json".into())],
                body: Some(vec![Piece::Pool {
                    items: self.bodies.clone(),
                }]),
                captured_headers: vec![],
            },
        );
        op.expect = Some(Expect::certificate("data.certificate"));
        op
    }

    fn created(&self) -> Vec<Created> {
        self.mounts.created("pki (root CA)")
    }

    fn cleanup(&mut self, client: &mut Client, _stop: &Stop) -> Result<(), Cause> {
        self.mounts.disable(client)
    }
}

#[cfg(test)]
mod sign_tests {
    use super::*;
    use x509_parser::prelude::FromDer;

    #[test]
    fn csrs_of_every_key_type_parse() {
        for (_, kind, bits) in KEY_TYPES.iter().filter(|k| k.2 <= 2048 && k.2 != 521) {
            let pem = make_csr(kind, *bits, "h1.vblast.test").unwrap();
            assert!(
                pem.starts_with("-----BEGIN CERTIFICATE REQUEST-----"),
                "{pem}"
            );
            let der = rustls_pemfile::csr(&mut pem.as_bytes()).unwrap().unwrap();
            let (_, req) = x509_parser::certification_request::X509CertificationRequest::from_der(
                der.as_ref(),
            )
            .unwrap();
            assert!(
                req.certification_request_info
                    .subject
                    .to_string()
                    .contains("h1.vblast.test")
            );
        }
    }

    #[test]
    fn bad_sign_configs_are_refused() {
        let mut flags = OptionValues::new();
        flags
            .set(
                "key-type",
                super::super::OptionValue::Text("ecdsa-p256".into()),
            )
            .unwrap();
        let e = build_sign(&sign_config_from(&flags))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("not one of") && e.contains("ec-256"), "{e}");
        let mut cfg = sign_config_from(&OptionValues::new());
        cfg["intermediate_ca"]["ttl"] = json!("forever");
        assert!(
            build_sign(&cfg)
                .err()
                .unwrap()
                .to_string()
                .contains("forever")
        );
    }
}
