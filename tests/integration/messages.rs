//! The smaller points of what vblast says: clap's tips that point the right way, a URL
//! answered 404 that says why it failed (and what the server said), counts with their nouns in the right number.

use crate::support::nginx::Nginx;
use crate::support::run::run;
use crate::support::vblast::url_cmd;

#[test]
fn clap_tips_point_the_right_way() {
    let out = run(url_cmd(&["--conections", "5", "http://127.0.0.1:9/x"]));
    out.assert_code(2);
    assert!(
        out.stderr
            .contains("a similar argument exists: '--connections'"),
        "{}",
        out.show()
    );
    for (flag, long) in [
        ("-c", "--concurrency"),
        ("-n", "--requests"),
        ("-t", "--threads"),
    ] {
        let out = run(url_cmd(&[flag, "-5", "http://127.0.0.1:9/x"]));
        out.assert_code(2);
        assert!(
            out.stderr
                .contains(&format!("invalid value '-5' for '{long}"))
                && out.stderr.contains("-5 is not a count"),
            "{}",
            out.show()
        );
        assert!(!out.stderr.contains("-- -5"), "{}", out.show());
    }
}

#[test]
fn a_url_answered_404_says_why_and_one_request_is_one() {
    let ng = Nginx::start();
    let out = run(url_cmd(&[
        "-c",
        "1",
        "-n",
        "1",
        &format!("{}/status/404", ng.addr),
    ]));
    out.assert_code(1);
    assert!(
        out.stdout
            .contains("  1 x HTTP 404 Not Found: nothing at this path"),
        "{}",
        out.show()
    );
    // And what the server said: its body's first line.
    assert!(
        out.stdout.contains("; the server said: {\"errors\":[]}"),
        "{}",
        out.show()
    );
    // A 500 with Vault's errors, in JSON too.
    let json = run(url_cmd(&[
        "-c",
        "1",
        "-n",
        "3",
        "--format",
        "json",
        &format!("{}/status/500", ng.addr),
    ]));
    json.assert_code(1);
    assert_eq!(
        json.json()["failed_answers"]["500"],
        "{\"errors\":[\"internal error\"]}",
        "{}",
        json.show()
    );
    assert!(
        out.stdout.contains(", 1 request, 0 ok, 1 failed."),
        "{}",
        out.show()
    );
    assert!(!out.stdout.contains("1 requests"), "{}", out.show());
}
