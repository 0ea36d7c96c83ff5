//! The tool's own login (`--auth-method`): the method and its credentials as one value
//! (`AdminLogin`, whose `Debug` never prints a secret), the login itself, the token's
//! renewal during the run (renew-self at two thirds of its TTL) and its revocation
//! (revoke-self) when the `LoggedIn` it gives is dropped, on every exit path.

use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::error::{Cause, Error};
use crate::net::target::Target;
use crate::net::tls::{self, TlsOptions};
use crate::vault::client::{Client, Response};

/// An auth method and what it logs in with (the secrets read from files or the
/// environment by the commands, never from a flag's value).
#[derive(Clone)]
pub enum LoginMethod {
    AppRole { role_id: String, secret_id: String },
    Jwt { role: String, jwt: String },
    Kubernetes { role: String, jwt: String },
    Cert { role: Option<String> },
    Userpass { username: String, password: String },
}

impl LoginMethod {
    /// The method's name, also its default mount.
    pub fn name(&self) -> &'static str {
        match self {
            LoginMethod::AppRole { .. } => "approle",
            LoginMethod::Jwt { .. } => "jwt",
            LoginMethod::Kubernetes { .. } => "kubernetes",
            LoginMethod::Cert { .. } => "cert",
            LoginMethod::Userpass { .. } => "userpass",
        }
    }

    /// The login's path under the mount and its JSON body.
    fn request(&self, mount: &str) -> (String, serde_json::Value) {
        use serde_json::json;
        match self {
            LoginMethod::AppRole { role_id, secret_id } => (
                format!("/v1/auth/{mount}/login"),
                json!({"role_id": role_id, "secret_id": secret_id}),
            ),
            LoginMethod::Jwt { role, jwt } | LoginMethod::Kubernetes { role, jwt } => (
                format!("/v1/auth/{mount}/login"),
                json!({"role": role, "jwt": jwt}),
            ),
            LoginMethod::Cert { role } => (
                format!("/v1/auth/{mount}/login"),
                match role {
                    Some(r) => json!({"name": r}),
                    None => json!({}),
                },
            ),
            LoginMethod::Userpass { username, password } => (
                format!("/v1/auth/{mount}/login/{username}"),
                json!({"password": password}),
            ),
        }
    }
}

/// `--auth-method` and its settings, parsed once.
#[derive(Clone)]
pub struct AdminLogin {
    pub method: LoginMethod,
    /// The method's mount path (default: its name).
    pub mount: String,
}

/// Never prints a secret.
impl std::fmt::Debug for AdminLogin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdminLogin")
            .field("method", &self.method.name())
            .field("mount", &self.mount)
            .finish()
    }
}

/// Where the login goes: the server and how it is reached.
pub struct LoginTarget<'a> {
    pub address: &'a str,
    pub tls: Option<&'a TlsOptions>,
    pub namespace: Option<String>,
    pub timeout: Duration,
}

/// The token a login gave, renewed while it lives and revoked when dropped.
pub struct LoggedIn {
    token: String,
    accessor: String,
    client: Client,
    done: Arc<(Mutex<bool>, Condvar)>,
    renewer: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for LoggedIn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoggedIn")
            .field("accessor", &self.accessor)
            .finish()
    }
}

/// What the login's answer says of its token.
struct Lease {
    token: String,
    accessor: String,
    ttl: Duration,
    renewable: bool,
}

fn lease_of(r: &Response) -> Option<Lease> {
    let v = r.json()?;
    let auth = v.get("auth")?;
    Some(Lease {
        token: auth.get("client_token")?.as_str()?.to_string(),
        accessor: auth
            .get("accessor")
            .and_then(|a| a.as_str())
            .unwrap_or("")
            .to_string(),
        ttl: Duration::from_secs(auth.get("lease_duration")?.as_u64()?),
        renewable: auth
            .get("renewable")
            .and_then(|b| b.as_bool())
            .unwrap_or(false),
    })
}

/// A client of `at` without a token.
fn client_of(at: &LoginTarget) -> Result<Client, Error> {
    let target = Target::parse(at.address).map_err(Error::input)?;
    let (config, name) = match at.tls.filter(|_| target.is_tls()) {
        Some(opts) => (
            Some(tls::client_config(opts).map_err(Error::input)?),
            Some(tls::server_name(opts, &target.host).map_err(Error::input)?),
        ),
        None => (None, None),
    };
    Ok(Client::new(
        &target,
        config,
        name,
        None,
        at.namespace.clone(),
        at.timeout,
    ))
}

impl AdminLogin {
    /// Logs in at `at`: a refusal is bad input naming the server's error (no secret), an
    /// unreachable server is unreachable. The token is renewed until the `LoggedIn` drops.
    /// (A cert login without a client certificate is refused before, by the command that
    /// knows its flags' names: `commands::login::log_in`.)
    pub fn log_in(&self, at: &LoginTarget) -> Result<LoggedIn, Error> {
        let mut client = client_of(at)?;
        let (path, body) = self.method.request(&self.mount);
        let body = body.to_string();
        let r = client
            .request("POST", &path, Some(body.as_bytes()))
            .map_err(|e| {
                Error::unreachable(format!("the {} login failed: {e}", self.method.name()))
            })?;
        let lease = match (r.status, lease_of(&r)) {
            (200, Some(l)) => l,
            _ => {
                return Err(Error::input(format!(
                    "the {} login at auth/{} was refused: {} (HTTP {})",
                    self.method.name(),
                    self.mount,
                    r.error_text(),
                    r.status
                )));
            }
        };
        eprintln!(
            "vblast: logged in with {} at auth/{} (token accessor {}, TTL {} s{})",
            self.method.name(),
            self.mount,
            lease.accessor,
            lease.ttl.as_secs(),
            if lease.renewable { ", renewable" } else { "" }
        );
        Ok(LoggedIn::start(client, lease))
    }
}

impl LoggedIn {
    fn start(client: Client, lease: Lease) -> LoggedIn {
        let client = client.with_token(&lease.token);
        let done = Arc::new((Mutex::new(false), Condvar::new()));
        let renewer = (!lease.ttl.is_zero()).then(|| {
            let c = client.clone_fresh();
            let d = done.clone();
            std::thread::spawn(move || renew_until_done(c, lease.ttl, lease.renewable, &d))
        });
        LoggedIn {
            token: lease.token,
            accessor: lease.accessor,
            client,
            done,
            renewer,
        }
    }

    /// The token the run uses.
    pub fn token(&self) -> &str {
        &self.token
    }
}

/// Waits `d` unless the run ends first; true when it ended.
fn wait_done(done: &(Mutex<bool>, Condvar), d: Duration) -> bool {
    let Ok(guard) = done.0.lock() else {
        return true;
    };
    match done.1.wait_timeout_while(guard, d, |ended| !*ended) {
        Ok((g, _)) => *g,
        Err(_) => true,
    }
}

/// Why the renewer renews no more: the token's last TTL runs out unless the run ends first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LastTtl {
    /// The login gave a token that is not renewable (a batch token, `renewable: false`).
    NotRenewable,
    /// A renewal came back with a TTL cut short by the token's max TTL.
    MaxTtl,
    /// A renewal failed (said then); a third of the TTL is left to it.
    RenewalFailed,
}

impl LastTtl {
    /// The one warning said when the token expires before the run ends.
    fn expired(self, ttl: Duration) -> String {
        let why = match self {
            LastTtl::NotRenewable => "is not renewable and expired during the run",
            LastTtl::MaxTtl => "reached its max TTL and expired during the run",
            LastTtl::RenewalFailed => "could not be renewed and expired during the run",
        };
        format!(
            "vblast: warning: the login's token {why} (last TTL {} s): the run goes on; its requests, setup and cleanup calls that need the token fail from now on",
            ttl.as_secs()
        )
    }
}

/// The renewer: renew-self at two thirds of the TTL while the token is renewable; a
/// token that is not (or stops being) is said once when it expires before the run ends.
fn renew_until_done(
    mut c: Client,
    mut ttl: Duration,
    renewable: bool,
    done: &(Mutex<bool>, Condvar),
) {
    let mut last = (!renewable).then_some(LastTtl::NotRenewable);
    loop {
        if let Some(why) = last {
            if !wait_done(done, ttl) {
                eprintln!("{}", why.expired(ttl));
            }
            return;
        }
        if wait_done(done, ttl * 2 / 3) {
            return;
        }
        match renew(&mut c) {
            Ok(l) if !l.ttl.is_zero() => {
                // A TTL cut short by the token's max TTL is its last.
                if !l.renewable {
                    last = Some(LastTtl::NotRenewable);
                } else if l.ttl < ttl {
                    last = Some(LastTtl::MaxTtl);
                }
                ttl = l.ttl;
            }
            Ok(_) => return,
            Err(e) => {
                eprintln!("vblast: warning: renewing the login's token failed: {e}");
                ttl /= 3;
                last = Some(LastTtl::RenewalFailed);
            }
        }
    }
}

fn renew(c: &mut Client) -> Result<Lease, Cause> {
    let r = c.request("POST", "/v1/auth/token/renew-self", Some(b"{}"))?;
    match (r.status, lease_of(&r)) {
        (200, Some(l)) => Ok(l),
        _ => Err(format!("{} (HTTP {})", r.error_text(), r.status).into()),
    }
}

/// The renewer stopped, then the token revoked (revoke-self).
impl Drop for LoggedIn {
    fn drop(&mut self) {
        if let Ok(mut ended) = self.done.0.lock() {
            *ended = true;
        }
        self.done.1.notify_all();
        if let Some(h) = self.renewer.take() {
            let _ = h.join();
        }
        match self
            .client
            .request("POST", "/v1/auth/token/revoke-self", Some(b"{}"))
        {
            Ok(r) if r.status == 204 || r.status == 200 => {}
            Ok(r) => eprintln!(
                "vblast: warning: revoking the login's token (accessor {}) failed: {} (HTTP {})",
                self.accessor,
                r.error_text(),
                r.status
            ),
            Err(e) => eprintln!(
                "vblast: warning: revoking the login's token (accessor {}) failed: {e}",
                self.accessor
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_shows_a_secret_and_each_method_posts_to_its_login_path() {
        let login = AdminLogin {
            method: LoginMethod::Userpass {
                username: "bench".into(),
                password: "pw-secret".into(),
            },
            mount: "up".into(),
        };
        let shown = format!("{login:?}");
        assert!(!shown.contains("pw-secret"), "{shown}");
        assert!(
            shown.contains("userpass") && shown.contains("up"),
            "{shown}"
        );
        let (path, body) = login.method.request(&login.mount);
        assert_eq!(path, "/v1/auth/up/login/bench");
        assert_eq!(body["password"], "pw-secret");
        let (path, body) = LoginMethod::Cert { role: None }.request("cert");
        assert_eq!(
            (path.as_str(), body.to_string().as_str()),
            ("/v1/auth/cert/login", "{}")
        );
        let (_, body) = LoginMethod::Kubernetes {
            role: "r".into(),
            jwt: "j".into(),
        }
        .request("kubernetes");
        assert_eq!(body, serde_json::json!({"role": "r", "jwt": "j"}));
    }
}
