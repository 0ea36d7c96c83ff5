//! `vblast ab ...`: ApacheBench 2.4's command line with ab's meaning, parsed as ab parses it
//! (getopt: single letters, clustered, values attached `-n4000` or separate `-n 4000`, a
//! value taken verbatim even when it starts with `-`, options end at the first non-option,
//! exactly one URL), checked as ab checks it, and mapped onto a `Scenario`.
//!
//! Hand-written rather than clap: ab's getopt takes `-H -x` as the header `-x`, stops at
//! the URL (no option after it), lets a later `-n` undo `-t`'s implied `-n 50000` and not an
//! earlier one, and refuses with its own words; clap's short flags differ on each of these
//! (permutation, hyphen values, its own messages), and the getopt loop is some 60 lines.

use std::path::PathBuf;
use std::time::Duration;

use base64::Engine as _;

use super::report::AbStyle;
use crate::commands::env;
use crate::commands::scenario::parse_header;
use crate::config::scenario::{Body, Load, Scenario, StepPlan, Token, UrlRequest, Workload};
use crate::net::tls::{TlsEngine, TlsOptions};

/// ab 2.4's option letters; a ':' follows a letter that takes a value.
const OPTSTRING: &str = "n:c:t:s:b:T:p:u:v:lrkVhwiIx:y:z:C:H:P:A:g:X:de:SqB:m:Z:f:E:";

/// ab's request count for a time-limited run (`-t` implies `-n 50000`).
pub const TIMED_REQUESTS: u64 = 50_000;

/// What ab does that vblast does not, and why: refused with this reason.
fn unsupported(letter: char) -> Option<&'static str> {
    Some(match letter {
        'X' => "a proxy (vblast connects to the target itself)",
        'P' => "proxy authentication (vblast does not go through a proxy)",
        'w' | 'x' | 'y' | 'z' => {
            "ab's HTML table output (use --format ab of `vblast run`, or json)"
        }
        'g' => {
            "gnuplot per-request data (vblast keeps histograms, not each request: see --hgrm and --hlog of `vblast run`)"
        }
        'b' => "setting the TCP window size",
        'B' => "binding to a local address",
        'Z' => "choosing cipher suites (rustls offers its own safe set)",
        'f' => "choosing the TLS protocol version (rustls negotiates TLS 1.2 or 1.3)",
        'I' => "turning SNI off (vblast sends SNI for host names, never for IP addresses)",
        _ => return None,
    })
}

/// How the request's method was set, in ab's terms (`-i`, `-p`, `-u` exclude each other).
#[derive(Clone, Debug, PartialEq)]
enum AbMethod {
    Unset,
    Head,
    Post,
    Put,
    Custom(String),
}

/// The options of one `vblast ab` command line.
#[derive(Clone, Debug, PartialEq)]
pub struct AbOptions {
    pub url: String,
    pub requests: u64,
    pub concurrency: u64,
    /// `-t`: seconds (0: no limit).
    pub timelimit: u64,
    /// `-s`: seconds (ab's default 30).
    pub timeout: u64,
    pub keepalive: bool,
    /// `-H`, `-A` and `-C` as headers, in ab's order (`-H` lines, then Cookie, then Authorization).
    pub headers: Vec<(String, String)>,
    pub method: String,
    pub body: Option<PathBuf>,
    pub content_type: Option<String>,
    pub variable_length: bool,
    pub csv: Option<PathBuf>,
    pub quiet: bool,
    pub no_confidence: bool,
    pub no_percentiles: bool,
    /// `-r`: do not stop on socket receive errors (vblast never does; see `--ab-exit`).
    pub recv_errors_ok: bool,
    pub verbosity: i64,
    /// `-E`: client certificate chain and private key in one PEM file.
    pub client_cert: Option<PathBuf>,
    /// `--ab-exit`: ab's exit statuses instead of vblast's.
    pub ab_exit: bool,
    /// vblast's `--threshold` (repeatable), `--threshold-abort`, `--threshold-grace`,
    /// `--junit` (docs/thresholds.md).
    pub thresholds: Vec<crate::threshold::Threshold>,
    pub threshold_abort: bool,
    pub threshold_grace: std::time::Duration,
    pub junit: Option<PathBuf>,
}

/// vblast's own long options of `vblast ab` that take a value.
const VALUED: [&str; 3] = ["--threshold", "--threshold-grace", "--junit"];

impl AbOptions {
    /// Takes one of vblast's long options (`--threshold X` or `--threshold=X`; `value` is
    /// the argument after it); returns how many arguments it used, or None when `arg` is not
    /// one of them.
    fn long(&mut self, arg: &str, value: Option<&String>) -> Result<Option<usize>, AbError> {
        if arg == "--threshold-abort" {
            self.threshold_abort = true;
            return Ok(Some(1));
        }
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) => (n, Some(v.to_string())),
            None => (arg, None),
        };
        if !VALUED.contains(&name) {
            return Ok(None);
        }
        let used = if inline.is_some() { 1 } else { 2 };
        let Some(v) = inline.or_else(|| value.cloned()) else {
            return Err(AbError::Usage(format!("{name} takes a value")));
        };
        match name {
            "--threshold" => self.thresholds.push(
                crate::threshold::Threshold::parse(&v)
                    .map_err(|e| AbError::Unsupported(e.to_string()))?,
            ),
            "--threshold-grace" => {
                self.threshold_grace = crate::config::units::parse_duration(&v)
                    .map_err(|e| AbError::Unsupported(format!("--threshold-grace: {e}")))?;
            }
            _ => self.junit = Some(PathBuf::from(v)),
        }
        Ok(Some(used))
    }
}

/// What the command line asks for.
#[derive(Debug, PartialEq)]
pub enum AbCommand {
    Help,
    Version,
    Run(Box<AbOptions>),
}

/// Why a command line was refused.
#[derive(Debug, PartialEq)]
pub enum AbError {
    /// ab's own usage errors (ab exits 22, EINVAL, and prints its usage).
    Usage(String),
    /// An ab option vblast does not do.
    Unsupported(String),
}

impl AbError {
    pub fn message(&self) -> &str {
        match self {
            AbError::Usage(m) | AbError::Unsupported(m) => m,
        }
    }
}

/// ab's `atoi` with vblast's strictness: a whole number, or a message naming the option.
fn number(letter: char, value: &str) -> Result<i64, AbError> {
    value.trim().parse::<i64>().map_err(|_| {
        AbError::Usage(format!(
            "-{letter} {value}: not a whole number (ab: -{letter} takes a number)"
        ))
    })
}

/// Parses `vblast ab`'s arguments (those after `ab`).
pub fn parse(args: &[String]) -> Result<AbCommand, AbError> {
    let mut reading = Reading {
        o: AbOptions::ab_defaults(),
        method: AbMethod::Unset,
        cookie: None,
        auth: Vec::new(),
    };
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        if arg == "--ab-exit" {
            reading.o.ab_exit = true;
            i += 1;
            continue;
        }
        if arg == "--" {
            i += 1;
            break;
        }
        if arg == "--help" {
            return Ok(AbCommand::Help);
        }
        if !arg.starts_with('-') || arg == "-" {
            break;
        }
        if arg.starts_with("--") {
            if let Some(used) = reading.o.long(arg, args.get(i + 1))? {
                i += used;
                continue;
            }
            return Err(AbError::Usage(format!(
                "unknown option {arg} (vblast ab takes ab's single-letter options, --ab-exit, --threshold, --threshold-abort, --threshold-grace and --junit)"
            )));
        }
        let letters: Vec<char> = arg[1..].chars().collect();
        let mut j = 0;
        while j < letters.len() {
            let c = letters[j];
            j += 1;
            let Some(at) = OPTSTRING.find(c).filter(|_| c != ':') else {
                return Err(AbError::Usage(format!("illegal option -- {c}")));
            };
            let takes_value = OPTSTRING[at + c.len_utf8()..].starts_with(':');
            let value = if takes_value {
                let rest: String = letters[j..].iter().collect();
                j = letters.len();
                if !rest.is_empty() {
                    Some(rest)
                } else if i + 1 < args.len() {
                    i += 1;
                    Some(args[i].clone())
                } else {
                    return Err(AbError::Usage(format!(
                        "option requires an argument -- {c}"
                    )));
                }
            } else {
                None
            };
            if let Some(why) = unsupported(c) {
                return Err(AbError::Unsupported(format!(
                    "ab's -{c} is not supported by vblast ab: {why}"
                )));
            }
            if let Some(done) = reading.option(c, value.unwrap_or_default())? {
                return Ok(done);
            }
        }
        i += 1;
    }
    // `--ab-exit` after the URL is taken too (it is vblast's, not ab's).
    let mut rest: Vec<&String> = args[i..].iter().collect();
    if rest.last().is_some_and(|a| *a == "--ab-exit") {
        reading.o.ab_exit = true;
        rest.pop();
    }
    reading.finish(&rest)
}

impl AbOptions {
    /// ab's defaults: one request, one connection, a 30 s timeout.
    fn ab_defaults() -> AbOptions {
        AbOptions {
            url: String::new(),
            requests: 1,
            concurrency: 1,
            timelimit: 0,
            timeout: 30,
            keepalive: false,
            headers: Vec::new(),
            method: String::new(),
            body: None,
            content_type: None,
            variable_length: false,
            csv: None,
            quiet: false,
            no_confidence: false,
            no_percentiles: false,
            recv_errors_ok: false,
            verbosity: 1,
            client_cert: None,
            ab_exit: false,
            thresholds: Vec::new(),
            threshold_abort: false,
            threshold_grace: std::time::Duration::ZERO,
            junit: None,
        }
    }
}

/// A command line being read: the options so far, and what ab sets apart until the end
/// (the method, the cookie and the basic-auth headers go after the `-H` headers).
struct Reading {
    o: AbOptions,
    method: AbMethod,
    cookie: Option<String>,
    auth: Vec<(String, String)>,
}

impl Reading {
    /// Takes one option letter and its value; `Some` when the option ends the parse
    /// (`-h`, `-V`).
    fn option(&mut self, c: char, v: String) -> Result<Option<AbCommand>, AbError> {
        match c {
            'n' => {
                let n = number(c, &v)?;
                if n <= 0 {
                    return Err(AbError::Usage("Invalid number of requests".into()));
                }
                self.o.requests = n as u64;
            }
            'c' => {
                let n = number(c, &v)?;
                if n <= 0 {
                    return Err(AbError::Usage(format!(
                        "-c {n}: the concurrency must be at least 1"
                    )));
                }
                self.o.concurrency = n as u64;
            }
            't' => {
                let n = number(c, &v)?;
                if n < 0 {
                    return Err(AbError::Usage("Invalid negative timelimit".into()));
                }
                self.o.timelimit = n as u64;
                // ab 2.4: -t sizes the run at 50000 requests; a later -n overrides it.
                self.o.requests = TIMED_REQUESTS;
            }
            's' => {
                let n = number(c, &v)?;
                if n <= 0 {
                    return Err(AbError::Usage(format!(
                        "-s {n}: the timeout must be at least 1 second"
                    )));
                }
                self.o.timeout = n as u64;
            }
            'k' => self.o.keepalive = true,
            'H' => {
                let h = parse_header(&v).map_err(|e| AbError::Usage(e.to_string()))?;
                self.o.headers.push(h);
            }
            'C' => self.cookie = Some(v),
            'A' => {
                let creds = v.trim_start();
                let b64 = base64::engine::general_purpose::STANDARD.encode(creds);
                self.auth
                    .push(("Authorization".into(), format!("Basic {b64}")));
            }
            'i' => {
                if self.method != AbMethod::Unset {
                    return Err(AbError::Usage("Cannot mix HEAD with other methods".into()));
                }
                self.method = AbMethod::Head;
            }
            'p' | 'u' => {
                if self.method != AbMethod::Unset {
                    let what = if c == 'p' { "POST" } else { "PUT" };
                    return Err(AbError::Usage(format!(
                        "Cannot mix {what} with other methods"
                    )));
                }
                self.method = if c == 'p' {
                    AbMethod::Post
                } else {
                    AbMethod::Put
                };
                self.o.body = Some(PathBuf::from(v));
            }
            'm' => {
                if v.is_empty() || !v.bytes().all(|b| b.is_ascii_alphabetic()) {
                    return Err(AbError::Usage(format!("-m {v}: not a method name")));
                }
                self.method = AbMethod::Custom(v);
            }
            'T' => self.o.content_type = Some(v),
            'l' => self.o.variable_length = true,
            'e' => self.o.csv = Some(PathBuf::from(v)),
            'q' => self.o.quiet = true,
            'S' => self.o.no_confidence = true,
            'd' => self.o.no_percentiles = true,
            'r' => self.o.recv_errors_ok = true,
            'v' => self.o.verbosity = number(c, &v)?,
            'E' => self.o.client_cert = Some(PathBuf::from(v)),
            'h' => return Ok(Some(AbCommand::Help)),
            'V' => return Ok(Some(AbCommand::Version)),
            _ => return Err(AbError::Usage(format!("illegal option -- {c}"))),
        }
        Ok(None)
    }

    /// The operands after the options (exactly one URL), and the checks across options.
    fn finish(mut self, rest: &[&String]) -> Result<AbCommand, AbError> {
        if rest.len() != 1 {
            return Err(AbError::Usage(if rest.is_empty() {
                "wrong number of arguments: give the URL after the options".into()
            } else {
                format!(
                    "wrong number of arguments: {} after the options (ab takes its options before the URL, and one URL)",
                    rest.len()
                )
            }));
        }
        self.o.url = url(rest[0])?;
        if self.o.concurrency > self.o.requests {
            return Err(AbError::Usage(
                "Cannot use concurrency level greater than total number of requests".into(),
            ));
        }
        self.o.method = match self.method {
            AbMethod::Unset => "GET".into(),
            AbMethod::Head => "HEAD".into(),
            AbMethod::Post => "POST".into(),
            AbMethod::Put => "PUT".into(),
            AbMethod::Custom(m) => m.to_ascii_uppercase(),
        };
        if let Some(c) = self.cookie {
            self.o.headers.push(("Cookie".into(), c));
        }
        self.o.headers.extend(self.auth);
        Ok(AbCommand::Run(Box::new(self.o)))
    }
}

/// The headers sent: ab's own before the given ones (`-H`, then `-C`, `-A`), each unless
/// a `-H` names it: `User-Agent: ApacheBench/2.3` and `Accept: */*`. The server then
/// parses behind `vblast ab` what it parses behind ab (a header costs nginx hundreds of
/// instructions per request: docs/benchmarks.md).
fn request_headers(given: &[(String, String)]) -> Vec<(String, String)> {
    let named = |name: &str| given.iter().any(|(n, _)| n.eq_ignore_ascii_case(name));
    [("User-Agent", "ApacheBench/2.3"), ("Accept", "*/*")]
        .into_iter()
        .filter(|(n, _)| !named(n))
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .chain(given.iter().cloned())
        .collect()
}

/// ab's URL: `[http[s]://]host[:port]/path`, the path required.
fn url(text: &str) -> Result<String, AbError> {
    let full = if text.contains("://") {
        text.to_string()
    } else {
        format!("http://{text}")
    };
    let (scheme, rest) = full.split_once("://").unwrap_or(("", ""));
    let ok_scheme = scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https");
    match rest.find('/') {
        Some(at) if ok_scheme && at > 0 => Ok(full),
        _ => Err(AbError::Usage(format!(
            "invalid URL: {text} (ab's form: [http[s]://]hostname[:port]/path)"
        ))),
    }
}

impl AbOptions {
    /// The run these options describe. ab sends only what its options say: no token from
    /// VAULT_TOKEN, and no certificate verification (ab verifies none).
    pub fn scenario(&self) -> Scenario {
        let https = self
            .url
            .get(..8)
            .is_some_and(|s| s.eq_ignore_ascii_case("https://"));
        let tls = https.then(|| TlsOptions {
            ca_cert: None,
            ca_path: None,
            insecure: true,
            client_cert: self.client_cert.clone(),
            client_key: self.client_cert.clone(),
            server_name: None,
            // ab makes a full handshake on every connection.
            resume: false,
            engine: match env("VBLAST_TLS_ENGINE").as_deref() {
                Some("rustls") => TlsEngine::Rustls,
                _ => TlsEngine::InPlace,
            },
        });
        let body = self.body.clone().map(Body::File);
        Scenario {
            address: self.url.clone(),
            token: Token(None),
            namespace: None,
            cluster: None,
            tls,
            load: Load {
                step: StepPlan {
                    requests: Some(self.requests),
                    duration: (self.timelimit > 0).then(|| Duration::from_secs(self.timelimit)),
                    ..StepPlan::default()
                },
                keepalive: self.keepalive,
                timeout: Duration::from_secs(self.timeout),
                // ab's figures on ab's clock: the user-space clock read after the read
                // (its report has no room for a second clock; docs/reports.md).
                clock: crate::net::stamp::Clock::User,
                ..Load::closed(self.concurrency)
            },
            workload: Workload::Url(UrlRequest {
                method: self.method.clone(),
                headers: request_headers(&self.headers),
                // ab's default Content-Type for a body.
                content_type: body
                    .is_some()
                    .then(|| self.content_type.clone().unwrap_or("text/plain".into())),
                body,
            }),
            keep: false,
            no_setup: true,
            fixtures: Default::default(),
            differences: Vec::new(),
        }
    }

    /// How the ab report is laid out for these options.
    pub fn style(&self) -> AbStyle {
        AbStyle {
            variable_length: self.variable_length,
            body_sent: self.body.is_some(),
            no_confidence: self.no_confidence,
            no_percentiles: self.no_percentiles,
            heartbeat: !self.quiet,
            ..AbStyle::default()
        }
    }
}

/// `vblast ab -h`: ab's options and what vblast does with each.
pub const USAGE: &str = "Usage: vblast ab [options] [http[s]://]hostname[:port]/path
ApacheBench 2.4's options with ab's meaning (see docs/coming-from-ab.md):
    -n requests     Number of requests to perform (default 1)
    -c concurrency  Number of multiple requests to make at a time (default 1)
    -t timelimit    Seconds to max. to spend on benchmarking; implies -n 50000
                    (a -n after -t overrides it, as in ab)
    -s timeout      Seconds to max. wait for each response (default 30)
    -p postfile     File containing data to POST (Content-Type from -T)
    -u putfile      File containing data to PUT (Content-Type from -T)
    -T content-type Content-type header for POST/PUT data (default text/plain)
    -v verbosity    Accepted; vblast prints no per-request troubleshooting
    -i              Use HEAD instead of GET
    -C attribute    Add cookie, eg. 'Apache=1234' (the last -C is sent, as in ab)
    -H attribute    Add arbitrary header line, eg. 'Accept-Encoding: gzip' (repeatable)
    -A attribute    Add Basic WWW Authentication, user:password
    -E certfile     Client certificate chain and private key (PEM) for mutual TLS
    -V              Print version number and exit
    -k              Use HTTP KeepAlive (without it: a new connection per request)
    -d              Do not show percentiles served table
    -S              Do not show confidence estimators and warnings
    -q              Do not show progress
    -l              Accept variable document length (no Length failures)
    -e filename     Output CSV file with percentages served
    -r              Don't exit on socket receive errors (vblast never does)
    -m method       AbMethod name
    -h              Display this message
    --ab-exit       Exit with ab's statuses instead of vblast's
Refused (one message naming the option, exit 2): -X -P (proxy), -w -x -y -z (HTML),
-g (gnuplot), -b (window size), -B (bind address), -Z (ciphers), -f (protocol), -I (SNI).
https: certificates are not verified, as ab does not verify them.
";

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    fn run(v: &[&str]) -> AbOptions {
        match parse(&args(v)) {
            Ok(AbCommand::Run(o)) => *o,
            other => panic!("{v:?}: {other:?}"),
        }
    }

    fn err(v: &[&str]) -> AbError {
        parse(&args(v)).expect_err(&format!("{v:?} was taken"))
    }

    #[test]
    fn values_attached_separate_and_clustered() {
        let a = run(&["-n4000", "-c", "40", "-kq", "http://127.0.0.1:8/x"]);
        assert_eq!(
            (a.requests, a.concurrency, a.keepalive, a.quiet),
            (4000, 40, true, true)
        );
        let b = run(&["-kc40", "-n", "4000", "-q", "http://127.0.0.1:8/x"]);
        assert_eq!(
            (b.requests, b.concurrency, b.keepalive, b.quiet),
            (4000, 40, true, true)
        );
        // A value is taken verbatim, even when it starts with '-'.
        let h = run(&["-H", "X-A: -y", "-H", "X-B:z", "http://h/x"]);
        assert_eq!(
            h.headers,
            [("X-A".into(), "-y".into()), ("X-B".into(), "z".into())]
        );
        assert_eq!(
            run(&["-p", "-", "http://h/x"]).body,
            Some(PathBuf::from("-"))
        );
        // No scheme: http, as in ab.
        assert_eq!(run(&["127.0.0.1:80/"]).url, "http://127.0.0.1:80/");
    }

    /// ab's own headers go first, each unless a `-H` names it (in any case).
    #[test]
    fn ab_s_user_agent_and_accept_unless_given() {
        let sent = |v: &[&str]| match run(v).scenario().workload {
            Workload::Url(r) => r.headers,
            _ => panic!(),
        };
        let h = |n: &str, v: &str| (n.to_string(), v.to_string());
        assert_eq!(
            sent(&["-C", "a=1", "http://h/"]),
            [
                h("User-Agent", "ApacheBench/2.3"),
                h("Accept", "*/*"),
                h("Cookie", "a=1")
            ]
        );
        assert_eq!(
            sent(&["-H", "user-agent: me", "-H", "X-A: 1", "http://h/"]),
            [h("Accept", "*/*"), h("user-agent", "me"), h("X-A", "1")]
        );
        assert_eq!(
            sent(&["-H", "ACCEPT: a/b", "http://h/"]),
            [h("User-Agent", "ApacheBench/2.3"), h("ACCEPT", "a/b")]
        );
    }

    #[test]
    fn timelimit_implies_50000_unless_a_later_n() {
        let a = run(&["-n", "10", "-t", "5", "http://h/"]);
        assert_eq!((a.requests, a.timelimit), (TIMED_REQUESTS, 5));
        let b = run(&["-t", "5", "-n", "10", "http://h/"]);
        assert_eq!((b.requests, b.timelimit), (10, 5));
        assert_eq!(
            b.scenario().load.step.duration,
            Some(Duration::from_secs(5))
        );
    }

    #[test]
    fn methods_bodies_and_credentials() {
        let a = run(&["-A", " user:pass", "-C", "a=1", "-C", "b=2", "http://h/"]);
        assert_eq!(
            a.headers,
            [
                ("Cookie".into(), "b=2".into()),
                ("Authorization".into(), "Basic dXNlcjpwYXNz".into())
            ]
        );
        assert_eq!(run(&["-i", "http://h/"]).method, "HEAD");
        let p = run(&["-p", "f.json", "-T", "application/json", "http://h/"]);
        assert_eq!(p.method, "POST");
        let Workload::Url(r) = p.scenario().workload else {
            panic!()
        };
        assert_eq!(r.content_type.as_deref(), Some("application/json"));
        let u = run(&["-u", "f", "http://h/"]);
        assert_eq!(u.method, "PUT");
        let Workload::Url(r) = u.scenario().workload else {
            panic!()
        };
        assert_eq!(r.content_type.as_deref(), Some("text/plain"));
        assert_eq!(
            run(&["-p", "f", "-m", "patch", "http://h/"]).method,
            "PATCH"
        );
        assert!(
            matches!(err(&["-i", "-p", "f", "http://h/"]), AbError::Usage(m) if m.contains("Cannot mix POST"))
        );
        assert!(
            matches!(err(&["-p", "f", "-i", "http://h/"]), AbError::Usage(m) if m.contains("Cannot mix HEAD"))
        );
    }

    #[test]
    fn ab_mode_is_ab_not_vault() {
        let s = run(&["-k", "https://127.0.0.1:8200/v1/sys/health"]).scenario();
        assert!(s.load.keepalive, "-k is keep-alive");
        let tls = s.tls.unwrap();
        assert!(tls.insecure && !tls.resume);
        assert!(s.token.0.is_none());
        assert!(!run(&["http://h/"]).scenario().load.keepalive);
        assert_eq!(run(&["http://h/"]).scenario().load.step.requests, Some(1));
    }

    #[test]
    fn refusals_name_the_option() {
        for (flag, value) in [
            ("-X", Some("proxy:3128")),
            ("-P", Some("u:p")),
            ("-w", None),
            ("-x", Some("border=1")),
            ("-g", Some("out.tsv")),
            ("-Z", Some("AES")),
            ("-f", Some("TLS1.2")),
            ("-B", Some("127.0.0.2")),
        ] {
            let mut v = vec![flag];
            v.extend(value);
            v.push("http://h/");
            match err(&v) {
                AbError::Unsupported(m) => assert!(m.contains(&format!("ab's {flag} ")), "{m}"),
                other => panic!("{v:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn usage_errors() {
        let m = err(&["-n", "10", "-c", "20", "http://h/"]);
        assert_eq!(
            m,
            AbError::Usage(
                "Cannot use concurrency level greater than total number of requests".into()
            )
        );
        assert_eq!(
            err(&["-Q", "http://h/"]),
            AbError::Usage("illegal option -- Q".into())
        );
        assert_eq!(
            err(&["-n"]),
            AbError::Usage("option requires an argument -- n".into())
        );
        assert!(matches!(err(&["-n", "x", "http://h/"]), AbError::Usage(m) if m.contains("-n x")));
        assert!(matches!(err(&["-n", "0", "http://h/"]), AbError::Usage(_)));
        assert!(matches!(err(&[]), AbError::Usage(m) if m.contains("wrong number")));
        // Options after the URL: ab does not take them.
        assert!(
            matches!(err(&["http://h/", "-k"]), AbError::Usage(m) if m.contains("wrong number"))
        );
        assert!(matches!(err(&["http://h"]), AbError::Usage(m) if m.contains("invalid URL")));
        assert!(matches!(err(&["ftp://h/"]), AbError::Usage(m) if m.contains("invalid URL")));
        assert!(
            matches!(err(&["--bogus", "http://h/"]), AbError::Usage(m) if m.contains("--bogus"))
        );
        // --ab-exit before or after the URL.
        assert!(run(&["--ab-exit", "http://h/"]).ab_exit);
        assert!(run(&["http://h/", "--ab-exit"]).ab_exit);
        assert_eq!(parse(&args(&["-h"])), Ok(AbCommand::Help));
        assert_eq!(parse(&args(&["--help"])), Ok(AbCommand::Help));
        assert_eq!(parse(&args(&["-V"])), Ok(AbCommand::Version));
    }
}
