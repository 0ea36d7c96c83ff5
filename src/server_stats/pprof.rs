//! Profiles of the first node (`--pprof-interval`, vault-benchmark's `pprof_interval`):
//! every interval, from a thread of its own over a connection of its own, a CPU profile
//! (`sys/pprof/profile?seconds=N`, N within the interval), a heap and a goroutine
//! profile, each saved as the server sent it (gzip-compressed protobuf) into the profile
//! directory, named by the time it was asked for. A refused endpoint is said once and
//! asked no more.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use super::NodeApi;
use crate::error::Cause;

/// How the first node is profiled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Profiling {
    pub interval: Duration,
    pub dir: PathBuf,
}

impl Profiling {
    /// The CPU profile's length: half the interval, at least a second, at most 30.
    pub fn cpu_seconds(&self) -> u64 {
        (self.interval.as_secs() / 2).clamp(1, 30)
    }

    /// How long one profile may take to come.
    pub fn timeout(&self) -> Duration {
        Duration::from_secs(self.cpu_seconds() + 10)
    }

    /// Creates the directory and checks that a file can be written there (before the
    /// first request).
    pub fn check(&self) -> Result<(), Cause> {
        let bad = |e| Cause::io(format!("--pprof-dir {}", self.dir.display()), e);
        std::fs::create_dir_all(&self.dir).map_err(bad)?;
        let probe = self.dir.join(".vblast-pprof-check");
        std::fs::write(&probe, b"").map_err(bad)?;
        let _ = std::fs::remove_file(probe);
        Ok(())
    }
}

type Chime = Arc<(Mutex<bool>, Condvar)>;

/// The running profiler; `take` gives the files saved so far, `finish` stops it.
pub struct Profiler {
    bell: Chime,
    files: Arc<Mutex<Vec<String>>>,
    /// Why no more profiles are asked for, once the endpoint refused (said once).
    refused: Arc<Mutex<Option<String>>>,
    /// Profile requests sent since the last `take_asked`, refused ones included: each
    /// passes through the node's handler, for the accounting.
    asked: Arc<AtomicU64>,
    thread: Option<JoinHandle<()>>,
}

/// The UTC time as a file name part: 20261202T064500.123Z.
fn stamp(t: SystemTime) -> String {
    humantime::format_rfc3339_millis(t)
        .to_string()
        .replace(['-', ':'], "")
}

/// One profile of `kind` saved in `dir`; the file's name.
fn save(client: &mut dyn NodeApi, dir: &Path, kind: &str, query: &str) -> Result<String, Cause> {
    let at = stamp(SystemTime::now());
    let path = format!("/v1/sys/pprof/{kind}{query}");
    let r = client
        .get(&path, true)
        .map_err(|e| e.within(format!("reading {path} failed")))?;
    if !(200..300).contains(&r.status) {
        return Err(Cause::Http {
            what: format!("reading {path} on {} failed", client.base()),
            status: r.status,
            excerpt: r.error_text(),
        });
    }
    let name = format!(
        "{at}-{}.pb.gz",
        if kind == "profile" { "cpu" } else { kind }
    );
    let file = dir.join(&name);
    std::fs::write(&file, &r.body)
        .map_err(|e| Cause::io(format!("cannot write {}", file.display()), e))?;
    Ok(file.display().to_string())
}

impl Profiler {
    pub fn start(p: &Profiling, client: impl NodeApi + 'static) -> Profiler {
        let mut client: Box<dyn NodeApi> = Box::new(client);
        let bell: Chime = Arc::new((Mutex::new(false), Condvar::new()));
        let files = Arc::new(Mutex::new(Vec::new()));
        let refused = Arc::new(Mutex::new(None));
        let asked = Arc::new(AtomicU64::new(0));
        let (b, f, r, p) = (bell.clone(), files.clone(), refused.clone(), p.clone());
        let a = asked.clone();
        let thread = std::thread::Builder::new()
            .name("server-pprof".into())
            .spawn(move || {
                let cpu = format!("?seconds={}", p.cpu_seconds());
                let mut next = Instant::now();
                while wait_until(&b, next) {
                    next += p.interval;
                    for (kind, query) in
                        [("profile", cpu.as_str()), ("heap", ""), ("goroutine", "")]
                    {
                        a.fetch_add(1, Ordering::Relaxed);
                        match save(client.as_mut(), &p.dir, kind, query) {
                            Ok(name) => f.lock().unwrap_or_else(|e| e.into_inner()).push(name),
                            Err(e) => {
                                let line = format!("pprof: {e}: no more profiles");
                                eprintln!("vblast: server stats of {}: {line}", client.base());
                                *r.lock().unwrap_or_else(|e| e.into_inner()) = Some(line);
                                return;
                            }
                        }
                    }
                }
            })
            .ok();
        Profiler {
            bell,
            files,
            refused,
            asked,
            thread,
        }
    }

    /// The profile requests sent since the last call, refused ones included.
    pub fn take_asked(&self) -> u64 {
        self.asked.swap(0, Ordering::Relaxed)
    }

    /// Why the endpoint gave no more profiles, once it refused.
    pub fn refused(&self) -> Option<String> {
        self.refused
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The files saved since the last call.
    pub fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.files.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Stops the thread (a CPU profile under way is waited for) and gives the files saved
    /// since the last `take`, why no more were asked for if the endpoint refused, and the
    /// requests sent since the last `take_asked`.
    pub fn finish(mut self) -> (Vec<String>, Option<String>, u64) {
        {
            let (stopped, cv) = &*self.bell;
            *stopped.lock().unwrap_or_else(|e| e.into_inner()) = true;
            cv.notify_all();
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        (self.take(), self.refused(), self.take_asked())
    }
}

/// Waits until `at` (true) or the bell (false).
fn wait_until(bell: &Chime, at: Instant) -> bool {
    let (stopped, cv) = &**bell;
    let mut done = stopped.lock().unwrap_or_else(|e| e.into_inner());
    while !*done {
        let now = Instant::now();
        if now >= at {
            return true;
        }
        done = cv
            .wait_timeout(done, at - now)
            .unwrap_or_else(|e| e.into_inner())
            .0;
    }
    false
}
