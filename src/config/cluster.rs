//! The nodes of one HA cluster as a run is given them: repeated `--address`, a
//! comma-separated `VAULT_ADDR`, or vault-benchmark's `cluster_json`; which of them take
//! the load (`NodesMode`). What the nodes say they are is `session::cluster`.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::net::target::Target;

/// Which nodes of a cluster take the load (`--nodes`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum NodesMode {
    /// The active node (followed when the cluster fails over).
    #[default]
    Active,
    /// Connections spread over every unsealed node.
    All,
    /// The same load against each unsealed node, one after another.
    Each,
}

/// The nodes of a run, as the command line gave them.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ClusterSpec {
    pub nodes: Vec<String>,
    pub mode: NodesMode,
}

/// vault-benchmark's `cluster_json`.
#[derive(Deserialize)]
struct ClusterJson {
    #[serde(default)]
    token: Option<String>,
    vault_addrs: Vec<String>,
}

/// Reads a `cluster_json` file: its addresses and its token (if it has one).
pub fn read_cluster_json(path: &Path) -> Result<(Vec<String>, Option<String>), Error> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::input(format!("cannot read {}: {e}", path.display())))?;
    let c: ClusterJson = serde_json::from_str(&text).map_err(|e| {
        Error::input(format!(
            "{} is not a cluster file ({{\"token\": \"...\", \"vault_addrs\": [\"http://...\", ...]}}): {e}",
            path.display()
        ))
    })?;
    if c.vault_addrs.is_empty() {
        return Err(Error::input(format!(
            "{} lists no address in vault_addrs",
            path.display()
        )));
    }
    Ok((c.vault_addrs, c.token.filter(|t| !t.is_empty())))
}

/// The addresses of a run: `--cluster FILE`'s, else the repeated `--address`, else
/// `VAULT_ADDR` split at commas. The same node twice is refused.
pub fn addresses(
    flags: &[String],
    from_file: Vec<String>,
    env: Option<String>,
) -> Result<Vec<String>, Error> {
    let list: Vec<String> = if !from_file.is_empty() {
        from_file
    } else if !flags.is_empty() {
        flags.iter().flat_map(|a| split(a)).collect()
    } else {
        env.map(|e| split(&e)).unwrap_or_default()
    };
    let mut seen: Vec<(String, String)> = Vec::new();
    for a in &list {
        let Ok(t) = Target::parse(a) else { continue };
        let key = format!("{:?} {}", t.scheme, t.addr());
        if let Some((first, _)) = seen.iter().find(|(_, k)| *k == key) {
            return Err(Error::input(format!(
                "the same node is given twice: {first} and {a}"
            )));
        }
        seen.push((a.clone(), key));
    }
    Ok(list)
}

fn split(s: &str) -> Vec<String> {
    s.split(',')
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_come_from_the_file_the_flags_or_the_environment() {
        let env = Some("http://127.0.0.1:1, http://127.0.0.1:2".to_string());
        assert_eq!(addresses(&[], vec![], env.clone()).unwrap().len(), 2);
        let flags = vec!["http://127.0.0.1:3".to_string()];
        assert_eq!(
            addresses(&flags, vec![], env).unwrap(),
            vec!["http://127.0.0.1:3"]
        );
        let twice = vec!["http://127.0.0.1:3".into(), "http://127.0.0.1:3/".into()];
        let e = addresses(&twice, vec![], None).unwrap_err().to_string();
        assert!(e.contains("the same node is given twice"), "{e}");
    }

    #[test]
    fn a_cluster_file_must_parse() {
        let dir = std::env::temp_dir().join(format!("vblast-cj-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let good = dir.join("good.json");
        std::fs::write(
            &good,
            r#"{"token":"t","vault_addrs":["http://127.0.0.1:1"]}"#,
        )
        .unwrap();
        let (a, t) = read_cluster_json(&good).unwrap();
        assert_eq!((a.len(), t.as_deref()), (1, Some("t")));
        let bad = dir.join("bad.json");
        std::fs::write(&bad, r#"{"vault_addrs": "http://x"#).unwrap();
        let e = read_cluster_json(&bad).unwrap_err().to_string();
        assert!(e.contains("is not a cluster file"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
