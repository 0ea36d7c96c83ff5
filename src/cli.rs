//! Command line: subcommands (`run`, the default, `report` and `compare`), flags, Vault's
//! environment variables (flags win), validation into one clear message per bad input,
//! and the `Scenario` a run's flags describe.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::error::Error;
use crate::scenario::{Body, Load, Scenario, Token, UrlRequest, Workload};
use crate::schedule::Schedule;
use crate::tls::{TlsEngine, TlsOptions};
use crate::units::{parse_duration, show_duration};
use crate::vault::ops::OptionValues;

/// `--hlog-interval`: a duration of whole seconds, at least one (the timeline is per second).
fn parse_whole_seconds(text: &str) -> Result<u64, String> {
    let d = parse_duration(text)?;
    if d.subsec_nanos() != 0 || d.as_secs() == 0 {
        return Err(format!(
            "{text} is not a whole number of seconds (at least 1s): intervals are made of the run's seconds"
        ));
    }
    Ok(d.as_secs())
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Text,
    Json,
    /// ApacheBench 2.4's report, line for line.
    Ab,
    /// Per operation: latency spectrum, bytes, status codes, errors; setup and cleanup time.
    Verbose,
    /// vault-benchmark's terse table (`-report_mode=terse`).
    VbTerse,
    /// vault-benchmark's verbose sections (`-report_mode=verbose`).
    VbVerbose,
    /// vault-benchmark's JSON report (`-report_mode=json`).
    VbJson,
    /// Markdown, with --list-ops only: the operations' reference (docs/operations.md).
    Markdown,
}

const EXAMPLES: &str = "Examples:\n  vblast -c 20000 -n 20000 --op kv-read\n  vblast -c 64 -z 30s --op kv-read:80,kv-write:20 --secret-size 1024\n  vblast -R 2000 -c 100 -z 60s --op kv-read --latency --output run.json\n  vblast -c 64 -n 500000 -H \"X-Vault-Token: root\" http://127.0.0.1:8200/v1/secret/data/foo\n  vblast report shard-1.json shard-2.json\n  vblast --list-ops\n\nEnvironment: VAULT_ADDR (default http://127.0.0.1:8200), VAULT_TOKEN, VAULT_NAMESPACE,\nVAULT_CACERT, VAULT_CAPATH, VAULT_SKIP_VERIFY, VAULT_CLIENT_CERT, VAULT_CLIENT_KEY,\nVAULT_TLS_SERVER_NAME. Flags win over the environment. Prefer VAULT_TOKEN or --token-file\nto --token: a flag's value is visible to every user of the machine (ps).";

#[derive(Parser, Debug)]
#[command(
    name = "vblast",
    version,
    about = "Load generator for HashiCorp Vault and OpenBao: thread-per-core HTTP/1.1, honest latency.",
    after_help = EXAMPLES,
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,

    /// `vblast [OPTIONS]` is `vblast run [OPTIONS]`.
    #[command(flatten)]
    pub run: RunArgs,

    /// Internal: run as a worker process (protocol on stdin and stdout).
    #[arg(long, hide = true)]
    pub worker: bool,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run a load test (the default when no command is given).
    #[command(after_help = EXAMPLES)]
    Run(Box<RunArgs>),
    /// Render saved results files (--output); several files are merged into one report.
    /// `review` (vault-benchmark's word) is the same command.
    #[command(visible_alias = "review")]
    Report(ReportArgs),
    /// Saved runs side by side, with ratios against the first, and how their descriptions differ.
    Compare(CompareArgs),
    /// Right-sizing: steps of increasing load (--rate or --concurrency FROM..TO) until an
    /// objective (--slo p99=20ms) breaks; the highest load sustained within it.
    Sweep(Box<crate::sweep::SweepArgs>),
    /// ApacheBench's command line with ab's meaning: `vblast ab -n 4000 -c 40 -k URL`
    /// (`vblast ab -h` lists the options); exit statuses vblast's, or ab's with --ab-exit.
    #[command(disable_help_flag = true, disable_version_flag = true)]
    Ab(AbArgs),
    /// vault-benchmark's command lines: `vault-benchmark run -config=FILE ...`,
    /// `vault-benchmark review -result_file=FILE ...` (its flags, its report layouts).
    #[command(name = "vault-benchmark", disable_help_flag = true)]
    VaultBenchmark(VaultBenchmarkArgs),
    /// Sets up the fixture the shards of one run share, once, for shards run with
    /// --external-setup (`--run-id ID` and the run's --op flags; names follow the run id,
    /// nothing secret is written or printed).
    Setup(Box<RunArgs>),
    /// Removes the fixture `vblast setup --run-id ID` made, or what a killed shard 0 left
    /// (same --run-id and --op flags).
    Cleanup(Box<RunArgs>),
}

/// `vblast ab`'s arguments, parsed as ab parses them (src/ab_cli.rs).
#[derive(Args, Debug)]
pub struct AbArgs {
    /// ab's options and URL.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
    pub args: Vec<String>,
}

/// vault-benchmark's arguments, as given: its Go-style flags are parsed by hand
/// (`vault_benchmark_cli`).
#[derive(Args, Debug)]
pub struct VaultBenchmarkArgs {
    /// run|review, then vault-benchmark's flags (-config=FILE, -report_mode=verbose, ...).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
    pub args: Vec<String>,
}

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// Results files written by `vblast ... --output FILE`; the first is the reference.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,

    /// Also save the comparison as one self-contained HTML page (spectra and timelines
    /// overlaid, summary table, descriptions).
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

/// What to print and which files to save: the same for a run and for saved results.
#[derive(Args, Debug, Clone)]
pub struct OutputArgs {
    /// Report format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,

    /// Print the latency percentiles and the HdrHistogram percentile spectrum.
    #[arg(long)]
    pub latency: bool,

    /// Save the results file (every key of the JSON report, and what merging needs).
    #[arg(short = 'o', long)]
    pub output: Option<PathBuf>,

    /// Save the latency percentile spectrum (HdrHistogram text format) to this file.
    #[arg(long)]
    pub hgrm: Option<PathBuf>,

    /// Save ab -e's CSV (time in ms within which each percentage 0..100 was served).
    #[arg(long, value_name = "FILE")]
    pub ab_csv: Option<PathBuf>,

    /// Save an HdrHistogram interval log (.hlog): corrected and uncorrected latency per interval.
    #[arg(long, value_name = "FILE")]
    pub hlog: Option<PathBuf>,

    /// Interval of --hlog, whole seconds.
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = parse_whole_seconds)]
    pub hlog_interval: u64,

    /// Save a self-contained HTML report: percentile spectrum, per-second timeline, summary
    /// table and the run's description (opens offline in any browser).
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// Results files written by `vblast ... --output FILE`.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,

    #[command(flatten)]
    pub out: OutputArgs,
}

#[derive(Args, Debug, Clone)]
pub struct RunArgs {
    /// URL mode: send this request (like ab, wrk, oha), with no Vault setup.
    pub url: Option<String>,

    /// A vault-benchmark HCL file, unchanged: its global keys and its tests (environment
    /// variables override the file, flags override both).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["op", "scenario"])]
    pub config: Option<PathBuf>,

    /// Ids of the flags given on the command line (filled after parsing: a flag's default
    /// does not override a config file's value).
    #[arg(skip)]
    pub explicit: Vec<String>,

    /// Operations given as data (a config file's tests) instead of --op.
    #[arg(skip)]
    pub preset_ops: Option<Vec<crate::scenario::OpChoice>>,

    /// The operations' options given (filled after parsing from the arguments
    /// `cli_ops::register` adds: their defaults are the registry's).
    #[arg(skip)]
    pub op_options: OptionValues,

    /// Vault operation, or a weighted mix: kv-read, or kv-read:80,kv-write:20 (see --list-ops).
    #[arg(long)]
    pub op: Option<String>,

    /// A scenario instead of --op: login-read (log in, then read a secret with the token).
    #[arg(long, conflicts_with = "op")]
    pub scenario: Option<String>,

    /// List the Vault operations with their options, then exit.
    #[arg(long)]
    pub list_ops: bool,

    /// Connections (concurrency).
    #[arg(short = 'c', long = "concurrency", default_value_t = 10)]
    pub connections: u64,

    /// Total requests; with -z, whichever is reached first ends the run.
    #[arg(short = 'n', long = "requests")]
    pub requests: Option<u64>,

    /// Run duration (e.g. 30s, 2m, 1h); default 10s when -n is not given.
    #[arg(short = 'z', long = "duration", value_parser = parse_duration)]
    pub duration: Option<Duration>,

    /// Event-loop threads in total (default: one per available core).
    #[arg(short = 't', long)]
    pub threads: Option<usize>,

    /// Open model: the total target rate, requests per second: 2000; a ramp 100..5000 (with
    /// --ramp); or steps 100:10s,500:10s,1000:20s (the last rate is held after them).
    #[arg(short = 'R', long, allow_hyphen_values = true)]
    pub rate: Option<String>,

    /// With -R FROM..TO: how long the rate takes to ramp from FROM to TO (then held).
    #[arg(long, value_parser = parse_duration)]
    pub ramp: Option<Duration>,

    /// Load run first and left out of every statistic.
    #[arg(long, value_parser = parse_duration)]
    pub warmup: Option<Duration>,

    /// Keep the mount vblast created (default: removed after the run).
    #[arg(long)]
    pub keep: bool,

    /// Use the target as it is: no mount, no seeding, no checks of the token.
    #[arg(long)]
    pub no_setup: bool,

    /// URL mode: request method.
    #[arg(short = 'm', long, default_value = "GET")]
    pub method: String,

    /// Extra request header "Name: value" (repeatable).
    #[arg(short = 'H', long = "header")]
    pub headers: Vec<String>,

    /// URL mode: request body.
    #[arg(short = 'd', long = "data", conflicts_with = "post_file")]
    pub data: Option<String>,

    /// URL mode: request body from a file.
    #[arg(short = 'p', long = "post-file")]
    pub post_file: Option<PathBuf>,

    /// Content-Type of the body (URL mode).
    #[arg(short = 'T', long = "content-type")]
    pub content_type: Option<String>,

    /// A new connection per request (ab without -k); connect time is reported separately.
    #[arg(long)]
    pub no_keepalive: bool,

    /// Per-request timeout.
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    pub timeout: Duration,

    #[command(flatten)]
    pub out: OutputArgs,

    #[command(flatten)]
    pub shard: crate::shard::ShardArgs,

    #[command(flatten)]
    pub metrics: crate::metrics::MetricsArgs,

    #[command(flatten)]
    pub source: crate::source_addrs::SourceArgs,

    /// No live progress line on stderr (shown only when stderr is a terminal anyway).
    #[arg(short = 'q', long)]
    pub quiet: bool,

    /// Progress once a second as plain lines on stderr even when it is not a terminal (CI
    /// logs); runs over worker processes too.
    #[arg(long)]
    pub progress: bool,

    /// Exit 0 even when requests failed.
    #[arg(long)]
    pub allow_errors: bool,

    /// Vault address [env: VAULT_ADDR, default http://127.0.0.1:8200]. Repeat it (or give
    /// VAULT_ADDR comma-separated) for the nodes of one HA cluster.
    #[arg(long)]
    pub address: Vec<String>,

    /// The nodes of an HA cluster from vault-benchmark's cluster_json:
    /// {"token": "...", "vault_addrs": ["http://...", ...]}.
    #[arg(long, value_name = "FILE")]
    pub cluster: Option<PathBuf>,

    /// A connection answered 429 by a rate-limit quota waits as its Retry-After says
    /// (closed model), so a quota can be measured from the client's side.
    #[arg(long)]
    pub respect_retry_after: bool,

    /// Send X-Vault-No-Request-Forwarding: true, to see what a standby does on its own
    /// (instead of forwarding requests to the active node).
    #[arg(long)]
    pub no_forwarding: bool,

    /// Follow a 307/308 answer (a standby's redirect to the active node) to a node of the
    /// target, on a connection kept for that node; the latency includes the hop. A
    /// Location elsewhere is counted as an error and never contacted.
    #[arg(long)]
    pub follow_redirects: bool,

    /// Which nodes of a cluster take the load: the active one (followed through a
    /// failover), all unsealed ones, or each in turn [default: active].
    #[arg(long, value_enum)]
    pub nodes: Option<crate::cluster::NodesMode>,

    /// Vault token [env: VAULT_TOKEN]. Visible in `ps`: prefer VAULT_TOKEN or --token-file.
    #[arg(long)]
    pub token: Option<String>,

    /// Read the Vault token from this file ("-": standard input).
    #[arg(long, conflicts_with = "token")]
    pub token_file: Option<PathBuf>,

    /// Vault namespace [env: VAULT_NAMESPACE].
    #[arg(long)]
    pub namespace: Option<String>,

    /// CA certificate file (PEM) [env: VAULT_CACERT].
    #[arg(long)]
    pub ca_cert: Option<PathBuf>,

    /// Directory of CA certificates (PEM) [env: VAULT_CAPATH].
    #[arg(long)]
    pub ca_path: Option<PathBuf>,

    /// Skip TLS certificate verification [env: VAULT_SKIP_VERIFY].
    #[arg(short = 'k', long)]
    pub insecure: bool,

    /// Client certificate (PEM) for mutual TLS [env: VAULT_CLIENT_CERT].
    #[arg(long)]
    pub client_cert: Option<PathBuf>,

    /// Client key (PEM) [env: VAULT_CLIENT_KEY].
    #[arg(long)]
    pub client_key: Option<PathBuf>,

    /// Name to verify the server certificate against [env: VAULT_TLS_SERVER_NAME].
    #[arg(long)]
    pub tls_server_name: Option<String>,

    /// TLS record layer after the handshake: in-place (default, no allocation per request)
    /// or rustls (its own ClientConnection, the cross-check) [env: VBLAST_TLS_ENGINE].
    #[arg(long, value_enum)]
    pub tls_engine: Option<TlsEngine>,

    /// Full TLS handshakes on every new connection (no session resumption).
    #[arg(long)]
    pub no_tls_resume: bool,

    /// Do not pin event-loop threads to cores.
    #[arg(long)]
    pub no_pin: bool,
}

/// The token from a file, or from standard input for "-" (first line, trimmed).
fn read_token_file(path: &std::path::Path) -> Result<String, Error> {
    use std::io::Read;
    let mut text = String::new();
    let read = if path.as_os_str() == "-" {
        std::io::stdin().take(64 * 1024).read_to_string(&mut text)
    } else {
        std::fs::File::open(path).and_then(|f| f.take(64 * 1024).read_to_string(&mut text))
    };
    read.map_err(|e| {
        Error::input(format!(
            "cannot read the token file {}: {}",
            path.display(),
            crate::transport::io_error_text(&e)
        ))
    })?;
    let token = text.lines().next().unwrap_or("").trim().to_string();
    if token.is_empty() {
        return Err(Error::input(format!(
            "the token file {} is empty",
            path.display()
        )));
    }
    Ok(token)
}

/// Parses a command line, noting which flags of `run` it gave (so that a config file's
/// values give way only to flags actually given, not to clap's defaults).
pub fn parse_from<I, T>(argv: I) -> Result<Cli, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    use clap::{CommandFactory, FromArgMatches};
    let matches = crate::cli_ops::register(Cli::command()).try_get_matches_from(argv)?;
    let mut cli = Cli::from_arg_matches(&matches)?;
    cli.run.op_options = crate::cli_ops::values(&matches);
    match (&mut cli.command, matches.subcommand()) {
        (Some(Command::Run(a) | Command::Setup(a) | Command::Cleanup(a)), Some((_, m))) => {
            a.op_options = crate::cli_ops::values(m);
        }
        (Some(Command::Sweep(a)), Some((_, m))) => a.run.op_options = crate::cli_ops::values(m),
        _ => {}
    }
    let given = |m: &clap::ArgMatches| -> Vec<String> {
        m.ids()
            .filter(|id| {
                m.value_source(id.as_str()) == Some(clap::parser::ValueSource::CommandLine)
            })
            .map(|id| id.as_str().to_string())
            .collect()
    };
    cli.run.explicit = given(&matches);
    if let (Some(Command::Run(args)), Some(("run", m))) = (&mut cli.command, matches.subcommand()) {
        args.explicit = given(m);
    }
    Ok(cli)
}

/// Reads an environment variable, treating empty as unset.
pub fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// Vault's boolean convention for VAULT_SKIP_VERIFY.
pub fn env_true(name: &str) -> bool {
    matches!(
        env(name).as_deref().map(str::to_ascii_lowercase).as_deref(),
        Some("1" | "true" | "t" | "yes" | "y")
    )
}

/// The refusal of `--format markdown` anywhere but with --list-ops.
pub const MARKDOWN_ONLY_FOR_LIST_OPS: &str = "--format markdown goes with --list-ops (the operations' reference): a run's report is text, json, ab, verbose, vb-terse, vb-verbose or vb-json";

/// Most event-loop threads: one per core is the design; this bounds a typo.
pub const MAX_THREADS: usize = 1024;

impl RunArgs {
    /// The run these flags (and Vault's environment variables) describe, checked.
    pub fn scenario(&self) -> Result<Scenario, Error> {
        if let Some(path) = &self.config {
            return crate::vbconfig::merge(self, path)
                .map_err(Error::input)?
                .scenario();
        }
        self.validate().map_err(Error::input)?;
        let (from_file, file_token) = match &self.cluster {
            Some(p) => crate::cluster::read_cluster_json(p)?,
            None => (Vec::new(), None),
        };
        let nodes = crate::cluster::addresses(&self.address, from_file, env("VAULT_ADDR"))?;
        let cluster = (self.url.is_none()
            && (nodes.len() > 1 || self.cluster.is_some() || self.nodes.is_some()))
        .then(|| crate::cluster::ClusterSpec {
            nodes: nodes.clone(),
            mode: self.nodes.unwrap_or_default(),
        });
        let address = match &self.url {
            Some(u) => u.clone(),
            None => nodes
                .first()
                .cloned()
                .unwrap_or_else(|| "http://127.0.0.1:8200".into()),
        };
        let tls = address.starts_with("https://").then(|| TlsOptions {
            ca_cert: self
                .ca_cert
                .clone()
                .or_else(|| env("VAULT_CACERT").map(Into::into)),
            ca_path: self
                .ca_path
                .clone()
                .or_else(|| env("VAULT_CAPATH").map(Into::into)),
            insecure: self.insecure || env_true("VAULT_SKIP_VERIFY"),
            client_cert: self
                .client_cert
                .clone()
                .or_else(|| env("VAULT_CLIENT_CERT").map(Into::into)),
            client_key: self
                .client_key
                .clone()
                .or_else(|| env("VAULT_CLIENT_KEY").map(Into::into)),
            server_name: self
                .tls_server_name
                .clone()
                .or_else(|| env("VAULT_TLS_SERVER_NAME")),
            resume: !self.no_tls_resume,
            engine: match (self.tls_engine, env("VBLAST_TLS_ENGINE").as_deref()) {
                (Some(e), _) => e,
                (None, Some("rustls")) => TlsEngine::Rustls,
                _ => TlsEngine::InPlace,
            },
        });
        let token = match &self.token_file {
            Some(path) => Some(read_token_file(path)?),
            None => self
                .token
                .clone()
                .or(file_token)
                .or_else(|| env("VAULT_TOKEN")),
        };
        let workload = match self.op.as_ref().or(self.scenario.as_ref()) {
            _ if self.preset_ops.is_some() => {
                Workload::Vault(self.preset_ops.clone().unwrap_or_default())
            }
            Some(op) => Workload::Vault(
                crate::vault::ops::parse_mix(op, &self.op_options).map_err(Error::input)?,
            ),
            None => Workload::Url(UrlRequest {
                method: self.method.clone(),
                headers: self
                    .headers
                    .iter()
                    .map(|h| parse_header(h))
                    .collect::<Result<_, _>>()
                    .map_err(Error::input)?,
                body: match (&self.data, &self.post_file) {
                    (Some(d), _) => Some(Body::Inline(d.clone())),
                    (None, Some(p)) => Some(Body::File(p.clone())),
                    (None, None) => None,
                },
                content_type: self.content_type.clone(),
            }),
        };
        Ok(Scenario {
            address,
            token: Token(token),
            namespace: self.namespace.clone().or_else(|| env("VAULT_NAMESPACE")),
            tls,
            load: Load {
                connections: self.connections,
                requests: self.requests,
                duration: self.run_duration(),
                warmup: self.warmup.unwrap_or_default(),
                schedule: self.schedule().map_err(Error::input)?,
                keepalive: !self.no_keepalive,
                timeout: self.timeout,
                threads: self.threads,
                pin: !self.no_pin,
                respect_retry_after: self.respect_retry_after,
                no_forwarding: self.no_forwarding,
                follow_redirects: self.follow_redirects,
                spread: crate::shard::Spread {
                    shard: self.shard.shard.unwrap_or_default(),
                    start_at: self.shard.start_at.clone(),
                    source_addrs: crate::source_addrs::resolve(&self.source)
                        .map_err(Error::input)?,
                },
            },
            workload,
            keep: self.keep,
            no_setup: self.no_setup,
            cluster,
        })
    }

    /// The open model's schedule from -R (and --ramp), checked; None in the closed model.
    pub fn schedule(&self) -> Result<Option<Schedule>, String> {
        let Some(r) = &self.rate else {
            return Ok(None);
        };
        Schedule::from_flags(r, self.ramp).map(Some).map_err(|e| {
            let rest = e.strip_prefix(&format!("-R {r}: ")).unwrap_or(&e);
            if rest.starts_with(|c: char| c.is_ascii_digit() || c == '-') && !rest.starts_with("-R")
            {
                // "0 is not a usable rate..." names the rate itself: "-R 0 is not ...".
                format!("-R {rest}")
            } else if e.starts_with("-R") {
                e
            } else {
                format!("-R {r}: {e}")
            }
        })
    }

    /// Checks flag combinations that clap cannot express.
    pub fn validate(&self) -> Result<(), String> {
        if self.out.format == Format::Markdown {
            return Err(MARKDOWN_ONLY_FOR_LIST_OPS.into());
        }
        if self.connections == 0 {
            return Err("-c must be at least 1".into());
        }
        if self.requests == Some(0) {
            return Err("-n must be at least 1".into());
        }
        if self.duration == Some(Duration::ZERO) {
            return Err("-z must be longer than zero".into());
        }
        if self.threads == Some(0) {
            return Err("-t must be at least 1".into());
        }
        if self.threads.is_some_and(|t| t > MAX_THREADS) {
            return Err(format!(
                "-t {} is more event-loop threads than vblast runs (at most {MAX_THREADS})",
                self.threads.unwrap_or(0)
            ));
        }
        if self.timeout.is_zero() {
            return Err("--timeout must be longer than zero".into());
        }
        crate::shard::validate(
            &self.shard,
            self.op.as_deref().or(self.scenario.as_deref()),
            self.no_setup,
        )?;
        if self.ramp.is_some() && self.rate.is_none() {
            return Err("--ramp goes with -R FROM..TO".into());
        }
        if self.rate.is_some() {
            self.schedule()?;
            if let Some(n) = self.requests
                && n < self.connections
            {
                return Err(format!(
                    "-n {n} is smaller than -c {}: with -R, give at least one request per connection (or fewer connections)",
                    self.connections
                ));
            }
        }
        if let (Some(w), Some(d)) = (self.warmup, self.duration)
            && w >= d
        {
            return Err(format!(
                "--warmup {} is not shorter than the run (-z {})",
                show_duration(w),
                show_duration(d)
            ));
        }
        if let Some(s) = &self.scenario
            && s != "login-read"
        {
            return Err(format!(
                "unknown scenario '{s}': the scenarios are login-read"
            ));
        }
        if self.url.is_some() && (self.op.is_some() || self.scenario.is_some()) {
            return Err("give either a URL or --op, not both".into());
        }
        if self.url.is_none()
            && self.op.is_none()
            && self.scenario.is_none()
            && self.preset_ops.is_none()
        {
            return Err(
                "nothing to do: give --op (see vblast --list-ops) or a URL (see vblast --help)"
                    .into(),
            );
        }
        self.op_options.check().map_err(|e| e.to_string())?;
        for h in &self.headers {
            parse_header(h)?;
        }
        Ok(())
    }

    /// The run length: -z as given; 10 s when neither -n nor -z is.
    pub fn run_duration(&self) -> Option<Duration> {
        match (self.requests, self.duration) {
            (None, None) => Some(Duration::from_secs(10)),
            (_, d) => d,
        }
    }
}

/// Splits "Name: value". Messages never quote the header: it may hold a token.
pub fn parse_header(h: &str) -> Result<(String, String), String> {
    let (name, value) = h.split_once(':').ok_or_else(|| {
        "a -H header is not of the form 'Name: value' (it is not shown here: it may hold a secret)"
            .to_string()
    })?;
    let name = name.trim();
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(
            "a -H header has no valid name before its ':' (it is not shown here: it may hold a secret)"
                .to_string(),
        );
    }
    let value = value.trim();
    if value.bytes().any(|b| b == b'\r' || b == b'\n') {
        return Err(format!("header '{name}' has a line break in its value"));
    }
    Ok((name.to_string(), value.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cli(args: &[&str]) -> RunArgs {
        let mut v = vec!["vblast"];
        v.extend_from_slice(args);
        Cli::try_parse_from(v).unwrap().run
    }

    #[test]
    fn bad_combinations() {
        assert!(cli(&["--op", "kv-read"]).validate().is_ok());
        assert!(cli(&["-R", "0", "--op", "kv-read"]).validate().is_err());
        assert!(cli(&["-R", "-5", "--op", "kv-read"]).validate().is_err());
        assert!(cli(&["-R", "1e12", "--op", "kv-read"]).validate().is_err());
        assert!(
            cli(&["-R", "10", "-c", "100", "-n", "50", "--op", "kv-read"])
                .validate()
                .is_err()
        );
        assert!(
            cli(&["--warmup", "10s", "-z", "5s", "--op", "kv-read"])
                .validate()
                .is_err()
        );
        assert!(cli(&[]).validate().is_err());
        assert!(cli(&["--op", "kv-read", "http://x/"]).validate().is_err());
        assert!(cli(&["-H", "novalue", "http://x/"]).validate().is_err());
        assert!(cli(&["-c", "0", "--op", "kv-read"]).validate().is_err());
        assert!(cli(&["-t", "5000", "--op", "kv-read"]).validate().is_err());
    }
}
