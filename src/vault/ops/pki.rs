//! The PKI family: `pki-issue`. Setup enables PKI at a fresh mount (`vblast-pki-xxxxxxxx`),
//! generates a root CA in it and a role `vblast` for `*.vblast.test` with keys of
//! `--key-type` (rsa-2048, ec-256, ed25519); each request issues a certificate with a new
//! key, and the answer must hold it. Cleanup disables the mount, and with it every
//! certificate it stored.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{
    Created, OpFlags, OpInfo, SetupCtx, VaultOp, call, disable_mount, mount_created, needs_setup,
    random_name,
};
use crate::capture::Expect;
use crate::error::Error;
use crate::signals::Stop;
use crate::template::{Piece, RequestSpec};
use crate::vault::client::Client;
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

pub const ISSUE: OpInfo = OpInfo {
    name: "pki-issue",
    about: "POST <mount>/issue/vblast: a certificate and key for a *.vblast.test name",
    options: &[(
        "--key-type TYPE",
        "key of each certificate: ec-256 (default), ec-384, rsa-2048, rsa-3072, rsa-4096, ed25519",
    )],
    config_from_flags,
    build,
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

fn config_from_flags(f: &OpFlags) -> Value {
    serde_json::to_value(PkiConfig {
        key_type: f.key_type.clone().unwrap_or_else(|| "ec-256".into()),
        no_store: false,
        ttl: "1h".into(),
    })
    .unwrap_or(Value::Null)
}

fn build(v: &Value) -> Result<Box<dyn VaultOp>, String> {
    let config: PkiConfig =
        serde_json::from_value(v.clone()).map_err(|e| format!("bad config: {e}"))?;
    if !KEY_TYPES.iter().any(|k| k.0 == config.key_type) {
        let names: Vec<&str> = KEY_TYPES.iter().map(|k| k.0).collect();
        return Err(format!(
            "key type '{}' is not one of {}",
            config.key_type,
            names.join(", ")
        ));
    }
    crate::units::parse_duration(&config.ttl)
        .map_err(|e| format!("certificate TTL '{}' is not a duration: {e}", config.ttl))?;
    Ok(Box::new(Pki {
        config,
        mount: None,
    }))
}

struct Pki {
    config: PkiConfig,
    /// The mount, as soon as it may exist.
    mount: Option<String>,
}

impl Pki {
    fn prepare(&mut self, client: &mut Client) -> Result<(), String> {
        let mount = random_name("vblast-pki-");
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
        needs_setup(ctx, ISSUE.name)?;
        let mut client = (ctx.make_client)();
        self.prepare(&mut client).map_err(Error::Setup)
    }

    fn operation(&self) -> Operation {
        let mount = self.mount.as_deref().unwrap_or("unset");
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

    fn cleanup(&mut self, client: &mut Client, _stop: &Stop) -> Result<(), String> {
        disable_mount(client, "pki", &mut self.mount)
    }
}
