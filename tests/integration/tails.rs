//! Honest tails against nginx: a percentile with fewer than 10 samples above it is marked,
//! with the number it rests on, in every format (text, JSON, verbose, `--latency`, ab,
//! compare, HTML); one with exactly 10 above is not. 500 requests: p98 has 10 above (well
//! supported), p99 has 5 (thin), p99.9 and p99.99 none. 1,000 requests: p99 has 10 above.

use crate::support::nginx::Nginx;
use crate::support::run::run;
use crate::support::vblast::{Args, url_cmd};
use serde_json::json;

/// The line of `text` that starts with `prefix` (after leading spaces).
fn line<'a>(text: &'a str, prefix: &str) -> &'a str {
    text.lines()
        .find(|l| l.trim_start().starts_with(prefix))
        .unwrap_or_else(|| panic!("no line {prefix:?} in\n{text}"))
}

#[test]
fn thin_tails_are_marked_in_every_format() {
    let ng = Nginx::start();
    let url = format!("{}/v1/secret/data/foo", ng.addr);
    let dir = tempfile::tempdir().unwrap();
    let file = |n: &str| dir.path().join(n).display().to_string();
    let (thin, full) = (file("n500.json"), file("n1000.json"));

    // Text, live: the 99th% cells are marked, the 95th% not, and the note counts 5.
    let quiet = Args::default().extra(&["-q"]).c(2);
    let out = run(quiet.clone().n(500).flag("--output", &thin).url(&url));
    out.assert_code(0);
    let total = out.total_row();
    assert!(!total[5].ends_with('*'), "95th% marked: {total:?}");
    assert!(total[6].ends_with('*'), "99th% not marked: {total:?}");
    assert_eq!(
        line(&out.stdout, "* thin tail"),
        "* thin tail (fewer than 10 samples above the percentile): url 99th% rests on 5, total 99th% rests on 5"
    );
    // One more request each side of the boundary: 1,000 leaves 10 above p99.
    let well = run(quiet.n(1000).flag("--output", &full).url(&url));
    well.assert_code(0);
    let total = well.total_row();
    assert!(
        !total[5].ends_with('*') && !total[6].ends_with('*'),
        "{total:?}"
    );
    assert!(!well.stdout.contains("thin tail"), "{}", well.show());

    // JSON: thin_tails names the percentiles and the samples above them.
    let j = run(url_cmd(&["report", &thin, "--format", "json"])).json();
    let expected = json!({"p99": 5, "p999": 0, "p9999": 0});
    assert_eq!(j["latency_ms"]["thin_tails"], expected, "{j:#}");
    assert_eq!(j["service_ms"]["thin_tails"], expected);
    assert_eq!(j["ops"][0]["latency_ms"]["thin_tails"], expected);
    let j = run(url_cmd(&["report", &full, "--format", "json"])).json();
    assert_eq!(
        j["latency_ms"]["thin_tails"],
        json!({"p999": 1, "p9999": 0})
    );

    // Verbose: the 99 and 99.9 cells marked, then the samples above them.
    let v = run(url_cmd(&["report", &thin, "--format", "verbose"])).stdout;
    let cells: Vec<&str> = line(&v, "Latency [")
        .split_once(']')
        .unwrap()
        .1
        .trim()
        .split(", ")
        .collect();
    let marked: Vec<bool> = cells.iter().map(|c| c.ends_with('*')).collect();
    // min, mean, stdev, 50, 90, 95, 99, 99.9, max
    assert_eq!(
        marked,
        [false, false, false, false, false, false, true, true, false],
        "{v}"
    );
    assert!(line(&v, "* Thin tails").ends_with("99: 5, 99.9: 0"), "{v}");

    // --latency: 99% and beyond marked, 90% not, 100% (the maximum) not.
    let l = run(url_cmd(&["report", &thin, "--latency"])).stdout;
    assert!(!line(&l, "90.000%").contains('*'), "{l}");
    assert!(line(&l, "99.000%").ends_with('*'), "{l}");
    assert!(line(&l, "99.990%").ends_with('*'), "{l}");
    assert!(!line(&l, "100.000%").contains('*'), "{l}");
    assert!(
        l.contains("\n  * thin tail (fewer than 10 samples above the percentile): 99.000% rests on 5, 99.900% rests on 0, 99.990% rests on 0, 99.999% rests on 0\n"),
        "{l}"
    );

    // ab: the percentage rows as ab prints them, the thin tail said in one line below
    // the table; 98% (10 above) is not thin.
    let ab = run(url_cmd(&["report", &thin, "--format", "ab"])).stdout;
    assert!(!line(&ab, "99%").contains('('), "{ab}");
    assert_eq!(
        line(&ab, "Thin tail:"),
        "Thin tail: 99% (5 above) rests on fewer than 10 requests above",
        "{ab}"
    );
    let ab = run(url_cmd(&["report", &full, "--format", "ab"])).stdout;
    assert!(!ab.contains("Thin tail"), "{ab}");

    // compare: the thin run's p99 marked, the other's not.
    let c = run(url_cmd(&["compare", &thin, &full])).stdout;
    let p99: Vec<&str> = line(&c, "p99 ").split_whitespace().collect();
    assert!(p99[1].ends_with('*') && !p99[2].ends_with('*'), "{c}");
    assert!(
        c.contains("n500.json p99 rests on 5") && !c.contains("n1000.json p99 rests"),
        "{c}"
    );

    // HTML: the cell marked and the note under the table.
    let page = file("n500.html");
    run(url_cmd(&["report", &thin, "--html", &page])).assert_code(0);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("total p99 rests on 5"), "no note in the page");
    assert!(
        html.contains("thin tail from here"),
        "no mark on the spectrum"
    );
}
