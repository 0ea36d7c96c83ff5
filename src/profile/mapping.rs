//! An audit entry's request mapped onto vblast's operation names (those of the registry,
//! `vault::ops`, where vblast has the operation; the same naming where it has not: each
//! login method `<type>-login`, each dynamic-credentials engine `<type>-creds`), by mount
//! type, audit operation and path shape; and a path's shape, the only form in which a
//! path is shown without `--show-paths`.

/// A mapped operation's name, `stem` then `suffix` (`kv-read` + ``, `approle` + `-login`):
/// built without allocating, from the entry's own text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpName<'a> {
    pub stem: &'a str,
    pub suffix: &'static str,
}

impl<'a> OpName<'a> {
    const fn named(stem: &'static str) -> OpName<'a> {
        OpName { stem, suffix: "" }
    }

    /// The whole name.
    pub fn text(&self) -> String {
        format!("{}{}", self.stem, self.suffix)
    }
}

/// The request as the audit entry gives it: its mount's type and point (`secret/`,
/// `auth/approle/`; empty when the entry has none), its path (from the namespace's root)
/// and its audit operation (`read`, `update`, `list`, ...).
#[derive(Clone, Copy, Debug)]
pub struct Routed<'a> {
    pub mount_type: &'a str,
    pub mount_point: &'a str,
    pub path: &'a str,
    pub operation: &'a str,
}

fn writes(op: &str) -> bool {
    matches!(op, "create" | "update" | "patch")
}

/// The operation a request is, or None (unmapped).
pub fn map<'a>(r: &Routed<'a>) -> Option<OpName<'a>> {
    if r.path.starts_with("sys/") || r.mount_type == "system" {
        return Some(OpName::named(sys(r.path)));
    }
    let rel = r.path.strip_prefix(r.mount_point).unwrap_or(r.path);
    let (first, rest) = rel.split_once('/').unwrap_or((rel, ""));
    let op = r.operation;
    let named = |n: &'static str| Some(OpName::named(n));
    match r.mount_type {
        "kv" | "generic" => kv(first, rest, op).map(OpName::named),
        "cubbyhole" if op == "read" => named("cubbyhole-read"),
        "cubbyhole" if writes(op) => named("cubbyhole-write"),
        "token" => token(first).map(OpName::named),
        "transit" => match first {
            "encrypt" => named("transit-encrypt"),
            "decrypt" => named("transit-decrypt"),
            "sign" => named("transit-sign"),
            "verify" => named("transit-verify"),
            "hmac" => named("transit-hmac"),
            _ => None,
        },
        "pki" => match first {
            "issue" => named("pki-issue"),
            "sign" => named("pki-sign"),
            _ => None,
        },
        "ssh" => match first {
            "sign" => named("ssh-sign"),
            "issue" => named("ssh-issue"),
            _ => None,
        },
        "totp" => match (first, op) {
            ("code", _) => named("totp-generate"),
            ("keys", "read") => named("totp-read"),
            ("keys", o) if writes(o) => named("totp-create"),
            _ => None,
        },
        "database" => match first {
            "creds" => named("db-creds"),
            "static-creds" => named("db-static-creds"),
            _ => None,
        },
        t if !t.is_empty() && r.mount_point.starts_with("auth/") && first == "login" => {
            Some(OpName {
                stem: t,
                suffix: "-login",
            })
        }
        t if !t.is_empty() && first == "creds" => Some(OpName {
            stem: t,
            suffix: "-creds",
        }),
        t if !t.is_empty() && first == "static-creds" => Some(OpName {
            stem: t,
            suffix: "-static-creds",
        }),
        _ => None,
    }
}

/// A kv v1 or v2 request: v2's API under `data/`, `metadata/`, `delete/`, `destroy/`;
/// anything else on the mount read as v1's (a secret's own path).
fn kv(first: &str, rest: &str, op: &str) -> Option<&'static str> {
    match (first, op) {
        ("data", "read") => Some("kv-read"),
        ("data", o) if writes(o) => Some("kv-write"),
        ("data" | "metadata", "delete") => Some("kv-delete"),
        ("delete" | "destroy", o) if writes(o) => Some("kv-delete"),
        ("metadata", "list") => Some("kv-list"),
        ("data" | "metadata" | "delete" | "destroy" | "undelete" | "config" | "subkeys", _) => None,
        (_, "read") if !rest.is_empty() || !first.is_empty() => Some("kv-read"),
        (_, "list") => Some("kv-list"),
        (_, o) if writes(o) => Some("kv-write"),
        (_, "delete") => Some("kv-delete"),
        _ => None,
    }
}

fn token(first: &str) -> Option<&'static str> {
    match first {
        "create" | "create-orphan" => Some("token-create"),
        "lookup" | "lookup-self" | "lookup-accessor" => Some("token-lookup"),
        "renew" | "renew-self" | "renew-accessor" => Some("token-renew"),
        "revoke" | "revoke-self" | "revoke-accessor" | "revoke-orphan" => Some("token-revoke"),
        _ => None,
    }
}

fn sys(path: &str) -> &'static str {
    match path.trim_end_matches('/') {
        "sys/health" => "sys-health",
        "sys/metrics" => "sys-metrics",
        "sys/ha-status" => "ha-status",
        "sys/seal-status" => "seal-status",
        _ => "sys-other",
    }
}

/// The words of Vault's APIs that a shape keeps: a path segment not among them may name
/// a secret, a role or a user, and becomes `<path>`.
const API_WORDS: &[&str] = &[
    "accessors",
    "audit",
    "auth",
    "ca",
    "capabilities",
    "capabilities-self",
    "cert",
    "certs",
    "code",
    "config",
    "create",
    "create-orphan",
    "creds",
    "crl",
    "data",
    "datakey",
    "decrypt",
    "delete",
    "destroy",
    "encrypt",
    "entity",
    "entity-alias",
    "group",
    "groups",
    "ha-status",
    "hash",
    "health",
    "hmac",
    "host-info",
    "internal",
    "issue",
    "issuer",
    "issuers",
    "keys",
    "leader",
    "leases",
    "login",
    "lookup",
    "lookup-accessor",
    "lookup-self",
    "metadata",
    "metrics",
    "mounts",
    "namespaces",
    "oidc",
    "plugins",
    "policies",
    "policy",
    "random",
    "renew",
    "renew-accessor",
    "renew-self",
    "revoke",
    "revoke-accessor",
    "revoke-orphan",
    "revoke-self",
    "rewrap",
    "role",
    "role-id",
    "roles",
    "rotate",
    "seal-status",
    "secret-id",
    "sign",
    "sign-verbatim",
    "static-creds",
    "static-roles",
    "subkeys",
    "token",
    "tune",
    "undelete",
    "users",
    "verify",
    "wrapping",
];

/// A path's shape: the mount point as it is, then the leading segments that are words of
/// Vault's APIs, then `<path>` for whatever follows (`secret/data/<path>`), a trailing `/`
/// kept (a list). Without a mount point, the first segment too is kept only when it is
/// such a word.
pub fn shape(mount_point: &str, path: &str) -> String {
    let (kept, rel) = match path.strip_prefix(mount_point) {
        Some(rel) if !mount_point.is_empty() => (mount_point, rel),
        _ => ("", path),
    };
    let mut out = String::with_capacity(kept.len() + 16);
    out.push_str(kept);
    let trailing = rel.ends_with('/');
    let mut segments = rel.split('/').filter(|s| !s.is_empty()).peekable();
    while let Some(s) = segments.next() {
        if API_WORDS.binary_search(&s).is_ok() {
            out.push_str(s);
            if segments.peek().is_some() || trailing {
                out.push('/');
            }
        } else {
            out.push_str("<path>");
            if trailing {
                out.push('/');
            }
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(mount_type: &str, mount_point: &str, path: &str, operation: &str) -> Option<String> {
        map(&Routed {
            mount_type,
            mount_point,
            path,
            operation,
        })
        .map(|n| n.text())
    }

    #[test]
    fn the_api_words_are_sorted_for_the_binary_search() {
        assert!(API_WORDS.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn requests_map_onto_vblast_names_by_mount_type_operation_and_path() {
        let cases = [
            ("kv", "secret/", "secret/data/a/b", "read", Some("kv-read")),
            ("kv", "secret/", "secret/data/a", "update", Some("kv-write")),
            ("kv", "secret/", "secret/data/a", "create", Some("kv-write")),
            (
                "kv",
                "secret/",
                "secret/data/a",
                "delete",
                Some("kv-delete"),
            ),
            ("kv", "secret/", "secret/metadata/", "list", Some("kv-list")),
            (
                "kv",
                "secret/",
                "secret/metadata/a",
                "delete",
                Some("kv-delete"),
            ),
            (
                "kv",
                "secret/",
                "secret/destroy/a",
                "update",
                Some("kv-delete"),
            ),
            ("kv", "secret/", "secret/config", "read", None),
            ("kv", "secret/", "secret/metadata/a", "read", None),
            ("kv", "kv1/", "kv1/team/app", "read", Some("kv-read")),
            ("kv", "kv1/", "kv1/team/", "list", Some("kv-list")),
            ("kv", "kv1/", "kv1/team/app", "update", Some("kv-write")),
            ("kv", "kv1/", "kv1/team/app", "delete", Some("kv-delete")),
            ("generic", "old/", "old/x", "read", Some("kv-read")),
            (
                "cubbyhole",
                "cubbyhole/",
                "cubbyhole/x",
                "read",
                Some("cubbyhole-read"),
            ),
            (
                "approle",
                "auth/approle/",
                "auth/approle/login",
                "update",
                Some("approle-login"),
            ),
            (
                "userpass",
                "auth/up/",
                "auth/up/login/alice",
                "update",
                Some("userpass-login"),
            ),
            (
                "ldap",
                "auth/ldap/",
                "auth/ldap/login/bob",
                "update",
                Some("ldap-login"),
            ),
            (
                "kubernetes",
                "auth/k8s/",
                "auth/k8s/login",
                "update",
                Some("kubernetes-login"),
            ),
            (
                "approle",
                "auth/approle/",
                "auth/approle/role/r/secret-id",
                "update",
                None,
            ),
            (
                "token",
                "auth/token/",
                "auth/token/create",
                "update",
                Some("token-create"),
            ),
            (
                "token",
                "auth/token/",
                "auth/token/create/role",
                "update",
                Some("token-create"),
            ),
            (
                "token",
                "auth/token/",
                "auth/token/lookup-self",
                "read",
                Some("token-lookup"),
            ),
            (
                "token",
                "auth/token/",
                "auth/token/renew-self",
                "update",
                Some("token-renew"),
            ),
            (
                "token",
                "auth/token/",
                "auth/token/revoke-accessor",
                "update",
                Some("token-revoke"),
            ),
            ("token", "auth/token/", "auth/token/roles/x", "update", None),
            (
                "transit",
                "transit/",
                "transit/encrypt/k",
                "update",
                Some("transit-encrypt"),
            ),
            (
                "transit",
                "transit/",
                "transit/decrypt/k",
                "update",
                Some("transit-decrypt"),
            ),
            (
                "transit",
                "transit/",
                "transit/sign/k",
                "update",
                Some("transit-sign"),
            ),
            (
                "transit",
                "transit/",
                "transit/verify/k",
                "update",
                Some("transit-verify"),
            ),
            (
                "transit",
                "transit/",
                "transit/hmac/k",
                "update",
                Some("transit-hmac"),
            ),
            ("transit", "transit/", "transit/keys/k", "update", None),
            ("pki", "pki/", "pki/issue/web", "update", Some("pki-issue")),
            (
                "pki",
                "pki_int/",
                "pki_int/sign/web",
                "update",
                Some("pki-sign"),
            ),
            ("pki", "pki/", "pki/ca/pem", "read", None),
            ("ssh", "ssh/", "ssh/sign/r", "update", Some("ssh-sign")),
            ("ssh", "ssh/", "ssh/issue/r", "update", Some("ssh-issue")),
            (
                "totp",
                "totp/",
                "totp/code/k",
                "read",
                Some("totp-generate"),
            ),
            ("totp", "totp/", "totp/keys/k", "read", Some("totp-read")),
            (
                "totp",
                "totp/",
                "totp/keys/k",
                "update",
                Some("totp-create"),
            ),
            ("database", "db/", "db/creds/ro", "read", Some("db-creds")),
            (
                "database",
                "db/",
                "db/static-creds/ro",
                "read",
                Some("db-static-creds"),
            ),
            ("database", "db/", "db/config/pg", "update", None),
            (
                "rabbitmq",
                "rmq/",
                "rmq/creds/r",
                "read",
                Some("rabbitmq-creds"),
            ),
            ("aws", "aws/", "aws/creds/deploy", "read", Some("aws-creds")),
            ("aws", "aws/", "aws/config/root", "update", None),
            ("system", "sys/", "sys/health", "read", Some("sys-health")),
            ("system", "sys/", "sys/metrics", "read", Some("sys-metrics")),
            ("system", "sys/", "sys/ha-status", "read", Some("ha-status")),
            (
                "system",
                "sys/",
                "sys/seal-status",
                "read",
                Some("seal-status"),
            ),
            (
                "system",
                "sys/",
                "sys/mounts/x",
                "update",
                Some("sys-other"),
            ),
            ("", "", "sys/audit/test", "update", Some("sys-other")),
            ("", "", "nowhere/x", "read", None),
            ("nomad", "nomad/", "nomad/role/r", "read", None),
        ];
        for (t, m, p, o, want) in cases {
            assert_eq!(name(t, m, p, o).as_deref(), want, "{t} {m} {p} {o}");
        }
    }

    #[test]
    fn shapes_keep_the_mount_and_the_api_words_only() {
        assert_eq!(
            shape("secret/", "secret/data/team/app/db"),
            "secret/data/<path>"
        );
        assert_eq!(shape("secret/", "secret/metadata/"), "secret/metadata/");
        assert_eq!(
            shape("secret/", "secret/metadata/team/"),
            "secret/metadata/<path>/"
        );
        assert_eq!(shape("kv1/", "kv1/payroll-db-password"), "kv1/<path>");
        assert_eq!(
            shape("transit/", "transit/keys/orders/rotate"),
            "transit/keys/<path>"
        );
        assert_eq!(
            shape("sys/", "sys/policies/acl/admins"),
            "sys/policies/<path>"
        );
        assert_eq!(shape("", "nowhere/x"), "<path>");
        assert_eq!(shape("", "auth/token/roles/x"), "auth/token/roles/<path>");
        assert_eq!(
            shape("auth/approle/", "auth/approle/role/r1/secret-id"),
            "auth/approle/role/<path>"
        );
    }
}
