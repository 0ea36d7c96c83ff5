//! Servers for protocol edges that nginx and OpenBao show only under particular settings:
//! an in-process rustls server (tiny records, key updates, close_notify in the same segment
//! as the response with TCP left open, a close without close_notify), and a plain TCP server
//! that trickles a response one byte at a time.
//!
//! Everything listens on 127.0.0.1 (kernel-chosen port), serves from background threads for
//! at most 30 s, and stops when dropped.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use super::{KV_BODY, gen_tls_files};

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

/// A plain HTTP server that answers every connection with `bytes`, one byte every `gap`
/// (a server that keeps each read short of any per-read timeout), for at most 30 s.
pub struct TrickleServer {
    /// `http://127.0.0.1:PORT`
    pub addr: String,
    pub connections: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl TrickleServer {
    pub fn start(bytes: Vec<u8>, gap: Duration) -> TrickleServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let connections = Arc::new(AtomicUsize::new(0));
        let (stop2, conns2) = (stop.clone(), connections.clone());
        let bytes = Arc::new(bytes);
        let handle = thread::spawn(move || {
            let deadline = Instant::now() + LIFETIME;
            let mut workers = Vec::new();
            while !stop2.load(Ordering::SeqCst) && Instant::now() < deadline {
                match listener.accept() {
                    Ok((mut sock, _)) => {
                        conns2.fetch_add(1, Ordering::SeqCst);
                        let (stop, bytes) = (stop2.clone(), bytes.clone());
                        workers.push(thread::spawn(move || {
                            let _ = sock.set_nonblocking(false);
                            let _ = sock.set_nodelay(true);
                            for b in bytes.iter() {
                                if stop.load(Ordering::SeqCst) || Instant::now() > deadline {
                                    return;
                                }
                                if sock.write_all(&[*b]).is_err() {
                                    return;
                                }
                                thread::sleep(gap);
                            }
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
        TrickleServer {
            addr: format!("http://127.0.0.1:{port}"),
            connections,
            stop,
            handle: Some(handle),
        }
    }
}

impl Drop for TrickleServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

// ---------------------------------------------------------------------------
// Databases for db-creds: a private PostgreSQL and a private MariaDB
// ---------------------------------------------------------------------------

/// uid and gid of a system user (`postgres`, `mysql`).
fn user_ids(name: &str) -> Option<(u32, u32)> {
    let c = std::ffi::CString::new(name).ok()?;
    // SAFETY: getpwnam returns a pointer into static storage or null; read at once.
    let pw = unsafe { libc::getpwnam(c.as_ptr()) };
    if pw.is_null() {
        return None;
    }
    // SAFETY: pw is non-null and points to a passwd record.
    Some(unsafe { ((*pw).pw_uid, (*pw).pw_gid) })
}

fn chown_tree(path: &Path, owner: &str) {
    let ok = std::process::Command::new("chown")
        .arg("-R")
        .arg(owner)
        .arg(path)
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    assert!(ok, "chown -R {owner} {}", path.display());
}

/// Stops a server we started: `sig` first, then SIGKILL after 10 s; reaps it.
fn stop_server(child: &mut std::process::Child, sig: i32) {
    if let Ok(Some(_)) = child.try_wait() {
        return;
    }
    // SAFETY: a signal to the pid of a child we spawned and have not reaped.
    unsafe { libc::kill(child.id() as i32, sig) };
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// The PostgreSQL server binaries (Debian's `postgresql` package), if installed.
fn postgres_bin() -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
        .filter(|p| p.join("postgres").is_file())
        .collect();
    dirs.sort();
    dirs.pop()
}

/// A private PostgreSQL: `initdb` in a temporary directory as the `postgres` user, the
/// server on 127.0.0.1:PORT with its socket in that directory; superuser `vbroot` with a
/// random password over TCP. Stopped (SIGQUIT, by pid) and removed when dropped.
pub struct Postgres {
    pub port: u16,
    pub user: String,
    pub password: String,
    child: std::process::Child,
    _dir: tempfile::TempDir,
}

impl Postgres {
    /// None when PostgreSQL or the `postgres` user is missing (tools/deps.sh installs them).
    pub fn start() -> Option<Postgres> {
        use std::os::unix::process::CommandExt;
        let bin = postgres_bin()?;
        let (uid, gid) = user_ids("postgres")?;
        let dir = tempfile::Builder::new()
            .prefix("vblast-pg-")
            .tempdir()
            .unwrap();
        let password = format!("pw{}", super::free_port());
        std::fs::write(dir.path().join("pw"), &password).unwrap();
        chown_tree(dir.path(), "postgres");
        let data = dir.path().join("data");
        let out = std::process::Command::new(bin.join("initdb"))
            .arg("-D")
            .arg(&data)
            .args(["-U", "vbroot", "-E", "UTF8"])
            .arg(format!("--pwfile={}", dir.path().join("pw").display()))
            .args(["--auth-local=trust", "--auth-host=scram-sha-256"])
            .uid(uid)
            .gid(gid)
            .output()
            .unwrap();
        assert!(out.status.success(), "initdb: {out:?}");
        let port = super::free_port();
        let log = std::fs::File::create(dir.path().join("log")).unwrap();
        let child = std::process::Command::new(bin.join("postgres"))
            .arg("-D")
            .arg(&data)
            .args(["-p", &port.to_string(), "-k"])
            .arg(dir.path())
            .args(["-c", "listen_addresses=127.0.0.1"])
            .uid(uid)
            .gid(gid)
            .stdin(std::process::Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        let pg = Postgres {
            port,
            user: "vbroot".into(),
            password,
            child,
            _dir: dir,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while pg.query("select 1").as_deref() != Some("1") {
            assert!(Instant::now() < deadline, "PostgreSQL did not start");
            thread::sleep(Duration::from_millis(100));
        }
        Some(pg)
    }

    /// `postgres://vbroot:PASSWORD@127.0.0.1:PORT/postgres`
    pub fn url(&self) -> String {
        format!(
            "postgres://{}:{}@127.0.0.1:{}/postgres",
            self.user, self.password, self.port
        )
    }

    /// One value from `psql` over TCP, as the superuser.
    pub fn query(&self, sql: &str) -> Option<String> {
        let out = std::process::Command::new("psql")
            .args(["-h", "127.0.0.1", "-p", &self.port.to_string()])
            .args(["-U", &self.user, "-d", "postgres", "-tAc", sql])
            .env("PGPASSWORD", &self.password)
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    }

    /// Roles whose name starts with `v-` (the users Vault's database engine makes).
    pub fn vault_users(&self) -> u64 {
        self.query("select count(*) from pg_roles where rolname like 'v-%'")
            .and_then(|s| s.parse().ok())
            .expect("counting PostgreSQL roles")
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        stop_server(&mut self.child, libc::SIGQUIT);
    }
}

/// A private MariaDB: `mariadb-install-db` into a temporary directory owned by `mysql`,
/// `mariadbd` on 127.0.0.1:PORT (socket in that directory, no name resolution); user
/// `vbroot`@`%` with every privilege and a random password. Stopped (SIGTERM, by pid)
/// and removed when dropped.
pub struct MariaDb {
    pub port: u16,
    pub user: String,
    pub password: String,
    socket: PathBuf,
    child: std::process::Child,
    _dir: tempfile::TempDir,
}

impl MariaDb {
    /// None when MariaDB or the `mysql` user is missing (tools/deps.sh installs them).
    pub fn start() -> Option<MariaDb> {
        if !Path::new("/usr/sbin/mariadbd").is_file() {
            return None;
        }
        user_ids("mysql")?;
        let dir = tempfile::Builder::new()
            .prefix("vblast-my-")
            .tempdir()
            .unwrap();
        chown_tree(dir.path(), "mysql");
        let data = dir.path().join("data");
        let out = std::process::Command::new("mariadb-install-db")
            .arg("--no-defaults")
            .arg(format!("--datadir={}", data.display()))
            .args(["--user=mysql", "--skip-test-db"])
            .output()
            .unwrap();
        assert!(out.status.success(), "mariadb-install-db: {out:?}");
        let port = super::free_port();
        let socket = dir.path().join("sock");
        let child = std::process::Command::new("/usr/sbin/mariadbd")
            .arg("--no-defaults")
            .arg(format!("--datadir={}", data.display()))
            .arg(format!("--port={port}"))
            .arg(format!("--socket={}", socket.display()))
            .arg(format!("--pid-file={}", dir.path().join("pid").display()))
            .arg(format!(
                "--log-error={}",
                dir.path().join("err.log").display()
            ))
            .args([
                "--bind-address=127.0.0.1",
                "--user=mysql",
                "--skip-name-resolve",
                "--skip-log-bin",
            ])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let mut db = MariaDb {
            port,
            user: "vbroot".into(),
            password: format!("pw{}", super::free_port()),
            socket,
            child,
            _dir: dir,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let create = format!(
                "CREATE USER IF NOT EXISTS 'vbroot'@'%' IDENTIFIED BY '{}'; \
                 GRANT ALL ON *.* TO 'vbroot'@'%' WITH GRANT OPTION;",
                db.password
            );
            let ok = std::process::Command::new("mariadb")
                .arg("--no-defaults")
                .arg("-S")
                .arg(&db.socket)
                .args(["-u", "root", "-e", &create])
                .output()
                .is_ok_and(|o| o.status.success());
            if ok && db.query("select 1").as_deref() == Some("1") {
                break;
            }
            if Instant::now() > deadline {
                stop_server(&mut db.child, libc::SIGTERM);
                panic!("MariaDB did not start");
            }
            thread::sleep(Duration::from_millis(100));
        }
        Some(db)
    }

    /// `mysql://vbroot:PASSWORD@127.0.0.1:PORT/`
    pub fn url(&self) -> String {
        format!(
            "mysql://{}:{}@127.0.0.1:{}/",
            self.user, self.password, self.port
        )
    }

    /// One value from the `mariadb` client over TCP, as `vbroot`.
    pub fn query(&self, sql: &str) -> Option<String> {
        let out = std::process::Command::new("mariadb")
            .arg("--no-defaults")
            .args(["-h", "127.0.0.1", "-P", &self.port.to_string()])
            .args(["-u", &self.user, "-N", "-B", "-e", sql])
            .env("MYSQL_PWD", &self.password)
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    }

    /// Users whose name starts with `v-` (the users Vault's database engine makes).
    pub fn vault_users(&self) -> u64 {
        self.query("select count(*) from mysql.user where user like 'v-%'")
            .and_then(|s| s.parse().ok())
            .expect("counting MariaDB users")
    }
}

impl Drop for MariaDb {
    fn drop(&mut self) {
        stop_server(&mut self.child, libc::SIGTERM);
    }
}
