//! `vblast vault-benchmark run|review ...`: vault-benchmark's command lines taken as they
//! are, its Go-style flags (`-config=FILE`, `-config FILE`, `--config=FILE`; booleans as
//! `-cleanup` or `-cleanup=false`) translated into a vblast run or report, with its
//! precedence (flags over environment over file) and its report layouts.
//!
//! Parsed by hand: clap has no single-dash long flags (`-config` would be read as `-c`
//! `-o` `-n`...), and Go's flag package accepts forms clap does not (`-flag value` and
//! `--flag=value` alike, booleans only as `-flag` or `-flag=BOOL`).

use std::path::PathBuf;

use crate::cli::{Cli, Command};
use crate::commands::Given as GivenFlags;
use crate::commands::config_file::merge;
use crate::commands::{command_matches, parse_from};
use crate::error::{Ending, Error};
use crate::results::deliver::Format;
use crate::signals::Stop;
use crate::vbconfig::{ReportMode, load_cluster};

/// A flag vault-benchmark defines, and what vblast does with it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Takes a value.
    Value,
    /// A boolean (`-flag`, `-flag=true|false`).
    Bool,
}

const RUN_FLAGS: &[(&str, Kind)] = &[
    ("config", Kind::Value),
    ("vault_addr", Kind::Value),
    ("vault_token", Kind::Value),
    ("vault_namespace", Kind::Value),
    ("duration", Kind::Value),
    ("rps", Kind::Value),
    ("workers", Kind::Value),
    ("report_mode", Kind::Value),
    ("cleanup", Kind::Bool),
    ("random_mounts", Kind::Bool),
    ("ca_pem_file", Kind::Value),
    ("cluster_json", Kind::Value),
    ("annotate", Kind::Value),
    ("log_level", Kind::Value),
    ("debug", Kind::Bool),
    ("disable_http2", Kind::Bool),
    ("audit_path", Kind::Value),
    ("pprof_interval", Kind::Value),
    ("result_file", Kind::Value),
];

const REVIEW_FLAGS: &[(&str, Kind)] = &[
    ("result_file", Kind::Value),
    ("results_file", Kind::Value),
    ("report_mode", Kind::Value),
    ("log_level", Kind::Value),
];

const USAGE: &str = "Usage: vblast vault-benchmark run -config=FILE [-vault_addr=ADDR] [-vault_token=TOKEN] [-vault_namespace=NS]\n           [-duration=10s] [-rps=N] [-workers=N] [-report_mode=terse|verbose|json] [-cleanup[=BOOL]]\n           [-random_mounts[=BOOL]] [-ca_pem_file=FILE] [-cluster_json=FILE] [-annotate=K=V,...] [-log_level=LEVEL]\n           [-result_file=FILE (vblast's results file, for review)]\n       vblast vault-benchmark review -result_file=FILE [-report_mode=terse|verbose|json]\n\nFlags win over the environment (VAULT_ADDR, VAULT_TOKEN, VAULT_NAMESPACE, VAULT_CACERT), which wins over the file.";

/// Flags as given: name and value ("true" for a bare boolean).
type Given = Vec<(String, String)>;

/// Parses Go-style flags against `known`. Positional arguments are refused (Go's flag
/// package stops at the first; vault-benchmark takes none).
fn parse_flags(cmd: &str, args: &[String], known: &[(&str, Kind)]) -> Result<Given, String> {
    let mut out: Given = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        i += 1;
        let Some(body) = a.strip_prefix("--").or_else(|| a.strip_prefix('-')) else {
            return Err(format!(
                "vault-benchmark {cmd}: unexpected argument '{a}': every setting is a flag (-config=FILE)"
            ));
        };
        let (name, inline) = match body.split_once('=') {
            Some((n, v)) => (n, Some(v.to_string())),
            None => (body, None),
        };
        let Some(&(_, kind)) = known.iter().find(|(k, _)| *k == name) else {
            let names: Vec<String> = known.iter().map(|(k, _)| format!("-{k}")).collect();
            return Err(format!(
                "vault-benchmark {cmd}: flag provided but not defined: -{name} (the flags are {})",
                names.join(", ")
            ));
        };
        let value = match (kind, inline) {
            (_, Some(v)) => v,
            (Kind::Bool, None) => "true".into(),
            (Kind::Value, None) => {
                let Some(v) = args.get(i) else {
                    return Err(format!(
                        "vault-benchmark {cmd}: flag needs an argument: -{name}"
                    ));
                };
                i += 1;
                v.clone()
            }
        };
        if kind == Kind::Bool {
            parse_bool(&value).ok_or_else(|| {
                format!(
                    "vault-benchmark {cmd}: invalid boolean value '{value}' for -{name}: use -{name} or -{name}=true|false"
                )
            })?;
        }
        out.retain(|(n, _)| n != name);
        out.push((name.to_string(), value));
    }
    Ok(out)
}

/// Go's strconv.ParseBool.
fn parse_bool(v: &str) -> Option<bool> {
    match v {
        "1" | "t" | "T" | "true" | "TRUE" | "True" => Some(true),
        "0" | "f" | "F" | "false" | "FALSE" | "False" => Some(false),
        _ => None,
    }
}

fn get<'a>(g: &'a Given, name: &str) -> Option<&'a str> {
    g.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
}

fn report_format(cmd: &str, g: &Given) -> Result<Option<&'static str>, String> {
    match get(g, "report_mode") {
        None => Ok(None),
        Some(m) => match ReportMode::parse(m) {
            Some(ReportMode::Terse) => Ok(Some("vb-terse")),
            Some(ReportMode::Verbose) => Ok(Some("vb-verbose")),
            Some(ReportMode::Json) => Ok(Some("vb-json")),
            None => Err(format!(
                "vault-benchmark {cmd}: -report_mode={m} is not one of terse, verbose, json"
            )),
        },
    }
}

/// `-log_level`: vault-benchmark's levels are accepted; vblast has none.
fn check_log_level(cmd: &str, g: &Given) -> Result<(), String> {
    if let Some(l) = get(g, "log_level")
        && !["trace", "debug", "info", "warn", "error"].contains(&l.to_ascii_lowercase().as_str())
    {
        return Err(format!(
            "vault-benchmark {cmd}: -log_level={l} is not one of INFO, WARN, DEBUG, TRACE, ERROR"
        ));
    }
    Ok(())
}

/// The vblast command line a `vault-benchmark run` stands for.
fn run_argv(g: &Given) -> Result<(Vec<String>, Vec<String>), String> {
    let mut notes = Vec::new();
    let Some(config) = get(g, "config") else {
        return Err(
            "vault-benchmark run: -config=FILE is required (a vault-benchmark HCL file)".into(),
        );
    };
    check_log_level("run", g)?;
    for refused in ["audit_path", "pprof_interval"] {
        if get(g, refused).is_some() {
            return Err(format!(
                "vault-benchmark run: -{refused} is not supported: {}",
                if refused == "audit_path" {
                    "vblast does not enable an audit device; enable it yourself before the run"
                } else {
                    "vblast does not collect Vault's pprof profiles"
                }
            ));
        }
    }
    let mut argv: Vec<String> = vec![
        "vblast".into(),
        "run".into(),
        "--config".into(),
        config.into(),
    ];
    let mut push = |flag: &str, v: &str| {
        argv.push(flag.into());
        argv.push(v.into());
    };
    let (addr, mut token) = (
        get(g, "vault_addr").map(String::from),
        get(g, "vault_token").map(String::from),
    );
    if let Some(c) = get(g, "cluster_json") {
        let (_, t, _) = load_cluster(&PathBuf::from(c)).map_err(|e| e.to_string())?;
        token = token.or(t);
        if addr.is_none() {
            push("--cluster", c);
        }
    }
    if let Some(a) = &addr {
        push("--address", a);
    }
    if let Some(t) = &token {
        push("--token", t);
    }
    if let Some(ns) = get(g, "vault_namespace").filter(|ns| *ns != "root" && !ns.is_empty()) {
        push("--namespace", ns);
    }
    if let Some(d) = get(g, "duration") {
        push("--duration", d);
    }
    if let Some(r) = get(g, "rps") {
        let n: u64 = r
            .parse()
            .map_err(|_| format!("vault-benchmark run: -rps={r} is not a whole number"))?;
        if n > 0 {
            push("--rate", r);
        }
    }
    if let Some(w) = get(g, "workers") {
        let n: u64 = w
            .parse()
            .map_err(|_| format!("vault-benchmark run: -workers={w} is not a whole number"))?;
        if n == 0 {
            return Err("vault-benchmark run: -workers must be at least 1".into());
        }
        push("--concurrency", w);
    }
    if let Some(f) = report_format("run", g)? {
        push("--format", f);
    }
    if let Some(ca) = get(g, "ca_pem_file") {
        push("--ca-cert", ca);
    }
    if let Some(f) = get(g, "result_file") {
        push("--output", f);
    }
    if get(g, "cleanup").and_then(parse_bool) == Some(false) {
        argv.push("--keep".into());
        notes.push("-cleanup=false: what vblast creates is kept after the run".into());
    }
    if get(g, "random_mounts").and_then(parse_bool) == Some(false) {
        notes.push("-random_mounts=false: vblast always creates what it uses under fresh random names (vblast-xxxxxxxx)".into());
    }
    if get(g, "annotate").is_some() {
        notes.push("-annotate has no effect: vblast exports no Prometheus metrics".into());
    }
    Ok((argv, notes))
}

/// Runs `vblast vault-benchmark ARGS...`.
pub fn run(args: &[String], stop: &Stop) -> Ending {
    match dispatch(args, stop) {
        Ok(e) => e,
        Err(msg) => Ending::Failed(Error::input(msg)),
    }
}

fn dispatch(args: &[String], stop: &Stop) -> Result<Ending, String> {
    let (cmd, rest) = match args.split_first() {
        Some((c, rest)) => (c.as_str(), rest),
        None => {
            return Err(format!(
                "vault-benchmark: give a command, run or review\n{USAGE}"
            ));
        }
    };
    match cmd {
        "-h" | "-help" | "--help" | "help" => {
            println!("{USAGE}");
            Ok(Ending::Ok)
        }
        _ if rest
            .iter()
            .any(|a| ["-h", "-help", "--help"].contains(&a.as_str())) =>
        {
            println!("{USAGE}");
            Ok(Ending::Ok)
        }
        "run" => {
            let g = parse_flags("run", rest, RUN_FLAGS)?;
            let (argv, notes) = run_argv(&g)?;
            let (cli, matches) =
                parse_from(&argv).map_err(|e| format!("vault-benchmark run: {e}"))?;
            let Cli {
                command: Some(Command::Run(mut run)),
                ..
            } = cli
            else {
                return Err("vault-benchmark run: internal: not a run".into());
            };
            let given = GivenFlags::by(command_matches(&matches));
            // vault-benchmark's default layout is terse; the file's report_mode still
            // wins over this default (it is not a flag given).
            if !given.flag("format") {
                run.out.format = Format::VbTerse;
            }
            for n in notes {
                eprintln!("vblast: note: {n}");
            }
            if let Some(path) = run.config.clone() {
                let mut merged = merge(&run, given, &path)?;
                // -rps=0 is vault-benchmark's "as fast as possible": the closed model,
                // given as a flag, so the file's rps gives way to it.
                if get(&g, "rps") == Some("0") {
                    merged.load.rate = None;
                }
                *run = merged;
            }
            Ok(crate::commands::run::run(&run, given, stop))
        }
        "review" => {
            let g = parse_flags("review", rest, REVIEW_FLAGS)?;
            check_log_level("review", &g)?;
            let Some(file) = get(&g, "result_file").or_else(|| get(&g, "results_file")) else {
                return Err("vault-benchmark review: -result_file=FILE is required (a results file saved by vblast: -result_file=FILE in run, or --output)".into());
            };
            let format = report_format("review", &g)?.unwrap_or("vb-terse");
            let argv = ["vblast", "report", file, "--format", format];
            let (cli, _) = parse_from(argv).map_err(|e| format!("vault-benchmark review: {e}"))?;
            let Some(Command::Report(r)) = &cli.command else {
                return Err("vault-benchmark review: internal: not a report".into());
            };
            Ok(crate::commands::report::run(r))
        }
        other => Err(format!(
            "vault-benchmark: unknown command '{other}': the commands are run and review\n{USAGE}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn go_flag_forms_are_accepted() {
        let g = parse_flags(
            "run",
            &v(&[
                "-config=a.hcl",
                "-duration",
                "5s",
                "--workers=3",
                "--rps",
                "7",
                "-cleanup",
                "-random_mounts=false",
                "-report_mode=verbose",
            ]),
            RUN_FLAGS,
        )
        .unwrap();
        assert_eq!(get(&g, "config"), Some("a.hcl"));
        assert_eq!(get(&g, "duration"), Some("5s"));
        assert_eq!(get(&g, "workers"), Some("3"));
        assert_eq!(get(&g, "rps"), Some("7"));
        assert_eq!(get(&g, "cleanup"), Some("true"));
        assert_eq!(get(&g, "random_mounts"), Some("false"));
        let (argv, _) = run_argv(&g).unwrap();
        let line = argv.join(" ");
        assert!(line.contains("--config a.hcl"), "{line}");
        assert!(line.contains("--duration 5s"), "{line}");
        assert!(line.contains("--concurrency 3"), "{line}");
        assert!(line.contains("--rate 7"), "{line}");
        assert!(line.contains("--format vb-verbose"), "{line}");
        assert!(!line.contains("--keep"), "{line}");
    }

    #[test]
    fn bad_flags_are_one_clear_message() {
        let e = parse_flags("run", &v(&["-confg=a.hcl"]), RUN_FLAGS).unwrap_err();
        assert!(
            e.contains("flag provided but not defined: -confg") && e.contains("-config"),
            "{e}"
        );
        let e = parse_flags("run", &v(&["-config"]), RUN_FLAGS).unwrap_err();
        assert!(e.contains("flag needs an argument: -config"), "{e}");
        let e = parse_flags("run", &v(&["-cleanup=maybe"]), RUN_FLAGS).unwrap_err();
        assert!(e.contains("invalid boolean value 'maybe'"), "{e}");
        let e = parse_flags("run", &v(&["config.hcl"]), RUN_FLAGS).unwrap_err();
        assert!(e.contains("unexpected argument 'config.hcl'"), "{e}");
        let g = parse_flags("run", &v(&["-duration=1s"]), RUN_FLAGS).unwrap();
        assert!(
            run_argv(&g)
                .unwrap_err()
                .contains("-config=FILE is required")
        );
        let g = parse_flags("run", &v(&["-config=a", "-report_mode=loud"]), RUN_FLAGS).unwrap();
        assert!(run_argv(&g).unwrap_err().contains("-report_mode=loud"));
        let g = parse_flags("run", &v(&["-config=a", "-audit_path=/x"]), RUN_FLAGS).unwrap();
        assert!(
            run_argv(&g)
                .unwrap_err()
                .contains("-audit_path is not supported")
        );
        let g = parse_flags("run", &v(&["-config=a", "-rps=x"]), RUN_FLAGS).unwrap();
        assert!(run_argv(&g).unwrap_err().contains("-rps=x"));
        let e = parse_flags("review", &v(&["-config=a"]), REVIEW_FLAGS).unwrap_err();
        assert!(e.contains("not defined: -config"), "{e}");
    }

    #[test]
    fn cleanup_false_keeps_and_rps_zero_is_closed() {
        let g = parse_flags(
            "run",
            &v(&["-config=a", "-cleanup=false", "-rps=0"]),
            RUN_FLAGS,
        )
        .unwrap();
        let (argv, notes) = run_argv(&g).unwrap();
        assert!(argv.contains(&"--keep".to_string()));
        assert!(!argv.contains(&"--rate".to_string()));
        assert!(notes[0].contains("kept"));
    }
}
