//! The KV family: `kv-read`, `kv-write`, `kv-list` and `kv-delete` on KV v1 and v2, and
//! `cubbyhole-read`, `cubbyhole-write` (the same requests on the token's cubbyhole, under a
//! fresh prefix). Setup creates a fresh mount
//! (or, with `mount`, writes under a fresh prefix inside the user's mount, never touching
//! the user's own secrets), seeds it concurrently, and cleanup removes exactly what setup
//! wrote. The requests are byte templates whose secret index is patched per request.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::vb::{Keys, Mapped};
use super::{
    Bound, ConfigBound, Created, Fixture, OpInfo, OptionKind as ValueKind, OptionSpec,
    OptionValues, SetupCtx, VaultBenchmark, VaultOp, VbType,
};
use crate::error::{Cause, Error};
use crate::signals::Stop;
use crate::template::{Piece, RequestSpec};
use crate::vault::bulk::{self, Job};
use crate::vault::client::Client;
use crate::vault::fixture::SecretsUnder;
use crate::vault::progress::{Display, SetupLog};
use crate::workload::Operation;

/// How long a fresh mount may take to become usable.
const MOUNT_READY_WAIT: Duration = Duration::from_secs(10);
/// Random characters written into each kv-write value; the rest is fixed filler.
const VARYING: usize = 16;

const OPTIONS: &[OptionSpec] = &[KV_VERSION, MOUNT, SECRETS, SECRET_SIZE];

pub(crate) const KV_VERSION: OptionSpec = OptionSpec {
    flag: "kv-version",
    value_name: "1|2",
    kind: ValueKind::Number { min: 1, max: 2 },
    default: Some("2"),
    help: "KV engine version for a mount vblast creates (or expects with --mount)",
};

pub(crate) const MOUNT: OptionSpec = OptionSpec {
    flag: "mount",
    value_name: "NAME",
    kind: ValueKind::Text,
    default: None,
    help: "Use this existing KV mount instead of creating a fresh one",
};

pub(crate) const SECRETS: OptionSpec = OptionSpec {
    flag: "secrets",
    value_name: "N",
    kind: ValueKind::Count { min: 1 },
    default: Some("1000"),
    help: "Secrets seeded before the run",
};

pub(crate) const SECRET_SIZE: OptionSpec = OptionSpec {
    flag: "secret-size",
    value_name: "BYTES",
    kind: ValueKind::Bytes {
        max: Some(16 * 1024 * 1024),
    },
    default: Some("100"),
    help: "Size of each secret's value, in bytes",
};

/// The engine's `version`, held to `--kv-version`'s 1 or 2 (the only KV versions there
/// are). A vault-benchmark file does not set it: its test type does (kvv1_*, kvv2_*), and
/// the cubbyhole is always 1.
const BOUNDS: &[ConfigBound] = &[ConfigBound {
    key: "version",
    file_key: "",
    bound: Bound::Flag(KV_VERSION),
}];

const ALSO: &[(&str, &str)] = &[
    (
        "--no-setup",
        "read s0..sN-1 of --mount (default secret) as they are",
    ),
    ("--keep", "leave the mount (or prefix) vblast created"),
];

const DOC: &str = "Setup creates a fresh KV mount (or, with `--mount`, writes under a fresh prefix inside the user's mount, never touching the user's own secrets), seeds `--secrets` secrets of `--secret-size` bytes concurrently, and cleanup removes exactly what setup wrote. With `--no-setup` the secrets s0..sN-1 of `--mount` (default `secret`) are used as they are.";

/// vault-benchmark's KV tests: `numkvs` secrets (default 1000) of `kvsize` bytes (default 1).
fn kv_config(version: u8, c: &mut Keys, out: &mut Mapped) -> Result<(), Cause> {
    out.config.insert("version".into(), json!(version));
    let n = c.number("numkvs")?.unwrap_or(1000);
    if n == 0 {
        return Err(Cause::from(format!(
            "test '{}': config.numkvs must be at least 1",
            c.test
        )));
    }
    out.config.insert("secrets".into(), json!(n));
    out.config.insert(
        "secret_size".into(),
        json!(c.number("kvsize")?.unwrap_or(1)),
    );
    Ok(())
}

/// vault-benchmark's KV reads read secrets it seeded with `{"foo": 1}` whatever `kvsize`
/// says: here secrets of 1 byte, and a note when the file gives another size.
fn kv_read_config(version: u8, c: &mut Keys, out: &mut Mapped) -> Result<(), Cause> {
    kv_config(version, c, out)?;
    let size = out.config.insert("secret_size".into(), json!(1));
    if size
        .as_ref()
        .and_then(Value::as_u64)
        .is_some_and(|s| s != 1)
    {
        out.notes.push(format!(
            "test '{}': config.kvsize changes nothing in vault-benchmark's KV reads (it seeds each secret with {{\"foo\": 1}}): vblast's seeded secrets are 1 byte too",
            c.test
        ));
    }
    Ok(())
}

fn kv1_read_config(c: &mut Keys, out: &mut Mapped) -> Result<(), Cause> {
    kv_read_config(1, c, out)
}

fn kv2_read_config(c: &mut Keys, out: &mut Mapped) -> Result<(), Cause> {
    kv_read_config(2, c, out)
}

fn kv1_config(c: &mut Keys, out: &mut Mapped) -> Result<(), Cause> {
    kv_config(1, c, out)
}

fn kv2_config(c: &mut Keys, out: &mut Mapped) -> Result<(), Cause> {
    kv_config(2, c, out)
}

/// vault-benchmark's cubbyhole tests: one secret (its `path`), `{"foo": "bar"}`: here one
/// secret of a 3-byte value.
fn cubby_hcl(c: &mut Keys, out: &mut Mapped) -> Result<(), Cause> {
    c.names(&["path"]);
    out.config.insert("secrets".into(), json!(1));
    out.config.insert("secret_size".into(), json!(3));
    Ok(())
}

pub const READ: OpInfo = OpInfo {
    name: "kv-read",
    about: "GET a uniformly random seeded secret",
    request: "GET /v1/<mount>/data/s<i> (KV v1: /v1/<mount>/s<i>)",
    doc: DOC,
    options: OPTIONS,
    also: ALSO,
    config_from,
    build: build_read,
    vault_benchmark: VaultBenchmark::Types(&[
        VbType {
            name: "kvv1_read",
            config: kv1_read_config,
        },
        VbType {
            name: "kvv2_read",
            config: kv2_read_config,
        },
    ]),
    fixture: Fixture::Shared,
    bounds: BOUNDS,
};

pub const WRITE: OpInfo = OpInfo {
    name: "kv-write",
    about: "POST a --secret-size value to a uniformly random secret",
    request: "POST /v1/<mount>/data/s<i> (KV v1: /v1/<mount>/s<i>)",
    doc: DOC,
    options: OPTIONS,
    also: ALSO,
    config_from,
    build: build_write,
    vault_benchmark: VaultBenchmark::Types(&[
        VbType {
            name: "kvv1_write",
            config: kv1_config,
        },
        VbType {
            name: "kvv2_write",
            config: kv2_config,
        },
    ]),
    fixture: Fixture::Shared,
    bounds: BOUNDS,
};

pub const LIST: OpInfo = OpInfo {
    name: "kv-list",
    about: "GET the list of the seeded secrets (their folder, ?list=true); the answer must hold data.keys",
    request: "GET /v1/<mount>/metadata/<prefix>?list=true (KV v1: /v1/<mount>/<prefix>?list=true)",
    doc: DOC,
    options: OPTIONS,
    also: ALSO,
    config_from,
    build: build_list,
    vault_benchmark: VaultBenchmark::NoType,
    fixture: Fixture::Shared,
    bounds: BOUNDS,
};

pub const DELETE: OpInfo = OpInfo {
    name: "kv-delete",
    about: "DELETE a uniformly random seeded secret (v2: its latest version)",
    request: "DELETE /v1/<mount>/data/s<i> (KV v1: /v1/<mount>/s<i>)",
    doc: DOC,
    options: OPTIONS,
    also: ALSO,
    config_from,
    build: build_delete,
    vault_benchmark: VaultBenchmark::NoType,
    fixture: Fixture::Shared,
    bounds: BOUNDS,
};

pub const STALENESS: OpInfo = OpInfo {
    name: "kv-staleness",
    about: "How stale a standby's reads are: a probe writes new versions of one secret on the active node and times each standby until it shows them; the load itself is kv-read's",
    request: "GET /v1/<mount>/data/s<i> under load; the probe: POST /v1/<mount>/data/staleness on the active node, GET it on each standby",
    doc: STALENESS_DOC,
    options: OPTIONS,
    also: ALSO,
    config_from,
    build: build_staleness,
    vault_benchmark: VaultBenchmark::NoType,
    fixture: Fixture::Shared,
    bounds: BOUNDS,
};

const STALENESS_DOC: &str = "Needs a cluster whose standbys answer reads themselves (OpenBao on raft or PostgreSQL HA storage; `--nodes all`): a single node, or standbys that forward reads, are refused with exit status 2. KV v2 in a mount of its own (no `--mount`, no `--no-setup`). Round after round, beside the run's load, a probe writes a new version of `staleness` on the active node and polls it on every standby (`X-Vault-No-Request-Forwarding`) until that version shows, up to 5 s; the report gives the write's time and each standby's delay as percentiles with their confidence intervals (docs/clusters.md). In a weighted `--op` mix (`--op kv-staleness:20,kv-read:80`) the other operations are the background load the staleness is measured under; in `vblast sweep` each step's staleness is shown by its load.";

const CUBBY_OPTIONS: &[OptionSpec] = &[
    OptionSpec {
        help: "secrets written to the token's cubbyhole under a fresh prefix",
        ..SECRETS
    },
    OptionSpec {
        help: "size of each secret's value",
        ..SECRET_SIZE
    },
];

const CUBBY_DOC: &str = "The same requests as kv-read and kv-write on the token's cubbyhole (KV v1 at `cubbyhole/`), under a fresh prefix. A cubbyhole belongs to one token, so shards cannot share it.";

pub const CUBBY_READ: OpInfo = OpInfo {
    name: "cubbyhole-read",
    about: "GET a uniformly random secret seeded in the token's cubbyhole",
    request: "GET /v1/cubbyhole/<prefix>/s<i>",
    doc: CUBBY_DOC,
    options: CUBBY_OPTIONS,
    also: &[],
    config_from,
    build: build_cubby_read,
    vault_benchmark: VaultBenchmark::Types(&[VbType {
        name: "cubbyhole_read",
        config: cubby_hcl,
    }]),
    fixture: Fixture::NotShareable,
    bounds: BOUNDS,
};

pub const CUBBY_WRITE: OpInfo = OpInfo {
    name: "cubbyhole-write",
    about: "POST a --secret-size value to a random secret in the token's cubbyhole",
    request: "POST /v1/cubbyhole/<prefix>/s<i>",
    doc: CUBBY_DOC,
    options: CUBBY_OPTIONS,
    also: &[],
    config_from,
    build: build_cubby_write,
    vault_benchmark: VaultBenchmark::Types(&[VbType {
        name: "cubbyhole_write",
        config: cubby_hcl,
    }]),
    fixture: Fixture::NotShareable,
    bounds: BOUNDS,
};

/// The mount every token has (per token, not shareable).
const CUBBYHOLE: &str = "cubbyhole";

/// The family's config.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KvConfig {
    pub version: u8,
    /// Existing mount to use; None creates a fresh one.
    pub mount: Option<String>,
    pub secrets: u64,
    pub secret_size: usize,
    /// A recorded kv mount (`secret/`, from a replayed log or a workload file) whose
    /// requests this operation sends: the session's first operation with it makes the
    /// mount and seeds it, the others use that mount (`Naming::shared`), so that each
    /// recorded mount is one fixture of its own size. None: a fixture of its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
}

/// `config` (a kv operation's) set to serve the recorded kv mount `group` with `secrets`
/// secrets of kv `version`, sharing its fixture with the session's other operations of
/// that mount (`KvConfig::group`). A config naming the user's own `--mount` keeps it and
/// its prefix: only its count is set.
pub fn on_mount(config: &Value, group: &str, secrets: u64, version: u8) -> Result<Value, Cause> {
    let mut c = parse_config(config)?;
    c.secrets = secrets.max(1);
    if c.mount.is_none() {
        c.version = version;
        c.group = Some(group.to_string());
    }
    serde_json::to_value(c).map_err(|e| Cause::from(format!("bad config: {e}")))
}

pub(crate) fn config_from(f: &OptionValues) -> Value {
    serde_json::to_value(KvConfig {
        version: f.number("kv-version").unwrap_or(2) as u8,
        mount: f.text("mount"),
        secrets: f.number("secrets").unwrap_or(1000),
        secret_size: f.number("secret-size").unwrap_or(100) as usize,
        group: None,
    })
    .unwrap_or(Value::Null)
}

fn parse_config(v: &Value) -> Result<KvConfig, Cause> {
    let c: KvConfig = serde_json::from_value(v.clone()).map_err(|e| format!("bad config: {e}"))?;
    if c.version != 1 && c.version != 2 {
        return Err(Cause::from(format!(
            "kv version {} is not supported (use 1 or 2)",
            c.version
        )));
    }
    if c.secrets == 0 {
        return Err(Cause::from("--secrets must be at least 1"));
    }
    if c.mount
        .as_deref()
        .is_some_and(|m| normalize_mount(m).is_empty())
    {
        return Err(Cause::from("the mount name is empty"));
    }
    Ok(c)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum KvKind {
    Read,
    /// kv-read's requests under load, and the staleness probe's secret.
    Staleness,
    Write,
    List,
    Delete,
}

pub(crate) fn build_read(v: &Value) -> Result<Box<dyn VaultOp>, Cause> {
    Ok(Box::new(KvOp::new(KvKind::Read, parse_config(v)?)))
}

fn build_write(v: &Value) -> Result<Box<dyn VaultOp>, Cause> {
    Ok(Box::new(KvOp::new(KvKind::Write, parse_config(v)?)))
}

fn build_staleness(v: &Value) -> Result<Box<dyn VaultOp>, Cause> {
    Ok(Box::new(KvOp::new(KvKind::Staleness, parse_config(v)?)))
}

fn build_list(v: &Value) -> Result<Box<dyn VaultOp>, Cause> {
    Ok(Box::new(KvOp::new(KvKind::List, parse_config(v)?)))
}

fn build_delete(v: &Value) -> Result<Box<dyn VaultOp>, Cause> {
    Ok(Box::new(KvOp::new(KvKind::Delete, parse_config(v)?)))
}

/// The cubbyhole is KV v1 at `cubbyhole/`: the same fixture under a fresh prefix.
fn cubby_config(v: &Value) -> Result<KvConfig, Cause> {
    let mut c = parse_config(v)?;
    c.mount = Some(CUBBYHOLE.into());
    c.version = 1;
    Ok(c)
}

fn build_cubby_read(v: &Value) -> Result<Box<dyn VaultOp>, Cause> {
    let mut op = KvOp::new(KvKind::Read, cubby_config(v)?);
    op.name = CUBBY_READ.name;
    Ok(Box::new(op))
}

fn build_cubby_write(v: &Value) -> Result<Box<dyn VaultOp>, Cause> {
    let mut op = KvOp::new(KvKind::Write, cubby_config(v)?);
    op.name = CUBBY_WRITE.name;
    Ok(Box::new(op))
}

/// The KV fixture in place.
#[derive(Clone, Debug)]
pub struct KvSetup {
    /// Mount path without slashes at either end.
    pub mount: String,
    pub version: u8,
    /// Whether we created the mount (and so must remove it).
    pub created: bool,
    /// Secrets live under this prefix ("vblast-1a2b3c4d/") inside a user's mount; empty
    /// in a mount of our own or with --no-setup.
    pub prefix: String,
    /// Whether secrets were (or may have been) written under `prefix`.
    pub wrote_prefix: bool,
    pub secrets: u64,
}

struct KvOp {
    kind: KvKind,
    /// Name in reports.
    name: &'static str,
    config: KvConfig,
    setup: Option<KvSetup>,
    /// How setup showed its progress: cleanup's removal of secrets shows it so too.
    display: Display,
    /// Seeding stopped short: the secrets below this index may have been written.
    reached: Option<u64>,
}

impl KvOp {
    fn new(kind: KvKind, config: KvConfig) -> KvOp {
        KvOp {
            kind,
            name: match kind {
                KvKind::Read => READ.name,
                KvKind::Staleness => STALENESS.name,
                KvKind::Write => WRITE.name,
                KvKind::List => LIST.name,
                KvKind::Delete => DELETE.name,
            },
            config,
            setup: None,
            display: Display::Off,
            reached: None,
        }
    }

    /// How many of the fixture's secrets may be on the server: all, or as far as a
    /// seeding stopped short got.
    fn written(&self, s: &KvSetup) -> u64 {
        self.reached.map_or(s.secrets, |r| r.min(s.secrets))
    }

    fn fixture(&self) -> KvSetup {
        self.setup.clone().unwrap_or_else(|| KvSetup {
            mount: normalize_mount(self.config.mount.as_deref().unwrap_or("secret")),
            version: self.config.version,
            created: false,
            prefix: String::new(),
            wrote_prefix: false,
            secrets: self.config.secrets,
        })
    }
}

impl VaultOp for KvOp {
    fn check(&self, ctx: &SetupCtx) -> Result<(), Error> {
        if self.kind == KvKind::Staleness
            && (ctx.no_setup || self.config.mount.is_some() || self.config.version != 2)
        {
            return Err(Error::input(
                "kv-staleness writes versions of a secret in a KV v2 mount of its own: it takes no --mount, --kv-version 1 or --no-setup",
            ));
        }
        if ctx.no_setup && self.config.mount.as_deref() == Some(CUBBYHOLE) {
            return Err(Error::input(format!(
                "{} writes its secrets to the token's cubbyhole and cannot run with --no-setup",
                self.name
            )));
        }
        Ok(())
    }

    fn setup(&mut self, ctx: &SetupCtx) -> Result<(), Error> {
        self.check(ctx)?;
        self.display = ctx.log.display();
        if ctx.no_setup {
            self.setup = Some(self.fixture());
            return Ok(());
        }
        if let Some(s) = shared_kv(ctx, &self.config)? {
            self.setup = Some(s);
            return Ok(());
        }
        let key = self.config.group.as_ref().map(|g| format!("kv:{g}"));
        if let Some(mount) = key.as_deref().and_then(|k| ctx.naming.shared(k)) {
            // Another operation of the session made this recorded mount's fixture (and
            // removes it): its secrets are read and written here, nothing made.
            self.setup = Some(KvSetup {
                mount,
                version: self.config.version,
                created: false,
                prefix: String::new(),
                wrote_prefix: false,
                secrets: self.config.secrets,
            });
            return Ok(());
        }
        prepare_kv(ctx, &self.config, &mut self.setup, &mut self.reached)?;
        if let (Some(k), Some(s)) = (key, &self.setup)
            && s.created
        {
            ctx.naming.share(&k, &s.mount);
        }
        Ok(())
    }

    fn operation(&self) -> Operation {
        let kv = self.fixture();
        let mut op = match self.kind {
            KvKind::Read | KvKind::Staleness => read(&kv),
            KvKind::Write => write(&kv, self.config.secret_size),
            KvKind::List => list(&kv),
            KvKind::Delete => delete(&kv),
        };
        op.name = self.name.into();
        op
    }

    fn created(&self) -> Vec<Created> {
        let Some(s) = &self.setup else {
            return Vec::new();
        };
        let mut out = Vec::new();
        if s.created {
            out.push(Created {
                what: format!("kv mount '{}' ({} secrets)", s.mount, self.written(s)),
                remove_with: format!("vault secrets disable {}", s.mount),
            });
        } else if s.wrote_prefix {
            let sub = if s.version == 2 { "metadata " } else { "" };
            out.push(Created {
                what: format!(
                    "{} secrets under '{}/{}' in the existing mount",
                    self.written(s),
                    s.mount,
                    s.prefix
                ),
                remove_with: format!(
                    "vault kv {sub}delete -mount={} {}<name> for each secret listed by `vault kv list -mount={} {}`",
                    s.mount, s.prefix, s.mount, s.prefix
                ),
            });
        }
        out
    }

    fn staleness_path(&self) -> Option<String> {
        (self.kind == KvKind::Staleness).then(|| {
            let kv = self.fixture();
            format!(
                "/v1/{}/data/{}staleness",
                kv.mount.trim_matches('/'),
                kv.prefix
            )
        })
    }

    fn ready_on(&self, client: &mut Client) -> Result<bool, Cause> {
        match &self.setup {
            Some(s) if s.mount != CUBBYHOLE => Ok(usable_now(client, s)?.is_ok()),
            _ => Ok(true),
        }
    }

    fn cleanup(&mut self, client: &mut Client, stop: &Stop) -> Result<(), Cause> {
        let Some(s) = self.setup.clone() else {
            return Ok(());
        };
        if s.created {
            cleanup_kv(client, &s)?;
            self.setup = None;
        } else if s.wrote_prefix {
            let target = client.clone_fresh();
            let make = || target.clone_fresh();
            let upto = self.written(&s);
            remove_prefixed(&make, &SetupLog::new(self.display), &s, upto, stop)?;
            self.setup = None;
        }
        Ok(())
    }
}

/// The path of secret `s<index>` (under the prefix) on the mount: the index is patched per
/// request.
fn secret_path(kv: &KvSetup) -> Vec<Piece> {
    let mount = kv.mount.trim_matches('/');
    let prefix = if kv.version == 2 {
        format!("/v1/{mount}/data/{}s", kv.prefix)
    } else {
        format!("/v1/{mount}/{}s", kv.prefix)
    };
    vec![Piece::lit(prefix), Piece::Index { count: kv.secrets }]
}

/// Reads a uniformly random seeded secret.
pub fn read(kv: &KvSetup) -> Operation {
    Operation::new(
        "kv-read",
        RequestSpec {
            method: "GET".into(),
            path: secret_path(kv),
            headers: vec![],
            body: None,
            captured_headers: vec![],
        },
    )
}

/// Lists the folder of the seeded secrets (the mount's root, or the prefix).
pub fn list(kv: &KvSetup) -> Operation {
    let mount = kv.mount.trim_matches('/');
    let path = if kv.version == 2 {
        format!("/v1/{mount}/metadata/{}?list=true", kv.prefix)
    } else {
        format!("/v1/{mount}/{}?list=true", kv.prefix)
    };
    let mut op = Operation::new(
        "kv-list",
        RequestSpec {
            method: "GET".into(),
            path: vec![Piece::lit(path)],
            headers: vec![],
            body: None,
            captured_headers: vec![],
        },
    );
    op.expect = Some(crate::capture::Expect::present("data.keys"));
    op
}

/// Deletes a uniformly random seeded secret (KV v2: soft-deletes its latest version; a
/// secret deleted already answers 204 again).
pub fn delete(kv: &KvSetup) -> Operation {
    Operation::new(
        "kv-delete",
        RequestSpec {
            method: "DELETE".into(),
            path: secret_path(kv),
            headers: vec![],
            body: None,
            captured_headers: vec![],
        },
    )
}

/// Writes a uniformly random secret with a value of `size` bytes.
pub fn write(kv: &KvSetup, size: usize) -> Operation {
    let varying = size.min(VARYING);
    let filler = "x".repeat(size - varying);
    let (open, close) = if kv.version == 2 {
        ("{\"data\":{\"value\":\"", "\"}}")
    } else {
        ("{\"value\":\"", "\"}")
    };
    Operation::new(
        "kv-write",
        RequestSpec {
            method: "POST".into(),
            path: secret_path(kv),
            headers: vec![("Content-Type".into(), "application/json".into())],
            body: Some(vec![
                Piece::lit(open),
                Piece::Hex { width: varying },
                Piece::lit(filler),
                Piece::lit(close),
            ]),
            captured_headers: vec![],
        },
    )
}

/// Name of secret `index` out of `count`: "s" and the index zero-padded to the width of
/// `count - 1` (count 1000 gives "s000".."s999").
pub fn secret_name(index: u64, count: u64) -> String {
    let max = count.saturating_sub(1);
    let width = max.checked_ilog10().map_or(1, |d| d as usize + 1);
    format!("s{index:0width$}")
}

pub(crate) fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

const VALUE_ALPHABET: &[u8; 64] =
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// A secret value of exactly `size` printable ASCII bytes that need no JSON escaping,
/// different for each index.
pub fn secret_value(size: usize, index: u64) -> String {
    let mut state = index ^ 0x5EED_0F5E_C2E7;
    let mut out = Vec::with_capacity(size);
    while out.len() < size {
        let mut word = splitmix64(&mut state);
        for _ in 0..10 {
            if out.len() == size {
                break;
            }
            out.push(VALUE_ALPHABET[(word & 63) as usize]);
            word >>= 6;
        }
    }
    // Only alphabet bytes were pushed, all ASCII.
    String::from_utf8(out).unwrap_or_default()
}

fn normalize_mount(m: &str) -> String {
    m.trim().trim_matches('/').to_string()
}

/// The sys/mounts entry for `mount` (keys are "name/"; newer servers also nest them under
/// "data").
fn find_mount<'a>(list: &'a Value, mount: &str) -> Option<&'a Value> {
    let key = format!("{mount}/");
    list.get("data")
        .and_then(|d| d.get(&key))
        .or_else(|| list.get(&key))
}

/// (type, kv version) from a mount entry; a kv mount without a version option is v1.
fn mount_kind(entry: &Value) -> (String, u8) {
    let kind = entry
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("unknown")
        .to_string();
    let version = match entry.get("options").and_then(|o| o.get("version")) {
        Some(Value::String(s)) => s.trim().parse().unwrap_or(1),
        Some(Value::Number(n)) => n.as_u64().map_or(1, |v| v.min(255) as u8),
        _ => 1,
    };
    (kind, version)
}

/// Looks an existing mount up: via sys/mounts, or, when the token may not list mounts,
/// via sys/internal/ui/mounts/<mount> (open to any token that can use the mount).
fn describe_existing(client: &mut Client, mount: &str) -> Result<(String, u8), Cause> {
    let base = client.base();
    let place = match client.namespace() {
        Some(ns) => format!("{base} (namespace '{ns}')"),
        None => base.clone(),
    };
    let missing = || format!("mount '{mount}' does not exist on {place}");
    let r = client.request("GET", "/v1/sys/mounts", None)?;
    if r.status == 200 {
        let list = r
            .json()
            .ok_or_else(|| format!("{base}/v1/sys/mounts answered with something not JSON"))?;
        return find_mount(&list, mount)
            .map(mount_kind)
            .ok_or_else(|| missing().into());
    }
    if r.status != 403 {
        return Err(Cause::from(format!(
            "listing mounts on {base} failed: HTTP {}: {}",
            r.status,
            r.error_text()
        )));
    }
    let listing_error = r.error_text();
    let r = client.request("GET", &format!("/v1/sys/internal/ui/mounts/{mount}"), None)?;
    if r.status == 200 {
        let v = r.json().unwrap_or(Value::Null);
        let data = v.get("data").unwrap_or(&Value::Null);
        let path = data.get("path").and_then(Value::as_str).unwrap_or("");
        if normalize_mount(path) == mount {
            return Ok(mount_kind(data));
        }
        return Err(Cause::from(missing()));
    }
    if r.status == 404 || r.status == 400 {
        return Err(Cause::from(missing()));
    }
    Err(Cause::from(format!(
        "cannot check mount '{mount}' on {base}: the token may not list mounts ({listing_error})"
    )))
}

fn data_path(mount: &str, version: u8, name: &str) -> String {
    if version == 2 {
        format!("/v1/{mount}/data/{name}")
    } else {
        format!("/v1/{mount}/{name}")
    }
}

fn write_body(version: u8, value: &str) -> String {
    if version == 2 {
        format!("{{\"data\":{{\"value\":\"{value}\"}}}}")
    } else {
        format!("{{\"value\":\"{value}\"}}")
    }
}

/// Polls a read until the fresh mount answers like a working KV engine: 200, or 404 with
/// no error message (a secret that simply does not exist yet).
fn wait_until_usable(client: &mut Client, setup: &KvSetup) -> Result<(), Cause> {
    let base = client.base();
    let start = Instant::now();
    loop {
        let r = usable_now(client, setup)?;
        if r.is_ok() {
            return Ok(());
        }
        if start.elapsed() >= MOUNT_READY_WAIT {
            let (status, text) = r.unwrap_err();
            return Err(Cause::from(format!(
                "new mount '{}' on {base} did not become usable within {}s: HTTP {status}: {text}",
                setup.mount,
                MOUNT_READY_WAIT.as_secs(),
            )));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether the mount serves reads now (a read of the first secret answers 200, a plain 404,
/// or the 307 of a standby that sends it on), or the status and error text that say it does
/// not yet (a KV v2 mount upgrading its data answers 400).
fn usable_now(client: &mut Client, setup: &KvSetup) -> Result<Result<(), (u16, String)>, Cause> {
    let path = data_path(&setup.mount, setup.version, &secret_name(0, 1));
    let r = client.request("GET", &path, None)?;
    let ready = match r.status {
        200 | 307 => true,
        404 => r
            .json()
            .and_then(|v| v.get("errors").and_then(Value::as_array).map(Vec::is_empty))
            .unwrap_or(true),
        _ => false,
    };
    Ok(if ready {
        Ok(())
    } else {
        Err((r.status, r.error_text()))
    })
}

/// Writes secrets `0..setup.secrets` (under the prefix), at the server's pace
/// (`vault/bulk.rs`); every index below the returned one may have been written.
fn seed(ctx: &SetupCtx, setup: &KvSetup, size: usize) -> bulk::Reached {
    let count = setup.secrets;
    let job = Job {
        name: "kv seeding",
        unit: "secrets",
        flag: Some("--secrets"),
        count,
    };
    bulk::each(ctx.make_client, ctx.log, ctx.stop, &job, &|client, i| {
        let name = format!("{}{}", setup.prefix, secret_name(i, count));
        let body = write_body(setup.version, &secret_value(size, i));
        let path = data_path(&setup.mount, setup.version, &name);
        match client.request("POST", &path, Some(body.as_bytes())) {
            Ok(r) if (200..300).contains(&r.status) => Ok(()),
            Ok(r) => Err(Cause::Http {
                what: format!(
                    "writing secret '{}/{name}' to {}",
                    setup.mount,
                    client.base()
                ),
                status: r.status,
                excerpt: r.error_text(),
            }),
            Err(e) => Err(e.within(format!("writing secret '{}/{name}'", setup.mount))),
        }
    })
}

/// Removes every secret vblast wrote under its prefix in a user's mount (all versions and
/// metadata on KV v2).
fn remove_prefixed(
    make_client: &(dyn Fn() -> Client + Sync),
    log: &SetupLog,
    setup: &KvSetup,
    upto: u64,
    stop: &Stop,
) -> Result<(), Cause> {
    let count = setup.secrets;
    // Cleanup goes on after a first stop request; only a second one cuts it short.
    let urgent = Stop::new();
    let watcher = stop.clone();
    let done = AtomicBool::new(false);
    let result = std::thread::scope(|s| {
        s.spawn(|| {
            while !done.load(Ordering::Relaxed) {
                if watcher.is_urgent() {
                    urgent.request(
                        watcher
                            .signal()
                            .unwrap_or(crate::signals::Signal::Interrupt),
                    );
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        let job = Job {
            name: "cleanup: kv secrets removed",
            unit: "secrets",
            flag: None,
            count: upto,
        };
        let r = bulk::each(make_client, log, &urgent, &job, &|client, i| {
            let name = format!("{}{}", setup.prefix, secret_name(i, count));
            let path = if setup.version == 2 {
                format!("/v1/{}/metadata/{name}", setup.mount)
            } else {
                format!("/v1/{}/{name}", setup.mount)
            };
            // A rate-limit quota on the mount throttles the removal too: waited out.
            bulk::retry_throttled(&urgent, || match client.request("DELETE", &path, None) {
                Ok(r) if (200..300).contains(&r.status) || r.status == 404 => Ok(()),
                Ok(r) => Err(Cause::Http {
                    what: format!("cannot remove secret '{}/{name}'", setup.mount),
                    status: r.status,
                    excerpt: r.error_text(),
                }),
                Err(e) => Err(e.within(format!("cannot remove secret '{}/{name}'", setup.mount))),
            })
        });
        done.store(true, Ordering::Relaxed);
        r.result
    });
    result.map_err(|e| Cause::from(e.to_string()))
}

/// Sets up the KV fixture: checks the given mount (secrets then go under a fresh prefix)
/// or creates a fresh one and waits until it works, then seeds the secrets. `slot` holds
/// what exists so far, so that a failure half-way is cleaned up by the session.
/// The fixture shared by a run's shards (src/session/fixtures.rs): a shard finds the mount named
/// after the run id and waits until its last secret is readable; `vblast cleanup` takes
/// the mount as its own, to remove it. None outside those modes.
fn shared_kv(ctx: &SetupCtx, plan: &KvConfig) -> Result<Option<KvSetup>, Error> {
    use crate::vault::fixture::Mode;
    let mode = ctx.naming.mode();
    if !matches!(mode, Mode::Join | Mode::Remove | Mode::Create) {
        return Ok(None);
    }
    if plan.mount.is_some() {
        return Err(Error::input(
            "a fixture shared by shards is a mount of vblast's own: leave out --mount (or run the shards with --no-setup --mount)",
        ));
    }
    if mode == Mode::Create {
        return Ok(None);
    }
    let setup = KvSetup {
        mount: ctx.naming.random_name("vblast-"),
        version: plan.version,
        created: mode == Mode::Remove,
        prefix: String::new(),
        wrote_prefix: false,
        secrets: plan.secrets,
    };
    if mode == Mode::Join {
        let mut client = (ctx.make_client)();
        let last = data_path(
            &setup.mount,
            setup.version,
            &secret_name(plan.secrets.saturating_sub(1), plan.secrets),
        );
        ctx.naming.wait_for(
            &format!("the shared kv mount '{}' (its secret {last})", setup.mount),
            ctx.stop,
            || match client.request("GET", &last, None) {
                Ok(r) if (200..300).contains(&r.status) => Ok(true),
                Ok(r) if r.status == 404 || r.status == 400 => Ok(false),
                Ok(r) => Err(Cause::Http {
                    what: format!("reading {last} on {}", client.base()),
                    status: r.status,
                    excerpt: r.error_text(),
                }),
                Err(_) => Ok(false),
            },
        )?;
    }
    Ok(Some(setup))
}

fn prepare_kv(
    ctx: &SetupCtx,
    plan: &KvConfig,
    slot: &mut Option<KvSetup>,
    reached: &mut Option<u64>,
) -> Result<(), Error> {
    let started = Instant::now();
    // Nothing is written until the seeding says how far it got: a stop before it (while
    // the mount settles) leaves no secrets to name.
    *reached = Some(0);
    let mut client = (ctx.make_client)();
    let base = client.base();
    let mut setup = match &plan.mount {
        Some(m) => {
            let mount = normalize_mount(m);
            let (kind, version) = if mount == CUBBYHOLE {
                // Every token has one; sys/mounts lists it as type "cubbyhole".
                ("kv".to_string(), 1)
            } else {
                describe_existing(&mut client, &mount).map_err(Error::setup)?
            };
            if kind != "kv" && kind != "generic" {
                return Err(Error::setup(format!(
                    "mount '{mount}' on {base} is a '{kind}' secrets engine, not kv"
                )));
            }
            let version = if kind == "generic" { 1 } else { version };
            if version != plan.version {
                return Err(Error::setup(format!(
                    "mount '{mount}' on {base} is kv version {version}, but kv version {} was asked for: pass --kv-version {version}",
                    plan.version
                )));
            }
            KvSetup {
                prefix: ctx.naming.secrets_prefix(&mount, version, plan.secrets),
                mount,
                version,
                created: false,
                wrote_prefix: false,
                secrets: plan.secrets,
            }
        }
        None => {
            let mount = ctx.naming.random_name("vblast-");
            let body = format!(
                "{{\"type\":\"kv\",\"description\":\"vblast load test (temporary)\",\"options\":{{\"version\":\"{}\"}}}}",
                plan.version
            );
            let fixture = KvSetup {
                mount: mount.clone(),
                version: plan.version,
                created: true,
                prefix: String::new(),
                wrote_prefix: false,
                secrets: plan.secrets,
            };
            // From here on the mount may exist (a timed-out request may still have made
            // it): the session removes it whatever happens next.
            *slot = Some(fixture.clone());
            let r = client
                .request(
                    "POST",
                    &format!("/v1/sys/mounts/{mount}"),
                    Some(body.as_bytes()),
                )
                .map_err(|e| Error::setup(format!("creating kv mount '{mount}' failed: {e}")))?;
            if !(200..300).contains(&r.status) {
                *slot = None;
                return Err(Error::setup(format!(
                    "cannot create kv mount '{mount}' on {base}: HTTP {}: {}",
                    r.status,
                    r.error_text()
                )));
            }
            wait_until_usable(&mut client, &fixture).map_err(Error::setup)?;
            ctx.log
                .record("kv mount", 1, started.elapsed().as_secs_f64());
            fixture
        }
    };
    if let Some(s) = ctx.stop.signal() {
        return Err(Error::Stopped(s));
    }
    if !setup.created {
        // An existing mount may still be settling too (a KV v2 mount upgrading its data
        // answers 400 for a while, as a fresh dev server's secret/ does).
        wait_until_usable(&mut client, &setup).map_err(Error::setup)?;
        ctx.log
            .record("kv mount checked", 1, started.elapsed().as_secs_f64());
        setup.wrote_prefix = true;
    }
    *slot = Some(setup.clone());
    let seeded = seed(ctx, &setup, plan.secret_size);
    // Cleanup removes (and a leftover names) what may have been written, not all asked.
    *reached = match seeded.result {
        Ok(()) => None,
        Err(_) => Some(seeded.reached),
    };
    seeded.result
}

/// `vblast cleanup`: removes the secrets a run wrote under `under` (in a mount it did not
/// make), looking before and after. Returns how many were there (0: none, "not found");
/// the error says how many are left.
pub fn remove_secrets_under(
    client: &Client,
    under: &SecretsUnder,
    display: Display,
    stop: &Stop,
) -> Result<usize, Cause> {
    let (mount, prefix) = (&under.mount, &under.prefix);
    let list_path = if under.version == 2 {
        format!("/v1/{mount}/metadata/{prefix}")
    } else {
        format!("/v1/{mount}/{prefix}")
    };
    let list = |client: &mut Client| -> Result<usize, Cause> {
        let r = client.request("LIST", &list_path, None)?;
        match r.status {
            404 => Ok(0),
            200..=299 => Ok(r
                .json()
                .and_then(|v| {
                    v.pointer("/data/keys")
                        .and_then(Value::as_array)
                        .map(Vec::len)
                })
                .unwrap_or(0)),
            status => Err(Cause::Http {
                what: format!("listing the secrets under '{mount}/{prefix}'"),
                status,
                excerpt: r.error_text(),
            }),
        }
    };
    let mut looker = client.clone_fresh();
    let there = list(&mut looker)?;
    if there == 0 {
        return Ok(0);
    }
    let setup = KvSetup {
        mount: mount.clone(),
        version: under.version,
        created: false,
        prefix: prefix.clone(),
        wrote_prefix: true,
        secrets: under.count,
    };
    let make = || client.clone_fresh();
    remove_prefixed(&make, &SetupLog::new(display), &setup, under.count, stop)?;
    match list(&mut looker)? {
        0 => Ok(there),
        left => Err(Cause::from(format!(
            "{left} secrets under '{mount}/{prefix}' are left on {}: remove them with `vault kv metadata delete` (KV v2) or `vault delete` (KV v1) each",
            client.base()
        ))),
    }
}

/// Removes the mount when we created it.
pub fn cleanup_kv(client: &mut Client, setup: &KvSetup) -> Result<(), Cause> {
    if !setup.created {
        return Ok(());
    }
    let r = client
        .request("DELETE", &format!("/v1/sys/mounts/{}", setup.mount), None)
        .map_err(|e| format!("cannot remove mount '{}': {e}", setup.mount))?;
    if (200..300).contains(&r.status) {
        Ok(())
    } else {
        Err(Cause::from(format!(
            "cannot remove mount '{}' from {}: HTTP {}: {}",
            setup.mount,
            client.base(),
            r.status,
            r.error_text()
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::template::{Common, Rng, Template};
    use std::collections::HashSet;

    #[test]
    fn secret_names_are_padded_to_the_largest_index() {
        assert_eq!(secret_name(0, 1000), "s000");
        assert_eq!(secret_name(999, 1000), "s999");
        assert_eq!(secret_name(7, 1001), "s0007");
        assert_eq!(secret_name(0, 1), "s0");
        assert_eq!(secret_name(0, 0), "s0");
        assert_eq!(secret_name(9, 10), "s9");
        assert_eq!(secret_name(10, 11), "s10");
        assert_eq!(secret_name(5, 11), "s05");
        assert_eq!(secret_name(u64::MAX - 1, u64::MAX).len(), 21);
    }

    #[test]
    fn secret_values_have_the_exact_size_and_need_no_escaping() {
        for size in [0, 1, 9, 10, 11, 64, 1000, 4097] {
            for index in [0, 1, 2, 999, u64::MAX] {
                let v = secret_value(size, index);
                assert_eq!(v.len(), size);
                assert!(
                    v.bytes()
                        .all(|b| b.is_ascii_graphic() && b != b'"' && b != b'\\')
                );
                let json = format!("\"{v}\"");
                assert_eq!(serde_json::from_str::<String>(&json).unwrap(), v);
            }
        }
        let distinct: HashSet<String> = (0..1000).map(|i| secret_value(16, i)).collect();
        assert_eq!(distinct.len(), 1000);
        assert_eq!(secret_value(32, 5), secret_value(32, 5));
    }

    #[test]
    fn mount_names_look_right_and_differ() {
        let naming = crate::vault::fixture::Naming::own();
        let names: HashSet<String> = (0..100).map(|_| naming.random_name("vblast-")).collect();
        assert_eq!(names.len(), 100);
        for n in names {
            assert_eq!(n.len(), 15);
            let hex = n.strip_prefix("vblast-").unwrap();
            assert!(
                hex.bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
            );
        }
    }

    #[test]
    fn mount_listing_layouts() {
        let flat: Value = serde_json::from_str(
            r#"{"secret/":{"type":"kv","options":{"version":"2"}},"old/":{"type":"kv","options":null},
                "gen/":{"type":"generic"},"request_id":"x"}"#,
        )
        .unwrap();
        assert_eq!(
            find_mount(&flat, "secret").map(mount_kind),
            Some(("kv".into(), 2))
        );
        assert_eq!(
            find_mount(&flat, "old").map(mount_kind),
            Some(("kv".into(), 1))
        );
        assert_eq!(
            find_mount(&flat, "gen").map(mount_kind),
            Some(("generic".into(), 1))
        );
        assert!(find_mount(&flat, "nope").is_none());
        let nested: Value =
            serde_json::from_str(r#"{"data":{"a/b/":{"type":"kv","options":{"version":"1"}}}}"#)
                .unwrap();
        assert_eq!(
            find_mount(&nested, "a/b").map(mount_kind),
            Some(("kv".into(), 1))
        );
        assert_eq!(normalize_mount(" /secret/ "), "secret");
    }

    #[test]
    fn write_bodies_are_valid_json() {
        let v: Value = serde_json::from_str(&write_body(2, &secret_value(20, 3))).unwrap();
        assert_eq!(v["data"]["value"].as_str().unwrap().len(), 20);
        let v: Value = serde_json::from_str(&write_body(1, &secret_value(20, 3))).unwrap();
        assert_eq!(v["value"].as_str().unwrap().len(), 20);
        assert_eq!(data_path("kv", 2, "s1"), "/v1/kv/data/s1");
        assert_eq!(data_path("kv", 1, "s1"), "/v1/kv/s1");
    }

    #[test]
    fn paths_match_the_seeded_names() {
        let kv = KvSetup {
            mount: "vblast-1".into(),
            version: 2,
            created: true,
            prefix: String::new(),
            wrote_prefix: false,
            secrets: 1000,
        };
        let mut t = Template::build(&read(&kv).request, &Common::default());
        let text = String::from_utf8(t.render(&mut Rng::new(5)).to_vec()).unwrap();
        let path = text.split(' ').nth(1).unwrap();
        let name = path.rsplit('/').next().unwrap();
        assert!(path.starts_with("/v1/vblast-1/data/s"));
        assert_eq!(name.len(), secret_name(999, 1000).len());
    }

    /// Every rendered request names a secret the setup seeded (the prefix, then
    /// `secret_name(i, count)` for i in 0..count), and together they reach every one of them.
    #[test]
    fn rendered_names_are_the_seeded_set() {
        use std::collections::BTreeSet;
        for version in [1u8, 2] {
            for prefix in ["", "vblast-0f0f0f0f/"] {
                for count in [1u64, 7, 10, 11, 100, 101, 1000, 1001] {
                    let kv = KvSetup {
                        mount: "vblast-ab12cd34".into(),
                        version,
                        created: prefix.is_empty(),
                        prefix: prefix.into(),
                        wrote_prefix: !prefix.is_empty(),
                        secrets: count,
                    };
                    let seeded: BTreeSet<String> = (0..count)
                        .map(|i| format!("{prefix}{}", secret_name(i, count)))
                        .collect();
                    let base = if version == 2 {
                        "/v1/vblast-ab12cd34/data/"
                    } else {
                        "/v1/vblast-ab12cd34/"
                    };
                    for op in [read(&kv), write(&kv, 100)] {
                        let mut t = Template::build(&op.request, &Common::default());
                        let mut rng = Rng::new(count + u64::from(version));
                        let mut seen = BTreeSet::new();
                        for _ in 0..count * 30 {
                            let text = String::from_utf8(t.render(&mut rng).to_vec()).unwrap();
                            let path = text.split(' ').nth(1).unwrap();
                            let name = path.strip_prefix(base).unwrap_or_else(|| {
                                panic!("{} v{version}: path {path} not under {base}", op.name)
                            });
                            assert!(
                                seeded.contains(name),
                                "{} v{version} count {count}: {name} was never seeded",
                                op.name
                            );
                            seen.insert(name.to_string());
                        }
                        assert_eq!(
                            seen, seeded,
                            "{} v{version} count {count}: not every seeded secret is read",
                            op.name
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn write_bodies_have_the_asked_size() {
        for version in [1u8, 2] {
            let kv = KvSetup {
                mount: "m".into(),
                version,
                created: true,
                prefix: String::new(),
                wrote_prefix: false,
                secrets: 10,
            };
            let mut t = Template::build(&write(&kv, 1024).request, &Common::default());
            let text = String::from_utf8(t.render(&mut Rng::new(5)).to_vec()).unwrap();
            let body = text.split_once("\r\n\r\n").unwrap().1;
            let v: serde_json::Value = serde_json::from_str(body).unwrap();
            let value = if version == 2 {
                &v["data"]["value"]
            } else {
                &v["value"]
            };
            assert_eq!(value.as_str().unwrap().len(), 1024);
        }
    }
}
