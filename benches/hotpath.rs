//! Micro-benchmarks of the per-request CPU work that does not touch the network:
//! rendering a request template and parsing a kv-shaped response.
//!
//! Run: `cargo bench --bench hotpath` (env HOTPATH_MS = time per sample, default 300;
//! HOTPATH_SAMPLES = samples per benchmark, default 5). Prints ns per op (median and best
//! of the samples); nothing is asserted.
//!
//! Both come from the library, as the engine uses them.

use std::hint::black_box;
use std::time::{Duration, Instant};

use vblast::net::http::{Progress, ResponseParser};
use vblast::template::{Common, Piece, RequestSpec, Rng, Template};

/// The body the bench nginx serves (a kv-v2 read, ~148 bytes).
const KV_BODY: &str = r#"{"request_id":"0b6f5a3e-1c1e-4f3a-9d53-5a3b8f3c2a11","data":{"data":{"value":"bar"},"metadata":{"version":1}},"lease_duration":0,"renewable":false}"#;

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Runs `f` in batches until `per_sample` has passed, `samples` times; returns ns/op
/// (median, best).
fn measure(samples: u64, per_sample: Duration, mut f: impl FnMut()) -> (f64, f64) {
    // Warm up and size a batch to ~1 ms.
    let mut batch = 1u64;
    loop {
        let t = Instant::now();
        for _ in 0..batch {
            f();
        }
        if t.elapsed() >= Duration::from_millis(1) || batch >= 1 << 30 {
            break;
        }
        batch *= 2;
    }
    let mut results = Vec::new();
    for _ in 0..samples {
        let start = Instant::now();
        let mut ops = 0u64;
        while start.elapsed() < per_sample {
            for _ in 0..batch {
                f();
            }
            ops += batch;
        }
        results.push(start.elapsed().as_nanos() as f64 / ops as f64);
    }
    results.sort_by(|a, b| a.total_cmp(b));
    (results[results.len() / 2], results[0])
}

fn common() -> Common {
    Common {
        host: "127.0.0.1:8200".into(),
        token: Some("hvs.CAESIJ4Z0b6f5a3e1c1e4f3a9d535a3b8f3c2a11".into()),
        namespace: None,
        close: false,
    }
}

fn response(head: &str) -> Vec<u8> {
    let mut r = head
        .replace("{LEN}", &KV_BODY.len().to_string())
        .into_bytes();
    r.extend_from_slice(KV_BODY.as_bytes());
    r
}

fn main() {
    let samples = env_u64("HOTPATH_SAMPLES", 5).max(1);
    let per_sample = Duration::from_millis(env_u64("HOTPATH_MS", 300).max(1));
    let report = |name: &str, (median, best): (f64, f64)| {
        println!("{name:<48} {median:>9.1} ns/op (best {best:.1})");
    };

    // kv-read: GET /v1/<mount>/data/s<index>, with the token header.
    let read = RequestSpec {
        method: "GET".into(),
        path: vec![
            Piece::lit("/v1/vblast-0a1b2c3d/data/s"),
            Piece::Index { count: 1000 },
        ],
        headers: vec![],
        body: None,
        captured_headers: vec![],
    };
    let mut t = Template::build(&read, &common());
    let mut rng = Rng::new(42);
    report(
        &format!("template render kv-read ({} B)", t.render(&mut rng).len()),
        measure(samples, per_sample, || {
            black_box(t.render(&mut rng).len());
        }),
    );

    // kv-write: POST with a 100-character random hex value in the body.
    let write = RequestSpec {
        method: "POST".into(),
        path: vec![
            Piece::lit("/v1/vblast-0a1b2c3d/data/s"),
            Piece::Index { count: 1000 },
        ],
        headers: vec![("Content-Type".into(), "application/json".into())],
        body: Some(vec![
            Piece::lit(r#"{"data":{"value":""#),
            Piece::Hex { width: 100 },
            Piece::lit(r#""}}"#),
        ]),
        captured_headers: vec![],
    };
    let mut t = Template::build(&write, &common());
    report(
        &format!("template render kv-write ({} B)", t.render(&mut rng).len()),
        measure(samples, per_sample, || {
            black_box(t.render(&mut rng).len());
        }),
    );

    let nginx = response(
        "HTTP/1.1 200 OK\r\nServer: nginx\r\nDate: Sun, 30 Nov 2026 04:30:00 GMT\r\n\
         Content-Type: application/json\r\nContent-Length: {LEN}\r\nConnection: keep-alive\r\n\r\n",
    );
    let bao = response(
        "HTTP/1.1 200 OK\r\nCache-Control: no-store\r\nContent-Type: application/json\r\n\
         Strict-Transport-Security: max-age=31536000; includeSubDomains\r\n\
         Date: Sun, 30 Nov 2026 04:30:00 GMT\r\nContent-Length: {LEN}\r\n\r\n",
    );
    let mut p = ResponseParser::new();
    let check = |p: &mut ResponseParser, data: &[u8]| {
        p.reset(false, false);
        matches!(
            p.feed(data),
            Ok(Progress::Done {
                status: 200,
                extra: false,
                ..
            })
        )
    };
    assert!(
        check(&mut p, &nginx) && check(&mut p, &bao),
        "parser rejects the sample responses"
    );

    for (name, resp) in [("nginx", &nginx), ("openbao", &bao)] {
        report(
            &format!("parse {name} response, one read ({} B)", resp.len()),
            measure(samples, per_sample, || {
                p.reset(false, false);
                black_box(p.feed(black_box(resp)).ok());
            }),
        );
    }
    // Split inside the head: the parser buffers the first part.
    let cut = 40;
    report(
        &format!("parse nginx response, head split at {cut}"),
        measure(samples, per_sample, || {
            p.reset(false, false);
            black_box(p.feed(black_box(&nginx[..cut])).ok());
            black_box(p.feed(black_box(&nginx[cut..])).ok());
        }),
    );
    report(
        "parse nginx response, capturing the body",
        measure(samples, per_sample, || {
            p.reset(true, false);
            black_box(p.feed(black_box(&nginx)).ok());
        }),
    );
}
