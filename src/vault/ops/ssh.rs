//! The SSH family: `ssh-sign`. Setup enables the SSH secrets engine at a fresh mount
//! (`vblast-ssh-xxxxxxxx`), has it generate a CA signing key, creates the role `vblast`
//! for user certificates, and makes an Ed25519 client key pair (ring) whose public key
//! every request has signed; the answer must hold the signed certificate. Cleanup
//! disables the mount.
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
}
