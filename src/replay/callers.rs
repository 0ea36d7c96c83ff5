//! A replay's sessions: one per recorded caller (a distinct accessor) in each namespace
//! it called, so that the server sees as many tokens as the log did, each sending its own
//! requests in their recorded order. `Sessions` is the plan (pure: which session each
//! replayed request is sent by, bounded by `MAX_SESSIONS`); `SessionsMade` is what setup made
//! for it on the server (a token per session, the log's namespaces missing there) and
//! removes again, on every exit path (its `Drop` too).
//!
//! Each session's token is a child of one parent token, made with the run's token and
//! inheriting its policies: the log names neither the callers' policies' rules nor their
//! login credentials, so a login of the recorded method cannot be made for each caller.
//! Revoking the parent at cleanup revokes every session's token; both carry a TTL of the
//! replay's span and an hour, so a process killed outright leaves nothing for long.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use rustls::ClientConfig;
use rustls::pki_types::ServerName;
use serde_json::json;

use crate::config::schedule::Caller;
use crate::error::{Cause, Error};
use crate::net::target::Target;
use crate::signals::Stop;
use crate::vault::client::Client;
use crate::vault::ops::{call, json_str};

/// The most sessions a replay makes (each a token, and a set of request templates per
/// event-loop thread: some 400 bytes per operation). Callers past it share their
/// namespace's first session, with a note.
pub const MAX_SESSIONS: usize = crate::profile::tally::MAX_CALLERS;

/// One session: a recorded caller (its accessor's hash, never shown: a token is made for
/// each accessor, and its sessions in several namespaces share it; None: requests the log
/// shows without a token, such as logins, sent with the run's token) in a namespace
/// (None: the run's).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ReplaySession {
    pub accessor: Option<u64>,
    pub namespace: Option<String>,
}

/// The sessions of a replay, and which one sends each replayed request.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Sessions {
    /// Session c + 1 is `sessions[c]`; session 0 is the run's own token and namespace.
    pub sessions: Vec<ReplaySession>,
    /// Per replayed request, in the log's order: its session.
    pub of_request: Vec<u32>,
    /// Recorded (caller, namespace) pairs past the bound, sent by their namespace's first
    /// session (or the run's own).
    pub folded: u64,
    /// The bound this replay kept to (`MAX_SESSIONS`, less when the mix is large: a send's
    /// session and operation share 16 bits).
    pub bound: usize,
}

impl Sessions {
    /// The sessions of `requests` (each its caller's accessor hash and its namespace's
    /// path), for a mix of `mix` operations.
    pub fn of(
        requests: impl Iterator<Item = (Option<u64>, Option<String>)>,
        mix: usize,
    ) -> Sessions {
        let bound = MAX_SESSIONS.min(((usize::from(u16::MAX) + 1) / mix.max(1)).saturating_sub(1));
        let mut index: HashMap<(Option<u64>, Option<String>), u32> = HashMap::new();
        let mut out = Sessions {
            bound,
            ..Sessions::default()
        };
        for (accessor, namespace) in requests {
            let key = (accessor, namespace);
            let session = match index.get(&key) {
                Some(&s) => s,
                None if key == (None, None) => 0,
                None if out.sessions.len() < bound => {
                    out.sessions.push(ReplaySession {
                        accessor: key.0,
                        namespace: key.1.clone(),
                    });
                    let s = out.sessions.len() as u32;
                    index.insert(key, s);
                    s
                }
                None => {
                    out.folded += 1;
                    let s = index.get(&(None, key.1.clone())).copied().unwrap_or(0);
                    index.insert(key, s);
                    s
                }
            };
            out.of_request.push(session);
        }
        out
    }

    /// The sessions of a workload file's callers (`profile::workload_file::RunCallers`),
    /// each its namespace (None: the run's) and whether it has a token of its own (each
    /// its own key: a file does not say which callers shared an accessor).
    pub fn listed(callers: &[(Option<String>, bool)]) -> Sessions {
        Sessions {
            sessions: callers
                .iter()
                .enumerate()
                .map(|(i, (namespace, token))| ReplaySession {
                    accessor: token.then_some(i as u64),
                    namespace: namespace.clone(),
                })
                .collect(),
            of_request: Vec::new(),
            folded: 0,
            bound: MAX_SESSIONS,
        }
    }

    /// The namespaces the sessions send to, parents before children.
    pub fn namespaces(&self) -> Vec<String> {
        let mut all: Vec<String> = Vec::new();
        for s in &self.sessions {
            let Some(ns) = &s.namespace else { continue };
            let mut path = String::new();
            for part in ns.split('/').filter(|p| !p.is_empty()) {
                path.push_str(part);
                path.push('/');
                if !all.contains(&path) {
                    all.push(path.clone());
                }
            }
        }
        all
    }

    /// The tokens the sessions send with: one per recorded accessor.
    pub fn tokens(&self) -> usize {
        let mut seen: Vec<u64> = self.sessions.iter().filter_map(|s| s.accessor).collect();
        seen.sort_unstable();
        seen.dedup();
        seen.len()
    }

    /// The note of a replay whose callers were folded, if any.
    pub fn fold_note(&self) -> Option<String> {
        (self.folded > 0).then(|| {
            format!(
                "the log has {} more callers (per namespace) than a replay makes sessions for ({}): each of them is replayed with its namespace's first session",
                self.folded, self.bound
            )
        })
    }
}

/// Where setup calls go: the run's server, token and namespace.
pub struct Server {
    pub target: Target,
    pub tls: Option<(Arc<ClientConfig>, ServerName<'static>)>,
    pub token: Option<String>,
    pub namespace: Option<String>,
    pub timeout: Duration,
}

impl Server {
    /// A client of the server with the run's token, in the run's namespace joined with
    /// `within` (a path of the log's).
    fn client(&self, within: Option<&str>) -> Client {
        let (config, name) = match &self.tls {
            Some((c, n)) => (Some(c.clone()), Some(n.clone())),
            None => (None, None),
        };
        Client::new(
            &self.target,
            config,
            name,
            self.token.clone(),
            join(self.namespace.as_deref(), within),
            self.timeout,
        )
    }
}

/// `outer/inner`, either missing.
fn join(outer: Option<&str>, inner: Option<&str>) -> Option<String> {
    let parts: Vec<&str> = [outer, inner]
        .into_iter()
        .flatten()
        .map(|p| p.trim_matches('/'))
        .filter(|p| !p.is_empty())
        .collect();
    (!parts.is_empty()).then(|| parts.join("/") + "/")
}

/// `ns/a/` as (its parent `ns/`, its name `a`).
fn parent_and_name(path: &str) -> (Option<&str>, &str) {
    let path = path.trim_end_matches('/');
    match path.rfind('/') {
        Some(i) => (Some(&path[..=i]), &path[i + 1..]),
        None => (None, path),
    }
}

/// What setup made for a replay's sessions: removed by `remove` (and on drop).
pub struct SessionsMade {
    server: Server,
    callers: Vec<Caller>,
    /// The parent of the sessions' tokens.
    parent: Option<String>,
    /// The namespaces made (not those the server had), parents first.
    namespaces: Vec<String>,
    /// The log's namespaces are sent to the run's own (the server has none).
    pub notes: Vec<String>,
    removed: bool,
}

impl SessionsMade {
    /// Makes the sessions' namespaces (those missing) and tokens for `sessions`, a replay
    /// of `span`; stops soon after a signal. Whatever was made before a failure is removed.
    pub fn set_up(
        server: Server,
        sessions: &Sessions,
        span: Duration,
        stop: &Stop,
    ) -> Result<SessionsMade, Error> {
        let mut made = SessionsMade {
            server,
            callers: Vec::new(),
            parent: None,
            namespaces: Vec::new(),
            notes: Vec::new(),
            removed: false,
        };
        let has_namespaces = made.make_namespaces(&sessions.namespaces(), stop)?;
        let ttl = format!("{}s", span.as_secs() + 3600);
        made.make_tokens(sessions, &ttl, stop)?;
        if !has_namespaces {
            for c in &mut made.callers {
                c.namespace = None;
            }
        }
        Ok(made)
    }

    /// The engine's callers, session 1 first.
    pub fn callers(&self) -> Vec<Caller> {
        self.callers.clone()
    }

    /// The namespaces the sessions send to other than the run's own, each once: each
    /// needs fixtures of its own (`use_requests`).
    pub fn other_namespaces(&self) -> Vec<String> {
        let own = join(self.server.namespace.as_deref(), None);
        let mut out: Vec<String> = Vec::new();
        for ns in self.callers.iter().filter_map(|c| c.namespace.as_ref()) {
            if Some(ns) != own.as_ref() && !out.contains(ns) {
                out.push(ns.clone());
            }
        }
        out
    }

    /// The sessions in `namespace` send the requests of set `set`
    /// (`Instants::request_sets`): those of that namespace's own fixtures.
    pub fn use_requests(&mut self, namespace: &str, set: usize) {
        for c in &mut self.callers {
            if c.namespace.as_deref() == Some(namespace) {
                c.requests = Some(set);
            }
        }
    }

    /// Makes each namespace the server lacks; false when it has no namespaces at all.
    fn make_namespaces(&mut self, paths: &[String], stop: &Stop) -> Result<bool, Error> {
        for path in paths {
            if let Some(s) = stop.signal() {
                return Err(Error::Stopped(s));
            }
            let (parent, name) = parent_and_name(path);
            let mut c = self.server.client(parent).with_stop(stop.clone());
            let at = format!("/v1/sys/namespaces/{name}");
            let seen = c
                .request("GET", &at, None)
                .map_err(|e| Error::setup(e.within(format!("looking up namespace {path}"))))?;
            if seen.status == 200 {
                continue;
            }
            let what = format!("creating namespace {path}");
            match call(&mut c, "POST", &at, Some(&json!({})), &what) {
                Ok(_) => self.namespaces.push(path.clone()),
                Err(Cause::Http { status, .. })
                    if self.namespaces.is_empty() && matches!(status, 404 | 405 | 400) =>
                {
                    self.notes.push(format!(
                        "the server has no namespaces (creating namespace {path} answered {status}): the log's namespaces are replayed in the run's namespace"
                    ));
                    return Ok(false);
                }
                Err(e) => return Err(Error::setup(e)),
            }
        }
        Ok(true)
    }

    /// The parent token, then one child per recorded caller (accessor), which its
    /// sessions in every namespace send with.
    fn make_tokens(&mut self, sessions: &Sessions, ttl: &str, stop: &Stop) -> Result<(), Error> {
        if sessions.tokens() > 0 {
            let mut c = self.server.client(None).with_stop(stop.clone());
            let what = "creating the replay's parent token";
            let v = call(
                &mut c,
                "POST",
                "/v1/auth/token/create",
                Some(&json!({ "display_name": "vblast-replay", "ttl": ttl })),
                what,
            )
            .map_err(Error::setup)?;
            self.parent = Some(json_str(&v, "auth.client_token", what).map_err(Error::setup)?);
        }
        let mut made: HashMap<u64, String> = HashMap::new();
        for s in &sessions.sessions {
            if let Some(sig) = stop.signal() {
                return Err(Error::Stopped(sig));
            }
            let token = match (&self.parent, s.accessor) {
                (_, Some(a)) if made.contains_key(&a) => made.get(&a).cloned(),
                (Some(parent), Some(a)) => {
                    let mut c = self
                        .server
                        .client(None)
                        .with_token(parent)
                        .with_stop(stop.clone());
                    let what = "creating a replay session's token";
                    let v = call(
                        &mut c,
                        "POST",
                        "/v1/auth/token/create",
                        Some(&json!({ "display_name": "vblast-replay-caller", "ttl": ttl })),
                        what,
                    )
                    .map_err(Error::setup)?;
                    let token = json_str(&v, "auth.client_token", what).map_err(Error::setup)?;
                    made.insert(a, token.clone());
                    Some(token)
                }
                _ => None,
            };
            self.callers.push(Caller {
                token,
                namespace: join(self.server.namespace.as_deref(), s.namespace.as_deref()),
                requests: None,
            });
        }
        Ok(())
    }

    /// Revokes the tokens (the parent, and so its children) and removes the namespaces
    /// made, children first; the first failure is returned, after trying every removal.
    pub fn remove(&mut self) -> Result<(), Error> {
        if self.removed {
            return Ok(());
        }
        self.removed = true;
        let mut first: Option<Cause> = None;
        if let Some(parent) = self.parent.take() {
            let mut c = self.server.client(None).with_token(&parent);
            let what = "revoking the replay's session tokens";
            if let Err(e) = call(&mut c, "POST", "/v1/auth/token/revoke-self", None, what) {
                first.get_or_insert(e);
            }
        }
        for path in self.namespaces.drain(..).rev() {
            let (parent, name) = parent_and_name(&path);
            let mut c = self.server.client(parent);
            let what = format!("removing namespace {path}");
            let at = format!("/v1/sys/namespaces/{name}");
            if let Err(e) = call(&mut c, "DELETE", &at, None, &what) {
                first.get_or_insert(e);
            }
        }
        first.map_or(Ok(()), |e| Err(Error::cleanup(e)))
    }
}

impl Drop for SessionsMade {
    fn drop(&mut self) {
        if let Err(e) = self.remove() {
            eprintln!("vblast: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_caller_in_each_namespace_is_a_session_up_to_the_bound() {
        let ns = |s: &str| Some(s.to_string());
        let requests = vec![
            (Some(1), None),
            (None, None),
            (Some(2), ns("a/")),
            (Some(1), None),
            (None, ns("a/")),
            (Some(1), ns("a/b/")),
        ];
        let s = Sessions::of(requests.clone().into_iter(), 3);
        assert_eq!(s.of_request, [1, 0, 2, 1, 3, 4]);
        assert_eq!(s.tokens(), 2);
        assert_eq!(s.namespaces(), ["a/", "a/b/"]);
        assert_eq!(s.folded, 0);
        assert!(s.fold_note().is_none());
        // A mix of 30000 operations leaves room for one session: the rest fold.
        let s = Sessions::of(requests.into_iter(), 30_000);
        assert_eq!(s.bound, 1);
        assert_eq!(s.of_request, [1, 0, 0, 1, 0, 0]);
        assert_eq!(s.folded, 3);
        assert!(s.fold_note().unwrap().contains("(1)"));
    }

    #[test]
    fn namespaces_join_under_the_runs() {
        assert_eq!(
            join(Some("team"), Some("a/b/")).as_deref(),
            Some("team/a/b/")
        );
        assert_eq!(join(None, Some("a/")).as_deref(), Some("a/"));
        assert_eq!(join(None, None), None);
        assert_eq!(parent_and_name("a/b/"), (Some("a/"), "b"));
        assert_eq!(parent_and_name("a/"), (None, "a"));
    }
}
