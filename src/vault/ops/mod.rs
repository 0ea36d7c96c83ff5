//! The operation registry: every Vault operation vblast knows, by name, with its options,
//! its config, its setup before the clock, the requests it sends, how a response is judged
//! and its cleanup after the run. One file per family, as vault-benchmark
//! keeps one file per test type: `kv` (kv-read, kv-write, kv-list, kv-delete, kv-staleness,
//! cubbyhole-read, cubbyhole-write), `cert`, `auth` (approle-login, userpass-login), `jwt`,
//! `token`, `transit`, `pki`, `ssh` (ssh-sign, ssh-issue), `totp` (totp-generate, totp-read, totp-create), `database` (db-creds), `identity`, `redis` (redis-creds,
//! redis-static-creds), `rabbitmq` (rabbitmq-creds), `kube` (kube-login, kube-creds), `login_read` (the login-read scenario) and
//! `sys` (sys-health, ha-status, seal-status, sys-metrics). What families share lives
//! beside them: `mounted` (a secrets engine at a fresh mount, the CA-and-role setup of pki
//! and ssh, the shards' modes) and `dynamic` (the dynamic-credentials pattern of database,
//! redis and rabbitmq: another such engine is one family file implementing its `Family`).

pub mod auth;
pub mod cert;
pub mod database;
pub(crate) mod dynamic;
pub mod identity;
pub mod jwt;
pub mod kube;
pub mod kv;
pub mod leases;
pub mod login_read;
pub(crate) mod mounted;
pub mod options;
pub mod pki;
pub mod rabbitmq;
pub mod redis;
pub mod shared;
pub mod ssh;
pub mod sys;
pub mod token;
pub mod totp;
pub mod transit;
pub mod vb;

pub use options::{Bound, ConfigBound, OptionKind, OptionSpec, OptionValue, OptionValues};
pub use vb::{VaultBenchmark, VbType};

use serde_json::{Value, json};

use crate::config::scenario::OpChoice;
use crate::error::{Cause, Error};
use crate::net::tls::TlsOptions;
use crate::signals::Stop;
use crate::vault::client::Client;
use crate::workload::Operation;

/// What setup needs from the session.
pub struct SetupCtx<'a> {
    /// A fresh setup client (its own connection) per call.
    pub make_client: &'a (dyn Fn() -> Client + Sync),
    /// TLS settings of the target, if https.
    pub tls: Option<&'a TlsOptions>,
    /// `--no-setup`: use the server as it is; create nothing.
    pub no_setup: bool,
    /// Stops setup between requests.
    pub stop: &'a Stop,
    /// The names of the session's fixtures (its run id and mode).
    pub naming: &'a crate::vault::fixture::Naming,
    /// Where the setup's progress is shown and its phases' times kept.
    pub log: &'a crate::vault::progress::SetupLog,
}

/// Something setup created on the server, with the command that removes it by hand.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Created {
    pub what: String,
    pub remove_with: String,
}

impl Created {
    /// A `kind` auth method enabled at `path`; `holds` says what it holds (" (10 users)",
    /// or nothing).
    pub fn auth_path(kind: &str, path: &str, holds: &str) -> Created {
        Created {
            what: format!("{kind} auth path '{path}'{holds}"),
            remove_with: format!("vault auth disable {path}"),
        }
    }

    /// The shards' `kind` auth paths, each named `prefix` and a suffix.
    pub fn shards_auth_paths(kind: &str, prefix: &str) -> Created {
        Created {
            what: format!("the shards' {kind} auth paths '{prefix}*'"),
            remove_with: format!(
                "vault auth disable <path> for each path {prefix}* of vault auth list"
            ),
        }
    }

    /// An ACL policy named `name`.
    pub fn policy(name: &str) -> Created {
        Created {
            what: format!("policy '{name}'"),
            remove_with: format!("vault policy delete {name}"),
        }
    }
}

/// One configured operation of a run.
pub trait VaultOp: Send {
    /// Checks what can be checked before anything is sent (flags, files, TLS settings).
    fn check(&self, _ctx: &SetupCtx) -> Result<(), Error> {
        Ok(())
    }
    /// Creates the fixture (before the clock). On failure, whatever it created half-way is
    /// still reported by `created` so that cleanup removes it.
    fn setup(&mut self, ctx: &SetupCtx) -> Result<(), Error>;
    /// The request this operation sends (after setup) and how its responses are judged.
    fn operation(&self) -> Operation;
    /// Every request this operation sends: the first is the one its weight picks; any
    /// others are its steps (weight 0), sent only in place of one that needs what they
    /// capture (create a token, then revoke it), each with its own report row.
    fn operations(&self) -> Vec<Operation> {
        vec![self.operation()]
    }
    /// Whether `client`'s node, another node of the cluster than the one set up on, serves
    /// this fixture already: a standby loads a new mount a moment after the active node
    /// (a KV v2 mount answers 400 there while its data upgrade is not yet seen). Asked
    /// after setup, before load goes to standbys (`--nodes all` / `each`).
    fn ready_on(&self, _client: &mut Client) -> Result<bool, Cause> {
        Ok(true)
    }
    /// `kv-staleness`: the secret (`/v1/<mount>/data/<name>`) whose new versions the
    /// staleness probe writes and reads (src/session/staleness.rs); None for the others.
    fn staleness_path(&self) -> Option<String> {
        None
    }
    /// What is on the server because of this operation and must be removed.
    fn created(&self) -> Vec<Created>;
    /// Removes what `created` lists. Idempotent.
    fn cleanup(&mut self, client: &mut Client, stop: &Stop) -> Result<(), Cause>;
}

/// Whether the shards of one run share an operation's fixture (made once, named after the
/// run id; src/session/fixtures.rs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fixture {
    /// Shard 0 (or `vblast setup`) makes it; every shard uses it.
    Shared,
    /// It cannot be shared (it belongs to one token): a sharded run is refused.
    NotShareable,
    /// The operation makes nothing: shards need no run id for it.
    None,
}

impl Fixture {
    /// Its words in `--list-ops --format markdown`.
    pub fn describe(self) -> &'static str {
        match self {
            Fixture::Shared => "shared by the shards of a run (made once, named after the run id)",
            Fixture::NotShareable => {
                "not shareable: a sharded run is refused (set the data up once and use --no-setup)"
            }
            Fixture::None => "none: the operation creates nothing",
        }
    }
}

/// A registry entry: everything about one operation, in its family's file.
pub struct OpInfo {
    pub name: &'static str,
    /// One line: what the operation does.
    pub about: &'static str,
    /// The request it sends, as a method and a path ("GET /v1/<mount>/data/s<i>").
    pub request: &'static str,
    /// More about it, for docs/operations.md (Markdown; may be empty).
    pub doc: &'static str,
    /// Its own options, typed (the command line registers them: src/cli/ops.rs).
    pub options: &'static [OptionSpec],
    /// Flags of the run this operation reads too, with what they mean for it.
    pub also: &'static [(&'static str, &'static str)],
    /// The family's config (as JSON) from the options' values.
    pub config_from: fn(&OptionValues) -> Value,
    /// The operation from its config (checked: unknown keys and bad values are errors).
    pub build: fn(&Value) -> Result<Box<dyn VaultOp>, Cause>,
    /// The vault-benchmark test types that become this operation, with their mapping.
    pub vault_benchmark: VaultBenchmark,
    /// Whether shards share its fixture.
    pub fixture: Fixture,
    /// The numbers of its config that no flag of the same name bounds (nested blocks' keys,
    /// keys a vault-benchmark file names otherwise), each with its bound: held to it before
    /// setup, beside the flags' bounds (src/vault_benchmark/hcl/mapping.rs).
    pub bounds: &'static [ConfigBound],
}

/// Every operation, in the order `--list-ops` shows them.
pub fn registry() -> &'static [OpInfo] {
    static ALL: [OpInfo; 39] = [
        kv::READ,
        kv::WRITE,
        kv::LIST,
        kv::DELETE,
        kv::STALENESS,
        kv::CUBBY_READ,
        kv::CUBBY_WRITE,
        cert::LOGIN,
        auth::APPROLE,
        auth::USERPASS,
        jwt::LOGIN,
        kube::LOGIN,
        token::CREATE,
        token::LOOKUP,
        token::RENEW,
        token::REVOKE,
        transit::ENCRYPT,
        transit::DECRYPT,
        transit::SIGN,
        transit::VERIFY,
        transit::HMAC,
        pki::ISSUE,
        pki::SIGN,
        ssh::SIGN,
        ssh::ISSUE,
        totp::GENERATE,
        totp::READ,
        totp::CREATE,
        database::CREDS,
        identity::IDENTITY,
        redis::CREDS,
        redis::STATIC_CREDS,
        rabbitmq::CREDS,
        kube::CREDS,
        login_read::LOGIN_READ,
        sys::HEALTH,
        sys::HA_STATUS,
        sys::SEAL_STATUS,
        sys::METRICS,
    ];
    &ALL
}

pub fn find(name: &str) -> Option<&'static OpInfo> {
    registry().iter().find(|o| o.name == name)
}

/// How the shards of a run treat the fixture of the operation `name` (None: no such
/// operation).
pub fn fixture_of(name: &str) -> Option<Fixture> {
    find(name).map(|o| o.fixture)
}

/// The operations whose fixture the shards of a run share, in the registry's order.
pub fn shared_names() -> Vec<&'static str> {
    registry()
        .iter()
        .filter(|o| o.fixture == Fixture::Shared)
        .map(|o| o.name)
        .collect()
}

fn names() -> String {
    registry()
        .iter()
        .map(|o| o.name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Parses `--op`: one name, or a weighted mix "kv-read:80,kv-write:20" (weight 1 when
/// left out). Unknown names, repeated names and zero weights are errors.
pub fn parse_mix(text: &str, flags: &OptionValues) -> Result<Vec<OpChoice>, Cause> {
    use crate::config::mix::{MixError, OpMix};
    let mix = OpMix::parse(text, |n| find(n).is_some()).map_err(|e| match e {
        MixError::Unknown { name } => Cause::from(format!(
            "unknown operation '{name}': choose one of {} (vblast --list-ops)",
            names()
        )),
        e => Cause::from(e.to_string()),
    })?;
    Ok(mix
        .parts
        .into_iter()
        .filter_map(|(name, weight)| {
            let info = find(&name)?;
            Some(OpChoice {
                config: (info.config_from)(flags),
                name,
                weight,
                label: None,
            })
        })
        .collect())
}

/// Builds the configured operations of a mix.
pub fn build(choices: &[OpChoice]) -> Result<Vec<Box<dyn VaultOp>>, Cause> {
    choices
        .iter()
        .map(|c| {
            let info = find(&c.name).ok_or_else(|| {
                format!("unknown operation '{}': choose one of {}", c.name, names())
            })?;
            (info.build)(&c.config).map_err(|e| e.within(format!("operation '{}'", c.name)))
        })
        .collect()
}

/// `vblast --list-ops`.
pub fn list_text() -> String {
    let mut o = String::from("Vault operations (--op NAME, or a mix NAME:WEIGHT,NAME:WEIGHT):\n");
    for info in registry() {
        o.push_str(&format!("\n  {:<16} {}\n", info.name, info.about));
        for spec in info.options {
            let opt = format!("--{} {}", spec.flag, spec.value_name);
            let default = spec
                .default
                .map(|d| format!(" (default {d})"))
                .unwrap_or_default();
            o.push_str(&format!(
                "      {:<22} {}{default}\n",
                opt.trim_end(),
                spec.help
            ));
        }
        for (opt, meaning) in info.also {
            o.push_str(&format!("      {opt:<22} {meaning}\n"));
        }
    }
    o
}

/// `vblast --list-ops --format markdown`: the operations' reference (docs/operations.md),
/// generated from the registry.
pub fn list_markdown() -> String {
    let mut o = String::from(
        "# Vault operations\n\n<!-- Generated by `vblast --list-ops --format markdown` from the operation registry (src/vault/ops/). Do not edit: a test fails when this file differs from what vblast prints. -->\n\nGive one with `--op NAME`, or a weighted mix with `--op NAME:WEIGHT,NAME:WEIGHT` (weight 1 when left out): `--op kv-read:80,kv-write:20`. `login-read` is a scenario: `--scenario login-read`. `vblast --list-ops` prints the same as text.\n\n| Operation | What it does | vault-benchmark test types | Shards |\n|---|---|---|---|\n",
    );
    for info in registry() {
        o.push_str(&format!(
            "| [`{0}`](#{0}) | {1} | {2} | {3} |\n",
            info.name,
            cell(info.about),
            vb_types_md(info),
            match info.fixture {
                Fixture::Shared => "shared",
                Fixture::NotShareable => "not shareable",
                Fixture::None => "nothing to share",
            }
        ));
    }
    for info in registry() {
        o.push_str(&format!("\n## {}\n\n{}.\n\n", info.name, md(info.about)));
        o.push_str(&format!("- Request: `{}`\n", info.request));
        o.push_str(&format!("- vault-benchmark: {}\n", vb_types_md(info)));
        o.push_str(&format!("- Fixture: {}\n", info.fixture.describe()));
        if !info.doc.is_empty() {
            o.push_str(&format!("\n{}\n", info.doc));
        }
        if !info.options.is_empty() {
            o.push_str("\n| Option | Kind | Default | Meaning |\n|---|---|---|---|\n");
            for spec in info.options {
                let flag = format!("--{} {}", spec.flag, spec.value_name);
                o.push_str(&format!(
                    "| `{}` | {} | {} | {} |\n",
                    flag.trim_end().replace('|', "\\|"),
                    kind_md(spec.kind),
                    spec.default.map(|d| format!("`{d}`")).unwrap_or("-".into()),
                    cell(spec.help)
                ));
            }
        }
        if !info.also.is_empty() {
            o.push_str("\nAlso:\n\n");
            for (flag, meaning) in info.also {
                o.push_str(&format!("- `{flag}`: {}\n", md(meaning)));
            }
        }
    }
    o
}

/// Text for Markdown outside code: `<` and `>` as entities (a path's `<mount>` is no tag).
fn md(text: &str) -> String {
    text.replace('<', "&lt;").replace('>', "&gt;")
}

/// A table cell: Markdown text with `|` escaped.
fn cell(text: &str) -> String {
    md(text).replace('|', "\\|")
}

fn vb_types_md(info: &OpInfo) -> String {
    match info.vault_benchmark {
        VaultBenchmark::NoType => "none (no vault-benchmark test type sends this request)".into(),
        VaultBenchmark::Types(types) => types
            .iter()
            .map(|t| format!("`{}`", t.name))
            .collect::<Vec<_>>()
            .join(", "),
    }
}

fn kind_md(kind: OptionKind) -> String {
    match kind {
        OptionKind::Count { min } if min > 0 => format!("count (at least {min})"),
        OptionKind::Number { min, max } => format!("number ({min} to {max})"),
        OptionKind::Bytes { max: Some(max) } => {
            format!("bytes (at most {})", options::show_bytes(max))
        }
        k => k.name().into(),
    }
}

/// One setup or cleanup call: the JSON answer of a 2xx (Null when empty), or a message
/// naming what failed, where, and the server's reason.
pub(crate) fn call(
    client: &mut Client,
    method: &str,
    path: &str,
    body: Option<&Value>,
    what: &str,
) -> Result<Value, Cause> {
    let text = body.map(Value::to_string);
    let r = client
        .request(method, path, text.as_deref().map(str::as_bytes))
        .map_err(|e| e.within(format!("{what} failed")))?;
    if (200..300).contains(&r.status) {
        Ok(r.json().unwrap_or(Value::Null))
    } else {
        Err(Cause::Http {
            what: format!("{what} on {} failed", client.base()),
            status: r.status,
            excerpt: r.error_text(),
        })
    }
}

/// The string at `path` ("data.role_id") of a setup answer, or a message naming it.
pub(crate) fn json_str(v: &Value, path: &str, what: &str) -> Result<String, Cause> {
    path.split('.')
        .try_fold(v, |v, k| v.get(k))
        .and_then(Value::as_str)
        .map(String::from)
        .ok_or_else(|| Cause::from(format!("{what}: the answer has no {path}")))
}

/// `created()` of an operation whose setup enabled a fresh secrets engine at `mount`.
pub(crate) fn mount_created(kind: &str, mount: Option<&str>) -> Vec<Created> {
    mount
        .map(|m| Created {
            what: format!("{kind} mount '{m}'"),
            remove_with: format!("vault secrets disable {m}"),
        })
        .into_iter()
        .collect()
}

/// `cleanup()` of such an operation: disables the mount (once).
pub(crate) fn disable_mount(
    client: &mut Client,
    kind: &str,
    mount: &mut Option<String>,
) -> Result<(), Cause> {
    if let Some(m) = mount.as_deref() {
        call(
            client,
            "DELETE",
            &format!("/v1/sys/mounts/{m}"),
            None,
            &format!("disabling {kind} mount '{m}'"),
        )?;
    }
    *mount = None;
    Ok(())
}

/// `cleanup()` of an operation whose setup enabled an auth method at `path`: deletes the
/// identity entities its logins made (`delete_login_entities`), then disables it (which
/// also revokes every token its logins made), once. The path is disabled even when the
/// entities could not be deleted; the error then says they are left.
pub(crate) fn disable_auth(client: &mut Client, path: &mut Option<String>) -> Result<(), Cause> {
    if let Some(p) = path.as_deref() {
        let entities = delete_login_entities(client, p);
        call(
            client,
            "DELETE",
            &format!("/v1/sys/auth/{p}"),
            None,
            &format!("disabling auth path '{p}'"),
        )?;
        entities?;
    }
    *path = None;
    Ok(())
}

/// How many entities one batch-delete names at most.
const ENTITY_BATCH: usize = 500;

/// Deletes the identity entities the server made for logins on auth path `path`, before
/// the path goes: every identity that logs in (a role, a user, a JWT subject) gets an
/// entity with an alias on the path, and disabling the path removes the alias but leaves
/// the entity. An entity with an alias on any other path is left alone (these logins did
/// not make it alone). Returns how many were deleted; a path that is not there deletes
/// none. One place for every auth fixture: the operations' `disable_auth` and the
/// session's removal of an auth path by name (state files, orphans).
pub fn delete_login_entities(client: &mut Client, path: &str) -> Result<usize, Cause> {
    let auth = call(client, "GET", "/v1/sys/auth", None, "listing auth paths")?;
    let table = auth.get("data").filter(|d| d.is_object()).unwrap_or(&auth);
    let Some(accessor) = table
        .get(format!("{path}/"))
        .and_then(|e| e.get("accessor"))
        .and_then(Value::as_str)
        .map(str::to_string)
    else {
        return Ok(0);
    };
    let what = format!("listing the identity aliases of auth path '{path}'");
    let r = client
        .request("LIST", "/v1/identity/entity-alias/id", None)
        .map_err(|e| e.within(format!("{what} failed")))?;
    let aliases = match r.status {
        200..=299 => r.json().unwrap_or(Value::Null),
        404 => return Ok(0),
        status => {
            return Err(Cause::Http {
                what: format!(
                    "{what} on {} failed: its logins' identity entities are left",
                    client.base()
                ),
                status,
                excerpt: r.error_text(),
            });
        }
    };
    let ids = entities_only_on(&aliases, &accessor);
    for chunk in ids.chunks(ENTITY_BATCH) {
        call(
            client,
            "POST",
            "/v1/identity/entity/batch-delete",
            Some(&json!({ "entity_ids": chunk })),
            &format!(
                "deleting the {} identity entities logins on '{path}' made",
                ids.len()
            ),
        )?;
    }
    Ok(ids.len())
}

/// The entities (`canonical_id`) of a LIST of entity aliases (`data.key_info`) whose every
/// alias is on mount `accessor`, sorted.
fn entities_only_on(aliases: &Value, accessor: &str) -> Vec<String> {
    let mut on = std::collections::BTreeMap::<String, bool>::new();
    let info = aliases.pointer("/data/key_info").and_then(Value::as_object);
    for a in info.into_iter().flat_map(|m| m.values()) {
        let (Some(id), Some(acc)) = (
            a.get("canonical_id").and_then(Value::as_str),
            a.get("mount_accessor").and_then(Value::as_str),
        ) else {
            continue;
        };
        let only = on.entry(id.to_string()).or_insert(true);
        *only &= acc == accessor;
    }
    on.into_iter()
        .filter(|(_, only)| *only)
        .map(|(id, _)| id)
        .collect()
}

/// Deletes an ACL policy setup wrote, once.
pub(crate) fn delete_policy(client: &mut Client, policy: &mut Option<String>) -> Result<(), Cause> {
    if let Some(p) = policy.as_deref() {
        call(
            client,
            "DELETE",
            &format!("/v1/sys/policies/acl/{p}"),
            None,
            &format!("deleting policy '{p}'"),
        )?;
    }
    *policy = None;
    Ok(())
}

/// Refuses `--no-setup` for operations that cannot run without their fixture.
pub(crate) fn needs_setup(ctx: &SetupCtx, name: &str) -> Result<(), Error> {
    if ctx.no_setup {
        return Err(Error::input(format!(
            "{name} creates what it uses and cannot run with --no-setup"
        )));
    }
    Ok(())
}

/// The setup of a family that creates what it uses: refused under --no-setup, otherwise
/// `prepare` on a fresh setup client, its message a setup error.
pub(crate) fn setup_with(
    ctx: &SetupCtx,
    name: &str,
    prepare: impl FnOnce(&mut Client) -> Result<(), Cause>,
) -> Result<(), Error> {
    needs_setup(ctx, name)?;
    let mut client = (ctx.make_client)();
    prepare(&mut client).map_err(Error::setup)
}

/// 32 random lowercase hex digits (passwords of users vblast creates).
pub(crate) fn random_secret() -> String {
    (0..4).map(|_| fresh_name("")).collect()
}

pub(crate) use crate::vault::fixture::fresh_name;

#[cfg(test)]
mod tests {

    #[test]
    fn login_entities_are_those_whose_every_alias_is_on_the_path() {
        let aliases = json!({"data": {"key_info": {
            "a1": {"canonical_id": "e1", "mount_accessor": "auth_ours"},
            "a2": {"canonical_id": "e2", "mount_accessor": "auth_ours"},
            "a3": {"canonical_id": "e2", "mount_accessor": "auth_other"},
            "a4": {"canonical_id": "e3", "mount_accessor": "auth_other"},
            "a5": {"canonical_id": "e0", "mount_accessor": "auth_ours"},
            "a6": {"mount_accessor": "auth_ours"}
        }}});
        // e2 also has an alias elsewhere, e3 none here; sorted.
        assert_eq!(entities_only_on(&aliases, "auth_ours"), ["e0", "e1"]);
        assert!(entities_only_on(&json!({}), "auth_ours").is_empty());
    }

    use super::*;

    fn flags() -> OptionValues {
        let mut v = OptionValues::new();
        v.set("secrets", OptionValue::Number(10)).unwrap();
        v.set("secret-size", OptionValue::Number(8)).unwrap();
        v
    }

    #[test]
    fn mixes_parse_and_unknown_names_never_fall_through() {
        let m = parse_mix("kv-read:80, kv-write:20", &flags()).unwrap();
        assert_eq!(
            m.iter()
                .map(|o| (o.name.as_str(), o.weight))
                .collect::<Vec<_>>(),
            vec![("kv-read", 80), ("kv-write", 20)]
        );
        assert_eq!(parse_mix("kv-write", &flags()).unwrap()[0].weight, 1);
        for bad in [
            "kv-reed",
            "kv-read:x",
            "kv-read:0",
            "kv-read,kv-read",
            "",
            "kv-read,",
        ] {
            assert!(parse_mix(bad, &flags()).is_err(), "{bad}");
        }
        let e = parse_mix("kv-remove", &flags()).unwrap_err().to_string();
        assert!(
            e.contains("unknown operation 'kv-remove'") && e.contains("kv-read"),
            "{e}"
        );
    }

    #[test]
    fn every_registered_operation_builds_from_its_flags_and_is_listed() {
        let list = list_text();
        for info in registry() {
            let cfg = (info.config_from)(&flags());
            let op = (info.build)(&cfg).unwrap_or_else(|e| panic!("{}: {e}", info.name));
            assert!(
                op.created().is_empty(),
                "{} created something unset up",
                info.name
            );
            assert!(list.contains(info.name));
        }
        let names: std::collections::HashSet<_> = registry().iter().map(|o| o.name).collect();
        assert_eq!(names.len(), registry().len(), "names are unique");
    }

    #[test]
    fn configs_refuse_unknown_keys() {
        for info in registry() {
            let mut cfg = (info.config_from)(&flags());
            cfg.as_object_mut()
                .unwrap()
                .insert("nonsense".into(), Value::Bool(true));
            assert!((info.build)(&cfg).is_err(), "{}", info.name);
        }
    }

    /// Every entry says what belongs to it: its doc, its request, its options with kind
    /// and help, its vault-benchmark types (or the explicit NoType), its fixture sharing.
    #[test]
    fn every_entry_is_complete() {
        let mut vb_names = std::collections::HashSet::new();
        for info in registry() {
            let n = info.name;
            assert!(
                !info.about.is_empty() && !info.about.ends_with('.'),
                "{n}: about"
            );
            assert!(!info.request.is_empty(), "{n}: request");
            assert!(
                info.request.starts_with(['G', 'P', 'L', 'D']),
                "{n}: the request starts with its method"
            );
            for spec in info.options {
                assert!(!spec.help.is_empty(), "{n} --{}: help", spec.flag);
                assert_eq!(
                    spec.value_name.is_empty(),
                    spec.kind == OptionKind::Switch,
                    "{n} --{}: a value name unless a switch",
                    spec.flag
                );
                if let Some(d) = spec.default {
                    spec.parse(d)
                        .unwrap_or_else(|e| panic!("{n} --{}: default: {e}", spec.flag));
                }
                // One flag, one meaning for the command line: same kind and default.
                let first = options::spec_of(spec.flag).unwrap();
                assert_eq!(
                    (first.kind, first.default),
                    (spec.kind, spec.default),
                    "{n} --{}",
                    spec.flag
                );
            }
            match info.vault_benchmark {
                VaultBenchmark::Types(types) => {
                    assert!(!types.is_empty(), "{n}: Types(&[]): say NoType");
                    for t in types {
                        assert!(vb_names.insert(t.name), "{}: twice", t.name);
                    }
                }
                VaultBenchmark::NoType => {}
            }
            // Fixture sharing is declared; an operation without fixture creates nothing.
            if info.fixture == Fixture::None {
                let op = (info.build)(&(info.config_from)(&OptionValues::new())).unwrap();
                assert!(op.created().is_empty(), "{n}");
            }
        }
    }

    #[test]
    fn docs_operations_md_is_what_the_registry_generates() {
        assert!(
            include_str!("../../../docs/operations.md") == list_markdown(),
            "docs/operations.md differs from the registry: regenerate it with `vblast --list-ops --format markdown > docs/operations.md`"
        );
    }

    #[test]
    fn random_names_differ() {
        let naming = crate::vault::fixture::Naming::own();
        let a = naming.random_name("vblast-");
        let b = naming.random_name("vblast-");
        assert_ne!(a, b);
        assert_eq!(a.len(), 15);
    }
}
