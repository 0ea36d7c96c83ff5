//! The identity family: `identity`, vault-benchmark's `identity` test. Setup seeds the
//! identity store: ACL policies, entities (with policies), entity aliases on userpass
//! paths (one path per alias slot), userpass users for the login pool, and internal groups
//! (with entity members and policies), spread as vault-benchmark spreads them
//! (`balanced`, `empty`, `full` or `count` + `size`); it checks that a sample of logins
//! resolves to its entity. Then each request is the workload's: `login` logs in as a user
//! of the pool, `group_read` reads a group by id, `populate` asks `sys/health` (the seeding
//! is the point). Cleanup deletes the groups, entities (with their aliases) and policies
//! and disables the userpass paths, which revokes every token their logins made; unlike
//! vault-benchmark, `populate` is cleaned up too unless the run keeps what it made.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::options::COUNT_MAX;
use super::vb::{Keys, Mapped};
use super::{
    Bound, ConfigBound, Created, Fixture, OpInfo, OptionKind, OptionSpec, OptionValues, SetupCtx,
    VaultBenchmark, VaultOp, VbType, call, disable_auth, json_str, needs_setup, random_secret,
};
use crate::capture::Expect;
use crate::error::{Cause, Error};
use crate::signals::Stop;
use crate::template::{Piece, RequestSpec, index_width};
use crate::vault::client::Client;
use crate::workload::Operation;

const WORKLOADS: &[&str] = &["populate", "login", "group_read"];

const OPTIONS: &[OptionSpec] = &[
    OptionSpec {
        flag: "identity-workload",
        value_name: "populate|login|group_read",
        kind: OptionKind::Text,
        default: Some("populate"),
        help: "identity: what each request does: populate (sys/health; the seeding is the point), login (a user of the pool logs in), group_read (a group read by id)",
    },
    ENTITIES,
    ENTITY_ALIASES,
    OptionSpec {
        flag: "login-users",
        value_name: "N",
        kind: OptionKind::Count { min: 0 },
        default: Some("100"),
        help: "identity: userpass users of the login pool, each an alias of its entity (at most the aliases and the entities)",
    },
    GROUPS,
    IDENTITY_POLICIES,
];

const ENTITIES: OptionSpec = OptionSpec {
    flag: "entities",
    value_name: "N",
    kind: OptionKind::Count { min: 1 },
    default: Some("1000"),
    help: "identity: entities seeded",
};

const ENTITY_ALIASES: OptionSpec = OptionSpec {
    flag: "entity-aliases",
    value_name: "N",
    kind: OptionKind::Count { min: 0 },
    default: Some("0"),
    help: "identity: entity aliases seeded, spread evenly over the entities (one userpass path per alias of an entity)",
};

const GROUPS: OptionSpec = OptionSpec {
    flag: "groups",
    value_name: "N",
    kind: OptionKind::Count { min: 0 },
    default: Some("0"),
    help: "identity: internal groups seeded, the entities spread evenly over them",
};

const IDENTITY_POLICIES: OptionSpec = OptionSpec {
    flag: "identity-policies",
    value_name: "N",
    kind: OptionKind::Count { min: 0 },
    default: Some("0"),
    help: "identity: ACL policies seeded, spread evenly over the entities and groups",
};

/// The most userpass paths setup enables for aliases (`aliases.size`, or the aliases a
/// spread gives each entity): each alias of an entity sits on a path of its own, and each
/// path is a mount of the server's, not a thing to make by the thousand.
const ALIAS_PATHS_MAX: u64 = 100;
/// The most members of one group (`groups.size`): one write carries them all, 39 bytes an
/// id, so 100,000 is a 4 MB body, well under the server's 32 MiB request limit.
const GROUP_MEMBERS_MAX: u64 = 100_000;
/// The most policies of one entity or group (`policies.size`): one write carries their
/// names, and every token of a login carries them too.
const HOLDER_POLICIES_MAX: u64 = 10_000;

/// vault-benchmark's counts held to their flags' bounds (ten million, the most a run
/// creates; each is a server write at setup), and its spreads: `count` holders filled
/// (at most the holders, which build checks), `size` things each, bounded above.
const BOUNDS: &[ConfigBound] = &[
    flag_bound("entity_count", ENTITIES),
    flag_bound("alias_count", ENTITY_ALIASES),
    flag_bound("group_count", GROUPS),
    flag_bound("policy_count", IDENTITY_POLICIES),
    range_bound("aliases.count", COUNT_MAX),
    range_bound("aliases.size", ALIAS_PATHS_MAX),
    range_bound("groups.count", COUNT_MAX),
    range_bound("groups.size", GROUP_MEMBERS_MAX),
    range_bound("policies.count", COUNT_MAX),
    range_bound("policies.size", HOLDER_POLICIES_MAX),
];

const fn flag_bound(key: &'static str, spec: OptionSpec) -> ConfigBound {
    ConfigBound {
        key,
        file_key: "",
        bound: Bound::Flag(spec),
    }
}

const fn range_bound(key: &'static str, max: u64) -> ConfigBound {
    ConfigBound {
        key,
        file_key: "",
        bound: Bound::Range { min: 0, max },
    }
}

const DOC: &str = "vault-benchmark's `identity` test, with its keys and defaults (`workload = \"populate\"`, 1000 entities, no aliases, 100 login users, no groups, no policies; the `aliases`, `groups` and `policies` blocks spread them as it does). Setup writes, on one connection: the policies (`vblast-id-xxxxxxxx-policy-N`, each allowing a read of `secret/*`), the entities (`...-entity-N`) with their policies, one userpass path per alias of an entity (`vblast-id-xxxxxxxx`, then `...-1`, `...-2`) and the aliases on them, a userpass user for each entity of the login pool (a random password, never shown), and the internal groups with their members and policies; then each user of the pool logs in once and must resolve to its entity. `login` requests log in as the pool's users at random; `group_read` requests read the groups by id in turn; `populate` requests ask `sys/health`. Cleanup deletes the groups, entities (and aliases) and policies and disables the userpass paths, which revokes the logins' tokens. vault-benchmark keeps what `populate` seeds; vblast removes it unless the run keeps what it made (`--keep`, `cleanup = false`).";

/// One of vault-benchmark's spreads (`aliases`, `groups`, `policies` blocks): a `preset`,
/// or `count` things filled with `size` each.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IdentitySpread {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preset: Option<String>,
    #[serde(default)]
    pub count: u64,
    #[serde(default)]
    pub size: u64,
}

impl IdentitySpread {
    /// (how many of `holders` are filled, how many each gets) when `total` things are
    /// spread: `balanced` over all holders (rounded up), `full` all to each, `empty` none;
    /// `count` + `size` fill `count` holders with `size` each.
    fn resolve(&self, what: &str, holders: u64, total: u64) -> Result<(u64, u64), Cause> {
        if total == 0 || holders == 0 {
            return Ok((0, 0));
        }
        if self.count > 0 || self.size > 0 {
            if self.preset.is_some() {
                return Err(format!("{what}: give a preset or count and size, not both").into());
            }
            if self.count > holders || self.size > total {
                return Err(format!(
                    "{what}: count {} must be at most {holders} and size {} at most {total}",
                    self.count, self.size
                )
                .into());
            }
            return Ok((self.count, self.size));
        }
        match self.preset.as_deref() {
            None | Some("balanced") => Ok((holders, total.div_ceil(holders))),
            Some("empty") => Ok((0, 0)),
            Some("full") => Ok((holders, total)),
            Some(p) => {
                Err(format!("{what}: preset '{p}' is not one of balanced, empty, full").into())
            }
        }
    }
}

/// The family's config: vault-benchmark's `identity` keys.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IdentityConfig {
    pub workload: String,
    pub entity_count: u64,
    pub alias_count: u64,
    pub login_users: u64,
    pub group_count: u64,
    pub policy_count: u64,
    #[serde(default)]
    pub aliases: IdentitySpread,
    #[serde(default)]
    pub groups: IdentitySpread,
    #[serde(default)]
    pub policies: IdentitySpread,
}

/// What setup makes, resolved from the config.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct IdentityPlan {
    /// Entities with aliases, and aliases (userpass paths) each.
    alias_fill: u64,
    alias_each: u64,
    /// Users of the login pool (entities 0..login).
    login: u64,
    /// Groups with members, and members each.
    group_fill: u64,
    group_each: u64,
    /// Entities (and groups) with policies, and policies each.
    policy_fill: u64,
    policy_each: u64,
}

fn plan(c: &IdentityConfig) -> Result<IdentityPlan, Cause> {
    if c.entity_count == 0 {
        return Err("entity_count must be at least 1".into());
    }
    if !WORKLOADS.contains(&c.workload.as_str()) {
        return Err(format!(
            "workload '{}' is not one of populate, login, group_read",
            c.workload
        )
        .into());
    }
    let (alias_fill, alias_each) = c
        .aliases
        .resolve("aliases", c.entity_count, c.alias_count)?;
    let (group_fill, group_each) = if c.group_count == 0 {
        (0, 0)
    } else {
        c.groups.resolve("groups", c.group_count, c.entity_count)?
    };
    let (policy_fill, policy_each) =
        c.policies
            .resolve("policies", c.entity_count, c.policy_count)?;
    for (what, each, most) in [
        (
            "aliases (userpass paths) of an entity",
            alias_each,
            ALIAS_PATHS_MAX,
        ),
        ("members of a group", group_each, GROUP_MEMBERS_MAX),
        (
            "policies of an entity or group",
            policy_each,
            HOLDER_POLICIES_MAX,
        ),
    ] {
        if each > most {
            return Err(format!("{each} {what} is more than {most}").into());
        }
    }
    let login = if alias_fill == 0 || alias_each == 0 {
        0
    } else {
        c.login_users
            .min(c.alias_count)
            .min(c.entity_count)
            .min(alias_fill)
    };
    if c.workload == "login" && login == 0 {
        return Err("workload 'login' needs login_users and alias_count above 0 (aliases on the users' entities)".into());
    }
    if c.workload == "group_read" && c.group_count == 0 {
        return Err("workload 'group_read' needs group_count above 0".into());
    }
    Ok(IdentityPlan {
        alias_fill,
        alias_each,
        login,
        group_fill,
        group_each,
        policy_fill,
        policy_each,
    })
}

/// vault-benchmark's `identity` block: its keys, as it reads them.
fn identity_hcl(c: &mut Keys, out: &mut Mapped) -> Result<(), Cause> {
    if let Some(w) = c.string("workload")? {
        out.config.insert("workload".into(), json!(w));
    }
    if out.config.get("workload").and_then(Value::as_str) == Some("populate") {
        out.notes.push(format!(
            "test '{}': vault-benchmark keeps what the populate workload seeds; vblast removes it after the run unless cleanup = false",
            c.test
        ));
    }
    for key in [
        "entity_count",
        "alias_count",
        "login_users",
        "group_count",
        "policy_count",
    ] {
        if let Some(n) = c.number(key)? {
            out.config.insert(key.into(), json!(n));
        }
    }
    for block in ["aliases", "groups", "policies"] {
        let mut b = c.block(block)?;
        let mut spread = serde_json::Map::new();
        if let Some(p) = b.string("preset")? {
            spread.insert("preset".into(), json!(p));
        }
        for key in ["count", "size"] {
            if let Some(n) = b.number(key)? {
                spread.insert(key.into(), json!(n));
            }
        }
        b.finish(&mut out.named)?;
        if !spread.is_empty() {
            out.config.insert(block.into(), Value::Object(spread));
        }
    }
    Ok(())
}

pub const IDENTITY: OpInfo = OpInfo {
    name: "identity",
    about: "the identity store seeded at setup; each request logs in as a user of it, reads a group, or asks sys/health",
    request: "POST /v1/auth/<path>/login/<user> (login), GET /v1/identity/group/id/<id> (group_read), GET /v1/sys/health (populate)",
    doc: DOC,
    options: OPTIONS,
    also: &[],
    config_from,
    build,
    vault_benchmark: VaultBenchmark::Types(&[VbType {
        name: "identity",
        config: identity_hcl,
    }]),
    fixture: Fixture::NotShareable,
    bounds: BOUNDS,
};

fn config_from(f: &OptionValues) -> Value {
    let n = |flag: &str, d: u64| f.number(flag).unwrap_or(d);
    serde_json::to_value(IdentityConfig {
        workload: f
            .text("identity-workload")
            .unwrap_or_else(|| "populate".into()),
        entity_count: n("entities", 1000),
        alias_count: n("entity-aliases", 0),
        login_users: n("login-users", 100),
        group_count: n("groups", 0),
        policy_count: n("identity-policies", 0),
        aliases: IdentitySpread::default(),
        groups: IdentitySpread::default(),
        policies: IdentitySpread::default(),
    })
    .unwrap_or(Value::Null)
}

fn build(v: &Value) -> Result<Box<dyn VaultOp>, Cause> {
    let config: IdentityConfig =
        serde_json::from_value(v.clone()).map_err(|e| format!("bad config: {e}"))?;
    let plan = plan(&config)?;
    Ok(Box::new(Identity {
        config,
        plan,
        base: None,
        paths: Vec::new(),
        policies: 0,
        entities: Vec::new(),
        groups: Vec::new(),
        password: random_secret(),
    }))
}

struct Identity {
    config: IdentityConfig,
    plan: IdentityPlan,
    /// `vblast-id-xxxxxxxx`: the first userpass path, and the prefix of every name.
    base: Option<String>,
    /// The userpass paths enabled (one per alias slot), with their accessors.
    paths: Vec<(String, String)>,
    /// Policies written: `<base>-policy-0..policies`.
    policies: u64,
    /// Ids of the entities and groups created, in order.
    entities: Vec<String>,
    groups: Vec<String>,
    /// The login pool's password (random, never shown).
    password: String,
}

impl Identity {
    fn base(&self) -> &str {
        self.base.as_deref().unwrap_or("unset")
    }

    fn entity_name(&self, i: u64) -> String {
        let w = index_width(self.config.entity_count);
        format!("{}-entity-{i:0w$}", self.base())
    }

    fn policy_names(&self, holder: u64) -> Vec<String> {
        let p = self.plan;
        if holder >= p.policy_fill || self.policies == 0 {
            return Vec::new();
        }
        (0..p.policy_each)
            .map(|k| (holder * p.policy_each + k) % self.policies)
            .map(|k| format!("{}-policy-{k}", self.base()))
            .collect()
    }

    fn enable_paths(&mut self, client: &mut Client) -> Result<(), Cause> {
        for slot in 0..self.plan.alias_each {
            let path = match slot {
                0 => self.base().to_string(),
                s => format!("{}-{s}", self.base()),
            };
            call(
                client,
                "POST",
                &format!("/v1/sys/auth/{path}"),
                Some(&json!({"type": "userpass", "description": "vblast load test (temporary)"})),
                &format!("enabling userpass at '{path}'"),
            )?;
            self.paths.push((path, String::new()));
        }
        if self.paths.is_empty() {
            return Ok(());
        }
        let table = call(client, "GET", "/v1/sys/auth", None, "listing auth paths")?;
        let table = table
            .get("data")
            .filter(|d| d.is_object())
            .unwrap_or(&table);
        for (path, accessor) in &mut self.paths {
            *accessor = table
                .get(format!("{path}/"))
                .and_then(|m| m.get("accessor"))
                .and_then(Value::as_str)
                .map(String::from)
                .ok_or_else(|| Cause::from(format!("auth path '{path}' has no accessor")))?;
        }
        Ok(())
    }

    fn write_policies(&mut self, client: &mut Client, stop: &Stop) -> Result<(), Cause> {
        for i in 0..self.config.policy_count {
            stopped(stop)?;
            let name = format!("{}-policy-{i}", self.base());
            call(
                client,
                "POST",
                &format!("/v1/sys/policies/acl/{name}"),
                Some(&json!({"policy": "path \"secret/*\" { capabilities = [\"read\"] }"})),
                &format!("writing policy '{name}'"),
            )?;
            self.policies = i + 1;
        }
        Ok(())
    }

    /// Entity `i`: its policies, its aliases, and its user if it is in the login pool.
    fn seed_entity(&mut self, client: &mut Client, i: u64) -> Result<(), Cause> {
        let name = self.entity_name(i);
        let mut body = json!({ "name": name });
        let policies = self.policy_names(i);
        if !policies.is_empty() {
            body["policies"] = json!(policies);
        }
        let answer = call(
            client,
            "POST",
            "/v1/identity/entity",
            Some(&body),
            &format!("creating entity '{name}'"),
        )?;
        let id = json_str(&answer, "data.id", &format!("creating entity '{name}'"))?;
        self.entities.push(id.clone());
        if i < self.plan.alias_fill {
            for (slot, (_, accessor)) in self.paths.iter().enumerate() {
                let alias = match slot {
                    0 => name.clone(),
                    s => format!("{name}-{s}"),
                };
                call(
                    client,
                    "POST",
                    "/v1/identity/entity-alias",
                    Some(&json!({"name": alias, "canonical_id": id, "mount_accessor": accessor})),
                    &format!("creating alias '{alias}'"),
                )?;
            }
        }
        if i < self.plan.login {
            call(
                client,
                "POST",
                &format!("/v1/auth/{}/users/{name}", self.base()),
                Some(&json!({ "password": self.password })),
                &format!("creating userpass user '{name}'"),
            )?;
        }
        Ok(())
    }

    fn seed_groups(&mut self, client: &mut Client, stop: &Stop) -> Result<(), Cause> {
        let p = self.plan;
        let n = self.entities.len() as u64;
        for g in 0..self.config.group_count {
            stopped(stop)?;
            let name = format!("{}-group-{g}", self.base());
            let members: Vec<&String> = if g < p.group_fill && n > 0 {
                (0..p.group_each)
                    .map(|k| &self.entities[((g * p.group_each + k) % n) as usize])
                    .collect()
            } else {
                Vec::new()
            };
            let mut body = json!({"name": name, "type": "internal", "member_entity_ids": members});
            let policies = self.policy_names(g);
            if !policies.is_empty() {
                body["policies"] = json!(policies);
            }
            let answer = call(
                client,
                "POST",
                "/v1/identity/group",
                Some(&body),
                &format!("creating group '{name}'"),
            )?;
            self.groups.push(json_str(
                &answer,
                "data.id",
                &format!("creating group '{name}'"),
            )?);
        }
        Ok(())
    }

    /// Each user of the pool logs in once and must resolve to its own entity.
    fn check_logins(&self, client: &mut Client, stop: &Stop) -> Result<(), Cause> {
        for i in 0..self.plan.login {
            stopped(stop)?;
            let name = self.entity_name(i);
            let what = format!("checking the login of '{name}'");
            let answer = call(
                client,
                "POST",
                &format!("/v1/auth/{}/login/{name}", self.base()),
                Some(&json!({ "password": self.password })),
                &what,
            )?;
            let got = json_str(&answer, "auth.entity_id", &what)?;
            if got != self.entities[i as usize] {
                return Err(format!(
                    "{what}: it resolved to entity {got}, not to '{name}' ({})",
                    self.entities[i as usize]
                )
                .into());
            }
        }
        Ok(())
    }

    fn prepare(&mut self, ctx: &SetupCtx) -> Result<(), Cause> {
        let mut client = (ctx.make_client)();
        let base = ctx.naming.random_name("vblast-id-");
        // Every other name is the base's and a suffix: the state file names them all.
        ctx.naming.claim_prefix(&format!("{base}-"));
        self.base = Some(base);
        self.enable_paths(&mut client)?;
        self.write_policies(&mut client, ctx.stop)?;
        let total = self.config.entity_count;
        let mut line = ctx.log.start("identity entities", total);
        for i in 0..total {
            stopped(ctx.stop)?;
            self.seed_entity(&mut client, i)?;
            line.show(i + 1);
        }
        line.finish(total, 1);
        self.seed_groups(&mut client, ctx.stop)?;
        self.check_logins(&mut client, ctx.stop)
    }
}

fn stopped(stop: &Stop) -> Result<(), Cause> {
    if stop.is_set() {
        return Err("setup stopped".into());
    }
    Ok(())
}

impl VaultOp for Identity {
    fn check(&self, ctx: &SetupCtx) -> Result<(), Error> {
        needs_setup(ctx, IDENTITY.name)
    }

    fn setup(&mut self, ctx: &SetupCtx) -> Result<(), Error> {
        needs_setup(ctx, IDENTITY.name)?;
        self.prepare(ctx).map_err(|e| match ctx.stop.signal() {
            Some(s) => Error::Stopped(s),
            None => Error::setup(e),
        })
    }

    fn operation(&self) -> Operation {
        let json_body = |v: Value| vec![Piece::lit(v.to_string())];
        let (method, path, body, expect) = match self.config.workload.as_str() {
            "login" => {
                // The pool's names, zero-padded to the width of all the entities'.
                let pad = index_width(self.config.entity_count) - index_width(self.plan.login);
                let prefix = format!(
                    "/v1/auth/{0}/login/{0}-entity-{1}",
                    self.base(),
                    "0".repeat(pad)
                );
                (
                    "POST",
                    vec![
                        Piece::lit(prefix),
                        Piece::Index {
                            count: self.plan.login.max(1),
                        },
                    ],
                    Some(json_body(json!({ "password": self.password }))),
                    Expect::present("auth.client_token"),
                )
            }
            "group_read" => (
                "GET",
                vec![
                    Piece::lit("/v1/identity/group/id/"),
                    Piece::Pool {
                        items: self.groups.iter().map(|g| g.as_bytes().to_vec()).collect(),
                    },
                ],
                None,
                Expect::present("data.id"),
            ),
            _ => (
                "GET",
                vec![Piece::lit("/v1/sys/health")],
                None,
                Expect::equals("sealed", "false"),
            ),
        };
        let headers = match body {
            Some(_) => vec![("Content-Type".into(), "application/json".into())],
            None => vec![],
        };
        let mut op = Operation::new(
            IDENTITY.name,
            RequestSpec {
                method: method.into(),
                path,
                headers,
                body,
                captured_headers: vec![],
            },
        );
        op.expect = Some(expect);
        op
    }

    fn created(&self) -> Vec<Created> {
        let mut out = Vec::new();
        let base = self.base();
        if !self.groups.is_empty() {
            out.push(Created {
                what: format!("{} identity groups '{base}-group-*'", self.groups.len()),
                remove_with: format!("vault delete identity/group/name/{base}-group-N (each)"),
            });
        }
        if !self.entities.is_empty() {
            out.push(Created {
                what: format!(
                    "{} identity entities '{base}-entity-*'",
                    self.entities.len()
                ),
                remove_with: format!("vault delete identity/entity/name/{base}-entity-N (each)"),
            });
        }
        if self.policies > 0 {
            out.push(Created {
                what: format!("{} policies '{base}-policy-*'", self.policies),
                remove_with: format!("vault policy delete {base}-policy-N (each)"),
            });
        }
        for (path, _) in &self.paths {
            out.push(Created::auth_path("userpass", path, ""));
        }
        out
    }

    fn cleanup(&mut self, client: &mut Client, _stop: &Stop) -> Result<(), Cause> {
        while let Some(id) = self.groups.last() {
            call(
                client,
                "DELETE",
                &format!("/v1/identity/group/id/{id}"),
                None,
                &format!("deleting group {id}"),
            )?;
            self.groups.pop();
        }
        while let Some(id) = self.entities.last() {
            call(
                client,
                "DELETE",
                &format!("/v1/identity/entity/id/{id}"),
                None,
                &format!("deleting entity {id}"),
            )?;
            self.entities.pop();
        }
        while self.policies > 0 {
            let name = format!("{}-policy-{}", self.base(), self.policies - 1);
            call(
                client,
                "DELETE",
                &format!("/v1/sys/policies/acl/{name}"),
                None,
                &format!("deleting policy '{name}'"),
            )?;
            self.policies -= 1;
        }
        while let Some((path, _)) = self.paths.last() {
            disable_auth(client, &mut Some(path.clone()))?;
            self.paths.pop();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(workload: &str, e: u64, a: u64, l: u64, g: u64, p: u64) -> IdentityConfig {
        IdentityConfig {
            workload: workload.into(),
            entity_count: e,
            alias_count: a,
            login_users: l,
            group_count: g,
            policy_count: p,
            aliases: IdentitySpread::default(),
            groups: IdentitySpread::default(),
            policies: IdentitySpread::default(),
        }
    }

    #[test]
    fn spreads_are_vault_benchmarks() {
        let p = plan(&cfg("login", 1000, 3000, 100, 50, 10)).unwrap();
        assert_eq!((p.alias_fill, p.alias_each, p.login), (1000, 3, 100));
        assert_eq!((p.group_fill, p.group_each), (50, 20));
        assert_eq!((p.policy_fill, p.policy_each), (1000, 1));
        let mut c = cfg("login", 1000, 1000, 100, 0, 0);
        c.aliases = IdentitySpread {
            preset: None,
            count: 200,
            size: 5,
        };
        let p = plan(&c).unwrap();
        assert_eq!((p.alias_fill, p.alias_each, p.login), (200, 5, 100));
        let mut c = cfg("login", 1000, 5, 100, 0, 0);
        c.aliases.preset = Some("full".into());
        assert_eq!(plan(&c).unwrap().alias_each, 5);
        let p = plan(&cfg("populate", 1000, 0, 100, 0, 0)).unwrap();
        assert_eq!(p.login, 0, "no aliases, no login pool");
    }

    /// What a spread gives each holder is bounded whichever way it comes (the flags, a
    /// preset, or count and size): balanced aliases of 10,000,000 over one entity would be
    /// as many userpass paths.
    #[test]
    fn a_spreads_share_of_each_holder_is_bounded() {
        let e = plan(&cfg("populate", 1, 10_000_000, 0, 0, 0)).unwrap_err();
        assert!(
            e.to_string()
                .contains("10000000 aliases (userpass paths) of an entity is more than 100"),
            "{e}"
        );
        let e = plan(&cfg("populate", 200_000, 0, 0, 1, 0)).unwrap_err();
        assert!(
            e.to_string()
                .contains("200000 members of a group is more than 100000"),
            "{e}"
        );
        let mut c = cfg("populate", 10, 0, 0, 0, 20_000);
        c.policies.preset = Some("full".into());
        let e = plan(&c).unwrap_err();
        assert!(
            e.to_string()
                .contains("20000 policies of an entity or group"),
            "{e}"
        );
        assert!(plan(&cfg("populate", 100_000, 100 * 100_000, 0, 1, 10_000)).is_ok());
    }

    #[test]
    fn impossible_workloads_are_refused() {
        for (c, want) in [
            (
                cfg("login", 10, 0, 100, 0, 0),
                "login_users and alias_count",
            ),
            (cfg("group_read", 10, 0, 0, 0, 0), "group_count"),
            (cfg("bloat", 10, 0, 0, 0, 0), "not one of"),
            (cfg("populate", 0, 0, 0, 0, 0), "entity_count"),
        ] {
            let e = plan(&c).unwrap_err().to_string();
            assert!(e.contains(want), "{e}");
        }
        let mut c = cfg("group_read", 10, 0, 0, 5, 0);
        c.groups = IdentitySpread {
            preset: Some("full".into()),
            count: 2,
            size: 2,
        };
        assert!(plan(&c).unwrap_err().to_string().contains("not both"));
        c.groups = IdentitySpread {
            preset: Some("most".into()),
            count: 0,
            size: 0,
        };
        assert!(plan(&c).unwrap_err().to_string().contains("preset 'most'"));
    }
}
