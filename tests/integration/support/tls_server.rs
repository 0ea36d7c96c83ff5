//! An in-process rustls server for the TLS edges that nginx and OpenBao show only under
//! particular settings: tiny records, key updates, close_notify in the same segment as the
//! response with TCP left open, a close without close_notify.
//!
//! It listens on 127.0.0.1 (kernel-chosen port), serves from background threads for at
//! most 30 s, and stops when dropped.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use super::certs::gen_tls_files;
use super::nginx::KV_BODY;

const LIFETIME: Duration = Duration::from_secs(30);

/// How the TLS server answers.
#[derive(Clone, Copy, Debug)]
pub enum TlsMode {
    /// Keep-alive responses with Content-Length, every record at most `frag` bytes, so
    /// that post-handshake messages (the session tickets) span several records; with
    /// `key_update`, a KeyUpdate before every response.
    Fragmented { frag: usize, key_update: bool },
    /// A close-delimited response and close_notify in one write, TCP left open (OpenSSL's
    /// two-way shutdown waits for the client's close_notify).
    CloseDelimitedCloseNotify,
    /// A keep-alive response (Content-Length) and close_notify in one write, TCP left open.
    KeepAliveCloseNotify,
    /// A close-delimited response, then a TCP close without close_notify.
    CloseDelimitedBareFin,
}

/// An in-process TLS 1.3/1.2 server (rustls) answering every request with [`KV_BODY`].
pub struct TlsServer {
    /// `https://127.0.0.1:PORT/v1/secret/data/foo`
    pub url: String,
    /// The CA that signed the server's certificate.
    pub ca_cert: PathBuf,
    /// Responses written so far.
    pub responses: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
    _dir: tempfile::TempDir,
}

fn server_config(dir: &Path, mode: TlsMode, tls12: bool) -> Arc<rustls::ServerConfig> {
    let files = gen_tls_files(dir);
    let certs: Vec<_> = rustls_pemfile::certs(&mut &std::fs::read(&files.cert).unwrap()[..])
        .collect::<Result<_, _>>()
        .unwrap();
    let key = rustls_pemfile::private_key(&mut &std::fs::read(&files.key).unwrap()[..])
        .unwrap()
        .unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let versions: &[&rustls::SupportedProtocolVersion] = if tls12 {
        &[&rustls::version::TLS12]
    } else {
        &[&rustls::version::TLS13]
    };
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(versions)
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap();
    if let TlsMode::Fragmented { frag, .. } = mode {
        config.max_fragment_size = Some(frag);
    }
    Arc::new(config)
}

impl TlsServer {
    /// A TLS 1.3 server.
    pub fn start(mode: TlsMode) -> TlsServer {
        Self::start_version(mode, false)
    }

    /// A TLS 1.2 server (`tls12`) or a TLS 1.3 one.
    pub fn start_version(mode: TlsMode, tls12: bool) -> TlsServer {
        let dir = tempfile::tempdir().unwrap();
        let config = server_config(dir.path(), mode, tls12);
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let responses = Arc::new(AtomicUsize::new(0));
        let (stop2, responses2) = (stop.clone(), responses.clone());
        let handle = thread::spawn(move || {
            let deadline = Instant::now() + LIFETIME;
            let mut workers = Vec::new();
            while !stop2.load(Ordering::SeqCst) && Instant::now() < deadline {
                match listener.accept() {
                    Ok((sock, _)) => {
                        let (config, stop, responses) =
                            (config.clone(), stop2.clone(), responses2.clone());
                        workers.push(thread::spawn(move || {
                            let _ = serve_tls(sock, config, mode, &stop, &responses, deadline);
                        }));
                    }
                    Err(_) => thread::sleep(Duration::from_millis(5)),
                }
            }
            stop2.store(true, Ordering::SeqCst);
            for w in workers {
                let _ = w.join();
            }
        });
        TlsServer {
            url: format!("https://127.0.0.1:{port}/v1/secret/data/foo"),
            ca_cert: dir.path().join("ca.pem"),
            responses,
            stop,
            handle: Some(handle),
            _dir: dir,
        }
    }

    pub fn responses(&self) -> usize {
        self.responses.load(Ordering::SeqCst)
    }
}

impl Drop for TlsServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

fn timed_out(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

/// Writes whatever TLS data the connection has queued, in one `write`.
fn flush_tls(conn: &mut rustls::ServerConnection, sock: &mut TcpStream) -> io::Result<()> {
    let mut out = Vec::new();
    while conn.wants_write() {
        conn.write_tls(&mut out)?;
    }
    sock.write_all(&out)
}

/// Reads until a whole request head has arrived (Ok(false): the client closed first).
fn read_request(
    conn: &mut rustls::ServerConnection,
    sock: &mut TcpStream,
    stop: &AtomicBool,
    deadline: Instant,
) -> io::Result<bool> {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        flush_tls(conn, sock)?;
        match conn.reader().read(&mut buf) {
            Ok(0) => return Ok(false),
            Ok(n) => {
                got.extend_from_slice(&buf[..n]);
                if got.windows(4).any(|w| w == b"\r\n\r\n") {
                    return Ok(true);
                }
                continue;
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(e),
        }
        if stop.load(Ordering::SeqCst) || Instant::now() > deadline {
            return Ok(false);
        }
        match conn.read_tls(sock) {
            Ok(0) => return Ok(false),
            Ok(_) => {
                conn.process_new_packets().map_err(io::Error::other)?;
            }
            Err(e) if timed_out(&e) => {}
            Err(e) => return Err(e),
        }
    }
}

fn serve_tls(
    mut sock: TcpStream,
    config: Arc<rustls::ServerConfig>,
    mode: TlsMode,
    stop: &AtomicBool,
    responses: &AtomicUsize,
    deadline: Instant,
) -> io::Result<()> {
    sock.set_nonblocking(false)?;
    sock.set_nodelay(true)?;
    sock.set_read_timeout(Some(Duration::from_millis(50)))?;
    let mut conn = rustls::ServerConnection::new(config).map_err(io::Error::other)?;
    while read_request(&mut conn, &mut sock, stop, deadline)? {
        let head = match mode {
            TlsMode::Fragmented { .. } | TlsMode::KeepAliveCloseNotify => format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
                KV_BODY.len()
            ),
            _ => "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n".to_string(),
        };
        if let TlsMode::Fragmented {
            key_update: true, ..
        } = mode
        {
            conn.refresh_traffic_keys().map_err(io::Error::other)?;
        }
        conn.writer().write_all(head.as_bytes())?;
        conn.writer().write_all(KV_BODY.as_bytes())?;
        match mode {
            TlsMode::Fragmented { .. } => {
                flush_tls(&mut conn, &mut sock)?;
                responses.fetch_add(1, Ordering::SeqCst);
                continue;
            }
            TlsMode::CloseDelimitedCloseNotify | TlsMode::KeepAliveCloseNotify => {
                // Response and close_notify in one segment; TCP stays open until the
                // client closes it (or the server stops).
                conn.send_close_notify();
                flush_tls(&mut conn, &mut sock)?;
                responses.fetch_add(1, Ordering::SeqCst);
                let mut buf = [0u8; 4096];
                while !stop.load(Ordering::SeqCst) && Instant::now() < deadline {
                    match sock.read(&mut buf) {
                        Ok(0) => break,
                        Ok(_) => {}
                        Err(e) if timed_out(&e) => {}
                        Err(_) => break,
                    }
                }
            }
            TlsMode::CloseDelimitedBareFin => {
                flush_tls(&mut conn, &mut sock)?;
                responses.fetch_add(1, Ordering::SeqCst);
                sock.shutdown(Shutdown::Write)?;
                drain(&mut sock);
            }
        }
        return Ok(());
    }
    Ok(())
}

/// Reads briefly so that the close is a FIN, not a reset.
fn drain(sock: &mut TcpStream) {
    let end = Instant::now() + Duration::from_millis(200);
    let mut buf = [0u8; 4096];
    while Instant::now() < end {
        match sock.read(&mut buf) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) if timed_out(&e) => {}
            Err(_) => break,
        }
    }
}
