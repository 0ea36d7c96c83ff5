//! Running the vblast binary under test: runs with stdout and stderr captured and a
//! watchdog that kills a run that hangs and fails the test, runs in the background, and
//! sweeps whose table rows are read as they are printed.

use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use serde_json::Value;

/// Watchdog for every vblast run: a run still going after this fails the test. It finds
/// hangs, it does not time anything: CI at a load average of 16 on 2 cores took over 60 s
/// for a login-read run of 400 requests (bcrypt on every userpass login and user), which
/// passed in the CI run before, on a less loaded machine.
pub const WATCHDOG: Duration = Duration::from_secs(180);

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
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("spawn {}: {e}", cmd.get_program().to_string_lossy()));
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
