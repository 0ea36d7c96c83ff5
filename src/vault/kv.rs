//! KV operations as request specs: `kv-read` and `kv-write`, for KV v1 and v2.

use crate::template::{Piece, RequestSpec};
use crate::vault::setup::KvSetup;
use crate::workload::Operation;

/// Random characters written into each kv-write value; the rest is fixed filler.
const VARYING: usize = 16;

/// The path of secret `s<index>` on the mount: the index is patched per request.
fn secret_path(kv: &KvSetup) -> Vec<Piece> {
    let mount = kv.mount.trim_matches('/');
    let prefix = if kv.version == 2 {
        format!("/v1/{mount}/data/s")
    } else {
        format!("/v1/{mount}/s")
    };
    vec![Piece::lit(prefix), Piece::Index { count: kv.secrets }]
}

/// Reads a uniformly random seeded secret.
pub fn read(kv: &KvSetup) -> Operation {
    Operation::new(
        "kv-read",
        RequestSpec {
            method: "GET".into(),
            path: secret_path(kv),
            headers: vec![],
            body: None,
        },
    )
}

/// Writes a uniformly random secret with a value of `size` bytes.
pub fn write(kv: &KvSetup, size: usize) -> Operation {
    let varying = size.min(VARYING);
    let filler = "x".repeat(size - varying);
    let (open, close) = if kv.version == 2 {
        ("{\"data\":{\"value\":\"", "\"}}")
    } else {
        ("{\"value\":\"", "\"}")
    };
    Operation::new(
        "kv-write",
        RequestSpec {
            method: "POST".into(),
            path: secret_path(kv),
            headers: vec![("Content-Type".into(), "application/json".into())],
            body: Some(vec![
                Piece::lit(open),
                Piece::Hex { width: varying },
                Piece::lit(filler),
                Piece::lit(close),
            ]),
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::template::{Common, Rng, Template};
    use crate::vault::setup::secret_name;

    #[test]
    fn paths_match_the_seeded_names() {
        let kv = KvSetup {
            mount: "vblast-1".into(),
            version: 2,
            created: true,
            secrets: 1000,
        };
        let mut t = Template::build(&read(&kv).request, &Common::default());
        let text = String::from_utf8(t.render(&mut Rng::new(5)).to_vec()).unwrap();
        let path = text.split(' ').nth(1).unwrap();
        let name = path.rsplit('/').next().unwrap();
        assert!(path.starts_with("/v1/vblast-1/data/s"));
        assert_eq!(name.len(), secret_name(999, 1000).len());
    }

    /// Every rendered request names a secret the setup seeded (`secret_name(i, count)` for
    /// i in 0..count), and together they reach every one of them.
    #[test]
    fn rendered_names_are_the_seeded_set() {
        use std::collections::BTreeSet;
        for version in [1u8, 2] {
            for count in [1u64, 7, 10, 11, 100, 101, 1000, 1001] {
                let kv = KvSetup {
                    mount: "vblast-ab12cd34".into(),
                    version,
                    created: true,
                    secrets: count,
                };
                let seeded: BTreeSet<String> = (0..count).map(|i| secret_name(i, count)).collect();
                let prefix = if version == 2 {
                    "/v1/vblast-ab12cd34/data/"
                } else {
                    "/v1/vblast-ab12cd34/"
                };
                for op in [read(&kv), write(&kv, 100)] {
                    let mut t = Template::build(&op.request, &Common::default());
                    let mut rng = Rng::new(count + u64::from(version));
                    let mut seen = BTreeSet::new();
                    for _ in 0..count * 30 {
                        let text = String::from_utf8(t.render(&mut rng).to_vec()).unwrap();
                        let path = text.split(' ').nth(1).unwrap();
                        let name = path.strip_prefix(prefix).unwrap_or_else(|| {
                            panic!("{} v{version}: path {path} not under {prefix}", op.name)
                        });
                        assert!(
                            seeded.contains(name),
                            "{} v{version} count {count}: {name} was never seeded",
                            op.name
                        );
                        seen.insert(name.to_string());
                    }
                    assert_eq!(
                        seen, seeded,
                        "{} v{version} count {count}: not every seeded secret is read",
                        op.name
                    );
                }
            }
        }
    }

    #[test]
    fn write_bodies_have_the_asked_size() {
        for version in [1u8, 2] {
            let kv = KvSetup {
                mount: "m".into(),
                version,
                created: true,
                secrets: 10,
            };
            let mut t = Template::build(&write(&kv, 1024).request, &Common::default());
            let text = String::from_utf8(t.render(&mut Rng::new(5)).to_vec()).unwrap();
            let body = text.split_once("\r\n\r\n").unwrap().1;
            let v: serde_json::Value = serde_json::from_str(body).unwrap();
            let value = if version == 2 {
                &v["data"]["value"]
            } else {
                &v["value"]
            };
            assert_eq!(value.as_str().unwrap().len(), 1024);
        }
    }
}
