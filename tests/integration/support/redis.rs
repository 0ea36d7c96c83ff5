//! A private redis-server for the redis secrets tests: its own directory, on a loopback
//! port, no persistence, never the system service; the `default` user has a random
//! password. Stopped (by pid) and removed when dropped.

use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use super::ports::free_port;
use super::process::{find_in_path, stop_server};

pub struct Redis {
    pub port: u16,
    pub password: String,
    child: Child,
    _dir: tempfile::TempDir,
}

impl Redis {
    /// None when redis-server is missing (tools/deps.sh installs it).
    pub fn start() -> Option<Redis> {
        let bin = find_in_path("redis-server")?;
        find_in_path("redis-cli")?;
        let dir = tempfile::Builder::new()
            .prefix("vblast-redis-")
            .tempdir()
            .unwrap();
        let port = free_port();
        let password = format!("pw{}x{}", free_port(), std::process::id());
        let log = std::fs::File::create(dir.path().join("log")).unwrap();
        let child = Command::new(bin)
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
            .arg("--dir")
            .arg(dir.path())
            .args(["--requirepass", &password])
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        let r = Redis {
            port,
            password,
            child,
            _dir: dir,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while r.cli(&["PING"]).as_deref() != Some("PONG") {
            assert!(Instant::now() < deadline, "redis-server did not start");
            thread::sleep(Duration::from_millis(100));
        }
        Some(r)
    }

    /// `redis://default:PASSWORD@127.0.0.1:PORT`
    pub fn url(&self) -> String {
        format!("redis://default:{}@127.0.0.1:{}", self.password, self.port)
    }

    /// One command through `redis-cli` as `default`; its output, trimmed.
    pub fn cli(&self, args: &[&str]) -> Option<String> {
        let out = Command::new("redis-cli")
            .args([
                "-h",
                "127.0.0.1",
                "-p",
                &self.port.to_string(),
                "--no-auth-warning",
            ])
            .env("REDISCLI_AUTH", &self.password)
            .args(args)
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    }

    /// The ACL users other than `default` (the ones Vault's engine made, and the tests').
    pub fn users(&self) -> Vec<String> {
        let mut u: Vec<String> = self
            .cli(&["ACL", "USERS"])
            .expect("listing redis users")
            .lines()
            .map(|l| l.trim().to_string())
            .filter(|l| !l.is_empty() && l != "default")
            .collect();
        u.sort();
        u
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        stop_server(&mut self.child, libc::SIGTERM);
    }
}
