//! vault-benchmark's HCL configuration files, read unchanged (`vblast --config FILE`,
//! `vblast vault-benchmark run -config=FILE`): the file parsed with a real HCL parser
//! (hcl-rs), its global keys checked and typed, its `test "TYPE" "NAME" {...}` blocks
//! turned into vblast operations (`mapping`). The commands decide what the file gives
//! way to (flags over environment over file).

pub mod mapping;

use std::path::{Path, PathBuf};
use std::time::Duration;

use hcl::eval::{Context, Evaluate};
use hcl::{Body, Structure};
use serde_json::{Map, Value};

use crate::config::scenario::OpChoice;
use crate::results::deliver::Format;

/// vault-benchmark's `report_mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReportMode {
    Terse,
    Verbose,
    Json,
}

impl ReportMode {
    pub fn parse(text: &str) -> Option<ReportMode> {
        match text {
            "terse" => Some(ReportMode::Terse),
            "verbose" => Some(ReportMode::Verbose),
            "json" => Some(ReportMode::Json),
            _ => None,
        }
    }
    /// The vblast report format that prints this mode's layout.
    pub fn format(self) -> Format {
        match self {
            ReportMode::Terse => Format::VbTerse,
            ReportMode::Verbose => Format::VbVerbose,
            ReportMode::Json => Format::VbJson,
        }
    }
}

/// A vault-benchmark configuration file, checked.
#[derive(Clone, Debug, Default)]
pub struct VbConfig {
    pub vault_addr: Option<String>,
    pub vault_token: Option<String>,
    pub vault_namespace: Option<String>,
    pub duration: Option<Duration>,
    /// Open-model rate; 0 (vault-benchmark: "as fast as possible") is None.
    pub rps: Option<u64>,
    pub workers: Option<u64>,
    pub report_mode: Option<ReportMode>,
    pub random_mounts: Option<bool>,
    pub cleanup: Option<bool>,
    pub ca_pem_file: Option<PathBuf>,
    pub cluster_json: Option<PathBuf>,
    /// The tests, as vblast operations labelled with the tests' names.
    pub tests: Vec<OpChoice>,
    /// What vblast does differently from what the file asks, said once on stderr.
    pub notes: Vec<String>,
}

/// Global keys vault-benchmark documents that change nothing in vblast's run, and why.
const NO_EFFECT: &[(&str, &str)] = &[
    ("log_level", "vblast has no log levels"),
    ("debug", "vblast has no debug mode"),
    (
        "disable_http2",
        "vblast always speaks HTTP/1.1, one request at a time per connection",
    ),
    (
        "annotate",
        "vblast exports no Prometheus metrics to annotate",
    ),
];

/// Global keys vault-benchmark documents that vblast cannot honour.
const REFUSED: &[(&str, &str)] = &[
    (
        "audit_path",
        "vblast does not enable an audit device: enable it yourself before the run",
    ),
    (
        "pprof_interval",
        "vblast does not collect Vault's pprof profiles",
    ),
    (
        "input_results",
        "vblast re-renders saved runs with `vblast vault-benchmark review -result_file=FILE`",
    ),
];

const GLOBAL_KEYS: &[&str] = &[
    "vault_addr",
    "vault_token",
    "vault_namespace",
    "duration",
    "rps",
    "workers",
    "report_mode",
    "random_mounts",
    "cleanup",
    "ca_pem_file",
    "cluster_json",
];

/// Reads and checks the file at `path`.
pub fn load(path: &Path) -> Result<VbConfig, String> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        format!(
            "cannot read the config file {}: {}",
            path.display(),
            crate::error::io_text(&e)
        )
    })?;
    parse(&text, &path.display().to_string())
}

/// Parses the text of a config file; `file` names it in messages.
pub fn parse(text: &str, file: &str) -> Result<VbConfig, String> {
    let body: Body = hcl::parse(text).map_err(|e| parse_error(file, &e))?;
    let mut c = VbConfig::default();
    let mut seen: Vec<String> = Vec::new();
    let mut test_names: Vec<String> = Vec::new();
    let mut total_weight: u64 = 0;
    for s in body.iter() {
        match s {
            Structure::Attribute(a) => {
                let key = a.key.as_str();
                if seen.iter().any(|k| k == key) {
                    return Err(format!("{file}: '{key}' is set twice{}", at(text, key)));
                }
                seen.push(key.to_string());
                let v = eval(&a.expr, file, key)?;
                global(&mut c, key, &v, file, text)?;
            }
            Structure::Block(b) => {
                let id = b.identifier.as_str();
                if id != "test" {
                    return Err(format!(
                        "{file}: unknown block '{id}'{}: a vault-benchmark file holds global keys and `test \"TYPE\" \"NAME\" {{ ... }}` blocks",
                        at(text, id)
                    ));
                }
                let [kind, name] = b.labels.as_slice() else {
                    return Err(format!(
                        "{file}: a test block has {} label(s){}: write test \"TYPE\" \"NAME\" {{ weight = N  config {{ ... }} }}",
                        b.labels.len(),
                        at(text, "test")
                    ));
                };
                let (kind, name) = (kind.as_str(), name.as_str());
                if test_names.iter().any(|n| n == name) {
                    return Err(format!(
                        "{file}: two tests are named '{name}': each test's name is its row in the report"
                    ));
                }
                if name.eq_ignore_ascii_case("total") {
                    return Err(format!(
                        "{file}: a test is named '{name}', the name of the report's total row: rename it"
                    ));
                }
                test_names.push(name.to_string());
                let body = block_object(&b.body, file, &format!("test '{name}'"))?;
                let test = mapping::translate(kind, name, &body)
                    .map_err(|e| format!("{file}: {e}{}", at(text, name)))?;
                total_weight += u64::from(test.choice.weight);
                c.tests.push(test.choice);
                c.notes.extend(test.notes);
            }
        }
    }
    if c.tests.is_empty() {
        return Err(format!(
            "{file}: no test block: add test \"TYPE\" \"NAME\" {{ weight = 100 }} (types: {})",
            mapping::supported_types()
        ));
    }
    if total_weight != 100 {
        return Err(format!(
            "{file}: the tests' weights add up to {total_weight}: they must add up to 100 (as vault-benchmark requires)"
        ));
    }
    Ok(c)
}

/// A parse error with the file, line and column (hcl-rs's message has them; they are
/// repeated in front so that the first line says where).
fn parse_error(file: &str, e: &hcl::Error) -> String {
    match e {
        hcl::Error::Parse(p) => {
            let l = p.location();
            format!(
                "{file}:{}:{}: malformed HCL (line {}, column {}):\n{p}",
                l.line(),
                l.column(),
                l.line(),
                l.column()
            )
        }
        other => format!("{file}: malformed HCL: {other}"),
    }
}

/// " (line N)" of the first line where `word` starts a key or label, for messages about
/// well-formed HCL (the parsed tree carries no positions).
fn at(text: &str, word: &str) -> String {
    for (i, line) in text.lines().enumerate() {
        let t = line.trim_start();
        let quoted = format!("\"{word}\"");
        if t.starts_with(word)
            && t[word.len()..]
                .trim_start()
                .starts_with(['=', '{', ' ', '"'])
            || t.contains(&quoted)
        {
            return format!(" (line {})", i + 1);
        }
    }
    String::new()
}

/// An attribute's value, evaluated (string templates and arithmetic work; variables and
/// functions do not exist in these files).
fn eval(expr: &hcl::Expression, file: &str, key: &str) -> Result<Value, String> {
    let v = expr
        .evaluate(&Context::new())
        .map_err(|e| format!("{file}: the value of '{key}' cannot be evaluated: {e}"))?;
    serde_json::to_value(&v).map_err(|e| format!("{file}: the value of '{key}': {e}"))
}

/// A block's body as a JSON object: attributes as values, nested blocks (without labels)
/// as objects. A key given twice is an error.
pub(crate) fn block_object(
    body: &Body,
    file: &str,
    what: &str,
) -> Result<Map<String, Value>, String> {
    let mut m = Map::new();
    for s in body.iter() {
        let (key, value) = match s {
            Structure::Attribute(a) => (a.key.as_str(), eval(&a.expr, file, a.key.as_str())?),
            Structure::Block(b) => {
                if !b.labels.is_empty() {
                    return Err(format!(
                        "{file}: {what}: block '{}' takes no label",
                        b.identifier.as_str()
                    ));
                }
                let inner = format!("{what}, block '{}'", b.identifier.as_str());
                (
                    b.identifier.as_str(),
                    Value::Object(block_object(&b.body, file, &inner)?),
                )
            }
        };
        if m.contains_key(key) {
            return Err(format!("{file}: {what}: '{key}' is given twice"));
        }
        m.insert(key.to_string(), value);
    }
    Ok(m)
}

fn want_str(v: &Value, key: &str, file: &str) -> Result<String, String> {
    match v {
        Value::String(s) => Ok(s.clone()),
        other => Err(format!("{file}: '{key}' must be a string, not {other}")),
    }
}

fn want_bool(v: &Value, key: &str, file: &str) -> Result<bool, String> {
    v.as_bool()
        .ok_or_else(|| format!("{file}: '{key}' must be true or false, not {v}"))
}

/// A whole number given as a number or a numeric string.
pub(crate) use crate::vault::ops::vb::as_u64;

fn want_u64(v: &Value, key: &str, file: &str) -> Result<u64, String> {
    as_u64(v).ok_or_else(|| format!("{file}: '{key}' must be a whole number, not {v}"))
}

fn global(c: &mut VbConfig, key: &str, v: &Value, file: &str, text: &str) -> Result<(), String> {
    match key {
        "vault_addr" => c.vault_addr = Some(want_str(v, key, file)?),
        "vault_token" => c.vault_token = Some(want_str(v, key, file)?),
        "vault_namespace" => {
            let ns = want_str(v, key, file)?;
            // vault-benchmark's examples say "root" for the root namespace, which is no
            // namespace header at all.
            c.vault_namespace = (!ns.is_empty() && ns != "root").then_some(ns);
        }
        "duration" => {
            let d = want_str(v, key, file)?;
            let d = crate::config::units::parse_duration(&d)
                .map_err(|e| format!("{file}: duration '{d}': {e}"))?;
            if d.is_zero() {
                return Err(format!("{file}: duration must be longer than zero"));
            }
            c.duration = Some(d);
        }
        "rps" => c.rps = Some(want_u64(v, key, file)?).filter(|&r| r > 0),
        "workers" => {
            let w = want_u64(v, key, file)?;
            if w == 0 {
                return Err(format!("{file}: workers must be at least 1"));
            }
            c.workers = Some(w);
        }
        "report_mode" => {
            let m = want_str(v, key, file)?;
            c.report_mode = Some(ReportMode::parse(&m).ok_or_else(|| {
                format!("{file}: report_mode '{m}' is not one of terse, verbose, json")
            })?);
        }
        "random_mounts" => {
            let r = want_bool(v, key, file)?;
            if !r {
                c.notes.push(
                    "random_mounts = false: vblast always creates what it uses under fresh random names (vblast-xxxxxxxx), so a run never touches or collides with existing mounts".into(),
                );
            }
            c.random_mounts = Some(r);
        }
        "cleanup" => c.cleanup = Some(want_bool(v, key, file)?),
        "ca_pem_file" => c.ca_pem_file = Some(want_str(v, key, file)?.into()),
        "cluster_json" => c.cluster_json = Some(want_str(v, key, file)?.into()),
        _ => {
            if let Some((_, why)) = NO_EFFECT.iter().find(|(k, _)| *k == key) {
                c.notes.push(format!("{key} has no effect: {why}"));
            } else if let Some((_, why)) = REFUSED.iter().find(|(k, _)| *k == key) {
                return Err(format!(
                    "{file}: '{key}' is not supported{}: {why}",
                    at(text, key)
                ));
            } else {
                return Err(format!(
                    "{file}: unknown global key '{key}'{}: the keys are {}, {}",
                    at(text, key),
                    GLOBAL_KEYS.join(", "),
                    NO_EFFECT
                        .iter()
                        .map(|(k, _)| *k)
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
        }
    }
    Ok(())
}

/// vault-benchmark's `-cluster_json` file: the token and the nodes' addresses.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cluster {
    pub token: Option<String>,
    pub vault_addrs: Vec<String>,
}

/// Reads a cluster file: its first address and its token (the nodes themselves are read by
/// `--cluster`, src/config/cluster.rs).
pub fn load_cluster(path: &Path) -> Result<(String, Option<String>, Option<String>), String> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        format!(
            "cannot read the cluster file {}: {}",
            path.display(),
            crate::error::io_text(&e)
        )
    })?;
    let c: Cluster = serde_json::from_str(&text).map_err(|e| {
        format!(
            "{}: not a cluster file ({{\"token\": ..., \"vault_addrs\": [...]}}): {e}",
            path.display()
        )
    })?;
    let Some(first) = c.vault_addrs.first() else {
        return Err(format!("{}: vault_addrs is empty", path.display()));
    };
    Ok((first.clone(), c.token, None))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globals_are_typed_and_unknown_keys_refused() {
        let c = parse(
            "vault_addr = \"http://127.0.0.1:8200\"\nvault_token = \"root\"\nduration = \"2s\"\nrps = 50\nworkers = 4\nreport_mode = \"verbose\"\ncleanup = true\ntest \"ha_status\" \"h\" { weight = 100 }\n",
            "f.hcl",
        )
        .unwrap();
        assert_eq!(c.vault_addr.as_deref(), Some("http://127.0.0.1:8200"));
        assert_eq!(c.duration, Some(Duration::from_secs(2)));
        assert_eq!(c.rps, Some(50));
        assert_eq!(c.workers, Some(4));
        assert_eq!(c.report_mode, Some(ReportMode::Verbose));
        assert_eq!(c.tests[0].name, "sys-health");
        assert_eq!(c.tests[0].label.as_deref(), Some("h"));

        let e = parse(
            "vault_adr = \"x\"\ntest \"ha_status\" \"h\" { weight = 100 }",
            "f.hcl",
        )
        .unwrap_err();
        assert!(
            e.contains("unknown global key 'vault_adr'") && e.contains("(line 1)"),
            "{e}"
        );
        let e = parse("audit_path = \"/tmp/a\"\n", "f.hcl").unwrap_err();
        assert!(e.contains("'audit_path' is not supported"), "{e}");
        let e = parse("duration = \"soon\"\n", "f.hcl").unwrap_err();
        assert!(e.contains("duration 'soon'"), "{e}");
        let e = parse("report_mode = \"loud\"\n", "f.hcl").unwrap_err();
        assert!(e.contains("not one of terse, verbose, json"), "{e}");
        let e = parse("rps = \"fast\"\n", "f.hcl").unwrap_err();
        assert!(e.contains("'rps' must be a whole number"), "{e}");
    }

    #[test]
    fn malformed_hcl_names_file_line_and_column() {
        let e = parse(
            "duration = \"2s\"\ntest \"kvv2_read\" \"r\" {\n  weight = = 100\n}\n",
            "bad.hcl",
        )
        .unwrap_err();
        assert!(e.starts_with("bad.hcl:3:"), "{e}");
        assert!(e.contains("line 3, column"), "{e}");
    }

    #[test]
    fn tests_are_checked_as_a_whole() {
        let e = parse(
            "test \"ha_status\" \"a\" { weight = 50 }\ntest \"seal_status\" \"b\" { weight = 40 }",
            "f.hcl",
        )
        .unwrap_err();
        assert!(e.contains("add up to 90"), "{e}");
        let e = parse(
            "test \"ha_status\" \"a\" { weight = 50 }\ntest \"seal_status\" \"a\" { weight = 50 }",
            "f.hcl",
        )
        .unwrap_err();
        assert!(e.contains("two tests are named 'a'"), "{e}");
        let e = parse("test \"ha_status\" { weight = 100 }", "f.hcl").unwrap_err();
        assert!(e.contains("1 label(s)"), "{e}");
        let e = parse("vault_addr = \"x\"\n", "f.hcl").unwrap_err();
        assert!(e.contains("no test block"), "{e}");
        let e = parse("test \"ha_status\" \"total\" { weight = 100 }", "f.hcl").unwrap_err();
        assert!(e.contains("total row"), "{e}");
    }

    #[test]
    fn root_namespace_is_no_namespace() {
        let c = parse(
            "vault_namespace = \"root\"\ntest \"metrics\" \"m\" { weight = 100 }",
            "f.hcl",
        )
        .unwrap();
        assert_eq!(c.vault_namespace, None);
        let c = parse(
            "vault_namespace = \"team\"\ntest \"metrics\" \"m\" { weight = 100 }",
            "f.hcl",
        )
        .unwrap();
        assert_eq!(c.vault_namespace.as_deref(), Some("team"));
    }
}
