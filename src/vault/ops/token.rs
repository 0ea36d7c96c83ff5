//! The token family: `token-create`, `token-lookup`, `token-renew`, `token-revoke` (each
//! revoke is preceded, on its connection, by the creation of the token it revokes: a
//! step reported as its own row, `token-revoke/create`). Setup writes a policy
//! (`vblast-token-xxxxxxxx`) allowing token creation and makes a parent token with it;
//! every token of the run is that parent's child with the `default` policy and a short
//! TTL; the parent's accessor (never the token) goes to the state file. Cleanup revokes
//! the parent, which revokes every child, and deletes the policy; `vblast cleanup
//! --run-id` revokes a killed run's parent by its accessor.
//!
//! Shared by the shards of a run (src/session/fixtures.rs): `vblast setup` writes the policy under
//! a name derived from the run id and makes no token; a shard waits for the policy and
//! makes a parent token of its own with it, revoked (with every child) at the shard's end;
//! `vblast cleanup` deletes the policy.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::auth::{DEFAULT_TOKEN_TTL, check_token_settings};
use super::{
    Created, Fixture, OpInfo, OptionSpec, OptionValues, SetupCtx, VaultBenchmark, VaultOp, call,
    delete_policy, json_str, needs_setup, setup_with,
    shared::{self, Mode},
};
use crate::capture::{Capture, Expect};
use crate::error::{Cause, Error};
use crate::signals::Stop;
use crate::template::{Piece, RequestSpec};
use crate::vault::client::Client;
use crate::vault::fixture::Naming;
use crate::workload::Operation;

/// The parent token lives this long at most, should cleanup never run.
const PARENT_TTL: &str = "24h";

const OPTIONS: &[OptionSpec] = &[
    OptionSpec {
        help: "TTL of the child tokens (default 2m); all are revoked at cleanup",
        ..super::auth::TOKEN_TTL
    },
    OptionSpec {
        help: "type of the tokens token-create makes (default service)",
        ..super::auth::TOKEN_TYPE
    },
];

const DOC: &str = "Setup writes a policy (`vblast-token-xxxxxxxx`) allowing token creation and makes a parent token with it; every token of the run is that parent's child with the `default` policy and a short TTL. Cleanup revokes the parent, which revokes every child, and deletes the policy. Shards share the policy; each makes a parent token of its own. Each token-revoke is preceded, on its connection, by the creation of the token it revokes: a step reported as its own row, `token-revoke/create`.";

pub const CREATE: OpInfo = OpInfo {
    name: "token-create",
    request: "POST /v1/auth/token/create",
    doc: DOC,
    also: &[],
    vault_benchmark: VaultBenchmark::NoType,
    fixture: Fixture::Shared,
    bounds: &[],
    about: "POST auth/token/create: a child token with the default policy and a short TTL",
    options: OPTIONS,
    config_from,
    build: build_create,
};

pub const LOOKUP: OpInfo = OpInfo {
    name: "token-lookup",
    request: "GET /v1/auth/token/lookup-self",
    doc: DOC,
    also: &[],
    vault_benchmark: VaultBenchmark::NoType,
    fixture: Fixture::Shared,
    bounds: &[],
    about: "GET auth/token/lookup-self with a child token made at setup",
    options: OPTIONS,
    config_from,
    build: build_lookup,
};

pub const RENEW: OpInfo = OpInfo {
    name: "token-renew",
    request: "POST /v1/auth/token/renew-self",
    doc: DOC,
    also: &[],
    vault_benchmark: VaultBenchmark::NoType,
    fixture: Fixture::Shared,
    bounds: &[],
    about: "POST auth/token/renew-self of a child token made at setup, by --token-ttl",
    options: OPTIONS,
    config_from,
    build: build_renew,
};

pub const REVOKE: OpInfo = OpInfo {
    name: "token-revoke",
    request: "POST /v1/auth/token/revoke",
    doc: DOC,
    also: &[],
    vault_benchmark: VaultBenchmark::NoType,
    fixture: Fixture::Shared,
    bounds: &[],
    about: "POST auth/token/revoke of a child token the connection created just before",
    options: OPTIONS,
    config_from,
    build: build_revoke,
};

/// The per-connection slot holding the token that the next revoke revokes.
const REVOKE_SLOT: u8 = 1;

/// The family's config.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenConfig {
    pub token_ttl: String,
    pub token_type: String,
}

fn config_from(f: &OptionValues) -> Value {
    serde_json::to_value(TokenConfig {
        token_ttl: f
            .text("token-ttl")
            .unwrap_or_else(|| DEFAULT_TOKEN_TTL.into()),
        token_type: f.text("token-type").unwrap_or_else(|| "service".into()),
    })
    .unwrap_or(Value::Null)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TokenKind {
    Create,
    Lookup,
    Renew,
    Revoke,
}

impl TokenKind {
    fn name(self) -> &'static str {
        match self {
            TokenKind::Create => "token-create",
            TokenKind::Lookup => "token-lookup",
            TokenKind::Renew => "token-renew",
            TokenKind::Revoke => "token-revoke",
        }
    }
}

fn build(kind: TokenKind, v: &Value) -> Result<Box<dyn VaultOp>, Cause> {
    let config: TokenConfig =
        serde_json::from_value(v.clone()).map_err(|e| format!("bad config: {e}"))?;
    check_token_settings(&config.token_ttl, &config.token_type)?;
    if kind != TokenKind::Create && config.token_type == "batch" {
        return Err(Cause::from(format!(
            "{} works on service tokens (batch tokens are neither renewable nor revocable): leave --token-type out",
            kind.name()
        )));
    }
    Ok(Box::new(TokenOp {
        kind,
        config,
        policy: None,
        children_named: "vblast".into(),
        parent: None,
        child: String::new(),
    }))
}

fn build_create(v: &Value) -> Result<Box<dyn VaultOp>, Cause> {
    build(TokenKind::Create, v)
}

fn build_lookup(v: &Value) -> Result<Box<dyn VaultOp>, Cause> {
    build(TokenKind::Lookup, v)
}

fn build_renew(v: &Value) -> Result<Box<dyn VaultOp>, Cause> {
    build(TokenKind::Renew, v)
}

fn build_revoke(v: &Value) -> Result<Box<dyn VaultOp>, Cause> {
    build(TokenKind::Revoke, v)
}

/// The parent token: its secret (for requests, never printed) and its accessor (for
/// messages and revocation).
struct Parent {
    token: String,
    accessor: String,
}

struct TokenOp {
    kind: TokenKind,
    config: TokenConfig,
    /// The policy's name, as soon as it may exist.
    policy: Option<String>,
    /// The display name of the children: the run's policy's name (a shard's too).
    children_named: String,
    parent: Option<Parent>,
    /// The child token lookup and renew use.
    child: String,
}

const POLICY: &str = r#"
path "auth/token/create" { capabilities = ["create", "update"] }
path "auth/token/lookup-self" { capabilities = ["read"] }
path "auth/token/renew-self" { capabilities = ["update"] }
path "auth/token/revoke" { capabilities = ["update"] }
"#;

impl TokenOp {
    /// A child's body. Its display name is the run's policy's name (the server makes it
    /// `token-vblast-token-xxxxxxxx`): a child a create in flight at a kill made after its
    /// parent was revoked is found by it (`session::fixtures::late`).
    fn child_body(&self, ttl: &str, kind: &str) -> Value {
        json!({
            "policies": ["default"],
            "ttl": ttl,
            "type": kind,
            "renewable": true,
            "display_name": self.children_named,
        })
    }

    fn prepare(&mut self, client: &mut Client, naming: &Naming) -> Result<(), Cause> {
        let policy = self.write_policy(client, naming)?;
        self.make_parent(client, &policy, naming)
    }

    /// Writes the parent's policy under a fresh name; returns the name.
    fn write_policy(&mut self, client: &mut Client, naming: &Naming) -> Result<String, Cause> {
        let policy = naming.random_name("vblast-token-");
        self.policy = Some(policy.clone());
        self.children_named = policy.clone();
        call(
            client,
            "PUT",
            &format!("/v1/sys/policies/acl/{policy}"),
            Some(&json!({ "policy": POLICY })),
            &format!("writing policy '{policy}'"),
        )?;
        Ok(policy)
    }

    /// A shard of a run sharing the fixture: waits for the policy `vblast setup` writes,
    /// then makes a parent token of its own with it (revoked, with every child, at the
    /// shard's end: no token travels between the steps).
    fn join(&mut self, ctx: &SetupCtx) -> Result<(), Error> {
        let policy = ctx.naming.random_name("vblast-token-");
        shared::wait_policy(ctx, "", &policy)?;
        self.children_named = policy.clone();
        let mut client = (ctx.make_client)();
        self.make_parent(&mut client, &policy, ctx.naming)
            .map_err(Error::setup)
    }

    /// Makes the parent token with `policy` (and, for lookup and renew, its child); its
    /// accessor goes to `naming` (the state file: `vblast cleanup` revokes it by accessor).
    fn make_parent(
        &mut self,
        client: &mut Client,
        policy: &str,
        naming: &Naming,
    ) -> Result<(), Cause> {
        let what = "creating the parent token".to_string();
        let v = call(
            client,
            "POST",
            "/v1/auth/token/create",
            Some(&json!({
                "policies": [policy],
                "ttl": PARENT_TTL,
                "display_name": "vblast-parent",
            })),
            &what,
        )?;
        let token = json_str(&v, "auth.client_token", &what)?;
        let accessor = json_str(&v, "auth.accessor", &what)?;
        naming.record_token(&accessor);
        self.parent = Some(Parent {
            token: token.clone(),
            accessor,
        });
        if matches!(self.kind, TokenKind::Lookup | TokenKind::Renew) {
            // Lives as long as the parent unless renewed down to --token-ttl.
            let mut as_parent = client.clone_fresh().with_token(&token);
            let what = "creating the child token".to_string();
            let v = call(
                &mut as_parent,
                "POST",
                "/v1/auth/token/create",
                Some(&self.child_body(PARENT_TTL, "service")),
                &what,
            )?;
            self.child = json_str(&v, "auth.client_token", &what)?;
        }
        Ok(())
    }
}

impl TokenOp {
    /// A child token made by the parent.
    fn create_request(&self, parent: &str, name: &str) -> Operation {
        let body = self.child_body(&self.config.token_ttl, &self.config.token_type);
        Operation::new(
            name,
            RequestSpec {
                method: "POST".into(),
                path: vec![Piece::lit("/v1/auth/token/create")],
                headers: vec![
                    ("X-Vault-Token".into(), parent.into()),
                    ("Content-Type".into(), "application/json".into()),
                ],
                body: Some(vec![Piece::lit(body.to_string())]),
                captured_headers: vec![],
            },
        )
    }
}

impl VaultOp for TokenOp {
    fn check(&self, ctx: &SetupCtx) -> Result<(), Error> {
        needs_setup(ctx, self.kind.name())
    }

    fn setup(&mut self, ctx: &SetupCtx) -> Result<(), Error> {
        match shared::mode(ctx) {
            // `vblast setup`: the policy alone; each shard makes its own parent token.
            Mode::Create => setup_with(ctx, self.kind.name(), |client| {
                self.write_policy(client, ctx.naming).map(drop)
            }),
            Mode::Join => self.join(ctx),
            // `vblast cleanup`: the policy setup wrote, to delete.
            Mode::Remove => {
                self.policy = Some(ctx.naming.random_name("vblast-token-"));
                Ok(())
            }
            Mode::Own => setup_with(ctx, self.kind.name(), |client| {
                self.prepare(client, ctx.naming)
            }),
        }
    }

    fn operations(&self) -> Vec<Operation> {
        if self.kind != TokenKind::Revoke {
            return vec![self.operation()];
        }
        let parent = self.parent.as_ref().map_or("", |p| p.token.as_str());
        let mut revoke = Operation::new(
            self.kind.name(),
            RequestSpec {
                method: "POST".into(),
                path: vec![Piece::lit("/v1/auth/token/revoke")],
                headers: vec![
                    ("X-Vault-Token".into(), parent.into()),
                    ("Content-Type".into(), "application/json".into()),
                ],
                body: Some(vec![
                    Piece::lit(r#"{"token":""#),
                    Piece::Captured { slot: REVOKE_SLOT },
                    Piece::lit(r#""}"#),
                ]),
                captured_headers: vec![],
            },
        );
        revoke.needs = Some(REVOKE_SLOT);
        revoke.consumes = true;
        let mut create = self.create_request(parent, "token-revoke/create");
        create.weight = 0;
        create.capture = Some(Capture {
            slot: REVOKE_SLOT,
            path: vec!["auth".into(), "client_token".into()],
        });
        vec![revoke, create]
    }

    fn operation(&self) -> Operation {
        let parent = self.parent.as_ref().map_or("", |p| p.token.as_str());
        if matches!(self.kind, TokenKind::Create | TokenKind::Revoke) {
            let mut op = self.create_request(parent, self.kind.name());
            op.expect = Some(Expect::present("auth.client_token"));
            return op;
        }
        let json = ("Content-Type".to_string(), "application/json".to_string());
        let (method, path, token, body, expect) = match self.kind {
            TokenKind::Create | TokenKind::Revoke | TokenKind::Lookup => (
                "GET",
                "/v1/auth/token/lookup-self",
                self.child.as_str(),
                None,
                "data.accessor",
            ),
            TokenKind::Renew => (
                "POST",
                "/v1/auth/token/renew-self",
                self.child.as_str(),
                Some(json!({ "increment": self.config.token_ttl }).to_string()),
                "auth.client_token",
            ),
        };
        let mut headers = vec![("X-Vault-Token".to_string(), token.to_string())];
        if body.is_some() {
            headers.push(json);
        }
        let mut op = Operation::new(
            self.kind.name(),
            RequestSpec {
                method: method.into(),
                path: vec![Piece::lit(path)],
                headers,
                body: body.map(|b| vec![Piece::lit(b)]),
                captured_headers: vec![],
            },
        );
        op.expect = Some(Expect::present(expect));
        op
    }

    fn created(&self) -> Vec<Created> {
        let mut out = Vec::new();
        if let Some(p) = &self.parent {
            out.push(Created {
                what: format!(
                    "parent token (accessor {}) and its child tokens",
                    p.accessor
                ),
                remove_with: format!("vault token revoke -accessor {}", p.accessor),
            });
        }
        if let Some(policy) = &self.policy {
            out.push(Created::policy(policy));
        }
        out
    }

    /// Revokes the parent (OpenBao answers once every child is revoked; a revocation
    /// longer than the request's timeout goes on, and the session waits for it by the
    /// accessor, bounded by --cleanup-timeout), then deletes the policy either way.
    fn cleanup(&mut self, client: &mut Client, _stop: &Stop) -> Result<(), Cause> {
        let revoked = match &self.parent {
            Some(p) => call(
                client,
                "POST",
                "/v1/auth/token/revoke-accessor",
                Some(&json!({ "accessor": p.accessor })),
                "revoking the parent token",
            )
            .map(drop),
            None => Ok(()),
        };
        if revoked.is_ok() {
            self.parent = None;
        }
        let deleted = delete_policy(client, &mut self.policy);
        revoked.and(deleted)
    }
}
