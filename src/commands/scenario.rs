//! Flags into library values, once: the `Scenario` a run's flags (and Vault's environment
//! variables) describe, checked into one clear message per bad input, and the other values
//! the commands hand the library (what to print and save, how shards share a fixture).

use std::time::{Duration, SystemTime};

use super::{Given, env, env_true};
use crate::cli::shards::ShardArgs;
use crate::cli::{OutputArgs, RunArgs};
use crate::config::scenario::{Body, Load, Scenario, Token, UrlRequest, Workload};
use crate::config::schedule::Schedule;
use crate::config::spread::{Sharding, parse_start_at};
use crate::config::units::show_duration;
use crate::error::Error;
use crate::net::tls::{TlsEngine, TlsOptions};
use crate::results::deliver::{Format, MARKDOWN_ONLY_FOR_LIST_OPS, Output};
use crate::session::fixtures::{check_ops, op_names};
use crate::vault::ops::{Fixture, fixture_of};

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

/// The run these flags (and Vault's environment variables) describe, checked.
pub fn scenario(args: &RunArgs, given: Given) -> Result<Scenario, Error> {
    if let Some(path) = &args.config {
        return scenario(
            &super::config_file::merge(args, given, path).map_err(Error::input)?,
            given,
        );
    }
    validate(args).map_err(Error::input)?;
    let (from_file, file_token) = match &args.cluster.cluster {
        Some(p) => crate::config::cluster::read_cluster_json(p)?,
        None => (Vec::new(), None),
    };
    let nodes =
        crate::config::cluster::addresses(&args.target.address, from_file, env("VAULT_ADDR"))?;
    let cluster = (args.url.is_none()
        && (nodes.len() > 1 || args.cluster.cluster.is_some() || args.cluster.nodes.is_some()))
    .then(|| crate::config::cluster::ClusterSpec {
        nodes: nodes.clone(),
        mode: args.cluster.nodes.unwrap_or_default(),
    });
    let address = match &args.url {
        Some(u) => u.clone(),
        None => nodes
            .first()
            .cloned()
            .unwrap_or_else(|| "http://127.0.0.1:8200".into()),
    };
    let tls = address.starts_with("https://").then(|| tls_options(args));
    let token = match &args.target.token_file {
        Some(path) => Some(read_token_file(path)?),
        None => args
            .target
            .token
            .clone()
            .or(file_token)
            .or_else(|| env("VAULT_TOKEN")),
    };
    let workload = workload(args)?;
    Ok(Scenario {
        address,
        token: Token(token),
        namespace: args
            .target
            .namespace
            .clone()
            .or_else(|| env("VAULT_NAMESPACE")),
        tls,
        load: load(args)?,
        workload,
        keep: args.ops.keep,
        no_setup: args.ops.no_setup,
        cluster,
        fixtures: super::fixture::plan(args),
    })
}

/// The TLS settings of an https target: flags over Vault's environment variables.
fn tls_options(args: &RunArgs) -> TlsOptions {
    TlsOptions {
        ca_cert: args
            .tls
            .ca_cert
            .clone()
            .or_else(|| env("VAULT_CACERT").map(Into::into)),
        ca_path: args
            .tls
            .ca_path
            .clone()
            .or_else(|| env("VAULT_CAPATH").map(Into::into)),
        insecure: args.tls.insecure || env_true("VAULT_SKIP_VERIFY"),
        client_cert: args
            .tls
            .client_cert
            .clone()
            .or_else(|| env("VAULT_CLIENT_CERT").map(Into::into)),
        client_key: args
            .tls
            .client_key
            .clone()
            .or_else(|| env("VAULT_CLIENT_KEY").map(Into::into)),
        server_name: args
            .tls
            .tls_server_name
            .clone()
            .or_else(|| env("VAULT_TLS_SERVER_NAME")),
        resume: !args.tls.no_tls_resume,
        engine: match (args.tls.tls_engine, env("VBLAST_TLS_ENGINE").as_deref()) {
            (Some(e), _) => e,
            (None, Some("rustls")) => TlsEngine::Rustls,
            _ => TlsEngine::InPlace,
        },
    }
}

/// What the run sends: the operations of a vault-benchmark file, `--op` (or
/// `--scenario`) with the operations' options, or URL mode's request.
fn workload(args: &RunArgs) -> Result<Workload, Error> {
    Ok(match args.ops.op.as_ref().or(args.ops.scenario.as_ref()) {
        _ if args.preset_ops.is_some() => {
            Workload::Vault(args.preset_ops.clone().unwrap_or_default())
        }
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
fn load(args: &RunArgs) -> Result<Load, Error> {
    Ok(Load {
        connections: args.load.connections,
        requests: args.load.requests,
        duration: run_duration(args),
        warmup: args.load.warmup.unwrap_or_default(),
        schedule: schedule(args).map_err(Error::input)?,
        keepalive: !args.load.no_keepalive,
        timeout: args.load.timeout,
        threads: args.load.threads,
        pin: !args.load.no_pin,
        respect_retry_after: args.load.respect_retry_after,
        no_forwarding: args.load.no_forwarding,
        follow_redirects: args.load.follow_redirects,
        spread: crate::config::spread::Spread {
            shard: args.shard.shard.unwrap_or_default(),
            start_at: args.shard.start_at.clone(),
            source_addrs: crate::net::source_addrs::resolve(args.source.source_addrs.as_deref())
                .map_err(Error::input)?,
        },
    })
}

/// The open model's schedule from -R (and --ramp), checked; None in the closed model.
pub fn schedule(
    args: &RunArgs,
) -> Result<Option<Schedule>, crate::config::schedule::ScheduleError> {
    args.load
        .rate
        .as_deref()
        .map(|r| Schedule::from_flags(r, args.load.ramp))
        .transpose()
}

/// Checks flag combinations that clap cannot express.
pub fn validate(args: &RunArgs) -> Result<(), String> {
    if args.out.format == Format::Markdown {
        return Err(MARKDOWN_ONLY_FOR_LIST_OPS.into());
    }
    if args.load.connections == 0 {
        return Err("-c must be at least 1".into());
    }
    if args.load.requests == Some(0) {
        return Err("-n must be at least 1".into());
    }
    if args.load.duration == Some(Duration::ZERO) {
        return Err("-z must be longer than zero".into());
    }
    if args.load.threads == Some(0) {
        return Err("-t must be at least 1".into());
    }
    if args.load.threads.is_some_and(|t| t > MAX_THREADS) {
        return Err(format!(
            "-t {} is more event-loop threads than vblast runs (at most {MAX_THREADS})",
            args.load.threads.unwrap_or(0)
        ));
    }
    if args.load.timeout.is_zero() {
        return Err("--timeout must be longer than zero".into());
    }
    validate_shards(
        &args.shard,
        args.ops.op.as_deref().or(args.ops.scenario.as_deref()),
        args.ops.no_setup,
    )?;
    if args.load.ramp.is_some() && args.load.rate.is_none() {
        return Err("--ramp goes with -R FROM..TO".into());
    }
    if args.load.rate.is_some() {
        schedule(args).map_err(|e| e.to_string())?;
        if let Some(n) = args.load.requests
            && n < args.load.connections
        {
            return Err(format!(
                "-n {n} is smaller than -c {}: with -R, give at least one request per connection (or fewer connections)",
                args.load.connections
            ));
        }
    }
    if let (Some(w), Some(d)) = (args.load.warmup, args.load.duration)
        && w >= d
    {
        return Err(format!(
            "--warmup {} is not shorter than the run (-z {})",
            show_duration(w),
            show_duration(d)
        ));
    }
    if let Some(s) = &args.ops.scenario
        && s != "login-read"
    {
        return Err(format!(
            "unknown scenario '{s}': the scenarios are login-read"
        ));
    }
    if args.url.is_some() && (args.ops.op.is_some() || args.ops.scenario.is_some()) {
        return Err("give either a URL or --op, not both".into());
    }
    if args.url.is_none()
        && args.ops.op.is_none()
        && args.ops.scenario.is_none()
        && args.preset_ops.is_none()
    {
        return Err(
            "nothing to do: give --op (see vblast --list-ops) or a URL (see vblast --help)".into(),
        );
    }
    args.op_options.check().map_err(|e| e.to_string())?;
    for h in &args.request.headers {
        parse_header(h)?;
    }
    Ok(())
}

/// The run length: -z as given; 10 s when neither -n nor -z is.
pub fn run_duration(args: &RunArgs) -> Option<Duration> {
    match (args.load.requests, args.load.duration) {
        (None, None) => Some(Duration::from_secs(10)),
        (_, d) => d,
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
fn validate_shards(args: &ShardArgs, op: Option<&str>, no_setup: bool) -> Result<(), String> {
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
        ));
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
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::Cli;
    use clap::Parser;

    fn cli(args: &[&str]) -> RunArgs {
        let mut v = vec!["vblast"];
        v.extend_from_slice(args);
        Cli::try_parse_from(v).unwrap().run
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
