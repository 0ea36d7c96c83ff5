//! vault-benchmark's JSON report (`-report_mode=json`): one line,
//! `{"target_addr": ..., "metrics": {NAME: {...}, "total": {...}}}`, each entry in the
//! layout of vegeta's metrics (`vegeta::VegetaMetrics`: durations in nanoseconds, each
//! test's own body bytes, status codes and errors), with vblast's figures. vegeta's
//! `earliest`, `latest` and `end` timestamps are left out.

use std::io::{self, Write};

use serde::Serialize;

use super::vegeta::VbReport;
use crate::report::Summary;

#[derive(Serialize)]
struct Report<'a> {
    #[serde(flatten)]
    report: VbReport,
    /// Several nodes as one target (not in vault-benchmark's layout, which has no cluster
    /// results): a row per node and the windows of unavailability, as in vblast's JSON.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    nodes: &'a [crate::report::nodes::NodeSummary],
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    windows: &'a [crate::report::nodes::WindowSummary],
}

/// Writes the JSON report, one line.
pub fn render(s: &Summary, o: &mut dyn Write) -> io::Result<()> {
    serde_json::to_writer(
        &mut *o,
        &Report {
            report: VbReport::of(s),
            nodes: &s.nodes,
            windows: &s.windows,
        },
    )?;
    writeln!(o)
}
