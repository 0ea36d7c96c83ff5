//! How much load, for how long, over which connections and threads.

use std::time::Duration;

use clap::{Args, ValueEnum};

use crate::config::units::parse_duration;

/// A count (`-c`, `-n`, `-t`): a whole number, 0 or more. A negative one is read as the
/// flag's value and refused here, not taken for a flag of its own (clap's tip would be
/// to pass it after `--`).
fn count(v: &str) -> Result<u64, String> {
    v.parse()
        .map_err(|_| format!("{v} is not a count: give a whole number, 1 or more"))
}

fn count_usize(v: &str) -> Result<usize, String> {
    count(v).map(|n| n as usize)
}

/// `-c`, `-n`, `-z`, `-t`, `-R`, `--ramp`, `--workload` (`--speed`, `--scale`), `--warmup`, keep-alive, timeout, retries, forwarding, redirects, pinning.
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Load")]
pub struct LoadArgs {
    /// Connections (concurrency).
    #[arg(short = 'c', long = "concurrency", visible_alias = "connections", default_value_t = 10,
          allow_negative_numbers = true, value_parser = count)]
    pub connections: u64,

    /// Total requests; with -z, whichever is reached first ends the run.
    #[arg(short = 'n', long = "requests", allow_negative_numbers = true, value_parser = count)]
    pub requests: Option<u64>,

    /// Run duration (e.g. 30s, 2m, 1h); default 10s when -n is not given.
    #[arg(short = 'z', long = "duration", value_parser = parse_duration)]
    pub duration: Option<Duration>,

    /// Event-loop threads in total (default: one per available core).
    #[arg(short = 't', long, allow_negative_numbers = true, value_parser = count_usize)]
    pub threads: Option<usize>,

    /// Open model: the total target rate, requests per second: 2000; a ramp 100..5000 (with
    /// --ramp); or steps 100:10s,500:10s,1000:20s (the last rate is held after them).
    #[arg(short = 'R', long, allow_hyphen_values = true)]
    pub rate: Option<String>,

    /// With -R FROM..TO: how long the rate takes to ramp from FROM to TO (then held).
    #[arg(long, value_parser = parse_duration)]
    pub ramp: Option<Duration>,

    /// Run a workload file (`vblast profile --workload`): its recorded mix at its recorded
    /// rate curve (open model), with setup and cleanup as for --op. docs/production-load.md.
    #[arg(long, value_name = "FILE",
          conflicts_with_all = ["op", "scenario", "config", "rate", "ramp", "url"])]
    pub workload: Option<std::path::PathBuf>,

    /// With --workload: time compressed by this factor (10: ten seconds of the curve in one).
    #[arg(
        long,
        value_name = "F",
        requires = "workload",
        allow_hyphen_values = true
    )]
    pub speed: Option<String>,

    /// With --workload: the rate at every instant multiplied by this factor (2: twice the
    /// recorded traffic); `vblast sweep`: the range of factors to sweep, FROM..TO.
    #[arg(
        long,
        value_name = "F",
        requires = "workload",
        allow_hyphen_values = true
    )]
    pub scale: Option<String>,

    /// Load run first and left out of every statistic.
    #[arg(long, value_parser = parse_duration)]
    pub warmup: Option<Duration>,

    /// A new connection per request (ab without -k); connect time is reported separately.
    #[arg(long)]
    pub no_keepalive: bool,

    /// Per-request timeout.
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    pub timeout: Duration,

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

    /// Do not pin event-loop threads to cores.
    #[arg(long)]
    pub no_pin: bool,

    /// The clock that ends each request's latency: kernel (the kernel's receive stamp of
    /// the segment that completed the response, by SO_TIMESTAMPING; the report gives both
    /// clocks and their difference), kernel-tx (the same, and each request's send is the
    /// kernel's TX stamp of its last byte instead of the instant before the write; opt-in,
    /// it costs more CPU per request) or user (the event loop's clock once it has read the
    /// response; no kernel figures). Where the socket refuses timestamps, the run says so
    /// once and uses the user clock (kernel-tx refused: the kernel clock with user-space
    /// sends). docs/reports.md.
    #[arg(long, value_enum, default_value_t = ClockArg::Kernel)]
    pub clock: ClockArg,

    /// Speak HTTP/2: h2 negotiated by ALPN over TLS (exit 2, naming what the server
    /// chose, when it does not offer h2). docs/http2.md.
    #[arg(long)]
    pub http2: bool,

    /// Speak HTTP/2 on plain TCP without asking (h2c with prior knowledge, as nginx's
    /// `listen ... http2` accepts; Go's server does not).
    #[arg(long, conflicts_with = "http2")]
    pub http2_prior_knowledge: bool,

    /// With --http2: a server that does not offer h2 is loaded over HTTP/1.1, with a note.
    #[arg(long, requires = "http2")]
    pub http2_fallback: bool,

    /// HTTP/2: concurrent streams per connection (h2load's -m; default 1), capped by the
    /// server's SETTINGS_MAX_CONCURRENT_STREAMS (the report says what it allowed).
    #[arg(long, value_name = "N")]
    pub streams: Option<u32>,

    /// With --config: HTTP/1.1 where the file's run would speak HTTP/2 to an https://
    /// address as vault-benchmark does (vault-benchmark's -disable_http2).
    #[arg(long = "http1.1", conflicts_with_all = ["http2", "http2_prior_knowledge"])]
    pub http1_1: bool,
}

/// `--clock`'s values.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClockArg {
    User,
    Kernel,
    KernelTx,
}
