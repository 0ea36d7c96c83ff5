//! URL mode: the one request given on the command line (method, headers, body), as an
//! `Operation`, like ab's, wrk's and oha's.

use crate::config::scenario::{Body, UrlRequest};
use crate::error::Cause;
use crate::net::target::Target;
use crate::template::{Piece, RequestSpec};
use crate::workload::Operation;

/// Largest request body taken from a file (Vault refuses requests over 32 MiB).
const MAX_BODY_FILE: u64 = 64 * 1024 * 1024;

/// Reads `-p FILE`, refusing what is too large (or endless, like /dev/zero) to send.
fn read_body_file(p: &std::path::Path) -> Result<Vec<u8>, Cause> {
    use std::io::Read;
    let mut body = Vec::new();
    std::fs::File::open(p)
        .and_then(|f| f.take(MAX_BODY_FILE + 1).read_to_end(&mut body))
        .map_err(|e| Cause::io(format!("cannot read body file {}", p.display()), e))?;
    if body.len() as u64 > MAX_BODY_FILE {
        return Err(Cause::Said(format!(
            "body file {} is larger than {} MiB",
            p.display(),
            MAX_BODY_FILE >> 20
        )));
    }
    Ok(body)
}

/// The request of URL mode: method, headers, optional body.
pub fn operation(req: &UrlRequest, target: &Target) -> Result<Operation, Cause> {
    let mut headers = req.headers.clone();
    let body = match &req.body {
        Some(Body::Inline(d)) => Some(d.clone().into_bytes()),
        Some(Body::File(p)) => Some(read_body_file(p)?),
        None => None,
    };
    let mut method = req.method.to_ascii_uppercase();
    if method == "GET" && body.is_some() && req.method == "GET" {
        // ab -p posts; an explicit body with the default method means POST.
        method = "POST".into();
    }
    if method.is_empty() || !method.bytes().all(|b| b.is_ascii_alphabetic()) {
        return Err(Cause::Said(format!("method '{}' is not valid", req.method)));
    }
    if let Some(ct) = &req.content_type {
        headers.push(("Content-Type".into(), ct.clone()));
    } else if body.is_some()
        && !headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case("content-type"))
    {
        headers.push(("Content-Type".into(), "application/json".into()));
    }
    Ok(Operation::new(
        "url",
        RequestSpec {
            method,
            path: vec![Piece::lit(&target.path)],
            headers,
            body: body.map(|b| vec![Piece::Lit(b)]),
            captured_headers: vec![],
        },
    ))
}
