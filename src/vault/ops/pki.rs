//! The PKI family: `pki-issue` and `pki-sign` (below: a root and an intermediate CA made
//! at setup, CSRs made by vblast signed by the intermediate). Setup enables PKI at a fresh mount (`vblast-pki-xxxxxxxx`),
//! generates a root CA in it and a role `vblast` for `*.vblast.test` with keys of
//! `--key-type` (rsa-2048, ec-256, ed25519); each request issues a certificate with a new
//! key, and the answer must hold it. Cleanup disables the mount, and with it every
//! certificate it stored.
//!
//! Shared by the shards of a run (src/fixtures.rs): `vblast setup` makes the mounts, CAs
//! and role under names derived from the run id; a shard waits for the role (pki-sign:
//! after making its own CSRs and their keys locally); `vblast cleanup` disables the mounts.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::vb::{Keys, Mapped, pki_key, set_in};
use super::{
    Created, Fixture, Kind, OpInfo, OptionSpec, OptionValues, SetupCtx, VaultBenchmark, VaultOp,
    VbType, call, disable_mount, fresh_name, mount_created, needs_setup, setup_with,
    shared::{self, Mode},
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
    ("ed25519", "ed25519", 0),
];

const DOC: &str = "Setup enables PKI at a fresh mount (`vblast-pki-xxxxxxxx`), generates a root CA in it and a role `vblast` for `*.vblast.test` with keys of `--key-type`; each pki-issue request issues a certificate with a new key, and the answer must hold it. pki-sign makes a root and an intermediate CA at setup and has the intermediate sign CSRs vblast made. Cleanup disables the mounts, and with them every certificate they stored. Shards share the mounts, CAs and role.";

const NO_STORE: OptionSpec = OptionSpec {
    flag: "no-store",
    value_name: "",
    kind: Kind::Switch,
    default: None,
    help: "pki-issue, pki-sign: certificates are not stored on the server (no_store)",
};

const KEY_TYPE: OptionSpec = OptionSpec {
    flag: "key-type",
    value_name: "TYPE",
    kind: Kind::Text,
    default: None,
    help: "key of each certificate: ec-256 (default), ec-384, rsa-2048, rsa-3072, rsa-4096, ed25519",
};

/// vault-benchmark's PKI tests: the CA blocks, the role, the issue or sign block.
fn pki_hcl(sign: bool, c: &mut Keys, out: &mut Mapped) -> Result<(), Cause> {
    c.names(&["setup_delay"]);
    if !sign {
        out.notes.push(format!(
            "test '{}': vblast's pki-issue issues from a root CA it makes itself (EC P-256), with no intermediate; the CA settings change setup only, not the requests measured",
            c.test
        ));
    }
    for block in ["root_ca", "intermediate_csr", "intermediate_ca"] {
        let mut b = c.block(block)?;
        b.names(&["issuer_name", "key_name"]);
        if sign {
            // pki-sign makes this chain: root, then an intermediate signed by it.
            if block != "intermediate_ca" {
                if let Some(cn) = b.string("common_name")? {
                    set_in(&mut out.config, block, "common_name", json!(cn));
                }
                if let Some(t) = b.string("key_type")? {
                    set_in(&mut out.config, block, "key_type", json!(t));
                }
                if let Some(n) = b.number("key_bits")? {
                    set_in(&mut out.config, block, "key_bits", json!(n));
                }
            }
            if block != "intermediate_csr"
                && let Some(ttl) = b.string("ttl")?
            {
                set_in(&mut out.config, block, "ttl", json!(ttl));
            }
        } else {
            b.names(&["common_name"]);
            // The CA's own key: pki-issue's is EC P-256; other keys only change setup.
            let key = pki_key(&mut b)?;
            if key.is_some() {
                out.named.push(format!("config.{block}.key_type"));
            }
        }
        b.only(
            "type",
            &[json!("internal")],
            "its CA keys are made by the server",
        )?;
        b.finish(&mut out.named)?;
    }
    let mut role = c.block("role")?;
    role.names(&[
        "name",
        "allowed_domains",
        "allow_subdomains",
        "allow_any_name",
    ]);
    let put = |cfg: &mut serde_json::Map<String, Value>, k: &str, v: Value| {
        if sign {
            set_in(cfg, "role", k, v);
        } else {
            cfg.insert(k.into(), v);
        }
    };
    if let Some(key) = pki_key(&mut role)? {
        put(&mut out.config, "key_type", json!(key));
    }
    if let Some(ttl) = role.string("ttl")? {
        put(&mut out.config, "ttl", json!(ttl));
    }
    if let Some(no_store) = role.boolean("no_store")? {
        put(&mut out.config, "no_store", json!(no_store));
    }
    role.only(
        "generate_lease",
        &[json!(false)],
        "its certificates get no lease",
    )?;
    role.finish(&mut out.named)?;
    let mut req = c.block(if sign { "sign" } else { "issue" })?;
    req.names(&["name", "common_name"]);
    req.finish(&mut out.named)
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
}

fn config_from(f: &OptionValues) -> Value {
    serde_json::to_value(PkiConfig {
        key_type: f.text("key-type").unwrap_or_else(|| "ec-256".into()),
        no_store: f.switch("no-store"),
        ttl: "1h".into(),
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
    Ok(Box::new(Pki {
        config,
        mount: None,
        shared_mount: None,
    }))
}

struct Pki {
    config: PkiConfig,
    /// The mount, as soon as it may exist.
    mount: Option<String>,
    /// A shard's: the mount `vblast setup` made (not its own: never disabled by it).
    shared_mount: Option<String>,
}

/// A shard of a run sharing the fixture: waits until `vblast setup` has made `role` in
/// `mount` (the last thing it makes there).
fn wait_for_role(ctx: &SetupCtx, mount: &str, role: &str) -> Result<(), Error> {
    shared::wait_readable(
        ctx,
        &format!("the shared pki role '{role}' in '{mount}'"),
        &format!("/v1/{mount}/roles/{role}"),
    )
    .map(drop)
}

impl Pki {
    fn prepare(&mut self, client: &mut Client, naming: &Naming) -> Result<(), Cause> {
        let mount = naming.random_name("vblast-pki-");
        self.mount = Some(mount.clone());
        call(
            client,
            "POST",
            &format!("/v1/sys/mounts/{mount}"),
            Some(&json!({"type": "pki", "description": "vblast load test (temporary)"})),
            &format!("enabling pki at '{mount}'"),
        )
        .inspect_err(|_| self.mount = None)?;
        call(
            client,
            "POST",
            &format!("/v1/{mount}/root/generate/internal"),
            Some(
                &json!({"common_name": "vblast test root", "ttl": "720h", "key_type": "ec", "key_bits": 256}),
            ),
            &format!("generating the root CA of '{mount}'"),
        )?;
        let &(_, kind, bits) = KEY_TYPES
            .iter()
            .find(|k| k.0 == self.config.key_type)
            .ok_or("unknown key type")?;
        let mut role = json!({
            "allowed_domains": "vblast.test",
            "allow_subdomains": true,
            "key_type": kind,
            "ttl": self.config.ttl,
            "max_ttl": self.config.ttl,
            "no_store": self.config.no_store,
        });
        if bits > 0 {
            role["key_bits"] = json!(bits);
        }
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

impl VaultOp for Pki {
    fn check(&self, ctx: &SetupCtx) -> Result<(), Error> {
        needs_setup(ctx, ISSUE.name)
    }

    fn setup(&mut self, ctx: &SetupCtx) -> Result<(), Error> {
        match shared::mode(ctx) {
            Mode::Join => {
                let mount = ctx.naming.random_name("vblast-pki-");
                wait_for_role(ctx, &mount, ROLE)?;
                self.shared_mount = Some(mount);
                Ok(())
            }
            // `vblast cleanup`: the mount setup made, to disable.
            Mode::Remove => {
                self.mount = Some(ctx.naming.random_name("vblast-pki-"));
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
        let mut op = Operation::new(
            ISSUE.name,
            RequestSpec {
                method: "POST".into(),
                path: vec![Piece::lit(format!("/v1/{mount}/issue/{ROLE}"))],
                headers: vec![("Content-Type".into(), "application/json".into())],
                body: Some(vec![
                    Piece::lit(r#"{"common_name":"h"#),
                    Piece::Hex { width: 8 },
                    Piece::lit(r#".vblast.test"}"#),
                ]),
                captured_headers: vec![],
            },
        );
        op.expect = Some(Expect::present("data.certificate"));
        op
    }

    fn created(&self) -> Vec<Created> {
        mount_created("pki", self.mount.as_deref())
    }

    fn cleanup(&mut self, client: &mut Client, _stop: &Stop) -> Result<(), Cause> {
        disable_mount(client, "pki", &mut self.mount)
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
}

/// `root_ca` and `intermediate_csr`: the CA's name and key (Vault's key_type/key_bits).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PkiCaConfig {
    pub common_name: String,
    pub key_type: String,
    #[serde(default)]
    pub key_bits: u32,
    /// Root only: its lifetime.
    #[serde(default = "default_root_ttl")]
    pub ttl: String,
}

impl Default for PkiCaConfig {
    fn default() -> Self {
        PkiCaConfig {
            common_name: "vblast test root".into(),
            key_type: "ec".into(),
            key_bits: 256,
            ttl: default_root_ttl(),
        }
    }
}

/// `intermediate_ca`: how the root signs the intermediate.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PkiIntCaConfig {
    pub ttl: String,
}

impl Default for PkiIntCaConfig {
    fn default() -> Self {
        PkiIntCaConfig { ttl: "360h".into() }
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
        },
        csrs: default_csrs(),
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
    for (what, ttl) in [
        ("certificate", &config.role.ttl),
        ("root CA", &config.root_ca.ttl),
        ("intermediate CA", &config.intermediate_ca.ttl),
    ] {
        crate::config::units::parse_duration(ttl)
            .map_err(|e| format!("{what} TTL '{ttl}' is not a duration: {e}"))?;
    }
    if config.csrs == 0 || config.csrs > 10_000 {
        return Err(Cause::from(format!(
            "{} CSRs is not between 1 and 10000",
            config.csrs
        )));
    }
    Ok(Box::new(PkiSign {
        config,
        root: None,
        int: None,
        bodies: Vec::new(),
        shared_int: None,
    }))
}

struct PkiSign {
    config: PkiSignConfig,
    /// The root CA's mount and the intermediate's, as soon as they may exist.
    root: Option<String>,
    int: Option<String>,
    /// The sign requests' bodies, padded to one length.
    bodies: Vec<Vec<u8>>,
    /// A shard's: the intermediate's mount `vblast setup` made (never disabled by it).
    shared_int: Option<String>,
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
    fn enable(&self, client: &mut Client, mount: &str, ttl: &str) -> Result<(), Cause> {
        call(
            client,
            "POST",
            &format!("/v1/sys/mounts/{mount}"),
            Some(&json!({
                "type": "pki",
                "description": "vblast load test (temporary)",
                "config": {"max_lease_ttl": ttl},
            })),
            &format!("enabling pki at '{mount}'"),
        )
        .map(drop)
    }

    /// Makes the CSRs (their keys stay in this process) and the request bodies; returns
    /// the role's key type and bits in Vault's names.
    fn make_bodies(&mut self) -> Result<(&'static str, u32), Cause> {
        let &(_, kind, bits) = KEY_TYPES
            .iter()
            .find(|k| k.0 == self.config.role.key_type)
            .ok_or("unknown key type")?;
        let salt = fresh_name("");
        let mut bodies: Vec<Vec<u8>> = (0..self.config.csrs)
            .map(|i| {
                let csr = make_csr(kind, bits, &format!("h{salt}{i:05}.vblast.test"))?;
                Ok(json!({ "csr": csr }).to_string().into_bytes())
            })
            .collect::<Result<_, Cause>>()?;
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

    /// A shard of a run sharing the fixture: its own CSRs (keys made here, never sent),
    /// then a wait for the role `vblast setup` makes in the intermediate's mount.
    fn join(&mut self, ctx: &SetupCtx) -> Result<(), Error> {
        self.make_bodies().map_err(Error::setup)?;
        // The root's name is derived too, in setup's order, though a shard uses only the
        // intermediate.
        let _root = ctx.naming.random_name("vblast-pki-");
        let int = ctx.naming.random_name("vblast-pki-int-");
        wait_for_role(ctx, &int, &self.config.role.name)?;
        self.shared_int = Some(int);
        Ok(())
    }

    fn prepare(&mut self, client: &mut Client, naming: &Naming) -> Result<(), Cause> {
        // The CSRs first: nothing is on the server if making them fails.
        let (kind, bits) = self.make_bodies()?;
        let c = &self.config;
        let root = naming.random_name("vblast-pki-");
        self.root = Some(root.clone());
        self.enable(client, &root, &c.root_ca.ttl)
            .inspect_err(|_| self.root = None)?;
        call(
            client,
            "POST",
            &format!("/v1/{root}/root/generate/internal"),
            Some(&json!({
                "common_name": c.root_ca.common_name,
                "ttl": c.root_ca.ttl,
                "key_type": c.root_ca.key_type,
                "key_bits": c.root_ca.key_bits,
            })),
            &format!("generating the root CA of '{root}'"),
        )?;
        let int = naming.random_name("vblast-pki-int-");
        self.int = Some(int.clone());
        self.enable(client, &int, &c.intermediate_ca.ttl)
            .inspect_err(|_| self.int = None)?;
        let what = format!("generating the intermediate CA's CSR in '{int}'");
        let v = call(
            client,
            "POST",
            &format!("/v1/{int}/intermediate/generate/internal"),
            Some(&json!({
                "common_name": c.intermediate_csr.common_name,
                "key_type": c.intermediate_csr.key_type,
                "key_bits": c.intermediate_csr.key_bits,
            })),
            &what,
        )?;
        let csr = super::json_str(&v, "data.csr", &what)?;
        let what = format!("signing the intermediate CA with the root of '{root}'");
        let v = call(
            client,
            "POST",
            &format!("/v1/{root}/root/sign-intermediate"),
            Some(&json!({
                "csr": csr,
                "common_name": c.intermediate_csr.common_name,
                "ttl": c.intermediate_ca.ttl,
                "format": "pem_bundle",
            })),
            &what,
        )?;
        let cert = super::json_str(&v, "data.certificate", &what)?;
        call(
            client,
            "POST",
            &format!("/v1/{int}/intermediate/set-signed"),
            Some(&json!({ "certificate": cert })),
            &format!("installing the intermediate CA in '{int}'"),
        )?;
        let mut role = json!({
            "allowed_domains": "vblast.test",
            "allow_subdomains": true,
            "key_type": kind,
            "ttl": c.role.ttl,
            "max_ttl": c.role.ttl,
            "no_store": c.role.no_store,
        });
        if bits > 0 {
            role["key_bits"] = json!(bits);
        }
        call(
            client,
            "POST",
            &format!("/v1/{int}/roles/{}", c.role.name),
            Some(&role),
            &format!("creating role '{}' in '{int}'", c.role.name),
        )?;
        Ok(())
    }
}

impl VaultOp for PkiSign {
    fn check(&self, ctx: &SetupCtx) -> Result<(), Error> {
        needs_setup(ctx, SIGN.name)
    }

    fn setup(&mut self, ctx: &SetupCtx) -> Result<(), Error> {
        match shared::mode(ctx) {
            Mode::Join => self.join(ctx),
            // `vblast cleanup`: the mounts setup made, in its order, to disable.
            Mode::Remove => {
                self.root = Some(ctx.naming.random_name("vblast-pki-"));
                self.int = Some(ctx.naming.random_name("vblast-pki-int-"));
                Ok(())
            }
            Mode::Own | Mode::Create => {
                setup_with(ctx, SIGN.name, |client| self.prepare(client, ctx.naming))
            }
        }
    }

    fn operation(&self) -> Operation {
        let int = self
            .int
            .as_deref()
            .or(self.shared_int.as_deref())
            .unwrap_or("unset");
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
        let mut out = mount_created("pki (intermediate CA)", self.int.as_deref());
        out.extend(mount_created("pki (root CA)", self.root.as_deref()));
        out
    }

    fn cleanup(&mut self, client: &mut Client, _stop: &Stop) -> Result<(), Cause> {
        disable_mount(client, "pki", &mut self.int)?;
        disable_mount(client, "pki", &mut self.root)
    }
}

#[cfg(test)]
mod sign_tests {
    use super::*;
    use x509_parser::prelude::FromDer;

    #[test]
    fn csrs_of_every_key_type_parse() {
        for (_, kind, bits) in KEY_TYPES.iter().filter(|k| k.2 <= 2048) {
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
