//! TLS client configuration following Vault's conventions (VAULT_CACERT, VAULT_CAPATH,
//! VAULT_SKIP_VERIFY, VAULT_CLIENT_CERT/KEY, VAULT_TLS_SERVER_NAME), built once per run.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};

use crate::error::io_text;

#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct TlsOptions {
    pub ca_cert: Option<PathBuf>,
    pub ca_path: Option<PathBuf>,
    pub insecure: bool,
    pub client_cert: Option<PathBuf>,
    pub client_key: Option<PathBuf>,
    pub server_name: Option<String>,
    /// Session resumption on re-opened connections.
    pub resume: bool,
    /// Which record layer carries requests after the handshake.
    #[serde(default)]
    pub engine: TlsEngine,
}

/// The TLS record layer of the load engine.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    serde::Serialize,
    serde::Deserialize,
    clap::ValueEnum,
)]
#[serde(rename_all = "kebab-case")]
pub enum TlsEngine {
    /// Records sealed and opened in place with ring (src/net/tlsio.rs): no allocation per request.
    #[default]
    InPlace,
    /// rustls's own buffered ClientConnection: the cross-check of the in-place layer.
    Rustls,
}

/// ring's provider with AES-128-GCM first: TLS 1.3's mandatory suite, and with SHA-256
/// (which CPUs accelerate) instead of SHA-384 for the handshake's hashing, the cheapest
/// secure choice for a client that opens thousands of connections. The server still picks.
fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    let mut p = rustls::crypto::ring::default_provider();
    p.cipher_suites.sort_by_key(|s| {
        let name = format!("{:?}", s.suite());
        (!name.contains("AES_128_GCM"), !name.starts_with("TLS13"))
    });
    Arc::new(p)
}

/// A TLS setting that cannot be used: a file that cannot be read or holds no usable PEM,
/// a certificate and key that do not go together, a name that is not a server name.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("cannot read {what} {}: {}", path.display(), io_text(source))]
    Read {
        what: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot parse PEM certificates in {}: {source}", path.display())]
    BadPem {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("no PEM certificate found in {}", .0.display())]
    NoCertificate(PathBuf),
    #[error("no PEM private key (RSA, EC or PKCS#8) found in {}", .0.display())]
    NoKey(PathBuf),
    #[error("cannot parse private key in {}: {source}", path.display())]
    BadKey {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("invalid CA certificate in {}: {source}", path.display())]
    BadCa {
        path: PathBuf,
        source: rustls::Error,
    },
    #[error("no CA certificate found in {}", .0.display())]
    NoCa(PathBuf),
    #[error("TLS setup failed: {0}")]
    Setup(rustls::Error),
    #[error("client certificate {} and key {} do not go together: {source}", cert.display(), key.display())]
    Mismatch {
        cert: PathBuf,
        key: PathBuf,
        source: rustls::Error,
    },
    #[error("a client certificate needs its key (--client-key)")]
    CertWithoutKey,
    #[error("a client key needs its certificate (--client-cert)")]
    KeyWithoutCert,
    #[error("'{0}' is not a valid TLS server name")]
    ServerName(String),
    /// A failed handshake, in `handshake_error`'s words; `timed_out` when the server did
    /// not answer in time.
    #[error("{text}")]
    Handshake { text: String, timed_out: bool },
}

impl From<TlsError> for crate::error::Cause {
    fn from(e: TlsError) -> Self {
        use crate::error::Cause;
        match e {
            TlsError::Setup(source) => Cause::Tls {
                what: "TLS setup failed".into(),
                source,
            },
            TlsError::Handshake { text, .. } => Cause::Said(text),
            other => Cause::Said(other.to_string()),
        }
    }
}

impl TlsError {
    /// A handshake the server did not answer in time.
    pub fn timed_out(&self) -> bool {
        matches!(
            self,
            TlsError::Handshake {
                timed_out: true,
                ..
            }
        )
    }
}

fn read_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let data = std::fs::read(path).map_err(|source| TlsError::Read {
        what: "certificate file",
        path: path.into(),
        source,
    })?;
    let certs: Result<Vec<_>, _> = rustls_pemfile::certs(&mut data.as_slice()).collect();
    let certs = certs.map_err(|source| TlsError::BadPem {
        path: path.into(),
        source,
    })?;
    if certs.is_empty() {
        return Err(TlsError::NoCertificate(path.into()));
    }
    Ok(certs)
}

fn read_key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    let data = std::fs::read(path).map_err(|source| TlsError::Read {
        what: "key file",
        path: path.into(),
        source,
    })?;
    match rustls_pemfile::private_key(&mut data.as_slice()) {
        Ok(Some(k)) => Ok(k),
        Ok(None) => Err(TlsError::NoKey(path.into())),
        Err(source) => Err(TlsError::BadKey {
            path: path.into(),
            source,
        }),
    }
}

/// The trusted roots and the certificates the operator gave (`--ca-cert`, `--ca-path`).
struct Trust {
    roots: RootCertStore,
    given: Vec<CertificateDer<'static>>,
}

fn add_roots(trust: &mut Trust, path: &Path) -> Result<usize, TlsError> {
    let mut added = 0;
    for cert in read_certs(path)? {
        trust
            .roots
            .add(cert.clone())
            .map_err(|source| TlsError::BadCa {
                path: path.into(),
                source,
            })?;
        trust.given.push(cert);
        added += 1;
    }
    Ok(added)
}

/// The trusted roots: `--ca-cert`, `--ca-path`, or the system's.
fn roots(opts: &TlsOptions) -> Result<Trust, TlsError> {
    let mut roots = Trust {
        roots: RootCertStore::empty(),
        given: Vec::new(),
    };
    if let Some(file) = &opts.ca_cert {
        add_roots(&mut roots, file)?;
    }
    if let Some(dir) = &opts.ca_path {
        let entries = std::fs::read_dir(dir).map_err(|source| TlsError::Read {
            what: "CA directory",
            path: dir.clone(),
            source,
        })?;
        for entry in entries.flatten() {
            let p = entry.path();
            if p.is_file() {
                add_roots(&mut roots, &p)?;
            }
        }
        if roots.given.is_empty() {
            return Err(TlsError::NoCa(dir.clone()));
        }
    }
    if opts.ca_cert.is_none() && opts.ca_path.is_none() {
        let found = rustls_native_certs::load_native_certs();
        for cert in found.certs {
            let _ = roots.roots.add(cert);
        }
    }
    Ok(roots)
}

/// Builds the one client configuration every connection of a run shares.
pub fn client_config(opts: &TlsOptions) -> Result<Arc<ClientConfig>, TlsError> {
    let builder = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(TlsError::Setup)?;
    let builder = if opts.insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(NoVerify(provider())))
    } else {
        let trust = roots(opts)?;
        match WebPkiServerVerifier::builder_with_provider(Arc::new(trust.roots.clone()), provider())
            .build()
        {
            Ok(webpki) => builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(GivenCerts {
                    webpki,
                    given: trust.given,
                })),
            // No root at all (no system roots): every certificate is refused as unknown.
            Err(_) => builder.with_root_certificates(trust.roots),
        }
    };
    let mut config = match (&opts.client_cert, &opts.client_key) {
        (Some(c), Some(k)) => {
            let certs = read_certs(c)?;
            let key = read_key(k)?;
            builder
                .with_client_auth_cert(certs, key)
                .map_err(|source| TlsError::Mismatch {
                    cert: c.clone(),
                    key: k.clone(),
                    source,
                })?
        }
        (None, None) => builder.with_no_client_auth(),
        (Some(_), None) => return Err(TlsError::CertWithoutKey),
        (None, Some(_)) => return Err(TlsError::KeyWithoutCert),
    };
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    if !opts.resume {
        config.resumption = rustls::client::Resumption::disabled();
    }
    Ok(Arc::new(config))
}

/// The name the server's certificate must carry.
pub fn server_name(opts: &TlsOptions, host: &str) -> Result<ServerName<'static>, TlsError> {
    let name = opts.server_name.as_deref().unwrap_or(host);
    ServerName::try_from(name.to_string()).map_err(|_| TlsError::ServerName(name.into()))
}

/// `-k`: accepts any certificate, and so skips the handshake signature check too.
#[derive(Debug)]
struct NoVerify(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for NoVerify {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    // The handshake signature proves that the server holds the key of the certificate it
    // showed; with that certificate unverified, the proof is worth nothing, so -k does not
    // spend a signature verification per handshake on it (as ab and h2load do not).
    fn verify_tls12_signature(
        &self,
        _message: &[u8],
        _cert: &CertificateDer<'_>,
        _dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        Ok(HandshakeSignatureValid::assertion())
    }

    fn verify_tls13_signature(
        &self,
        _message: &[u8],
        _cert: &CertificateDer<'_>,
        _dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        Ok(HandshakeSignatureValid::assertion())
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// The roots' verification (webpki), and what operators expect of `--ca-cert`: a server
/// certificate that is itself one of the certificates given (the self-signed certificate
/// of `openssl req -x509`, which marks it a CA and which webpki therefore refuses as a
/// server's) is trusted as that end entity, as curl and Vault's CLI trust it. Only that
/// exact certificate: its name and dates are still checked, and the handshake's signature
/// proves the server holds its key. A CA-marked server certificate not given is refused
/// with the way out (`hint`).
#[derive(Debug)]
struct GivenCerts {
    webpki: Arc<WebPkiServerVerifier>,
    given: Vec<CertificateDer<'static>>,
}

/// Why a server certificate was refused where webpki's own words would not say what to do.
#[derive(Debug, thiserror::Error)]
enum CertRefusal {
    /// A CA-marked server certificate that is not among the certificates given.
    #[error("ServerCertificateIsACa")]
    IsCa,
    /// A given certificate with no subjectAltName (only a CN, which rustls and Go ignore).
    #[error("NoSubjectAltName")]
    NoSubjectAltName,
}

fn refusal(why: CertRefusal) -> rustls::Error {
    rustls::Error::InvalidCertificate(rustls::CertificateError::Other(rustls::OtherError(
        Arc::new(why),
    )))
}

impl GivenCerts {
    /// The given certificate `cert`, as the server's: its name and dates.
    fn given_as_server(
        cert: &CertificateDer<'_>,
        name: &ServerName<'_>,
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        use rustls::CertificateError;
        let Ok((_, x509)) = x509_parser::parse_x509_certificate(cert.as_ref()) else {
            return Err(rustls::Error::InvalidCertificate(
                CertificateError::BadEncoding,
            ));
        };
        let at = x509_parser::time::ASN1Time::from_timestamp(now.as_secs() as i64)
            .map_err(|_| rustls::Error::InvalidCertificate(CertificateError::BadEncoding))?;
        let validity = x509.validity();
        if at < validity.not_before {
            return Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidYet,
            ));
        }
        if at > validity.not_after {
            return Err(rustls::Error::InvalidCertificate(CertificateError::Expired));
        }
        let parsed = rustls::server::ParsedCertificate::try_from(cert)?;
        match rustls::client::verify_server_name(&parsed, name) {
            Ok(()) => Ok(ServerCertVerified::assertion()),
            Err(_) if !matches!(x509.subject_alternative_name(), Ok(Some(_))) => {
                Err(refusal(CertRefusal::NoSubjectAltName))
            }
            Err(e) => Err(e),
        }
    }
}

impl ServerCertVerifier for GivenCerts {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let e =
            match self
                .webpki
                .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
            {
                Ok(v) => return Ok(v),
                Err(e) => e,
            };
        if self.given.iter().any(|c| c.as_ref() == end_entity.as_ref()) {
            return Self::given_as_server(end_entity, server_name, now);
        }
        let is_ca =
            x509_parser::parse_x509_certificate(end_entity.as_ref()).is_ok_and(|(_, c)| c.is_ca());
        match e {
            rustls::Error::InvalidCertificate(rustls::CertificateError::Other(_)) if is_ca => {
                Err(refusal(CertRefusal::IsCa))
            }
            e => Err(e),
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.webpki.supported_verify_schemes()
    }
}

/// The first bytes the server sent, kept to explain a failed handshake.
struct Recording<'a, S> {
    inner: &'a mut S,
    first: Vec<u8>,
}

impl<S: std::io::Read> std::io::Read for Recording<'_, S> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        if self.first.len() < 8 {
            let take = n.min(8 - self.first.len());
            self.first.extend_from_slice(&buf[..take]);
        }
        Ok(n)
    }
}

impl<S: std::io::Write> std::io::Write for Recording<'_, S> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.inner.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Completes a TLS handshake on a connected blocking socket (with its timeouts set), for
/// checks before the run and for setup requests. The error names the server (`host_port`)
/// and says what went wrong, including a server that answers in plain HTTP.
pub fn blocking_handshake<S: std::io::Read + std::io::Write>(
    conn: &mut rustls::ClientConnection,
    sock: &mut S,
    host_port: &str,
) -> Result<(), TlsError> {
    let mut rec = Recording {
        inner: sock,
        first: Vec::new(),
    };
    while conn.is_handshaking() {
        if let Err(e) = conn.complete_io(&mut rec) {
            let plain_http = rec.first.starts_with(b"HTTP/") || rec.first.starts_with(b"<");
            let timed_out = !plain_http
                && matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                );
            return Err(TlsError::Handshake {
                text: handshake_error(&e, &rec.first, host_port),
                timed_out,
            });
        }
    }
    Ok(())
}

/// The protocol the server at `addr` chooses by ALPN from what `config` offers (one
/// blocking handshake before the run; None: it chose none). `--http2` asks this first.
pub fn negotiated_alpn(
    config: Arc<ClientConfig>,
    name: ServerName<'static>,
    addr: std::net::SocketAddr,
    timeout: std::time::Duration,
) -> Result<Option<Vec<u8>>, TlsError> {
    let host_port = addr.to_string();
    let refused = |e: std::io::Error| TlsError::Handshake {
        text: format!("cannot connect to {host_port}: {}", io_text(&e)),
        timed_out: e.kind() == std::io::ErrorKind::TimedOut,
    };
    let mut sock = std::net::TcpStream::connect_timeout(&addr, timeout).map_err(refused)?;
    sock.set_read_timeout(Some(timeout)).map_err(refused)?;
    sock.set_write_timeout(Some(timeout)).map_err(refused)?;
    let mut conn = rustls::ClientConnection::new(config, name).map_err(TlsError::Setup)?;
    blocking_handshake(&mut conn, &mut sock, &host_port)?;
    Ok(conn.alpn_protocol().map(<[u8]>::to_vec))
}

/// One clear message for a failed handshake.
pub fn handshake_error(e: &std::io::Error, first: &[u8], host_port: &str) -> String {
    use std::io::ErrorKind;
    if first.starts_with(b"HTTP/") || first.starts_with(b"<") {
        return format!(
            "{host_port} answered in plain HTTP, not TLS: use an http:// address (or check the port)"
        );
    }
    if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) {
        return format!("TLS handshake with {host_port} timed out (no answer from the server)");
    }
    if e.kind() == ErrorKind::UnexpectedEof
        || first.is_empty() && e.kind() != ErrorKind::InvalidData
    {
        return format!(
            "TLS handshake with {host_port} failed: the server closed the connection ({})",
            io_text(e)
        );
    }
    let text = io_text(e);
    let hint = hint(e.get_ref().and_then(|x| x.downcast_ref::<rustls::Error>()));
    format!("TLS handshake with {host_port} failed: {text}{hint}")
}

/// What to do about a handshake refused for a reason a flag can fix, from rustls' error.
fn hint(e: Option<&rustls::Error>) -> &'static str {
    use rustls::{AlertDescription, CertificateError, Error};
    match e {
        Some(Error::InvalidCertificate(CertificateError::UnknownIssuer)) => {
            " (trust the server's CA with --ca-cert/VAULT_CACERT or --ca-path/VAULT_CAPATH, or skip verification with -k)"
        }
        Some(Error::InvalidCertificate(
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
        )) => {
            " (connect by the certificate's name, or give it with --tls-server-name/VAULT_TLS_SERVER_NAME)"
        }
        Some(Error::InvalidCertificate(CertificateError::Other(o))) => {
            match o.0.downcast_ref::<CertRefusal>() {
                Some(CertRefusal::IsCa) => {
                    " (the server's certificate is marked as a CA, as `openssl req -x509` makes it: give that very certificate with --ca-cert/VAULT_CACERT to trust it as the server's, or give the server a certificate signed by a CA)"
                }
                Some(CertRefusal::NoSubjectAltName) => {
                    " (the certificate names the server only in its CN, which TLS clients no longer read, Vault's CLI included: make it with -addext \"subjectAltName=DNS:NAME,IP:ADDRESS\")"
                }
                None => "",
            }
        }
        Some(Error::AlertReceived(AlertDescription::CertificateRequired)) => {
            " (the server wants a client certificate: --client-cert/--client-key)"
        }
        _ => "",
    }
}
