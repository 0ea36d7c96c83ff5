//! A private PostgreSQL for the db-creds tests and the HA cluster's storage: its own
//! data directory, on a loopback port, never the system service; and pulses of
//! SIGSTOP/SIGCONT to its processes (the postmaster and its backends, by pid) to slow it.

use std::path::PathBuf;
use std::thread;
use std::time::{Duration, Instant};

use super::ports::free_port;
use super::process::{children, chown_tree, signal, stop_server, user_ids};

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
        let password = format!("pw{}", free_port());
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
        let port = free_port();
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

    /// The postmaster's pid (the server this handle started).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Holds the server in pulses until the handle is dropped: the postmaster and its
    /// backends (its children, the processes of this server only) stopped for `held`, then
    /// running for `free`, over and over.
    pub fn pulses(&self, held: Duration, free: Duration) -> Pulses {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (s, pid) = (stop.clone(), self.pid());
        let thread = thread::spawn(move || {
            while !s.load(std::sync::atomic::Ordering::Relaxed) {
                let all = [vec![pid], children(pid)].concat();
                all.iter().for_each(|&p| signal(p, libc::SIGSTOP));
                thread::sleep(held);
                all.iter().for_each(|&p| signal(p, libc::SIGCONT));
                thread::sleep(free);
            }
        });
        Pulses {
            stop,
            thread: Some(thread),
            pid,
        }
    }

    /// Roles whose name starts with `v-` (the users Vault's database engine makes).
    pub fn vault_users(&self) -> u64 {
        self.query("select count(*) from pg_roles where rolname like 'v-%'")
            .and_then(|s| s.parse().ok())
            .expect("counting PostgreSQL roles")
    }
}

/// PostgreSQL held in pulses (`Postgres::pulses`); dropped, every process runs again.
pub struct Pulses {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<thread::JoinHandle<()>>,
    pid: u32,
}

impl Drop for Pulses {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        for p in [vec![self.pid], children(self.pid)].concat() {
            signal(p, libc::SIGCONT);
        }
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        stop_server(&mut self.child, libc::SIGQUIT);
    }
}
