//! `--html FILE` opened in a real browser: runs against nginx write the page (for a run,
//! for `vblast report` and for `vblast compare`), headless Chromium loads it from a file
//! (file:// only, name resolution off), and the test checks that every chart drew lines
//! (the page's self-check measures them in the browser and writes `data-drawn`; every
//! series has points), that the console stayed silent (a bad SVG path, a script error or a
//! refused script all log there), that strings from input are escaped and the token is
//! nowhere. Screenshots are kept under target/test-output/html/.
//!
//! A page whose chart has no points must fail the same check: the test breaks a page on
//! purpose and sees the check refuse it.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support;
use crate::support::deps::program;
use crate::support::nginx::Nginx;
use crate::support::run::run;
use crate::support::vblast::{env_cmd, url_cmd};

/// Where screenshots and pages are kept after the test: `<target>/test-output/html/`.
fn output_dir() -> PathBuf {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let dir = tmp.parent().unwrap_or(tmp).join("test-output").join("html");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn chromium() -> PathBuf {
    program(&["chromium", "chromium-browser"], "chromium")
}

/// What the browser made of a page.
pub(super) struct Browsed {
    /// The DOM after load and scripts.
    pub(super) dom: String,
    /// Console messages (Chromium logs them as `CONSOLE` lines on stderr).
    pub(super) console: Vec<String>,
}

/// Runs headless Chromium on `page` with `args` (`--dump-dom` or `--screenshot=...`), off
/// the network: file:// only, every host name unresolvable, no background services, a
/// profile of its own in `profile`. Killed (by pid) after 60 s.
pub(super) fn chromium_run(page: &Path, profile: &Path, args: &[String]) -> Browsed {
    let mut cmd = Command::new(chromium());
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--enable-logging=stderr",
        "--v=0",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-extensions",
        "--disable-default-apps",
        "--host-resolver-rules=MAP * ~NOTFOUND",
    ])
    .arg(format!("--user-data-dir={}", profile.display()))
    .args(args)
    .arg(format!("file://{}", page.display()))
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("start chromium");
    let stdout = support::run::reader(child.stdout.take().unwrap());
    let stderr = support::run::reader(child.stderr.take().unwrap());
    let started = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if started.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium still running after 60 s on {}", page.display());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let dom = stdout.join().unwrap();
    let stderr = stderr.join().unwrap();
    let console = stderr
        .lines()
        .filter(|l| l.contains(":CONSOLE"))
        .map(str::to_string)
        .collect();
    Browsed { dom, console }
}

/// The value of attribute `name` in the tag that starts `tag` (the text after `<name `).
fn attr(tag: &str, name: &str) -> Option<String> {
    let end = tag.find('>').unwrap_or(tag.len());
    let head = format!(" {}", &tag[..end]);
    let key = format!(" {name}=\"");
    let at = head.find(&key)? + key.len();
    let len = head[at..].find('"')?;
    Some(head[at..at + len].to_string())
}

/// One chart as the browser left it.
#[derive(Debug)]
struct DrawnChart {
    id: String,
    /// Total length of its lines, measured by the browser (`data-drawn`).
    drawn: f64,
    /// Points of each series, as drawn.
    series_points: Vec<usize>,
    legend: Vec<String>,
}

/// The charts in a DOM.
fn charts(dom: &str) -> Vec<DrawnChart> {
    let mut out = Vec::new();
    for piece in dom.split("<svg ").skip(1) {
        if attr(piece, "class").as_deref() != Some("chart") {
            continue;
        }
        let body = &piece[..piece.find("</svg>").unwrap_or(piece.len())];
        let series_points = body
            .split("<path ")
            .skip(1)
            .filter(|p| attr(p, "class").as_deref() == Some("series"))
            .map(|p| {
                let d = attr(p, "d").unwrap_or_default();
                // Each point is one M or L command.
                d.matches(['M', 'L']).count()
            })
            .collect();
        let legend = body
            .split("<g class=\"legend\">")
            .skip(1)
            .filter_map(|g| {
                let t = g.split("<text").nth(1)?;
                let t = &t[t.find('>')? + 1..];
                Some(t[..t.find("</text>")?].to_string())
            })
            .collect();
        out.push(DrawnChart {
            id: attr(piece, "id").unwrap_or_default(),
            drawn: attr(piece, "data-drawn")
                .and_then(|v| v.parse().ok())
                .unwrap_or(0.0),
            series_points,
            legend,
        });
    }
    out
}

/// Opens `page` in Chromium, keeps a screenshot as `<output>/<name>.png` (and the page as
/// `<name>.html`), and checks it: the charts `ids` are all there, each drew lines, every
/// series has at least two points, and the console is silent. Returns the charts.
fn check_page(page: &Path, name: &str, ids: &[&str]) -> Result<Vec<DrawnChart>, String> {
    let profile = tempfile::tempdir().unwrap();
    let b = chromium_run(page, profile.path(), &["--dump-dom".into()]);
    let out = output_dir();
    std::fs::copy(page, out.join(format!("{name}.html"))).unwrap();
    let shot = out.join(format!("{name}.png"));
    let _ = std::fs::remove_file(&shot);
    chromium_run(
        page,
        profile.path(),
        &[
            format!("--screenshot={}", shot.display()),
            "--window-size=1280,2000".into(),
            "--hide-scrollbars".into(),
        ],
    );
    let size = std::fs::metadata(&shot).map(|m| m.len()).unwrap_or(0);
    if size < 10_000 {
        return Err(format!(
            "no screenshot at {} ({size} bytes)",
            shot.display()
        ));
    }
    eprintln!("screenshot: {}", shot.display());
    if !b.console.is_empty() {
        return Err(format!("console messages:\n{}", b.console.join("\n")));
    }
    let found = charts(&b.dom);
    for id in ids {
        let Some(c) = found.iter().find(|c| c.id == *id) else {
            return Err(format!("no chart {id} in the DOM: {found:?}"));
        };
        if c.drawn.is_nan() || c.drawn <= 0.0 {
            return Err(format!("chart {id} drew nothing: {c:?}"));
        }
        if c.series_points.is_empty() || c.series_points.iter().any(|&n| n < 2) {
            return Err(format!("chart {id} has a series without points: {c:?}"));
        }
    }
    Ok(found)
}

/// The text of `html` without its tags.
fn text_of(html: &str) -> String {
    let mut out = String::new();
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' => in_tag = false,
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    out.trim().to_string()
}

/// A sweep page's first steps table, as the DOM has it: its header and its rows' cells.
fn steps_table(dom: &str) -> (Vec<String>, Vec<Vec<String>>) {
    let at = dom.find(">Steps</h2>").expect("a Steps heading");
    let table = &dom[at..];
    let table = &table[table.find("<table").expect("a table")..];
    let table = &table[..table.find("</table>").expect("the table's end")];
    let cells = |row: &str, tag: &str| -> Vec<String> {
        row.split(&format!("<{tag}"))
            .skip(1)
            // `<th` begins `<thead` too: only `<th>` and `<th class=...>` are cells.
            .filter(|c| c.starts_with(['>', ' ']))
            .map(|c| text_of(&format!("<{tag}{c}")))
            .collect()
    };
    let (head, body) = table.split_once("</thead>").expect("a header");
    let rows = body.split("<tr").skip(1).map(|r| cells(r, "td")).collect();
    (cells(head, "th"), rows)
}

fn chart<'a>(charts: &'a [DrawnChart], id: &str) -> &'a DrawnChart {
    charts.iter().find(|c| c.id == id).unwrap()
}

/// A results file and a page from one run, a page from `report` and one from `compare`.
#[test]
fn html_pages_draw_in_chromium() {
    let nginx = Nginx::start();
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n);
    let s = |p: &PathBuf| p.to_str().unwrap().to_string();
    // An open-model run: corrected and uncorrected spectra; a query string with `&` and a
    // header with markup, both strings from input; a token that must not be saved.
    let url = format!("{}/v1/secret/data/foo?a=1&b=2", nginx.addr);
    let (a_json, a_html) = (p("open.json"), p("open.html"));
    let out = run(env_cmd(
        &[
            "-R",
            "200",
            "-c",
            "4",
            "-z",
            "3s",
            "-H",
            "X-Note: <b>bold</b>",
            "--output",
            &s(&a_json),
            "--html",
            &s(&a_html),
            &url,
        ],
        &[("VAULT_TOKEN", "hvs.html-test-token-1234")],
    ));
    out.assert_code(0);
    let page = std::fs::read_to_string(&a_html).unwrap();
    assert!(page.contains("a=1&amp;b=2"), "target not escaped");
    assert!(!page.contains("a=1&b=2"), "raw & in the page");
    assert!(
        page.contains("&lt;b&gt;bold&lt;/b&gt;"),
        "header not in the scenario"
    );
    assert!(!page.contains("<b>bold"), "markup from input in the page");
    assert!(
        !page.contains("html-test-token"),
        "the token is in the page"
    );
    let drawn = check_page(
        &a_html,
        "run-open",
        &["spectrum", "timeline-rate", "timeline-latency"],
    )
    .unwrap();
    let spectrum = chart(&drawn, "spectrum");
    assert_eq!(spectrum.series_points.len(), 2, "{spectrum:?}");
    assert!(spectrum.legend[0].starts_with("corrected"), "{spectrum:?}");
    assert!(
        spectrum.legend[1].starts_with("uncorrected"),
        "{spectrum:?}"
    );
    // HdrHistogram's axis: percentiles from 0% to at least 99%.
    for label in ["0%", "90%", "99%"] {
        assert!(
            page.contains(&format!(">{label}</text>")),
            "no {label} label"
        );
    }
    // The summary table has the operation's row and the total.
    assert!(page.contains("<td>url</td>") && page.contains("<td>total</td>"));

    // `vblast report` draws the same spectrum from the saved run.
    let r_html = p("report.html");
    run(url_cmd(&["report", &s(&a_json), "--html", &s(&r_html)])).assert_code(0);
    let again = std::fs::read_to_string(&r_html).unwrap();
    let svg = |t: &str| {
        let at = t.find("<svg class=\"chart\" id=\"spectrum\"").unwrap();
        t[at..at + t[at..].find("</svg>").unwrap()].to_string()
    };
    assert_eq!(svg(&page), svg(&again));
    check_page(
        &r_html,
        "report",
        &["spectrum", "timeline-rate", "timeline-latency"],
    )
    .unwrap();

    // A closed-model run with failures, then both runs compared on one page.
    let b_json = p("closed.json");
    run(url_cmd(&[
        "-c",
        "2",
        "-z",
        "2s",
        "--allow-errors",
        "--output",
        &s(&b_json),
        &format!("{}/status/503", nginx.addr),
    ]))
    .assert_code(0);
    let c_html = p("compare.html");
    run(url_cmd(&[
        "compare",
        &s(&a_json),
        &s(&b_json),
        "--html",
        &s(&c_html),
    ]))
    .assert_code(0);
    let drawn = check_page(
        &c_html,
        "compare",
        &["spectrum", "timeline-rate", "timeline-latency"],
    )
    .unwrap();
    let spectrum = chart(&drawn, "spectrum");
    assert_eq!(spectrum.series_points.len(), 3, "{spectrum:?}");
    for (i, run) in ["open.json", "open.json", "closed.json"].iter().enumerate() {
        assert!(spectrum.legend[i].starts_with(run), "{spectrum:?}");
    }
    let compared = std::fs::read_to_string(&c_html).unwrap();
    assert!(compared.contains("Run: open.json") && compared.contains("Run: closed.json"));
    let closed = support::figures::u(
        &serde_json::from_str::<serde_json::Value>(&std::fs::read_to_string(&b_json).unwrap())
            .unwrap()["errors"]["status"],
    );
    assert!(closed > 0);
    assert!(
        compared.contains(&format!("non-2xx {closed}")),
        "the failures are not described"
    );
}

/// The check refuses a page whose chart has no points, and one whose SVG is broken.
#[test]
fn a_chart_without_points_fails_the_check() {
    let nginx = Nginx::start();
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("run.html");
    run(url_cmd(&[
        "-c",
        "2",
        "-z",
        "2s",
        "--html",
        page.to_str().unwrap(),
        &format!("{}/v1/secret/data/foo", nginx.addr),
    ]))
    .assert_code(0);
    let good = std::fs::read_to_string(&page).unwrap();
    check_page(&page, "check-good", &["spectrum"]).unwrap();
    // The spectrum's line emptied: its series has no points, and the browser measures
    // nothing drawn (the self-check logs it).
    let at = good.find("id=\"spectrum\"").unwrap();
    let d = at + good[at..].find(" d=\"").unwrap() + 4;
    let end = d + good[d..].find('"').unwrap();
    let empty = format!("{}{}", &good[..d], &good[end..]);
    std::fs::write(&page, &empty).unwrap();
    let err = check_page(&page, "check-empty", &["spectrum"]).unwrap_err();
    assert!(
        err.contains("console") || err.contains("drew nothing"),
        "{err}"
    );
    // A path the browser cannot parse is a console error.
    let broken = format!("{}M 1 x{}", &good[..d], &good[end..]);
    std::fs::write(&page, &broken).unwrap();
    let err = check_page(&page, "check-broken", &["spectrum"]).unwrap_err();
    assert!(err.contains("console messages"), "{err}");
}

/// A sweep's page and the comparison of two sweeps: the knee chart (latency against
/// achieved throughput) and the per-step charts really drawn by the browser, one point per
/// step, one colour per sweep when overlaid; the same page with the knee's p99 line
/// emptied fails the check.
#[test]
fn sweep_pages_draw_the_knee_in_chromium() {
    let nginx = Nginx::start();
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n);
    let s = |p: &PathBuf| p.to_str().unwrap().to_string();
    let url = format!("{}/v1/secret/data/foo", nginx.addr);
    let sweep = |range: &str, json: &PathBuf, html: &PathBuf| {
        run(url_cmd(&[
            "sweep",
            "--rate",
            range,
            "--steps",
            "3",
            "--step-duration",
            "1s",
            "--step-warmup",
            "200ms",
            "--slo",
            "p50=2s",
            "--slo",
            "rate=50%",
            "-c",
            "4",
            "--output",
            &s(json),
            "--html",
            &s(html),
            &url,
        ]))
        .assert_code(0);
    };
    let (a_json, a_html) = (p("small.json"), p("small.html"));
    let (b_json, b_html) = (p("large.json"), p("large.html"));
    sweep("50..200", &a_json, &a_html);
    sweep("100..400", &b_json, &b_html);
    let ids = ["knee", "percentiles", "throughput"];
    // Steps: three, or more when a busy machine broke one and the sweep bisected.
    let steps = |f: &PathBuf| {
        let doc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap();
        doc["steps"].as_array().unwrap().len()
    };
    let (a, b) = (steps(&a_json), steps(&b_json));
    let drawn = check_page(&a_html, "sweep", &ids).unwrap();
    // The steps' table with each percentile's interval, as the browser has it.
    let profile = tempfile::tempdir().unwrap();
    let dom = chromium_run(&a_html, profile.path(), &["--dump-dom".into()]).dom;
    let (header, rows) = steps_table(&dom);
    let col = |name: &str| header.iter().position(|h| h == name).expect(name);
    assert_eq!(rows.len(), a, "{header:?} {rows:?}");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&a_json).unwrap()).unwrap();
    for (row, step) in rows.iter().zip(doc["steps"].as_array().unwrap()) {
        for (name, key) in [("p50 CI", "p50_ci_ms"), ("p99 CI", "p99_ci_ms")] {
            let cell = &row[col(name)];
            // Known sides are numbers with a unit; an unknown side is '?', never a number.
            let ci = &step[key];
            assert!(
                cell.contains('-') && cell.contains('s'),
                "{name}: {cell} {ci}"
            );
            assert_eq!(cell.starts_with('?'), ci["low"].is_null(), "{cell} {ci}");
            assert_eq!(
                cell.trim_end_matches('!').ends_with('?'),
                ci["high"].is_null(),
                "{cell} {ci}"
            );
        }
    }
    let knee = chart(&drawn, "knee");
    // p99 and p50, a point per step, and the objective's bound across them.
    assert_eq!(knee.series_points, [a, a, 2], "{knee:?}");
    assert!(knee.legend[0].starts_with("p99"), "{knee:?}");
    check_page(&b_html, "sweep-large", &ids).unwrap();

    let c_html = p("sizing.html");
    run(url_cmd(&[
        "compare",
        &s(&a_json),
        &s(&b_json),
        "--html",
        &s(&c_html),
    ]))
    .assert_code(0);
    let drawn = check_page(&c_html, "sweep-compare", &ids).unwrap();
    let knee = chart(&drawn, "knee");
    assert_eq!(knee.series_points, [a, a, b, b, 2], "{knee:?}");
    for (i, name) in ["small.json: p99", "small.json: p50", "large.json: p99"]
        .iter()
        .enumerate()
    {
        assert!(knee.legend[i].starts_with(name), "{knee:?}");
    }

    // The knee's first line emptied: the browser draws less, and the check says so.
    let good = std::fs::read_to_string(&c_html).unwrap();
    let at = good.find("id=\"knee\"").unwrap();
    let d = at + good[at..].find(" d=\"").unwrap() + 4;
    let end = d + good[d..].find('"').unwrap();
    let broken = p("broken.html");
    std::fs::write(&broken, format!("{}{}", &good[..d], &good[end..])).unwrap();
    let err = check_page(&broken, "sweep-broken", &ids).unwrap_err();
    assert!(
        err.contains("console") || err.contains("without points"),
        "{err}"
    );
}

/// The server's figures beside the client's (src/report/html.rs, `server_section`): a run
/// against a real OpenBao dev server, sampled every half second, writes a page whose
/// Server section has the node's three charts (CPU, in flight, time per request beside the
/// client's latency), each drawn in Chromium, and the node's figures as the results file
/// has them.
#[test]
fn the_server_section_draws_the_nodes_figures_in_chromium() {
    let bao = crate::support::openbao::OpenBao::start();
    let dir = tempfile::tempdir().unwrap();
    let (json, html) = (dir.path().join("run.json"), dir.path().join("run.html"));
    let out = run(crate::support::vblast::vault_cmd(
        &bao,
        &[
            "-c",
            "2",
            "-z",
            "3s",
            "--op",
            "kv-read",
            "--server-interval",
            "500ms",
            "--output",
            json.to_str().unwrap(),
            "--html",
            html.to_str().unwrap(),
        ],
    ));
    out.assert_code(0);
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let node = &doc["server"]["nodes"][0];
    assert_eq!(node["node"], bao.addr.as_str(), "{doc}");
    let ids = ["server-cpu-0-0", "server-inflight-0-0", "server-time-0-0"];
    let drawn = check_page(&html, "run-server", &ids).unwrap();
    let cpu = chart(&drawn, "server-cpu-0-0");
    assert!(cpu.legend.iter().any(|l| l == "server CPU"), "{cpu:?}");
    let intervals = node["intervals"].as_array().unwrap().len();
    assert_eq!(cpu.series_points[0], intervals, "{cpu:?}");
    let time = chart(&drawn, "server-time-0-0");
    for name in ["server handle_request mean", "client p50", "client p99"] {
        assert!(time.legend.iter().any(|l| l == name), "{time:?}");
    }
    assert_eq!(chart(&drawn, "server-inflight-0-0").legend, ["in flight"]);
    // The node's heading and its row: the figures the results file holds.
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains(&format!("<h3 class=\"server-node\">{}</h3>", bao.addr)),
        "no heading for {}",
        bao.addr
    );
    let row = format!(
        "<td>{}</td><td class=\"num\">{}</td>",
        bao.addr, node["samples"]
    );
    let at = page.find(&row).unwrap_or_else(|| panic!("no row {row}"));
    let row = &page[at..at + page[at..].find("</tr>").unwrap()];
    let handled = node["handled"].as_u64().unwrap();
    assert!(handled > 0, "{node}");
    let handle_ms = format!("{:.3}", node["handle_ms"].as_f64().unwrap());
    for cell in [handled.to_string(), handle_ms] {
        assert!(
            row.contains(&format!("<td class=\"num\">{cell}</td>")),
            "{cell} not in {row}"
        );
    }
    assert!(
        page.contains("accounting: server handled"),
        "no accounting line"
    );
}
