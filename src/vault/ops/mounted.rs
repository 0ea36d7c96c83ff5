//! A secrets engine the run enables at a fresh mount: the mount's life (enabled, written
//! into, named by `created`, disabled at cleanup), the CA-and-role setup pki and ssh
//! share, and what a shareable family does in this session's mode (a shard joins the
//! mount `vblast setup` made, `vblast cleanup` names it, any other session makes its own).

use serde_json::{Value, json};

use super::shared::{self, Mode};
use super::{Created, SetupCtx, call, disable_mount, mount_created};
use crate::error::{Cause, Error};
use crate::vault::client::Client;

/// A secrets engine enabled for the run.
pub(crate) struct Mounted {
    /// Vault's engine type: `pki`, `ssh`, `database`, `rabbitmq`.
    engine: &'static str,
    /// How the enabling's message names it ("the database secrets engine", "ssh").
    label: &'static str,
    /// How `created()` and the disabling's message name the mount ("database (redis)").
    kind: &'static str,
    /// The mount, as soon as it may exist.
    pub(crate) mount: Option<String>,
}

impl Mounted {
    pub(crate) fn new(engine: &'static str, label: &'static str, kind: &'static str) -> Mounted {
        Mounted {
            engine,
            label,
            kind,
            mount: None,
        }
    }

    /// How `created()` and messages name the engine ("database (redis)").
    pub(crate) fn kind(&self) -> &'static str {
        self.kind
    }

    /// The mount's name (`unset` before setup).
    pub(crate) fn name(&self) -> &str {
        self.mount.as_deref().unwrap_or("unset")
    }

    /// The mount the requests go to: this session's own, else `shared` (a shard's: the
    /// one `vblast setup` made, never disabled by it); `unset` before setup.
    pub(crate) fn mount_or<'a>(&'a self, shared: Option<&'a str>) -> &'a str {
        self.mount.as_deref().or(shared).unwrap_or("unset")
    }

    /// Enables the engine at `mount`, `extra`'s keys added to the request (a mount's
    /// `config`). The mount is named from the request on, and forgotten if it was refused.
    pub(crate) fn enable(
        &mut self,
        client: &mut Client,
        mount: &str,
        extra: Option<Value>,
    ) -> Result<(), Cause> {
        self.mount = Some(mount.to_string());
        let mut body = json!({"type": self.engine, "description": "vblast load test (temporary)"});
        if let Some(Value::Object(keys)) = extra {
            for (k, v) in keys {
                body[k] = v;
            }
        }
        call(
            client,
            "POST",
            &format!("/v1/sys/mounts/{mount}"),
            Some(&body),
            &format!("enabling {} at '{mount}'", self.label),
        )
        .map(drop)
        .inspect_err(|_| self.mount = None)
    }

    /// A write at `path` under the mount: the answer, or a message saying `what` failed.
    pub(crate) fn write(
        &self,
        client: &mut Client,
        path: &str,
        body: &Value,
        what: &str,
    ) -> Result<Value, Cause> {
        call(
            client,
            "POST",
            &format!("/v1/{}/{path}", self.name()),
            Some(body),
            what,
        )
    }

    /// The role `name` written under the mount (`roles/NAME`).
    pub(crate) fn write_role(
        &self,
        client: &mut Client,
        name: &str,
        body: &Value,
    ) -> Result<(), Cause> {
        let what = format!("creating role '{name}' in '{}'", self.name());
        self.write(client, &format!("roles/{name}"), body, &what)
            .map(drop)
    }

    /// pki's and ssh's setup: the engine at `mount`, its CA made by a write at `ca_path`
    /// (`what` it does), then the role, the last thing made (shards wait for it).
    pub(crate) fn with_ca_and_role(
        &mut self,
        client: &mut Client,
        mount: &str,
        extra: Option<Value>,
        (ca_path, ca_body, what): (&str, &Value, &str),
        (role, role_body): (&str, &Value),
    ) -> Result<(), Cause> {
        self.enable(client, mount, extra)?;
        self.write(client, ca_path, ca_body, what)?;
        self.write_role(client, role, role_body)
    }

    pub(crate) fn created(&self) -> Vec<Created> {
        mount_created(self.kind, self.mount.as_deref())
    }

    /// Disables the mount (once).
    pub(crate) fn disable(&mut self, client: &mut Client) -> Result<(), Cause> {
        disable_mount(client, self.kind, &mut self.mount)
    }
}

/// What this session does with a shareable family's mounts, named from the run id in
/// setup's order (src/vault/fixture.rs).
pub(crate) enum Mounts {
    /// A shard: the last of the mounts, made by `vblast setup`, its role now readable.
    Joined(String),
    /// `vblast cleanup`: the mounts setup made, in its order.
    Remove(Vec<String>),
    /// This session makes its own.
    Make,
}

/// The mounts of `prefixes` in this session's mode; as a shard, after a bounded wait for
/// the role `role` in the last of them (the last thing `vblast setup` makes there);
/// `family` names the engine in the message.
pub(crate) fn shared(
    ctx: &SetupCtx,
    prefixes: &[&str],
    family: &str,
    role: &str,
) -> Result<Mounts, Error> {
    let mode = shared::mode(ctx);
    if !matches!(mode, Mode::Join | Mode::Remove) {
        return Ok(Mounts::Make);
    }
    let mut names: Vec<String> = prefixes.iter().map(|p| ctx.naming.random_name(p)).collect();
    if mode == Mode::Remove {
        return Ok(Mounts::Remove(names));
    }
    let mount = names.pop().unwrap_or_default();
    shared::wait_readable(
        ctx,
        &format!("the shared {family} role '{role}' in '{mount}'"),
        &format!("/v1/{mount}/roles/{role}"),
    )?;
    Ok(Mounts::Joined(mount))
}
