//! Checks before setup: the server answers, is initialised and unsealed, and accepts the
//! token (in the namespace, if one is given).

use super::client::Client;
use crate::error::Cause;

/// Checks that the server answers, is initialised and unsealed, and accepts the token.
pub fn preflight(client: &mut Client) -> Result<(), Cause> {
    let base = client.base();
    // sys/health only exists in the root namespace.
    let r = client.request_root("GET", "/v1/sys/health", None)?;
    match r.status {
        200 | 429 | 472 | 473 => {}
        503 => {
            return Err(Cause::from(format!(
                "Vault at {base} is sealed (sys/health answered 503)"
            )));
        }
        501 => {
            return Err(Cause::from(format!(
                "Vault at {base} is not initialised (sys/health answered 501)"
            )));
        }
        s => {
            return Err(Cause::from(format!(
                "unexpected answer from {base}/v1/sys/health: HTTP {s}: {}",
                r.error_text()
            )));
        }
    }
    let r = client.request("GET", "/v1/auth/token/lookup-self", None)?;
    match r.status {
        200..=299 => Ok(()),
        403 | 401 if !client.has_token() => Err(Cause::from(format!(
            "no token given and {base} requires one ({} {}): set VAULT_TOKEN or --token",
            r.status,
            r.error_text()
        ))),
        403 | 401 => Err(Cause::from(format!(
            "the token was rejected by {base} ({} {}): check VAULT_TOKEN or --token",
            r.status,
            r.error_text()
        ))),
        404 if client.namespace().is_some() => Err(Cause::from(format!(
            "token lookup in namespace '{}' at {base} failed (404 {}): check VAULT_NAMESPACE or --namespace",
            client.namespace().unwrap_or(""),
            r.error_text()
        ))),
        s => Err(Cause::from(format!(
            "token lookup at {base} failed: HTTP {s}: {}",
            r.error_text()
        ))),
    }
}
