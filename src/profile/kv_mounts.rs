//! A log's kv mounts as a run's kv fixtures (`vblast replay`, `vblast run --workload`):
//! one fixture per recorded kv mount in each namespace, seeded with that mount's distinct
//! paths (at most `MAX_SECRETS`), of its kv version, and the requests recorded on it sent
//! to it. Pure: a kv operation of the mix becomes one entry per recorded mount
//! (`MixEntry`), named `kv-read@secret` when the log shows it on more than one mount path, and
//! each entry's fixture in a namespace is `KvMounts::fixture`.

/// The most secrets one recorded mount's fixture seeds (a log that read more distinct
/// paths on a mount is said to be cut in a note: `KvMounts::capped`).
pub const MAX_SECRETS: u64 = 100_000;

/// One recorded kv mount.
#[derive(Clone, Debug, PartialEq)]
pub struct KvMount {
    /// "root" or the namespace's path (`team-a/`).
    pub namespace: String,
    /// The mount point under its namespace (`secret/`).
    pub mount: String,
    pub version: u8,
    /// Distinct request paths on it.
    pub distinct: u64,
    /// Its requests per operation.
    pub ops: Vec<(String, u64)>,
}

/// The recorded kv mounts, busiest first.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KvMounts {
    pub mounts: Vec<KvMount>,
}

/// An operation of a run's mix, on a recorded kv mount (its path, `secret/`) when it is a
/// kv operation the log shows on one.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MixEntry {
    pub op: String,
    pub mount: Option<String>,
}

/// A mix's entries, each with its recorded requests.
pub type EntryCounts = Vec<(MixEntry, u64)>;

/// The fixture of a kv entry in a namespace: the recorded mount it stands for (the
/// session's operations of one group share one mount), its secrets and its kv version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KvFixture {
    pub group: String,
    pub secrets: u64,
    pub version: u8,
}

/// Whether `op` is one of the kv operations a recorded kv mount's fixture serves.
pub fn is_kv_op(op: &str) -> bool {
    matches!(op, "kv-read" | "kv-write" | "kv-list" | "kv-delete")
}

impl KvMount {
    /// A recorded mount as a kv mount, if its type is one (`kv`, `generic`; a version the
    /// paths did not tell is 2): the one rule for a profile's mounts and a workload
    /// file's fixtures.
    pub fn recorded<'a>(
        namespace: &str,
        mount: &str,
        mount_type: &str,
        kv_version: Option<u8>,
        distinct: u64,
        ops: impl Iterator<Item = (&'a str, u64)>,
    ) -> Option<KvMount> {
        matches!(mount_type, "kv" | "generic").then(|| KvMount {
            namespace: namespace.to_string(),
            mount: mount.to_string(),
            version: kv_version.unwrap_or(2),
            distinct,
            ops: ops.map(|(name, n)| (name.to_string(), n)).collect(),
        })
    }
}

impl KvMounts {
    /// The kv mounts (`kv`, `generic`) of a profile's mounts.
    pub fn of_profile(mounts: &[super::figures::MountProfile]) -> KvMounts {
        KvMounts {
            mounts: mounts
                .iter()
                .filter_map(|m| {
                    KvMount::recorded(
                        &m.namespace,
                        &m.mount,
                        &m.mount_type,
                        m.kv_version,
                        m.distinct_paths,
                        m.operations.iter().map(|o| (o.name.as_str(), o.requests)),
                    )
                })
                .collect(),
        }
    }

    /// The recorded mount paths, each once, busiest first.
    pub fn paths(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for m in &self.mounts {
            if !out.contains(&m.mount.as_str()) {
                out.push(&m.mount);
            }
        }
        out
    }

    /// The name an entry's report row goes by: `kv-read@secret` when the log shows its
    /// operation on two kv mount paths or more, the operation's own name otherwise.
    pub fn label(&self, e: &MixEntry) -> String {
        match &e.mount {
            Some(m) if self.paths_of(&e.op) > 1 => {
                format!("{}@{}", e.op, m.trim_end_matches('/'))
            }
            _ => e.op.clone(),
        }
    }

    /// How many recorded mount paths show `op`.
    fn paths_of(&self, op: &str) -> usize {
        self.paths()
            .into_iter()
            .filter(|p| {
                self.mounts
                    .iter()
                    .any(|m| m.mount == *p && m.ops.iter().any(|o| o.0 == op && o.1 > 0))
            })
            .count()
    }

    /// The mix `ops` (operation, recorded requests) split by recorded mount: a kv
    /// operation becomes one entry per mount path that shows it, with that path's
    /// requests of it in every namespace (what no mount shows, as under an `(other)`
    /// mount, counts with its first entry); the others stay as they are.
    pub fn entries(&self, ops: &[(String, u64)]) -> Vec<(MixEntry, u64)> {
        let mut out = Vec::new();
        for (op, total) in ops {
            let mut split: Vec<(MixEntry, u64)> = Vec::new();
            if is_kv_op(op) {
                for path in self.paths() {
                    let n: u64 = self
                        .mounts
                        .iter()
                        .filter(|m| m.mount == path)
                        .flat_map(|m| m.ops.iter())
                        .filter(|o| &o.0 == op)
                        .map(|o| o.1)
                        .sum();
                    if n > 0 {
                        split.push((
                            MixEntry {
                                op: op.clone(),
                                mount: Some(path.to_string()),
                            },
                            n,
                        ));
                    }
                }
            }
            let shown: u64 = split.iter().map(|s| s.1).sum();
            match split.first_mut() {
                Some(first) => {
                    first.1 += total.saturating_sub(shown);
                    out.extend(split);
                }
                None => out.push((
                    MixEntry {
                        op: op.clone(),
                        mount: None,
                    },
                    *total,
                )),
            }
        }
        out
    }

    /// The fixture of `e` in `namespace` ("root", `team-a/`; None: every namespace's
    /// requests go to one, so each mount path takes its largest count). A mount path
    /// the namespace did not show shares the namespace's first kv mount (its requests
    /// are never sent there); in a namespace without kv mounts, a fixture of one secret.
    /// None: not a kv entry.
    pub fn fixture(&self, e: &MixEntry, namespace: Option<&str>) -> Option<KvFixture> {
        let path = e.mount.as_deref()?;
        let of = |m: &KvMount| KvFixture {
            group: m.mount.clone(),
            secrets: m.distinct.clamp(1, MAX_SECRETS),
            version: m.version,
        };
        let same = self.mounts.iter().filter(|m| m.mount == path);
        let Some(ns) = namespace else {
            return same.max_by_key(|m| m.distinct).map(of);
        };
        let here = |m: &&KvMount| m.namespace == ns;
        self.mounts
            .iter()
            .filter(here)
            .find(|m| m.mount == path)
            .or_else(|| self.mounts.iter().find(here))
            .map(of)
            .or_else(|| {
                self.mounts
                    .iter()
                    .find(|m| m.mount == path)
                    .map(|m| KvFixture {
                        secrets: 1,
                        ..of(m)
                    })
            })
    }

    /// The mounts whose distinct paths are past `MAX_SECRETS`: (namespace, mount, count).
    pub fn capped(&self) -> Vec<(String, String, u64)> {
        self.mounts
            .iter()
            .filter(|m| m.distinct > MAX_SECRETS)
            .map(|m| (m.namespace.clone(), m.mount.clone(), m.distinct))
            .collect()
    }

    /// The note of mounts cut to `MAX_SECRETS`, if any.
    pub fn capped_note(&self) -> Option<String> {
        let cut = self.capped();
        (!cut.is_empty()).then(|| {
            let each: Vec<String> = cut
                .iter()
                .map(|(ns, m, n)| format!("{m} in {ns}: {n}"))
                .collect();
            format!(
                "the log read more distinct paths on a kv mount than a fixture seeds ({MAX_SECRETS}): {}; each is seeded with {MAX_SECRETS}",
                each.join(", ")
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mount(ns: &str, m: &str, version: u8, distinct: u64, ops: &[(&str, u64)]) -> KvMount {
        KvMount {
            namespace: ns.into(),
            mount: m.into(),
            version,
            distinct,
            ops: ops.iter().map(|(o, n)| (o.to_string(), *n)).collect(),
        }
    }

    fn entry(op: &str, m: Option<&str>) -> MixEntry {
        MixEntry {
            op: op.into(),
            mount: m.map(String::from),
        }
    }

    #[test]
    fn each_recorded_mount_is_an_entry_with_its_own_size_in_each_namespace() {
        let kv = KvMounts {
            mounts: vec![
                mount("root", "a/", 2, 7, &[("kv-read", 14), ("kv-write", 2)]),
                mount("root", "b/", 1, 3, &[("kv-read", 6)]),
                mount("team-a/", "a/", 2, 5, &[("kv-read", 5)]),
                mount("team-a/", "big/", 2, 200_000, &[("kv-list", 1)]),
            ],
        };
        let ops = [
            ("kv-read".to_string(), 26),
            ("transit-encrypt".to_string(), 4),
            ("kv-write".to_string(), 3),
            ("kv-list".to_string(), 1),
        ];
        let e = kv.entries(&ops);
        let shown: Vec<(String, u64)> = e.iter().map(|(m, n)| (kv.label(m), *n)).collect();
        let want = [
            ("kv-read@a", 19),
            ("kv-read@b", 6),
            ("transit-encrypt", 4),
            ("kv-write", 3),
            ("kv-list", 1),
        ];
        let want: Vec<(String, u64)> = want.iter().map(|(l, n)| (l.to_string(), *n)).collect();
        // 26 reads, 25 on mounts: the one no mount shows counts with a/.
        assert_eq!(shown[1..], want[1..]);
        assert_eq!(shown[0], ("kv-read@a".to_string(), 20));
        let fx = |m: &str, ns: Option<&str>| kv.fixture(&entry("kv-read", Some(m)), ns);
        let f = |g: &str, secrets, version| {
            Some(KvFixture {
                group: g.into(),
                secrets,
                version,
            })
        };
        assert_eq!(fx("a/", Some("root")), f("a/", 7, 2));
        assert_eq!(fx("b/", Some("root")), f("b/", 3, 1));
        assert_eq!(fx("a/", Some("team-a/")), f("a/", 5, 2));
        // b/ was not seen in team-a: its entry shares team-a's first mount.
        assert_eq!(fx("b/", Some("team-a/")), f("a/", 5, 2));
        assert_eq!(fx("big/", Some("team-a/")), f("big/", MAX_SECRETS, 2));
        assert_eq!(fx("a/", None), f("a/", 7, 2));
        assert_eq!(fx("a/", Some("team-b/")), f("a/", 1, 2));
        assert_eq!(
            kv.fixture(&entry("transit-encrypt", None), Some("root")),
            None
        );
        assert!(
            kv.capped_note()
                .unwrap()
                .contains("big/ in team-a/: 200000")
        );
        // One mount path: the operations keep their names.
        let one = KvMounts {
            mounts: kv.mounts[..1].to_vec(),
        };
        assert_eq!(one.label(&entry("kv-read", Some("a/"))), "kv-read");
        assert!(one.capped_note().is_none());
    }
}
