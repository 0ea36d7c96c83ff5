//! Pushing the run's figures to a Prometheus Pushgateway (`--metrics-push URL`): once at
//! the start, every interval while the run goes on, and the final figures at the end, each
//! time the whole text the exporter renders (`super::Text`, the one renderer) in one HTTP
//! `PUT` to `/metrics/job/<job>{/<label>/<value>}`, which replaces the group's figures.
//!
//! A Pushgateway and not remote write: a run is a batch job that ends, which is what the
//! Pushgateway is for (it keeps the last figures of a job that is gone until they are
//! replaced or deleted, so Prometheus scrapes a nightly run's figures all day); remote
//! write needs the protobuf-and-snappy wire format, a receiver switched on in Prometheus,
//! and sends samples with timestamps that a late run cannot backfill.
//!
//! An unreachable Pushgateway never stops the run: the push at the start says so in one
//! warning, a failing push during the run warns once until one succeeds again, and the
//! final push is tried `FINAL_ATTEMPTS` times; its failure is returned for the command to
//! report (docs/ci.md says what it does to the exit status).

use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::Duration;

use base64::Engine as _;

use crate::error::Cause;
use crate::net::blocking::BlockingClient;
use crate::net::target::Target;

use super::Text;

/// The bound on one push (connect, write, the answer).
const PUSH_TIMEOUT: Duration = Duration::from_secs(5);
/// How many times the final figures are pushed before the push is reported failed.
const FINAL_ATTEMPTS: u32 = 3;
/// The wait between two attempts of the final push.
const FINAL_BACKOFF: Duration = Duration::from_secs(1);
/// The shortest interval between pushes.
pub const MIN_INTERVAL: Duration = Duration::from_secs(1);

/// Why a Pushgateway's URL, job or grouping labels are refused (bad input, before any load).
#[derive(Debug, thiserror::Error)]
pub enum PushError {
    #[error("--metrics-push {text}: not a URL: {source}")]
    Malformed {
        text: String,
        #[source]
        source: url::ParseError,
    },
    #[error("--metrics-push {0}: give an http:// or https:// URL of a Pushgateway")]
    Scheme(String),
    #[error(
        "--metrics-push: credentials in the URL are not supported (they would show in `ps` and in messages)"
    )]
    Credentials,
    #[error(
        "--metrics-push {0}: give the Pushgateway's base URL (http://host:9091, or with its route prefix); the job and the grouping labels are --metrics-push-job and --metrics-push-label"
    )]
    Path(String),
    #[error("--metrics-push-job: the job name is empty")]
    EmptyJob,
    #[error(
        "--metrics-push-label '{0}': give NAME=VALUE, NAME a Prometheus label name (letters, digits and _, not first a digit, not starting with __)"
    )]
    Label(String),
    #[error(
        "--metrics-push-label {0}: the job is --metrics-push-job's, not a grouping label of its own"
    )]
    JobLabel(String),
    #[error("--metrics-push-label {0} is given twice")]
    Twice(String),
}

impl From<PushError> for Cause {
    fn from(e: PushError) -> Self {
        Cause::Said(e.to_string())
    }
}

/// A Pushgateway group: the gateway's base URL and the group's path under it.
#[derive(Clone, Debug)]
pub struct Gateway {
    /// `scheme://host[:port]` (checked here, resolved when a push connects).
    base: String,
    /// `<route prefix>/metrics/job/<job>{/<label>/<value>}`, values encoded.
    path: String,
}

impl Gateway {
    /// The group `job` with grouping `labels` (`NAME=VALUE`, in the order given) on the
    /// Pushgateway at `url`. The host is not resolved here: a name that does not resolve
    /// yet is an unreachable Pushgateway, not bad input.
    pub fn parse(url: &str, job: &str, labels: &[String]) -> Result<Gateway, PushError> {
        let u = url::Url::parse(url).map_err(|source| PushError::Malformed {
            text: url.into(),
            source,
        })?;
        if !matches!(u.scheme(), "http" | "https") || u.host().is_none() {
            return Err(PushError::Scheme(url.into()));
        }
        if !u.username().is_empty() || u.password().is_some() {
            return Err(PushError::Credentials);
        }
        let prefix = u.path().trim_end_matches('/');
        if u.query().is_some() || u.fragment().is_some() || prefix.contains("/metrics/job") {
            return Err(PushError::Path(url.into()));
        }
        if job.is_empty() {
            return Err(PushError::EmptyJob);
        }
        let mut path = format!("{prefix}/metrics/{}", segment("job", job));
        let mut seen: Vec<&str> = Vec::new();
        for given in labels {
            let (name, value) = given
                .split_once('=')
                .filter(|(n, _)| label_name(n))
                .ok_or_else(|| PushError::Label(given.clone()))?;
            if name == "job" {
                return Err(PushError::JobLabel(given.clone()));
            }
            if seen.contains(&name) {
                return Err(PushError::Twice(name.into()));
            }
            seen.push(name);
            path.push('/');
            path.push_str(&segment(name, value));
        }
        Ok(Gateway {
            base: u.origin().ascii_serialization(),
            path,
        })
    }

    /// The group's URL, for messages and for `curl -X DELETE` (it holds no secret:
    /// credentials in the URL are refused).
    pub fn url(&self) -> String {
        format!("{}{}", self.base, self.path)
    }

    /// One PUT of `body` to the group, over `client` (connected, and resolved, on first
    /// use; dropped after a failure so that the next push connects afresh).
    fn put(&self, client: &mut Option<BlockingClient>, body: &str) -> Result<(), Cause> {
        let c = match client {
            Some(c) => c,
            None => {
                let target = Target::parse(&self.base)?;
                client.insert(BlockingClient::new(&target, None, None, PUSH_TIMEOUT))
            }
        };
        let answer = c.request(
            "PUT",
            &self.path,
            &[("Content-Type", "text/plain; version=0.0.4; charset=utf-8")],
            Some(body.as_bytes()),
        );
        let failed = match answer {
            Ok(r) if (200..300).contains(&r.status) => return Ok(()),
            Ok(r) => Cause::Http {
                what: "the Pushgateway refused the figures".into(),
                status: r.status,
                excerpt: r.error_text(),
            },
            Err(e) => e,
        };
        *client = None;
        Err(failed)
    }
}

/// A Prometheus label name that a grouping key may use.
fn label_name(n: &str) -> bool {
    let mut chars = n.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !n.starts_with("__")
}

/// `name/value` of a grouping path: the value as it is when it is plain URL text, else
/// `name@base64/<base64url>` (the Pushgateway's form for a value with a `/` or any other
/// character a path would change, and `=` for the empty value).
fn segment(name: &str, value: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-._~".contains(c);
    if !value.is_empty() && value.chars().all(plain) {
        format!("{name}/{value}")
    } else if value.is_empty() {
        format!("{name}@base64/=")
    } else {
        let b = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(value);
        format!("{name}@base64/{b}")
    }
}

/// What a run asks of the pusher: the group, and how often to push while it goes on.
#[derive(Clone, Debug)]
pub struct Push {
    pub gateway: Gateway,
    pub interval: Duration,
}

/// Whether the last push reached the Pushgateway: a failure is said once, when pushes
/// start failing, and its end once, when one succeeds again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Reach {
    Reached,
    Failing,
}

impl Reach {
    /// The state after a push that gave `result`, with what changed said on stderr.
    fn after(self, result: Result<(), Cause>, gateway: &Gateway) -> Reach {
        match (self, result) {
            (Reach::Reached, Ok(())) => Reach::Reached,
            (Reach::Failing, Ok(())) => {
                eprintln!(
                    "vblast: note: --metrics-push {}: the Pushgateway takes the figures again",
                    gateway.url()
                );
                Reach::Reached
            }
            (Reach::Reached, Err(e)) => {
                eprintln!(
                    "vblast: warning: --metrics-push {}: cannot push the figures: {e}; the run goes on, and the push is tried again every interval and at the end",
                    gateway.url()
                );
                Reach::Failing
            }
            (Reach::Failing, Err(_)) => Reach::Failing,
        }
    }
}

/// The pusher of one run: its pushes every interval run on a thread of their own, which
/// `finish` stops before the final push, so that no older figures replace the final ones.
pub struct Pusher {
    gateway: Gateway,
    text: Text,
    /// The interval pushes: the channel that ends them (dropped) and their thread.
    every: Option<(Sender<()>, JoinHandle<()>)>,
}

impl Pusher {
    /// Pushes the figures now (the run's start: a failure is one warning, and the run goes
    /// on), then every `push.interval` from a thread of its own.
    pub fn start(push: &Push, text: Text) -> Pusher {
        let gateway = push.gateway.clone();
        let mut client = None;
        let reach = Reach::Reached.after(gateway.put(&mut client, &text.render()), &gateway);
        let (tx, rx) = std::sync::mpsc::channel();
        let (g, t, interval) = (gateway.clone(), text.clone(), push.interval);
        let every = std::thread::Builder::new()
            .name("vblast-push".into())
            .spawn(move || every_interval(&g, &t, interval, &rx, client, reach))
            .ok()
            .map(|h| (tx, h));
        if every.is_none() {
            eprintln!(
                "vblast: warning: --metrics-push: cannot start the thread of the interval pushes; the final figures are still pushed at the end"
            );
        }
        Pusher {
            gateway,
            text,
            every,
        }
    }

    /// Stops the interval pushes and pushes the final figures, tried `FINAL_ATTEMPTS`
    /// times a second apart (a second signal gives up at once); the last failure when
    /// none succeeded.
    pub fn finish(mut self, stop: &crate::signals::Stop) -> Result<(), Cause> {
        if let Some((tx, thread)) = self.every.take() {
            drop(tx);
            let _ = thread.join();
        }
        let body = self.text.render();
        let mut client = None;
        let mut attempt = 1;
        loop {
            let e = match self.gateway.put(&mut client, &body) {
                Ok(()) => return Ok(()),
                Err(e) => e,
            };
            if attempt == FINAL_ATTEMPTS || stop.is_urgent() {
                return Err(e.within(format!(
                    "--metrics-push {}: the final figures were not pushed ({attempt} attempts)",
                    self.gateway.url()
                )));
            }
            attempt += 1;
            std::thread::sleep(FINAL_BACKOFF);
        }
    }
}

/// The interval pushes: one every `interval` until the channel is dropped.
fn every_interval(
    gateway: &Gateway,
    text: &Text,
    interval: Duration,
    end: &Receiver<()>,
    mut client: Option<BlockingClient>,
    mut reach: Reach,
) {
    while let Err(RecvTimeoutError::Timeout) = end.recv_timeout(interval) {
        reach = reach.after(gateway.put(&mut client, &text.render()), gateway);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(url: &str, job: &str, labels: &[&str]) -> Result<String, PushError> {
        let labels: Vec<String> = labels.iter().map(|s| s.to_string()).collect();
        Gateway::parse(url, job, &labels).map(|g| g.url())
    }

    #[test]
    fn the_group_is_the_job_and_the_labels_in_order() {
        assert_eq!(
            path("http://pgw:9091", "vblast", &["instance=nightly"]).unwrap(),
            "http://pgw:9091/metrics/job/vblast/instance/nightly"
        );
        assert_eq!(
            path("http://pgw:9091/", "vblast", &[]).unwrap(),
            "http://pgw:9091/metrics/job/vblast"
        );
        // A route prefix is kept.
        assert_eq!(
            path("https://mon.example/pushgateway/", "j", &["a=1", "b=2"]).unwrap(),
            "https://mon.example/pushgateway/metrics/job/j/a/1/b/2"
        );
    }

    #[test]
    fn a_value_a_path_would_change_is_base64url() {
        // "kv/read" -> base64url "a3YvcmVhZA"; the empty value is "=".
        assert_eq!(
            path("http://pgw:9091", "vblast", &["run=kv/read", "empty="]).unwrap(),
            "http://pgw:9091/metrics/job/vblast/run@base64/a3YvcmVhZA/empty@base64/="
        );
        assert_eq!(
            path("http://pgw:9091", "a b", &[]).unwrap(),
            "http://pgw:9091/metrics/job@base64/YSBi"
        );
    }

    #[test]
    fn bad_urls_and_labels_are_refused() {
        let refused = |url: &str, job: &str, labels: &[&str]| path(url, job, labels).is_err();
        assert!(refused("pgw:9091", "vblast", &[]));
        assert!(refused("ftp://pgw", "vblast", &[]));
        assert!(refused("http://u:p@pgw:9091", "vblast", &[]));
        assert!(refused("http://pgw:9091/metrics/job/x", "vblast", &[]));
        assert!(refused("http://pgw:9091/?a=b", "vblast", &[]));
        assert!(refused("http://pgw:9091", "", &[]));
        for bad in ["instance", "=x", "1a=x", "__name__=x", "a-b=x"] {
            assert!(refused("http://pgw:9091", "vblast", &[bad]), "{bad}");
        }
        assert!(matches!(
            path("http://pgw:9091", "vblast", &["job=x"]),
            Err(PushError::JobLabel(_))
        ));
        assert!(matches!(
            path("http://pgw:9091", "vblast", &["a=1", "a=2"]),
            Err(PushError::Twice(_))
        ));
    }

    #[test]
    fn a_failing_push_is_said_once_until_one_succeeds() {
        let g = Gateway::parse("http://127.0.0.1:9", "vblast", &[]).unwrap();
        let fail = || Err(Cause::Said("refused".into()));
        let r = Reach::Reached.after(fail(), &g);
        assert_eq!(r, Reach::Failing);
        assert_eq!(r.after(fail(), &g), Reach::Failing);
        assert_eq!(r.after(Ok(()), &g), Reach::Reached);
    }
}
