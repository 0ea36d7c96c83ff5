//! `--op` as written: one operation name, or a weighted mix "kv-read:80,kv-write:20"
//! (weight 1 when left out), split on `,` and `:` here and nowhere else. What the names
//! mean is the registry's (`vault::ops::parse_mix`).

/// A mix as written, checked: each operation once, each with a weight of at least 1.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpMix {
    pub parts: Vec<(String, u32)>,
}

/// Why a `--op` text is not a mix.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MixError {
    #[error("weight '{weight}' of operation '{name}' is not a whole number (--op name:weight,...)")]
    Weight { name: String, weight: String },
    #[error("--op '{text}' names no operation")]
    NoName { text: String },
    /// A name `known` refused; the registry says which names there are.
    #[error("unknown operation '{name}'")]
    Unknown { name: String },
    #[error("operation '{name}' has weight 0")]
    ZeroWeight { name: String },
    #[error("operation '{name}' is named twice in --op")]
    Twice { name: String },
}

/// Each part of a mix: its name (untrimmed) and its weight as written.
fn parts(text: &str) -> impl Iterator<Item = (&str, Option<&str>)> {
    text.split(',').map(|p| {
        let p = p.trim();
        match p.split_once(':') {
            Some((n, w)) => (n, Some(w)),
            None => (p, None),
        }
    })
}

/// The operation names of a mix, as written, unchecked (for checks that run before the
/// mix is read: which fixtures shards would share).
pub fn names(text: &str) -> impl Iterator<Item = &str> {
    parts(text).map(|(n, _)| n.trim())
}

impl OpMix {
    /// Reads a mix; `known` says whether a name is an operation. Each part is checked in
    /// turn: its weight, its name, then whether it repeats an earlier one.
    pub fn parse(text: &str, known: impl Fn(&str) -> bool) -> Result<OpMix, MixError> {
        let mut out: Vec<(String, u32)> = Vec::new();
        for (n, w) in parts(text) {
            let weight = match w {
                Some(w) => w.trim().parse().map_err(|_| MixError::Weight {
                    name: n.into(),
                    weight: w.into(),
                })?,
                None => 1,
            };
            let name = n.trim();
            if name.is_empty() {
                return Err(MixError::NoName { text: text.into() });
            }
            if !known(name) {
                return Err(MixError::Unknown { name: name.into() });
            }
            if weight == 0 {
                return Err(MixError::ZeroWeight { name: name.into() });
            }
            if out.iter().any(|(o, _)| o == name) {
                return Err(MixError::Twice { name: name.into() });
            }
            out.push((name.into(), weight));
        }
        Ok(OpMix { parts: out })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mixes_are_read_once() {
        let m = OpMix::parse(" a:80, b ", |_| true).unwrap();
        assert_eq!(m.parts, vec![("a".into(), 80), ("b".into(), 1)]);
        assert_eq!(names("a:80, b").collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(names("a:x,").collect::<Vec<_>>(), ["a", ""]);
        let e = |t| OpMix::parse(t, |n| n != "z").unwrap_err();
        assert!(matches!(e("a:x"), MixError::Weight { .. }));
        assert!(matches!(e(""), MixError::NoName { .. }));
        assert!(matches!(e("z"), MixError::Unknown { .. }));
        assert!(matches!(e("a:0"), MixError::ZeroWeight { .. }));
        assert!(matches!(e("a,a:2"), MixError::Twice { .. }));
        assert_eq!(
            e("a:x").to_string(),
            "weight 'x' of operation 'a' is not a whole number (--op name:weight,...)"
        );
    }
}
