//! Running the vblast binary under test: commands for Vault and URL mode, and
//! runs with stdout / stderr captured and a watchdog that kills a run that
//! hangs and fails the test; the mounts a run leaves on the server.

use super::{OpenBao, vblast};
use serde_json::Value;
use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// Watchdog for every vblast run: a run still going after this fails the test.
pub const WATCHDOG: Duration = Duration::from_secs(60);

/// A finished vblast run.
pub struct Out {
    /// The exit code; `None` when vblast was killed by a signal.
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
}

impl Out {
    /// The columns of the text report's `total` row; fails the test when there is none.
    pub fn total_row(&self) -> Vec<&str> {
        self.stdout
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .find(|cols| cols.first() == Some(&"total"))
            .unwrap_or_else(|| panic!("no total row:\n{}", self.show()))
    }

    /// The text report was printed: it has the terse table's `total` row.
    pub fn assert_total_row(&self) {
        self.total_row();
    }

    /// The text report's `total` row counts exactly `n` requests.
    pub fn assert_total_count(&self, n: u64) {
        let cols = self.total_row();
        assert_eq!(
            cols.get(1),
            Some(&n.to_string().as_str()),
            "{}",
            self.show()
        );
    }

    /// The text report's line that starts with `prefix`; fails the test when there is none.
    pub fn line(&self, prefix: &str) -> &str {
        self.stdout
            .lines()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("no line starting with {prefix:?}:\n{}", self.show()))
    }

    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not JSON ({e}):\n{}\nstderr:\n{}",
                self.stdout, self.stderr
            )
        })
    }

    pub fn show(&self) -> String {
        format!(
            "exit {:?} after {:?}\nstdout:\n{}\nstderr:\n{}",
            self.code, self.elapsed, self.stdout, self.stderr
        )
    }

    /// Exit code `code`, and no panic on stderr.
    pub fn assert_code(&self, code: i32) {
        assert_eq!(self.code, Some(code), "{}", self.show());
        assert!(!self.stderr.contains("panicked"), "{}", self.show());
    }
}

/// A vblast process running in the background with its output captured.
/// Dropped with the process still running (a test panicked mid-run), it kills it.
pub struct Running {
    pub child: Child,
    started: Instant,
    args: String,
    stdout: Option<JoinHandle<String>>,
    stderr: Option<JoinHandle<String>>,
}

pub fn reader(mut r: impl Read + Send + 'static) -> JoinHandle<String> {
    thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = r.read_to_end(&mut buf);
        String::from_utf8_lossy(&buf).into_owned()
    })
}

fn joined(h: &mut Option<JoinHandle<String>>) -> String {
    h.take().and_then(|h| h.join().ok()).unwrap_or_default()
}

/// A table row of `vblast sweep`: a step number, then `coarse` or `bisect`.
pub fn is_sweep_row(line: &str) -> bool {
    let mut cols = line.split_whitespace();
    cols.next().is_some_and(|c| c.parse::<u64>().is_ok())
        && matches!(cols.next(), Some("coarse" | "bisect"))
}

/// A vblast run in the background (a sweep) whose stdout lines arrive as they are printed;
/// killed on drop if still running.
pub struct Live {
    child: Child,
    lines: std::sync::mpsc::Receiver<String>,
    stdout: Vec<String>,
    stderr: Option<JoinHandle<String>>,
}

impl Live {
    pub fn start(mut cmd: Command) -> Live {
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("spawn vblast");
        let out = child.stdout.take().unwrap();
        let err = child.stderr.take().unwrap();
        Live {
            child,
            lines: lines(out),
            stdout: Vec::new(),
            stderr: Some(reader(err)),
        }
    }

    /// Waits (60 s at most per line) for the next sweep table row; None at the end.
    pub fn next_row(&mut self) -> Option<String> {
        loop {
            let line = self.lines.recv_timeout(Duration::from_secs(60)).ok()?;
            self.stdout.push(line.clone());
            if is_sweep_row(&line) {
                return Some(line);
            }
        }
    }

    /// Waits for `n` table rows in all; panics with the output so far if one takes 60 s.
    pub fn rows(&mut self, n: usize) {
        while self.stdout.iter().filter(|l| is_sweep_row(l)).count() < n {
            let line = self
                .lines
                .recv_timeout(Duration::from_secs(60))
                .unwrap_or_else(|_| panic!("no row {n}:\n{}", self.stdout.join("\n")));
            self.stdout.push(line);
        }
    }

    /// The process id of the vblast run.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn signal(&self, sig: i32) {
        // SAFETY: kill(2) on the pid of a child this test started and has not reaped.
        unsafe {
            libc::kill(self.child.id() as libc::pid_t, sig);
        }
    }

    /// The rest of stdout, then the end (60 s at most): exit code, stdout, stderr.
    pub fn finish(mut self) -> Out {
        while let Ok(line) = self.lines.recv_timeout(Duration::from_secs(60)) {
            self.stdout.push(line);
        }
        let deadline = Instant::now() + Duration::from_secs(60);
        let status = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s;
            }
            assert!(Instant::now() < deadline, "vblast did not end");
            thread::sleep(Duration::from_millis(20));
        };
        let mut stdout = self.stdout.join("\n");
        stdout.push('\n');
        Out {
            code: status.code(),
            stdout,
            stderr: joined(&mut self.stderr),
            elapsed: Duration::ZERO,
        }
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Each line `r` gives, as it comes, on a channel (ends when `r` does).
pub fn lines(r: impl Read + Send + 'static) -> std::sync::mpsc::Receiver<String> {
    let (tx, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufRead::lines(std::io::BufReader::new(r)).map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    lines
}

/// Start `cmd` in the background with stdout and stderr captured.
pub fn spawn(mut cmd: Command) -> Running {
    let args = format!("{:?}", cmd.get_args().collect::<Vec<_>>());
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn vblast");
    let stdout = Some(reader(child.stdout.take().unwrap()));
    let stderr = Some(reader(child.stderr.take().unwrap()));
    Running {
        child,
        started: Instant::now(),
        args,
        stdout,
        stderr,
    }
}

impl Running {
    /// Wait for the run to end; kill it and fail the test after `limit`.
    /// With `VBLAST_TEST_SHOW` set, the run's arguments and output go to stderr.
    pub fn finish(mut self, limit: Duration) -> Out {
        let deadline = self.started + limit;
        let status = loop {
            if let Some(s) = self.child.try_wait().expect("wait vblast") {
                break s;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                let stdout = joined(&mut self.stdout);
                let stderr = joined(&mut self.stderr);
                panic!(
                    "vblast still running after {limit:?}; killed\nstdout:\n{stdout}\nstderr:\n{stderr}"
                );
            }
            thread::sleep(Duration::from_millis(10));
        };
        let elapsed = self.started.elapsed();
        let out = Out {
            code: status.code(),
            stdout: joined(&mut self.stdout),
            stderr: joined(&mut self.stderr),
            elapsed,
        };
        if std::env::var_os("VBLAST_TEST_SHOW").is_some() {
            eprintln!("vblast {}\n{}\n", self.args, out.show());
        }
        out
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        // Only reached with the child still running when a test panics mid-run.
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Run `cmd` to the end under the `WATCHDOG`.
pub fn run(cmd: Command) -> Out {
    spawn(cmd).finish(WATCHDOG)
}

/// `vblast` pointed at `bao` through the environment, with `args`.
pub fn vault_cmd(bao: &OpenBao, args: &[&str]) -> Command {
    let mut cmd = vblast();
    cmd.env("VAULT_ADDR", &bao.addr)
        .env("VAULT_TOKEN", &bao.token)
        .args(args);
    cmd
}

/// `vblast` with `args` (URL mode, or anything set up by the arguments alone).
pub fn url_cmd(args: &[&str]) -> Command {
    let mut cmd = vblast();
    cmd.args(args);
    cmd
}

/// `vblast` with `args` and the variables `env` added to its environment.
pub fn env_cmd(args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut cmd = url_cmd(args);
    cmd.envs(env.iter().copied());
    cmd
}

/// `VBLAST_STRICT_TIMING=1`: also assert exact timing figures (rates, lateness, upper
/// bounds on durations), which only hold on an otherwise idle machine. Without it, tests
/// assert only what noise cannot break: counts, and directions such as "never early".
pub fn strict_timing() -> bool {
    std::env::var_os("VBLAST_STRICT_TIMING").is_some_and(|v| v != "0")
}

/// A latency summary (`latency_ms`, `service_ms`, `connect_ms`, ...) of `count` samples
/// whose figures are consistent: min <= p50 <= p75 <= ... <= p9999 <= max, and the mean
/// between min and max.
pub fn assert_percentiles(v: &Value, count: u64, what: &str) {
    assert_eq!(v["count"].as_u64(), Some(count), "{what}.count: {v}");
    let keys = [
        "min", "p50", "p75", "p90", "p95", "p99", "p999", "p9999", "max",
    ];
    let vals: Vec<f64> = keys
        .iter()
        .map(|k| {
            v[*k]
                .as_f64()
                .unwrap_or_else(|| panic!("{what}.{k} is not a number: {v}"))
        })
        .collect();
    for (i, pair) in vals.windows(2).enumerate() {
        assert!(
            pair[0] <= pair[1],
            "{what}: {} {} > {} {}: {v}",
            keys[i],
            pair[0],
            keys[i + 1],
            pair[1]
        );
    }
    let mean = v["mean"]
        .as_f64()
        .unwrap_or_else(|| panic!("{what}.mean is not a number: {v}"));
    let (min, max) = (vals[0], vals[keys.len() - 1]);
    assert!(
        min <= mean && mean <= max,
        "{what}: mean {mean} not in [{min}, {max}]: {v}"
    );
    if count > 0 {
        assert!(max > 0.0, "{what}: {count} samples, max 0: {v}");
    }
}

/// `v` as an unsigned integer; fails the test when it is not one.
pub fn u(v: &Value) -> u64 {
    v.as_u64()
        .unwrap_or_else(|| panic!("not an unsigned integer: {v}"))
}

/// All mounts on the server: (path without trailing slash, JSON description).
pub fn mounts(bao: &OpenBao) -> Vec<(String, Value)> {
    let (status, body) = bao.api("GET", "/v1/sys/mounts", None);
    assert_eq!(status, 200, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    v["data"]
        .as_object()
        .expect("sys/mounts data")
        .iter()
        .map(|(k, d)| (k.trim_end_matches('/').to_string(), d.clone()))
        .collect()
}

/// What a run must leave as it found it: the mounts, the auth paths (sorted) and the ACL
/// policies of the server.
pub fn server_state(bao: &OpenBao) -> (Vec<String>, Vec<String>, String) {
    let (st, auth) = bao.api("GET", "/v1/sys/auth", None);
    assert_eq!(st, 200, "{auth}");
    let auth: Value = serde_json::from_str(&auth).unwrap();
    let mut auth: Vec<String> = auth["data"].as_object().unwrap().keys().cloned().collect();
    auth.sort();
    let (st, policies) = bao.api("GET", "/v1/sys/policies/acl?list=true", None);
    assert_eq!(st, 200, "{policies}");
    let policies: Value = serde_json::from_str(&policies).unwrap();
    let mut m: Vec<String> = mounts(bao).into_iter().map(|(k, _)| k).collect();
    m.sort();
    (m, auth, policies["data"]["keys"].to_string())
}

/// The mounts a vblast run created (named `vblast-...`), without trailing slash.
pub fn vblast_mounts(bao: &OpenBao) -> Vec<String> {
    mounts(bao)
        .into_iter()
        .map(|(k, _)| k)
        .filter(|k| k.starts_with("vblast-"))
        .collect()
}
