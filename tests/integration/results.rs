//! Results files end to end: `--output` writes one per run, `vblast report` renders one or
//! merges several into one report whose counts and histograms are the sum of the parts, and
//! nothing secret is saved.

use crate::support::figures::u;
use crate::support::nginx::Nginx;
use crate::support::run::run;
use crate::support::vblast::url_cmd;

#[test]
fn shard_files_merge_into_one_report() {
    let ng = Nginx::start();
    let url = format!("{}/v1/secret/data/foo", ng.addr);
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<String> = (0..2)
        .map(|i| {
            dir.path()
                .join(format!("shard-{i}.json"))
                .display()
                .to_string()
        })
        .collect();
    let mut parts = Vec::new();
    for (n, f) in [(300, &files[0]), (500, &files[1])] {
        let out = run(url_cmd(&[
            "-c",
            "4",
            "-n",
            &n.to_string(),
            "-H",
            "X-Vault-Token: hvs.NEVERSAVED",
            "--output",
            f,
            "--format",
            "json",
            &url,
        ]));
        out.assert_code(0);
        parts.push(out.json());
        let saved = std::fs::read_to_string(f).unwrap();
        assert!(
            !saved.contains("hvs.NEVERSAVED"),
            "the token was saved in {f}"
        );
    }
    // Two runs, not shards of one: refused with what tells them apart, unless forced.
    let out = run(url_cmd(&["report", &files[0], &files[1]]));
    out.assert_code(2);
    assert!(
        out.stderr
            .contains("are not shards of one run: neither has a run id")
            && out.stderr.contains("--merge-unrelated merges them anyway"),
        "{}",
        out.show()
    );
    assert!(out.stdout.is_empty(), "{}", out.show());
    // One file given twice, by any path, or a copy of it: refused even when forced.
    let copy = dir.path().join("copy.json");
    std::fs::copy(&files[0], &copy).unwrap();
    let other_path = format!("{}/./shard-0.json", dir.path().display());
    for (second, says) in [
        (files[0].as_str(), "is given twice"),
        (other_path.as_str(), "is given twice (as "),
        (
            copy.to_str().unwrap(),
            "hold the same results (the run started ",
        ),
    ] {
        let out = run(url_cmd(&["report", "--merge-unrelated", &files[0], second]));
        out.assert_code(2);
        assert!(out.stderr.contains(says), "{says}: {}", out.show());
    }
    let merged_file = dir.path().join("merged.json");
    let out = run(url_cmd(&[
        "report",
        "--merge-unrelated",
        &files[0],
        &files[1],
        "--format",
        "json",
        "--output",
        merged_file.to_str().unwrap(),
    ]));
    out.assert_code(0);
    let j = out.json();
    assert_eq!(u(&j["requests"]), 800, "{j:#}");
    assert_eq!(u(&j["ok"]), 800);
    assert_eq!(u(&j["latency_ms"]["count"]), 800);
    assert_eq!(u(&j["status"]["200"]), 800);
    let max = parts
        .iter()
        .map(|p| p["latency_ms"]["max"].as_f64().unwrap())
        .fold(0.0, f64::max);
    assert_eq!(j["latency_ms"]["max"].as_f64().unwrap(), max, "{j:#}");
    // The merged file renders the same report again.
    let again = run(url_cmd(&[
        "report",
        merged_file.to_str().unwrap(),
        "--format",
        "json",
    ]));
    again.assert_code(0);
    assert_eq!(again.json()["latency_ms"], j["latency_ms"]);
    // Text rendering of a saved run.
    let text = run(url_cmd(&["report", &files[0]]));
    text.assert_code(0);
    text.assert_total_row();

    // A file that is not a results file is one clear message.
    let plain = dir.path().join("plain.json");
    std::fs::write(&plain, "{\"requests\": 3}").unwrap();
    let out = run(url_cmd(&["report", plain.to_str().unwrap()]));
    out.assert_code(2);
    assert!(out.stderr.starts_with("vblast: "), "{}", out.show());
}

/// A run's results file, saved from a short URL run against nginx, and its JSON.
fn saved_run(ng: &Nginx, dir: &std::path::Path, name: &str) -> (String, serde_json::Value) {
    let file = dir.join(name).display().to_string();
    let url = format!("{}/v1/secret/data/foo", ng.addr);
    run(url_cmd(&["-c", "2", "-n", "40", "--output", &file, &url])).assert_code(0);
    let doc = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    (file, doc)
}

/// A hand-edited file whose counts cannot be (more successes than requests, a negative
/// duration) is refused as damaged, naming the field, before anything is printed.
#[test]
fn a_results_file_with_impossible_counts_is_refused_as_damaged() {
    let ng = Nginx::start();
    let dir = tempfile::tempdir().unwrap();
    let (file, doc) = saved_run(&ng, dir.path(), "run.json");
    let requests = u(&doc["stats"]["ops"][0]["requests"]);
    type Edit = fn(&mut serde_json::Value, u64);
    let edits: [(&str, Edit); 2] = [
        ("stats.ops[0] (url): ok ", |d, n| {
            d["stats"]["ops"][0]["ok"] = (n + 8000).into()
        }),
        ("stats.elapsed_s is -1", |d, _| {
            d["stats"]["elapsed_s"] = (-1.0).into()
        }),
    ];
    for (says, edit) in edits {
        let mut bad = doc.clone();
        edit(&mut bad, requests);
        let path = dir.path().join("edited.json");
        std::fs::write(&path, bad.to_string()).unwrap();
        let out = run(url_cmd(&["report", path.to_str().unwrap()]));
        out.assert_code(2);
        assert!(
            out.stderr.contains("edited.json: damaged results: ") && out.stderr.contains(says),
            "{says}: {}",
            out.show()
        );
        assert!(out.stdout.is_empty(), "{}", out.show());
    }
    run(url_cmd(&["report", &file])).assert_code(0);
}

/// `compare A A` compares a run with itself (harmless: nothing is added up) and says so;
/// `report A A` would merge it with itself, counting every request twice, and is refused.
#[test]
fn a_file_given_twice_is_compared_with_a_warning_and_never_merged() {
    let ng = Nginx::start();
    let dir = tempfile::tempdir().unwrap();
    let (file, _) = saved_run(&ng, dir.path(), "a.json");
    let out = run(url_cmd(&["compare", &file, &file]));
    out.assert_code(0);
    assert!(
        out.stderr
            .contains("is given twice: it is compared with itself"),
        "{}",
        out.show()
    );
    let out = run(url_cmd(&["report", &file, &file]));
    out.assert_code(2);
    assert!(out.stderr.contains("is given twice"), "{}", out.show());
}

/// A name with a right-to-left override (a test's name, kept in the file's op_names) is
/// printed with the control escaped, in the text report and in JSON alike.
#[test]
fn a_name_with_bidi_controls_is_printed_escaped() {
    let ng = Nginx::start();
    let dir = tempfile::tempdir().unwrap();
    let (_, mut doc) = saved_run(&ng, dir.path(), "a.json");
    doc["op_names"][0] = "read\u{202e}etirw".into();
    let path = dir.path().join("bidi.json");
    std::fs::write(&path, doc.to_string()).unwrap();
    for format in ["text", "json", "vb-terse"] {
        let out = run(url_cmd(&[
            "report",
            path.to_str().unwrap(),
            "--format",
            format,
        ]));
        out.assert_code(0);
        assert!(!out.stdout.contains('\u{202e}'), "{format}: {}", out.show());
        let shown = if format == "json" {
            out.json()["ops"][0]["name"] == r"read\u{202e}etirw"
        } else {
            out.stdout.contains(r"read\u{202e}etirw")
        };
        assert!(shown, "{format}: {}", out.show());
    }
}
