//! The vault-benchmark side of the registry: a test type (`VbType`) with the function that
//! turns its HCL `config` block into its operation's config, and the generic reading of
//! those blocks (`Keys`: each key translated, accepted because it only names something, or
//! refused by name). The operations' families hold their types and mapping functions; the
//! HCL file itself is read in `vault_benchmark::hcl`.

use std::cell::RefCell;
use std::rc::Rc;

use crate::error::Cause;
use serde_json::{Map, Value, json};

/// A key of a test block vblast refuses: where it is (`config.role.generate_lease`, or
/// `weight`), and the whole sentence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyRefusal {
    pub path: String,
    pub message: String,
}

/// Every refusal of one test block, gathered from all its nested blocks, so that a file's
/// refusals are all reported at once.
pub type Refusals = Rc<RefCell<Vec<KeyRefusal>>>;

/// A vault-benchmark test type an operation runs, and how its config block maps.
#[derive(Clone, Copy)]
pub struct VbType {
    /// The type as vault-benchmark names it: `test "kvv2_read" "NAME" { ... }`.
    pub name: &'static str,
    /// Takes the keys of the test's `config` block into `out.config` (which starts as the
    /// operation's defaults); what is left in `c` afterwards is refused.
    pub config: fn(c: &mut Keys, out: &mut Mapped) -> Result<(), Cause>,
}

/// An operation's vault-benchmark types, or the explicit word that it has none.
#[derive(Clone, Copy)]
pub enum VaultBenchmark {
    Types(&'static [VbType]),
    /// vault-benchmark has no test type sending this request.
    NoType,
}

impl VaultBenchmark {
    pub fn types(&self) -> &'static [VbType] {
        match self {
            VaultBenchmark::Types(t) => t,
            VaultBenchmark::NoType => &[],
        }
    }
}

/// What a mapping function produces: the config, the keys that only named something, and
/// notes on what vblast does differently.
#[derive(Debug, Default)]
pub struct Mapped {
    pub config: Map<String, Value>,
    pub named: Vec<String>,
    pub notes: Vec<String>,
}

/// A whole number in an HCL value (a number, or a string holding one).
pub fn as_u64(v: &Value) -> Option<u64> {
    match v {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// A config block that takes no keys (the operation has no settings).
pub fn no_settings(_: &mut Keys, _: &mut Mapped) -> Result<(), Cause> {
    Ok(())
}

/// The keys of one (nested) config block, each to be taken or refused.
pub struct Keys<'a> {
    pub test: &'a str,
    pub op: &'a str,
    /// "config" or "config.role": where these keys are, for messages.
    pub path: String,
    map: Map<String, Value>,
    /// Keys that only name things vblast names itself.
    named: Vec<String>,
    /// Shared by the blocks of one test.
    refused: Refusals,
}

impl<'a> Keys<'a> {
    pub fn new(test: &'a str, op: &'a str, path: &str, map: Map<String, Value>) -> Keys<'a> {
        Keys {
            test,
            op,
            path: path.into(),
            map,
            named: Vec::new(),
            refused: Refusals::default(),
        }
    }
    pub fn where_(&self, key: &str) -> String {
        format!("test '{}': {}.{key}", self.test, self.path)
    }
    /// `config.role.ttl` (or `weight` for the test's own keys).
    fn path_of(&self, key: &str) -> String {
        if self.path == "test" {
            key.to_string()
        } else {
            format!("{}.{key}", self.path)
        }
    }
    /// Refuses `key` (taken out of the block) with `message`; parsing goes on, so that
    /// every refusal of the file is reported together.
    pub fn refuse_with(&mut self, key: &str, message: String) {
        self.map.remove(key);
        let path = self.path_of(key);
        self.refused.borrow_mut().push(KeyRefusal { path, message });
    }
    /// Refuses `key`: vblast's operation cannot do what it asks, for the reason `why`.
    pub fn refuse(&mut self, key: &str, why: &str) {
        let message = format!(
            "{} is not supported by vblast's {}: {why}",
            self.where_(key),
            self.op
        );
        self.refuse_with(key, message);
    }
    /// Whether the block has `key` (still untaken).
    pub fn has(&self, key: &str) -> bool {
        self.map.contains_key(key)
    }
    /// The keys not taken yet.
    pub fn left(&self) -> impl Iterator<Item = &String> {
        self.map.keys()
    }
    /// Drops every key left (a block vault-benchmark itself does not read).
    pub fn forget(&mut self) {
        self.map.clear();
    }
    /// The list this test's refusals go to (all its blocks').
    pub fn sink(&self) -> Refusals {
        Rc::clone(&self.refused)
    }
    /// Every refusal of this test so far (all its blocks).
    pub fn refusals(&self) -> Vec<KeyRefusal> {
        self.refused.borrow().clone()
    }
    pub fn take(&mut self, key: &str) -> Option<Value> {
        self.map.remove(key)
    }
    pub fn string(&mut self, key: &str) -> Result<Option<String>, Cause> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(Value::Number(n)) => Ok(Some(n.to_string())),
            Some(v) => {
                let m = format!("{} must be a string, not {v}", self.where_(key));
                self.refuse_with(key, m);
                Ok(None)
            }
        }
    }
    pub fn number(&mut self, key: &str) -> Result<Option<u64>, Cause> {
        match self.take(key) {
            None => Ok(None),
            Some(v) => match as_u64(&v) {
                Some(n) => Ok(Some(n)),
                None => {
                    let m = format!("{} must be a whole number, not {v}", self.where_(key));
                    self.refuse_with(key, m);
                    Ok(None)
                }
            },
        }
    }
    pub fn boolean(&mut self, key: &str) -> Result<Option<bool>, Cause> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(b)),
            Some(v) => {
                let m = format!("{} must be true or false, not {v}", self.where_(key));
                self.refuse_with(key, m);
                Ok(None)
            }
        }
    }
    /// A key vblast accepts only with this value (what its operation always does).
    pub fn only(
        &mut self,
        key: &str,
        allowed: &[Value],
        what_vblast_does: &str,
    ) -> Result<(), Cause> {
        if let Some(v) = self.take(key) {
            let same = allowed.iter().any(|a| {
                a == &v
                    || a.as_str()
                        .is_some_and(|s| v.as_str().is_some_and(|t| s.eq_ignore_ascii_case(t)))
                    || as_u64(a).is_some_and(|x| as_u64(&v) == Some(x))
            });
            if !same {
                let m = format!(
                    "{} = {v} is not supported by vblast's {}: {what_vblast_does}",
                    self.where_(key),
                    self.op
                );
                self.refuse_with(key, m);
            }
        }
        Ok(())
    }
    /// Keys that only name what the test creates: accepted, not used.
    pub fn names(&mut self, keys: &[&str]) {
        for k in keys {
            if self.map.remove(*k).is_some() {
                self.named.push(if self.path == "test" {
                    k.to_string()
                } else {
                    format!("{}.{k}", self.path)
                });
            }
        }
    }
    /// A nested block, or an empty one.
    pub fn block(&mut self, key: &str) -> Result<Keys<'a>, Cause> {
        // The test block's own keys are written bare ("config", "weight").
        let path = if self.path == "test" {
            key.to_string()
        } else {
            format!("{}.{key}", self.path)
        };
        let map = match self.take(key) {
            None => Map::new(),
            Some(Value::Object(m)) => m,
            Some(v) => {
                let m = format!("{} must be a block, not {v}", self.where_(key));
                self.refuse_with(key, m);
                Map::new()
            }
        };
        let mut inner = Keys::new(self.test, self.op, &path, map);
        inner.refused = Rc::clone(&self.refused);
        Ok(inner)
    }
    /// Every key left is one vblast's operation cannot honour: each is refused (together
    /// with every other refusal of the file).
    pub fn finish(mut self, named: &mut Vec<String>) -> Result<(), Cause> {
        let left: Vec<String> = self.map.keys().cloned().collect();
        for key in left {
            let m = format!(
                "{} is not supported by vblast's {} (it has no such setting); remove it to run this test",
                self.where_(&key),
                self.op
            );
            self.refuse_with(&key, m);
        }
        named.extend(std::mem::take(&mut self.named));
        Ok(())
    }
}

/// Token settings of the login families (`token_ttl`, `token_type`).
pub fn token_settings(k: &mut Keys, cfg: &mut Map<String, Value>) -> Result<(), Cause> {
    if let Some(ttl) = k.string("token_ttl")? {
        cfg.insert("token_ttl".into(), json!(ttl));
    }
    if let Some(t) = k.string("token_type")? {
        // vault-benchmark's "default" is the mount's default: service tokens.
        let t = if t == "default" { "service".into() } else { t };
        cfg.insert("token_type".into(), json!(t));
    }
    Ok(())
}

/// vault-benchmark's PKI key (`key_type` "rsa"/"ec"/"ed25519", `key_bits`) as vblast's
/// `--key-type` (rsa-2048, ec-256, ed25519...). vault-benchmark's default is RSA 2048.
pub fn pki_key(k: &mut Keys) -> Result<Option<String>, Cause> {
    let kind = k.string("key_type")?;
    let bits = k.number("key_bits")?;
    Ok(match (kind.as_deref(), bits) {
        (None, None) => None,
        (Some("ed25519"), _) => Some("ed25519".into()),
        (Some("ec"), b) => Some(format!("ec-{}", b.filter(|&b| b != 0).unwrap_or(256))),
        (Some("rsa") | None, b) => Some(format!("rsa-{}", b.filter(|&b| b != 0).unwrap_or(2048))),
        (Some(other), _) => Some(other.to_string()),
    })
}

/// `cfg[block][key] = v` in a family config whose settings sit in blocks (jwt-login,
/// pki-sign, db-creds: the blocks of vault-benchmark's own tests).
pub fn set_in(cfg: &mut Map<String, Value>, block: &str, key: &str, v: Value) {
    let b = cfg
        .entry(block.to_string())
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(m) = b {
        m.insert(key.into(), v);
    }
}
