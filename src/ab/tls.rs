//! The TLS lines of ab's report (`SSL/TLS Protocol`, `Server Temp Key`, `TLS Server
//! Name`): one handshake with the run's TLS settings before the run, described in
//! OpenSSL's words, as ab describes its first handshake.
//!
//! The server key's size comes from the certificate's SubjectPublicKeyInfo, read with a
//! small DER walk: three fields of one structure do not justify an X.509 crate and its
//! dependency tree in every build.

use std::net::TcpStream;
use std::time::Duration;

use rustls::{CipherSuite, NamedGroup, ProtocolVersion};

use super::report::TlsFacts;
use crate::error::Cause;
use crate::net::target::Target;
use crate::net::tls::{TlsOptions, blocking_handshake, client_config, server_name};

/// Handshakes with `target` and describes the result as ab would.
pub fn probe(target: &Target, opts: &TlsOptions, timeout: Duration) -> Result<TlsFacts, Cause> {
    let host_port = format!("{}:{}", target.host, target.port);
    let addr = target
        .addrs
        .first()
        .ok_or_else(|| Cause::Said(format!("{host_port} has no address")))?;
    let mut sock = TcpStream::connect_timeout(addr, timeout)
        .map_err(|e| Cause::io(format!("cannot connect to {host_port}"), e))?;
    let _ = sock.set_read_timeout(Some(timeout));
    let _ = sock.set_write_timeout(Some(timeout));
    let config = client_config(opts)?;
    let name = server_name(opts, &target.host)?;
    let mut conn = rustls::ClientConnection::new(config, name).map_err(|source| Cause::Tls {
        what: "TLS setup failed".into(),
        source,
    })?;
    blocking_handshake(&mut conn, &mut sock, &host_port)?;
    let version = match conn.protocol_version() {
        Some(ProtocolVersion::TLSv1_3) => "TLSv1.3",
        Some(ProtocolVersion::TLSv1_2) => "TLSv1.2",
        _ => "unknown",
    };
    let (cipher, cipher_bits) = conn
        .negotiated_cipher_suite()
        .map(|s| openssl_cipher(s.suite()))
        .unwrap_or(("unknown".into(), 0));
    let key_bits = conn
        .peer_certificates()
        .and_then(|c| c.first())
        .and_then(|c| public_key_bits(c.as_ref()))
        .unwrap_or(0);
    let temp_key = conn
        .negotiated_key_exchange_group()
        .map(|g| openssl_group(g.name()));
    conn.send_close_notify();
    let _ = conn.complete_io(&mut sock);
    Ok(TlsFacts {
        protocol: format!("{version},{cipher},{key_bits},{cipher_bits}"),
        temp_key,
        // The name sent (`--tls-server-name`, else the host); ab sends no SNI for an IP
        // address, and prints none.
        server_name: Some(opts.server_name.as_deref().unwrap_or(&target.host))
            .filter(|n| n.parse::<std::net::IpAddr>().is_err())
            .map(String::from),
    })
}

/// OpenSSL's name of a cipher suite and its cipher's key bits.
fn openssl_cipher(suite: CipherSuite) -> (String, u32) {
    let rustls_name = format!("{suite:?}");
    let bits = if rustls_name.contains("AES_128") {
        128
    } else {
        256
    };
    let name = if let Some(rest) = rustls_name.strip_prefix("TLS13_") {
        // TLS 1.3: OpenSSL uses the IANA name.
        format!("TLS_{rest}")
    } else if let Some(rest) = rustls_name.strip_prefix("TLS_ECDHE_") {
        // TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 -> ECDHE-RSA-AES128-GCM-SHA256.
        let (auth, cipher) = rest.split_once("_WITH_").unwrap_or((rest, ""));
        let cipher = cipher
            .replace("AES_128", "AES128")
            .replace("AES_256", "AES256")
            .replace("CHACHA20_POLY1305_SHA256", "CHACHA20-POLY1305")
            .replace('_', "-");
        format!("ECDHE-{auth}-{cipher}")
    } else {
        rustls_name
    };
    (name, bits)
}

/// OpenSSL 3's description of the server's key exchange share.
fn openssl_group(g: NamedGroup) -> String {
    match g {
        NamedGroup::X25519 => "X25519 253 bits".into(),
        NamedGroup::X448 => "X448 448 bits".into(),
        NamedGroup::secp256r1 => "ECDH prime256v1 256 bits".into(),
        NamedGroup::secp384r1 => "ECDH secp384r1 384 bits".into(),
        NamedGroup::secp521r1 => "ECDH secp521r1 521 bits".into(),
        other => format!("{other:?}"),
    }
}

/// One DER element at the start of `d`: (tag, contents, rest).
fn der(d: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, d) = d.split_first()?;
    let (&first, mut d) = d.split_first()?;
    let len = if first < 0x80 {
        usize::from(first)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 || d.len() < n {
            return None;
        }
        let len = d[..n]
            .iter()
            .fold(0usize, |a, &b| (a << 8) | usize::from(b));
        d = &d[n..];
        len
    };
    (d.len() >= len).then(|| (tag, &d[..len], &d[len..]))
}

/// The size of a certificate's public key in bits, as OpenSSL's EVP_PKEY_bits gives it.
fn public_key_bits(cert: &[u8]) -> Option<u32> {
    let (_, cert, _) = der(cert)?;
    let (_, mut tbs, _) = der(cert)?;
    // [0] version, serial, signature algorithm, issuer, validity, subject, then the key.
    if tbs.first() == Some(&0xa0) {
        tbs = der(tbs)?.2;
    }
    for _ in 0..5 {
        tbs = der(tbs)?.2;
    }
    let (_, spki, _) = der(tbs)?;
    let (_, alg, rest) = der(spki)?;
    let (_, oid, params) = der(alg)?;
    const RSA: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01];
    const EC: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01];
    const ED25519: &[u8] = &[0x2b, 0x65, 0x70];
    const ED448: &[u8] = &[0x2b, 0x65, 0x71];
    match oid {
        RSA => {
            let (_, key, _) = der(rest)?;
            // The BIT STRING's first byte counts unused bits; then RSAPublicKey.
            let (_, seq, _) = der(key.get(1..)?)?;
            let (_, modulus, _) = der(seq)?;
            let m: Vec<u8> = modulus.iter().copied().skip_while(|&b| b == 0).collect();
            let top = *m.first()?;
            Some(m.len() as u32 * 8 - top.leading_zeros())
        }
        EC => {
            let (_, curve, _) = der(params)?;
            match curve {
                [0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07] => Some(256),
                [0x2b, 0x81, 0x04, 0x00, 0x22] => Some(384),
                [0x2b, 0x81, 0x04, 0x00, 0x23] => Some(521),
                _ => None,
            }
        }
        ED25519 => Some(253),
        ED448 => Some(456),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cipher_names_are_openssls() {
        assert_eq!(
            openssl_cipher(CipherSuite::TLS13_AES_128_GCM_SHA256),
            ("TLS_AES_128_GCM_SHA256".into(), 128)
        );
        assert_eq!(
            openssl_cipher(CipherSuite::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384),
            ("ECDHE-RSA-AES256-GCM-SHA384".into(), 256)
        );
        assert_eq!(
            openssl_cipher(CipherSuite::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256),
            ("ECDHE-ECDSA-CHACHA20-POLY1305".into(), 256)
        );
    }

    #[test]
    fn key_bits_of_generated_certificates() {
        for (alg, bits) in [
            (&rcgen::PKCS_ECDSA_P256_SHA256, 256),
            (&rcgen::PKCS_ECDSA_P384_SHA384, 384),
            (&rcgen::PKCS_ED25519, 253),
        ] {
            let key = rcgen::KeyPair::generate_for(alg).unwrap();
            let params = rcgen::CertificateParams::new(vec!["localhost".into()]).unwrap();
            let cert = params.self_signed(&key).unwrap();
            assert_eq!(public_key_bits(cert.der()), Some(bits), "{alg:?}");
        }
        assert_eq!(public_key_bits(b"\x30\x03\x02\x01"), None);
    }
}
