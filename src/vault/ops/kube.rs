//! The Kubernetes family: `kube-login` (vault-benchmark `kube_auth`) and `kube-creds`
//! (vault-benchmark `kubernetes_secret`). Both engines call a Kubernetes API server, never
//! vblast: vblast only configures them and sends the load.
//!
//! `kube-login`: setup writes a policy `vblast-kube-xxxxxxxx`, enables the kubernetes auth
//! method at a fresh path (`vblast-kube-xxxxxxxx`) pointed at the API (`kubernetes_host`,
//! its CA, the reviewer's JWT), makes a role bound to service-account names and
//! namespaces (by default those of the login JWT), and logs in once with the
//! service-account JWT it read from a file, revoking that token at once: a host that does
//! not answer, a CA that does not verify it, a JWT the API rejects or a namespace the role
//! does not bind fail setup with the server's words. The requests log in with that JWT
//! and must answer with `auth.client_token`. Cleanup disables the path (revoking every
//! token the logins made) and deletes the policy.
//!
//! `kube-creds`: setup mounts the kubernetes secrets engine at a fresh mount
//! (`vblast-kube-xxxxxxxx`), configures it, writes a role of one of three kinds (an
//! existing service account, an existing Role or ClusterRole to bind, or generated role
//! rules) and makes one credentials request, revoking its lease at once (the API's refusal
//! of the rules fails setup there). Each request is a credentials request
//! (`POST <mount>/creds/<role>`) and must answer with `data.service_account_token`. Cleanup
//! disables the mount, which revokes every lease: the engine deletes the service accounts,
//! role bindings and roles it made in the API.
//!
//! Both refuse, before anything is sent, a `kubernetes_ca_cert` from which no PEM
//! certificate can be read (vault-benchmark's docs examples carry a shortened `MIIC...`):
//! the engines would accept it and fail every call to the API.
//!
//! Neither is shared by the shards of a run (each shard would configure the API's
//! credentials anew; a sharded run is refused).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::vb::{Keys, Mapped, set_in, token_settings};
use super::{
    Created, Fixture, OpInfo, OptionKind, OptionSpec, OptionValues, SetupCtx, VaultBenchmark,
    VaultOp, VbType, call, delete_policy, disable_auth, disable_mount, needs_setup, setup_with,
};
use crate::capture::Expect;
use crate::error::{Cause, Error};
use crate::signals::Stop;
use crate::template::{Piece, RequestSpec};
use crate::vault::client::Client;
use crate::workload::Operation;

/// Where a pod's projected service-account token is, and where vault-benchmark reads it.
pub const SA_TOKEN_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount/token";
/// Where a pod's CA of the Kubernetes API is, and where the engines read it by default.
pub const SA_CA_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt";
/// vault-benchmark's default API address (the in-cluster service).
pub const DEFAULT_HOST: &str = "https://kubernetes.default.svc";
/// Names the service-account token file for vault-benchmark files (which cannot name
/// one): vault-benchmark always reads [`SA_TOKEN_PATH`].
pub const TOKEN_FILE_ENV: &str = "VBLAST_KUBE_TOKEN_FILE";
/// vault-benchmark's environment variables for the secrets engine's JWT and CA.
const VB_SA_JWT_ENV: &str = "VAULT_BENCHMARK_KUBERNETES_SERVICE_ACCOUNT_JWT";
const VB_CA_ENV: &str = "VAULT_BENCHMARK_KUBERNETES_CA_CERT";
/// The token TTL of kube-login (short: every token is revoked at cleanup anyway).
const LOGIN_TTL: &str = "2m";
/// The Kubernetes token TTL of kube-creds unless said (the API's minimum is 10m).
const CREDS_TTL: &str = "10m";

const HOST: OptionSpec = OptionSpec {
    flag: "kubernetes-host",
    value_name: "URL",
    kind: OptionKind::Text,
    default: Some(DEFAULT_HOST),
    help: "the Kubernetes API the engine calls (kube-login, kube-creds)",
};
const CA: OptionSpec = OptionSpec {
    flag: "kubernetes-ca-file",
    value_name: "FILE",
    kind: OptionKind::Path,
    default: None,
    help: "PEM CA that verifies the Kubernetes API (kube-login, kube-creds; default: the pod's, else the server's roots)",
};
const API_JWT: OptionSpec = OptionSpec {
    flag: "kube-api-jwt-file",
    value_name: "FILE",
    kind: OptionKind::Path,
    default: None,
    help: "service-account JWT the engine calls the API with: kube-login's token_reviewer_jwt (default: each login's own JWT), kube-creds' service_account_jwt",
};
const LOGIN_JWT: OptionSpec = OptionSpec {
    flag: "kube-jwt-file",
    value_name: "FILE",
    kind: OptionKind::Path,
    default: None,
    help: "service-account JWT kube-login logs in with (default $VBLAST_KUBE_TOKEN_FILE, else the pod's /var/run/secrets/kubernetes.io/serviceaccount/token)",
};
const SA: OptionSpec = OptionSpec {
    flag: "kube-service-account",
    value_name: "NAME",
    kind: OptionKind::Text,
    default: None,
    help: "kube-creds: tokens for this existing service account",
};
const ROLE: OptionSpec = OptionSpec {
    flag: "kube-role",
    value_name: "NAME",
    kind: OptionKind::Text,
    default: None,
    help: "kube-creds: a service account bound to this existing Role (or ClusterRole, --kube-role-type)",
};
const ROLE_TYPE: OptionSpec = OptionSpec {
    flag: "kube-role-type",
    value_name: "Role|ClusterRole",
    kind: OptionKind::Text,
    default: Some("Role"),
    help: "kube-creds: kind of the role bound or generated",
};
const RULES: OptionSpec = OptionSpec {
    flag: "kube-role-rules",
    value_name: "FILE",
    kind: OptionKind::Path,
    default: None,
    help: "kube-creds: a role generated from these rules (JSON or YAML, a `rules` list), a binding and a service account",
};
const NAMESPACE: OptionSpec = OptionSpec {
    flag: "kube-namespace",
    value_name: "NS",
    kind: OptionKind::Text,
    default: Some("default"),
    help: "kube-creds: the namespace the credentials are made in",
};

// ---------------------------------------------------------------- kube-login

pub const LOGIN: OpInfo = OpInfo {
    name: "kube-login",
    about: "POST auth/<path>/login with a service-account JWT (the kubernetes auth method, which asks the API's TokenReview)",
    request: "POST /v1/auth/<path>/login",
    doc: "Setup writes a policy, enables the kubernetes auth method at a fresh path (`vblast-kube-xxxxxxxx`) pointed at the Kubernetes API (`--kubernetes-host`, `--kubernetes-ca-file`, `--kube-api-jwt-file` as the token reviewer), makes a role `vblast` bound to the service-account name and namespace of the login JWT (`--kube-jwt-file`, default the pod's projected token), and logs in once, revoking that token: an API that does not answer, a CA that does not verify it, a JWT the API rejects and a namespace the role does not bind fail setup (exit 2) with the server's words. Each request logs in with the JWT (the server calls the API's TokenReview) and must answer with `auth.client_token`. Cleanup disables the path, revoking every token the logins made, and deletes the policy. Not shareable by shards.",
    options: &[
        HOST,
        CA,
        API_JWT,
        LOGIN_JWT,
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
    config_from: login_config_from,
    build: build_login,
    vault_benchmark: VaultBenchmark::Types(&[VbType {
        name: "kube_auth",
        config: kube_auth_hcl,
    }]),
    fixture: Fixture::NotShareable,
    bounds: &[],
};

/// kube-login's config: vault-benchmark's `auth` and `role` blocks as the server takes
/// them, and the file of the JWT the logins present.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KubeLoginConfig {
    /// `auth/<path>/config`: kubernetes_host, kubernetes_ca_cert, token_reviewer_jwt, ...
    pub auth: Map<String, Value>,
    /// `auth/<path>/role/<name>`: name, bound_service_account_names, ..., token_ttl.
    pub role: Map<String, Value>,
    /// The service-account JWT the logins present.
    pub jwt_file: String,
    /// Files whose contents go in `auth` (flags): the CA and the reviewer's JWT.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_jwt_file: Option<String>,
}

fn token_file_default(f: &OptionValues) -> String {
    f.path("kube-jwt-file")
        .map(|p| p.display().to_string())
        .or_else(|| std::env::var(TOKEN_FILE_ENV).ok().filter(|s| !s.is_empty()))
        .unwrap_or_else(|| SA_TOKEN_PATH.into())
}

fn login_config_from(f: &OptionValues) -> Value {
    let mut auth = Map::new();
    auth.insert(
        "kubernetes_host".into(),
        json!(
            f.text("kubernetes-host")
                .unwrap_or_else(|| DEFAULT_HOST.into())
        ),
    );
    let mut role = Map::new();
    role.insert("name".into(), json!("vblast"));
    role.insert(
        "token_ttl".into(),
        json!(f.text("token-ttl").unwrap_or_else(|| LOGIN_TTL.into())),
    );
    role.insert(
        "token_type".into(),
        json!(f.text("token-type").unwrap_or_else(|| "service".into())),
    );
    serde_json::to_value(KubeLoginConfig {
        auth,
        role,
        jwt_file: token_file_default(f),
        ca_file: f
            .path("kubernetes-ca-file")
            .map(|p| p.display().to_string()),
        api_jwt_file: f.path("kube-api-jwt-file").map(|p| p.display().to_string()),
    })
    .unwrap_or(Value::Null)
}

/// vault-benchmark's `kube_auth` auth-block keys, sent to `auth/<path>/config` as given.
const KUBE_AUTH_KEYS: &[&str] = &[
    "kubernetes_host",
    "kubernetes_ca_cert",
    "token_reviewer_jwt",
    "pem_keys",
    "disable_local_ca_jwt",
    "disable_iss_validation",
    "issuer",
];

/// Its role-block keys beyond `name`, `token_ttl` and `token_type`, sent in the role's
/// write as given.
const KUBE_ROLE_KEYS: &[&str] = &[
    "bound_service_account_names",
    "bound_service_account_namespaces",
    "audience",
    "alias_name_source",
    "token_max_ttl",
    "token_policies",
    "policies",
    "token_bound_cidrs",
    "token_explicit_max_ttl",
    "token_no_default_policy",
    "token_num_uses",
    "token_period",
];

fn kube_auth_hcl(c: &mut Keys, out: &mut Mapped) -> Result<(), Cause> {
    // What a file leaves out takes vblast's defaults: the in-cluster API, role `vblast`
    // bound to the login JWT's own service account and namespace.
    let mut auth = c.block("auth")?;
    for key in KUBE_AUTH_KEYS {
        if let Some(v) = auth.take(key) {
            set_in(&mut out.config, "auth", key, v);
        }
    }
    auth.finish(&mut out.named)?;
    let mut role = c.block("role")?;
    if let Some(name) = role.string("name")? {
        set_in(&mut out.config, "role", "name", json!(name));
    }
    let mut tokens = Map::new();
    token_settings(&mut role, &mut tokens)?;
    for (k, v) in tokens {
        set_in(&mut out.config, "role", &k, v);
    }
    for key in KUBE_ROLE_KEYS {
        if let Some(v) = role.take(key) {
            set_in(&mut out.config, "role", key, v);
        }
    }
    role.finish(&mut out.named)?;
    out.notes.push(format!(
        "test '{}': the logins present the service-account JWT of {SA_TOKEN_PATH}, as vault-benchmark's do (${TOKEN_FILE_ENV} names another file)",
        c.test
    ));
    Ok(())
}

/// Reads a file that holds one credential or certificate (trimmed of surrounding
/// whitespace for a JWT).
fn read_file(path: &str, what: &str) -> Result<String, Cause> {
    std::fs::read_to_string(path).map_err(|e| Cause::from(format!("reading {what} {path}: {e}")))
}

/// Refuses a `kubernetes_ca_cert` from which no PEM certificate can be read: the engines
/// accept it and fail every call to the API afterwards.
fn check_ca(config: &Map<String, Value>) -> Result<(), Cause> {
    let Some(pem) = config
        .get("kubernetes_ca_cert")
        .and_then(Value::as_str)
        .filter(|s| !s.trim().is_empty())
    else {
        return Ok(());
    };
    let certs: Result<Vec<_>, _> = rustls_pemfile::certs(&mut pem.as_bytes()).collect();
    match certs {
        Ok(c) if !c.is_empty() => Ok(()),
        _ => Err(Cause::from(format!(
            "kubernetes_ca_cert holds no PEM certificate that can be read (vault-benchmark's docs show a shortened placeholder, `MIIC...`, which no TLS client can load): put the Kubernetes API's CA there; where the server runs in a pod, leaving the key out (and disable_local_ca_jwt false) makes it read {SA_CA_PATH}"
        ))),
    }
}

/// The (namespace, name) a service-account JWT's claims name, projected or legacy; None
/// when it is not a JWT with them.
fn jwt_account(jwt: &str) -> Option<(String, String)> {
    use base64::Engine as _;
    let payload = jwt.split('.').nth(1)?;
    let claims: Value = serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(payload.trim_end_matches('='))
            .ok()?,
    )
    .ok()?;
    let k = &claims["kubernetes.io"];
    let projected = (
        k["namespace"].as_str(),
        k["serviceaccount"]["name"].as_str(),
    );
    let legacy = (
        claims["kubernetes.io/serviceaccount/namespace"].as_str(),
        claims["kubernetes.io/serviceaccount/service-account.name"].as_str(),
    );
    match (projected, legacy) {
        ((Some(ns), Some(n)), _) | (_, (Some(ns), Some(n))) => Some((ns.into(), n.into())),
        _ => None,
    }
}

fn build_login(v: &Value) -> Result<Box<dyn VaultOp>, Cause> {
    let config: KubeLoginConfig =
        serde_json::from_value(v.clone()).map_err(|e| format!("bad config: {e}"))?;
    let ttl = config.role.get("token_ttl").and_then(Value::as_str);
    let kind = config.role.get("token_type").and_then(Value::as_str);
    super::auth::check_token_settings(ttl.unwrap_or(LOGIN_TTL), kind.unwrap_or("service"))?;
    Ok(Box::new(KubeLogin {
        config,
        jwt: String::new(),
        path: None,
        policy: None,
    }))
}

/// The config with its files read (the CA, the reviewer's JWT) and the login JWT, checked:
/// before anything is sent.
fn resolve_login(config: &KubeLoginConfig) -> Result<(KubeLoginConfig, String), Cause> {
    let mut config = config.clone();
    if let Some(f) = config.ca_file.take() {
        let pem = read_file(&f, "the Kubernetes API's CA")?;
        config.auth.insert("kubernetes_ca_cert".into(), json!(pem));
    }
    if let Some(f) = config.api_jwt_file.take() {
        let jwt = read_file(&f, "the token reviewer's JWT")?;
        config
            .auth
            .insert("token_reviewer_jwt".into(), json!(jwt.trim()));
    }
    check_ca(&config.auth)?;
    let jwt = read_file(&config.jwt_file, "the service-account token").map_err(|e| {
        e.within(format!(
            "kube-login logs in with a service-account JWT (--kube-jwt-file, or ${TOKEN_FILE_ENV})"
        ))
    })?;
    let jwt = jwt.trim().to_string();
    if !jwt
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
        || jwt.split('.').count() != 3
    {
        return Err(Cause::from(format!(
            "{} does not hold a JWT",
            config.jwt_file
        )));
    }
    // The role binds the JWT's own account unless the config names the bounds.
    if let Some((ns, name)) = jwt_account(&jwt) {
        config
            .role
            .entry("bound_service_account_names")
            .or_insert(json!([name]));
        config
            .role
            .entry("bound_service_account_namespaces")
            .or_insert(json!([ns]));
    }
    for key in [
        "bound_service_account_names",
        "bound_service_account_namespaces",
    ] {
        if !config.role.contains_key(key) {
            return Err(Cause::from(format!(
                "the role needs {key}: the JWT of {} names no service account",
                config.jwt_file
            )));
        }
    }
    Ok((config, jwt))
}

/// The name a role block gives its role ("vblast" when it names none).
fn role_name(role: &Map<String, Value>) -> String {
    role.get("name")
        .and_then(Value::as_str)
        .unwrap_or("vblast")
        .to_string()
}

struct KubeLogin {
    config: KubeLoginConfig,
    /// The service-account JWT (never printed).
    jwt: String,
    path: Option<String>,
    policy: Option<String>,
}

impl KubeLogin {
    fn prepare(
        &mut self,
        client: &mut Client,
        naming: &crate::vault::fixture::Naming,
    ) -> Result<(), Cause> {
        let policy = naming.random_name("vblast-kube-");
        self.policy = Some(policy.clone());
        call(
            client,
            "PUT",
            &format!("/v1/sys/policies/acl/{policy}"),
            Some(&json!({
                "policy": "path \"auth/token/lookup-self\" { capabilities = [\"read\"] }\n"
            })),
            &format!("writing policy '{policy}'"),
        )?;
        let path = naming.random_name("vblast-kube-");
        self.path = Some(path.clone());
        call(
            client,
            "POST",
            &format!("/v1/sys/auth/{path}"),
            Some(&json!({"type": "kubernetes", "description": "vblast load test (temporary)"})),
            &format!("enabling kubernetes auth at '{path}'"),
        )
        .inspect_err(|_| self.path = None)?;
        call(
            client,
            "POST",
            &format!("/v1/auth/{path}/config"),
            Some(&Value::Object(self.config.auth.clone())),
            &format!("configuring kubernetes auth at '{path}'"),
        )?;
        let name = role_name(&self.config.role);
        let mut role = self.config.role.clone();
        role.remove("name");
        let mut policies = vec![json!(policy)];
        for key in ["token_policies", "policies"] {
            match role.remove(key) {
                Some(Value::Array(a)) => policies.extend(a),
                Some(Value::String(s)) => policies.extend(
                    s.split(',')
                        .map(str::trim)
                        .filter(|s| !s.is_empty())
                        .map(|s| json!(s)),
                ),
                _ => {}
            }
        }
        role.insert("token_policies".into(), json!(policies));
        if let Some(ttl) = role.get("token_ttl").cloned() {
            role.entry("token_max_ttl").or_insert(ttl);
        }
        call(
            client,
            "POST",
            &format!("/v1/auth/{path}/role/{name}"),
            Some(&Value::Object(role)),
            &format!("creating role '{name}' at '{path}'"),
        )?;
        // One login, its token revoked at once: the API's answer is known before the clock.
        let host = self
            .config
            .auth
            .get("kubernetes_host")
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_string();
        let answer = call(
            client,
            "POST",
            &format!("/v1/auth/{path}/login"),
            Some(&json!({"role": name, "jwt": self.jwt})),
            &format!(
                "a first login at '{path}' (the server asks the Kubernetes API at {host} to review the JWT)"
            ),
        )
        .map_err(|e| match e {
            Cause::Http { status: 403, .. } => e.within(format!(
                "kube-login's first login was refused: the server answers 'permission denied' when the Kubernetes API at {host} does not answer, its certificate does not verify with the CA given, or it rejects the JWT (the server's log names which), and 'not authorized' when the role does not bind the JWT's service account or namespace"
            )),
            e => e,
        })?;
        revoke_accessor(client, &answer)
    }
}

/// Revokes the token of a login answer by its accessor (no token is kept).
fn revoke_accessor(client: &mut Client, answer: &Value) -> Result<(), Cause> {
    match answer["auth"]["accessor"].as_str() {
        Some(accessor) if !accessor.is_empty() => call(
            client,
            "POST",
            "/v1/auth/token/revoke-accessor",
            Some(&json!({ "accessor": accessor })),
            "revoking the first login's token",
        )
        .map(drop),
        _ => Ok(()),
    }
}

impl VaultOp for KubeLogin {
    fn check(&self, ctx: &SetupCtx) -> Result<(), Error> {
        needs_setup(ctx, LOGIN.name)?;
        resolve_login(&self.config).map(drop).map_err(Error::Input)
    }

    fn setup(&mut self, ctx: &SetupCtx) -> Result<(), Error> {
        let (config, jwt) = resolve_login(&self.config).map_err(Error::Input)?;
        (self.config, self.jwt) = (config, jwt);
        setup_with(ctx, LOGIN.name, |client| self.prepare(client, ctx.naming))
    }

    fn operation(&self) -> Operation {
        let path = self.path.as_deref().unwrap_or("unset");
        let body = json!({"role": role_name(&self.config.role), "jwt": self.jwt}).to_string();
        let mut op = Operation::new(
            LOGIN.name,
            RequestSpec {
                method: "POST".into(),
                path: vec![Piece::lit(format!("/v1/auth/{path}/login"))],
                headers: vec![("Content-Type".into(), "application/json".into())],
                body: Some(vec![Piece::lit(body)]),
                captured_headers: vec![],
            },
        );
        op.expect = Some(Expect::present("auth.client_token"));
        op
    }

    fn created(&self) -> Vec<Created> {
        let mut out = Vec::new();
        if let Some(p) = &self.path {
            out.push(Created::auth_path("kubernetes", p, ""));
        }
        if let Some(policy) = &self.policy {
            out.push(Created::policy(policy));
        }
        out
    }

    fn cleanup(&mut self, client: &mut Client, _stop: &Stop) -> Result<(), Cause> {
        disable_auth(client, &mut self.path)?;
        delete_policy(client, &mut self.policy)
    }
}

// ---------------------------------------------------------------- kube-creds

pub const CREDS: OpInfo = OpInfo {
    name: "kube-creds",
    about: "POST <mount>/creds/<role>: a Kubernetes service-account token from the kubernetes secrets engine",
    request: "POST /v1/<mount>/creds/<role>",
    doc: "Setup mounts the kubernetes secrets engine at a fresh mount (`vblast-kube-xxxxxxxx`) pointed at the Kubernetes API (`--kubernetes-host`, `--kubernetes-ca-file`, and `--kube-api-jwt-file`, the service account the engine acts as), writes a role `vblast` of one of three kinds: tokens of an existing service account (`--kube-service-account`), a service account bound to an existing Role or ClusterRole (`--kube-role`, `--kube-role-type`), or a Role, binding and service account generated from rules (`--kube-role-rules`); then makes one credentials request and revokes its lease, so that an API that does not answer or refuses the rules fails setup (exit 2). Each request is a credentials request in `--kube-namespace` and must answer with `data.service_account_token`; the engine makes the objects in the API. Cleanup disables the mount, revoking every lease: the engine deletes every service account, role binding and role it made. Not shareable by shards.",
    options: &[HOST, CA, API_JWT, SA, ROLE, ROLE_TYPE, RULES, NAMESPACE],
    also: &[(
        "--token-ttl",
        "the Kubernetes tokens' TTL (default 10m, the API's least)",
    )],
    config_from: creds_config_from,
    build: build_creds,
    vault_benchmark: VaultBenchmark::Types(&[VbType {
        name: "kubernetes_secret",
        config: kubernetes_secret_hcl,
    }]),
    fixture: Fixture::NotShareable,
    bounds: &[],
};

/// kube-creds' config: vault-benchmark's `kubernetes` and `role` blocks as the server
/// takes them.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KubeCredsConfig {
    /// `<mount>/config`: kubernetes_host, kubernetes_ca_cert, service_account_jwt, ...
    pub kubernetes: Map<String, Value>,
    /// `<mount>/roles/<name>`.
    pub role: Map<String, Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_jwt_file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rules_file: Option<String>,
    /// The namespace of the credentials requests (`--kube-namespace`; for a
    /// vault-benchmark file, one of the role's allowed namespaces picked at random, or
    /// "default" when "*" comes first, as vault-benchmark picks it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

fn creds_config_from(f: &OptionValues) -> Value {
    let mut kubernetes = Map::new();
    kubernetes.insert(
        "kubernetes_host".into(),
        json!(
            f.text("kubernetes-host")
                .unwrap_or_else(|| DEFAULT_HOST.into())
        ),
    );
    let ns = f.text("kube-namespace").unwrap_or_else(|| "default".into());
    let mut role = Map::new();
    role.insert("name".into(), json!("vblast"));
    role.insert("allowed_kubernetes_namespaces".into(), json!([ns]));
    role.insert(
        "kubernetes_role_type".into(),
        json!(f.text("kube-role-type").unwrap_or_else(|| "Role".into())),
    );
    let ttl = f.text("token-ttl").unwrap_or_else(|| CREDS_TTL.into());
    role.insert("token_default_ttl".into(), json!(ttl));
    if let Some(sa) = f.text("kube-service-account") {
        role.insert("service_account_name".into(), json!(sa));
    }
    if let Some(r) = f.text("kube-role") {
        role.insert("kubernetes_role_name".into(), json!(r));
    }
    serde_json::to_value(KubeCredsConfig {
        kubernetes,
        role,
        ca_file: f
            .path("kubernetes-ca-file")
            .map(|p| p.display().to_string()),
        api_jwt_file: f.path("kube-api-jwt-file").map(|p| p.display().to_string()),
        rules_file: f.path("kube-role-rules").map(|p| p.display().to_string()),
        namespace: Some(ns),
    })
    .unwrap_or(Value::Null)
}

/// vault-benchmark's `kubernetes_secret` role keys, sent in the role's write as given.
const KUBE_SECRET_ROLE_KEYS: &[&str] = &[
    "name",
    "allowed_kubernetes_namespaces",
    "allowed_kubernetes_namespace_selector",
    "token_max_ttl",
    "token_default_ttl",
    "token_default_audiences",
    "service_account_name",
    "kubernetes_role_name",
    "kubernetes_role_type",
    "kubernetes_role_ref_type",
    "generated_role_rules",
    "name_template",
    "extra_annotations",
    "extra_labels",
];

fn kubernetes_secret_hcl(c: &mut Keys, out: &mut Mapped) -> Result<(), Cause> {
    // vault-benchmark's defaults: its environment variables, then the block.
    let mut k = c.block("kubernetes")?;
    let mut cfg = Map::new();
    cfg.insert("kubernetes_host".into(), json!(DEFAULT_HOST));
    for (env, key) in [
        (VB_SA_JWT_ENV, "service_account_jwt"),
        (VB_CA_ENV, "kubernetes_ca_cert"),
    ] {
        if let Some(v) = std::env::var(env).ok().filter(|s| !s.is_empty()) {
            cfg.insert(key.into(), json!(v));
        }
    }
    for key in [
        "kubernetes_host",
        "kubernetes_ca_cert",
        "service_account_jwt",
        "disable_local_ca_jwt",
    ] {
        if let Some(v) = k.take(key) {
            cfg.insert(key.into(), v);
        }
    }
    out.config.insert("kubernetes".into(), Value::Object(cfg));
    k.finish(&mut out.named)?;
    let mut role = c.block("role")?;
    let mut r = Map::new();
    r.insert("name".into(), json!("benchmark-role"));
    r.insert("allowed_kubernetes_namespaces".into(), json!(["default"]));
    r.insert("kubernetes_role_type".into(), json!("Role"));
    for key in KUBE_SECRET_ROLE_KEYS {
        if let Some(v) = role.take(key) {
            r.insert((*key).into(), v);
        }
    }
    // Exactly one kind of role is checked before setup (`resolve_creds`), as the server
    // checks it.
    let namespace = pick_namespace(r.get("allowed_kubernetes_namespaces"));
    out.notes.push(format!(
        "test '{}': the credentials are requested in namespace '{namespace}', picked as vault-benchmark picks it (one of the role's allowed namespaces at random, 'default' when '*' comes first)",
        c.test
    ));
    out.config.insert("role".into(), Value::Object(r));
    out.config.insert("namespace".into(), json!(namespace));
    role.finish(&mut out.named)
}

/// The namespace of a role's credentials requests, as vault-benchmark picks it once per
/// run: one of the allowed namespaces at random, "default" when "*" comes first or none is
/// named.
fn pick_namespace(allowed: Option<&Value>) -> String {
    let names: Vec<&str> = match allowed {
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
        Some(Value::String(s)) => s.split(',').map(str::trim).collect(),
        _ => Vec::new(),
    };
    let named: Vec<&str> = names
        .iter()
        .copied()
        .filter(|n| !n.is_empty() && *n != "*")
        .collect();
    if names.first() == Some(&"*") || named.is_empty() {
        return "default".into();
    }
    let mut b = [0u8; 4];
    // A failed draw picks the first: any allowed namespace will do.
    let _ = ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut b);
    named[u32::from_le_bytes(b) as usize % named.len()].to_string()
}

fn build_creds(v: &Value) -> Result<Box<dyn VaultOp>, Cause> {
    let config: KubeCredsConfig =
        serde_json::from_value(v.clone()).map_err(|e| format!("bad config: {e}"))?;
    Ok(Box::new(KubeCreds {
        config,
        body: String::new(),
        mount: None,
    }))
}

/// The config with its files read, one kind of role checked, and the credentials
/// request's body: before anything is sent.
fn resolve_creds(config: &KubeCredsConfig) -> Result<(KubeCredsConfig, String), Cause> {
    let mut config = config.clone();
    if let Some(f) = config.ca_file.take() {
        let pem = read_file(&f, "the Kubernetes API's CA")?;
        config
            .kubernetes
            .insert("kubernetes_ca_cert".into(), json!(pem));
    }
    if let Some(f) = config.api_jwt_file.take() {
        let jwt = read_file(&f, "the engine's service-account JWT")?;
        config
            .kubernetes
            .insert("service_account_jwt".into(), json!(jwt.trim()));
    }
    check_ca(&config.kubernetes)?;
    if let Some(f) = config.rules_file.take() {
        let rules = read_file(&f, "the role rules")?;
        config
            .role
            .insert("generated_role_rules".into(), json!(rules));
    }
    let kinds: Vec<&str> = [
        "service_account_name",
        "kubernetes_role_name",
        "generated_role_rules",
    ]
    .into_iter()
    .filter(|k| {
        config
            .role
            .get(*k)
            .and_then(Value::as_str)
            .is_some_and(|s| !s.is_empty())
    })
    .collect();
    if kinds.len() != 1 {
        return Err(Cause::from(
            "kube-creds needs exactly one kind of role: --kube-service-account NAME, --kube-role NAME or --kube-role-rules FILE",
        ));
    }
    let role_type = config
        .role
        .get("kubernetes_role_type")
        .and_then(Value::as_str)
        .unwrap_or("Role");
    if !role_type.eq_ignore_ascii_case("role") && !role_type.eq_ignore_ascii_case("clusterrole") {
        return Err(Cause::from(format!(
            "kubernetes_role_type '{role_type}' is neither Role nor ClusterRole"
        )));
    }
    let namespace = config
        .namespace
        .clone()
        .unwrap_or_else(|| pick_namespace(config.role.get("allowed_kubernetes_namespaces")));
    let mut body = Map::new();
    body.insert("kubernetes_namespace".into(), json!(namespace));
    if let Some(aud) = config
        .role
        .get("token_default_audiences")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
    {
        body.insert("audiences".into(), json!(aud));
    }
    if role_type.eq_ignore_ascii_case("clusterrole") && kinds[0] != "service_account_name" {
        body.insert("cluster_role_binding".into(), json!(true));
    }
    Ok((config, Value::Object(body).to_string()))
}

struct KubeCreds {
    config: KubeCredsConfig,
    /// The credentials request's body.
    body: String,
    mount: Option<String>,
}

impl KubeCreds {
    fn prepare(
        &mut self,
        client: &mut Client,
        naming: &crate::vault::fixture::Naming,
    ) -> Result<(), Cause> {
        let mount = naming.random_name("vblast-kube-");
        self.mount = Some(mount.clone());
        call(
            client,
            "POST",
            &format!("/v1/sys/mounts/{mount}"),
            Some(&json!({"type": "kubernetes", "description": "vblast load test (temporary)"})),
            &format!("mounting the kubernetes secrets engine at '{mount}'"),
        )
        .inspect_err(|_| self.mount = None)?;
        call(
            client,
            "POST",
            &format!("/v1/{mount}/config"),
            Some(&Value::Object(self.config.kubernetes.clone())),
            &format!("configuring the kubernetes secrets engine at '{mount}'"),
        )?;
        let name = role_name(&self.config.role);
        let mut role = self.config.role.clone();
        role.remove("name");
        call(
            client,
            "POST",
            &format!("/v1/{mount}/roles/{name}"),
            Some(&Value::Object(role)),
            &format!("writing role '{name}' at '{mount}'"),
        )?;
        let body: Value = serde_json::from_str(&self.body).unwrap_or(Value::Null);
        let answer = call(
            client,
            "POST",
            &format!("/v1/{mount}/creds/{name}"),
            Some(&body),
            &format!(
                "a first credentials request at '{mount}' (the engine calls the Kubernetes API at {})",
                self.config
                    .kubernetes
                    .get("kubernetes_host")
                    .and_then(Value::as_str)
                    .unwrap_or("?")
            ),
        )?;
        if let Some(lease) = answer["lease_id"].as_str().filter(|s| !s.is_empty()) {
            call(
                client,
                "PUT",
                "/v1/sys/leases/revoke",
                Some(&json!({ "lease_id": lease })),
                "revoking the first credentials' lease",
            )?;
        }
        Ok(())
    }
}

impl VaultOp for KubeCreds {
    fn check(&self, ctx: &SetupCtx) -> Result<(), Error> {
        needs_setup(ctx, CREDS.name)?;
        resolve_creds(&self.config).map(drop).map_err(Error::Input)
    }

    fn setup(&mut self, ctx: &SetupCtx) -> Result<(), Error> {
        let (config, body) = resolve_creds(&self.config).map_err(Error::Input)?;
        (self.config, self.body) = (config, body);
        setup_with(ctx, CREDS.name, |client| self.prepare(client, ctx.naming))
    }

    fn operation(&self) -> Operation {
        let mount = self.mount.as_deref().unwrap_or("unset");
        let mut op = Operation::new(
            CREDS.name,
            RequestSpec {
                method: "POST".into(),
                path: vec![Piece::lit(format!(
                    "/v1/{mount}/creds/{}",
                    role_name(&self.config.role)
                ))],
                headers: vec![("Content-Type".into(), "application/json".into())],
                body: Some(vec![Piece::lit(self.body.clone())]),
                captured_headers: vec![],
            },
        );
        op.expect = Some(Expect::present("data.service_account_token"));
        op
    }

    fn created(&self) -> Vec<Created> {
        super::mount_created("kubernetes secrets", self.mount.as_deref())
    }

    fn cleanup(&mut self, client: &mut Client, _stop: &Stop) -> Result<(), Cause> {
        disable_mount(client, "kubernetes secrets", &mut self.mount)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_projected_and_a_legacy_jwt_name_their_account() {
        use base64::Engine as _;
        let enc = |v: Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string());
        let projected = format!(
            "e30.{}.sig",
            enc(
                json!({"kubernetes.io": {"namespace": "ns1", "serviceaccount": {"name": "sa1", "uid": "u"}}})
            )
        );
        assert_eq!(jwt_account(&projected), Some(("ns1".into(), "sa1".into())));
        let legacy = format!(
            "e30.{}.sig",
            enc(json!({"kubernetes.io/serviceaccount/namespace": "ns2",
                       "kubernetes.io/serviceaccount/service-account.name": "sa2"}))
        );
        assert_eq!(jwt_account(&legacy), Some(("ns2".into(), "sa2".into())));
        assert_eq!(jwt_account("not-a-jwt"), None);
    }

    #[test]
    fn kube_creds_needs_exactly_one_kind_of_role() {
        let mut f = OptionValues::new();
        let cfg = |f: &OptionValues| -> KubeCredsConfig {
            serde_json::from_value(creds_config_from(f)).unwrap()
        };
        assert!(
            resolve_creds(&cfg(&f))
                .err()
                .unwrap()
                .to_string()
                .contains("exactly one")
        );
        f.set("kube-service-account", OptionValue::Text("sa".into()))
            .unwrap();
        let (_, body) = resolve_creds(&cfg(&f)).unwrap();
        assert_eq!(body, r#"{"kubernetes_namespace":"default"}"#);
    }

    #[test]
    fn the_namespace_is_one_of_the_allowed_as_vault_benchmark_picks_it() {
        assert_eq!(pick_namespace(None), "default");
        assert_eq!(pick_namespace(Some(&json!(["*"]))), "default");
        assert_eq!(pick_namespace(Some(&json!(["*", "apps"]))), "default");
        assert_eq!(pick_namespace(Some(&json!(["apps"]))), "apps");
        let allowed = json!(["development", "staging"]);
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..200 {
            seen.insert(pick_namespace(Some(&allowed)));
        }
        let want: std::collections::BTreeSet<String> =
            ["development".to_string(), "staging".to_string()].into();
        assert_eq!(seen, want);
    }

    #[test]
    fn a_placeholder_ca_is_refused_before_setup() {
        let placeholder = "-----BEGIN CERTIFICATE-----\nMIIC...\n-----END CERTIFICATE-----";
        let mut m = Map::new();
        assert!(check_ca(&m).is_ok());
        m.insert("kubernetes_ca_cert".into(), json!(placeholder));
        let e = check_ca(&m).unwrap_err().to_string();
        assert!(
            e.contains("kubernetes_ca_cert") && e.contains("MIIC"),
            "{e}"
        );
        let ca = rcgen::generate_simple_self_signed(vec!["k".to_string()]).unwrap();
        m.insert("kubernetes_ca_cert".into(), json!(ca.cert.pem()));
        assert!(check_ca(&m).is_ok());
    }

    use super::super::OptionValue;
}
