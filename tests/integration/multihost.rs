//! `tools/multihost-demo.sh`: nginx in one network namespace, three shards each in its own
//! namespace with its own address, joined by a bridge; the shards' merged report has the
//! whole run, the share table every shard's part, nginx saw all three addresses, and no
//! namespace is left afterwards. Needs `ip` (fails without it); skipped, as docs/testing.md
//! documents, where network namespaces cannot be made (no root, or no CAP_SYS_ADMIN).

use std::process::Command;

use crate::support::deps::{documented_skip, program};
use crate::support::figures::u;

/// Whether this process may create network namespaces: Err(why) when `ip netns add`
/// fails; fails the test when `ip` is not installed.
fn can_netns() -> Result<(), String> {
    let ip = program(&["ip"], "iproute2");
    let name = format!("vbprobe{}", std::process::id());
    let out = Command::new(&ip)
        .args(["netns", "add", &name])
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", ip.display()));
    if !out.status.success() {
        return Err(format!(
            "cannot create network namespaces here (needs root and CAP_SYS_ADMIN): \
             ip netns add: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let _ = Command::new(&ip).args(["netns", "del", &name]).output();
    Ok(())
}

#[test]
fn shards_in_separate_network_namespaces_merge_into_one_run() {
    if let Err(why) = can_netns() {
        documented_skip(
            "multihost::shards_in_separate_network_namespaces_merge_into_one_run",
            &why,
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let merged = dir.path().join("merged.json");
    let child = Command::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tools/multihost-demo.sh"
    ))
    .args(["3", "--output", merged.to_str().unwrap()])
    .env("VBLAST", env!("CARGO_BIN_EXE_vblast"))
    .env("RATE", "600")
    .env("REQUESTS", "1200")
    .env("CONNS", "24")
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .unwrap();
    let tag = format!("vb{}-", child.id());
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    for i in 0..3 {
        let row = stdout
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("{i}/3 ")))
            .unwrap_or_else(|| panic!("no row for shard {i}:\n{stdout}"));
        let cols: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(cols[2..5], ["400", "400", "8"], "{row}");
    }
    assert!(
        stdout.contains("nginx logged 1200 requests from"),
        "{stdout}"
    );
    let from = stdout
        .lines()
        .find(|l| l.starts_with("nginx logged"))
        .unwrap();
    assert_eq!(
        from.split_whitespace().count(),
        8,
        "three client addresses: {from}"
    );
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&merged).unwrap()).unwrap();
    assert_eq!(u(&j["requests"]), 1200);
    assert_eq!(u(&j["ok"]), 1200);
    assert_eq!(u(&j["run"]["connections"]), 24);
    let left = Command::new("ip").args(["netns", "list"]).output().unwrap();
    let left = String::from_utf8_lossy(&left.stdout);
    assert!(!left.contains(&tag), "namespaces left behind:\n{left}");
}
