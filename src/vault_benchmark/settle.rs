//! A vault-benchmark file under a command line: the one place that decides, for every
//! setting such a file can give, which layer wins (a flag given on the command line, then
//! Vault's environment variables, then the file), for `vblast run --config FILE` and for
//! `vblast vault-benchmark run` alike. Which flags were given comes from clap's value
//! sources (`Given`) or from vault-benchmark's own flags; a default is not given.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::hcl::{VbConfig, load, load_cluster};
use crate::config::scenario::{Load, OpChoice};
use crate::error::Error;
use crate::net::h2::{Http2Options, WithoutH2};
use crate::results::deliver::OutputFormat;

use crate::commands::env;

/// What a command line gives of the settings a vault-benchmark file also gives: None (or
/// empty, or false) where it gives nothing, so that the environment, then the file decide.
#[derive(Clone, Debug, Default)]
pub struct Asked {
    /// Addresses given (`--address`, `-vault_addr`).
    pub addresses: Vec<String>,
    /// A cluster file given (`--cluster`, `-cluster_json`).
    pub cluster: Option<PathBuf>,
    /// A token given (`--token`, `-vault_token`); `token_file` says a token file was.
    pub token: Option<String>,
    pub token_file: bool,
    pub namespace: Option<String>,
    pub ca_cert: Option<PathBuf>,
    pub duration: Option<Duration>,
    /// `-n`: a run of a count of requests takes no duration from the file.
    pub requests: Option<u64>,
    /// The open model's rate, as `-R` gives it.
    pub rate: Option<String>,
    /// The closed model asked for (vault-benchmark's `-rps=0`): the file's rps gives way.
    pub closed: bool,
    pub connections: Option<u64>,
    pub keep: bool,
    pub format: Option<OutputFormat>,
    /// `--audit-path`, `-audit_path`.
    pub audit_path: Option<PathBuf>,
    /// `--pprof-interval`, `-pprof_interval`.
    pub pprof_interval: Option<Duration>,
    /// `-disable_http2[=BOOL]` (`--http1.1`: true).
    pub disable_http2: Option<bool>,
}

/// The settings decided: the command line's where it gave one, else the environment's,
/// else the file's. What the environment gives is left to the scenario (None here).
#[derive(Clone, Debug, Default)]
pub struct Settled {
    pub addresses: Vec<String>,
    pub cluster: Option<PathBuf>,
    pub token: Option<String>,
    pub namespace: Option<String>,
    pub ca_cert: Option<PathBuf>,
    pub duration: Option<Duration>,
    pub rate: Option<String>,
    pub connections: Option<u64>,
    pub keep: bool,
    pub format: Option<OutputFormat>,
    pub audit_path: Option<PathBuf>,
    pub pprof_interval: Option<Duration>,
    /// The file's tests, as the workload (None without a file).
    pub tests: Option<Vec<OpChoice>>,
    /// A file's run that speaks HTTP/2 to an https address, as vault-benchmark's Go
    /// client does (a file given, `disable_http2` not set by flag or file): `go_http2`.
    pub go_http2: bool,
    /// What the file asks that vblast does differently: said on stderr once here, and
    /// kept in the results' run section (`Scenario::differences`).
    pub differences: Vec<String>,
}

/// Reads the vault-benchmark file at `path` (its notes are said once, by `settle`).
pub fn read(path: &Path) -> Result<VbConfig, Error> {
    load(path).map_err(Error::input)
}

/// Decides every setting a file can give: `asked` over the environment over `file`
/// (flags over environment over file). Without a file, `asked` as it is. The file's notes
/// go to stderr once.
pub fn settle(asked: Asked, file: Option<&VbConfig>) -> Result<Settled, Error> {
    let Some(c) = file else {
        return Ok(Settled {
            addresses: asked.addresses,
            cluster: asked.cluster,
            token: asked.token,
            namespace: asked.namespace,
            ca_cert: asked.ca_cert,
            duration: asked.duration,
            rate: asked.rate,
            connections: asked.connections,
            keep: asked.keep,
            format: asked.format,
            audit_path: asked.audit_path,
            pprof_interval: asked.pprof_interval,
            tests: None,
            go_http2: false,
            differences: Vec::new(),
        });
    };
    let mut notes = c.notes.clone();
    let mut s = Settled {
        addresses: asked.addresses,
        cluster: asked.cluster,
        tests: Some(c.tests.clone()),
        ..Settled::default()
    };
    let mut file_token = c.vault_token.clone();
    let no_address = s.addresses.is_empty() && s.cluster.is_none() && env("VAULT_ADDR").is_none();
    if let Some(cluster) = &c.cluster_json {
        // Checked here for the file's own message; the nodes are read as `--cluster`'s.
        let (_, t, _) = load_cluster(cluster).map_err(Error::input)?;
        file_token = t.or(file_token);
        if no_address {
            s.cluster = Some(cluster.clone());
        }
    } else if no_address {
        s.addresses = c.vault_addr.clone().into_iter().collect();
    }
    s.token = match asked.token {
        Some(t) => Some(t),
        None if !asked.token_file && env("VAULT_TOKEN").is_none() => file_token,
        None => None,
    };
    s.namespace = asked.namespace.or_else(|| {
        env("VAULT_NAMESPACE")
            .is_none()
            .then(|| c.vault_namespace.clone())
            .flatten()
    });
    s.ca_cert = asked.ca_cert.or_else(|| {
        env("VAULT_CACERT")
            .is_none()
            .then(|| c.ca_pem_file.clone())
            .flatten()
    });
    s.duration = match (asked.duration, asked.requests) {
        (None, None) => c.duration,
        (d, _) => d,
    };
    s.rate = match asked.rate {
        Some(r) => Some(r),
        None if asked.closed => None,
        None => c.rps.map(|r| r.to_string()),
    };
    s.connections = asked.connections.or(c.workers);
    s.keep = asked.keep;
    if !s.keep && c.cleanup == Some(false) {
        s.keep = true;
        notes.push(
            "cleanup = false: what vblast creates is kept after the run (vblast removes it by default; set cleanup = true or leave it out to remove it)".into(),
        );
    }
    s.format = asked.format.or(c.report_mode.map(|m| m.format()));
    s.audit_path = asked.audit_path.or_else(|| c.audit_path.clone());
    s.pprof_interval = asked.pprof_interval.or(c.pprof_interval);
    // vault-benchmark: the flag over the file (it has no environment variable for it).
    s.go_http2 = !asked.disable_http2.or(c.disable_http2).unwrap_or(false);
    for n in &notes {
        eprintln!("vblast: note: {n}");
    }
    s.differences = notes;
    Ok(s)
}

/// Go's server's default SETTINGS_MAX_CONCURRENT_STREAMS (Vault's and OpenBao's listener):
/// Go's client opens another connection to a host once one carries this many streams.
const GO_MAX_STREAMS: u64 = 250;

/// The protocol of a vault-benchmark file's run (`Settled::go_http2`), as vault-benchmark's
/// Go client speaks it: HTTP/2 by ALPN to an https address, its `workers` (`connections`
/// here) multiplexed as streams on one connection per 250 of them; HTTP/1.1 to http://
/// (Go does not speak h2c) and where the server offers no h2. `not_yet`: why this run
/// cannot go over vblast's HTTP/2 (then HTTP/1.1, said in one note). Explicit HTTP/2 flags
/// (`--http2`, `--streams`) are the caller's to leave alone.
/// `streams`: `--streams` given, which keeps the connections as `-c` says.
pub fn go_protocol(
    load: &mut Load,
    address: &str,
    streams: Option<u32>,
    not_yet: Option<&str>,
) -> Result<(), Error> {
    if load.http2.is_some() {
        return Ok(());
    }
    if !address.starts_with("https://") {
        return match streams {
            Some(_) => Err(Error::input(format!(
                "--streams: {address} is http://, which vault-benchmark (Go) speaks HTTP/1.1 to; --http2-prior-knowledge speaks h2c"
            ))),
            None => Ok(()),
        };
    }
    if let Some(why) = not_yet {
        eprintln!(
            "vblast: note: this run is HTTP/1.1, where vault-benchmark would speak HTTP/2 to {address}: vblast's HTTP/2 does not do {why} yet (docs/http2.md)"
        );
        return Ok(());
    }
    let workers = load.connections;
    let (connections, streams) = match streams {
        Some(m) => (workers, m),
        None => {
            let c = workers.div_ceil(GO_MAX_STREAMS);
            (c, u32::try_from(workers.div_ceil(c)).unwrap_or(u32::MAX))
        }
    };
    load.connections = connections;
    load.http2 = Some(Http2Options {
        prior_knowledge: false,
        streams,
        without_h2: WithoutH2::Http1Over {
            connections: workers,
        },
    });
    Ok(())
}

/// Why `load` cannot go over vblast's HTTP/2 yet,
/// in words for `go_protocol`'s note (`net::h2::H2Refusal`, which the engine and
/// `scenario::refuse_h2` refuse with `--http2`).
pub fn h2_not_yet(load: &Load) -> Option<&'static str> {
    crate::net::h2::H2Refusal::not_yet(&run_shape(load, true))
        .map(crate::net::h2::H2Refusal::feature)
}

/// `load`'s shape as HTTP/2's refusals read it (`net::h2::RunShape`); `tls` is the
/// address's.
pub fn run_shape(load: &Load, tls: bool) -> crate::net::h2::RunShape {
    crate::net::h2::RunShape {
        tls,
        keepalive: load.keepalive,
        shard: !load.spread.shard.is_whole(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn protocol(workers: u64, address: &str, streams: Option<u32>) -> (Option<Http2Options>, u64) {
        let mut load = Load::closed(workers);
        go_protocol(&mut load, address, streams, None).unwrap();
        (load.http2, load.connections)
    }

    #[test]
    fn a_files_workers_become_streams_on_one_connection_per_250_over_https() {
        let (h2, c) = protocol(10, "https://v:8200", None);
        let h2 = h2.unwrap();
        assert_eq!((c, h2.streams, h2.prior_knowledge), (1, 10, false));
        assert_eq!(h2.connections_without_h2(c), 10);
        let (h2, c) = protocol(300, "https://v:8200", None);
        assert_eq!((c, h2.unwrap().streams), (2, 150));
        // --streams keeps -c as the connections.
        let (h2, c) = protocol(4, "https://v:8200", Some(8));
        assert_eq!((c, h2.unwrap().streams), (4, 8));
        // http:// stays HTTP/1.1 (Go speaks no h2c); --streams there is refused.
        assert_eq!(protocol(10, "http://v:8200", None), (None, 10));
        let mut load = Load::closed(10);
        assert!(go_protocol(&mut load, "http://v:8200", Some(2), None).is_err());
        // What vblast's HTTP/2 does not do yet: HTTP/1.1 over the workers.
        let mut load = Load::closed(10);
        go_protocol(&mut load, "https://v:8200", None, Some("x")).unwrap();
        assert_eq!((load.http2, load.connections), (None, 10));
        let load = Load {
            keepalive: false,
            ..Load::closed(1)
        };
        assert_eq!(h2_not_yet(&load), Some("--no-keepalive"));
        // Several nodes, --follow-redirects and --respect-retry-after go over HTTP/2.
        let load = Load {
            respect_retry_after: true,
            follow_redirects: true,
            ..Load::closed(1)
        };
        assert_eq!(h2_not_yet(&load), None);
    }

    #[test]
    fn disable_http2_the_flag_over_the_file() {
        let file = |text: &str| {
            crate::vault_benchmark::hcl::parse(
                &format!("{text}test \"ha_status\" \"h\" {{ weight = 100 }}\n"),
                "f.hcl",
            )
            .unwrap()
        };
        let on = file("");
        let off = file("disable_http2 = true\n");
        let go = |asked: Option<bool>, f: &VbConfig| {
            settle(
                Asked {
                    disable_http2: asked,
                    ..Asked::default()
                },
                Some(f),
            )
            .unwrap()
            .go_http2
        };
        assert!(go(None, &on));
        assert!(!go(None, &off));
        assert!(go(Some(false), &off));
        assert!(!go(Some(true), &on));
        assert!(!settle(Asked::default(), None).unwrap().go_http2);
    }
}
