//! `--source-addrs`: connections come from every given local address in turn (nginx logs
//! each client address), and requests that cannot be met are refused before the run with
//! the numbers; an address the machine does not have is one clear message.

use std::collections::BTreeMap;

use crate::support;
use crate::support::nginx::Nginx;
use crate::support::run::run;
use crate::support::vblast::url_cmd;

#[test]
fn connections_come_from_every_source_address() {
    let ng = Nginx::with_extra("access_log logs/access.log;");
    let url = format!("{}/v1/secret/data/foo", ng.addr);
    let out = run(url_cmd(&[
        "-c",
        "60",
        "-n",
        "600",
        "-t",
        "2",
        "--source-addrs",
        "127.0.0.2-127.0.0.4",
        "--format",
        "json",
        &url,
    ]));
    out.assert_code(0);
    assert_eq!(support::figures::u(&out.json()["ok"]), 600);
    let log = std::fs::read_to_string(ng.prefix().join("logs/access.log")).unwrap();
    let mut by_addr: BTreeMap<&str, u64> = BTreeMap::new();
    for line in log.lines() {
        *by_addr
            .entry(line.split_whitespace().next().unwrap_or(""))
            .or_default() += 1;
    }
    let addrs: Vec<&str> = by_addr.keys().copied().collect();
    assert_eq!(
        addrs,
        ["127.0.0.2", "127.0.0.3", "127.0.0.4"],
        "{by_addr:?}"
    );
    assert_eq!(by_addr.values().sum::<u64>(), 600);
}

#[test]
fn requests_that_cannot_be_met_are_refused_with_the_numbers() {
    let url = "http://127.0.0.1:9/x";
    let cases: &[(&[&str], &[&str])] = &[
        (
            &["-c", "60000", "--source-addrs", "127.0.0.2"],
            &[
                "-c 60000",
                "1 source address x",
                "add source addresses (at least 3)",
            ],
        ),
        (
            &["-c", "10", "--source-addrs", "203.0.113.77,127.0.0.2"],
            &["203.0.113.77 not present on this machine"],
        ),
        (
            &["-c", "10", "--source-addrs", "127.0.0.9-127.0.0.1"],
            &["backwards"],
        ),
    ];
    for (args, needles) in cases {
        let mut all = vec!["-n", "1"];
        all.extend_from_slice(args);
        all.push(url);
        let out = run(url_cmd(&all));
        out.assert_code(2);
        for needle in *needles {
            assert!(
                out.stderr.contains(needle),
                "{args:?}: {needle:?} not in {}",
                out.stderr
            );
        }
        assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    }
}
