//! The programs the tests run beside the servers (ab, openssl, chromium, prometheus,
//! podman, the venv's Python tools): found, or the test fails naming what tools/deps.sh
//! installs. A test never passes because something it needs is missing; the documented
//! exceptions (docs/testing.md, "Skips") go through [`documented_skip`], which says so where
//! tools/test.sh shows it.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::process::find_in_path;

/// The first of `names` on PATH (or in /usr/sbin, /usr/local/bin); fails the test when
/// none is installed, naming the Debian `package` that tools/deps.sh installs.
pub fn program(names: &[&str], package: &str) -> PathBuf {
    for name in names {
        if let Some(p) = find_in_path(name) {
            return p;
        }
        for dir in ["/usr/sbin", "/usr/local/bin", "/usr/bin"] {
            let p = Path::new(dir).join(name);
            if p.is_file() {
                return p;
            }
        }
    }
    panic!(
        "{} is not installed: run tools/deps.sh (Debian package {package})",
        names[0]
    );
}

/// The venv tools/deps.sh makes: `$VBLAST_VENV`, else `$HOME/.cache/vblast/venv`.
pub fn venv() -> PathBuf {
    std::env::var_os("VBLAST_VENV")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache/vblast/venv")))
        .expect("neither VBLAST_VENV nor HOME is set: cannot find the test venv")
}

/// `bin/NAME` of the venv; fails the test when it is missing.
pub fn venv_tool(name: &str) -> PathBuf {
    let venv = venv();
    let p = venv.join("bin").join(name);
    assert!(
        p.exists(),
        "{name} is not installed in the venv {} (VBLAST_VENV): run tools/deps.sh",
        venv.display()
    );
    p
}

/// Ends test `test` as skipped for the documented reason `why`: says so on stderr and,
/// when tools/test.sh runs the suite, in its list of skips (the file `$VBLAST_TEST_SKIPS`).
/// Only for the skips docs/testing.md lists, with the reason they cannot be installed.
pub fn documented_skip(test: &str, why: &str) {
    let line = format!("{test}: {why}");
    eprintln!("SKIP (documented in docs/testing.md): {line}");
    if let Some(path) = std::env::var_os("VBLAST_TEST_SKIPS").filter(|p| !p.is_empty()) {
        let mut f = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .unwrap_or_else(|e| panic!("VBLAST_TEST_SKIPS {}: {e}", Path::new(&path).display()));
        writeln!(f, "{line}").expect("writing VBLAST_TEST_SKIPS");
    }
}
