//! A private MariaDB for the db-creds tests: its own data directory, on a loopback port,
//! never the system service.

use std::path::{Path, PathBuf};
use std::thread;
use std::time::{Duration, Instant};

use super::ports::free_port;
use super::process::{chown_tree, stop_server, user_ids};

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
        let port = free_port();
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
            password: format!("pw{}", free_port()),
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
