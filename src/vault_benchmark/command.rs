//! `vblast vault-benchmark run|review ...`: vault-benchmark's command lines taken as they
//! are, its Go-style flags (`-config=FILE`, `-config FILE`, `--config=FILE`; booleans as
//! `-cleanup` or `-cleanup=false`) turned into a vblast run or report, with its
//! precedence (flags over environment over file: `settle::settle`) and its report
//! layouts. `run` builds its `Scenario` and output directly from the flags and the file,
//! and takes vblast's own login as Go-style flags (`-auth_method=approle` ...: `run_login`).
//!
//! Parsed by hand: clap has no single-dash long flags (`-config` would be read as `-c`
//! `-o` `-n`...), and Go's flag package accepts forms clap does not (`-flag value` and
//! `--flag=value` alike, booleans only as `-flag` or `-flag=BOOL`).

use std::path::PathBuf;

use clap::ValueEnum;

use super::hcl::{ReportMode, load_cluster};
use super::report::vegeta::VbReport;
use super::report::{terse, verbose};
use super::settle::{self, Asked};

use crate::cli::Command;
use crate::cli::login::{AuthMethod, LoginArgs};
use crate::cli::server::ServerArgs;
use crate::commands::parse_from;
use crate::commands::run::{RunOptions, Show};
use crate::commands::scenario::{Beside, Planned, state_dir, target};
use crate::config::fixtures::FixturePlan;
use crate::config::scenario::{
    DEFAULT_CONNECTIONS, DEFAULT_DURATION, Load, Scenario, StepPlan, Workload,
};
use crate::config::schedule::Schedule;
use crate::config::units::parse_duration;
use crate::error::{Cause, Ending, Error};
use crate::results::deliver::{Output, OutputFormat};
use crate::signals::Stop;
use crate::vault::login::AdminLogin;

/// A flag vault-benchmark defines, and what vblast does with it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum GoFlagKind {
    /// Takes a value.
    Value,
    /// A boolean (`-flag`, `-flag=true|false`).
    Bool,
}

const RUN_FLAGS: &[(&str, GoFlagKind)] = &[
    ("config", GoFlagKind::Value),
    ("vault_addr", GoFlagKind::Value),
    ("vault_token", GoFlagKind::Value),
    ("vault_namespace", GoFlagKind::Value),
    ("duration", GoFlagKind::Value),
    ("rps", GoFlagKind::Value),
    ("workers", GoFlagKind::Value),
    ("report_mode", GoFlagKind::Value),
    ("cleanup", GoFlagKind::Bool),
    ("random_mounts", GoFlagKind::Bool),
    ("ca_pem_file", GoFlagKind::Value),
    ("cluster_json", GoFlagKind::Value),
    ("annotate", GoFlagKind::Value),
    ("log_level", GoFlagKind::Value),
    ("debug", GoFlagKind::Bool),
    ("disable_http2", GoFlagKind::Bool),
    ("audit_path", GoFlagKind::Value),
    ("pprof_interval", GoFlagKind::Value),
    ("result_file", GoFlagKind::Value),
    // vblast's own login (`--auth-method` and its flags, docs/login.md).
    ("auth_method", GoFlagKind::Value),
    ("auth_mount", GoFlagKind::Value),
    ("auth_role", GoFlagKind::Value),
    ("auth_role_id_file", GoFlagKind::Value),
    ("auth_secret_id_file", GoFlagKind::Value),
    ("auth_jwt_file", GoFlagKind::Value),
    ("auth_username", GoFlagKind::Value),
    ("auth_password_file", GoFlagKind::Value),
];

const REVIEW_FLAGS: &[(&str, GoFlagKind)] = &[
    ("result_file", GoFlagKind::Value),
    ("results_file", GoFlagKind::Value),
    ("report_mode", GoFlagKind::Value),
    ("log_level", GoFlagKind::Value),
];

const USAGE: &str = "Usage: vblast vault-benchmark run -config=FILE [-vault_addr=ADDR] [-vault_token=TOKEN] [-vault_namespace=NS]\n           [-duration=10s] [-rps=N] [-workers=N] [-report_mode=terse|verbose|json] [-cleanup[=BOOL]]\n           [-random_mounts[=BOOL]] [-ca_pem_file=FILE] [-cluster_json=FILE] [-annotate=K=V,...] [-log_level=LEVEL]\n           [-disable_http2[=BOOL]] [-result_file=FILE (vblast's results file, for review)]\n           [-auth_method=approle|jwt|kubernetes|cert|userpass [-auth_mount=PATH] [-auth_role=NAME] [-auth_role_id_file=FILE]\n            [-auth_secret_id_file=FILE] [-auth_jwt_file=PATH] [-auth_username=NAME] [-auth_password_file=FILE]] (vblast's login)\n       vblast vault-benchmark review -result_file=FILE [-report_mode=terse|verbose|json]\n\nFlags win over the environment (VAULT_ADDR, VAULT_TOKEN, VAULT_NAMESPACE, VAULT_CACERT), which wins over the file.";

/// Flags as given: name and value ("true" for a bare boolean).
type GoFlags = Vec<(String, String)>;

/// Parses Go-style flags against `known`. Positional arguments are refused (Go's flag
/// package stops at the first; vault-benchmark takes none).
fn parse_flags(cmd: &str, args: &[String], known: &[(&str, GoFlagKind)]) -> Result<GoFlags, Cause> {
    let mut out: GoFlags = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        i += 1;
        let Some(body) = a.strip_prefix("--").or_else(|| a.strip_prefix('-')) else {
            return Err(format!(
                "vault-benchmark {cmd}: unexpected argument '{a}': every setting is a flag (-config=FILE)"
            ).into());
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
            )
            .into());
        };
        let value = match (kind, inline) {
            (_, Some(v)) => v,
            (GoFlagKind::Bool, None) => "true".into(),
            (GoFlagKind::Value, None) => {
                let Some(v) = args.get(i) else {
                    return Err(
                        format!("vault-benchmark {cmd}: flag needs an argument: -{name}").into(),
                    );
                };
                i += 1;
                v.clone()
            }
        };
        if kind == GoFlagKind::Bool {
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

fn get<'a>(g: &'a GoFlags, name: &str) -> Option<&'a str> {
    g.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
}

/// `-report_mode`, checked.
fn report_mode(cmd: &str, g: &GoFlags) -> Result<Option<ReportMode>, Cause> {
    match get(g, "report_mode") {
        None => Ok(None),
        Some(m) => match ReportMode::parse(m) {
            Some(mode) => Ok(Some(mode)),
            None => Err(format!(
                "vault-benchmark {cmd}: -report_mode={m} is not one of terse, verbose, json"
            )
            .into()),
        },
    }
}

/// `-report_mode` as the `--format` name it stands for.
fn report_format(cmd: &str, g: &GoFlags) -> Result<Option<&'static str>, Cause> {
    Ok(report_mode(cmd, g)?.map(|mode| match mode {
        ReportMode::Terse => "vb-terse",
        ReportMode::Verbose => "vb-verbose",
        ReportMode::Json => "vb-json",
    }))
}

/// `-log_level`: vault-benchmark's levels are accepted; vblast has none.
fn check_log_level(cmd: &str, g: &GoFlags) -> Result<(), Cause> {
    if let Some(l) = get(g, "log_level")
        && !["trace", "debug", "info", "warn", "error"].contains(&l.to_ascii_lowercase().as_str())
    {
        return Err(format!(
            "vault-benchmark {cmd}: -log_level={l} is not one of INFO, WARN, DEBUG, TRACE, ERROR"
        )
        .into());
    }
    Ok(())
}

/// What a `vault-benchmark run`'s flags ask, checked, and the notes they call for: the
/// file, and the settings it may also give (`settle::settle` decides which wins).
fn run_asked(g: &GoFlags) -> Result<(PathBuf, Asked, Vec<String>), Cause> {
    let mut notes = Vec::new();
    let Some(config) = get(g, "config") else {
        return Err(
            "vault-benchmark run: -config=FILE is required (a vault-benchmark HCL file)".into(),
        );
    };
    check_log_level("run", g)?;
    let mut asked = Asked {
        addresses: get(g, "vault_addr").map(String::from).into_iter().collect(),
        token: get(g, "vault_token").map(String::from),
        // vblast's --audit-path and --pprof-interval (docs/server-stats.md).
        audit_path: get(g, "audit_path")
            .filter(|p| !p.is_empty())
            .map(PathBuf::from),
        pprof_interval: match get(g, "pprof_interval") {
            Some(p) => {
                super::hcl::pprof_interval(p).map_err(|e| format!("vault-benchmark run: -{e}"))?
            }
            None => None,
        },
        ..Asked::default()
    };
    if let Some(c) = get(g, "cluster_json") {
        let (_, t, _) = load_cluster(&PathBuf::from(c))?;
        asked.token = asked.token.or(t);
        if asked.addresses.is_empty() {
            asked.cluster = Some(c.into());
        }
    }
    asked.namespace = get(g, "vault_namespace")
        .filter(|ns| *ns != "root" && !ns.is_empty())
        .map(String::from);
    if let Some(d) = get(g, "duration") {
        asked.duration = Some(
            parse_duration(d).map_err(|e| format!("vault-benchmark run: -duration={d}: {e}"))?,
        );
    }
    if let Some(r) = get(g, "rps") {
        let n: u64 = r
            .parse()
            .map_err(|_| format!("vault-benchmark run: -rps={r} is not a whole number"))?;
        // -rps=0 is vault-benchmark's "as fast as possible": the closed model, given as a
        // flag, so the file's rps gives way to it.
        if n > 0 {
            asked.rate = Some(r.into());
        } else {
            asked.closed = true;
        }
    }
    if let Some(w) = get(g, "workers") {
        let n: u64 = w
            .parse()
            .map_err(|_| format!("vault-benchmark run: -workers={w} is not a whole number"))?;
        if n == 0 {
            return Err("vault-benchmark run: -workers must be at least 1".into());
        }
        asked.connections = Some(n);
    }
    asked.format = report_mode("run", g)?.map(ReportMode::format);
    asked.ca_cert = get(g, "ca_pem_file").map(PathBuf::from);
    asked.disable_http2 = get(g, "disable_http2").and_then(parse_bool);
    if get(g, "cleanup").and_then(parse_bool) == Some(false) {
        asked.keep = true;
        notes.push("-cleanup=false: what vblast creates is kept after the run".into());
    }
    if get(g, "random_mounts").and_then(parse_bool) == Some(false) {
        notes.push("-random_mounts=false: vblast always creates what it uses under fresh random names (vblast-xxxxxxxx)".into());
    }
    if get(g, "annotate").is_some() {
        notes.push("-annotate has no effect: vblast exports no Prometheus metrics".into());
    }
    Ok((config.into(), asked, notes))
}

/// The run a `vault-benchmark run` stands for, built from its flags and its file: the
/// Scenario and what to print and save, with vblast's defaults for what neither gives.
fn run_planned(g: &GoFlags) -> Result<Planned, Error> {
    let (path, asked, notes) = run_asked(g).map_err(Error::input)?;
    for n in &notes {
        eprintln!("vblast: note: {n}");
    }
    let file = settle::read(&path)?;
    let s = settle::settle(asked, Some(&file))?;
    let duration = s.duration.unwrap_or(DEFAULT_DURATION);
    if duration.is_zero() {
        return Err(Error::input("-z must be longer than zero"));
    }
    let schedule = s
        .rate
        .as_deref()
        .map(|r| Schedule::from_flags(r, None))
        .transpose()
        .map_err(|e| Error::input(e.to_string()))?;
    let t = target(
        &s,
        &Beside {
            url: None,
            nodes: None,
            token_file: None,
            tls: None,
        },
    )?;
    let mut load = Load {
        step: StepPlan {
            duration: Some(duration),
            schedule,
            ..StepPlan::default()
        },
        ..Load::closed(s.connections.unwrap_or(DEFAULT_CONNECTIONS))
    };
    if s.go_http2 {
        let not_yet = settle::h2_not_yet(&load);
        settle::go_protocol(&mut load, &t.address, None, not_yet)?;
    }
    let scenario = Scenario {
        address: t.address,
        token: t.token,
        namespace: t.namespace,
        tls: t.tls,
        load,
        workload: Workload::Vault(s.tests.clone().unwrap_or_default()),
        keep: s.keep,
        no_setup: false,
        cluster: t.cluster,
        fixtures: FixturePlan {
            state_dir: state_dir(),
            audit_path: s.audit_path.clone(),
            ..FixturePlan::default()
        },
        differences: notes.iter().chain(&s.differences).cloned().collect(),
    };
    let output = Output {
        // vault-benchmark's default layout is terse; the file's report_mode still wins
        // over this default (it is not a flag given).
        format: s.format.unwrap_or(OutputFormat::VbTerse),
        latency: false,
        output: get(g, "result_file").map(PathBuf::from),
        hgrm: None,
        ab_csv: None,
        hlog: None,
        hlog_interval: 1,
        html: None,
        ci: false,
        confidence: Default::default(),
        junit: None,
    };
    let thresholds = crate::commands::threshold::checked(
        file.thresholds.clone(),
        file.threshold_abort,
        &scenario,
    )?;
    Ok(Planned {
        scenario,
        output,
        pprof_interval: s.pprof_interval,
        thresholds,
        recorded: None,
    })
}

/// The `-auth_*` flags as vblast's login flags (`--auth-method` and the rest, which they
/// stand for): the login, checked, with its secrets read (None without `-auth_method`). A
/// token given beside it (`-vault_token`) is refused; it overrides `VAULT_TOKEN` and a
/// `-cluster_json` file's token, as `--auth-method` does.
fn run_login(g: &GoFlags) -> Result<Option<AdminLogin>, Error> {
    let path = |name| get(g, name).map(PathBuf::from);
    let given: Vec<&str> = g
        .iter()
        .map(|(n, _)| n.as_str())
        .filter(|n| n.starts_with("auth_"))
        .collect();
    let Some(m) = get(g, "auth_method") else {
        return match given.first() {
            Some(n) => Err(Error::input(format!(
                "vault-benchmark run: -{n} is a setting of vblast's login: give -auth_method too"
            ))),
            None => Ok(None),
        };
    };
    let method = AuthMethod::from_str(m, true).map_err(|_| {
        Error::input(format!(
            "vault-benchmark run: -auth_method={m} is not one of approle, jwt, kubernetes, cert, userpass"
        ))
    })?;
    if get(g, "vault_token").is_some() {
        return Err(Error::input(
            "vault-benchmark run: -auth_method logs in for the run's token: leave out -vault_token",
        ));
    }
    let args = LoginArgs {
        auth_method: Some(method),
        auth_mount: get(g, "auth_mount").map(String::from),
        auth_role: get(g, "auth_role").map(String::from),
        auth_role_id_file: path("auth_role_id_file"),
        auth_secret_id_file: path("auth_secret_id_file"),
        auth_jwt_file: path("auth_jwt_file"),
        auth_username: get(g, "auth_username").map(String::from),
        auth_password_file: path("auth_password_file"),
    };
    crate::commands::login::login_of(&args)
        .map_err(|p| p.render(crate::commands::login::FlagStyle::Go))
}

/// Runs `vblast vault-benchmark ARGS...`.
pub fn run(args: &[String], stop: &Stop) -> Ending {
    match dispatch(args, stop) {
        Ok(e) => e,
        Err(msg) => Ending::Failed(Error::input(msg)),
    }
}

fn dispatch(args: &[String], stop: &Stop) -> Result<Ending, Cause> {
    let (cmd, rest) = match args.split_first() {
        Some((c, rest)) => (c.as_str(), rest),
        None => {
            return Err(format!("vault-benchmark: give a command, run or review\n{USAGE}").into());
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
            let planned = run_planned(&g);
            // A signal while the file was read and checked ends the run here, before
            // anything is set up, with the signal's status.
            if let Some(s) = stop.signal() {
                return Ok(Ending::Stopped(s));
            }
            let (mut planned, login) = match planned.and_then(|p| Ok((p, run_login(&g)?))) {
                Ok(p) => p,
                Err(e) => return Ok(Ending::Failed(e)),
            };
            // Sampled as `vblast run` samples its nodes by default.
            // pprof_interval (the key or the flag) is vblast's --pprof-interval.
            let server_args = ServerArgs {
                pprof_interval: planned.pprof_interval,
                ..ServerArgs::default()
            };
            let server = match crate::commands::server::settings(
                &server_args,
                &planned.scenario,
                planned.output.output.as_deref(),
            ) {
                Ok(s) => s,
                Err(e) => return Ok(Ending::Failed(e)),
            };
            let opts = RunOptions {
                show: Show {
                    quiet: false,
                    progress: false,
                    allow_errors: false,
                },
                metrics_listen: None,
                metrics_linger: None,
                metrics_push: None,
                sharding: Default::default(),
                server,
            };
            // The login, before setup; its token is revoked when `_logged_in` drops,
            // after the run's cleanup, on every exit path (as `vblast run`'s).
            let _logged_in = match login {
                Some(l) => match crate::commands::login::log_in(
                    &l,
                    &mut planned.scenario,
                    crate::commands::login::FlagStyle::Go,
                ) {
                    Ok(t) => Some(t),
                    Err(e) => return Ok(Ending::Failed(e)),
                },
                None => None,
            };
            Ok(crate::commands::run::execute(&planned, &opts, stop))
        }
        "review" => {
            let g = parse_flags("review", rest, REVIEW_FLAGS)?;
            check_log_level("review", &g)?;
            let Some(file) = get(&g, "result_file").or_else(|| get(&g, "results_file")) else {
                return Err("vault-benchmark review: -result_file=FILE is required (vault-benchmark's JSON report, or a results file saved by vblast: -result_file=FILE in run, or --output)".into());
            };
            if let Some(reports) = vb_reports(file) {
                return review_vb(&reports, report_mode("review", &g)?);
            }
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
        )
        .into()),
    }
}

/// The reports of vault-benchmark's JSON report at `file` (None when it is not one: a
/// vblast results file, or a file `vblast report` explains).
fn vb_reports(file: &str) -> Option<Vec<VbReport>> {
    let text = std::fs::read_to_string(file).ok()?;
    VbReport::read_all(&text)
}

/// Renders vault-benchmark's own JSON report as its `review` does: each report in turn,
/// terse unless asked for verbose. JSON is refused, as vault-benchmark refuses it: the
/// file already is that layout.
fn review_vb(reports: &[VbReport], mode: Option<ReportMode>) -> Result<Ending, Cause> {
    let mode = mode.unwrap_or(ReportMode::Terse);
    if mode == ReportMode::Json {
        return Err("vault-benchmark review: -report_mode=json on a JSON report: the file already is vault-benchmark's JSON layout (use terse or verbose)".into());
    }
    let stdout = std::io::stdout();
    let mut o = stdout.lock();
    for r in reports {
        let written = match mode {
            ReportMode::Verbose => verbose::render_report(r, &mut o),
            _ => terse::render_report(r, &mut o),
        };
        if let Err(e) = written {
            return Ok(Ending::Failed(Error::output(Cause::io(
                "cannot write the report",
                e,
            ))));
        }
    }
    Ok(Ending::Ok)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

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
        let (config, asked, _) = run_asked(&g).unwrap();
        assert_eq!(config, PathBuf::from("a.hcl"));
        assert_eq!(asked.duration, Some(Duration::from_secs(5)));
        assert_eq!(asked.connections, Some(3));
        assert_eq!(asked.rate.as_deref(), Some("7"));
        assert_eq!(asked.format, Some(OutputFormat::VbVerbose));
        assert!(!asked.keep);
    }

    #[test]
    fn bad_flags_are_one_clear_message() {
        let e = parse_flags("run", &v(&["-confg=a.hcl"]), RUN_FLAGS)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("flag provided but not defined: -confg") && e.contains("-config"),
            "{e}"
        );
        let e = parse_flags("run", &v(&["-config"]), RUN_FLAGS)
            .unwrap_err()
            .to_string();
        assert!(e.contains("flag needs an argument: -config"), "{e}");
        let e = parse_flags("run", &v(&["-cleanup=maybe"]), RUN_FLAGS)
            .unwrap_err()
            .to_string();
        assert!(e.contains("invalid boolean value 'maybe'"), "{e}");
        let e = parse_flags("run", &v(&["config.hcl"]), RUN_FLAGS)
            .unwrap_err()
            .to_string();
        assert!(e.contains("unexpected argument 'config.hcl'"), "{e}");
        let g = parse_flags("run", &v(&["-duration=1s"]), RUN_FLAGS).unwrap();
        assert!(
            run_asked(&g)
                .unwrap_err()
                .to_string()
                .contains("-config=FILE is required")
        );
        let g = parse_flags("run", &v(&["-config=a", "-report_mode=loud"]), RUN_FLAGS).unwrap();
        assert!(
            run_asked(&g)
                .unwrap_err()
                .to_string()
                .contains("-report_mode=loud")
        );
        // -audit_path and -pprof_interval are vblast's --audit-path and --pprof-interval.
        let g = parse_flags(
            "run",
            &v(&["-config=a", "-audit_path=/x", "-pprof_interval=4s"]),
            RUN_FLAGS,
        )
        .unwrap();
        let (_, asked, _) = run_asked(&g).unwrap();
        assert_eq!(asked.audit_path, Some(PathBuf::from("/x")));
        assert_eq!(asked.pprof_interval, Some(Duration::from_secs(4)));
        let g = parse_flags("run", &v(&["-config=a", "-pprof_interval=x"]), RUN_FLAGS).unwrap();
        assert!(
            run_asked(&g)
                .unwrap_err()
                .to_string()
                .contains("-pprof_interval 'x'")
        );
        let g = parse_flags("run", &v(&["-config=a", "-rps=x"]), RUN_FLAGS).unwrap();
        assert!(run_asked(&g).unwrap_err().to_string().contains("-rps=x"));
        let e = parse_flags("review", &v(&["-config=a"]), REVIEW_FLAGS)
            .unwrap_err()
            .to_string();
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
        let (_, asked, notes) = run_asked(&g).unwrap();
        assert!(asked.keep);
        assert!(asked.rate.is_none() && asked.closed);
        assert!(notes[0].contains("kept"));
    }
}
