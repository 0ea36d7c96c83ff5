//! What the operation families use when the shards of a run share one fixture
//! (src/vault/fixture.rs): the mode of this session, a bounded wait for a fixture that
//! `vblast setup` makes, and the names of what a shard makes for itself under it.

use serde_json::Value;

use super::{SetupCtx, call, disable_auth};
use crate::error::{Cause, Error};
use crate::vault::client::Client;
pub(crate) use crate::vault::fixture::Mode;

/// The mode of this session (`Own` unless it is a setup, a shard or a cleanup step).
pub(crate) fn mode(ctx: &SetupCtx) -> Mode {
    ctx.naming.mode()
}

/// Waits (bounded: `fixtures::wait_for`) until GET `path` answers 2xx, the sign that
/// `vblast setup` made what `what` names; returns the answer. 400, 403, 404 and no
/// connection mean "not yet"; any other status is an error.
pub(crate) fn wait_readable(ctx: &SetupCtx, what: &str, path: &str) -> Result<Value, Error> {
    let mut client = (ctx.make_client)();
    let mut found = Value::Null;
    ctx.naming
        .wait_for(what, ctx.stop, || match client.request("GET", path, None) {
            Ok(r) if (200..300).contains(&r.status) => {
                found = r.json().unwrap_or(Value::Null);
                Ok(true)
            }
            Ok(r) if matches!(r.status, 400 | 403 | 404) => Ok(false),
            Ok(r) => Err(Cause::Http {
                what: format!("reading {path} on {}", client.base()),
                status: r.status,
                excerpt: r.error_text(),
            }),
            Err(_) => Ok(false),
        })?;
    Ok(found)
}

/// Waits (as `wait_readable`) for the ACL policy `policy` that the shared setup writes;
/// `family` names the operation family in the message.
pub(crate) fn wait_policy(ctx: &SetupCtx, family: &str, policy: &str) -> Result<(), Error> {
    wait_readable(
        ctx,
        &format!("the shared {family}policy '{policy}'"),
        &format!("/v1/sys/policies/acl/{policy}"),
    )
    .map(|_| ())
}

/// The name of something a shard makes for itself under a shared fixture (a user, a
/// role, a prefix): `base`, '-' and 8 random hex digits, never derived from the run id,
/// so that each shard's differs.
pub(crate) fn own_name(base: &str) -> String {
    super::fresh_name(&format!("{base}-"))
}

/// Cleanup of a shared run: disables every auth path under `prefix` (the shards' own, a
/// killed one's included).
pub(crate) fn disable_auth_under(client: &mut Client, prefix: &str) -> Result<(), Cause> {
    let v = call(client, "GET", "/v1/sys/auth", None, "listing auth paths")?;
    let table = v.get("data").filter(|d| d.is_object()).unwrap_or(&v);
    let paths: Vec<String> = table
        .as_object()
        .map(|o| {
            o.keys()
                .filter(|k| k.starts_with(prefix))
                .map(|k| k.trim_end_matches('/').to_string())
                .collect()
        })
        .unwrap_or_default();
    for p in paths {
        disable_auth(client, &mut Some(p))?;
    }
    Ok(())
}
