//! Flags into library values, once: the `Scenario` a run's flags (and Vault's environment
//! variables) describe, checked into one clear message per bad input, and the other values
//! the commands hand the library (what to print and save, how shards share a fixture).

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::{Given, env, env_true};
use crate::cli::shards::ShardArgs;
use crate::cli::tls::TlsArgs;
use crate::cli::{OutputArgs, RunArgs};
use crate::config::cluster::{ClusterSpec, NodesMode};
use crate::config::fixtures::FixturePlan;
use crate::config::mix::names as op_names;
use crate::config::scenario::{
    Body, DEFAULT_DURATION, Load, Scenario, StepPlan, Token, UrlRequest, Workload,
};
use crate::config::schedule::Schedule;
use crate::config::spread::{Sharding, parse_start_at};
use crate::config::units::show_duration;
use crate::error::{Cause, Error};
use crate::net::tls::{TlsEngine, TlsOptions};
use crate::results::deliver::{MARKDOWN_ONLY_FOR_LIST_OPS, Output, OutputFormat};
use crate::session::fixtures::check_ops;
use crate::vault::fixture::Mode;
use crate::vault::ops::{Fixture, fixture_of};
use crate::vault_benchmark::settle::{Asked, Settled};

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
            crate::error::io_text(&e)
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

/// Most event-loop threads: one per core is the design; this bounds a typo.
pub const MAX_THREADS: usize = 1024;

/// A run as the library takes it: what it does, and what it prints and saves.
pub struct Planned {
    pub scenario: Scenario,
    pub output: Output,
    /// `--pprof-interval`, else a vault-benchmark file's `pprof_interval`.
    pub pprof_interval: Option<Duration>,
    /// `--threshold` (and a vault-benchmark file's `threshold` blocks), checked.
    pub thresholds: crate::threshold::ThresholdPlan,
    /// `--workload`'s run, with its recorded callers (`recorded::with_callers`).
    pub recorded: Option<super::recorded::Recorded>,
}

/// The run these flags (and Vault's environment variables) describe, checked.
pub fn scenario(args: &RunArgs, given: Given) -> Result<Scenario, Error> {
    Ok(plan(args, given)?.scenario)
}

/// The one place where a run's flags become library values: the flags, Vault's
/// environment variables and a `--config` file (flags over environment over file, decided
/// by `vault_benchmark::settle`), checked into one clear message per bad input.
pub fn plan(args: &RunArgs, given: Given) -> Result<Planned, Error> {
    let file = match &args.config {
        Some(path) => {
            if args.ops.op.is_some() || args.ops.scenario.is_some() || args.url.is_some() {
                return Err(Error::input(
                    "--config gives the tests: leave out --op, --scenario and the URL",
                ));
            }
            Some(crate::vault_benchmark::settle::read(path)?)
        }
        None => None,
    };
    let settled = crate::vault_benchmark::settle::settle(asked(args, given), file.as_ref())?;
    let recorded = super::recorded::resolve(args, args.load.scale.as_deref())?;
    let flags = Flags {
        args,
        settled: &settled,
        recorded: recorded.as_ref(),
    };
    flags.check()?;
    let mut output = output(&args.out);
    output.format = flags.format();
    output.junit = args.thresholds.junit.clone();
    let scenario = flags.scenario()?;
    let thresholds = super::threshold::plan(&args.thresholds, file.as_ref(), &scenario)?;
    Ok(Planned {
        scenario,
        output,
        pprof_interval: settled.pprof_interval,
        thresholds,
        recorded,
    })
}

/// What the flags give of the settings a vault-benchmark file also gives (a default is not
/// given: `Given`).
fn asked(args: &RunArgs, given: Given) -> Asked {
    Asked {
        addresses: args.target.address.clone(),
        cluster: args.cluster.cluster.clone(),
        token: args.target.token.clone(),
        token_file: args.target.token_file.is_some(),
        namespace: args.target.namespace.clone(),
        ca_cert: args.tls.ca_cert.clone(),
        duration: args.load.duration,
        requests: args.load.requests,
        rate: args.load.rate.clone(),
        closed: false,
        connections: given.flag("connections").then_some(args.load.connections),
        keep: args.ops.keep,
        format: given.flag("format").then_some(args.out.format),
        audit_path: args.server.audit_path.clone(),
        pprof_interval: args.server.pprof_interval,
        disable_http2: args.load.http1_1.then_some(true),
    }
}

/// A run's flags with the settings a file may give settled (`vault_benchmark::settle`): what
/// the checks and the scenario read.
struct Flags<'a> {
    args: &'a RunArgs,
    settled: &'a Settled,
    /// `--workload`'s run: its mix, schedule and length.
    recorded: Option<&'a super::recorded::Recorded>,
}

impl Flags<'_> {
    fn connections(&self) -> u64 {
        self.settled
            .connections
            .unwrap_or(self.args.load.connections)
    }

    fn format(&self) -> OutputFormat {
        self.settled.format.unwrap_or(self.args.out.format)
    }

    /// The run length: -z (or the file's duration) as given; a workload's curve at
    /// --speed, or 10 s, when neither -n nor a duration is.
    fn duration(&self) -> Option<Duration> {
        match (self.args.load.requests, self.settled.duration) {
            (None, None) => Some(self.recorded.map_or(DEFAULT_DURATION, |r| r.run.duration)),
            (_, d) => d,
        }
    }

    /// The open model's schedule from -R (and --ramp), checked; None in the closed model.
    fn schedule(&self) -> Result<Option<Schedule>, crate::config::schedule::ScheduleError> {
        if let Some(r) = self.recorded {
            return Ok(Some(r.run.schedule.clone()));
        }
        self.settled
            .rate
            .as_deref()
            .map(|r| Schedule::from_flags(r, self.args.load.ramp))
            .transpose()
    }

    /// The scenario, once the flags are checked.
    fn scenario(&self) -> Result<Scenario, Error> {
        let args = self.args;
        let t = target(
            self.settled,
            &Beside {
                url: args.url.as_deref(),
                nodes: args.cluster.nodes,
                token_file: args.target.token_file.as_deref(),
                tls: Some(&args.tls),
            },
        )?;
        let mut load = self.load()?;
        if self.settled.go_http2 {
            let streams = self.args.load.streams.filter(|_| load.http2.is_none());
            let not_yet = crate::vault_benchmark::settle::h2_not_yet(&load);
            crate::vault_benchmark::settle::go_protocol(&mut load, &t.address, streams, not_yet)?;
        }
        refuse_h2(&load, t.tls.is_some())?;
        Ok(Scenario {
            address: t.address,
            token: t.token,
            namespace: t.namespace,
            tls: t.tls,
            load,
            workload: self.workload()?,
            keep: self.settled.keep,
            no_setup: args.ops.no_setup,
            cluster: t.cluster,
            fixtures: fixture_plan(args, self.settled),
            differences: self.settled.differences.clone(),
        })
    }

    /// What the run sends: the tests of a vault-benchmark file, `--op` (or `--scenario`)
    /// with the operations' options, or URL mode's request.
    fn workload(&self) -> Result<Workload, Error> {
        let args = self.args;
        if let Some(tests) = &self.settled.tests {
            return Ok(Workload::Vault(tests.clone()));
        }
        if let Some(r) = self.recorded {
            return Ok(Workload::Vault(r.choices(r.own_namespace())?));
        }
        if let Some(d) = args.request.data.as_deref()
            && looks_like_duration(d)
        {
            eprintln!(
                "vblast: warning: -d {d} is the request body (as curl's -d: the requests are POSTs with the body {d:?}), not the run's length: that is -z {d}"
            );
        }
        Ok(match args.ops.op.as_ref().or(args.ops.scenario.as_ref()) {
            Some(op) => Workload::Vault(
                crate::vault::ops::parse_mix(op, &args.op_options).map_err(Error::input)?,
            ),
            None => Workload::Url(UrlRequest {
                method: args.request.method.clone(),
                headers: args
                    .request
                    .headers
                    .iter()
                    .map(|h| parse_header(h))
                    .collect::<Result<_, _>>()
                    .map_err(Error::input)?,
                body: match (&args.request.data, &args.request.post_file) {
                    (Some(d), _) => Some(Body::Inline(d.clone())),
                    (None, Some(p)) => Some(Body::File(p.clone())),
                    (None, None) => None,
                },
                content_type: args.request.content_type.clone(),
            }),
        })
    }

    /// The load: connections, length, schedule, keep-alive, spread.
    fn load(&self) -> Result<Load, Error> {
        let args = self.args;
        Ok(Load {
            connections: self.connections(),
            step: StepPlan {
                requests: args.load.requests,
                duration: self.duration(),
                warmup: args.load.warmup.unwrap_or_default(),
                schedule: self.schedule().map_err(|e| Error::input(e.to_string()))?,
            },
            keepalive: !args.load.no_keepalive,
            timeout: args.load.timeout,
            threads: args.load.threads,
            pin: !args.load.no_pin,
            respect_retry_after: args.load.respect_retry_after,
            no_forwarding: args.load.no_forwarding,
            follow_redirects: args.load.follow_redirects,
            http2: self.http2()?,
            clock: match args.load.clock {
                crate::cli::load::ClockArg::User => crate::net::stamp::Clock::User,
                crate::cli::load::ClockArg::Kernel => crate::net::stamp::Clock::Kernel,
                crate::cli::load::ClockArg::KernelTx => crate::net::stamp::Clock::KernelTx,
            },
            spread: crate::config::spread::Spread {
                shard: args.shard.shard.unwrap_or_default(),
                start_at: args.shard.start_at.clone(),
                source_addrs: crate::net::source_addrs::resolve(
                    args.source.source_addrs.as_deref(),
                )
                .map_err(Error::input)?,
            },
        })
    }

    /// `--http2`, `--http2-prior-knowledge`, `--http2-fallback` and `--streams`.
    fn http2(&self) -> Result<Option<crate::net::h2::Http2Options>, Error> {
        let l = &self.args.load;
        if l.http1_1 && self.args.config.is_none() {
            return Err(Error::input(
                "--http1.1 goes with --config: a vault-benchmark file's run to https:// speaks HTTP/2, as vault-benchmark does; vblast's own runs are HTTP/1.1 unless --http2",
            ));
        }
        let streams = match l.streams {
            Some(0) => return Err(Error::input("--streams must be at least 1")),
            Some(n) => n,
            None => 1,
        };
        if !(l.http2 || l.http2_prior_knowledge) {
            // A vault-benchmark file's HTTP/2 takes --streams (`vault_benchmark::settle::go_protocol`).
            if l.streams.is_some() && !self.settled.go_http2 {
                return Err(Error::input(
                    "--streams needs --http2 or --http2-prior-knowledge",
                ));
            }
            return Ok(None);
        }
        Ok(Some(crate::net::h2::Http2Options {
            prior_knowledge: l.http2_prior_knowledge,
            streams,
            without_h2: if l.http2_fallback {
                crate::net::h2::WithoutH2::Http1
            } else {
                crate::net::h2::WithoutH2::Refuse
            },
        }))
    }

    /// Checks flag combinations that clap cannot express.
    fn check(&self) -> Result<(), Error> {
        self.check_said().map_err(Error::input)
    }

    fn check_said(&self) -> Result<(), Cause> {
        let args = self.args;
        let connections = self.connections();
        if self.format() == OutputFormat::Markdown {
            return Err(MARKDOWN_ONLY_FOR_LIST_OPS.into());
        }
        if connections == 0 {
            return Err("-c must be at least 1".into());
        }
        if args.load.requests == Some(0) {
            return Err("-n must be at least 1".into());
        }
        if self.settled.duration == Some(Duration::ZERO) {
            return Err("-z must be longer than zero".into());
        }
        if args.load.threads == Some(0) {
            return Err("-t must be at least 1".into());
        }
        if args.load.threads.is_some_and(|t| t > MAX_THREADS) {
            return Err(format!(
                "-t {} is more event-loop threads than vblast runs (at most {MAX_THREADS})",
                args.load.threads.unwrap_or(0)
            )
            .into());
        }
        if args.load.timeout.is_zero() {
            return Err("--timeout must be longer than zero".into());
        }
        if args.load.workload.is_none() && (args.load.speed.is_some() || args.load.scale.is_some())
        {
            return Err("--speed and --scale go with --workload FILE".into());
        }
        if args.load.workload.is_some() && args.shard.shard.is_some_and(|s| !s.is_whole()) {
            return Err("--workload runs in one process: leave out --shard (a shard does not yet take its share of the curve's arrivals, and the fixtures a workload sizes from its log are not yet shared between shards)".into());
        }
        validate_shards(
            &args.shard,
            args.ops.op.as_deref().or(args.ops.scenario.as_deref()),
            args.ops.no_setup,
        )?;
        if args.load.ramp.is_some() && self.settled.rate.is_none() {
            return Err("--ramp goes with -R FROM..TO".into());
        }
        if self.settled.rate.is_some() {
            self.schedule().map_err(|e| e.to_string())?;
            if let Some(n) = args.load.requests
                && n < connections
            {
                return Err(format!(
                    "-n {n} is smaller than -c {connections}: with -R, give at least one request per connection (or fewer connections)"
                ).into());
            }
        }
        if let (Some(w), Some(d)) = (args.load.warmup, self.settled.duration)
            && w >= d
        {
            return Err(format!(
                "--warmup {} is not shorter than the run (-z {})",
                show_duration(w),
                show_duration(d)
            )
            .into());
        }
        if let Some(s) = &args.ops.scenario
            && s != "login-read"
        {
            return Err(format!("unknown scenario '{s}': the scenarios are login-read").into());
        }
        if args.url.is_some() && (args.ops.op.is_some() || args.ops.scenario.is_some()) {
            return Err("give either a URL or --op, not both".into());
        }
        if args.url.is_none()
            && args.ops.op.is_none()
            && args.ops.scenario.is_none()
            && self.settled.tests.is_none()
            && args.load.workload.is_none()
        {
            return Err(
                "nothing to do: give --op (see vblast --list-ops) or a URL (see vblast --help)"
                    .into(),
            );
        }
        args.op_options.check().map_err(|e| e.to_string())?;
        for h in &args.request.headers {
            parse_header(h)?;
        }
        Ok(())
    }
}

/// The flags beside the settled ones that say where the load goes.
pub struct Beside<'a> {
    /// URL mode's URL.
    pub url: Option<&'a str>,
    pub nodes: Option<NodesMode>,
    pub token_file: Option<&'a Path>,
    /// The TLS flags (None: none given).
    pub tls: Option<&'a TlsArgs>,
}

/// Where the load goes, with which credentials and TLS settings.
pub struct TargetPlan {
    pub address: String,
    pub cluster: Option<ClusterSpec>,
    pub token: Token,
    pub namespace: Option<String>,
    pub tls: Option<TlsOptions>,
}

/// Where the load goes: the settled addresses or cluster file (else `VAULT_ADDR`), the
/// token (a token file, the settled token, the cluster file's, `VAULT_TOKEN`), the
/// namespace and the TLS settings.
pub fn target(s: &Settled, b: &Beside) -> Result<TargetPlan, Error> {
    let (from_file, file_token) = match &s.cluster {
        Some(p) => crate::config::cluster::read_cluster_json(p)?,
        None => (Vec::new(), None),
    };
    let nodes = crate::config::cluster::addresses(&s.addresses, from_file, env("VAULT_ADDR"))?;
    let cluster = (b.url.is_none()
        && (nodes.len() > 1 || s.cluster.is_some() || b.nodes.is_some()))
    .then(|| ClusterSpec {
        nodes: nodes.clone(),
        mode: b.nodes.unwrap_or_default(),
    });
    let address = match b.url {
        Some(u) => u.to_string(),
        None => nodes
            .first()
            .cloned()
            .unwrap_or_else(|| "http://127.0.0.1:8200".into()),
    };
    let tls = address
        .starts_with("https://")
        .then(|| tls_options(b.tls, s.ca_cert.clone()));
    let token = match b.token_file {
        Some(path) => Some(read_token_file(path)?),
        None => s
            .token
            .clone()
            .or(file_token)
            .or_else(|| env("VAULT_TOKEN")),
    };
    Ok(TargetPlan {
        address,
        cluster,
        token: Token(token),
        namespace: s.namespace.clone().or_else(|| env("VAULT_NAMESPACE")),
        tls,
    })
}

/// The TLS settings of an https target: flags (`ca_cert` as settled with a vault-benchmark
/// `--http2` or `--http2-prior-knowledge` where vblast's HTTP/2 cannot go
/// (`net::h2::H2Refusal`): refused here, before setup creates anything, with the sentence
/// the engine would say. Each shard runs an engine of its own, so shards are no refusal.
fn refuse_h2(load: &Load, tls: bool) -> Result<(), Error> {
    let Some(h2) = &load.http2 else {
        return Ok(());
    };
    let shape = crate::net::h2::RunShape {
        shard: false,
        ..crate::vault_benchmark::settle::run_shape(load, tls)
    };
    match crate::net::h2::H2Refusal::of(h2, &shape) {
        Some(r) => Err(Error::input(r.message())),
        None => Ok(()),
    }
}

/// file) over Vault's environment variables.
fn tls_options(tls: Option<&TlsArgs>, ca_cert: Option<PathBuf>) -> TlsOptions {
    let flag = |f: fn(&TlsArgs) -> Option<PathBuf>| tls.and_then(f);
    TlsOptions {
        ca_cert: ca_cert.or_else(|| env("VAULT_CACERT").map(Into::into)),
        ca_path: flag(|t| t.ca_path.clone()).or_else(|| env("VAULT_CAPATH").map(Into::into)),
        insecure: tls.is_some_and(|t| t.insecure) || env_true("VAULT_SKIP_VERIFY"),
        client_cert: flag(|t| t.client_cert.clone())
            .or_else(|| env("VAULT_CLIENT_CERT").map(Into::into)),
        client_key: flag(|t| t.client_key.clone())
            .or_else(|| env("VAULT_CLIENT_KEY").map(Into::into)),
        server_name: tls
            .and_then(|t| t.tls_server_name.clone())
            .or_else(|| env("VAULT_TLS_SERVER_NAME")),
        resume: !tls.is_some_and(|t| t.no_tls_resume),
        engine: match (
            tls.and_then(|t| t.tls_engine),
            env("VBLAST_TLS_ENGINE").as_deref(),
        ) {
            (Some(e), _) => e,
            (None, Some("rustls")) => TlsEngine::Rustls,
            _ => TlsEngine::InPlace,
        },
    }
}

/// Checks flag combinations that clap cannot express, for a run without a `--config` file.
pub fn validate(args: &RunArgs) -> Result<(), Error> {
    let settled = crate::vault_benchmark::settle::settle(asked(args, Given::default()), None)?;
    Flags {
        args,
        settled: &settled,
        recorded: None,
    }
    .check()
}

/// Splits "Name: value". Messages never quote the header: it may hold a token.
pub fn parse_header(h: &str) -> Result<(String, String), Cause> {
    let (name, value) = h.split_once(':').ok_or_else(|| {
        "a -H header is not of the form 'Name: value' (it is not shown here: it may hold a secret)"
            .to_string()
    })?;
    let name = name.trim();
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(
            "a -H header has no valid name before its ':' (it is not shown here: it may hold a secret)"
                .into(),
        );
    }
    let value = value.trim();
    if value.bytes().any(|b| b == b'\r' || b == b'\n') {
        return Err(format!("header '{name}' has a line break in its value").into());
    }
    Ok((name.to_string(), value.to_string()))
}

/// What to print and which files to save, as the library takes it.
pub fn output(o: &OutputArgs) -> Output {
    Output {
        format: o.format,
        latency: o.latency,
        output: o.output.clone(),
        hgrm: o.hgrm.clone(),
        ab_csv: o.ab_csv.clone(),
        hlog: o.hlog.clone(),
        hlog_interval: o.hlog_interval,
        html: o.html.clone(),
        ci: o.ci,
        confidence: o.confidence,
        junit: None,
    }
}

/// How this run's shards share their fixture, as the library takes it.
pub fn sharding(args: &RunArgs) -> Sharding {
    let s = &args.shard;
    Sharding {
        shard: s.shard,
        run_id: s.run_id.clone(),
        start_at: s.start_at.clone(),
        external_setup: s.external_setup,
        shards_wait: s.shards_wait,
        shared_fixture: shared_run_id(args).map(str::to_string),
    }
}

/// The run id under which a shard of a Vault-mode run shares a fixture: a sharded run
/// (N > 1) of an operation that makes one, without --no-setup, given `--run-id`.
pub fn shared_run_id(args: &RunArgs) -> Option<&str> {
    let sharded = args.shard.shard.is_some_and(|s| !s.is_whole());
    let op = args.ops.op.as_deref().or(args.ops.scenario.as_deref())?;
    if !sharded || args.ops.no_setup || args.url.is_some() {
        return None;
    }
    let id = args.shard.run_id.as_deref()?;
    op_names(op)
        .any(|n| fixture_of(n) != Some(Fixture::None))
        .then_some(id)
}

/// Checks the shard flags against the rest of the run: a sharded run needs a run id
/// (`--run-id` or `--start-at`), `--start-at` must lie ahead, and Vault operations that
/// create fixtures share one fixture named after `--run-id` (set up and removed once, by
/// shard 0 or by `vblast setup`/`cleanup`; `session::fixtures`), or run over data set up
/// beforehand (`--no-setup`).
fn validate_shards(args: &ShardArgs, op: Option<&str>, no_setup: bool) -> Result<(), Cause> {
    if let Some(at) = &args.start_at {
        parse_start_at(at, SystemTime::now()).map_err(|e| e.to_string())?;
    }
    if args.run_id.as_deref().is_some_and(|id| {
        id.is_empty() || id.len() > 128 || id.bytes().any(|b| b.is_ascii_control())
    }) {
        return Err("--run-id must be 1 to 128 printable characters".into());
    }
    let Some(shard) = args.shard.filter(|s| !s.is_whole()) else {
        if args.external_setup || args.shards_wait.is_some() {
            return Err(
                "--external-setup and --shards-wait apply to sharded runs (--shard I/N, N > 1)"
                    .into(),
            );
        }
        return Ok(());
    };
    if args.shards_wait.is_some_and(|w| w.is_zero()) {
        return Err("--shards-wait must be longer than zero".into());
    }
    if args.run_id.is_none() && args.start_at.is_none() {
        return Err(format!(
            "--shard {shard} needs --start-at (every shard starts its clock together) or --run-id, so that `vblast report` can tell this run's shards from any other's"
        ).into());
    }
    if let Some(op) = op
        && !no_setup
    {
        // The fixture is shared (src/vault/fixture.rs): `vblast setup --run-id` makes it once.
        check_ops(op, &format!("--shard {shard}"))?;
        if let Some(name) = op_names(op).find(|n| fixture_of(n) != Some(Fixture::None))
            && args.run_id.is_none()
        {
            return Err(format!(
                "--shard {shard} with {name}: the shards share one fixture named after the run id (shard 0 makes it, or `vblast setup --run-id ID` with --external-setup): give every shard the same --run-id"
            ).into());
        }
    }
    Ok(())
}

/// How the run's fixtures are named and removed, from its flags and `VBLAST_STATE_DIR`.
fn fixture_plan(args: &RunArgs, settled: &Settled) -> FixturePlan {
    FixturePlan {
        run_id: args.shard.run_id.clone(),
        mode: Mode::Own,
        external: args.shard.external_setup,
        cleanup_timeout: args.cleanup.cleanup_timeout,
        state_dir: state_dir(),
        audit_path: settled.audit_path.clone(),
        audit_log: args.server.audit_log.clone(),
    }
}

/// Where state files go: `$VBLAST_STATE_DIR` (empty: none), else
/// `$XDG_STATE_HOME/vblast`, else `~/.local/state/vblast`.
pub fn state_dir() -> Option<PathBuf> {
    let var = |k: &str| std::env::var_os(k);
    if let Some(d) = var("VBLAST_STATE_DIR") {
        return (!d.is_empty()).then(|| PathBuf::from(d));
    }
    if let Some(d) = var("XDG_STATE_HOME").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(d).join("vblast"));
    }
    var("HOME")
        .filter(|d| !d.is_empty())
        .map(|h| PathBuf::from(h).join(".local/state/vblast"))
}

/// A body that reads as a duration with its unit ("3s", "2m", "1m30s"): most likely wrk's
/// `-d 3s` (its duration), which vblast takes as curl's `-d` (the body). A bare number is
/// left alone: it is a JSON body as well.
fn looks_like_duration(body: &str) -> bool {
    body.bytes().any(|b| b.is_ascii_alphabetic())
        && crate::config::units::parse_duration(body).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::Cli;
    use clap::Parser;

    #[test]
    fn wrk_durations_given_as_a_body_are_told_from_bodies() {
        for d in ["3s", "10s", "2m", "1m30s", "500ms", "1h"] {
            assert!(looks_like_duration(d), "{d}");
        }
        for body in ["30", "{\"a\":1}", "s", "hello", "", "3 seconds", "true"] {
            assert!(!looks_like_duration(body), "{body}");
        }
    }

    fn cli(args: &[&str]) -> RunArgs {
        let mut v = vec!["vblast"];
        v.extend_from_slice(args);
        Cli::try_parse_from(v).unwrap().run
    }

    #[test]
    fn the_defaults_are_the_libraries() {
        // vault-benchmark's run builds its Scenario with these, as `vblast run` would.
        let a = cli(&["--op", "kv-read"]);
        assert_eq!(
            a.load.connections,
            crate::config::scenario::DEFAULT_CONNECTIONS
        );
        assert_eq!(a.load.timeout, crate::config::scenario::DEFAULT_TIMEOUT);
        let s = scenario(&a, Given::default()).unwrap();
        assert_eq!(s.load.step.duration, Some(DEFAULT_DURATION));
        assert!(s.load.keepalive && s.load.pin);
        assert_eq!(a.out.hlog_interval, 1);
    }

    #[test]
    fn bad_combinations() {
        assert!(validate(&cli(&["--op", "kv-read"])).is_ok());
        assert!(validate(&cli(&["-R", "0", "--op", "kv-read"])).is_err());
        assert!(validate(&cli(&["-R", "-5", "--op", "kv-read"])).is_err());
        assert!(validate(&cli(&["-R", "1e12", "--op", "kv-read"])).is_err());
        assert!(
            validate(&cli(&[
                "-R", "10", "-c", "100", "-n", "50", "--op", "kv-read"
            ]))
            .is_err()
        );
        assert!(validate(&cli(&["--warmup", "10s", "-z", "5s", "--op", "kv-read"])).is_err());
        assert!(validate(&cli(&[])).is_err());
        assert!(validate(&cli(&["--op", "kv-read", "http://x/"])).is_err());
        assert!(validate(&cli(&["-H", "novalue", "http://x/"])).is_err());
        assert!(validate(&cli(&["-c", "0", "--op", "kv-read"])).is_err());
        assert!(validate(&cli(&["-t", "5000", "--op", "kv-read"])).is_err());
    }
}
