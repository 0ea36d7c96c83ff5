//! Operations as data: what each request of a run looks like and how often it is picked.
//! The engine knows nothing of Vault; Vault operations (src/vault) and URL mode both
//! produce a list of `Operation`s.

use serde::{Deserialize, Serialize};

use crate::capture::{Capture, Expect};
use crate::template::RequestSpec;

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Operation {
    /// Name in reports (e.g. "kv-read").
    pub name: String,
    /// Relative weight in a mix. 0: never picked by weight, only sent in place of an
    /// operation that needs what it captures (a step of a multi-step operation).
    pub weight: u32,
    pub request: RequestSpec,
    /// Status ranges (inclusive) that count as success; the default is 200-299.
    pub success: Vec<(u16, u16)>,
    /// After a success, keep this value of the response for this connection's next
    /// requests (a success without it counts as a failed request).
    #[serde(default)]
    pub capture: Option<Capture>,
    /// Sent only on connections whose slot holds a value: until then the operation that
    /// captures it is sent instead (log in first, then use the token).
    #[serde(default)]
    pub needs: Option<u8>,
    /// What a successful response's body must hold (a decrypt's plaintext, a login's
    /// token); a response without it counts as a failed request, by message.
    #[serde(default)]
    pub expect: Option<Expect>,
    /// Uses up the value it needs: once its answer is in, the slot is emptied, so that the
    /// next one is preceded by a fresh capture (revoke a token, then create the next).
    #[serde(default)]
    pub consumes: bool,
}

impl Operation {
    pub fn new(name: impl Into<String>, request: RequestSpec) -> Operation {
        Operation {
            name: name.into(),
            weight: 1,
            request,
            success: vec![(200, 299)],
            capture: None,
            needs: None,
            expect: None,
            consumes: false,
        }
    }

    /// Whether the body of a response must be kept to judge it.
    #[inline]
    pub fn reads_body(&self) -> bool {
        self.capture.is_some() || self.expect.is_some()
    }

    #[inline]
    pub fn is_success(&self, status: u16) -> bool {
        self.success
            .iter()
            .any(|&(a, b)| status >= a && status <= b)
    }
}

/// Picks operations by weight. One operation costs nothing per request.
#[derive(Clone, Debug)]
pub struct Picker {
    cumulative: Vec<u64>,
}

impl Picker {
    pub fn new(ops: &[Operation]) -> Picker {
        // Weight 0 is never picked, unless every weight is 0 (then all count as 1).
        let floor = u32::from(ops.iter().all(|o| o.weight == 0));
        let mut total = 0u64;
        let cumulative = ops
            .iter()
            .map(|o| {
                total += u64::from(o.weight.max(floor));
                total
            })
            .collect();
        Picker { cumulative }
    }

    #[inline]
    pub fn pick(&self, rng: &mut crate::template::Rng) -> usize {
        if self.cumulative.len() <= 1 {
            return 0;
        }
        let total = *self.cumulative.last().unwrap_or(&1);
        let r = rng.below(total);
        self.cumulative.iter().position(|&c| r < c).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::template::{Piece, Rng};

    fn op(name: &str, weight: u32) -> Operation {
        let mut o = Operation::new(
            name,
            RequestSpec {
                method: "GET".into(),
                path: vec![Piece::lit("/")],
                headers: vec![],
                body: None,
                captured_headers: vec![],
            },
        );
        o.weight = weight;
        o
    }

    #[test]
    fn weights_are_respected() {
        let ops = vec![op("a", 50), op("b", 30), op("c", 20)];
        let p = Picker::new(&ops);
        let mut rng = Rng::new(11);
        let mut n = [0u32; 3];
        for _ in 0..100_000 {
            n[p.pick(&mut rng)] += 1;
        }
        assert!((49_000..51_000).contains(&n[0]), "{n:?}");
        assert!((29_000..31_000).contains(&n[1]), "{n:?}");
        assert!((19_000..21_000).contains(&n[2]), "{n:?}");
    }

    #[test]
    fn weight_zero_is_never_picked() {
        let ops = vec![op("a", 0), op("b", 3), op("c", 0), op("d", 1)];
        let p = Picker::new(&ops);
        let mut rng = Rng::new(5);
        let mut n = [0u32; 4];
        for _ in 0..10_000 {
            n[p.pick(&mut rng)] += 1;
        }
        assert_eq!((n[0], n[2]), (0, 0), "{n:?}");
        assert!(n[1] > n[3] && n[3] > 0, "{n:?}");
        let p = Picker::new(&[op("a", 0), op("b", 0)]);
        let picked: std::collections::HashSet<usize> = (0..100).map(|_| p.pick(&mut rng)).collect();
        assert_eq!(picked.len(), 2);
    }

    #[test]
    fn success_ranges() {
        let o = op("a", 1);
        assert!(o.is_success(200) && o.is_success(204));
        assert!(!o.is_success(307) && !o.is_success(429) && !o.is_success(503));
    }
}
