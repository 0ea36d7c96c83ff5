//! The JWT login family: `jwt-login`. Setup makes an ECDSA P-256 key pair in memory (ring),
//! enables the jwt auth method at a fresh path (`vblast-jwt-xxxxxxxx`) with the public key
//! as its only `jwt_validation_pubkeys`, writes a policy `vblast-jwt-xxxxxxxx` and a role
//! whose tokens carry it, and signs a pool of JWTs (ES256) for that role; the requests log
//! in with those JWTs in turn and must answer with `auth.client_token`. Cleanup disables
//! the path (revoking every token the logins made) and deletes the policy. The private key
//! never leaves the process, so the pre-signed JWTs are worthless once the path is gone.
//!
//! Shared by the shards of a run (src/session/fixtures.rs): setup writes the policy alone (its
//! name derived from the run id); no key travels: each shard makes its own key pair in
//! memory and its own auth path (`vblast-jwt-xxxxxxxx-yyyyyyyy`: a prefix derived from the
//! run id, then 8 random hex digits) trusting its public key, with the role, logs in
//! there, and disables the path at its end; cleanup disables every path under the run's
//! prefix (a killed shard's) and deletes the policy.

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::auth::{DEFAULT_TOKEN_TTL, check_token_settings};
use super::vb::{Keys, Mapped, set_in, token_settings};
use super::{
    Bound, ConfigBound, Created, Fixture, OpInfo, OptionSpec, OptionValues, SetupCtx,
    VaultBenchmark, VaultOp, VbType, call, delete_policy, disable_auth, fresh_name, needs_setup,
    setup_with,
    shared::{self, Mode},
};
use crate::capture::Expect;
use crate::error::{Cause, Error};
use crate::signals::Stop;
use crate::template::{Piece, RequestSpec};
use crate::vault::client::Client;
use crate::vault::fixture::Naming;
use crate::workload::Operation;

/// JWTs signed at setup unless the config says otherwise.
pub const DEFAULT_POOL: usize = 100;
/// The most JWTs pre-signed at setup: each is signed in this process (no server write)
/// and held in memory, about 600 bytes, so 100,000 is some 60 MB and seconds of signing.
const POOL_MAX: usize = 100_000;
/// How long the pre-signed JWTs are valid (the run must end before; the key dies with it).
const JWT_LIFETIME_S: u64 = 24 * 3600;

/// vault-benchmark's `jwt_auth` role defaults (its ParseConfig), which a file's role starts from.
const VB_AUDIENCE: &str = "https://vault.plugin.auth.jwt.test";
const VB_USER_CLAIM: &str = "https://vault/user";
const VB_ROLE: &str = "benchmark-role";

fn jwt_hcl(c: &mut Keys, out: &mut Mapped) -> Result<(), Cause> {
    let mut auth = c.block("auth")?;
    for key in [
        "jwks_url",
        "jwks_ca_pem",
        "jwt_validation_pubkeys",
        "oidc_discovery_url",
        "oidc_discovery_ca_pem",
    ] {
        if auth.has(key) {
            auth.refuse(
                key,
                "vblast signs its logins' JWTs with a key pair it makes at setup and gives the server that public key (jwt_validation_pubkeys); it neither serves nor fetches keys, so the keys' source cannot be set (vault-benchmark too signs with a key of its own whatever this says, so its logins would fail against these keys)",
            );
        }
    }
    // The JWTs carry the issuer, and the server checks it, as vault-benchmark's do.
    if let Some(iss) = auth.string("bound_issuer")? {
        out.config.insert("bound_issuer".into(), json!(iss));
    }
    auth.finish(&mut out.named)?;
    let mut role = c.block("role")?;
    let name = role.string("name")?.unwrap_or_else(|| VB_ROLE.into());
    set_in(&mut out.config, "role", "name", json!(name));
    role.only(
        "role_type",
        &[json!("jwt")],
        "it logs in with JWTs it signs itself (role_type jwt)",
    )?;
    // The role's bounds as the file (or vault-benchmark's defaults) sets them; vblast's
    // JWTs carry claims that meet them.
    let audiences = match role.take("bound_audiences") {
        None => vec![json!(VB_AUDIENCE)],
        Some(Value::Array(a)) => a,
        Some(v) => vec![v],
    };
    set_in(&mut out.config, "role", "bound_audiences", json!(audiences));
    let user_claim = role
        .string("user_claim")?
        .unwrap_or_else(|| VB_USER_CLAIM.into());
    set_in(&mut out.config, "role", "user_claim", json!(user_claim));
    if let Some(sub) = role.string("bound_subject")? {
        set_in(&mut out.config, "role", "bound_subject", json!(sub));
    }
    let mut tokens = serde_json::Map::new();
    token_settings(&mut role, &mut tokens)?;
    for (k, v) in tokens {
        set_in(&mut out.config, "role", &k, v);
    }
    role.finish(&mut out.named)
}

pub const LOGIN: OpInfo = OpInfo {
    name: "jwt-login",
    about: "POST auth/<path>/login with a JWT signed by a key vblast made at setup (ES256)",
    request: "POST /v1/auth/<path>/login",
    doc: "Setup makes an ECDSA P-256 key pair in memory, enables the jwt auth method at a fresh path (`vblast-jwt-xxxxxxxx`) with the public key as its only `jwt_validation_pubkeys`, writes a policy and a role whose tokens carry it, and signs a pool of JWTs (ES256) for that role; the requests log in with those JWTs in turn and must answer with `auth.client_token`. Cleanup disables the path (revoking every token the logins made) and deletes the policy. The private key never leaves the process. Shards share the policy; each makes its own key pair and auth path.",
    options: &[
        OptionSpec {
            help: "TTL of each login's token (default 2m); all are revoked at cleanup",
            ..super::auth::TOKEN_TTL
        },
        OptionSpec {
            help: "type of the tokens (default service; batch spares the server)",
            ..super::auth::TOKEN_TYPE
        },
    ],
    also: &[],
    config_from,
    build,
    vault_benchmark: VaultBenchmark::Types(&[VbType {
        name: "jwt_auth",
        config: jwt_hcl,
    }]),
    fixture: Fixture::Shared,
    // No file sets the pool (vblast's own setting); held to what build takes.
    bounds: &[ConfigBound {
        key: "pool",
        file_key: "",
        bound: Bound::Range {
            min: 1,
            max: POOL_MAX as u64,
        },
    }],
};

/// The family's config: vault-benchmark's `jwt_auth` `role` block (the keys vblast uses);
/// its `auth` block is vblast's own (the key it makes), so it has none.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JwtConfig {
    pub role: JwtRoleConfig,
    /// The auth method's `bound_issuer`, and the JWTs' `iss` (vault-benchmark's `auth` key).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bound_issuer: Option<String>,
    /// JWTs pre-signed at setup, sent in turn.
    #[serde(default = "default_pool")]
    pub pool: usize,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JwtRoleConfig {
    #[serde(default = "default_role")]
    pub name: String,
    #[serde(default = "default_audiences")]
    pub bound_audiences: Vec<String>,
    #[serde(default = "default_user_claim")]
    pub user_claim: String,
    /// The role's `bound_subject`, and the JWTs' `sub` (else "vblast").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bound_subject: Option<String>,
    pub token_ttl: String,
    pub token_type: String,
    /// Policies besides the one vblast writes.
    #[serde(default)]
    pub token_policies: Vec<String>,
}

fn default_pool() -> usize {
    DEFAULT_POOL
}
fn default_role() -> String {
    "vblast".into()
}
fn default_audiences() -> Vec<String> {
    vec!["vblast".into()]
}
fn default_user_claim() -> String {
    "sub".into()
}

fn config_from(f: &OptionValues) -> Value {
    serde_json::to_value(JwtConfig {
        role: JwtRoleConfig {
            name: default_role(),
            bound_audiences: default_audiences(),
            user_claim: default_user_claim(),
            bound_subject: None,
            token_ttl: f
                .text("token-ttl")
                .unwrap_or_else(|| DEFAULT_TOKEN_TTL.into()),
            token_type: f.text("token-type").unwrap_or_else(|| "service".into()),
            token_policies: Vec::new(),
        },
        pool: DEFAULT_POOL,
        bound_issuer: None,
    })
    .unwrap_or(Value::Null)
}

fn build(v: &Value) -> Result<Box<dyn VaultOp>, Cause> {
    let config: JwtConfig =
        serde_json::from_value(v.clone()).map_err(|e| format!("bad config: {e}"))?;
    check_token_settings(&config.role.token_ttl, &config.role.token_type)?;
    if config.pool == 0 || config.pool > POOL_MAX {
        return Err(Cause::from(format!(
            "JWT pool of {} is not between 1 and {POOL_MAX}",
            config.pool
        )));
    }
    if config.role.bound_audiences.is_empty() {
        return Err(Cause::from(
            "the jwt role needs at least one bound audience",
        ));
    }
    let name_ok = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    };
    if !name_ok(&config.role.name) {
        return Err(Cause::from(format!(
            "role name '{}' must be letters, digits, '-' or '_'",
            config.role.name
        )));
    }
    if config.role.user_claim.is_empty() {
        return Err(Cause::from("user_claim is empty"));
    }
    Ok(Box::new(Jwt {
        config,
        path: None,
        policy: None,
        jwts: Vec::new(),
        sweep: None,
    }))
}

struct Jwt {
    config: JwtConfig,
    /// The auth path, as soon as it may exist.
    path: Option<String>,
    policy: Option<String>,
    /// The pre-signed JWTs, all of one length (never printed).
    jwts: Vec<Vec<u8>>,
    /// Cleanup of a shared run (src/session/fixtures.rs): the prefix of the shards' own auth
    /// paths, every one of which it disables.
    sweep: Option<String>,
}

/// The SubjectPublicKeyInfo (PEM) of an uncompressed P-256 point: a fixed 26-byte DER
/// prefix (SEQUENCE { SEQUENCE { id-ecPublicKey, prime256v1 }, BIT STRING }) and the
/// point. Hand-written because it is one constant; ring has no SPKI encoder.
fn p256_public_pem(point: &[u8]) -> String {
    const PREFIX: [u8; 26] = [
        0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08,
        0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
    ];
    let mut der = PREFIX.to_vec();
    der.extend_from_slice(point);
    let b64 = STANDARD.encode(der);
    let mut pem = String::from("-----BEGIN PUBLIC KEY-----\n");
    for line in b64.as_bytes().chunks(64) {
        pem.push_str(&String::from_utf8_lossy(line));
        pem.push('\n');
    }
    pem.push_str("-----END PUBLIC KEY-----\n");
    pem
}

/// `count` ES256 JWTs for `config`'s role, equal in length: the claims differ only in a
/// fixed-width `jti`, and P-256 signatures are 64 bytes. They meet the role's bounds:
/// every bound audience, its subject, the method's issuer; the user claim is "vblast"
/// (or the subject, when the user claim is `sub`).
fn sign_pool(
    key: &EcdsaKeyPair,
    rng: &SystemRandom,
    config: &JwtConfig,
    count: usize,
    now: u64,
) -> Result<Vec<Vec<u8>>, Cause> {
    let role = &config.role;
    let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"ES256","typ":"JWT"}"#);
    let salt = fresh_name("");
    let sub = role.bound_subject.as_deref().unwrap_or("vblast");
    (0..count)
        .map(|i| {
            let mut claims = json!({
                "aud": role.bound_audiences,
                "sub": sub,
                "iat": now,
                "nbf": now.saturating_sub(60),
                "exp": now + JWT_LIFETIME_S,
                "jti": format!("{salt}-{i:08}"),
            });
            if let Some(iss) = &config.bound_issuer {
                claims["iss"] = json!(iss);
            }
            if role.user_claim != "sub" {
                claims[&role.user_claim] = json!("vblast");
            }
            let payload = URL_SAFE_NO_PAD.encode(claims.to_string());
            let signing_input = format!("{header}.{payload}");
            let sig = key
                .sign(rng, signing_input.as_bytes())
                .map_err(|_| "signing a JWT failed".to_string())?;
            Ok(format!("{signing_input}.{}", URL_SAFE_NO_PAD.encode(sig.as_ref())).into_bytes())
        })
        .collect()
}

impl Jwt {
    /// Own mode: the policy, then a path of its own trusting a fresh key.
    fn prepare(&mut self, client: &mut Client, naming: &Naming) -> Result<(), Cause> {
        let policy = naming.random_name("vblast-jwt-");
        self.write_policy(client, &policy)?;
        let path = naming.random_name("vblast-jwt-");
        self.login_path(client, path, policy)
    }

    /// Writes the policy the role's tokens carry; from then on cleanup deletes it.
    fn write_policy(&mut self, client: &mut Client, policy: &str) -> Result<(), Cause> {
        self.policy = Some(policy.to_string());
        call(
            client,
            "PUT",
            &format!("/v1/sys/policies/acl/{policy}"),
            Some(&json!({
                "policy": "path \"auth/token/lookup-self\" { capabilities = [\"read\"] }\n"
            })),
            &format!("writing policy '{policy}'"),
        )
        .map(drop)
    }

    /// Makes a key pair in memory, signs the pool, enables jwt auth at `path` (disabled
    /// by cleanup from then on) trusting the public key, and makes the role there whose
    /// tokens carry `policy`.
    fn login_path(
        &mut self,
        client: &mut Client,
        path: String,
        policy: String,
    ) -> Result<(), Cause> {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .map_err(|_| "making an ECDSA P-256 key pair failed".to_string())?;
        let key = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
            .map_err(|_| "loading the ECDSA P-256 key pair failed".to_string())?;
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        self.jwts = sign_pool(&key, &rng, &self.config, self.config.pool, now)?;

        // From here on the path may exist: the session disables it whatever happens next.
        self.path = Some(path.clone());
        call(
            client,
            "POST",
            &format!("/v1/sys/auth/{path}"),
            Some(&json!({"type": "jwt", "description": "vblast load test (temporary)"})),
            &format!("enabling jwt auth at '{path}'"),
        )
        .inspect_err(|_| self.path = None)?;
        call(
            client,
            "POST",
            &format!("/v1/auth/{path}/config"),
            Some(&json!({
                "jwt_validation_pubkeys": [p256_public_pem(key.public_key().as_ref())],
                "jwt_supported_algs": ["ES256"],
                "bound_issuer": self.config.bound_issuer.clone().unwrap_or_default(),
            })),
            &format!("configuring jwt auth at '{path}'"),
        )?;
        let role = &self.config.role;
        let mut policies = vec![policy];
        policies.extend(role.token_policies.iter().cloned());
        call(
            client,
            "POST",
            &format!("/v1/auth/{path}/role/{}", role.name),
            Some(&json!({
                "role_type": "jwt",
                "bound_audiences": role.bound_audiences,
                "user_claim": role.user_claim,
                "bound_subject": role.bound_subject.clone().unwrap_or_default(),
                "token_policies": policies,
                "token_ttl": role.token_ttl,
                "token_max_ttl": role.token_ttl,
                "token_type": role.token_type,
            })),
            &format!("creating role '{}' at '{path}'", role.name),
        )?;
        Ok(())
    }

    /// The fixture shared by a run's shards (src/session/fixtures.rs). Setup writes the policy
    /// (named after the run id) and nothing else; a shard waits for it, then makes its own
    /// key pair and its own path under the run's prefix (`shared::own_name`); cleanup
    /// disables every path under that prefix and deletes the policy. Names are derived
    /// in one order in every mode: the policy, then the prefix. Returns false outside
    /// those modes.
    fn shared(&mut self, ctx: &SetupCtx) -> Result<bool, Error> {
        match shared::mode(ctx) {
            Mode::Own => return Ok(false),
            Mode::Create => setup_with(ctx, LOGIN.name, |client| {
                let policy = ctx.naming.random_name("vblast-jwt-");
                // The shards' own paths' prefix, in the state file for `vblast cleanup`.
                ctx.naming.random_prefix("vblast-jwt-");
                self.write_policy(client, &policy)
            })?,
            Mode::Remove => {
                self.policy = Some(ctx.naming.random_name("vblast-jwt-"));
                self.sweep = Some(format!("{}-", ctx.naming.random_prefix("vblast-jwt-")));
            }
            Mode::Join => {
                needs_setup(ctx, LOGIN.name)?;
                let policy = ctx.naming.random_name("vblast-jwt-");
                shared::wait_policy(ctx, "jwt ", &policy)?;
                let path = shared::own_name(&ctx.naming.random_name("vblast-jwt-"));
                let mut client = (ctx.make_client)();
                self.login_path(&mut client, path, policy)
                    .map_err(Error::setup)?;
            }
        }
        Ok(true)
    }
}

impl VaultOp for Jwt {
    fn check(&self, ctx: &SetupCtx) -> Result<(), Error> {
        needs_setup(ctx, LOGIN.name)
    }

    fn setup(&mut self, ctx: &SetupCtx) -> Result<(), Error> {
        if self.shared(ctx)? {
            return Ok(());
        }
        setup_with(ctx, LOGIN.name, |client| self.prepare(client, ctx.naming))
    }

    fn operation(&self) -> Operation {
        let path = self.path.as_deref().unwrap_or("unset");
        let mut op = Operation::new(
            LOGIN.name,
            RequestSpec {
                method: "POST".into(),
                path: vec![Piece::lit(format!("/v1/auth/{path}/login"))],
                headers: vec![("Content-Type".into(), "application/json".into())],
                body: Some(vec![
                    Piece::lit(format!(
                        r#"{{"role":{},"jwt":""#,
                        Value::String(self.config.role.name.clone())
                    )),
                    Piece::Pool {
                        items: self.jwts.clone(),
                    },
                    Piece::lit(r#""}"#),
                ]),
                captured_headers: vec![],
            },
        );
        op.expect = Some(Expect::present("auth.client_token"));
        op
    }

    fn created(&self) -> Vec<Created> {
        let mut out = Vec::new();
        if let Some(prefix) = &self.sweep {
            out.push(Created::shards_auth_paths("jwt", prefix));
        }
        if let Some(p) = &self.path {
            out.push(Created::auth_path("jwt", p, ""));
        }
        if let Some(policy) = &self.policy {
            out.push(Created::policy(policy));
        }
        out
    }

    fn cleanup(&mut self, client: &mut Client, _stop: &Stop) -> Result<(), Cause> {
        if let Some(prefix) = self.sweep.clone() {
            shared::disable_auth_under(client, &prefix)?;
            self.sweep = None;
        }
        disable_auth(client, &mut self.path)?;
        delete_policy(client, &mut self.policy)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ring::signature::{ECDSA_P256_SHA256_FIXED, UnparsedPublicKey};

    #[test]
    fn pool_jwts_are_of_one_length_and_verify_with_the_public_key() {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
        let key = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
            .unwrap();
        let cfg: JwtConfig = serde_json::from_value(config_from(&OptionValues::new())).unwrap();
        let pool = sign_pool(&key, &rng, &cfg, 20, 1_800_000_000).unwrap();
        assert_eq!(pool.len(), 20);
        assert!(pool.iter().all(|j| j.len() == pool[0].len()));
        let distinct: std::collections::HashSet<_> = pool.iter().collect();
        assert_eq!(distinct.len(), 20);
        let pem = p256_public_pem(key.public_key().as_ref());
        let der = STANDARD
            .decode(
                pem.lines()
                    .filter(|l| !l.starts_with("-----"))
                    .collect::<String>(),
            )
            .unwrap();
        assert_eq!(der.len(), 91);
        let public = UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, &der[26..]);
        for jwt in &pool {
            let text = std::str::from_utf8(jwt).unwrap();
            let (input, sig) = text.rsplit_once('.').unwrap();
            public
                .verify(input.as_bytes(), &URL_SAFE_NO_PAD.decode(sig).unwrap())
                .unwrap();
            let claims: Value = serde_json::from_slice(
                &URL_SAFE_NO_PAD
                    .decode(input.split('.').nth(1).unwrap())
                    .unwrap(),
            )
            .unwrap();
            assert_eq!(claims["aud"], json!(["vblast"]));
            assert_eq!(claims["sub"], "vblast");
            assert!(claims.get("iss").is_none());
            assert_eq!(claims["exp"], 1_800_000_000u64 + JWT_LIFETIME_S);
        }
    }

    #[test]
    fn the_jwts_meet_the_roles_subject_issuer_and_audiences() {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
        let key = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
            .unwrap();
        let mut cfg: JwtConfig = serde_json::from_value(config_from(&OptionValues::new())).unwrap();
        cfg.bound_issuer = Some("https://idp".into());
        cfg.role.bound_subject = Some("svc".into());
        cfg.role.bound_audiences = vec!["a".into(), "b".into()];
        cfg.role.user_claim = "sub".into();
        let pool = sign_pool(&key, &rng, &cfg, 2, 1_800_000_000).unwrap();
        let text = std::str::from_utf8(&pool[0]).unwrap();
        let claims: Value = serde_json::from_slice(
            &URL_SAFE_NO_PAD
                .decode(text.split('.').nth(1).unwrap())
                .unwrap(),
        )
        .unwrap();
        assert_eq!(claims["iss"], "https://idp");
        assert_eq!(claims["sub"], "svc");
        assert_eq!(claims["aud"], json!(["a", "b"]));
    }

    #[test]
    fn bad_configs_are_refused() {
        let mut cfg = config_from(&OptionValues::new());
        cfg["pool"] = json!(0);
        assert!(build(&cfg).err().unwrap().to_string().contains("pool"));
        let mut cfg = config_from(&OptionValues::new());
        cfg["role"]["token_type"] = json!("default");
        assert!(
            build(&cfg)
                .err()
                .unwrap()
                .to_string()
                .contains("service, batch")
        );
        let mut cfg = config_from(&OptionValues::new());
        cfg["role"]["name"] = json!("a/b");
        assert!(build(&cfg).err().unwrap().to_string().contains("role name"));
    }
}
