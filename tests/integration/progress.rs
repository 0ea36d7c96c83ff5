//! `--progress` over worker processes: a run spread over several processes (a low
//! `VBLAST_PROCESS_FDS`) against nginx prints one plain progress line per second on stderr,
//! fed by the workers' `progress` messages; the counts rise and never pass the report's.

use crate::support::figures::u;
use crate::support::nginx::Nginx;
use crate::support::run::run;
use crate::support::vblast::Args;

#[test]
fn progress_lines_from_worker_processes() {
    let ng = Nginx::start();
    let url = format!("{}/v1/secret/data/foo", ng.addr);
    let mut cmd = Args::default()
        .c(300)
        .z("3500ms")
        .extra(&["--progress"])
        .json()
        .url(&url);
    cmd.env("VBLAST_PROCESS_FDS", "150");
    let out = run(cmd);
    out.assert_code(0);
    let j = out.json();
    assert!(u(&j["run"]["processes"]) >= 2, "{:#}", j["run"]);
    let counts: Vec<u64> = out
        .stderr
        .lines()
        .filter(|l| l.starts_with("progress: "))
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            assert!(
                f.len() == 8 && f[1].ends_with('s') && f[3] == "requests" && f[7] == "failed",
                "{l}"
            );
            f[2].parse().unwrap()
        })
        .collect();
    assert!(counts.len() >= 2, "{}", out.show());
    assert!(
        counts.windows(2).all(|w| w[0] <= w[1]),
        "counts fell: {counts:?}"
    );
    assert!(*counts.last().unwrap() > 0, "{counts:?}");
    assert!(
        *counts.last().unwrap() <= u(&j["requests"]),
        "{counts:?} against {}",
        j["requests"]
    );
    assert!(
        !out.stderr.contains('\r'),
        "plain lines, no terminal redraws"
    );

    // Without --progress, the workers send nothing to show.
    let mut cmd = Args::default().c(300).z("2s").json().url(&url);
    cmd.env("VBLAST_PROCESS_FDS", "150");
    let out = run(cmd);
    out.assert_code(0);
    assert!(u(&out.json()["run"]["processes"]) >= 2);
    assert!(!out.stderr.contains("progress"), "{}", out.show());
}
