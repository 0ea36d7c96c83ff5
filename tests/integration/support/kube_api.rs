//! A Kubernetes API stand-in, for the tests only: no Kubernetes API server runs here, and
//! OpenBao's kubernetes auth method and kubernetes secrets engine need one to call.
//!
//! It serves HTTPS (rustls, a certificate from its own CA, HTTP/1.1) on 127.0.0.1 and
//! implements only the calls those two engines make:
//! - `POST /apis/authentication.k8s.io/v1/tokenreviews` (every kubernetes login);
//! - ServiceAccount create, get and delete, and the token request
//!   (`POST /api/v1/namespaces/NS/serviceaccounts/NAME/token`);
//! - Role, RoleBinding, ClusterRole and ClusterRoleBinding create, get and delete;
//! - `GET /api/v1/namespaces/NS` (the namespace's labels).
//!
//! It signs the JWTs of its service accounts itself (ES256, a key made at start), and
//! verifies them: a token is valid while its signature checks, it has not expired and
//! its service account (name and uid) still exists. Every call but the TokenReview's
//! body needs such a token as its bearer, as the real API does. It keeps its objects in
//! memory, so a test can see what was created and what was removed; it refuses a Role
//! whose rules the real API would refuse (a rule without verbs, resources without API
//! groups, non-resource URLs in a namespaced Role) with 422 Invalid.
//! Stops when dropped.

use std::collections::BTreeMap;
use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::rand::SystemRandom;
use ring::signature::{
    ECDSA_P256_SHA256_FIXED, ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair,
    UnparsedPublicKey,
};
use serde_json::{Value, json};

use super::certs::gen_tls_files_for;

/// The audience of the tokens it issues unless a request names others.
pub const DEFAULT_AUDIENCE: &str = "https://kubernetes.default.svc.cluster.local";

/// One object of the API, by kind, namespace ("" when cluster-wide) and name.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ObjectKey {
    pub kind: String,
    pub namespace: String,
    pub name: String,
}

#[derive(Default)]
struct State {
    /// Live objects.
    objects: BTreeMap<ObjectKey, Value>,
    /// Every object created through the API, in order.
    created: Vec<ObjectKey>,
    /// Every object deleted through the API, in order.
    deleted: Vec<ObjectKey>,
    /// Calls by "METHOD kind[/sub]" (tokenreviews, serviceaccounts/token, ...).
    calls: BTreeMap<String, u64>,
}

struct Signer {
    key: EcdsaKeyPair,
    rng: SystemRandom,
}

/// The running stand-in.
pub struct KubeApi {
    /// `https://ADDRESS:PORT` (`https://127.0.0.1:PORT` unless started elsewhere)
    pub url: String,
    /// Its CA certificate (PEM), which verifies its certificate.
    pub ca_pem: String,
    /// The same, as a file.
    pub ca_file: PathBuf,
    state: Arc<Mutex<State>>,
    signer: Arc<Signer>,
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
    dir: tempfile::TempDir,
}

static UIDS: AtomicU64 = AtomicU64::new(1);

fn uid() -> String {
    format!(
        "00000000-0000-4000-8000-{:012x}",
        UIDS.fetch_add(1, Ordering::SeqCst)
    )
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

impl KubeApi {
    /// Starts it on 127.0.0.1 with the service accounts `accounts` ((namespace, name))
    /// already there, in namespaces `default`, `kube-system` and theirs.
    pub fn start(accounts: &[(&str, &str)]) -> KubeApi {
        Self::start_at("127.0.0.1:0", &["127.0.0.1", "localhost"], accounts, &[])
    }

    /// Starts it bound to `bind` (address:port, in the calling thread's network
    /// namespace), its certificate for `names`, with `accounts` in namespaces `default`,
    /// `kube-system`, theirs and `extra_namespaces`.
    pub fn start_at(
        bind: &str,
        names: &[&str],
        accounts: &[(&str, &str)],
        extra_namespaces: &[&str],
    ) -> KubeApi {
        let dir = tempfile::Builder::new()
            .prefix("vblast-kube-")
            .tempdir()
            .unwrap();
        let files = gen_tls_files_for(dir.path(), names);
        let certs: Vec<_> = rustls_pemfile::certs(&mut &std::fs::read(&files.cert).unwrap()[..])
            .collect::<Result<_, _>>()
            .unwrap();
        let key = rustls_pemfile::private_key(&mut &std::fs::read(&files.key).unwrap()[..])
            .unwrap()
            .unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = Arc::new(
            rustls::ServerConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .unwrap()
                .with_no_client_auth()
                .with_single_cert(certs, key)
                .unwrap(),
        );
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
        let signer = Arc::new(Signer {
            key: EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
                .unwrap(),
            rng,
        });
        let mut state = State::default();
        let mut namespaces = vec!["default", "kube-system"];
        namespaces.extend(accounts.iter().map(|(ns, _)| *ns));
        namespaces.extend(extra_namespaces);
        for ns in namespaces {
            state.objects.insert(
                key_of("namespaces", "", ns),
                json!({"apiVersion": "v1", "kind": "Namespace",
                       "metadata": {"name": ns, "uid": uid(), "labels": {"kubernetes.io/metadata.name": ns}}}),
            );
        }
        for (ns, name) in accounts {
            state.objects.insert(
                key_of("serviceaccounts", ns, name),
                json!({"apiVersion": "v1", "kind": "ServiceAccount",
                       "metadata": {"name": name, "namespace": ns, "uid": uid()}}),
            );
        }
        let state = Arc::new(Mutex::new(state));
        let listener = TcpListener::bind(bind).unwrap_or_else(|e| panic!("binding {bind}: {e}"));
        listener.set_nonblocking(true).unwrap();
        let local = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let (stop2, state2, signer2) = (stop.clone(), state.clone(), signer.clone());
        let handle = thread::spawn(move || {
            let mut workers = Vec::new();
            while !stop2.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((sock, _)) => {
                        let (config, stop, state, signer) = (
                            config.clone(),
                            stop2.clone(),
                            state2.clone(),
                            signer2.clone(),
                        );
                        workers.push(thread::spawn(move || {
                            let _ = serve(sock, config, &stop, &state, &signer);
                        }));
                    }
                    Err(_) => thread::sleep(Duration::from_millis(5)),
                }
            }
            for w in workers {
                let _ = w.join();
            }
        });
        KubeApi {
            url: format!("https://{local}"),
            ca_pem: std::fs::read_to_string(&files.ca_cert).unwrap(),
            ca_file: files.ca_cert,
            state,
            signer,
            stop,
            handle: Some(handle),
            dir,
        }
    }

    /// A token of the service account `namespace/name` (which must exist), as a pod's
    /// projected token: audience [`DEFAULT_AUDIENCE`], valid for an hour.
    pub fn token(&self, namespace: &str, name: &str) -> String {
        let uid = {
            let st = self.state.lock().unwrap();
            st.objects
                .get(&key_of("serviceaccounts", namespace, name))
                .map(|o| o["metadata"]["uid"].as_str().unwrap_or("").to_string())
                .unwrap_or_else(|| panic!("no service account {namespace}/{name}"))
        };
        sign(
            &self.signer,
            namespace,
            name,
            &uid,
            &[DEFAULT_AUDIENCE.to_string()],
            3600,
        )
    }

    /// The public key its tokens verify with (PEM, SubjectPublicKeyInfo): for a jwt auth
    /// method's `jwt_validation_pubkeys`.
    pub fn public_key_pem(&self) -> String {
        // The DER prefix of a P-256 SubjectPublicKeyInfo, then the uncompressed point.
        let mut der = vec![
            0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06,
            0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
        ];
        der.extend_from_slice(self.signer.key.public_key().as_ref());
        let b64 = base64::engine::general_purpose::STANDARD.encode(&der);
        let lines: Vec<&str> = b64
            .as_bytes()
            .chunks(64)
            .map(|c| std::str::from_utf8(c).unwrap())
            .collect();
        format!(
            "-----BEGIN PUBLIC KEY-----\n{}\n-----END PUBLIC KEY-----\n",
            lines.join("\n")
        )
    }

    /// That token written to a file in the stand-in's directory.
    pub fn token_file(&self, namespace: &str, name: &str) -> PathBuf {
        let path = self.dir.path().join(format!("token-{namespace}-{name}"));
        std::fs::write(&path, self.token(namespace, name)).unwrap();
        path
    }

    /// The stand-in's directory (removed when it stops).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The live objects of `kind` ("serviceaccounts", "roles", "rolebindings",
    /// "clusterroles", "clusterrolebindings").
    pub fn live(&self, kind: &str) -> Vec<ObjectKey> {
        let st = self.state.lock().unwrap();
        st.objects
            .keys()
            .filter(|k| k.kind == kind)
            .cloned()
            .collect()
    }

    /// Every object created through the API.
    pub fn created(&self) -> Vec<ObjectKey> {
        self.state.lock().unwrap().created.clone()
    }

    /// Every object deleted through the API.
    #[allow(dead_code)]
    pub fn deleted(&self) -> Vec<ObjectKey> {
        self.state.lock().unwrap().deleted.clone()
    }

    /// The objects created through the API and not deleted since.
    pub fn left(&self) -> Vec<ObjectKey> {
        let st = self.state.lock().unwrap();
        st.created
            .iter()
            .filter(|k| st.objects.contains_key(k))
            .cloned()
            .collect()
    }

    /// How many calls "METHOD what" it answered ("POST tokenreviews",
    /// "POST serviceaccounts/token", "POST roles", ...).
    pub fn calls(&self, what: &str) -> u64 {
        *self.state.lock().unwrap().calls.get(what).unwrap_or(&0)
    }
}

impl Drop for KubeApi {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

fn key_of(kind: &str, namespace: &str, name: &str) -> ObjectKey {
    ObjectKey {
        kind: kind.into(),
        namespace: namespace.into(),
        name: name.into(),
    }
}

/// A projected service-account token (ES256).
fn sign(signer: &Signer, ns: &str, name: &str, uid: &str, aud: &[String], ttl: u64) -> String {
    let now = now();
    let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"ES256","typ":"JWT","kid":"stand-in"}"#);
    let claims = json!({
        "iss": "https://kubernetes.default.svc.cluster.local",
        "sub": format!("system:serviceaccount:{ns}:{name}"),
        "aud": aud,
        "iat": now,
        "nbf": now,
        "exp": now + ttl,
        "kubernetes.io": {
            "namespace": ns,
            "serviceaccount": {"name": name, "uid": uid},
        },
    });
    let input = format!("{header}.{}", URL_SAFE_NO_PAD.encode(claims.to_string()));
    let sig = signer.key.sign(&signer.rng, input.as_bytes()).unwrap();
    format!("{input}.{}", URL_SAFE_NO_PAD.encode(sig.as_ref()))
}

/// The claims of a token it signed that is still valid, or why not.
fn verify(signer: &Signer, st: &State, token: &str) -> Result<Value, String> {
    let (input, sig) = token.rsplit_once('.').ok_or("not a JWT")?;
    let sig = URL_SAFE_NO_PAD
        .decode(sig)
        .map_err(|_| "bad signature encoding")?;
    UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, signer.key.public_key().as_ref())
        .verify(input.as_bytes(), &sig)
        .map_err(|_| "invalid bearer token: the signature does not verify".to_string())?;
    let payload = input.split('.').nth(1).ok_or("not a JWT")?;
    let claims: Value = serde_json::from_slice(
        &URL_SAFE_NO_PAD
            .decode(payload)
            .map_err(|_| "bad claims encoding")?,
    )
    .map_err(|_| "bad claims")?;
    if claims["exp"].as_u64().unwrap_or(0) < now() {
        return Err("the token has expired".into());
    }
    let k = &claims["kubernetes.io"];
    let (ns, name, uid) = (
        k["namespace"].as_str().unwrap_or(""),
        k["serviceaccount"]["name"].as_str().unwrap_or(""),
        k["serviceaccount"]["uid"].as_str().unwrap_or(""),
    );
    match st.objects.get(&key_of("serviceaccounts", ns, name)) {
        Some(sa) if sa["metadata"]["uid"] == uid => Ok(claims),
        _ => Err(format!(
            "service account {ns}/{name} (uid {uid}) no longer exists"
        )),
    }
}

fn status(code: u16, reason: &str, message: &str) -> (u16, Value) {
    (
        code,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": message, "reason": reason, "code": code}),
    )
}

/// What a request's path names.
struct Target {
    kind: String,
    namespace: String,
    name: Option<String>,
    sub: Option<String>,
}

fn parse_path(path: &str) -> Option<Target> {
    let path = path.split('?').next().unwrap_or("");
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    let rest: &[&str] = match parts.as_slice() {
        ["api", "v1", rest @ ..] => rest,
        ["apis", "rbac.authorization.k8s.io", "v1", rest @ ..] => rest,
        ["apis", "authentication.k8s.io", "v1", rest @ ..] => rest,
        _ => return None,
    };
    let owned = |s: &&str| s.to_string();
    match rest {
        ["namespaces", ns] => Some(Target {
            kind: "namespaces".into(),
            namespace: String::new(),
            name: Some(ns.to_string()),
            sub: None,
        }),
        ["namespaces", ns, kind, tail @ ..] if tail.len() <= 2 => Some(Target {
            kind: kind.to_string(),
            namespace: ns.to_string(),
            name: tail.first().map(owned),
            sub: tail.get(1).map(owned),
        }),
        [kind, tail @ ..] if tail.len() <= 1 => Some(Target {
            kind: kind.to_string(),
            namespace: String::new(),
            name: tail.first().map(owned),
            sub: None,
        }),
        _ => None,
    }
}

/// The rules of a Role or ClusterRole as the real API validates them.
fn check_rules(kind: &str, obj: &Value) -> Result<(), String> {
    let empty = vec![];
    let rules = obj["rules"].as_array().unwrap_or(&empty);
    for (i, r) in rules.iter().enumerate() {
        let len = |k: &str| r[k].as_array().map(|a| a.len()).unwrap_or(0);
        if len("verbs") == 0 {
            return Err(format!(
                "rules[{i}].verbs: Required value: verbs must contain at least one value"
            ));
        }
        if len("resources") > 0 && len("apiGroups") == 0 {
            return Err(format!(
                "rules[{i}].apiGroups: Required value: resource rules must supply at least one api group"
            ));
        }
        if len("nonResourceURLs") > 0 && kind == "roles" {
            return Err(format!(
                "rules[{i}].nonResourceURLs: Invalid value: namespaced rules cannot apply to non-resource URLs"
            ));
        }
        if len("resources") == 0 && len("nonResourceURLs") == 0 {
            return Err(format!(
                "rules[{i}]: Required value: resource rules must supply at least one resource"
            ));
        }
    }
    Ok(())
}

const KINDS: &[(&str, &str, &str)] = &[
    ("serviceaccounts", "ServiceAccount", "v1"),
    ("roles", "Role", "rbac.authorization.k8s.io/v1"),
    (
        "rolebindings",
        "RoleBinding",
        "rbac.authorization.k8s.io/v1",
    ),
    (
        "clusterroles",
        "ClusterRole",
        "rbac.authorization.k8s.io/v1",
    ),
    (
        "clusterrolebindings",
        "ClusterRoleBinding",
        "rbac.authorization.k8s.io/v1",
    ),
];

fn handle(
    method: &str,
    path: &str,
    bearer: Option<&str>,
    body: &[u8],
    state: &Mutex<State>,
    signer: &Signer,
) -> (u16, Value) {
    let Some(t) = parse_path(path) else {
        return status(
            404,
            "NotFound",
            "the server could not find the requested resource",
        );
    };
    let mut st = state.lock().unwrap();
    let what = match &t.sub {
        Some(s) => format!("{method} {}/{s}", t.kind),
        None => format!("{method} {}", t.kind),
    };
    *st.calls.entry(what).or_default() += 1;
    if let Err(e) = bearer
        .ok_or_else(|| "no bearer token".to_string())
        .and_then(|b| verify(signer, &st, b))
    {
        return status(401, "Unauthorized", &format!("Unauthorized: {e}"));
    }
    let body: Value = if body.is_empty() {
        Value::Null
    } else if let Some(pb) = body.strip_prefix(b"k8s\0") {
        // client-go sends the built-in types as protobuf.
        proto::object(pb)
    } else {
        match serde_json::from_slice(body) {
            Ok(v) => v,
            Err(e) => {
                let head = String::from_utf8_lossy(&body[..body.len().min(40)]).into_owned();
                return status(
                    400,
                    "BadRequest",
                    &format!("bad JSON: {e} ({} bytes: {head:?})", body.len()),
                );
            }
        }
    };
    if t.kind == "tokenreviews" && method == "POST" {
        return token_review(&body, &st, signer);
    }
    if t.kind == "namespaces" && method == "GET" {
        let name = t.name.unwrap_or_default();
        return match st.objects.get(&key_of("namespaces", "", &name)) {
            Some(o) => (200, o.clone()),
            None => status(404, "NotFound", &format!("namespaces \"{name}\" not found")),
        };
    }
    let Some((_, kind_name, api_version)) = KINDS.iter().find(|(k, _, _)| *k == t.kind) else {
        return status(
            404,
            "NotFound",
            "the server could not find the requested resource",
        );
    };
    if !t.namespace.is_empty()
        && !st
            .objects
            .contains_key(&key_of("namespaces", "", &t.namespace))
    {
        return status(
            404,
            "NotFound",
            &format!("namespaces \"{}\" not found", t.namespace),
        );
    }
    match (method, t.name.as_deref(), t.sub.as_deref()) {
        ("POST", None, None) => create(&mut st, &t, kind_name, api_version, body),
        ("POST", Some(name), Some("token")) if t.kind == "serviceaccounts" => {
            token_request(&mut st, signer, &t.namespace, name, &body)
        }
        ("GET", Some(name), None) => match st.objects.get(&key_of(&t.kind, &t.namespace, name)) {
            Some(o) => (200, o.clone()),
            None => status(404, "NotFound", &format!("{} \"{name}\" not found", t.kind)),
        },
        ("DELETE", Some(name), None) => {
            let key = key_of(&t.kind, &t.namespace, name);
            match st.objects.remove(&key) {
                Some(_) => {
                    st.deleted.push(key);
                    (
                        200,
                        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}),
                    )
                }
                None => status(404, "NotFound", &format!("{} \"{name}\" not found", t.kind)),
            }
        }
        _ => status(
            405,
            "MethodNotAllowed",
            "the stand-in does not serve this call",
        ),
    }
}

fn create(
    st: &mut State,
    t: &Target,
    kind: &str,
    api_version: &str,
    mut obj: Value,
) -> (u16, Value) {
    let name = obj["metadata"]["name"].as_str().unwrap_or("").to_string();
    if name.is_empty() {
        return status(422, "Invalid", "metadata.name: Required value");
    }
    if (t.kind == "roles" || t.kind == "clusterroles")
        && let Err(e) = check_rules(&t.kind, &obj)
    {
        return status(
            422,
            "Invalid",
            &format!("{kind}.rbac.authorization.k8s.io \"{name}\" is invalid: {e}"),
        );
    }
    let key = key_of(&t.kind, &t.namespace, &name);
    if st.objects.contains_key(&key) {
        return status(
            409,
            "AlreadyExists",
            &format!("{} \"{name}\" already exists", t.kind),
        );
    }
    obj["kind"] = json!(kind);
    obj["apiVersion"] = json!(api_version);
    obj["metadata"]["uid"] = json!(uid());
    obj["metadata"]["resourceVersion"] = json!("1");
    obj["metadata"]["creationTimestamp"] = json!(rfc3339(now()));
    if !t.namespace.is_empty() {
        obj["metadata"]["namespace"] = json!(t.namespace);
    }
    st.objects.insert(key.clone(), obj.clone());
    st.created.push(key);
    (201, obj)
}

fn token_request(
    st: &mut State,
    signer: &Signer,
    ns: &str,
    name: &str,
    body: &Value,
) -> (u16, Value) {
    let Some(sa) = st.objects.get(&key_of("serviceaccounts", ns, name)) else {
        return status(
            404,
            "NotFound",
            &format!("serviceaccounts \"{name}\" not found"),
        );
    };
    let uid = sa["metadata"]["uid"].as_str().unwrap_or("").to_string();
    let ttl = body["spec"]["expirationSeconds"].as_u64().unwrap_or(3600);
    if ttl < 600 {
        return status(
            422,
            "Invalid",
            "spec.expirationSeconds: Invalid value: may not specify a duration less than 10 minutes",
        );
    }
    let aud: Vec<String> = match body["spec"]["audiences"].as_array() {
        Some(a) if !a.is_empty() => a
            .iter()
            .filter_map(|v| v.as_str().map(String::from))
            .collect(),
        _ => vec![DEFAULT_AUDIENCE.to_string()],
    };
    let token = sign(signer, ns, name, &uid, &aud, ttl);
    (
        201,
        json!({"kind": "TokenRequest", "apiVersion": "authentication.k8s.io/v1",
               "metadata": {"name": name, "namespace": ns},
               "spec": {"audiences": aud, "expirationSeconds": ttl},
               "status": {"token": token, "expirationTimestamp": rfc3339(now() + ttl)}}),
    )
}

fn token_review(body: &Value, st: &State, signer: &Signer) -> (u16, Value) {
    let token = body["spec"]["token"].as_str().unwrap_or("");
    let want: Vec<String> = body["spec"]["audiences"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    let status_v = match verify(signer, st, token) {
        Err(e) => json!({"authenticated": false, "error": e}),
        Ok(claims) => {
            let aud: Vec<String> = claims["aud"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|v| v.as_str().map(String::from))
                        .collect()
                })
                .unwrap_or_default();
            if !want.is_empty() && !want.iter().any(|w| aud.contains(w)) {
                json!({"authenticated": false, "error": "token audiences do not match"})
            } else {
                let k = &claims["kubernetes.io"];
                let (ns, name) = (
                    k["namespace"].as_str().unwrap_or(""),
                    k["serviceaccount"]["name"].as_str().unwrap_or(""),
                );
                json!({"authenticated": true,
                       "user": {"username": format!("system:serviceaccount:{ns}:{name}"),
                                "uid": k["serviceaccount"]["uid"],
                                "groups": ["system:serviceaccounts", format!("system:serviceaccounts:{ns}"), "system:authenticated"]},
                       "audiences": if want.is_empty() { aud } else { want }})
            }
        }
    };
    (
        201,
        json!({"kind": "TokenReview", "apiVersion": "authentication.k8s.io/v1",
               "metadata": {"creationTimestamp": null},
               "spec": body["spec"], "status": status_v}),
    )
}

/// Seconds since the epoch as RFC 3339 UTC (civil-from-days).
fn rfc3339(secs: u64) -> String {
    let days = (secs / 86400) as i64;
    let rem = secs % 86400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// One TLS connection: HTTP/1.1 requests with Content-Length bodies, kept alive.
fn serve(
    sock: TcpStream,
    config: Arc<rustls::ServerConfig>,
    stop: &AtomicBool,
    state: &Mutex<State>,
    signer: &Signer,
) -> io::Result<()> {
    sock.set_nonblocking(false)?;
    sock.set_nodelay(true)?;
    sock.set_read_timeout(Some(Duration::from_millis(100)))?;
    let conn = rustls::ServerConnection::new(config).map_err(io::Error::other)?;
    let mut tls = rustls::StreamOwned::new(conn, sock);
    let mut buf = Vec::new();
    let mut chunk = [0u8; 16384];
    loop {
        // A whole request in `buf`?
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut req = httparse::Request::new(&mut headers);
        if let Ok(httparse::Status::Complete(head)) = req.parse(&buf) {
            let len: usize = req
                .headers
                .iter()
                .find(|h| h.name.eq_ignore_ascii_case("content-length"))
                .and_then(|h| std::str::from_utf8(h.value).ok()?.trim().parse().ok())
                .unwrap_or(0);
            if buf.len() >= head + len {
                let bearer = req
                    .headers
                    .iter()
                    .find(|h| h.name.eq_ignore_ascii_case("authorization"))
                    .and_then(|h| std::str::from_utf8(h.value).ok())
                    .and_then(|v| v.strip_prefix("Bearer "))
                    .map(|s| s.trim().to_string());
                let (method, path) = (
                    req.method.unwrap_or("").to_string(),
                    req.path.unwrap_or("").to_string(),
                );
                let (code, body) = handle(
                    &method,
                    &path,
                    bearer.as_deref(),
                    &buf[head..head + len],
                    state,
                    signer,
                );
                let body = body.to_string();
                let out = format!(
                    "HTTP/1.1 {code} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                    body.len()
                );
                tls.write_all(out.as_bytes())?;
                tls.flush()?;
                buf.drain(..head + len);
                continue;
            }
        }
        if stop.load(Ordering::SeqCst) {
            return Ok(());
        }
        match tls.read(&mut chunk) {
            Ok(0) => return Ok(()),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) => {}
            Err(e) => return Err(e),
        }
    }
}

/// The few protobuf messages client-go sends (`k8s\0` then a runtime.Unknown holding the
/// object), read into the JSON shape of the fields the stand-in uses.
mod proto {
    use serde_json::{Map, Value, json};

    enum Wire<'a> {
        Varint(u64),
        Bytes(&'a [u8]),
    }

    fn varint(b: &[u8], i: &mut usize) -> u64 {
        let mut v = 0u64;
        let mut shift = 0;
        while *i < b.len() {
            let byte = b[*i];
            *i += 1;
            v |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                break;
            }
            shift += 7;
        }
        v
    }

    fn fields(b: &[u8]) -> Vec<(u64, Wire<'_>)> {
        let mut out = Vec::new();
        let mut i = 0;
        while i < b.len() {
            let tag = varint(b, &mut i);
            let (field, wire) = (tag >> 3, tag & 7);
            match wire {
                0 => out.push((field, Wire::Varint(varint(b, &mut i)))),
                2 => {
                    let len = varint(b, &mut i) as usize;
                    let end = (i + len).min(b.len());
                    out.push((field, Wire::Bytes(&b[i..end])));
                    i = end;
                }
                1 => i += 8,
                5 => i += 4,
                _ => break,
            }
        }
        out
    }

    fn text(b: &[u8]) -> Value {
        json!(String::from_utf8_lossy(b))
    }

    /// A message's string fields by number: `names[n]` is field n+1's JSON name; a name
    /// ending in `[]` is a repeated string.
    fn strings(b: &[u8], names: &[&str]) -> Map<String, Value> {
        let mut m = Map::new();
        for (f, w) in fields(b) {
            let (Some(name), Wire::Bytes(v)) = (names.get(f as usize - 1), w) else {
                continue;
            };
            if let Some(list) = name.strip_suffix("[]") {
                let e = m.entry(list.to_string()).or_insert(json!([]));
                if let Value::Array(a) = e {
                    a.push(text(v));
                }
            } else if !name.is_empty() {
                m.insert(name.to_string(), text(v));
            }
        }
        m
    }

    fn string_map(entries: &[&[u8]]) -> Value {
        let mut m = Map::new();
        for e in entries {
            let kv = strings(e, &["key", "value"]);
            if let (Some(Value::String(k)), Some(v)) = (kv.get("key"), kv.get("value")) {
                m.insert(k.clone(), v.clone());
            }
        }
        Value::Object(m)
    }

    fn meta(b: &[u8]) -> Value {
        let mut m = strings(b, &["name", "generateName", "namespace"]);
        let (mut labels, mut annotations) = (Vec::new(), Vec::new());
        for (f, w) in fields(b) {
            if let Wire::Bytes(v) = w {
                match f {
                    11 => labels.push(v),
                    12 => annotations.push(v),
                    _ => {}
                }
            }
        }
        m.insert("labels".into(), string_map(&labels));
        m.insert("annotations".into(), string_map(&annotations));
        Value::Object(m)
    }

    /// The object inside a runtime.Unknown, by its kind.
    pub fn object(b: &[u8]) -> Value {
        let mut kind = String::new();
        let mut raw: &[u8] = &[];
        for (f, w) in fields(b) {
            match (f, w) {
                (1, Wire::Bytes(tm)) => {
                    if let Some(Value::String(k)) = strings(tm, &["apiVersion", "kind"]).get("kind")
                    {
                        kind = k.clone();
                    }
                }
                (2, Wire::Bytes(r)) => raw = r,
                _ => {}
            }
        }
        let mut o = Map::new();
        o.insert("kind".into(), json!(kind));
        let mut rules = Vec::new();
        let mut subjects = Vec::new();
        for (f, w) in fields(raw) {
            let Wire::Bytes(v) = w else { continue };
            match (kind.as_str(), f) {
                (_, 1) => {
                    o.insert("metadata".into(), meta(v));
                }
                ("Role" | "ClusterRole", 2) => rules.push(Value::Object(strings(
                    v,
                    &[
                        "verbs[]",
                        "apiGroups[]",
                        "resources[]",
                        "resourceNames[]",
                        "nonResourceURLs[]",
                    ],
                ))),
                ("RoleBinding" | "ClusterRoleBinding", 2) => subjects.push(Value::Object(strings(
                    v,
                    &["kind", "apiGroup", "name", "namespace"],
                ))),
                ("RoleBinding" | "ClusterRoleBinding", 3) => {
                    o.insert(
                        "roleRef".into(),
                        Value::Object(strings(v, &["apiGroup", "kind", "name"])),
                    );
                }
                ("TokenRequest", 2) => {
                    let mut spec = strings(v, &["audiences[]"]);
                    for (f, w) in fields(v) {
                        if let (4, Wire::Varint(n)) = (f, w) {
                            spec.insert("expirationSeconds".into(), json!(n));
                        }
                    }
                    o.insert("spec".into(), Value::Object(spec));
                }
                ("TokenReview", 2) => {
                    o.insert(
                        "spec".into(),
                        Value::Object(strings(v, &["token", "audiences[]"])),
                    );
                }
                _ => {}
            }
        }
        if kind == "Role" || kind == "ClusterRole" {
            o.insert("rules".into(), json!(rules));
        }
        if !subjects.is_empty() {
            o.insert("subjects".into(), json!(subjects));
        }
        Value::Object(o)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_of_known_instants() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_700_000_000), "2023-11-14T22:13:20Z");
    }
}
