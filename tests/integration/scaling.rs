//! The scaling charts (`tools/scaling-chart.py`, drawn by `tools/bench/scaling.sh`) opened in
//! a real browser: a tiny CSV of the script's shape becomes an SVG, headless Chromium loads
//! it from a file (as the report tests do, `html::chromium_run`), and the test checks that
//! the chart drew: the SVG's own script measured its lines (`data-drawn`), every client's
//! series has its points, the point a client did not reach is said, the console stayed
//! silent, and the screenshot is not blank. A CSV with no figures must fail the same check.
//! Screenshots are kept under target/test-output/scaling/.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::html::chromium_run;

/// Two clients over three connection counts; wrk did not reach the last.
const CSV: &str = "client,x,cpu_us_per_req,rss_mib,achieved_rps,n_requests,n_failed
vblast,64,6.1,9.4,10400,20800,0
vblast,1000,9.9,10.0,8100,16200,0
vblast,20000,14.2,41.5,3900,7800,0
wrk,64,6.4,5.0,9900,19800,0
wrk,1000,13.5,9.4,7400,14800,0
wrk,20000,,,,,
";

fn output_dir() -> PathBuf {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let dir = tmp
        .parent()
        .unwrap_or(tmp)
        .join("test-output")
        .join("scaling");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Renders `csv` with the script's renderer; returns the SVG's path.
fn render(dir: &Path, name: &str, csv: &str) -> PathBuf {
    let src = dir.join(format!("{name}.csv"));
    let svg = dir.join(format!("{name}.svg"));
    std::fs::write(&src, csv).unwrap();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tools/scaling-chart.py");
    let out = Command::new("python3")
        .arg(script)
        .arg(&src)
        .arg(&svg)
        .args(["--title", "Cost against connections <test>", "--x-label"])
        .args(["connections (-c)", "--log-x", "--note", "test note"])
        .output()
        .expect("run python3");
    assert!(
        out.status.success(),
        "{script}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    svg
}

/// The value of attribute `name` on the root `<svg>` of `dom`.
fn root_attr(dom: &str, name: &str) -> Option<String> {
    let tag = &dom[dom.find("<svg")?..];
    let tag = &tag[..tag.find('>')?];
    let key = format!(" {name}=\"");
    let at = tag.find(&key)? + key.len();
    Some(tag[at..at + tag[at..].find('"')?].to_string())
}

/// Points of each drawn series, by client (`path.series`, one M or L per point).
fn series(dom: &str) -> Vec<(String, usize)> {
    dom.split("<path ")
        .skip(1)
        .filter(|p| p.contains("class=\"series\""))
        .map(|p| {
            let client = p.split("data-client=\"").nth(1).unwrap_or("");
            let client = client[..client.find('"').unwrap_or(0)].to_string();
            let d = p.split(" d=\"").nth(1).unwrap_or("");
            let d = &d[..d.find('"').unwrap_or(0)];
            (client, d.matches(['M', 'L']).count())
        })
        .collect()
}

/// Opens the SVG in Chromium (DOM and a screenshot, kept as `<output>/<name>.png`) and
/// checks that it drew; returns the DOM.
fn check_chart(svg: &Path, name: &str) -> Result<String, String> {
    let profile = tempfile::tempdir().unwrap();
    let b = chromium_run(svg, profile.path(), &["--dump-dom".into()]);
    if !b.console.is_empty() {
        return Err(format!("console messages:\n{}", b.console.join("\n")));
    }
    let drawn: f64 = root_attr(&b.dom, "data-drawn")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0);
    if drawn.is_nan() || drawn <= 0.0 {
        return Err(format!("the chart drew nothing (data-drawn {drawn})"));
    }
    let shot = output_dir().join(format!("{name}.png"));
    let _ = std::fs::remove_file(&shot);
    chromium_run(
        svg,
        profile.path(),
        &[
            format!("--screenshot={}", shot.display()),
            "--window-size=1300,400".into(),
            "--hide-scrollbars".into(),
        ],
    );
    let size = std::fs::metadata(&shot).map(|m| m.len()).unwrap_or(0);
    // A blank page of that size compresses to a few KiB; the chart's lines and text do not.
    if size < 10_000 {
        return Err(format!(
            "screenshot {} is blank ({size} bytes)",
            shot.display()
        ));
    }
    eprintln!("screenshot: {}", shot.display());
    Ok(b.dom)
}

#[test]
fn scaling_chart_draws_in_chromium() {
    let dir = tempfile::tempdir().unwrap();
    let svg = render(dir.path(), "connections", CSV);
    let dom = check_chart(&svg, "connections").unwrap_or_else(|e| panic!("{e}"));
    // Three figure columns, three panels; n_ columns stay in the CSV.
    assert_eq!(dom.matches("class=\"panel\"").count(), 3, "{dom:.400}");
    assert!(!dom.contains("n_requests"), "an n_ column was drawn");
    // Per panel: vblast's three points, wrk's two; 15 points in all.
    let mut drawn = series(&dom);
    drawn.sort();
    let want: Vec<(String, usize)> = [("vblast", 3), ("wrk", 2)]
        .iter()
        .cycle()
        .take(6)
        .map(|&(c, n)| (c.to_string(), n))
        .collect::<Vec<_>>();
    let mut want = want;
    want.sort();
    assert_eq!(drawn, want);
    assert_eq!(root_attr(&dom, "data-points").as_deref(), Some("15"));
    assert!(dom.contains("not reached: wrk at 20k"), "{dom:.2000}");
    // The title from the command line is escaped, not markup.
    assert!(dom.contains("Cost against connections &lt;test&gt;"));
}

#[test]
fn a_scaling_chart_without_figures_fails_the_check() {
    let dir = tempfile::tempdir().unwrap();
    let empty = "client,x,cpu_us_per_req,rss_mib\nvblast,64,,\nwrk,64,,\n";
    let svg = render(dir.path(), "empty", empty);
    let err = check_chart(&svg, "empty").expect_err("a chart with no points passed");
    assert!(err.contains("drew nothing"), "{err}");
}
