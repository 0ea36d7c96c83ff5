//! The per-second timeline of one event-loop thread (or one worker process, or a whole
//! run): the second being recorded as counters and two histograms, the closed seconds kept
//! packed (`crate::packed`: each second's counts and its histograms in HdrHistogram's plain
//! V2 form, compressed a chunk of seconds at a time), so that a long run's memory grows by a
//! few hundred bytes a second at most, whatever the request rate, with no allocation kept
//! per second. On the wire (results files, worker processes) each second carries its
//! histograms in the V2 deflate form, base64, as before.

use serde::{Deserialize, Serialize};

use super::Hist;
use crate::packed::{self, Packed};

/// One second of the run: counts and a compact latency histogram.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Second {
    pub requests: u64,
    pub ok: u64,
    pub errors: u64,
    pub latency: Hist,
    /// Service time (uncorrected) of the same requests; absent from older results files.
    #[serde(default)]
    pub service: Hist,
}

/// Per-second timeline (see the module's doc).
#[derive(Clone, Debug, Default)]
pub struct Timeline {
    /// Closed seconds, in order (`put_row`).
    closed: Packed,
    /// The last closed second's index.
    last_closed: Option<u64>,
    current_index: u64,
    current: Second,
    /// A second being encoded, and its two histograms (allocations reused).
    scratch: Vec<u8>,
    hists: [Vec<u8>; 2],
}

/// Upper bound on timeline length (one day of seconds).
pub const TIMELINE_MAX_SECONDS: u64 = 86_400;

/// A second as kept: its index, counts, and latency and service histograms in the plain
/// V2 form.
#[derive(Clone, Debug, PartialEq)]
struct Row {
    index: u64,
    requests: u64,
    ok: u64,
    errors: u64,
    latency: Vec<u8>,
    service: Vec<u8>,
}

impl Row {
    fn of(index: u64, s: &Second) -> Row {
        let (mut latency, mut service) = (Vec::new(), Vec::new());
        s.latency.write_v2(&mut latency);
        s.service.write_v2(&mut service);
        Row {
            index,
            requests: s.requests,
            ok: s.ok,
            errors: s.errors,
            latency,
            service,
        }
    }

    /// Appends this row's record.
    fn put(&self, out: &mut Vec<u8>) {
        let counts = [self.index, self.requests, self.ok, self.errors];
        put_row(out, counts, [&self.latency[..], &self.service[..]]);
    }

    /// A record `put` wrote (None: it was cut short; this process wrote it, so never).
    fn take(mut r: &[u8]) -> Option<Row> {
        let b = &mut r;
        let (index, requests, ok, errors) = (
            packed::take_u64(b)?,
            packed::take_u64(b)?,
            packed::take_u64(b)?,
            packed::take_u64(b)?,
        );
        let latency = packed::take_bytes(b)?.to_vec();
        let service = packed::take_bytes(b)?.to_vec();
        Some(Row {
            index,
            requests,
            ok,
            errors,
            latency,
            service,
        })
    }

    fn second(&self) -> Second {
        Second {
            requests: self.requests,
            ok: self.ok,
            errors: self.errors,
            latency: Hist::from_v2(&self.latency).unwrap_or_default(),
            service: Hist::from_v2(&self.service).unwrap_or_default(),
        }
    }

    /// Several rows of one second as one: counts summed, each histogram decoded once and
    /// the sum encoded once; a single row is kept as it is.
    fn sum(mut group: Vec<Row>) -> Option<Row> {
        if group.len() <= 1 {
            return group.pop();
        }
        let index = group.first()?.index;
        let mut total = Second::default();
        for r in &group {
            total.requests += r.requests;
            total.ok += r.ok;
            total.errors += r.errors;
            // Rows this process packed (or checked as it read them) decode.
            let _ = total.latency.add_v2(&r.latency);
            let _ = total.service.add_v2(&r.service);
        }
        Some(Row::of(index, &total))
    }
}

/// A second's record: its index and counts (`[index, requests, ok, errors]`), then each
/// histogram's length and bytes (`Row::take` reads it back).
fn put_row(out: &mut Vec<u8>, counts: [u64; 4], hists: [&[u8]; 2]) {
    for n in counts {
        packed::put_u64(out, n);
    }
    for h in hists {
        packed::put_u64(out, h.len() as u64);
        out.extend_from_slice(h);
    }
}

impl Timeline {
    /// Records one finished request in second `sec` (seconds since the measured start).
    #[inline]
    pub fn record(&mut self, sec: u64, ok: bool, latency_us: Option<u64>) {
        if sec != self.current_index {
            self.roll(sec);
        }
        let c = &mut self.current;
        c.requests += 1;
        if ok {
            c.ok += 1;
        } else {
            c.errors += 1;
        }
        if let Some(us) = latency_us {
            c.latency.record(us);
        }
    }

    /// Records the service time of the request just recorded (same second).
    #[inline]
    pub fn record_service(&mut self, us: u64) {
        self.current.service.record(us);
    }

    /// Closes the current second (packing it) and makes `sec` the current one.
    fn roll(&mut self, sec: u64) {
        if self.current.requests > 0 && self.current_index < TIMELINE_MAX_SECONDS {
            let c = &mut self.current;
            let [latency, service] = &mut self.hists;
            for (buf, h) in [(&mut *latency, &c.latency), (&mut *service, &c.service)] {
                buf.clear();
                h.write_v2(buf);
            }
            self.scratch.clear();
            let counts = [self.current_index, c.requests, c.ok, c.errors];
            put_row(&mut self.scratch, counts, [&latency[..], &service[..]]);
            self.closed.push(&self.scratch);
            self.last_closed = Some(self.current_index);
            // Keep the histograms' allocations for the next second.
            c.requests = 0;
            c.ok = 0;
            c.errors = 0;
            c.latency.reset();
            c.service.reset();
        }
        self.current_index = sec;
    }

    /// Every second as kept, in order, the current one last.
    fn rows(&self) -> Vec<Row> {
        let mut out = Vec::with_capacity(self.closed.len() + 1);
        self.closed.for_each(|r| out.extend(Row::take(r)));
        if self.current.requests > 0 {
            out.push(Row::of(self.current_index, &self.current));
        }
        out
    }

    /// A timeline of closed seconds only, from rows in order.
    fn of_rows(rows: impl IntoIterator<Item = Row>) -> Timeline {
        let mut t = Timeline {
            current_index: u64::MAX,
            ..Timeline::default()
        };
        for r in rows {
            t.scratch.clear();
            r.put(&mut t.scratch);
            t.closed.push(&t.scratch);
            t.last_closed = Some(r.index);
        }
        t.scratch = Vec::new();
        t
    }

    /// Seconds in order, each histogram decompressed only when the iterator reaches it (a
    /// long run's timeline never sits decompressed in memory at once).
    pub fn iter(&self) -> impl Iterator<Item = (u64, Second)> + '_ {
        self.rows().into_iter().map(|r| (r.index, r.second()))
    }

    /// Calls `f` with each second in order, decoding one at a time.
    pub fn for_each_second(&self, mut f: impl FnMut(u64, &Second)) {
        for (i, s) in self.iter() {
            f(i, &s);
        }
    }

    /// Seconds in order, all decompressed (for tests and short timelines).
    pub fn seconds(&self) -> Vec<(u64, Second)> {
        self.iter().collect()
    }

    /// The last second that holds a request, if any.
    pub fn last_second(&self) -> Option<u64> {
        if self.current.requests > 0 {
            return Some(self.current_index);
        }
        self.last_closed
    }

    /// Moves every second `by` seconds later (a step that began that far into the run).
    pub fn shift(&mut self, by: u64) {
        if by == 0 {
            return;
        }
        let mut rows = self.rows();
        for r in &mut rows {
            r.index += by;
        }
        *self = Timeline::of_rows(rows);
    }

    /// Adds another timeline, second by second.
    pub fn merge(&mut self, other: &Timeline) {
        *self = Timeline::merge_shifted(&[(self, 0), (other, 0)]);
    }

    /// Several timelines added second by second at once, each moved later by its own
    /// whole seconds (the shard of a run whose clock started that much later): a second
    /// only one of them has is kept as it is; a shared second decodes each histogram
    /// once and encodes the sum once, however many timelines there are (pairwise merges
    /// re-encoded every partial sum: 16 shards of 10 minutes took seconds).
    pub fn merge_shifted(parts: &[(&Timeline, u64)]) -> Timeline {
        let mut rows: Vec<Row> = parts
            .iter()
            .flat_map(|(t, shift)| {
                t.rows().into_iter().map(move |mut r| {
                    r.index = r.index.saturating_add(*shift);
                    r
                })
            })
            .filter(|r| r.index < TIMELINE_MAX_SECONDS)
            .collect();
        rows.sort_by_key(|r| r.index);
        let mut out = Vec::with_capacity(rows.len() / parts.len().max(1) + 1);
        let mut group: Vec<Row> = Vec::with_capacity(parts.len());
        for r in rows {
            if group.first().is_some_and(|g| g.index != r.index) {
                out.extend(Row::sum(std::mem::take(&mut group)));
            }
            group.push(r);
        }
        out.extend(Row::sum(group));
        Timeline::of_rows(out)
    }
}

/// A second on the wire: the same keys as `Second`, its histograms left compressed.
#[derive(Serialize, Deserialize)]
struct SecondWire {
    requests: u64,
    ok: u64,
    errors: u64,
    latency: String,
    /// Absent from older results files.
    #[serde(default)]
    service: Option<String>,
}

impl Serialize for Timeline {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        // Rows this process packed (or checked as it read them) re-encode.
        let wire = |h: &[u8]| Hist::v2_to_base64(h).unwrap_or_else(|_| Hist::default().to_base64());
        s.collect_seq(self.rows().into_iter().map(|r| {
            (
                r.index,
                SecondWire {
                    requests: r.requests,
                    ok: r.ok,
                    errors: r.errors,
                    latency: wire(&r.latency),
                    service: Some(wire(&r.service)),
                },
            )
        }))
    }
}

impl<'de> Deserialize<'de> for Timeline {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let wire: Vec<(u64, SecondWire)> = Vec::deserialize(d)?;
        let mut rows = Vec::with_capacity(wire.len());
        for (index, w) in wire {
            // A report makes a row for every second up to the last: refuse indices no run
            // can have, rather than building billions of rows from a corrupt file.
            if index >= TIMELINE_MAX_SECONDS {
                return Err(serde::de::Error::custom(format!(
                    "timeline second {index} is beyond the longest run kept ({TIMELINE_MAX_SECONDS} s)"
                )));
            }
            // Checked one at a time: a bad histogram is an error, not a silent zero.
            let mut latency = Vec::new();
            Hist::base64_to_v2(&w.latency, &mut latency).map_err(serde::de::Error::custom)?;
            let mut service = Vec::new();
            match w.service {
                Some(sv) => {
                    Hist::base64_to_v2(&sv, &mut service).map_err(serde::de::Error::custom)?
                }
                None => Hist::default().write_v2(&mut service),
            }
            rows.push(Row {
                index,
                requests: w.requests,
                ok: w.ok,
                errors: w.errors,
                latency,
                service,
            });
        }
        Ok(Timeline::of_rows(rows))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timelines_merge_second_by_second() {
        let mut a = Timeline::default();
        let mut b = Timeline::default();
        for (t, secs) in [(&mut a, [0u64, 2, 5]), (&mut b, [1, 2, 6])] {
            for s in secs {
                for _ in 0..=s {
                    t.record(s, s != 2, Some(1000 * (s + 1)));
                }
            }
        }
        let wire = serde_json::to_string(&b).unwrap();
        let b: Timeline = serde_json::from_str(&wire).unwrap();
        a.merge(&b);
        let got: Vec<(u64, u64, u64, u64)> = a
            .seconds()
            .iter()
            .map(|(i, s)| (*i, s.requests, s.ok, s.latency.0.len()))
            .collect();
        assert_eq!(
            got,
            vec![
                (0, 1, 1, 1),
                (1, 2, 2, 2),
                (2, 6, 0, 6),
                (5, 6, 6, 6),
                (6, 7, 7, 7)
            ]
        );
        // Merging into an empty timeline and back out changes nothing.
        let mut c = Timeline::default();
        c.merge(&a);
        assert_eq!(
            serde_json::to_string(&c).unwrap(),
            serde_json::to_string(&a).unwrap()
        );
        // A second no run can have is an error, not billions of report rows.
        let far = wire.replacen("[[1,", "[[86400000000,", 1);
        assert_ne!(far, wire);
        assert!(serde_json::from_str::<Timeline>(&far).is_err());
        // A corrupt histogram on the wire is an error.
        let bad = wire.replacen("\"latency\":\"", "\"latency\":\"!!", 1);
        assert!(serde_json::from_str::<Timeline>(&bad).is_err());
    }

    #[test]
    fn timeline_rolls_seconds() {
        let mut t = Timeline::default();
        for s in 0..5u64 {
            for _ in 0..10 {
                t.record(s, true, Some(100 + s));
            }
        }
        let secs = t.seconds();
        assert_eq!(secs.len(), 5);
        assert!(secs.iter().all(|(_, s)| s.requests == 10));
    }

    #[test]
    fn a_long_timeline_is_kept_packed_and_reads_back_exactly() {
        let mut t = Timeline::default();
        let mut expected: Vec<(u64, Second)> = Vec::new();
        let mut x = 12345u64;
        for sec in (0..1_500u64).filter(|s| s % 7 != 3) {
            let mut s = Second::default();
            for _ in 0..50 {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let (us, service, ok) = (
                    200 + (x >> 40) % 20_000,
                    150 + (x >> 20) % 9_000,
                    !x.is_multiple_of(11),
                );
                t.record(sec, ok, Some(us));
                t.record_service(service);
                s.requests += 1;
                if ok {
                    s.ok += 1;
                } else {
                    s.errors += 1;
                }
                s.latency.record(us);
                s.service.record(service);
            }
            expected.push((sec, s));
        }
        let same = |a: &[(u64, Second)], b: &[(u64, Second)], by: u64| {
            assert_eq!(a.len(), b.len());
            for ((i, x), (j, y)) in a.iter().zip(b) {
                assert_eq!(
                    (*i, x.requests, x.ok, x.errors),
                    (j + by, y.requests, y.ok, y.errors)
                );
                assert_eq!(x.latency.0, y.latency.0, "second {i}");
                assert_eq!(x.service.0, y.service.0, "second {i}");
            }
        };
        same(&t.seconds(), &expected, 0);
        assert_eq!(t.last_second(), Some(1_499));
        // 50 requests a second in two histograms: well under a kilobyte kept a second.
        let per_second = t.closed.kept_bytes() / expected.len();
        assert!(per_second < 600, "{per_second} bytes a second");
        let back: Timeline = serde_json::from_str(&serde_json::to_string(&t).unwrap()).unwrap();
        same(&back.seconds(), &expected, 0);
        let mut later = back.clone();
        later.shift(5);
        same(&later.seconds(), &expected, 5);
        assert_eq!(later.last_second(), Some(1_504));
        // Merged with itself: every count doubles, every second is kept.
        let both = Timeline::merge_shifted(&[(&t, 0), (&back, 0)]);
        let doubled = both.seconds();
        assert_eq!(doubled.len(), expected.len());
        assert!(
            doubled
                .iter()
                .zip(&expected)
                .all(|((_, a), (_, b))| a.requests == 2 * b.requests
                    && a.latency.0.len() == 2 * b.latency.0.len())
        );
    }
}
