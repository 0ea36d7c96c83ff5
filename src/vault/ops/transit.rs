//! The transit family: `transit-encrypt`, `transit-decrypt`, `transit-sign`,
//! `transit-verify`, `transit-hmac`. Setup enables transit at a fresh mount
//! (`vblast-transit-xxxxxxxx`) and creates the key `vblast` of `--key-type`; decrypt and
//! verify get a ciphertext or signature made at setup. Every answer is checked: a
//! ciphertext, signature or HMAC present, a decrypt giving back exactly the plaintext, a
//! verify saying `valid: true`. Cleanup disables the mount.
//!
//! Shared by the shards of a run (src/session/fixtures.rs): `vblast setup` makes the mount and the
//! key under names derived from the run id; a shard waits for the key and, for decrypt and
//! verify, has the server make its own ciphertext or signature (nothing persistent);
//! `vblast cleanup` disables the mount.

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::vb::{Keys, Mapped};
use super::{
    Bound, ConfigBound, Created, Fixture, OpInfo, OptionKind as ValueKind, OptionSpec,
    OptionValues, SetupCtx, VaultBenchmark, VaultOp, VbType, call, disable_mount, json_str,
    mount_created, needs_setup, setup_with,
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
/// Plaintext bytes per request unless `--payload-size` says otherwise.
pub const DEFAULT_PAYLOAD: usize = 128;
/// Key types vblast accepts: (name, whether it signs, whether it encrypts).
const KEY_TYPES: &[(&str, bool, bool)] = &[
    ("aes128-gcm96", false, true),
    ("aes256-gcm96", false, true),
    ("chacha20-poly1305", false, true),
    ("ecdsa-p256", true, false),
    ("ecdsa-p384", true, false),
    ("ed25519", true, false),
    ("rsa-2048", true, true),
    ("rsa-3072", true, true),
    ("rsa-4096", true, true),
];

const OPTIONS: &[OptionSpec] = &[
    OptionSpec {
        flag: "key-type",
        value_name: "TYPE",
        kind: ValueKind::Text,
        default: None,
        help: "Transit key type (aes256-gcm96, ecdsa-p256, ed25519, rsa-2048, ...)",
    },
    OptionSpec {
        flag: "payload-size",
        value_name: "BYTES",
        kind: ValueKind::Bytes {
            max: Some(16 << 20),
        },
        default: None,
        help: "Bytes of plaintext or input per transit request (default 128)",
    },
];

const DOC: &str = "Setup enables transit at a fresh mount (`vblast-transit-xxxxxxxx`) and creates the key `vblast` of `--key-type` (aes256-gcm96 for encrypt, decrypt and hmac, ecdsa-p256 for sign and verify, ed25519, rsa-2048, ...); decrypt and verify get a ciphertext or signature made at setup. Every answer is checked: a ciphertext, signature or HMAC present, a decrypt giving back exactly the plaintext, a verify saying `valid: true`. Cleanup disables the mount. Shards share the mount and the key.";

/// vault-benchmark's transit key when the file names none (its `keys.type` default).
pub const VB_KEY_TYPE: &str = "rsa-2048";

/// vault-benchmark's transit tests. Its defaults are taken as they are: an rsa-2048 key
/// for all four tests, PSS with SHA2-256 (ASN.1 marshaling) to sign and verify, an empty
/// input to sign (it sends none unless `sign.input` says), `payload_len` (128) random
/// bytes to encrypt, `context_len` (32) bytes of context for a derived key.
fn transit_hcl(c: &mut Keys, out: &mut Mapped) -> Result<(), Cause> {
    if let Some(n) = c.number("payload_len")? {
        out.config.insert("payload_size".into(), json!(n));
    }
    if let Some(n) = c.number("context_len")? {
        out.config.insert("context_size".into(), json!(n));
    }
    out.config
        .insert("key_type".into(), json!(VB_KEY_TYPE.to_string()));
    let mut keys = c.block("keys")?;
    keys.names(&["name"]);
    if let Some(t) = keys.string("type")? {
        out.config.insert("key_type".into(), json!(t));
    }
    let mut key_params = serde_json::Map::new();
    for flag in [
        "convergent_encryption",
        "derived",
        "exportable",
        "allow_plaintext_backup",
    ] {
        if let Some(b) = keys.boolean(flag)? {
            key_params.insert(flag.into(), json!(b));
        }
    }
    if let Some(n) = keys.number("key_size")? {
        key_params.insert("key_size".into(), json!(n));
    }
    if let Some(p) = keys.string("auto_rotate_period")? {
        key_params.insert("auto_rotate_period".into(), json!(p));
    }
    for k in ["managed_key_name", "managed_key_id"] {
        keys.only(k, &[json!("")], "OpenBao has no managed keys")?;
    }
    keys.finish(&mut out.named)?;
    out.config
        .insert("key_params".into(), Value::Object(key_params));
    // The measured request's own settings: the block of the test's action.
    let action = out
        .config
        .get("action")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let mut params = serde_json::Map::new();
    if matches!(action.as_str(), "sign" | "verify") {
        params.insert("hash_algorithm".into(), json!("sha2-256"));
        params.insert("signature_algorithm".into(), json!("pss"));
        params.insert("marshaling_algorithm".into(), json!("asn1"));
        out.config.insert("input".into(), json!(""));
    }
    for block in ["encrypt", "decrypt", "sign", "verify"] {
        let mut b = c.block(block)?;
        b.names(&["name"]);
        if block == action {
            request_keys(&mut b, &action, &mut params, out)?;
        } else {
            // vault-benchmark reads only the block of the test's own action.
            let rest: Vec<String> = b.left().map(|k| format!("config.{block}.{k}")).collect();
            b.forget();
            out.named.extend(rest);
        }
        b.finish(&mut out.named)?;
    }
    out.config.insert("params".into(), Value::Object(params));
    out.config.remove("action");
    Ok(())
}

/// The keys of the block of the test's own action (`sign { ... }` for transit_sign).
fn request_keys(
    b: &mut Keys,
    action: &str,
    params: &mut serde_json::Map<String, Value>,
    out: &mut Mapped,
) -> Result<(), Cause> {
    let signs = matches!(action, "sign" | "verify");
    let text = |b: &mut Keys, k: &str, p: &mut serde_json::Map<String, Value>| {
        b.string(k).map(|v| {
            if let Some(v) = v {
                p.insert(k.into(), json!(v));
            }
        })
    };
    if signs {
        for k in [
            "hash_algorithm",
            "signature_algorithm",
            "marshaling_algorithm",
            "salt_length",
        ] {
            text(b, k, params)?;
        }
        if let Some(p) = b.boolean("prehashed")? {
            params.insert("prehashed".into(), json!(p));
        }
        if let Some(input) = b.string("input")? {
            out.config.insert("input".into(), json!(input));
        }
        // Made at setup by vblast, as by vault-benchmark.
        b.names(&["signature", "hmac"]);
    } else {
        text(b, "associated_data", params)?;
        b.names(&["plaintext", "ciphertext", "type", "convergent_encryption"]);
    }
    if action != "decrypt"
        && action != "verify"
        && let Some(v) = b.number("key_version")?
    {
        params.insert("key_version".into(), json!(v));
    }
    // Set from context_len by vblast, as by vault-benchmark.
    b.names(&["context"]);
    for k in [
        "batch_input",
        "reference",
        "nonce",
        "partial_failure_response_code",
    ] {
        if b.has(k) {
            b.refuse(
                k,
                "vblast sends one item per request, with the plaintext, context and nonce it makes itself",
            );
        }
    }
    Ok(())
}

/// The most bytes of context of a derived key (vault-benchmark's `context_len`, 32 by
/// default): they travel, base64, in every request, so 1 MiB keeps each body small beside
/// `--payload-size`'s 16 MiB. 0 is taken (a key that is not derived uses none; build
/// refuses 0 for a derived one).
const CONTEXT_MAX: usize = 1 << 20;

const BOUNDS: &[ConfigBound] = &[ConfigBound {
    key: "context_size",
    file_key: "context_len",
    bound: Bound::Range {
        min: 0,
        max: CONTEXT_MAX as u64,
    },
}];

macro_rules! op_info {
    ($const:ident, $name:literal, $about:literal, $request:literal, $build:ident, $vb:expr) => {
        pub const $const: OpInfo = OpInfo {
            name: $name,
            about: $about,
            request: $request,
            doc: DOC,
            options: OPTIONS,
            also: &[],
            config_from,
            build: $build,
            vault_benchmark: $vb,
            fixture: Fixture::Shared,
            bounds: BOUNDS,
        };
    };
}

fn with_action(action: &str, c: &mut Keys, out: &mut Mapped) -> Result<(), Cause> {
    out.config.insert("action".into(), json!(action));
    transit_hcl(c, out)
}
fn encrypt_hcl(c: &mut Keys, out: &mut Mapped) -> Result<(), Cause> {
    with_action("encrypt", c, out)
}
fn decrypt_hcl(c: &mut Keys, out: &mut Mapped) -> Result<(), Cause> {
    with_action("decrypt", c, out)
}
fn sign_hcl(c: &mut Keys, out: &mut Mapped) -> Result<(), Cause> {
    with_action("sign", c, out)
}
fn verify_hcl(c: &mut Keys, out: &mut Mapped) -> Result<(), Cause> {
    with_action("verify", c, out)
}

const fn vb(name: &'static str, config: fn(&mut Keys, &mut Mapped) -> Result<(), Cause>) -> VbType {
    VbType { name, config }
}

op_info!(
    ENCRYPT,
    "transit-encrypt",
    "POST <mount>/encrypt/vblast; the answer must hold a ciphertext",
    "POST /v1/<mount>/encrypt/vblast",
    build_encrypt,
    VaultBenchmark::Types(&[vb("transit_encrypt", encrypt_hcl)])
);
op_info!(
    DECRYPT,
    "transit-decrypt",
    "POST <mount>/decrypt/vblast of a ciphertext made at setup; the plaintext must match",
    "POST /v1/<mount>/decrypt/vblast",
    build_decrypt,
    VaultBenchmark::Types(&[vb("transit_decrypt", decrypt_hcl)])
);
op_info!(
    SIGN,
    "transit-sign",
    "POST <mount>/sign/vblast (an asymmetric --key-type, default ecdsa-p256)",
    "POST /v1/<mount>/sign/vblast",
    build_sign,
    VaultBenchmark::Types(&[vb("transit_sign", sign_hcl)])
);
op_info!(
    VERIFY,
    "transit-verify",
    "POST <mount>/verify/vblast of a signature made at setup; it must be valid",
    "POST /v1/<mount>/verify/vblast",
    build_verify,
    VaultBenchmark::Types(&[vb("transit_verify", verify_hcl)])
);
op_info!(
    HMAC,
    "transit-hmac",
    "POST <mount>/hmac/vblast; the answer must hold an HMAC",
    "POST /v1/<mount>/hmac/vblast",
    build_hmac,
    VaultBenchmark::NoType
);

/// The family's config (vault-benchmark's transit `type` and payload size).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TransitConfig {
    /// None: the default of the operation (aes256-gcm96, or ecdsa-p256 to sign).
    pub key_type: Option<String>,
    pub payload_size: usize,
    /// More settings of the key (vault-benchmark's `keys` block: `derived`,
    /// `convergent_encryption`, `exportable`, ...).
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub key_params: serde_json::Map<String, Value>,
    /// More fields of each request (`hash_algorithm`, `signature_algorithm`, ...).
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub params: serde_json::Map<String, Value>,
    /// Sign and verify: the base64 input, when not `payload_size` bytes of vblast's
    /// (vault-benchmark signs an empty input).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<String>,
    /// Bytes of context of a derived key (vault-benchmark's `context_len`, default 32).
    #[serde(default = "default_context")]
    pub context_size: usize,
}

fn default_context() -> usize {
    32
}

fn config_from(f: &OptionValues) -> Value {
    serde_json::to_value(TransitConfig {
        key_type: f.text("key-type"),
        payload_size: f
            .number("payload-size")
            .map_or(DEFAULT_PAYLOAD, |n| n as usize),
        key_params: serde_json::Map::new(),
        params: serde_json::Map::new(),
        input: None,
        context_size: default_context(),
    })
    .unwrap_or(Value::Null)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TransitKind {
    Encrypt,
    Decrypt,
    Sign,
    Verify,
    Hmac,
}

impl TransitKind {
    fn name(self) -> &'static str {
        match self {
            TransitKind::Encrypt => "transit-encrypt",
            TransitKind::Decrypt => "transit-decrypt",
            TransitKind::Sign => "transit-sign",
            TransitKind::Verify => "transit-verify",
            TransitKind::Hmac => "transit-hmac",
        }
    }
    fn signs(self) -> bool {
        matches!(self, TransitKind::Sign | TransitKind::Verify)
    }
}

fn build(kind: TransitKind, v: &Value) -> Result<Box<dyn VaultOp>, Cause> {
    let c: TransitConfig =
        serde_json::from_value(v.clone()).map_err(|e| format!("bad config: {e}"))?;
    let key_type = c.key_type.clone().unwrap_or_else(|| {
        if kind.signs() {
            "ecdsa-p256".into()
        } else {
            "aes256-gcm96".into()
        }
    });
    let Some(&(_, signs, encrypts)) = KEY_TYPES.iter().find(|k| k.0 == key_type) else {
        let names: Vec<&str> = KEY_TYPES.iter().map(|k| k.0).collect();
        return Err(Cause::from(format!(
            "key type '{key_type}' is not one of {}",
            names.join(", ")
        )));
    };
    if kind.signs() && !signs {
        return Err(Cause::from(format!(
            "a {key_type} key cannot sign: choose ecdsa-p256, ed25519 or rsa-2048"
        )));
    }
    if matches!(kind, TransitKind::Encrypt | TransitKind::Decrypt) && !encrypts {
        return Err(Cause::from(format!(
            "a {key_type} key cannot encrypt: choose aes256-gcm96, chacha20-poly1305 or rsa-2048"
        )));
    }
    if c.payload_size == 0 || c.payload_size > 16 * 1024 * 1024 {
        return Err(Cause::from(format!(
            "payload size {} is not between 1 byte and 16 MiB",
            c.payload_size
        )));
    }
    if kind == TransitKind::Encrypt && key_type.starts_with("rsa-") {
        // RSA-OAEP encrypts at most the key's bytes less 66 (SHA-256 padding).
        let bits: usize = key_type[4..].parse().unwrap_or(2048);
        let most = bits / 8 - 66;
        if c.payload_size > most {
            return Err(Cause::from(format!(
                "a {key_type} key encrypts at most {most} bytes: lower --payload-size"
            )));
        }
    }
    let derived = c.key_params.get("derived") == Some(&Value::Bool(true));
    if c.key_params.get("convergent_encryption") == Some(&Value::Bool(true)) && !derived {
        return Err(Cause::from(
            "convergent encryption needs a derived key (keys { derived = true })",
        ));
    }
    if derived && (c.context_size == 0 || c.context_size > CONTEXT_MAX) {
        return Err(Cause::from(format!(
            "context size {} is not between 1 byte and 1 MiB",
            c.context_size
        )));
    }
    let input = match (&c.input, kind.signs()) {
        (Some(i), true) => i.clone(),
        _ => payload(c.payload_size),
    };
    Ok(Box::new(Transit {
        kind,
        key_type,
        payload: input,
        context: derived.then(|| context(c.context_size)),
        key_params: c.key_params,
        params: c.params,
        mount: None,
        made: String::new(),
        shared_mount: None,
    }))
}

fn build_encrypt(v: &Value) -> Result<Box<dyn VaultOp>, Cause> {
    build(TransitKind::Encrypt, v)
}
fn build_decrypt(v: &Value) -> Result<Box<dyn VaultOp>, Cause> {
    build(TransitKind::Decrypt, v)
}
fn build_sign(v: &Value) -> Result<Box<dyn VaultOp>, Cause> {
    build(TransitKind::Sign, v)
}
fn build_verify(v: &Value) -> Result<Box<dyn VaultOp>, Cause> {
    build(TransitKind::Verify, v)
}
fn build_hmac(v: &Value) -> Result<Box<dyn VaultOp>, Cause> {
    build(TransitKind::Hmac, v)
}

/// `size` bytes of a derived key's context, base64-encoded.
fn context(size: usize) -> String {
    let bytes = super::kv::secret_value(size, 0xC0);
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// `size` bytes of plaintext, base64-encoded as transit takes it.
pub fn payload(size: usize) -> String {
    let bytes = super::kv::secret_value(size, 0x7A5);
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

struct Transit {
    kind: TransitKind,
    key_type: String,
    /// Base64 plaintext or input.
    payload: String,
    /// A derived key's base64 context, sent with every encrypt and decrypt.
    context: Option<String>,
    /// More settings of the key, sent when it is created.
    key_params: serde_json::Map<String, Value>,
    /// More fields of each request (sign and verify: the algorithms).
    params: serde_json::Map<String, Value>,
    /// The mount, as soon as it may exist.
    mount: Option<String>,
    /// The ciphertext (decrypt) or signature (verify) made at setup.
    made: String,
    /// A shard's: the mount `vblast setup` made (not its own: never disabled by it).
    shared_mount: Option<String>,
}

impl Transit {
    /// The key's creation request.
    fn key_body(&self) -> Value {
        let mut body = self.key_params.clone();
        body.insert("type".into(), json!(self.key_type));
        Value::Object(body)
    }

    /// A request body: `fields`, the context of a derived key, the extra fields.
    fn body(&self, fields: Value) -> Value {
        let mut body = match fields {
            Value::Object(m) => m,
            _ => serde_json::Map::new(),
        };
        if let Some(ctx) = &self.context
            && !self.kind.signs()
        {
            body.insert("context".into(), json!(ctx));
        }
        for (k, v) in &self.params {
            body.insert(k.clone(), v.clone());
        }
        Value::Object(body)
    }

    fn prepare(&mut self, client: &mut Client, naming: &Naming) -> Result<(), Cause> {
        let mount = naming.random_name("vblast-transit-");
        self.mount = Some(mount.clone());
        call(
            client,
            "POST",
            &format!("/v1/sys/mounts/{mount}"),
            Some(&json!({"type": "transit", "description": "vblast load test (temporary)"})),
            &format!("enabling transit at '{mount}'"),
        )
        .inspect_err(|_| self.mount = None)?;
        call(
            client,
            "POST",
            &format!("/v1/{mount}/keys/{KEY}"),
            Some(&self.key_body()),
            &format!("creating {} key '{KEY}' in '{mount}'", self.key_type),
        )?;
        self.made = self.sample(client, &mount)?;
        Ok(())
    }

    /// What decrypt and verify send: a ciphertext or signature of the payload by the key
    /// in `mount` (empty for the others). It creates nothing on the server.
    fn sample(&self, client: &mut Client, mount: &str) -> Result<String, Cause> {
        match self.kind {
            TransitKind::Decrypt => {
                let what = "encrypting the plaintext decrypt sends back".to_string();
                let v = call(
                    client,
                    "POST",
                    &format!("/v1/{mount}/encrypt/{KEY}"),
                    Some(&self.body(json!({ "plaintext": self.payload }))),
                    &what,
                )?;
                json_str(&v, "data.ciphertext", &what)
            }
            TransitKind::Verify => {
                let what = "signing the input verify checks".to_string();
                let v = call(
                    client,
                    "POST",
                    &format!("/v1/{mount}/sign/{KEY}"),
                    Some(&self.body(json!({ "input": self.payload }))),
                    &what,
                )?;
                json_str(&v, "data.signature", &what)
            }
            _ => Ok(String::new()),
        }
    }

    /// A shard of a run sharing the fixture: waits for the key `vblast setup` makes,
    /// checks its type and makes what decrypt or verify sends.
    fn join(&mut self, ctx: &SetupCtx) -> Result<(), Error> {
        let mount = ctx.naming.random_name("vblast-transit-");
        let v = shared::wait_readable(
            ctx,
            &format!("the shared transit key '{KEY}' in '{mount}'"),
            &format!("/v1/{mount}/keys/{KEY}"),
        )?;
        let kind = v
            .pointer("/data/type")
            .and_then(Value::as_str)
            .unwrap_or("");
        if kind != self.key_type {
            return Err(Error::setup(format!(
                "the shared transit key '{KEY}' in '{mount}' is {kind}, but this shard's {} asks for {}: give the shards the flags `vblast setup` was given",
                self.kind.name(),
                self.key_type
            )));
        }
        let mut client = (ctx.make_client)();
        self.made = self.sample(&mut client, &mount).map_err(Error::setup)?;
        self.shared_mount = Some(mount);
        Ok(())
    }
}

impl VaultOp for Transit {
    fn check(&self, ctx: &SetupCtx) -> Result<(), Error> {
        needs_setup(ctx, self.kind.name())
    }

    fn setup(&mut self, ctx: &SetupCtx) -> Result<(), Error> {
        match shared::mode(ctx) {
            Mode::Join => self.join(ctx),
            // `vblast cleanup`: the mount setup made, to disable.
            Mode::Remove => {
                self.mount = Some(ctx.naming.random_name("vblast-transit-"));
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
        let (verb, body, expect) = match self.kind {
            TransitKind::Encrypt => (
                "encrypt",
                self.body(json!({ "plaintext": self.payload })),
                Expect::present("data.ciphertext"),
            ),
            TransitKind::Decrypt => (
                "decrypt",
                self.body(json!({ "ciphertext": self.made })),
                Expect::equals("data.plaintext", format!("\"{}\"", self.payload)),
            ),
            TransitKind::Sign => (
                "sign",
                self.body(json!({ "input": self.payload })),
                Expect::present("data.signature"),
            ),
            TransitKind::Verify => (
                "verify",
                self.body(json!({ "input": self.payload, "signature": self.made })),
                Expect::equals("data.valid", "true"),
            ),
            TransitKind::Hmac => (
                "hmac",
                json!({ "input": self.payload }),
                Expect::present("data.hmac"),
            ),
        };
        let mut op = Operation::new(
            self.kind.name(),
            RequestSpec {
                method: "POST".into(),
                path: vec![Piece::lit(format!("/v1/{mount}/{verb}/{KEY}"))],
                headers: vec![("Content-Type".into(), "application/json".into())],
                body: Some(vec![Piece::lit(body.to_string())]),
                captured_headers: vec![],
            },
        );
        op.expect = Some(expect);
        op
    }

    fn created(&self) -> Vec<Created> {
        mount_created("transit", self.mount.as_deref())
    }

    fn cleanup(&mut self, client: &mut Client, _stop: &Stop) -> Result<(), Cause> {
        disable_mount(client, "transit", &mut self.mount)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(key_type: Option<&str>, size: usize) -> Value {
        json!({ "key_type": key_type, "payload_size": size })
    }

    #[test]
    fn key_types_fit_the_operation() {
        assert!(build_encrypt(&cfg(None, 16)).is_ok());
        assert!(build_sign(&cfg(None, 16)).is_ok());
        assert!(build_verify(&cfg(Some("ed25519"), 16)).is_ok());
        let e = build_sign(&cfg(Some("aes256-gcm96"), 16))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("cannot sign"), "{e}");
        let e = build_decrypt(&cfg(Some("ed25519"), 16))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("cannot encrypt"), "{e}");
        let e = build_hmac(&cfg(Some("des"), 16)).err().unwrap().to_string();
        assert!(
            e.contains("not one of") && e.contains("aes256-gcm96"),
            "{e}"
        );
        assert!(build_encrypt(&cfg(Some("rsa-2048"), 190)).is_ok());
        assert!(build_encrypt(&cfg(Some("rsa-2048"), 191)).is_err());
        assert!(build_encrypt(&cfg(None, 0)).is_err());
    }

    #[test]
    fn payloads_have_the_size_asked_for() {
        for size in [1, 3, 128, 1000] {
            let b = base64::engine::general_purpose::STANDARD
                .decode(payload(size))
                .unwrap();
            assert_eq!(b.len(), size);
        }
    }
}
