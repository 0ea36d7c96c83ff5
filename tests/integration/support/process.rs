//! The processes the tests start: signals by pid, waiting for a process to stop or exit,
//! stopping one (gracefully or not), finding a program on PATH, and the system users the
//! database servers run as. Every handle of a server process stops it through these, by pid.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::thread;
use std::time::{Duration, Instant};

/// How long we wait for a server we started to become ready.
pub const READY_TIMEOUT: Duration = Duration::from_secs(30);

pub fn find_in_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

pub fn signal(pid: u32, sig: libc::c_int) {
    // SAFETY: plain kill(2) on a pid we own.
    unsafe {
        libc::kill(pid as libc::pid_t, sig);
    }
}

/// State letter of a /proc stat file ("R", "S", "T", ...).
fn proc_state(stat_path: &Path) -> Option<char> {
    let stat = fs::read_to_string(stat_path).ok()?;
    // Format: pid (comm) state ...; comm may contain spaces/parens.
    stat.rsplit_once(')')?.1.trim_start().chars().next()
}

/// Wait until all threads of `pid` are stopped (state T/t).
pub fn wait_stopped(pid: u32, timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    let task_dir = PathBuf::from(format!("/proc/{pid}/task"));
    loop {
        let all_stopped = match fs::read_dir(&task_dir) {
            Ok(rd) => rd
                .flatten()
                .all(|t| matches!(proc_state(&t.path().join("stat")), Some('T' | 't') | None)),
            Err(_) => return false,
        };
        if all_stopped {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        thread::sleep(Duration::from_millis(2));
    }
}

/// Wait for `child` to exit for up to `timeout`; returns true if it exited.
fn wait_timeout(child: &mut Child, timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        match child.try_wait() {
            Ok(Some(_)) => return true,
            Ok(None) if Instant::now() < deadline => thread::sleep(Duration::from_millis(10)),
            Ok(None) => return false,
            Err(_) => return true,
        }
    }
}

pub fn stop_child(child: &mut Child, graceful: bool) {
    if let Ok(Some(_)) = child.try_wait() {
        return;
    }
    let pid = child.id();
    signal(pid, libc::SIGCONT);
    if graceful {
        signal(pid, libc::SIGTERM);
        if wait_timeout(child, Duration::from_secs(5)) {
            return;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// uid and gid of a system user (`postgres`, `mysql`).
pub fn user_ids(name: &str) -> Option<(u32, u32)> {
    let c = std::ffi::CString::new(name).ok()?;
    // SAFETY: getpwnam returns a pointer into static storage or null; read at once.
    let pw = unsafe { libc::getpwnam(c.as_ptr()) };
    if pw.is_null() {
        return None;
    }
    // SAFETY: pw is non-null and points to a passwd record.
    Some(unsafe { ((*pw).pw_uid, (*pw).pw_gid) })
}

pub fn chown_tree(path: &Path, owner: &str) {
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
pub fn stop_server(child: &mut std::process::Child, sig: i32) {
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

/// The children of `pid` (from /proc): a server's worker processes.
pub fn children(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for e in fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(child) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = fs::read_to_string(format!("/proc/{child}/stat")) else {
            continue;
        };
        // Fields after the command's closing parenthesis: state, ppid, ...
        let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
        if rest
            .split_whitespace()
            .nth(1)
            .and_then(|p| p.parse::<u32>().ok())
            == Some(pid)
        {
            out.push(child);
        }
    }
    out
}
