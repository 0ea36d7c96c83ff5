//! The Vault client of setup and cleanup calls (preflight, mounting, seeding, unmounting),
//! over the blocking HTTP client of `net::blocking`: what it adds is Vault's headers (the
//! token, the namespace, no request forwarding), checked before anything is sent, and a
//! `Debug` that never prints the token. Not used by the load engine.

use std::sync::Arc;
use std::time::Duration;

use rustls::ClientConfig;
use rustls::pki_types::ServerName;

use crate::error::Cause;
use crate::net::blocking::BlockingClient;
pub use crate::net::blocking::Response;
use crate::net::target::Target;
use crate::signals::Stop;

/// A blocking keep-alive Vault client: one connection, reused across calls.
pub struct Client {
    http: BlockingClient,
    vault: VaultHeaders,
}

/// What the client says to Vault in each request's headers.
#[derive(Clone)]
struct VaultHeaders {
    token: Option<String>,
    namespace: Option<String>,
    /// Sends `X-Vault-No-Request-Forwarding: true`: a standby answers itself.
    no_forwarding: bool,
}

impl VaultHeaders {
    /// The headers of a request, the namespace's only `with_namespace`; a token or a
    /// namespace that would break the request's head is refused, without repeating it.
    fn list(&self, with_namespace: bool) -> Result<Vec<(&'static str, &str)>, Cause> {
        let bad_header = |v: &str| v.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0);
        if self.token.as_deref().is_some_and(bad_header) {
            return Err("the token contains line breaks or NUL characters".into());
        }
        if self.namespace.as_deref().is_some_and(bad_header) {
            return Err("the namespace contains line breaks or NUL characters".into());
        }
        let mut headers = Vec::with_capacity(3);
        if let Some(t) = &self.token {
            headers.push(("X-Vault-Token", t.as_str()));
        }
        if self.no_forwarding {
            headers.push(("X-Vault-No-Request-Forwarding", "true"));
        }
        if let Some(ns) = self.namespace.as_deref().filter(|_| with_namespace) {
            headers.push(("X-Vault-Namespace", ns));
        }
        Ok(headers)
    }
}

/// Never prints the token.
impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("http", &self.http)
            .field("token", &self.vault.token.as_ref().map(|_| "<redacted>"))
            .field("namespace", &self.vault.namespace)
            .finish()
    }
}

impl Client {
    pub fn new(
        target: &Target,
        tls: Option<Arc<ClientConfig>>,
        server_name: Option<ServerName<'static>>,
        token: Option<String>,
        namespace: Option<String>,
        timeout: Duration,
    ) -> Client {
        Client {
            http: BlockingClient::new(target, tls, server_name, timeout),
            vault: VaultHeaders {
                token: token.filter(|t| !t.is_empty()),
                namespace: namespace.filter(|n| !n.is_empty()),
                no_forwarding: false,
            },
        }
    }

    /// A client with the same settings and a connection of its own.
    pub fn clone_fresh(&self) -> Client {
        Client {
            http: self.http.clone_fresh(),
            vault: self.vault.clone(),
        }
    }

    /// The same settings with another bound on each request: for a call the server may
    /// take long to answer (queueing the revocation of thousands of leases).
    pub fn with_timeout(mut self, timeout: Duration) -> Client {
        self.http = self.http.with_timeout(timeout);
        self
    }

    /// The same settings with another token (one vblast created at setup).
    pub fn with_token(mut self, token: &str) -> Client {
        self.vault.token = Some(token.to_string());
        self
    }

    /// Makes every request return "interrupted" soon after `stop` is raised (a signal).
    /// For setup calls only: cleanup after a first signal must still run.
    pub fn with_stop(mut self, stop: Stop) -> Client {
        self.http = self.http.with_stop(stop);
        self
    }

    /// Asks a standby to answer itself (`X-Vault-No-Request-Forwarding`), not forward.
    pub fn without_forwarding(mut self) -> Client {
        self.vault.no_forwarding = true;
        self
    }

    /// Base URL of the server, for messages ("http://127.0.0.1:8200").
    pub fn base(&self) -> String {
        self.http.base()
    }

    /// Whether a token will be sent.
    pub fn has_token(&self) -> bool {
        self.vault.token.is_some()
    }

    /// The namespace sent with requests, if any.
    pub fn namespace(&self) -> Option<&str> {
        self.vault.namespace.as_deref()
    }

    /// Sends one request and reads the whole answer. `path` starts with "/" ("/v1/sys/health").
    /// A reused connection found closed before any answer byte is re-opened once and the
    /// request resent.
    pub fn request(
        &mut self,
        method: &str,
        path: &str,
        body: Option<&[u8]>,
    ) -> Result<Response, Cause> {
        let headers = self.vault.list(true)?;
        self.http.request(method, path, &headers, body)
    }

    /// Like `request`, but without the namespace header: for root-only endpoints such as
    /// sys/health, which answer 400 "operation unavailable in namespaces" otherwise.
    pub fn request_root(
        &mut self,
        method: &str,
        path: &str,
        body: Option<&[u8]>,
    ) -> Result<Response, Cause> {
        let headers = self.vault.list(false)?;
        self.http.request(method, path, &headers, body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bytes `request` (or `request_root`, `with_namespace` false) would send.
    fn built(
        c: &Client,
        method: &str,
        path: &str,
        body: Option<&[u8]>,
        with_namespace: bool,
    ) -> Result<Vec<u8>, Cause> {
        let headers = c.vault.list(with_namespace)?;
        c.http.build_request(method, path, &headers, body)
    }

    fn target() -> Target {
        Target::parse("http://127.0.0.1:8200").unwrap()
    }

    #[test]
    fn request_building_and_debug_hide_the_token() {
        let c = Client::new(
            &target(),
            None,
            None,
            Some("s.secret-token".into()),
            Some("ns1".into()),
            Duration::from_secs(5),
        );
        let req = built(&c, "POST", "/v1/x", Some(b"{}"), true).unwrap();
        let text = String::from_utf8(req).unwrap();
        assert!(text.starts_with("POST /v1/x HTTP/1.1\r\nHost: 127.0.0.1:8200\r\n"));
        assert!(text.contains("X-Vault-Token: s.secret-token\r\n"));
        assert!(text.contains("X-Vault-Namespace: ns1\r\n"));
        assert!(text.contains("Content-Type: application/json\r\nContent-Length: 2\r\n"));
        assert!(text.ends_with("\r\n\r\n{}"));
        let get = String::from_utf8(built(&c, "GET", "/v1/y", None, false).unwrap()).unwrap();
        assert!(!get.contains("Content-Length"));
        assert!(!get.contains("X-Vault-Namespace"));
        assert!(!format!("{c:?}").contains("secret-token"));
        assert!(built(&c, "GET", "/v1/a b", None, true).is_err());
        assert!(built(&c, "GET", "v1/a", None, true).is_err());
        assert!(built(&c, "G T", "/v1/a", None, true).is_err());
        let standby = c.clone_fresh().without_forwarding();
        let text = String::from_utf8(built(&standby, "GET", "/v1/y", None, true).unwrap()).unwrap();
        assert!(text.contains(
            "X-Vault-Token: s.secret-token\r\nX-Vault-No-Request-Forwarding: true\r\nX-Vault-Namespace: ns1\r\n"
        ));
        let bad = Client::new(
            &target(),
            None,
            None,
            Some("zq9\r\nX: y".into()),
            None,
            Duration::from_secs(5),
        );
        let e = built(&bad, "GET", "/v1/a", None, true)
            .unwrap_err()
            .to_string();
        assert!(!e.contains("zq9"), "{e}");
    }
}
