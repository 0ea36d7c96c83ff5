//! The options of the operations, typed: each registry entry lists its `OptionSpec`s (long
//! flag, value kind, default as typed, help line); a run's values are parsed once, by the
//! spec's kind, into an `OptionValues` map from which each family builds its config.

use crate::error::Cause;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The most of anything a run creates or counts (`--secrets`, `--users`, `numkvs`...):
/// ten million, beyond which setup alone would run for hours; a larger count is a typo.
pub const COUNT_MAX: u64 = 10_000_000;

/// The kind of an option's value: how it is parsed and how it is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OptionKind {
    /// A whole number of things (secrets, users), at least `min`, at most `COUNT_MAX`.
    Count { min: u64 },
    /// A whole number between `min` and `max` (an engine version).
    Number { min: u64, max: u64 },
    /// A size in bytes, at most `max` when given.
    Bytes { max: Option<usize> },
    /// A word or URL, checked by the family.
    Text,
    /// A file.
    Path,
    /// A flag without a value: on when given.
    Switch,
}

impl OptionKind {
    /// The kind's name in `--list-ops --format markdown`.
    pub fn name(self) -> &'static str {
        match self {
            OptionKind::Count { .. } => "count",
            OptionKind::Number { .. } => "number",
            OptionKind::Bytes { .. } => "bytes",
            OptionKind::Text => "text",
            OptionKind::Path => "path",
            OptionKind::Switch => "switch",
        }
    }
}

/// One option of an operation.
#[derive(Clone, Copy, Debug)]
pub struct OptionSpec {
    /// The long flag without its dashes: "secret-size".
    pub flag: &'static str,
    /// The value's placeholder in `--list-ops` ("N", "BYTES", "1|2"); empty for a switch.
    pub value_name: &'static str,
    pub kind: OptionKind,
    /// The default as the user would type it, if the flag has one.
    pub default: Option<&'static str>,
    /// What the option does, one line. The first entry of the registry that has the flag
    /// gives `vblast --help` its line.
    pub help: &'static str,
}

impl OptionSpec {
    /// The clap id of the flag ("secret_size").
    pub fn id(&self) -> String {
        self.flag.replace('-', "_")
    }

    /// `text` parsed by this option's kind (the default, or a value from elsewhere than
    /// clap), checked against the kind's bounds.
    pub fn parse(&self, text: &str) -> Result<OptionValue, Cause> {
        let number = || {
            text.trim()
                .parse::<u64>()
                .map_err(|_| format!("--{} {text} is not a whole number", self.flag))
        };
        let v = match self.kind {
            OptionKind::Count { .. } | OptionKind::Number { .. } => OptionValue::Number(number()?),
            OptionKind::Bytes { .. } => OptionValue::Number(number()?),
            OptionKind::Text => OptionValue::Text(text.to_string()),
            OptionKind::Path => OptionValue::Path(PathBuf::from(text)),
            OptionKind::Switch => OptionValue::Switch(matches!(text, "true" | "1" | "yes")),
        };
        self.check(&v)?;
        Ok(v)
    }

    /// A value of this option checked against the kind's bounds (one message each).
    pub fn check(&self, v: &OptionValue) -> Result<(), Cause> {
        let OptionValue::Number(n) = *v else {
            return Ok(());
        };
        match self.kind {
            OptionKind::Count { min } if n < min => Err(Cause::from(format!(
                "--{} must be at least {min}",
                self.flag
            ))),
            OptionKind::Count { .. } if n > COUNT_MAX => Err(Cause::from(format!(
                "--{} {n} is more than {COUNT_MAX}, the most a run creates",
                self.flag
            ))),
            OptionKind::Number { min, max } if n < min || n > max => Err(Cause::from(format!(
                "--{} {n} is not between {min} and {max}",
                self.flag
            ))),
            OptionKind::Bytes { max: Some(max) } if n > max as u64 => Err(Cause::from(format!(
                "--{} is larger than {}",
                self.flag,
                show_bytes(max)
            ))),
            _ => Ok(()),
        }
    }
}

impl OptionSpec {
    /// Whether a number this option takes has an upper bound (a switch, a text or a path
    /// takes no number).
    pub fn is_bounded(&self) -> bool {
        !matches!(self.kind, OptionKind::Bytes { max: None })
    }
}

/// A number of an operation's config that no flag of the same name bounds (a key of a
/// nested block, a key a vault-benchmark file names otherwise, one its test type fixes),
/// with its bound. The operation's family says why each bound is what it is.
#[derive(Clone, Copy, Debug)]
pub struct ConfigBound {
    /// Where the number is in the config, dotted: "version", "root_ca.key_bits".
    pub key: &'static str,
    /// Its name in a vault-benchmark file's `config` block ("context_len"), when not `key`;
    /// empty where it is `key` or no file sets it.
    pub file_key: &'static str,
    pub bound: Bound,
}

/// What a `ConfigBound` holds its number to.
#[derive(Clone, Copy, Debug)]
pub enum Bound {
    /// This flag's bounds (identity's `entity_count` as `--entities`).
    Flag(OptionSpec),
    /// From `min` to `max`, both included.
    Range { min: u64, max: u64 },
    /// One of the values listed for the word of key `by` in the same block (a CA's
    /// `key_bits` by its `key_type`); a word not listed is left to the server.
    OneOf {
        by: &'static str,
        values: &'static [(&'static str, &'static [u64])],
    },
}

impl ConfigBound {
    /// The number at `key` in `config` (when there is one) held to the bound: a refusal
    /// names the file's key, the value and the bound.
    pub fn check(&self, config: &Map<String, Value>) -> Result<(), Cause> {
        let (path, last) = self.key.rsplit_once('.').unwrap_or(("", self.key));
        let block = path
            .split('.')
            .filter(|p| !p.is_empty())
            .try_fold(config, |m, k| m.get(k)?.as_object());
        let Some(n) = block.and_then(|b| b.get(last)).and_then(Value::as_u64) else {
            return Ok(());
        };
        let why = match self.bound {
            Bound::Flag(spec) => match spec.check(&OptionValue::Number(n)) {
                Ok(()) => return Ok(()),
                Err(e) => format!("out of the bounds of --{}: {e}", spec.flag),
            },
            Bound::Range { min, max } if n < min || n > max => {
                format!("not between {min} and {max}")
            }
            Bound::Range { .. } => return Ok(()),
            Bound::OneOf { by, values } => {
                let word = block
                    .and_then(|b| b.get(by))
                    .and_then(Value::as_str)
                    .unwrap_or("");
                match values.iter().find(|(w, _)| *w == word) {
                    Some((_, ok)) if !ok.contains(&n) => {
                        let ok: Vec<String> = ok.iter().map(u64::to_string).collect();
                        format!("not one of {} (for {by} {word})", ok.join(", "))
                    }
                    _ => return Ok(()),
                }
            }
        };
        let name = if self.file_key.is_empty() {
            self.key
        } else {
            self.file_key
        };
        Err(Cause::from(format!("config.{name} = {n} is {why}")))
    }
}

/// "16 MiB" for a whole number of MiB, the bytes otherwise.
pub fn show_bytes(n: usize) -> String {
    if n >= 1 << 20 && n.is_multiple_of(1 << 20) {
        format!("{} MiB", n >> 20)
    } else {
        format!("{n} bytes")
    }
}

/// One typed option value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OptionValue {
    Number(u64),
    Text(String),
    Path(PathBuf),
    Switch(bool),
}

/// The operation options of a run, by flag: the values given (parsed once, by their
/// spec's kind); an option not given reads as its spec's default.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OptionValues {
    given: BTreeMap<&'static str, OptionValue>,
}

impl OptionValues {
    /// No option given: every option reads as its default.
    pub fn new() -> OptionValues {
        OptionValues::default()
    }

    /// Sets the value of `flag` (a flag of the registry); `check` checks it.
    pub fn set(&mut self, flag: &str, v: OptionValue) -> Result<(), Cause> {
        let spec = spec_of(flag).ok_or_else(|| format!("--{flag} is no operation option"))?;
        self.given.insert(spec.flag, v);
        Ok(())
    }

    /// Checks the values given against their kinds' bounds, in the registry's order: the
    /// first refused is the message.
    pub fn check(&self) -> Result<(), Cause> {
        for spec in all_options() {
            if let Some(v) = self.given.get(spec.flag) {
                spec.check(v)?;
            }
        }
        Ok(())
    }

    /// Whether `flag` was given (not its default).
    pub fn is_given(&self, flag: &str) -> bool {
        self.given.contains_key(flag)
    }

    /// The flags given, with their values.
    pub fn given(&self) -> impl Iterator<Item = (&'static str, &OptionValue)> {
        self.given.iter().map(|(k, v)| (*k, v))
    }

    /// The value of `flag`: given, or its default (None when it has none).
    pub fn get(&self, flag: &str) -> Option<OptionValue> {
        if let Some(v) = self.given.get(flag) {
            return Some(v.clone());
        }
        let spec = spec_of(flag);
        debug_assert!(spec.is_some(), "--{flag} is not in the registry");
        spec.and_then(|s| s.default)
            .and_then(|d| spec?.parse(d).ok())
    }

    pub fn number(&self, flag: &str) -> Option<u64> {
        match self.get(flag) {
            Some(OptionValue::Number(n)) => Some(n),
            _ => None,
        }
    }

    pub fn text(&self, flag: &str) -> Option<String> {
        match self.get(flag) {
            Some(OptionValue::Text(t)) => Some(t),
            _ => None,
        }
    }

    pub fn path(&self, flag: &str) -> Option<PathBuf> {
        match self.get(flag) {
            Some(OptionValue::Path(p)) => Some(p),
            _ => None,
        }
    }

    pub fn switch(&self, flag: &str) -> bool {
        matches!(self.get(flag), Some(OptionValue::Switch(true)))
    }
}

/// The spec of `flag` in the registry: the first entry's that has it.
pub fn spec_of(flag: &str) -> Option<&'static OptionSpec> {
    all_options().into_iter().find(|s| s.flag == flag)
}

/// Every option of the registry once, by flag, in the registry's order (the first entry
/// that has a flag gives its spec).
pub fn all_options() -> Vec<&'static OptionSpec> {
    let mut out: Vec<&'static OptionSpec> = Vec::new();
    for info in super::registry() {
        for spec in info.options {
            if !out.iter().any(|s| s.flag == spec.flag) {
                out.push(spec);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_bounds() {
        let v = OptionValues::new();
        assert_eq!(v.number("secrets"), Some(1000));
        assert_eq!(v.number("secret-size"), Some(100));
        assert_eq!(v.number("kv-version"), Some(2));
        assert_eq!(v.text("mount"), None);
        assert!(!v.switch("no-store"));
        let mut v = OptionValues::new();
        v.set("secrets", OptionValue::Number(0)).unwrap();
        assert_eq!(
            v.check().unwrap_err().to_string(),
            "--secrets must be at least 1"
        );
        let mut v = OptionValues::new();
        v.set("secret-size", OptionValue::Number(17 << 20)).unwrap();
        assert_eq!(
            v.check().unwrap_err().to_string(),
            "--secret-size is larger than 16 MiB"
        );
        v.set("secret-size", OptionValue::Number(5)).unwrap();
        v.set("secrets", OptionValue::Number(5)).unwrap();
        v.check().unwrap();
        assert_eq!(v.number("secrets"), Some(5));
        assert!(v.set("nonsense", OptionValue::Switch(true)).is_err());
    }
}
