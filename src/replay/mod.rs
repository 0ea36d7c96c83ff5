//! `vblast replay`'s library: an audit log read once (through the profile's reader,
//! `crate::profile`, which keeps each request entry's time, operation and caller), the
//! requests vblast can send chosen and the rest counted and named as path shapes
//! (`ReplayPlan`), their instants placed on the replay's clock (`schedule`: `--speed`,
//! `--scale`), and the report of recorded against achieved (`report`). The requests go
//! through the engine's open model, fed the recorded instants and operations
//! (`config::schedule::Schedule::Instants`), with the operations' own setup and cleanup.

pub mod callers;
pub mod report;
pub mod schedule;

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

use serde::Serialize;

use crate::config::schedule::Instants;
use crate::error::Error;
use crate::profile::figures::Profile;
use crate::profile::kv_mounts::{self, KvMounts, MixEntry, is_kv_op};
use crate::signals::Stop;
use schedule::RecordedSchedule;

/// Requests of the log left out of the replay: an operation vblast maps but cannot make a
/// fixture for (named with its mounts), or a path it does not map (its shape).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct LeftOut {
    /// An operation's name, or a path's shape (`kv/config/<path>`); a whole path only
    /// with `--show-paths`.
    pub what: String,
    pub requests: u64,
    pub why: String,
}

/// What a replay sends, made from the log.
#[derive(Clone, Debug)]
pub struct ReplayPlan {
    /// The operations replayed, in the mix's order, with the requests the log recorded
    /// of each: a kv operation once per recorded kv mount, named `kv-read@secret` when
    /// the log shows it on two kv mount paths or more (`KvMounts::label`).
    pub mix: Vec<(String, u64)>,
    /// The recorded requests replayed, placed on the replay's clock.
    pub schedule: RecordedSchedule,
    /// Each intended send's caller and operation, `caller * mix.len() + op` (`op` an index
    /// into `mix`, `caller` into `callers` + 1, 0 being the run's own token and namespace).
    pub ops: Vec<u16>,
    /// Distinct callers (accessors) of the replayed requests: counted, never named.
    pub sessions: u64,
    /// The replay's sessions (`callers::Sessions`): one per recorded caller and namespace,
    /// up to a bound, the rest folded.
    pub callers: callers::Sessions,
    /// Each entry of `mix`: its operation, and for a kv operation the recorded kv mount
    /// it was sent to (its fixture, `kv.fixture`).
    pub entries: Vec<MixEntry>,
    /// The most secrets a kv fixture of the replay seeds (at most `MAX_SECRETS`).
    pub secrets: u64,
    /// The log's kv mounts: one fixture each per namespace, of its own size.
    pub kv: KvMounts,
    /// The log's namespaces (root as "root").
    pub namespaces: Vec<String>,
    pub left_out: Vec<LeftOut>,
    /// The log's problems, each `FILE:LINE: what`.
    pub problems: Vec<String>,
    pub files: Vec<String>,
    pub recorded_requests: u64,
}

/// A mapped operation vblast can replay: it is in the operations' registry (so it has
/// its fixture). `sys-other` is not: an unknown system path is not replayed.
fn replayable(name: &str) -> bool {
    crate::vault::ops::find(name).is_some()
}

/// Reads `files` and plans their replay at `speed` and `scale`; an input error (exit 2)
/// when nothing could be read, a factor is refused, or no request can be replayed.
pub fn plan(
    files: &[PathBuf],
    speed: f64,
    scale: f64,
    show_paths: bool,
    stop: &Stop,
) -> Result<ReplayPlan, Error> {
    // A bad factor is refused before the log is read.
    schedule::check_factors(speed, scale).map_err(|e| Error::input(e.to_string()))?;
    let (profile, kept) = crate::profile::profile_keeping(files, show_paths, stop)?;
    if kept.past_bound > 0 {
        return Err(Error::input(format!(
            "the log holds {} request entries, more than a replay keeps ({}): replay a slice of it (one of its rotated files, or the lines of a span)",
            kept.requests.len() as u64 + kept.past_bound,
            crate::profile::tally::MAX_KEPT
        )));
    }
    let problems: Vec<String> = profile
        .problems
        .iter()
        .map(crate::profile::problem_text)
        .collect();
    let left_out = left_out(&profile, &kept.ops);
    let Entries {
        kv,
        order,
        replayed,
    } = entries(&profile, &kept);
    if replayed.is_empty() {
        return Err(Error::input(nothing_to_replay(
            &profile,
            kept.requests.is_empty(),
            &left_out,
            &problems,
        )));
    }
    let times: Vec<i64> = replayed.iter().map(|r| r.0.time_ns).collect();
    let schedule = RecordedSchedule::new(&times, speed, scale).map_err(|e| match e {
        schedule::ReplayRefusal::Nothing => Error::input(format!(
            "{e}: --scale {scale} leaves none of the {} recorded requests",
            times.len()
        )),
        e => Error::input(e.to_string()),
    })?;
    let (sessions, ops) = sends(&profile, &replayed, &schedule, order.len());
    let callers: HashSet<u64> = replayed.iter().filter_map(|r| r.0.accessor).collect();
    Ok(ReplayPlan {
        mix: order.iter().map(|(e, n)| (kv.label(e), *n)).collect(),
        entries: order.into_iter().map(|(e, _)| e).collect(),
        schedule,
        ops,
        sessions: callers.len() as u64,
        callers: sessions,
        secrets: kv
            .mounts
            .iter()
            .map(|m| m.distinct.clamp(1, kv_mounts::MAX_SECRETS))
            .max()
            .unwrap_or(1),
        kv,
        namespaces: profile
            .namespaces
            .iter()
            .map(|n| n.namespace.clone())
            .collect(),
        left_out,
        problems,
        files: profile.files.clone(),
        recorded_requests: profile.requests,
    })
}

/// The replayable requests of a log by entry of the mix: its kv mounts, the entries by
/// recorded count (most first), and each replayable request with its entry's place.
struct Entries<'a> {
    kv: KvMounts,
    order: Vec<(MixEntry, u64)>,
    replayed: Vec<(&'a crate::profile::tally::KeptRequest, u16)>,
}

/// The mix of `kept`: the replayable operations, a kv one per recorded kv mount
/// (`KvMounts`), each request with its entry.
fn entries<'a>(profile: &Profile, kept: &'a crate::profile::tally::Kept) -> Entries<'a> {
    let kv = KvMounts::of_profile(&profile.mounts);
    let kv_paths: HashMap<u64, String> = kv
        .paths()
        .into_iter()
        .map(|m| (crate::profile::distinct::hash_of(m), m.to_string()))
        .collect();
    let key_of = |r: &crate::profile::tally::KeptRequest| -> Option<(u32, Option<u64>)> {
        let op = r.op.filter(|&o| replayable(&kept.ops[o as usize]))?;
        let on_kv =
            is_kv_op(&kept.ops[op as usize]) && r.mount.is_some_and(|m| kv_paths.contains_key(&m));
        Some((op, r.mount.filter(|_| on_kv)))
    };
    let mut counts: HashMap<(u32, Option<u64>), u64> = HashMap::new();
    for r in &kept.requests {
        if let Some(k) = key_of(r) {
            *counts.entry(k).or_default() += 1;
        }
    }
    let entry_of = |k: &(u32, Option<u64>)| MixEntry {
        op: kept.ops[k.0 as usize].clone(),
        mount: k.1.and_then(|m| kv_paths.get(&m).cloned()),
    };
    let mut order: Vec<((u32, Option<u64>), u64)> = counts.into_iter().collect();
    order.sort_by(|a, b| {
        b.1.cmp(&a.1)
            .then_with(|| kv.label(&entry_of(&a.0)).cmp(&kv.label(&entry_of(&b.0))))
    });
    let index: HashMap<(u32, Option<u64>), u16> = order
        .iter()
        .enumerate()
        .map(|(i, &(k, _))| (k, i as u16))
        .collect();
    let replayed: Vec<(&crate::profile::tally::KeptRequest, u16)> = kept
        .requests
        .iter()
        .filter_map(|r| Some((r, *index.get(&key_of(r)?)?)))
        .collect();
    Entries {
        order: order.iter().map(|(k, n)| (entry_of(k), *n)).collect(),
        kv,
        replayed,
    }
}

impl ReplayPlan {
    /// The mix's operations as `--op` writes it (`kv-read:80,kv-write:20`), each once,
    /// weighted by the recorded counts (the weights matter only to an operation's setup:
    /// each request's operation is the recorded one; the entries of its kv mounts are
    /// made from it: `entry_counts`).
    pub fn op_mix(&self) -> String {
        let mut ops: Vec<(&str, u64)> = Vec::new();
        for (e, (_, c)) in self.entries.iter().zip(&self.mix) {
            match ops.iter_mut().find(|o| o.0 == e.op) {
                Some(o) => o.1 += c,
                None => ops.push((&e.op, *c)),
            }
        }
        ops.iter()
            .map(|(n, c)| format!("{n}:{}", (*c).clamp(1, u64::from(u32::MAX))))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The mix's entries with their recorded requests (`commands::callers::kv_choices`).
    pub fn entry_counts(&self) -> Vec<(MixEntry, u64)> {
        self.entries
            .iter()
            .cloned()
            .zip(self.mix.iter().map(|m| m.1))
            .collect()
    }

    /// The engine's schedule: each send's instant, caller and operation (`callers`: the
    /// sessions' tokens and namespaces as setup made them, `callers::SessionsMade`; `request_sets`:
    /// the operations' requests in each other namespace, as its fixtures made them).
    pub fn instants(
        &self,
        callers: Vec<crate::config::schedule::Caller>,
        request_sets: Vec<Vec<crate::template::RequestSpec>>,
    ) -> Instants {
        Instants {
            offsets: self.schedule.offsets().into(),
            ops: self.ops.clone().into(),
            callers: callers.into(),
            request_sets: request_sets.into(),
        }
    }
}

/// The replay's sessions, and each send's caller and operation (`caller * mix + op`,
/// each replayed request with its entry's place in the mix of `mix` entries).
fn sends(
    profile: &Profile,
    replayed: &[(&crate::profile::tally::KeptRequest, u16)],
    schedule: &RecordedSchedule,
    mix: usize,
) -> (callers::Sessions, Vec<u16>) {
    let names = namespace_names(profile);
    let sessions = callers::Sessions::of(
        replayed
            .iter()
            .map(|(r, _)| (r.accessor, r.namespace.and_then(|n| names.get(&n).cloned()))),
        mix,
    );
    let ops = schedule
        .sends()
        .iter()
        .map(|s| {
            let op = usize::from(replayed[s.recorded].1);
            (sessions.of_request[s.recorded] as usize * mix + op) as u16
        })
        .collect();
    (sessions, ops)
}

/// The log's namespace paths by their hash (`KeptRequest::namespace`).
fn namespace_names(p: &Profile) -> HashMap<u64, String> {
    p.namespaces
        .iter()
        .filter(|n| n.namespace != "root" && n.namespace != "(other)")
        .map(|n| {
            (
                crate::profile::distinct::hash_of(&n.namespace),
                n.namespace.clone(),
            )
        })
        .collect()
}

/// What the replay leaves out: the mapped operations vblast has no fixture for (with the
/// mounts they were on), then the unmapped requests by path shape.
fn left_out(p: &Profile, names: &[String]) -> Vec<LeftOut> {
    let mut out = Vec::new();
    for o in &p.operations {
        if replayable(&o.name) || !names.contains(&o.name) {
            continue;
        }
        let mounts: Vec<String> = p
            .mounts
            .iter()
            .filter(|m| m.operations.iter().any(|c| c.name == o.name))
            .map(|m| format!("{} ({})", m.mount, m.mount_type))
            .collect();
        out.push(LeftOut {
            what: o.name.clone(),
            requests: o.requests,
            why: if mounts.is_empty() {
                "vblast cannot make a fixture for it".into()
            } else {
                format!(
                    "vblast cannot make a fixture for it (on {})",
                    mounts.join(", ")
                )
            },
        });
    }
    let listed = p.unmapped.paths.as_ref().unwrap_or(&p.unmapped.shapes);
    for s in listed {
        out.push(LeftOut {
            what: s.path.clone(),
            requests: s.requests,
            why: "a path vblast does not map to an operation".into(),
        });
    }
    let shown: u64 = listed.iter().map(|s| s.requests).sum();
    if p.unmapped.requests > shown {
        out.push(LeftOut {
            what: "(other unmapped paths)".into(),
            requests: p.unmapped.requests - shown,
            why: "a path vblast does not map to an operation".into(),
        });
    }
    out
}

/// The one message of a log with nothing to replay.
fn nothing_to_replay(
    p: &Profile,
    no_request: bool,
    left: &[LeftOut],
    problems: &[String],
) -> String {
    let mut why = if no_request {
        "no request entry with a time (a log of only responses cannot be replayed: its requests' instants are not in it)".to_string()
    } else {
        format!(
            "none of its {} requests is one vblast can make a fixture for: {}",
            p.requests,
            left.iter()
                .map(|l| format!("{} ({} requests): {}", l.what, l.requests, l.why))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    if !problems.is_empty() {
        why.push_str(&format!("; the log's problems: {}", problems.join("; ")));
    }
    format!("nothing to replay in {}: {why}", p.files.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(
        kind: &str,
        id: u32,
        sec: u32,
        mount_type: &str,
        mount: &str,
        path: &str,
        op: &str,
    ) -> String {
        format!(
            r#"{{"time":"2026-12-05T08:00:{sec:02}.{id:06}Z","type":"{kind}","request":{{"id":"{id}","operation":"{op}","mount_point":"{mount}","mount_type":"{mount_type}","client_token_accessor":"hmac-sha256:acc{}","namespace":{{"id":"root"}},"path":"{path}"}}}}"#,
            id % 3
        )
    }

    fn plan_of(text: &str, scale: f64) -> Result<ReplayPlan, Error> {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.log");
        std::fs::write(&p, text).unwrap();
        plan(&[p], 1.0, scale, false, &Stop::new())
    }

    /// kv reads and writes replayed in the recorded order; an LDAP login and an unmapped
    /// path left out, named by operation and shape, the secret's name nowhere.
    #[test]
    fn the_plan_keeps_what_vblast_can_send_and_names_the_rest() {
        let mut text = String::new();
        for i in 0..6 {
            let (op, path) = if i % 3 == 0 {
                ("update", "secret/data/payroll")
            } else {
                ("read", "secret/data/team")
            };
            text += &line("request", i, i / 2, "kv", "secret/", path, op);
            text.push('\n');
        }
        text += &line(
            "request",
            7,
            3,
            "ldap",
            "auth/ldap/",
            "auth/ldap/login/alice",
            "update",
        );
        text.push('\n');
        text += &line("request", 8, 3, "kv", "secret/", "secret/config", "read");
        text.push('\n');
        let p = plan_of(&text, 1.0).unwrap();
        assert_eq!(
            p.mix,
            [("kv-read".to_string(), 4), ("kv-write".to_string(), 2)]
        );
        assert_eq!(p.op_mix(), "kv-read:4,kv-write:2");
        // Each send's caller and operation: caller * 2 + op, each accessor its session.
        let op_of = |ops: &[u16]| ops.iter().map(|o| o % 2).collect::<Vec<_>>();
        assert_eq!(op_of(&p.ops), [1, 0, 0, 1, 0, 0]);
        assert_eq!(p.ops, [3, 4, 6, 3, 4, 6]);
        assert_eq!(p.callers.of_request, [1, 2, 3, 1, 2, 3]);
        assert_eq!((p.callers.tokens(), p.callers.folded), (3, 0));
        assert_eq!(p.schedule.recorded_per_second(), [2, 2, 2]);
        assert_eq!(p.sessions, 3);
        assert_eq!(p.secrets, 3);
        let left: Vec<(&str, u64)> = p
            .left_out
            .iter()
            .map(|l| (l.what.as_str(), l.requests))
            .collect();
        assert_eq!(left, [("ldap-login", 1), ("secret/config", 1)]);
        let shown = format!("{:?}", p.left_out);
        assert!(
            !shown.contains("alice") && !shown.contains("hmac"),
            "{shown}"
        );
        let doubled = plan_of(&text, 2.0).unwrap();
        assert_eq!(op_of(&doubled.ops), [1, 1, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0]);
    }

    #[test]
    fn nothing_to_replay_is_one_input_error() {
        let ldap = line(
            "request",
            1,
            1,
            "ldap",
            "auth/ldap/",
            "auth/ldap/login/alice",
            "update",
        );
        let e = plan_of(&ldap, 1.0).unwrap_err();
        assert!(matches!(e, Error::Input(_)));
        assert!(
            e.to_string()
                .contains("ldap-login (1 requests): vblast cannot make a fixture"),
            "{e}"
        );
        let response = line("response", 1, 1, "kv", "secret/", "secret/data/a", "read");
        let e = plan_of(&response, 1.0).unwrap_err();
        assert!(e.to_string().contains("only responses"), "{e}");
        let read = line("request", 1, 1, "kv", "secret/", "secret/data/a", "read");
        for (scale, said) in [
            (0.0, "--scale 0: give a factor above 0"),
            (-1.0, "--scale -1: give"),
        ] {
            let e = plan_of(&read, scale).unwrap_err();
            assert!(e.to_string().contains(said), "{e}");
        }
    }
}
