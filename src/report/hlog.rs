//! HdrHistogram interval logs (`--hlog FILE`): the standard `.hlog` text format (version,
//! start time, base time and legend headers, then one compressed V2 histogram per interval),
//! with the corrected latency tagged `corrected` and the service time `uncorrected`, built
//! from the run's per-second timeline, one interval of whole seconds at a time.

use std::io::{self, Write};
use std::time::{Duration, SystemTime};

use hdrhistogram::serialization::V2DeflateSerializer;
use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};

use crate::stats::{Hist, Stats};

/// Writes the interval log of `stats`, whose measured run began about `start`, in
/// intervals of `interval_s` seconds (at least 1). Values are microseconds.
pub fn render(
    stats: &Stats,
    start: SystemTime,
    interval_s: u64,
    out: &mut dyn Write,
) -> io::Result<()> {
    let interval_s = interval_s.max(1);
    let mut text: Vec<u8> = Vec::new();
    let mut serializer = V2DeflateSerializer::new();
    {
        let mut builder = IntervalLogWriterBuilder::new();
        builder
            .add_comment("[Histogram log format version 1.2]")
            .add_comment(&format!(
                "[vblast {}: latency in microseconds; Tag=corrected from each request's intended start, Tag=uncorrected (service time) from its actual send]",
                env!("CARGO_PKG_VERSION")
            ))
            .with_start_time(start)
            .with_base_time(start);
        builder.begin_log_with(&mut text, &mut serializer)?;
    }
    text.extend_from_slice(
        b"\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n",
    );
    let mut writer = IntervalLogWriterBuilder::new().begin_log_with(&mut text, &mut serializer)?;
    let mut latency = Hist::default();
    let mut service = Hist::default();
    let mut current: Option<u64> = None;
    let mut failed: Option<io::Error> = None;
    let mut flush = |index: u64, latency: &mut Hist, service: &mut Hist| {
        let at = Duration::from_secs(index * interval_s);
        let length = Duration::from_secs(interval_s);
        for (h, tag) in [(&*latency, "corrected"), (&*service, "uncorrected")] {
            if let Err(e) = writer.write_histogram(&h.0, at, length, Tag::new(tag)) {
                failed.get_or_insert(io::Error::other(format!("{e:?}")));
            }
        }
        latency.reset();
        service.reset();
    };
    stats.timeline.for_each_second(|second, s| {
        let index = second / interval_s;
        if let Some(c) = current
            && c != index
        {
            flush(c, &mut latency, &mut service);
        }
        current = Some(index);
        latency.add(&s.latency);
        service.add(&s.service);
    });
    if let Some(c) = current {
        flush(c, &mut latency, &mut service);
    }
    if let Some(e) = failed {
        return Err(e);
    }
    out.write_all(&text)
}
