//! The `cert-login` operation: logins to the TLS certificate auth method (auth/cert) over
//! mutual TLS. Setup enables the method at a fresh path and trusts the client
//! certificate's issuer as the role `vblast`; cleanup disables it again.

use std::path::Path;

use super::client::Client;
use super::setup::random_mount_name;
use crate::template::{Piece, RequestSpec};
use crate::workload::Operation;

/// The role vblast registers.
pub const ROLE: &str = "vblast";
/// TTL of the tokens each login creates.
pub const TOKEN_TTL: &str = "2m";

/// The auth mount in place.
#[derive(Clone, Debug)]
pub struct CertSetup {
    /// Auth path without slashes ("vblast-cert-1a2b3c4d").
    pub path: String,
    /// Whether we enabled it (and so must disable it).
    pub created: bool,
    /// Role to log in with (None: let the server match any trusted role).
    pub role: Option<String>,
}

/// "vblast-cert-" and 8 random lowercase hex digits.
pub fn random_auth_path() -> String {
    random_mount_name().replacen("vblast-", "vblast-cert-", 1)
}

/// The PEM CERTIFICATE blocks of `path` (other blocks, such as a key, are left out).
pub fn read_ca_pem(path: &Path) -> Result<String, String> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        format!(
            "cannot read client CA file {}: {}",
            path.display(),
            crate::transport::io_error_text(&e)
        )
    })?;
    let mut out = String::new();
    let mut inside = false;
    for line in text.lines() {
        let line = line.trim();
        if line == "-----BEGIN CERTIFICATE-----" {
            inside = true;
        }
        if inside {
            out.push_str(line);
            out.push('\n');
        }
        if line == "-----END CERTIFICATE-----" {
            inside = false;
        }
    }
    if out.is_empty() || inside {
        return Err(format!(
            "no complete PEM certificate found in {}",
            path.display()
        ));
    }
    Ok(out)
}

fn check(r: &super::client::Response, what: &str, base: &str) -> Result<(), String> {
    if (200..300).contains(&r.status) {
        Ok(())
    } else {
        Err(format!(
            "{what} on {base} failed: HTTP {}: {}",
            r.status,
            r.error_text()
        ))
    }
}

/// Enables cert auth at a fresh path and registers `ca_pem` as the trusted certificate
/// of role `vblast`. On failure, a path enabled here is disabled again.
pub fn prepare(client: &mut Client, ca_pem: &str) -> Result<CertSetup, String> {
    let base = client.base();
    let path = random_auth_path();
    let body = serde_json::json!({
        "type": "cert",
        "description": "vblast load test (temporary)",
    });
    let r = client.request(
        "POST",
        &format!("/v1/sys/auth/{path}"),
        Some(body.to_string().as_bytes()),
    )?;
    check(&r, &format!("enabling cert auth at '{path}'"), &base)?;
    let setup = CertSetup {
        path,
        created: true,
        role: Some(ROLE.into()),
    };
    let role = serde_json::json!({
        "certificate": ca_pem,
        "token_ttl": TOKEN_TTL,
        "display_name": ROLE,
    });
    let result = client
        .request(
            "POST",
            &format!("/v1/auth/{}/certs/{ROLE}", setup.path),
            Some(role.to_string().as_bytes()),
        )
        .and_then(|r| {
            check(
                &r,
                &format!("registering the client CA as role '{ROLE}'"),
                &base,
            )
        });
    match result {
        Ok(()) => Ok(setup),
        Err(e) => match cleanup(client, &setup) {
            Ok(()) => Err(e),
            Err(c) => Err(format!(
                "{e} (and disabling the auth path again failed: {c})"
            )),
        },
    }
}

/// `--no-setup`: an existing cert auth mount, any trusted role.
pub fn existing(path: &str) -> CertSetup {
    CertSetup {
        path: path.trim().trim_matches('/').to_string(),
        created: false,
        role: None,
    }
}

/// The login request; the TLS layer presents the client certificate.
pub fn login(setup: &CertSetup) -> Operation {
    let body = match &setup.role {
        Some(role) => serde_json::json!({ "name": role }).to_string(),
        None => "{}".to_string(),
    };
    Operation::new(
        "cert-login",
        RequestSpec {
            method: "POST".into(),
            path: vec![Piece::lit(format!("/v1/auth/{}/login", setup.path))],
            headers: vec![("Content-Type".into(), "application/json".into())],
            body: Some(vec![Piece::lit(body)]),
        },
    )
}

/// Disables the auth path when we enabled it.
pub fn cleanup(client: &mut Client, setup: &CertSetup) -> Result<(), String> {
    if !setup.created {
        return Ok(());
    }
    let r = client.request("DELETE", &format!("/v1/sys/auth/{}", setup.path), None)?;
    check(
        &r,
        &format!("disabling cert auth at '{}'", setup.path),
        &client.base(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::template::{Common, Rng, Template};

    #[test]
    fn paths_and_bodies() {
        let p = random_auth_path();
        assert!(p.starts_with("vblast-cert-") && p.len() == 20, "{p}");
        let s = CertSetup {
            path: p.clone(),
            created: true,
            role: Some(ROLE.into()),
        };
        let mut t = Template::build(&login(&s).request, &Common::default());
        let text = String::from_utf8(t.render(&mut Rng::new(1)).to_vec()).unwrap();
        assert!(text.starts_with(&format!("POST /v1/auth/{p}/login HTTP/1.1\r\n")));
        assert!(text.ends_with("\r\n\r\n{\"name\":\"vblast\"}"), "{text}");
        assert_eq!(existing("/cert/").path, "cert");
    }

    #[test]
    fn ca_pem_keeps_only_certificates() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("both.pem");
        std::fs::write(
            &f,
            "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n-----BEGIN CERTIFICATE-----\nBBBB\n-----END CERTIFICATE-----\n",
        )
        .unwrap();
        assert_eq!(
            read_ca_pem(&f).unwrap(),
            "-----BEGIN CERTIFICATE-----\nBBBB\n-----END CERTIFICATE-----\n"
        );
        std::fs::write(&f, "nothing").unwrap();
        assert!(read_ca_pem(&f).unwrap_err().contains("no complete PEM"));
        assert!(read_ca_pem(&dir.path().join("missing")).is_err());
    }
}
