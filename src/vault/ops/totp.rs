//! The TOTP family: `totp-generate`, `totp-read` and `totp-create`. Setup enables the TOTP
//! secrets engine at a fresh mount (`vblast-totp-xxxxxxxx`) and, for generate and read,
//! has it generate the key `vblast`; generate asks for the key's current code, read for
//! the key's settings, create has the server generate a new key under a fresh random name
//! per request. Cleanup deletes every key of the mount, then disables the mount.
//!
//! Shared by the shards of a run (src/session/fixtures.rs): `vblast setup` makes the mount and
//! the key under names derived from the run id; a shard waits for the key (totp-create:
//! for the mount). totp-create's shards name their keys under a prefix of their own and
//! delete them at their end; `vblast cleanup` deletes whatever keys are left (a shard that
//! was killed) and disables the mount.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

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

/// The key vblast creates.
pub const KEY: &str = "vblast";

const DOC: &str = "Setup enables the TOTP secrets engine at a fresh mount (`vblast-totp-xxxxxxxx`) and, for generate and read, has it generate the key `vblast`; generate asks for the key's current code, read for the key's settings, create has the server generate a new key under a fresh random name per request. Cleanup deletes every key of the mount, then disables the mount. Shards share the mount and the key.";

/// vault-benchmark's totp_create: its request carries only generate, issuer and
/// account_name (its algorithm, digits and period are never sent).
fn create_hcl(c: &mut Keys, _: &mut Mapped) -> Result<(), Cause> {
    c.names(&[
        "key_name",
        "issuer",
        "account_name",
        "algorithm",
        "digits",
        "period",
    ]);
    c.only("generate", &[json!(true)], "the server generates its keys")
}

/// vault-benchmark's totp_generate and totp_read: the key setup makes has the file's
/// `algorithm`, `digits` and `period` (vault-benchmark's defaults: SHA1, 6, 30).
fn key_hcl(c: &mut Keys, out: &mut Mapped) -> Result<(), Cause> {
    c.names(&["key_name", "issuer", "account_name"]);
    if let Some(a) = c.string("algorithm")? {
        let a = a.to_ascii_uppercase();
        if ["SHA1", "SHA256", "SHA512"].contains(&a.as_str()) {
            out.config.insert("algorithm".into(), json!(a));
        } else {
            let m = format!(
                "{} = \"{a}\" is not one of SHA1, SHA256, SHA512 (the TOTP engine's algorithms)",
                c.where_("algorithm")
            );
            c.refuse_with("algorithm", m);
        }
    }
    if let Some(d) = c.number("digits")? {
        if d == 6 || d == 8 {
            out.config.insert("digits".into(), json!(d));
        } else {
            let m = format!(
                "{} = {d}: the TOTP engine's codes have 6 or 8 digits",
                c.where_("digits")
            );
            c.refuse_with("digits", m);
        }
    }
    if let Some(p) = c.number("period")? {
        if p > 0 {
            out.config.insert("period".into(), json!(p));
        } else {
            let m = format!("{} must be at least 1 (seconds)", c.where_("period"));
            c.refuse_with("period", m);
        }
    }
    c.only("generate", &[json!(true)], "the server generates its key")
}

pub const GENERATE: OpInfo = OpInfo {
    name: "totp-generate",
    request: "GET /v1/<mount>/code/vblast",
    doc: DOC,
    also: &[],
    vault_benchmark: VaultBenchmark::Types(&[VbType {
        name: "totp_generate",
        config: key_hcl,
    }]),
    fixture: Fixture::Shared,
    bounds: &[],
    about: "GET <mount>/code/vblast: the current code of a TOTP key generated at setup",
    options: &[],
    config_from,
    build: build_generate,
};

pub const READ: OpInfo = OpInfo {
    name: "totp-read",
    request: "GET /v1/<mount>/keys/vblast",
    doc: DOC,
    also: &[],
    vault_benchmark: VaultBenchmark::Types(&[VbType {
        name: "totp_read",
        config: key_hcl,
    }]),
    fixture: Fixture::Shared,
    bounds: &[],
    about: "GET <mount>/keys/vblast: the settings of a TOTP key generated at setup",
    options: &[],
    config_from,
    build: build_read,
};

pub const CREATE: OpInfo = OpInfo {
    name: "totp-create",
    request: "POST /v1/<mount>/keys/vblast-<random>",
    doc: DOC,
    also: &[],
    vault_benchmark: VaultBenchmark::Types(&[VbType {
        name: "totp_create",
        config: create_hcl,
    }]),
    fixture: Fixture::Shared,
    bounds: &[],
    about: "POST <mount>/keys/vblast-<random>: a new TOTP key generated by the server per request; every key deleted at cleanup",
    options: &[],
    config_from,
    build: build_create,
};

/// Which request the family sends.
#[derive(Clone, Copy, PartialEq, Eq)]
enum TotpKind {
    Generate,
    Read,
    Create,
}

impl TotpKind {
    fn name(self) -> &'static str {
        match self {
            TotpKind::Generate => GENERATE.name,
            TotpKind::Read => READ.name,
            TotpKind::Create => CREATE.name,
        }
    }
}

/// The key setup makes (totp-generate, totp-read): vault-benchmark's `algorithm`,
/// `digits`, `period`; the engine's defaults (SHA1, 6, 30) where None. Unknown keys refused.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TotpConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    algorithm: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    digits: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    period: Option<u64>,
}

fn config_from(_: &OptionValues) -> Value {
    serde_json::to_value(TotpConfig::default()).unwrap_or(Value::Null)
}

fn build(v: &Value, kind: TotpKind) -> Result<Box<dyn VaultOp>, Cause> {
    let config =
        serde_json::from_value::<TotpConfig>(v.clone()).map_err(|e| format!("bad config: {e}"))?;
    Ok(Box::new(Totp {
        kind,
        config,
        mount: None,
        shared_mount: None,
        own_prefix: None,
    }))
}

fn build_generate(v: &Value) -> Result<Box<dyn VaultOp>, Cause> {
    build(v, TotpKind::Generate)
}

fn build_read(v: &Value) -> Result<Box<dyn VaultOp>, Cause> {
    build(v, TotpKind::Read)
}

fn build_create(v: &Value) -> Result<Box<dyn VaultOp>, Cause> {
    build(v, TotpKind::Create)
}

/// The body of a key the server generates (its seed stays on the server; the answer of a
/// create carries the key's URL and barcode, which vblast only checks for and drops).
fn key_body(exported: bool) -> Value {
    json!({
        "generate": true,
        "issuer": "vblast",
        "account_name": "vblast@vblast.test",
        "exported": exported,
    })
}

struct Totp {
    kind: TotpKind,
    /// The settings of the key setup makes.
    config: TotpConfig,
    /// The mount, as soon as it may exist.
    mount: Option<String>,
    /// A shard's: the mount `vblast setup` made (not its own: never disabled by it).
    shared_mount: Option<String>,
    /// A totp-create shard's: the prefix of the keys it creates (deleted at its end).
    own_prefix: Option<String>,
}

impl Totp {
    /// The key setup makes: the server's, with the file's algorithm, digits and period.
    fn setup_key_body(&self) -> Value {
        let mut b = key_body(false);
        let c = &self.config;
        if let Some(a) = &c.algorithm {
            b["algorithm"] = json!(a);
        }
        if let Some(d) = c.digits {
            b["digits"] = json!(d);
        }
        if let Some(p) = c.period {
            b["period"] = json!(p);
        }
        b
    }

    fn prepare(&mut self, client: &mut Client, naming: &Naming) -> Result<(), Cause> {
        let mount = naming.random_name("vblast-totp-");
        self.mount = Some(mount.clone());
        call(
            client,
            "POST",
            &format!("/v1/sys/mounts/{mount}"),
            Some(&json!({"type": "totp", "description": "vblast load test (temporary)"})),
            &format!("enabling totp at '{mount}'"),
        )
        .inspect_err(|_| self.mount = None)?;
        if self.kind != TotpKind::Create {
            call(
                client,
                "POST",
                &format!("/v1/{mount}/keys/{KEY}"),
                Some(&self.setup_key_body()),
                &format!("generating TOTP key '{KEY}' in '{mount}'"),
            )?;
        }
        Ok(())
    }

    /// A shard of a run sharing the fixture: waits for what `vblast setup` makes (the key;
    /// totp-create: the mount) and, for totp-create, takes a key prefix of its own.
    fn join(&mut self, ctx: &SetupCtx) -> Result<(), Error> {
        let mount = ctx.naming.random_name("vblast-totp-");
        if self.kind == TotpKind::Create {
            let v = shared::wait_readable(
                ctx,
                &format!("the shared totp mount '{mount}'"),
                &format!("/v1/sys/mounts/{mount}"),
            )?;
            let kind = v.pointer("/data/type").and_then(Value::as_str);
            if kind != Some("totp") {
                return Err(Error::setup(format!(
                    "the shared mount '{mount}' is not a totp secrets engine ({kind:?})"
                )));
            }
            self.own_prefix = Some(format!("{}-", shared::own_name(KEY)));
        } else {
            shared::wait_readable(
                ctx,
                &format!("the shared TOTP key '{KEY}' in '{mount}'"),
                &format!("/v1/{mount}/keys/{KEY}"),
            )?;
        }
        self.shared_mount = Some(mount);
        Ok(())
    }

    /// Deletes every key of the mount (the run's, the setup's), one by one; a second stop
    /// request cuts it short (disabling the mount then removes the rest).
    fn delete_keys(client: &mut Client, mount: &str, stop: &Stop) -> Result<(), Cause> {
        Self::delete_keys_with(client, mount, "", stop)
    }

    /// Deletes the keys of the mount whose names start with `prefix`, as `delete_keys`.
    fn delete_keys_with(
        client: &mut Client,
        mount: &str,
        prefix: &str,
        stop: &Stop,
    ) -> Result<(), Cause> {
        let what = format!("listing the TOTP keys of '{mount}'");
        let path = format!("/v1/{mount}/keys?list=true");
        let r = client
            .request("GET", &path, None)
            .map_err(|e| format!("{what} failed: {e}"))?;
        let listed = match r.status {
            // A mount without keys lists as not found.
            404 => Value::Null,
            200..=299 => r.json().unwrap_or(Value::Null),
            status => {
                return Err(Cause::from(format!(
                    "{what} on {} failed: HTTP {status}: {}",
                    client.base(),
                    r.error_text()
                )));
            }
        };
        let names: Vec<String> = listed
            .pointer("/data/keys")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .filter(|n| n.starts_with(prefix))
                    .map(String::from)
                    .collect()
            })
            .unwrap_or_default();
        for name in names {
            if stop.is_urgent() {
                break;
            }
            call(
                client,
                "DELETE",
                &format!("/v1/{mount}/keys/{name}"),
                None,
                &format!("deleting TOTP key '{name}' of '{mount}'"),
            )?;
        }
        Ok(())
    }
}

impl VaultOp for Totp {
    fn check(&self, ctx: &SetupCtx) -> Result<(), Error> {
        needs_setup(ctx, self.kind.name())
    }

    fn setup(&mut self, ctx: &SetupCtx) -> Result<(), Error> {
        match shared::mode(ctx) {
            Mode::Join => self.join(ctx),
            // `vblast cleanup`: the mount setup made, to empty and disable.
            Mode::Remove => {
                self.mount = Some(ctx.naming.random_name("vblast-totp-"));
                Ok(())
            }
            Mode::Own | Mode::Create => setup_with(ctx, self.kind.name(), |client| {
                self.prepare(client, ctx.naming)
            }),
        }
    }

    fn operation(&self) -> Operation {
        let mount = self
            .mount
            .as_deref()
            .or(self.shared_mount.as_deref())
            .unwrap_or("unset");
        // A shard's keys carry its own prefix, so that it deletes only its own.
        let key_prefix = self.own_prefix.as_deref().unwrap_or("vblast-");
        let (method, path, body, expect) = match self.kind {
            TotpKind::Generate => (
                "GET",
                vec![Piece::lit(format!("/v1/{mount}/code/{KEY}"))],
                None,
                Expect::present("data.code"),
            ),
            TotpKind::Read => (
                "GET",
                vec![Piece::lit(format!("/v1/{mount}/keys/{KEY}"))],
                None,
                Expect::all_present("data.account_name", &["data.period"]),
            ),
            // vault-benchmark's create: generated, exported (the answer holds its URL).
            TotpKind::Create => (
                "POST",
                vec![
                    Piece::lit(format!("/v1/{mount}/keys/{key_prefix}")),
                    Piece::Hex { width: 16 },
                ],
                Some(vec![Piece::lit(key_body(true).to_string())]),
                Expect::present("data.url"),
            ),
        };
        let mut op = Operation::new(
            self.kind.name(),
            RequestSpec {
                method: method.into(),
                path,
                headers: if body.is_some() {
                    vec![("Content-Type".into(), "application/json".into())]
                } else {
                    vec![]
                },
                body,
                captured_headers: vec![],
            },
        );
        op.expect = Some(expect);
        op
    }

    fn created(&self) -> Vec<Created> {
        let mut out = mount_created("totp", self.mount.as_deref());
        if let (Some(m), Some(p)) = (&self.shared_mount, &self.own_prefix) {
            out.push(Created {
                what: format!("this shard's TOTP keys '{p}*' in '{m}'"),
                remove_with: format!(
                    "vault list {m}/keys, then vault delete {m}/keys/NAME for each NAME starting with {p}"
                ),
            });
        }
        out
    }

    fn cleanup(&mut self, client: &mut Client, stop: &Stop) -> Result<(), Cause> {
        if let (Some(m), Some(p)) = (self.shared_mount.clone(), self.own_prefix.clone()) {
            Self::delete_keys_with(client, &m, &p, stop)?;
            self.own_prefix = None;
        }
        if let Some(m) = self.mount.clone() {
            Self::delete_keys(client, &m, stop)?;
        }
        disable_mount(client, "totp", &mut self.mount)
    }
}
