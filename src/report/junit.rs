//! JUnit XML (`--junit FILE`), the report CI systems read: one `<testsuite>` of test cases,
//! one per threshold of a run (`of_thresholds`) or per `--fail-on` line of `vblast compare`.
//! A case that holds passes; a broken one is a `<failure>`; an unclear one is an `<error>`
//! of type `unclear` (it was not judged either way, and the run's exit status says so).
//! Every name and message is escaped, so no operation name breaks the document.

use crate::threshold::{ThresholdResult, ThresholdVerdict};

/// One test case: its name, the class CI systems group it under, its outcome and why.
#[derive(Clone, Debug)]
pub struct JunitCase {
    pub name: String,
    pub classname: String,
    pub outcome: JunitOutcome,
    pub why: String,
}

/// How a case ended, as JUnit says it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JunitOutcome {
    Passed,
    /// A `<failure>`: broken.
    Failed,
    /// An `<error type="unclear">`: not judged either way.
    Unclear,
}

impl JunitOutcome {
    /// A threshold's verdict as a case's outcome.
    pub fn of(v: ThresholdVerdict) -> JunitOutcome {
        match v {
            ThresholdVerdict::Holds => JunitOutcome::Passed,
            ThresholdVerdict::Broken => JunitOutcome::Failed,
            ThresholdVerdict::Unclear => JunitOutcome::Unclear,
        }
    }
}

/// The cases of a run's thresholds: each named by its threshold, under `vblast.thresholds`.
pub fn of_thresholds(results: &[ThresholdResult]) -> Vec<JunitCase> {
    results
        .iter()
        .map(|r| JunitCase {
            name: r.threshold.clone(),
            classname: "vblast.thresholds".into(),
            outcome: JunitOutcome::of(r.verdict),
            why: format!("{}: {}", r.verdict.label(), r.why),
        })
        .collect()
}

/// The document: `<testsuites>` holding one `<testsuite name=suite>` of `cases`.
pub fn document(suite: &str, cases: &[JunitCase]) -> String {
    let count = |v: JunitOutcome| cases.iter().filter(|c| c.outcome == v).count();
    let (failures, errors) = (count(JunitOutcome::Failed), count(JunitOutcome::Unclear));
    let mut x = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    x.push_str(&format!(
        "<testsuites name=\"vblast\" tests=\"{}\" failures=\"{failures}\" errors=\"{errors}\">\n",
        cases.len()
    ));
    x.push_str(&format!(
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"0\">\n",
        escape(suite),
        cases.len()
    ));
    for c in cases {
        let open = format!(
            "    <testcase name=\"{}\" classname=\"{}\" time=\"0\"",
            escape(&c.name),
            escape(&c.classname)
        );
        let why = escape(&c.why);
        let body = match c.outcome {
            JunitOutcome::Passed => format!("<system-out>{why}</system-out>"),
            JunitOutcome::Failed => {
                format!("<failure message=\"{why}\" type=\"broken\">{why}</failure>")
            }
            JunitOutcome::Unclear => {
                format!("<error message=\"{why}\" type=\"unclear\">{why}</error>")
            }
        };
        x.push_str(&format!("{open}>\n      {body}\n    </testcase>\n"));
    }
    x.push_str("  </testsuite>\n</testsuites>\n");
    x
}

/// Text for an XML attribute or element: the five entities escaped, and the characters
/// XML 1.0 cannot hold (control characters other than tab, newline and return) shown as
/// `\u{..}`.
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if c.is_control() => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// Writes the document to `path`; the error names the file.
pub fn save(
    suite: &str,
    cases: &[JunitCase],
    path: &std::path::Path,
) -> Result<(), crate::error::Cause> {
    std::fs::write(path, document(suite, cases))
        .map_err(|e| crate::error::Cause::io(format!("cannot write {}", path.display()), e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_verdict_is_its_own_kind_of_case_and_names_are_escaped() {
        let case = |name: &str, verdict| JunitCase {
            name: name.into(),
            classname: "vblast.thresholds".into(),
            outcome: JunitOutcome::of(verdict),
            why: "broken: p99 2ms, 95% CI 1ms-3ms lies beyond < 1us".into(),
        };
        let doc = document(
            "run",
            &[
                case("a<b:p99<1us", ThresholdVerdict::Broken),
                case("errors<1", ThresholdVerdict::Holds),
                case("p50<1ms", ThresholdVerdict::Unclear),
            ],
        );
        assert!(
            doc.contains("tests=\"3\" failures=\"1\" errors=\"1\""),
            "{doc}"
        );
        assert!(doc.contains("name=\"a&lt;b:p99&lt;1us\""), "{doc}");
        assert!(doc.contains("<failure message=\"broken: "), "{doc}");
        assert!(doc.contains("type=\"broken\""), "{doc}");
        assert!(doc.contains("type=\"unclear\""), "{doc}");
        assert_eq!(escape("x\u{1}y"), "x\\u{1}y");
    }
}
