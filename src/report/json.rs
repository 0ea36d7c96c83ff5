//! The JSON report: the `Summary` as one pretty-printed document. Its keys are an
//! interface (scripts read them; docs/reports.md lists them, docs/schema/ holds their JSON Schema): add keys, never rename them.

use std::io::{self, Write};

use super::Summary;

/// Writes the JSON report and a final newline.
pub fn render(s: &Summary, o: &mut dyn Write) -> io::Result<()> {
    serde_json::to_writer_pretty(&mut *o, s)?;
    writeln!(o)
}
