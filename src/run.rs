//! One run from start to end: checks, Vault setup, the engine (in this process or spread
//! over workers), cleanup, report, exit status.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::cli::{Cli, Format, env, env_true, parse_header};
use crate::engine::{self, EnginePlan, LocalGate};
use crate::procs::{self, Layout};
use crate::report::{self, Model, RunInfo, Summary};
use crate::results::Results;
use crate::schedule::Schedule;
use crate::stats::Stats;
use crate::target::Target;
use crate::template::{Piece, RequestSpec};
use crate::tls::{self, TlsOptions};
use crate::transport::io_error_text;
use crate::vault::cert;
use crate::vault::client::Client;
use crate::vault::kv;
use crate::vault::setup::{self, KvPlan, KvSetup};
use crate::workload::Operation;
use rustls::pki_types::ServerName;

/// Exit statuses.
pub const EXIT_OK: i32 = 0;
pub const EXIT_FAILED_REQUESTS: i32 = 1;
pub const EXIT_BAD_INPUT: i32 = 2;
pub const EXIT_INTERRUPTED: i32 = 130;

pub const OPERATIONS: &[&str] = &["kv-read", "kv-write", "cert-login"];

/// Everything resolved from flags and environment before anything is sent.
struct Resolved {
    target: Target,
    tls: Option<TlsOptions>,
    /// The TLS configuration built from `tls`, for setup requests and checks.
    tls_config: Option<(Arc<rustls::ClientConfig>, ServerName<'static>)>,
    token: Option<String>,
    namespace: Option<String>,
    layout: Layout,
}

fn resolve(cli: &Cli) -> Result<Resolved, String> {
    let addr = match &cli.url {
        Some(u) => u.clone(),
        None => cli
            .address
            .clone()
            .or_else(|| env("VAULT_ADDR"))
            .unwrap_or_else(|| "http://127.0.0.1:8200".into()),
    };
    let mut target = Target::parse(&addr)?;
    if cli.url.is_none() {
        target.path = "/".into();
    }
    let tls = if target.is_tls() {
        let opts = TlsOptions {
            ca_cert: cli
                .ca_cert
                .clone()
                .or_else(|| env("VAULT_CACERT").map(Into::into)),
            ca_path: cli
                .ca_path
                .clone()
                .or_else(|| env("VAULT_CAPATH").map(Into::into)),
            insecure: cli.insecure || env_true("VAULT_SKIP_VERIFY"),
            client_cert: cli
                .client_cert
                .clone()
                .or_else(|| env("VAULT_CLIENT_CERT").map(Into::into)),
            client_key: cli
                .client_key
                .clone()
                .or_else(|| env("VAULT_CLIENT_KEY").map(Into::into)),
            server_name: cli
                .tls_server_name
                .clone()
                .or_else(|| env("VAULT_TLS_SERVER_NAME")),
            resume: !cli.no_tls_resume,
        };
        Some(opts)
    } else {
        None
    };
    // Bad files and names are reported now, before anything is sent.
    let tls_config = match &tls {
        Some(opts) => Some((
            tls::client_config(opts)?,
            tls::server_name(opts, &target.host)?,
        )),
        None => None,
    };
    let token = cli.token.clone().or_else(|| env("VAULT_TOKEN"));
    let namespace = cli.namespace.clone().or_else(|| env("VAULT_NAMESPACE"));
    // Both go into request headers verbatim.
    if token.as_deref().is_some_and(has_control) {
        return Err("the token holds control characters (check VAULT_TOKEN or --token)".into());
    }
    if namespace.as_deref().is_some_and(has_control) {
        return Err("the namespace holds control characters".into());
    }
    let mut fd_limit = procs::raise_nofile();
    // For tests and experiments: pretend a process may hold fewer descriptors, so that
    // small runs are spread over worker processes too.
    if let Some(n) = env("VBLAST_PROCESS_FDS").and_then(|v| v.parse::<u64>().ok()) {
        fd_limit = fd_limit.min(n);
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let layout = Layout::plan(cli.connections, cli.threads.unwrap_or(cores), fd_limit)?;
    Ok(Resolved {
        target,
        tls,
        tls_config,
        token,
        namespace,
        layout,
    })
}

fn has_control(s: &str) -> bool {
    s.bytes().any(|b| b.is_ascii_control())
}

fn setup_client(r: &Resolved, timeout: Duration) -> Client {
    let (config, name) = match &r.tls_config {
        Some((c, n)) => (Some(c.clone()), Some(n.clone())),
        None => (None, None),
    };
    Client::new(
        &r.target,
        config,
        name,
        r.token.clone(),
        r.namespace.clone(),
        timeout,
    )
}

/// URL mode and --no-setup: the server must at least accept a connection (and a TLS
/// handshake) before the run starts.
fn check_reachable(r: &Resolved, timeout: Duration) -> Result<(), String> {
    use std::net::TcpStream;
    let addr = r.target.addr();
    let base = r.target.base();
    let tcp = TcpStream::connect_timeout(&addr, timeout.min(Duration::from_secs(10)))
        .map_err(|e| format!("cannot connect to {base}: {}", io_error_text(&e)))?;
    if let Some((config, name)) = &r.tls_config {
        let _ = tcp.set_read_timeout(Some(timeout.min(Duration::from_secs(10))));
        let _ = tcp.set_write_timeout(Some(timeout.min(Duration::from_secs(10))));
        let mut conn = rustls::ClientConnection::new(config.clone(), name.clone())
            .map_err(|e| format!("TLS setup failed: {e}"))?;
        let mut tcp = tcp;
        let host_port = base.rsplit("://").next().unwrap_or(&base);
        tls::blocking_handshake(&mut conn, &mut tcp, host_port)?;
    }
    Ok(())
}

/// Largest request body taken from a file (Vault refuses requests over 32 MiB).
const MAX_BODY_FILE: u64 = 64 * 1024 * 1024;

/// Reads `-p FILE`, refusing what is too large (or endless, like /dev/zero) to send.
fn read_body_file(p: &std::path::Path) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let cannot = |e: std::io::Error| {
        format!(
            "cannot read body file {}: {}",
            p.display(),
            io_error_text(&e)
        )
    };
    let mut body = Vec::new();
    std::fs::File::open(p)
        .and_then(|f| f.take(MAX_BODY_FILE + 1).read_to_end(&mut body))
        .map_err(cannot)?;
    if body.len() as u64 > MAX_BODY_FILE {
        return Err(format!(
            "body file {} is larger than {} MiB",
            p.display(),
            MAX_BODY_FILE >> 20
        ));
    }
    Ok(body)
}

/// The request of URL mode, like ab's: method, headers, optional body.
fn url_operation(cli: &Cli, target: &Target) -> Result<Operation, String> {
    let mut headers = Vec::new();
    for h in &cli.headers {
        headers.push(parse_header(h)?);
    }
    let body = match (&cli.data, &cli.post_file) {
        (Some(d), _) => Some(d.clone().into_bytes()),
        (None, Some(p)) => Some(read_body_file(p)?),
        (None, None) => None,
    };
    let mut method = cli.method.to_ascii_uppercase();
    if method == "GET" && body.is_some() && cli.method == "GET" {
        // ab -p posts; an explicit body with the default method means POST.
        method = "POST".into();
    }
    if !method.bytes().all(|b| b.is_ascii_alphabetic()) {
        return Err(format!("method '{}' is not valid", cli.method));
    }
    if let Some(ct) = &cli.content_type {
        headers.push(("Content-Type".into(), ct.clone()));
    } else if body.is_some()
        && !headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case("content-type"))
    {
        headers.push(("Content-Type".into(), "application/json".into()));
    }
    let mut op = Operation::new(
        "url",
        RequestSpec {
            method,
            path: vec![Piece::lit(&target.path)],
            headers,
            body: body.map(|b| vec![Piece::Lit(b)]),
        },
    );
    op.weight = 1;
    Ok(op)
}

/// What an operation set up on the server, removed after the run unless --keep.
enum Fixture {
    Kv(KvSetup),
    Cert(cert::CertSetup),
}

impl Fixture {
    fn created(&self) -> bool {
        match self {
            Fixture::Kv(s) => s.created,
            Fixture::Cert(s) => s.created,
        }
    }

    fn describe(&self) -> String {
        match self {
            Fixture::Kv(s) => format!("mount '{}' ({} secrets)", s.mount, s.secrets),
            Fixture::Cert(s) => format!("cert auth path '{}'", s.path),
        }
    }

    fn remove(&self, client: &mut Client) -> Result<(), String> {
        match self {
            Fixture::Kv(s) => setup::cleanup_kv(client, s),
            Fixture::Cert(s) => cert::cleanup(client, s),
        }
    }
}

/// The operations of the run, after the checks and the set-up they need.
fn prepare(cli: &Cli, r: &Resolved) -> Result<(Vec<Operation>, Option<Fixture>), String> {
    match cli.op.as_deref() {
        None => {
            // The request first: a bad body file is reported whatever the server's state.
            let op = url_operation(cli, &r.target)?;
            check_reachable(r, cli.timeout)?;
            Ok((vec![op], None))
        }
        Some("cert-login") => {
            let s = cert_login_setup(cli, r)?;
            Ok((vec![cert::login(&s)], Some(Fixture::Cert(s))))
        }
        Some(op) => {
            let s = if cli.no_setup {
                check_reachable(r, cli.timeout)?;
                KvSetup {
                    mount: cli
                        .mount
                        .as_deref()
                        .unwrap_or("secret")
                        .trim_matches('/')
                        .to_string(),
                    version: cli.kv_version,
                    created: false,
                    secrets: cli.secrets,
                }
            } else {
                vault_setup(cli, r)?
            };
            let ops = match op {
                "kv-write" => vec![kv::write(&s, cli.secret_size)],
                _ => vec![kv::read(&s)],
            };
            Ok((ops, Some(Fixture::Kv(s))))
        }
    }
}

/// Runs the engine in this process, or spread over worker processes.
fn run_engine(
    cli: &Cli,
    r: &Resolved,
    plan: &EnginePlan,
    stop: &AtomicBool,
) -> Result<Stats, String> {
    if stop.load(Ordering::Relaxed) {
        return Err("interrupted before the run started".to_string());
    }
    if r.layout.processes == 1 {
        let live = Live::new(cli.quiet);
        let show = |p: &[engine::Totals]| live.show(p);
        let result = engine::run(
            plan,
            stop,
            &LocalGate::new(plan.threads_here),
            live.enabled().then_some(&show as engine::ProgressFn<'_>),
        );
        live.clear();
        return result;
    }
    let plans: Vec<EnginePlan> = (0..r.layout.processes)
        .map(|p| {
            let (first, n) = r.layout.threads_of(p);
            EnginePlan {
                thread_offset: first,
                threads_here: n,
                ..plan.clone()
            }
        })
        .collect();
    procs::run_workers(&plans, stop)
}

/// Removes what the run set up (whatever happened to the run); false if that failed.
fn clean_up(cli: &Cli, r: &Resolved, fixture: Option<&Fixture>) -> bool {
    let Some(f) = fixture.filter(|f| f.created()) else {
        return true;
    };
    if cli.keep {
        eprintln!("vblast: kept {}", f.describe());
        return true;
    }
    match f.remove(&mut setup_client(r, Duration::from_secs(30))) {
        Ok(()) => true,
        Err(e) => {
            eprintln!("vblast: {e}");
            false
        }
    }
}

/// Prints the report and saves the files asked for (`--output`: the results file, a
/// superset of the JSON report); false if a file could not be written.
fn report(cli: &Cli, summary: &Summary, results: &Results) -> bool {
    let format = match cli.format {
        Format::Json => report::Format::Json,
        Format::Text => report::Format::Text {
            latency: cli.latency,
        },
    };
    let mut text = Vec::new();
    let _ = report::render(summary, format, &mut text);
    // A closed pipe (`vblast ... | head`) is not an error worth a panic.
    let _ = std::io::Write::write_all(&mut std::io::stdout().lock(), &text);
    let mut ok = true;
    if let Some(path) = &cli.output
        && let Err(e) = results.write(path)
    {
        eprintln!("vblast: {e}");
        ok = false;
    }
    if let Some(path) = &cli.hgrm {
        let mut spectrum = Vec::new();
        let _ = report::render(summary, report::Format::Hgrm, &mut spectrum);
        if let Err(e) = std::fs::write(path, spectrum) {
            eprintln!("vblast: cannot write {}: {e}", path.display());
            ok = false;
        }
    }
    ok
}

/// Runs the command line; returns the exit status.
pub fn main(cli: Cli, stop: Arc<AtomicBool>) -> i32 {
    let schedule = cli.rate.map(|rate| Schedule::Constant { rate });
    let prepared = cli
        .validate()
        .and_then(|()| match &schedule {
            Some(s) => s.validate().map_err(|e| format!("-R: {e}")),
            None => Ok(()),
        })
        .and_then(|()| match &cli.op {
            Some(op) if !OPERATIONS.contains(&op.as_str()) => Err(format!(
                "unknown operation '{op}': choose one of {}",
                OPERATIONS.join(", ")
            )),
            _ => Ok(()),
        })
        .and_then(|()| resolve(&cli))
        .and_then(|r| prepare(&cli, &r).map(|p| (r, p)));
    let (r, (ops, fixture)) = match prepared {
        Ok(p) => p,
        Err(e) => {
            eprintln!("vblast: {e}");
            return EXIT_BAD_INPUT;
        }
    };
    let op_names: Vec<String> = ops.iter().map(|o| o.name.clone()).collect();
    let plan = EnginePlan {
        target: r.target.clone(),
        tls: r.tls.clone(),
        token: r.token.clone(),
        namespace: r.namespace.clone(),
        ops,
        connections: cli.connections,
        requests: cli.requests,
        duration: cli.run_duration(),
        warmup: cli.warmup.unwrap_or_default(),
        schedule,
        keepalive: !cli.no_keepalive,
        timeout: cli.timeout,
        threads_total: r.layout.threads,
        thread_offset: 0,
        threads_here: r.layout.threads,
        pin: !cli.no_pin,
    };
    let started_at = std::time::SystemTime::now();
    let result = run_engine(&cli, &r, &plan, &stop);
    let interrupted = stop.load(Ordering::Relaxed);
    let mut code = if clean_up(&cli, &r, fixture.as_ref()) {
        EXIT_OK
    } else {
        EXIT_BAD_INPUT
    };
    let stats = match result {
        Ok(s) => s,
        Err(e) => {
            eprintln!("vblast: {e}");
            return EXIT_BAD_INPUT;
        }
    };
    let info = RunInfo {
        target: if cli.url.is_some() {
            format!("{}{}", r.target.base(), r.target.path)
        } else {
            r.target.base()
        },
        operation: op_names.join(","),
        connections: cli.connections,
        threads: r.layout.threads,
        processes: r.layout.processes,
        model: if cli.rate.is_some() {
            Model::Open
        } else {
            Model::Closed
        },
        target_rate: cli.rate,
        keepalive: !cli.no_keepalive,
        warmup_s: cli.warmup.unwrap_or_default().as_secs_f64(),
        interrupted,
    };
    // The scenario (the run as data, redacted) is filled in once runs are described as one.
    let results = Results::build(info, stats, op_names, serde_json::Value::Null, started_at);
    let summary = results.summary();
    if !report(&cli, &summary, &results) {
        code = EXIT_BAD_INPUT;
    }
    if interrupted {
        return EXIT_INTERRUPTED;
    }
    if code == EXIT_OK && summary.failed > 0 && !cli.allow_errors {
        code = EXIT_FAILED_REQUESTS;
    }
    if code == EXIT_OK && summary.requests == 0 && !cli.allow_errors {
        eprintln!("vblast: no request completed");
        code = EXIT_FAILED_REQUESTS;
    }
    code
}

/// cert-login: needs https and a client certificate; enables cert auth at a fresh path
/// trusting the client certificate's CA (`--no-setup`: the existing path --mount, default
/// "cert").
fn cert_login_setup(cli: &Cli, r: &Resolved) -> Result<cert::CertSetup, String> {
    let Some(opts) = r.tls.as_ref() else {
        return Err(format!(
            "cert-login needs an https:// address (mutual TLS), not {}",
            r.target.base()
        ));
    };
    let Some(client_cert) = opts.client_cert.as_ref() else {
        return Err(
            "cert-login needs a client certificate and key: --client-cert/--client-key or VAULT_CLIENT_CERT/VAULT_CLIENT_KEY"
                .into(),
        );
    };
    if cli.no_setup {
        check_reachable(r, cli.timeout)?;
        return Ok(cert::existing(cli.mount.as_deref().unwrap_or("cert")));
    }
    let ca_pem = cert::read_ca_pem(cli.client_ca.as_ref().unwrap_or(client_cert))?;
    let mut client = setup_client(r, cli.timeout);
    setup::preflight(&mut client)?;
    cert::prepare(&mut client, &ca_pem)
}

/// The live progress line on stderr, when stderr is a terminal (not with --quiet).
struct Live {
    enabled: bool,
    start: std::time::Instant,
    last: std::sync::Mutex<(std::time::Instant, u64)>,
}

impl Live {
    fn new(quiet: bool) -> Live {
        use std::io::IsTerminal;
        let now = std::time::Instant::now();
        Live {
            enabled: !quiet && std::io::stderr().is_terminal(),
            start: now,
            last: std::sync::Mutex::new((now, 0)),
        }
    }

    fn enabled(&self) -> bool {
        self.enabled
    }

    fn show(&self, threads: &[engine::Totals]) {
        let requests: u64 = threads.iter().map(|p| p.requests).sum();
        let ok: u64 = threads.iter().map(|p| p.ok).sum();
        let Ok(mut last) = self.last.lock() else {
            return;
        };
        let now = std::time::Instant::now();
        let dt = now.duration_since(last.0).as_secs_f64();
        if dt < 0.9 {
            return;
        }
        let rate = (requests.saturating_sub(last.1)) as f64 / dt;
        *last = (now, requests);
        eprint!(
            "\r\x1b[2K  {:>5.0}s  {requests} requests  {rate:.0} req/s  {} failed",
            now.duration_since(self.start).as_secs_f64(),
            requests - ok
        );
    }

    fn clear(&self) {
        if self.enabled {
            eprint!("\r\x1b[2K");
        }
    }
}

/// Preflight and the KV fixture for a Vault operation.
fn vault_setup(cli: &Cli, r: &Resolved) -> Result<KvSetup, String> {
    let mut client = setup_client(r, cli.timeout);
    setup::preflight(&mut client)?;
    let plan = KvPlan {
        mount: cli.mount.clone(),
        version: cli.kv_version,
        secrets: cli.secrets,
        secret_size: cli.secret_size,
        seed: true,
    };
    let make = || setup_client(r, cli.timeout);
    setup::prepare_kv(&make, &plan)
}
