//! Certificates for the TLS servers of the tests: a CA and a leaf for 127.0.0.1 and
//! localhost, written as PEM files (rcgen, no openssl needed).

use std::fs;
use std::path::{Path, PathBuf};

/// PEM files for a test TLS server: a CA, and a leaf for 127.0.0.1/localhost.
pub struct TlsFiles {
    pub ca_cert: PathBuf,
    pub cert: PathBuf,
    pub key: PathBuf,
}

/// Generate a CA and a leaf certificate (SANs 127.0.0.1, localhost) into `dir`
/// as `ca.pem`, `cert.pem`, `key.pem`.
pub fn gen_tls_files(dir: &Path) -> TlsFiles {
    gen_tls_files_for(dir, &["127.0.0.1", "localhost"])
}

/// The same with a leaf for `names` (host names or IP addresses; the first is its CN).
pub fn gen_tls_files_for(dir: &Path, names: &[&str]) -> TlsFiles {
    use rcgen::{
        BasicConstraints, CertificateParams, DistinguishedName, DnType, IsCa, Issuer, KeyPair,
    };
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, "vblast test CA");
    ca_params.distinguished_name = dn;
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca_params, &ca_key);

    let leaf_key = KeyPair::generate().unwrap();
    let mut leaf_params =
        CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>()).unwrap();
    let mut dn = DistinguishedName::new();
    dn.push(
        DnType::CommonName,
        names.first().copied().unwrap_or("localhost"),
    );
    leaf_params.distinguished_name = dn;
    let leaf = leaf_params.signed_by(&leaf_key, &issuer).unwrap();

    let files = TlsFiles {
        ca_cert: dir.join("ca.pem"),
        cert: dir.join("cert.pem"),
        key: dir.join("key.pem"),
    };
    fs::write(&files.ca_cert, ca_cert.pem()).unwrap();
    fs::write(&files.cert, leaf.pem()).unwrap();
    fs::write(&files.key, leaf_key.serialize_pem()).unwrap();
    files
}
