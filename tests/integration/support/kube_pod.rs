//! A pod's view of a Kubernetes cluster, for the tests only: a thread that runs in a
//! network namespace and a mount namespace the test creates, so that the addresses
//! vault-benchmark's docs examples name are served by the Kubernetes API stand-in
//! (support::kube_api) and the files a pod has are where a pod has them.
//!
//! In the network namespace: `lo` up, with [`API_ADDR`] (the usual address of the
//! `kubernetes` service) beside 127.0.0.1. In the mount namespace (private, so nothing
//! leaks out): `/etc/hosts` maps `vault` to 127.0.0.1 and [`API_NAMES`] to [`API_ADDR`],
//! and `/run` (so `/var/run`) is a directory of the test that holds only
//! `secrets/kubernetes.io/serviceaccount/`, where [`Pod::place`] puts the pod's files.
//! Every socket the thread opens and every process it starts (OpenBao, vblast) is inside
//! both: OpenBao, a Go program, reads `/etc/hosts` and the pod's files as it would in a
//! pod. Load goes only to addresses inside the namespace. The namespace is deleted after,
//! and a process still in it then is killed by its pid and fails the test.

use std::ffi::CString;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

/// The address the API's names resolve to in the namespace.
pub const API_ADDR: &str = "10.96.0.1";
/// The names vault-benchmark's docs give the API (`https://kubernetes.default.svc`,
/// `https://kubernetes.example.com`).
pub const API_NAMES: &[&str] = &["kubernetes.default.svc", "kubernetes.example.com"];
/// Where a pod's service-account files are.
pub const SA_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// The pod's service-account directory, as the test fills it.
pub struct Pod {
    dir: PathBuf,
}

impl Pod {
    /// Writes `name` (`ca.crt`, `token`, `namespace`) into [`SA_DIR`].
    pub fn place(&self, name: &str, contents: &str) {
        std::fs::write(self.dir.join(name), contents).unwrap();
    }
}

static SEQ: AtomicU32 = AtomicU32::new(0);

/// The network namespace, deleted when dropped (a process left in it is killed by pid).
struct NetNs {
    name: String,
    left: Vec<String>,
}

impl NetNs {
    /// Err(why) when `ip netns add` fails (no root, or no CAP_SYS_ADMIN); fails the test
    /// when `ip` is not installed.
    fn create() -> Result<NetNs, String> {
        super::deps::program(&["ip"], "iproute2");
        let name = format!(
            "vbkube{}x{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::SeqCst)
        );
        ip(&["netns", "add", &name])?;
        let ns = NetNs {
            name,
            left: Vec::new(),
        };
        ip(&["-n", &ns.name, "link", "set", "lo", "up"])?;
        ip(&[
            "-n",
            &ns.name,
            "addr",
            "add",
            &format!("{API_ADDR}/32"),
            "dev",
            "lo",
        ])?;
        Ok(ns)
    }

    /// Kills what is still inside (by pid) and says what it was.
    fn reap(&mut self) {
        let pids = Command::new("ip")
            .args(["netns", "pids", &self.name])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default();
        for pid in pids.split_whitespace() {
            let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
            self.left.push(format!("{pid} {}", comm.trim()));
            if let Ok(p) = pid.parse::<i32>() {
                // SAFETY: kill(2) on a pid this test started inside its own namespace.
                unsafe { libc::kill(p, libc::SIGKILL) };
            }
        }
    }
}

impl Drop for NetNs {
    fn drop(&mut self) {
        self.reap();
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .output();
    }
}

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("ip {}: {e}", args.join(" ")))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

fn cstr(p: &Path) -> CString {
    CString::new(p.as_os_str().as_encoded_bytes()).unwrap()
}

/// mount(2) with no file system type and no data.
fn mount(source: Option<&Path>, target: &Path, flags: libc::c_ulong) -> Result<(), String> {
    let src = source.map(cstr);
    let dst = cstr(target);
    // SAFETY: the pointers are valid NUL-terminated strings (or null) for the call.
    let rc = unsafe {
        libc::mount(
            src.as_ref().map_or(std::ptr::null(), |s| s.as_ptr()),
            dst.as_ptr(),
            std::ptr::null(),
            flags,
            std::ptr::null(),
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(format!(
            "mount {source:?} on {}: {}",
            target.display(),
            std::io::Error::last_os_error()
        ))
    }
}

/// Moves the calling thread into `ns` and a new private mount namespace with the hosts
/// file `hosts` and the directory `run` mounted over /etc/hosts and /run.
fn enter(ns: &str, hosts: &Path, run: &Path) -> Result<(), String> {
    let f = File::open(format!("/run/netns/{ns}")).map_err(|e| format!("netns {ns}: {e}"))?;
    // SAFETY: setns(2) and unshare(2) change only the calling thread's namespaces.
    if unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        return Err(format!("setns: {}", std::io::Error::last_os_error()));
    }
    if unsafe { libc::unshare(libc::CLONE_NEWNS) } != 0 {
        return Err(format!("unshare: {}", std::io::Error::last_os_error()));
    }
    mount(None, Path::new("/"), libc::MS_REC | libc::MS_PRIVATE)?;
    mount(Some(hosts), Path::new("/etc/hosts"), libc::MS_BIND)?;
    mount(Some(run), Path::new("/run"), libc::MS_BIND)
}

/// Runs `body` in a pod's view (see the module's doc), or Err(why) without running it
/// when network namespaces cannot be made here (no root, or no CAP_SYS_ADMIN; without
/// `ip` the test fails). A panic
/// in `body` is the test's, after the namespace is removed.
pub fn in_pod<T: Send>(body: impl FnOnce(&Pod) -> T + Send) -> Result<T, String> {
    let mut ns = NetNs::create()?;
    let dir = tempfile::Builder::new()
        .prefix("vblast-pod-")
        .tempdir()
        .unwrap();
    let hosts = dir.path().join("hosts");
    std::fs::write(
        &hosts,
        format!(
            "127.0.0.1 localhost vault\n::1 localhost ip6-localhost\n{API_ADDR} {}\n",
            API_NAMES.join(" ")
        ),
    )
    .unwrap();
    let run = dir.path().join("run");
    let sa = run.join(SA_DIR.trim_start_matches("/var/run/"));
    std::fs::create_dir_all(&sa).unwrap();
    let pod = Pod { dir: sa };
    let name = ns.name.clone();
    let out = std::thread::scope(|s| {
        s.spawn(|| {
            enter(&name, &hosts, &run)
                .unwrap_or_else(|e| panic!("entering the pod's namespaces: {e}"));
            body(&pod)
        })
        .join()
    });
    ns.reap();
    let left = std::mem::take(&mut ns.left);
    drop(ns);
    match out {
        Ok(v) => {
            assert!(left.is_empty(), "processes left in the namespace: {left:?}");
            Ok(v)
        }
        Err(panic) => std::panic::resume_unwind(panic),
    }
}
