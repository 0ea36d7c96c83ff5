//! Spreading a run over worker processes when one process may not hold enough file
//! descriptors, and merging their results losslessly.
//!
//! Protocol: the parent starts `vblast --worker`, writes the worker's `EnginePlan` as one JSON
//! line to its stdin; the worker opens its connections and prints `ready`; when every worker
//! is ready the parent writes `go` to each, so all start together; each worker prints its
//! `Stats` as one JSON line and exits.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Barrier, Mutex, OnceLock};
use std::time::Instant;

use crate::engine::{EnginePlan, StartGate};
use crate::pacing::share;
use crate::stats::Stats;

/// Descriptors a process keeps for itself (stdio, epoll, setup client, libraries).
pub const FD_RESERVE: u64 = 100;

/// How a run is laid out over processes and threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    pub processes: usize,
    pub threads: usize,
}

/// Current and hard RLIMIT_NOFILE.
pub fn nofile() -> (u64, u64) {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we pass.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) } != 0 {
        return (1024, 1024);
    }
    (r.rlim_cur, r.rlim_max)
}

/// Raises the soft RLIMIT_NOFILE to the hard limit; returns the limit now in force.
pub fn raise_nofile() -> u64 {
    let (cur, max) = nofile();
    if cur < max {
        let r = libc::rlimit {
            rlim_cur: max,
            rlim_max: max,
        };
        // SAFETY: setrlimit reads the struct we pass.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &r) } == 0 {
            return max;
        }
    }
    cur
}

/// Local ports the kernel hands out for outgoing connections.
pub fn ephemeral_ports() -> Option<(u64, u64)> {
    let text = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").ok()?;
    let mut it = text.split_whitespace().map(|v| v.parse::<u64>().ok());
    Some((it.next()??, it.next()??))
}

impl Layout {
    /// Plans `connections` over enough processes that each stays within `fd_limit`
    /// descriptors, with `threads` event loops in total (at least one per process).
    pub fn plan(connections: u64, threads: usize, fd_limit: u64) -> Result<Layout, String> {
        if let Some((lo, hi)) = ephemeral_ports() {
            let ports = hi.saturating_sub(lo) + 1;
            if connections > ports {
                return Err(format!(
                    "-c {connections} needs {connections} local ports to one server address, but this system has {ports} ephemeral ports ({lo}-{hi}, net.ipv4.ip_local_port_range)"
                ));
            }
        }
        let per_process = fd_limit.saturating_sub(FD_RESERVE);
        if per_process < 16 {
            return Err(format!(
                "the open-file limit ({fd_limit}) leaves no room for connections"
            ));
        }
        let processes = connections.div_ceil(per_process).max(1) as usize;
        // No more threads than connections: a thread without a connection would still
        // get a share of -n (or of the -R schedule) that it can never send.
        let threads = threads
            .min(usize::try_from(connections).unwrap_or(usize::MAX))
            .max(processes);
        // Connections are split evenly over all threads; check the busiest process.
        let busiest = (0..processes)
            .map(|p| {
                let first: usize = (0..p)
                    .map(|q| share(threads as u64, processes, q) as usize)
                    .sum();
                let n = share(threads as u64, processes, p) as usize;
                (first..first + n)
                    .map(|t| share(connections, threads, t))
                    .sum::<u64>()
            })
            .max()
            .unwrap_or(0);
        if busiest > per_process {
            return Err(format!(
                "cannot fit {connections} connections into processes of {per_process} descriptors each"
            ));
        }
        Ok(Layout { processes, threads })
    }

    /// This layout's share for process `p`: (first global thread, threads).
    pub fn threads_of(&self, p: usize) -> (usize, usize) {
        let first: usize = (0..p)
            .map(|q| share(self.threads as u64, self.processes, q) as usize)
            .sum();
        (
            first,
            share(self.threads as u64, self.processes, p) as usize,
        )
    }
}

/// Runs one plan per worker process and merges their results.
pub fn run_workers(plans: &[EnginePlan], stop: &AtomicBool) -> Result<Stats, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find own executable: {e}"))?;
    let mut children: Vec<(Child, BufReader<std::process::ChildStdout>)> = Vec::new();
    for plan in plans {
        let mut child = Command::new(&exe)
            .arg("--worker")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start a worker process: {e}"))?;
        let line = serde_json::to_string(plan).map_err(|e| e.to_string())?;
        if let Some(stdin) = child.stdin.as_mut() {
            writeln!(stdin, "{line}")
                .map_err(|e| format!("cannot talk to a worker process: {e}"))?;
        }
        let out = BufReader::new(child.stdout.take().ok_or("worker has no stdout")?);
        children.push((child, out));
    }
    // Wait for every worker's connections, then start them together.
    let mut failed = None;
    for (i, (_, out)) in children.iter_mut().enumerate() {
        let mut line = String::new();
        match out.read_line(&mut line) {
            Ok(n) if n > 0 && line.trim() == "ready" => {}
            _ => {
                failed.get_or_insert(format!("worker process {i} did not start"));
            }
        }
    }
    for (child, _) in children.iter_mut() {
        if let Some(stdin) = child.stdin.as_mut() {
            let _ = writeln!(stdin, "go");
            let _ = stdin.flush();
        }
    }
    let mut total = Stats::new(plans.first().map_or(0, |p| p.ops.len()));
    for (i, (mut child, mut out)) in children.into_iter().enumerate() {
        let mut line = String::new();
        let _ = out.read_line(&mut line);
        drop(child.stdin.take());
        let status = child.wait();
        match serde_json::from_str::<Stats>(line.trim()) {
            Ok(s) => total.merge(&s),
            Err(_) => {
                let how = match status {
                    Ok(s) => s.to_string(),
                    Err(e) => e.to_string(),
                };
                failed.get_or_insert(format!("worker process {i} gave no result ({how})"));
            }
        }
    }
    let _ = stop.load(Ordering::Relaxed);
    match failed {
        Some(e) if total.requests() == 0 => Err(e),
        Some(e) => {
            eprintln!("vblast: {e}; the report covers the other workers");
            Ok(total)
        }
        None => Ok(total),
    }
}

/// The worker side of the protocol: the first thread through tells the parent it is
/// ready and waits for `go`.
struct ParentGate {
    barrier: Barrier,
    origin: OnceLock<Instant>,
    stdin: Mutex<Option<BufReader<std::io::Stdin>>>,
}

impl StartGate for ParentGate {
    fn wait(&self) -> Instant {
        if self.barrier.wait().is_leader() {
            let mut out = std::io::stdout();
            let _ = writeln!(out, "ready");
            let _ = out.flush();
            if let Ok(mut guard) = self.stdin.lock()
                && let Some(input) = guard.as_mut()
            {
                let mut line = String::new();
                let _ = input.read_line(&mut line);
            }
            let _ = self.origin.set(Instant::now());
        }
        self.barrier.wait();
        *self.origin.get_or_init(Instant::now)
    }
}

/// `vblast --worker`: reads a plan, runs it, prints the results. Returns the exit code.
pub fn worker_main(stop: &AtomicBool) -> i32 {
    raise_nofile();
    let mut input = BufReader::new(std::io::stdin());
    let mut line = String::new();
    if input.read_line(&mut line).is_err() {
        eprintln!("vblast worker: no plan on stdin");
        return 2;
    }
    let plan: EnginePlan = match serde_json::from_str(line.trim()) {
        Ok(p) => p,
        Err(e) => {
            // Not the error's text: it may quote a value of the plan, which holds the token.
            eprintln!(
                "vblast worker: bad plan ({:?} error at line {}, column {})",
                e.classify(),
                e.line(),
                e.column()
            );
            return 2;
        }
    };
    let gate = ParentGate {
        barrier: Barrier::new(plan.threads_here),
        origin: OnceLock::new(),
        stdin: Mutex::new(Some(input)),
    };
    match crate::engine::run(&plan, stop, &gate, None) {
        Ok(stats) => match serde_json::to_string(&stats) {
            Ok(text) => {
                println!("{text}");
                0
            }
            Err(e) => {
                eprintln!("vblast worker: {e}");
                2
            }
        },
        Err(e) => {
            eprintln!("vblast worker: {e}");
            2
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts() {
        let l = Layout::plan(20_000, 2, 20_000).unwrap();
        assert_eq!(
            l,
            Layout {
                processes: 2,
                threads: 2
            }
        );
        assert_eq!(l.threads_of(0), (0, 1));
        assert_eq!(l.threads_of(1), (1, 1));
        let l = Layout::plan(64, 2, 20_000).unwrap();
        assert_eq!(l.processes, 1);
        let l = Layout::plan(20_000, 1, 20_000).unwrap();
        assert_eq!(
            l,
            Layout {
                processes: 2,
                threads: 2
            }
        );
        let l = Layout::plan(25_000, 8, 20_000).unwrap();
        assert_eq!(l.processes, 2);
        assert_eq!(l.threads_of(1), (4, 4));
        assert!(Layout::plan(1_000_000, 2, 20_000).is_err());
    }
}
