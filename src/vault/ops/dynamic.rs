//! The dynamic-credentials pattern of database, redis and rabbitmq (and of any other
//! engine that hands out credentials): setup enables the engine at a fresh mount,
//! connects it to the backing service and writes a role; each request reads the role's
//! credentials; cleanup revokes every lease the run was given (each revocation removes
//! its user in the service) before disabling the mount. A static role (an existing user
//! whose password the engine rotates) is read at `static-creds/` and deleted at cleanup.
//! A family says only what differs (`Family`): its engine, its connection, its role.
//!
//! Shareable families (the database's): `vblast setup` makes the mount, the connection
//! and the role under names derived from the run id; a shard waits for the role, then
//! makes a role of its own (`ROLE-xxxxxxxx`, the same body) whose credentials it reads, so
//! that at its end it revokes exactly the leases it was given and deletes its role;
//! `vblast cleanup` revokes every lease under the mount's `creds/` and disables it.
//! The service's password and the credentials are never printed.

use serde_json::Value;

use super::mounted::{self, Mounted, Mounts};
use super::shared::{self, Mode};
use super::{Created, SetupCtx, VaultOp, call};
use crate::capture::Expect;
use crate::error::{Cause, Error};
use crate::signals::Stop;
use crate::template::{Piece, RequestSpec};
use crate::vault::client::Client;
use crate::vault::fixture::Naming;
use crate::vault::progress::Display;
use crate::workload::Operation;

/// The kind of role a family reads.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum RoleKind {
    /// `roles/NAME`, read at `creds/NAME`: a new leased user per request.
    Dynamic,
    /// `static-roles/NAME`, read at `static-creds/NAME`: an existing user's password.
    Static,
}

/// A write under the mount: its path there, its body, what it does (for messages).
pub(crate) struct Write {
    pub(crate) path: String,
    pub(crate) body: Value,
    pub(crate) what: String,
}

/// What a dynamic-credentials family says of itself; the rest is `Creds`'.
pub(crate) trait Family: Send {
    /// The operation's name (`db-creds`).
    fn name(&self) -> &'static str;
    /// The engine, unmounted.
    fn mounted(&self) -> Mounted;
    /// The start of a fresh mount's name (`vblast-db-`).
    fn prefix(&self) -> &'static str;
    /// Refuses what cannot be set up (no service given, `--no-setup`).
    fn check(&self, ctx: &SetupCtx) -> Result<(), Error>;
    /// The connection to the service, written at setup (`mode`: `Create` lets the
    /// shards' own roles use it too).
    fn connection(&self, mount: &str, mode: Mode) -> Write;
    /// The role's name.
    fn role(&self) -> &str;
    fn role_kind(&self) -> RoleKind {
        RoleKind::Dynamic
    }
    /// The role's settings, as setup writes them.
    fn role_body(&self) -> Value;
    /// The service's password, masked in the server's messages.
    fn secret(&self) -> Option<&str>;
    /// Whether the shards of a run share the mount (`Fixture::Shared`).
    fn shared(&self) -> bool {
        false
    }
    /// What `created()` says of the mount; `role` is the role whose leases go (empty:
    /// every role's).
    fn created(&self, mount: &str, role: &str) -> Vec<Created> {
        let _ = role;
        super::mount_created(self.mounted().kind(), Some(mount))
    }
}

/// A dynamic-credentials operation: a family, and the pattern's state.
pub(crate) struct Creds<F: Family> {
    family: F,
    mounted: Mounted,
    /// A shard's: the mount `vblast setup` made (not its own: never disabled by it).
    shared_mount: Option<String>,
    /// A shard's: its own role under the shared mount, as soon as it may exist.
    own_role: Option<String>,
    /// `vblast cleanup`: revoke the leases of every role of the mount (the shards' too).
    all_roles: bool,
    /// How long the revocation of the leases may take (`--cleanup-timeout`).
    cleanup_timeout: std::time::Duration,
    /// How the revocation's progress is shown (the setup's).
    display: Display,
}

impl<F: Family> Creds<F> {
    pub(crate) fn new(family: F) -> Creds<F> {
        Creds {
            mounted: family.mounted(),
            family,
            shared_mount: None,
            own_role: None,
            all_roles: false,
            cleanup_timeout: crate::config::fixtures::CLEANUP_TIMEOUT,
            display: Display::Off,
        }
    }

    /// A server message with the service's password (if it shows) masked.
    fn masked(&self, e: Cause) -> Cause {
        match self.family.secret() {
            Some(p) if !p.is_empty() => Cause::from(e.to_string().replace(p, "<redacted>")),
            _ => e,
        }
    }

    /// `roles` or `static-roles`, `creds` or `static-creds`.
    fn paths(&self) -> (&'static str, &'static str) {
        match self.family.role_kind() {
            RoleKind::Dynamic => ("roles", "creds"),
            RoleKind::Static => ("static-roles", "static-creds"),
        }
    }

    fn prepare(&mut self, client: &mut Client, naming: &Naming) -> Result<(), Cause> {
        let mount = naming.random_name(self.family.prefix());
        self.mounted.enable(client, &mount, None)?;
        let conn = self.family.connection(&mount, naming.mode());
        self.mounted
            .write(client, &conn.path, &conn.body, &conn.what)
            .map_err(|e| self.masked(e))?;
        let (roles, _) = self.paths();
        let role = self.family.role();
        let what = match self.family.role_kind() {
            RoleKind::Dynamic => format!("creating role '{role}' in '{mount}'"),
            RoleKind::Static => format!("creating the static role '{role}' in '{mount}'"),
        };
        self.mounted
            .write(
                client,
                &format!("{roles}/{role}"),
                &self.family.role_body(),
                &what,
            )
            .map(drop)
            .map_err(|e| self.masked(e))
    }

    /// A shard of a run sharing the fixture: the mount `vblast setup` made, and a role of
    /// its own beside the shared one.
    fn join(&mut self, ctx: &SetupCtx, mount: String) -> Result<(), Error> {
        let own = shared::own_name(self.family.role());
        // From here on the role may exist: the shard's cleanup deletes it whatever
        // happens next.
        self.shared_mount = Some(mount.clone());
        self.own_role = Some(own.clone());
        let mut client = (ctx.make_client)();
        call(
            &mut client,
            "POST",
            &format!("/v1/{mount}/roles/{own}"),
            Some(&self.family.role_body()),
            &format!("creating this shard's role '{own}' in '{mount}'"),
        )
        .map(drop)
        .map_err(Error::setup)
    }

    /// Revokes every lease under `prefix` (each revocation removes its user), bounded:
    /// past `--cleanup-timeout` the rest are forced out (`leases::revoke_all`).
    fn revoke(&self, client: &mut Client, prefix: &str, stop: &Stop) -> Result<(), Cause> {
        super::leases::revoke_all(client, prefix, self.cleanup_timeout, stop, self.display)
            .map(drop)
            .map_err(|e| self.masked(e))
    }
}

impl<F: Family> VaultOp for Creds<F> {
    fn check(&self, ctx: &SetupCtx) -> Result<(), Error> {
        self.family.check(ctx)
    }

    fn setup(&mut self, ctx: &SetupCtx) -> Result<(), Error> {
        self.family.check(ctx)?;
        self.cleanup_timeout = ctx.naming.cleanup_timeout();
        self.display = ctx.log.display();
        if self.family.shared() {
            let (family, role) = (self.mounted.kind(), self.family.role().to_string());
            match mounted::shared(ctx, &[self.family.prefix()], family, &role)? {
                Mounts::Joined(mount) => return self.join(ctx, mount),
                // `vblast cleanup`: the mount setup made, its leases (every role's) to revoke.
                Mounts::Remove(mut names) => {
                    self.mounted.mount = names.pop();
                    self.all_roles = true;
                    return Ok(());
                }
                Mounts::Make => {}
            }
        }
        let mut client = (ctx.make_client)();
        self.prepare(&mut client, ctx.naming).map_err(Error::setup)
    }

    fn operation(&self) -> Operation {
        let mount = self.mounted.mount_or(self.shared_mount.as_deref());
        let role = self.own_role.as_deref().unwrap_or(self.family.role());
        let (_, creds) = self.paths();
        let mut op = Operation::new(
            self.family.name(),
            RequestSpec {
                method: "GET".into(),
                path: vec![Piece::lit(format!("/v1/{mount}/{creds}/{role}"))],
                headers: vec![],
                body: None,
                captured_headers: vec![],
            },
        );
        op.expect = Some(match self.family.role_kind() {
            RoleKind::Dynamic => {
                Expect::all_present("data.username", &["data.password", "lease_id"])
            }
            RoleKind::Static => Expect::all_present("data.username", &["data.password"]),
        });
        op
    }

    fn created(&self) -> Vec<Created> {
        let role = if self.all_roles {
            ""
        } else {
            self.family.role()
        };
        let mut out = self
            .mounted
            .mount
            .as_deref()
            .map(|m| self.family.created(m, role))
            .unwrap_or_default();
        if let (Some(m), Some(own)) = (&self.shared_mount, &self.own_role) {
            out.push(Created {
                what: format!(
                    "this shard's {} role '{own}' in '{m}' and the {} users of its leases",
                    self.mounted.kind(),
                    self.mounted.kind()
                ),
                remove_with: format!(
                    "vault lease revoke -prefix {m}/creds/{own} && vault delete {m}/roles/{own}"
                ),
            });
        }
        out
    }

    fn cleanup(&mut self, client: &mut Client, stop: &Stop) -> Result<(), Cause> {
        if let (Some(m), Some(own)) = (self.shared_mount.clone(), self.own_role.clone()) {
            // The leases this shard was given, revoked (their users removed), then its role.
            self.revoke(client, &format!("{m}/creds/{own}"), stop)?;
            call(
                client,
                "DELETE",
                &format!("/v1/{m}/roles/{own}"),
                None,
                &format!("deleting this shard's role '{own}' in '{m}'"),
            )?;
            self.own_role = None;
        }
        if let Some(m) = self.mounted.mount.clone() {
            let role = self.family.role().to_string();
            match self.family.role_kind() {
                // Every lease of the role, revoked (its user removed) before the mount
                // goes; at `vblast cleanup`, every role's.
                RoleKind::Dynamic if self.all_roles => {
                    self.revoke(client, &format!("{m}/creds"), stop)?
                }
                RoleKind::Dynamic => self.revoke(client, &format!("{m}/creds/{role}"), stop)?,
                // The user stays, with the password the engine last gave it.
                RoleKind::Static => {
                    call(
                        client,
                        "DELETE",
                        &format!("/v1/{m}/static-roles/{role}"),
                        None,
                        &format!("deleting the static role '{role}' in '{m}'"),
                    )?;
                }
            }
        }
        self.mounted.disable(client)
    }
}
