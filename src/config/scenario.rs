//! A run described as data: where the load goes, with which credentials and TLS settings,
//! its shape (connections, count or duration, rate, warm-up) and its workload (a URL
//! request, or Vault operations with weights and configs). Built once, in the commands
//! layer, from flags and a vault-benchmark HCL file together (`vault_benchmark::settle`).
//! Serialisable, with the token left out and secrets redacted (`Scenario::redacted`), so
//! it can be saved with a run's results.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::config::schedule::Schedule;
use crate::net::tls::TlsOptions;

/// The token, kept out of every serialised form and of `Debug` output.
#[derive(Clone, Default)]
pub struct Token(pub Option<String>);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "Token(<redacted>)"
        } else {
            "Token(None)"
        })
    }
}

/// Connections of a run that names none (`-c`'s default).
pub const DEFAULT_CONNECTIONS: u64 = 10;
/// A request's timeout when none is given (`--timeout`'s default).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// A run's length when neither a count nor a duration is given.
pub const DEFAULT_DURATION: Duration = Duration::from_secs(10);

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Scenario {
    /// Vault address (Vault mode) or the full URL (URL mode).
    pub address: String,
    #[serde(skip)]
    pub token: Token,
    pub namespace: Option<String>,
    /// TLS settings for https:// addresses (Vault's conventions resolved).
    pub tls: Option<TlsOptions>,
    pub load: Load,
    pub workload: Workload,
    /// Keep what setup created (default: removed after the run).
    pub keep: bool,
    /// Use the target as it is: no preflight, no fixtures.
    pub no_setup: bool,
    /// Several nodes of one HA cluster as the target (`address` is the first of them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<crate::config::cluster::ClusterSpec>,
    /// How the run's fixtures are named and removed (not part of the results).
    #[serde(skip)]
    pub fixtures: crate::config::fixtures::FixturePlan,
    /// What a vault-benchmark file asks that vblast does differently (said on stderr; kept
    /// in the results' run section as `differences`). Empty without such a file.
    #[serde(skip)]
    pub differences: Vec<String>,
}

/// The shape of the load. The engine's plan embeds it (`engine::EnginePlan`), and worker
/// processes receive it as it is.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Load {
    /// Totals over the whole run (all processes, or the shards together).
    pub connections: u64,
    /// What may change from one step of a held run to the next; its fields stand beside
    /// the others in the serialised form (the results file's `scenario.load`).
    #[serde(flatten)]
    pub step: StepPlan,
    pub keepalive: bool,
    pub timeout: Duration,
    /// Event-loop threads in total (None: one per core).
    pub threads: Option<usize>,
    pub pin: bool,
    /// A connection told to wait by a rate-limit quota's `Retry-After` waits that long.
    #[serde(default)]
    pub respect_retry_after: bool,
    /// Send `X-Vault-No-Request-Forwarding: true`: a standby answers on its own.
    #[serde(default)]
    pub no_forwarding: bool,
    /// Follow a 307/308 to a node of the target (`src/net/redirect.rs`).
    #[serde(default)]
    pub follow_redirects: bool,
    /// Shard, start instant, source addresses (`src/config/spread.rs`).
    #[serde(default)]
    pub spread: crate::config::spread::Spread,
    /// HTTP/2 (`--http2`, `--http2-prior-knowledge`, `-m`); None: HTTP/1.1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http2: Option<crate::net::h2::Http2Options>,
    /// The clock that ends each request's latency (`--clock`, `src/net/stamp.rs`).
    #[serde(default)]
    pub clock: crate::net::stamp::Clock,
}

/// The part of a load that one step of a held run changes (`Session::hold`, a sweep's
/// steps): its bounds, warm-up and schedule. A single run has one step, its load's.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct StepPlan {
    pub requests: Option<u64>,
    pub duration: Option<Duration>,
    pub warmup: Duration,
    /// Open model: the schedule of the total target rate (None: closed model); held, its
    /// times are counted from the step's start.
    pub schedule: Option<Schedule>,
}

impl Load {
    /// A closed-model load of `connections` keep-alive connections, pinned, with the default
    /// timeout and nothing else asked: the base the drop-in commands (ab, vault-benchmark)
    /// fill in with struct update syntax, so that a new field has its default in one place.
    pub fn closed(connections: u64) -> Load {
        Load {
            connections,
            step: StepPlan::default(),
            keepalive: true,
            timeout: DEFAULT_TIMEOUT,
            threads: None,
            pin: true,
            respect_retry_after: false,
            no_forwarding: false,
            follow_redirects: false,
            http2: None,
            spread: Default::default(),
            clock: Default::default(),
        }
    }
}

/// What each request is.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Workload {
    /// One request, as given on the command line (like ab, wrk, oha).
    Url(UrlRequest),
    /// Vault operations from the registry, picked by weight.
    Vault(Vec<OpChoice>),
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct UrlRequest {
    pub method: String,
    pub headers: Vec<(String, String)>,
    pub body: Option<Body>,
    pub content_type: Option<String>,
}

/// A request body: given inline or read from a file when the run starts.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Body {
    Inline(String),
    File(PathBuf),
}

/// One operation of the mix: its registry name, weight and family-specific config.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct OpChoice {
    pub name: String,
    pub weight: u32,
    pub config: serde_json::Value,
    /// The name reports give its rows (a vault-benchmark test's name); None: `name`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
}

impl Scenario {
    /// The scenario as JSON with nothing secret in it (`crate::redact`'s one policy): no
    /// token, no credential key or header, no URL password, inline bodies as their size.
    pub fn redacted(&self) -> serde_json::Value {
        let mut s = self.clone();
        if let Workload::Url(r) = &mut s.workload {
            crate::redact::headers(&mut r.headers);
            if let Some(Body::Inline(b)) = &mut r.body {
                *b = crate::redact::body(b);
            }
        }
        // A replay's instants (one per request) are described, not listed.
        let instants = match &s.load.step.schedule {
            Some(sc @ crate::config::schedule::Schedule::Instants(_)) => Some(sc.to_string()),
            _ => None,
        };
        if instants.is_some() {
            s.load.step.schedule = None;
        }
        let mut v = serde_json::to_value(&s).unwrap_or(serde_json::Value::Null);
        if let Some(text) = instants {
            v["load"]["schedule"] = serde_json::json!({ "instants": text });
        }
        crate::redact::json(&mut v);
        v
    }

    /// "kv-read:80,kv-write:20", or "url" in URL mode: the operations as reports name them.
    pub fn describe_ops(&self) -> String {
        match &self.workload {
            Workload::Url(_) => "url".into(),
            Workload::Vault(ops) if ops.len() == 1 => ops[0].name.clone(),
            Workload::Vault(ops) => ops
                .iter()
                .map(|o| format!("{}:{}", o.name, o.weight))
                .collect::<Vec<_>>()
                .join(","),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(workload: Workload) -> Scenario {
        Scenario {
            address: "http://127.0.0.1:8200".into(),
            cluster: None,
            token: Token(Some("hvs.SECRET".into())),
            namespace: None,
            tls: None,
            load: Load {
                step: StepPlan {
                    requests: Some(100),
                    ..StepPlan::default()
                },
                ..Load::closed(10)
            },
            workload,
            keep: false,
            no_setup: false,
            fixtures: Default::default(),
            differences: Vec::new(),
        }
    }

    #[test]
    fn redacted_form_holds_no_credential() {
        let s = scenario(Workload::Url(UrlRequest {
            method: "POST".into(),
            headers: vec![
                ("X-Vault-Token".into(), "hvs.HEADER".into()),
                ("Authorization".into(), "Bearer abc".into()),
                ("X-Custom".into(), "visible".into()),
            ],
            body: Some(Body::Inline("{\"password\":\"hunter2\"}".into())),
            content_type: None,
        }));
        let text = s.redacted().to_string();
        for secret in ["hvs.SECRET", "hvs.HEADER", "Bearer abc", "hunter2"] {
            assert!(!text.contains(secret), "{secret} in {text}");
        }
        assert!(text.contains("visible"));
        assert!(!format!("{:?}", s.token).contains("SECRET"));
        // Round trip: the scenario is data.
        let back: Scenario = serde_json::from_value(serde_json::to_value(&s).unwrap()).unwrap();
        assert_eq!(back.load, s.load);
        assert!(back.token.0.is_none());
    }

    #[test]
    fn a_replays_instants_are_described_not_listed() {
        let mut s = scenario(Workload::Vault(vec![]));
        s.load.step.schedule = Some(Schedule::Instants(crate::config::schedule::Instants {
            offsets: vec![0, 500_000_000, 2_000_000_000].into(),
            ops: vec![0, 0, 0].into(),
            callers: vec![crate::config::schedule::Caller {
                token: Some("hvs.CALLER".into()),
                namespace: None,
                requests: None,
            }]
            .into(),
            request_sets: Vec::new().into(),
        }));
        let v = s.redacted();
        assert!(!v.to_string().contains("hvs.CALLER"), "{v}");
        assert_eq!(
            v["load"]["schedule"],
            serde_json::json!({"instants": "3 recorded instants over 2s"}),
            "{v}"
        );
    }

    #[test]
    fn a_loads_step_stands_beside_its_other_fields_when_saved() {
        // The results file's `scenario.load` keeps the shape it had before the step was a
        // type of its own: no `step` key, its fields beside `connections`.
        let load = Load {
            step: StepPlan {
                requests: Some(7),
                duration: Some(Duration::from_millis(1500)),
                warmup: Duration::from_secs(2),
                schedule: Some(Schedule::Constant { rate: 50.0 }),
            },
            ..Load::closed(3)
        };
        let v = serde_json::to_value(&load).unwrap();
        assert!(v.get("step").is_none(), "{v}");
        assert_eq!(v["connections"], 3);
        assert_eq!(v["requests"], 7);
        assert_eq!(
            v["duration"],
            serde_json::json!({"secs": 1, "nanos": 500_000_000})
        );
        assert_eq!(v["warmup"], serde_json::json!({"secs": 2, "nanos": 0}));
        assert_eq!(
            v["schedule"],
            serde_json::to_value(&load.step.schedule).unwrap()
        );
        assert_eq!(v["keepalive"], true);
        let back: Load = serde_json::from_value(v).unwrap();
        assert_eq!(back, load);
        // A closed load saved with nulls reads back as one.
        let v = serde_json::to_value(Load::closed(1)).unwrap();
        assert!(v["schedule"].is_null() && v["requests"].is_null(), "{v}");
        assert_eq!(serde_json::from_value::<Load>(v).unwrap(), Load::closed(1));
    }

    #[test]
    fn credentials_in_op_configs_are_redacted() {
        let s = scenario(Workload::Vault(vec![OpChoice {
            name: "db-creds".into(),
            weight: 1,
            config: serde_json::json!({"password": "hunter2", "connection_url": "postgres://u:pw@h/db", "username": "u"}),
            label: Some("pg".into()),
        }]));
        let text = s.redacted().to_string();
        assert!(
            !text.contains("hunter2") && !text.contains("u:pw"),
            "{text}"
        );
        assert!(
            text.contains("\"label\":\"pg\"") && text.contains("\"username\":\"u\""),
            "{text}"
        );
    }

    #[test]
    fn ops_are_described_with_weights_only_in_a_mix() {
        let one = |n: &str, w| OpChoice {
            name: n.into(),
            weight: w,
            config: serde_json::Value::Null,
            label: None,
        };
        assert_eq!(
            scenario(Workload::Vault(vec![one("kv-read", 1)])).describe_ops(),
            "kv-read"
        );
        assert_eq!(
            scenario(Workload::Vault(vec![
                one("kv-read", 80),
                one("kv-write", 20)
            ]))
            .describe_ops(),
            "kv-read:80,kv-write:20"
        );
    }
}
