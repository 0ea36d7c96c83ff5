//! vault-benchmark's HCL configuration files, read unchanged (`vblast --config FILE`,
//! `vblast vault-benchmark run -config=FILE`): the file parsed with a real HCL parser
//! (hcl-rs), its global keys checked and typed, its `test "TYPE" "NAME" {...}` blocks
//! turned into vblast operations (`mapping`). The commands decide what the file gives
//! way to (flags over environment over file).

pub mod mapping;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use hcl::eval::{Context, Evaluate};
use hcl::{Body, Structure};
use serde_json::{Map, Value};

use crate::config::scenario::OpChoice;
use crate::error::Cause;
use crate::results::deliver::OutputFormat;

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
    pub fn format(self) -> OutputFormat {
        match self {
            ReportMode::Terse => OutputFormat::VbTerse,
            ReportMode::Verbose => OutputFormat::VbVerbose,
            ReportMode::Json => OutputFormat::VbJson,
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
    /// `audit_path`: a file audit device writing there during the run (`--audit-path`).
    pub audit_path: Option<PathBuf>,
    /// `pprof_interval`: the first node's profiles every interval (`--pprof-interval`).
    pub pprof_interval: Option<Duration>,
    /// `disable_http2`: HTTP/1.1 against an https address, where vault-benchmark's Go
    /// client (and vblast after it) would speak HTTP/2.
    pub disable_http2: Option<bool>,
    /// The tests, as vblast operations labelled with the tests' names.
    pub tests: Vec<OpChoice>,
    /// vblast's extension: the `threshold` blocks' bounds (`threshold_block`).
    pub thresholds: Vec<crate::threshold::Threshold>,
    /// A `threshold` block's `abort = true` (and its `abort_grace`): `--threshold-abort`.
    pub threshold_abort: Option<Duration>,
    /// What vblast does differently from what the file asks, said once on stderr.
    pub notes: Vec<String>,
}

/// Global keys vault-benchmark documents that change nothing in vblast's run, and why.
const NO_EFFECT: &[(&str, &str)] = &[
    ("log_level", "vblast has no log levels"),
    ("debug", "vblast has no debug mode"),
    (
        "annotate",
        "vblast exports no Prometheus metrics to annotate",
    ),
];

/// Global keys vault-benchmark documents that vblast cannot honour.
const REFUSED: &[(&str, &str)] = &[(
    "input_results",
    "vblast re-renders saved runs with `vblast vault-benchmark review -result_file=FILE`",
)];

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
    "audit_path",
    "pprof_interval",
    "disable_http2",
];

/// Reads and checks the file at `path`.
pub fn load(path: &Path) -> Result<VbConfig, Cause> {
    let text = std::fs::read_to_string(path).map_err(|e| Cause::Io {
        what: format!("cannot read the config file {}", path.display()),
        source: e,
    })?;
    parse(&text, &path.display().to_string())
}

/// The most tests a file holds: each test's weight is 1 to 100 and the weights add up to
/// 100 (as vault-benchmark requires). A file with more is refused before its tests are
/// read, so that checking it costs no more than parsing it.
pub const MAX_TESTS: usize = 100;

/// The most problems of a file listed one by one (each located in the text); the rest are
/// counted, so that a file of many mistakes is checked in linear time.
const MAX_LISTED: usize = 20;

/// What goes wrong in a file, gathered so that every refusal is reported at once.
struct Problems<'t> {
    text: &'t str,
    file: &'t str,
    found: Vec<Cause>,
    /// Problems beyond `MAX_LISTED`, counted only.
    more: usize,
}

impl Problems<'_> {
    /// A problem at `path` (`config.role.ttl`) of the test `test` (a global key: None).
    fn at(&mut self, test: Option<&str>, path: &str, message: String) {
        if self.found.len() >= MAX_LISTED {
            self.more += 1;
            return;
        }
        let (line, column) = locate(self.text, test, path);
        self.found.push(Cause::Hcl {
            file: self.file.to_string(),
            line,
            column,
            message,
        });
    }
}

/// Parses the text of a config file; `file` names it in messages. Every refusal of the
/// file is in the error (`Cause::Several`), each with its line and column.
pub fn parse(text: &str, file: &str) -> Result<VbConfig, Cause> {
    let body: Body = hcl::parse(text).map_err(|e| parse_error(file, &e))?;
    let tests = body
        .iter()
        .filter(|s| matches!(s, Structure::Block(b) if b.identifier.as_str() == "test"))
        .count();
    if tests > MAX_TESTS {
        return Err(Cause::from(format!(
            "{file}: {tests} test blocks: a file holds at most {MAX_TESTS} tests (each test's weight is 1 to 100, and the weights add up to 100)"
        )));
    }
    let mut c = VbConfig::default();
    let mut p = Problems {
        text,
        file,
        found: Vec::new(),
        more: 0,
    };
    let mut seen: HashSet<String> = HashSet::new();
    let mut unknown: Vec<String> = Vec::new();
    let mut test_names: HashSet<String> = HashSet::new();
    let mut total_weight: u64 = 0;
    for s in body.iter() {
        match s {
            Structure::Attribute(a) => {
                let key = a.key.as_str();
                if !seen.insert(key.to_string()) {
                    p.at(None, key, format!("'{key}' is set twice"));
                    continue;
                }
                match eval(&a.expr, key).and_then(|v| global(&mut c, key, &v)) {
                    Ok(Global::Known) => {}
                    Ok(Global::Unknown) => unknown.push(key.to_string()),
                    Err(m) => p.at(None, key, m),
                }
            }
            Structure::Block(b) if b.identifier.as_str() == "threshold" => {
                threshold_block(b, &mut c, &mut p);
            }
            Structure::Block(b) => {
                if let Some(test) = test_block(b, &mut p, &mut test_names) {
                    total_weight += u64::from(test.choice.weight);
                    c.tests.push(test.choice);
                    c.notes.extend(test.notes);
                }
            }
        }
    }
    if !unknown.is_empty() {
        c.notes.push(format!(
            "ignored: unknown global key(s) {} (vault-benchmark ignores them too; the keys vblast reads are {})",
            listed(&unknown),
            GLOBAL_KEYS.join(", ")
        ));
    }
    if p.found.is_empty() && c.tests.is_empty() {
        return Err(Cause::from(format!(
            "{file}: no test block: add test \"TYPE\" \"NAME\" {{ weight = 100 }} (types: {})",
            mapping::supported_types()
        )));
    }
    if p.found.is_empty() && total_weight != 100 {
        return Err(Cause::from(format!(
            "{file}: the tests' weights add up to {total_weight}: they must add up to 100 (as vault-benchmark requires)"
        )));
    }
    if p.more > 0 {
        p.found.push(Cause::from(format!(
            "{file}: and {} more problem(s) like these",
            p.more
        )));
    }
    match p.found.len() {
        0 => Ok(c),
        1 => Err(p.found.remove(0)),
        _ => Err(Cause::Several(p.found)),
    }
}

/// vblast's extension, a `threshold` block: unlabelled for the total, or labelled with a
/// test's name; each attribute a metric and its bound (`p99 = "< 20ms"`,
/// `success = ">= 99.9%"`, `errors = "< 10"`), read as `--threshold` reads
/// `NAME:p99<20ms`; the unlabelled block may also say `abort = true` and
/// `abort_grace = "10s"` (`--threshold-abort`, `--threshold-grace`). Its problems go to `p`.
fn threshold_block(b: &hcl::Block, c: &mut VbConfig, p: &mut Problems) {
    let op = match b.labels.as_slice() {
        [] => None,
        [name] => Some(name.as_str().to_string()),
        more => {
            p.at(None, "threshold", format!(
                "a threshold block has {} labels: write threshold {{ p99 = \"< 20ms\" }} for the total, threshold \"NAME\" {{ ... }} for one test",
                more.len()
            ));
            return;
        }
    };
    let mut abort = false;
    let mut grace = Duration::ZERO;
    for s in b.body.iter() {
        let Structure::Attribute(a) = s else {
            p.at(
                None,
                "threshold",
                "a threshold block holds attributes only (p99 = \"< 20ms\")".into(),
            );
            continue;
        };
        let key = a.key.as_str();
        let value = eval(&a.expr, key);
        let said = match (key, value) {
            (_, Err(m)) => Err(m),
            ("abort", Ok(Value::Bool(v))) if op.is_none() => {
                abort = v;
                Ok(())
            }
            ("abort_grace", Ok(Value::String(v))) if op.is_none() => {
                crate::config::units::parse_duration(&v)
                    .map(|d| grace = d)
                    .map_err(|e| format!("threshold abort_grace: {e}"))
            }
            (_, Ok(Value::String(bound))) => {
                let text = match &op {
                    Some(o) => format!("{o}:{key}{bound}"),
                    None => format!("{key}{bound}"),
                };
                crate::threshold::Threshold::parse(&text)
                    .map(|t| c.thresholds.push(t))
                    .map_err(|e| e.to_string())
            }
            (_, Ok(_)) => Err(format!(
                "threshold {key}: give the bound as a string with its comparison, {key} = \"< 20ms\" (abort = true and abort_grace = \"10s\" in the block without a label)"
            )),
        };
        if let Err(m) = said {
            p.at(None, "threshold", m);
        }
    }
    if abort {
        c.threshold_abort = Some(grace);
    }
}

/// One `test "TYPE" "NAME" { ... }` block, translated; its problems go to `p`.
fn test_block(
    b: &hcl::Block,
    p: &mut Problems,
    test_names: &mut HashSet<String>,
) -> Option<mapping::Test> {
    let id = b.identifier.as_str();
    if id != "test" {
        p.at(None, id, format!(
            "unknown block '{id}': a vault-benchmark file holds global keys and `test \"TYPE\" \"NAME\" {{ ... }}` blocks"
        ));
        return None;
    }
    let [kind, name] = b.labels.as_slice() else {
        p.at(None, "test", format!(
            "a test block has {} label(s): write test \"TYPE\" \"NAME\" {{ weight = N  config {{ ... }} }}",
            b.labels.len()
        ));
        return None;
    };
    let (kind, name) = (kind.as_str(), name.as_str());
    if test_names.contains(name) {
        p.at(
            Some(name),
            "",
            format!("two tests are named '{name}': each test's name is its row in the report"),
        );
        return None;
    }
    if name.eq_ignore_ascii_case("total") {
        p.at(
            Some(name),
            "",
            format!("a test is named '{name}', the name of the report's total row: rename it"),
        );
        return None;
    }
    test_names.insert(name.to_string());
    let body = match block_object(&b.body, &format!("test '{name}'")) {
        Ok(body) => body,
        Err(m) => {
            p.at(Some(name), "", m);
            return None;
        }
    };
    match mapping::translate(kind, name, &body) {
        Ok(test) => Some(test),
        Err(refused) => {
            for r in refused {
                p.at(Some(name), &r.path, r.message);
            }
            None
        }
    }
}

/// "a, b, c" for the first `MAX_LISTED` of `keys`, then how many more.
fn listed(keys: &[String]) -> String {
    let shown = keys[..keys.len().min(MAX_LISTED)].join(", ");
    match keys.len().saturating_sub(MAX_LISTED) {
        0 => shown,
        more => format!("{shown} and {more} more"),
    }
}

/// A parse error with the file, line and column, and hcl-rs's excerpt.
fn parse_error(file: &str, e: &hcl::Error) -> Cause {
    match e {
        hcl::Error::Parse(p) => {
            let l = p.location();
            Cause::Hcl {
                file: file.to_string(),
                line: l.line(),
                column: l.column(),
                message: format!(
                    "malformed HCL (line {}, column {}):\n{p}",
                    l.line(),
                    l.column()
                ),
            }
        }
        other => Cause::from(format!("{file}: malformed HCL: {other}")),
    }
}

/// 1-based line and column of `path` (`config.role.ttl`; empty: the block itself) in the
/// test named `test`, or of a global key (`test` None). The parsed tree carries no
/// positions, so each part of the path is looked for after the line of the one before,
/// within the test's block.
fn locate(text: &str, test: Option<&str>, path: &str) -> (usize, usize) {
    let lines: Vec<&str> = text.lines().collect();
    let starts = |line: &str, word: &str| -> Option<usize> {
        let t = line.trim_start();
        let rest = t.strip_prefix(word)?;
        rest.trim_start()
            .starts_with(['=', '{', '"'])
            .then_some(line.len() - t.len())
            .or_else(|| rest.is_empty().then_some(line.len() - t.len()))
    };
    let (mut from, mut to, mut pos) = (0, lines.len(), (1, 1));
    if let Some(name) = test {
        let quoted = format!("\"{name}\"");
        if let Some(i) = lines
            .iter()
            .position(|l| starts(l, "test").is_some() && l.contains(&quoted))
        {
            pos = (i + 1, starts(lines[i], "test").unwrap_or(0) + 1);
            from = i;
            to = lines[i + 1..]
                .iter()
                .position(|l| starts(l, "test").is_some())
                .map_or(lines.len(), |j| i + 1 + j);
        }
    }
    for word in path.split('.').filter(|w| !w.is_empty()) {
        if let Some((j, col)) = (from..to).find_map(|j| starts(lines[j], word).map(|c| (j, c))) {
            pos = (j + 1, col + 1);
            from = j;
        }
    }
    pos
}

/// An attribute's value, evaluated (string templates and arithmetic work; variables and
/// functions do not exist in these files).
fn eval(expr: &hcl::Expression, key: &str) -> Result<Value, String> {
    let v = expr
        .evaluate(&Context::new())
        .map_err(|e| format!("the value of '{key}' cannot be evaluated: {e}"))?;
    serde_json::to_value(&v).map_err(|e| format!("the value of '{key}': {e}"))
}

/// A block's body as a JSON object: attributes as values, nested blocks (without labels)
/// as objects. A key given twice is an error.
pub(crate) fn block_object(body: &Body, what: &str) -> Result<Map<String, Value>, String> {
    let mut m = Map::new();
    for s in body.iter() {
        let (key, value) = match s {
            Structure::Attribute(a) => (a.key.as_str(), eval(&a.expr, a.key.as_str())?),
            Structure::Block(b) => {
                if !b.labels.is_empty() {
                    return Err(format!(
                        "{what}: block '{}' takes no label",
                        b.identifier.as_str()
                    ));
                }
                let inner = format!("{what}, block '{}'", b.identifier.as_str());
                (
                    b.identifier.as_str(),
                    Value::Object(block_object(&b.body, &inner)?),
                )
            }
        };
        if m.contains_key(key) {
            return Err(format!("{what}: '{key}' is given twice"));
        }
        m.insert(key.to_string(), value);
    }
    Ok(m)
}

fn want_str(v: &Value, key: &str) -> Result<String, String> {
    match v {
        Value::String(s) => Ok(s.clone()),
        other => Err(format!("'{key}' must be a string, not {other}")),
    }
}

fn want_bool(v: &Value, key: &str) -> Result<bool, String> {
    v.as_bool()
        .ok_or_else(|| format!("'{key}' must be true or false, not {v}"))
}

/// A whole number given as a number or a numeric string.
pub(crate) use crate::vault::ops::vb::as_u64;

fn want_u64(v: &Value, key: &str) -> Result<u64, String> {
    as_u64(v).ok_or_else(|| format!("'{key}' must be a whole number, not {v}"))
}

/// Whether a global key is one vblast reads (or knows to have no effect).
enum Global {
    Known,
    Unknown,
}

/// One global key into `c`; the error is the sentence for its place in the file.
fn global(c: &mut VbConfig, key: &str, v: &Value) -> Result<Global, String> {
    match key {
        "vault_addr" => c.vault_addr = Some(want_str(v, key)?),
        "vault_token" => c.vault_token = Some(want_str(v, key)?),
        "vault_namespace" => {
            let ns = want_str(v, key)?;
            // vault-benchmark's examples say "root" for the root namespace, which is no
            // namespace header at all.
            c.vault_namespace = (!ns.is_empty() && ns != "root").then_some(ns);
        }
        "duration" => {
            let d = want_str(v, key)?;
            let d = crate::config::units::parse_duration(&d)
                .map_err(|e| format!("duration '{d}': {e}"))?;
            if d.is_zero() {
                return Err("duration must be longer than zero".into());
            }
            c.duration = Some(d);
        }
        "rps" => c.rps = Some(want_u64(v, key)?).filter(|&r| r > 0),
        "workers" => {
            let w = want_u64(v, key)?;
            if w == 0 {
                return Err("workers must be at least 1".into());
            }
            c.workers = Some(w);
        }
        "report_mode" => {
            let m = want_str(v, key)?;
            c.report_mode =
                Some(ReportMode::parse(&m).ok_or_else(|| {
                    format!("report_mode '{m}' is not one of terse, verbose, json")
                })?);
        }
        "random_mounts" => {
            let r = want_bool(v, key)?;
            if !r {
                c.notes.push(
                    "random_mounts = false: vblast always creates what it uses under fresh random names (vblast-xxxxxxxx), so a run never touches or collides with existing mounts".into(),
                );
            }
            c.random_mounts = Some(r);
        }
        "cleanup" => c.cleanup = Some(want_bool(v, key)?),
        "ca_pem_file" => c.ca_pem_file = Some(want_str(v, key)?.into()),
        "cluster_json" => c.cluster_json = Some(want_str(v, key)?.into()),
        "audit_path" => {
            c.audit_path = Some(want_str(v, key)?)
                .filter(|p| !p.is_empty())
                .map(PathBuf::from)
        }
        "pprof_interval" => c.pprof_interval = pprof_interval(&want_str(v, key)?)?,
        "disable_http2" => c.disable_http2 = Some(want_bool(v, key)?),
        _ => {
            if let Some((_, why)) = NO_EFFECT.iter().find(|(k, _)| *k == key) {
                c.notes.push(format!("{key} has no effect: {why}"));
            } else if let Some((_, why)) = REFUSED.iter().find(|(k, _)| *k == key) {
                return Err(format!("'{key}' is not supported: {why}"));
            } else {
                return Ok(Global::Unknown);
            }
        }
    }
    Ok(Global::Known)
}

/// `pprof_interval` (the key or the flag): a Go duration; empty is none, as in
/// vault-benchmark. vblast's own bounds (2 s or more) are checked with `--pprof-interval`'s.
pub fn pprof_interval(text: &str) -> Result<Option<Duration>, String> {
    if text.is_empty() {
        return Ok(None);
    }
    let d = crate::config::units::parse_duration(text)
        .map_err(|e| format!("pprof_interval '{text}': {e}"))?;
    Ok(Some(d).filter(|d| !d.is_zero()))
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
pub fn load_cluster(path: &Path) -> Result<(String, Option<String>, Option<String>), Cause> {
    let text = std::fs::read_to_string(path).map_err(|e| Cause::Io {
        what: format!("cannot read the cluster file {}", path.display()),
        source: e,
    })?;
    let c: Cluster = serde_json::from_str(&text).map_err(|e| Cause::Json {
        what: format!(
            "{}: not a cluster file ({{\"token\": ..., \"vault_addrs\": [...]}})",
            path.display()
        ),
        source: e,
    })?;
    let Some(first) = c.vault_addrs.first() else {
        return Err(Cause::from(format!(
            "{}: vault_addrs is empty",
            path.display()
        )));
    };
    Ok((first.clone(), c.token, None))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str, file: &str) -> Result<VbConfig, String> {
        super::parse(text, file).map_err(|e| e.to_string())
    }

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
        assert_eq!(c.tests[0].name, "ha-status");
        assert_eq!(c.tests[0].label.as_deref(), Some("h"));

        // Unknown global keys are ignored, as vault-benchmark ignores them, with one note.
        let c = parse(
            "vault_adr = \"x\"\ntimeout = \"5s\"\ntest \"ha_status\" \"h\" { weight = 100 }",
            "f.hcl",
        )
        .unwrap();
        let notes: Vec<&String> = c
            .notes
            .iter()
            .filter(|n| n.contains("unknown global"))
            .collect();
        assert_eq!(notes.len(), 1, "{:?}", c.notes);
        assert!(notes[0].contains("vault_adr, timeout"), "{notes:?}");
        let e = parse("input_results = true\n", "f.hcl").unwrap_err();
        assert!(e.contains("'input_results' is not supported"), "{e}");
        // audit_path and pprof_interval are vblast's --audit-path and --pprof-interval.
        let c = parse(
            "audit_path = \"/tmp/a.log\"\npprof_interval = \"5s\"\ntest \"ha_status\" \"h\" { weight = 100 }",
            "f.hcl",
        )
        .unwrap();
        assert_eq!(c.audit_path, Some(PathBuf::from("/tmp/a.log")));
        assert_eq!(c.pprof_interval, Some(Duration::from_secs(5)));
        let e = parse("pprof_interval = \"often\"\n", "f.hcl").unwrap_err();
        assert!(e.contains("pprof_interval 'often'"), "{e}");
        let e = parse("duration = \"soon\"\n", "f.hcl").unwrap_err();
        assert!(e.contains("duration 'soon'"), "{e}");
        let e = parse("report_mode = \"loud\"\n", "f.hcl").unwrap_err();
        assert!(e.contains("not one of terse, verbose, json"), "{e}");
        let e = parse("rps = \"fast\"\n", "f.hcl").unwrap_err();
        assert!(e.contains("'rps' must be a whole number"), "{e}");
    }

    /// Every refusal of a file at once, each with its line and column.
    #[test]
    fn all_refusals_are_reported_with_their_places() {
        let text = "duration = 5\ntest \"transit_encrypt\" \"e\" {\n  weight = 50\n  config {\n    keys {\n      managed_key_name = \"m\"\n    }\n    encrypt {\n      batch_input = [1]\n    }\n  }\n}\ntest \"kvv2_read\" \"r\" {\n  weight = 50\n  config {\n    nonsense = 1\n  }\n}\n";
        let e = super::parse(text, "f.hcl").unwrap_err();
        let Cause::Several(all) = &e else {
            panic!("{e}")
        };
        let places: Vec<(usize, usize)> = all
            .iter()
            .map(|c| match c {
                Cause::Hcl { line, column, .. } => (*line, *column),
                other => panic!("{other}"),
            })
            .collect();
        assert_eq!(places, vec![(1, 1), (6, 7), (9, 7), (16, 5)], "{e}");
        let text = e.to_string();
        assert!(
            text.contains("f.hcl:6:7: test 'e': config.keys.managed_key_name"),
            "{text}"
        );
        assert!(
            text.contains("f.hcl:16:5: test 'r': config.nonsense"),
            "{text}"
        );
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

    /// A file of 20,000 test blocks is refused by its count of tests, before any test is
    /// read or located in the text (checking it costs one pass over the parsed file).
    #[test]
    fn a_file_of_more_tests_than_weights_allow_is_refused_by_its_count() {
        let block = |i: usize| format!("test \"kvv2_read\" \"t{i}\" {{\n  weight = 1\n}}\n");
        let text: String = (0..20_000).map(block).collect();
        let e = super::parse(&text, "f.hcl").unwrap_err();
        assert!(!matches!(e, Cause::Several(_)), "one message: {e}");
        let e = e.to_string();
        assert!(
            e.contains("20000 test blocks: a file holds at most 100 tests"),
            "{e}"
        );
        // 100 blocks are read; 101 are not.
        let hundred: String = (0..100).map(block).collect();
        assert!(super::parse(&hundred, "f.hcl").is_ok());
        let more: String = (0..101).map(block).collect();
        assert!(
            super::parse(&more, "f.hcl")
                .unwrap_err()
                .to_string()
                .contains("101 test blocks")
        );
    }

    /// A file of many mistakes lists the first MAX_LISTED, each located, and counts the
    /// rest: the problems located (a pass over the text each) are bounded.
    #[test]
    fn many_problems_are_listed_up_to_a_bound_and_counted() {
        let text: String = (0..100)
            .map(|i| format!("test \"kvv2_read\" \"t{i}\" {{\n  weight = 0\n}}\n"))
            .collect();
        let Cause::Several(found) = super::parse(&text, "f.hcl").unwrap_err() else {
            panic!("several problems");
        };
        assert_eq!(found.len(), MAX_LISTED + 1);
        let last = found.last().unwrap().to_string();
        assert!(last.contains("and 80 more problem(s)"), "{last}");
    }
}
