//! `--follow-redirects`: where a 307/308 answer may be followed. A `Location` is judged
//! against the nodes of the target (the addresses the user gave): it is followed only to
//! one of them, and only for the same request target (a Vault standby redirects to the
//! active node's `api_addr` with the request's own path and query); anything else is
//! refused with a reason, and nothing is ever sent there. Judging reads the Location
//! bytes in place: no allocation per redirect.

use std::net::{IpAddr, SocketAddr};

use crate::net::target::{Scheme, Target};

/// Redirects one request may follow; the answer after the last one is final.
pub const MAX_HOPS: u8 = 5;

/// What a redirect's `Location` comes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Follow it: send the request again to this node (an index into the target's nodes).
    Node(usize),
    /// Not followed, for this reason (counted as the redirect's status error).
    Refused(&'static str),
}

pub const NO_LOCATION: &str = "redirect without a usable Location (missing, empty, repeated or longer than 256 bytes): not followed";
pub const NOT_HTTP: &str =
    "redirect to a Location that is neither an http(s) URL nor an absolute path: not followed";
pub const OUTSIDE: &str = "redirect to an address outside the target: not followed";
pub const OTHER_PATH: &str = "redirect to another path: not followed";
pub const TOO_MANY: &str = "more than 5 redirects for one request: not followed";

/// One node a redirect may go to.
#[derive(Clone, Debug)]
struct RedirectNode {
    https: bool,
    host: String,
    port: u16,
    addrs: Vec<SocketAddr>,
}

/// The nodes of the target, built once before the run.
#[derive(Clone, Debug, Default)]
pub struct Redirects {
    nodes: Vec<RedirectNode>,
}

impl Redirects {
    /// The nodes a redirect may go to, in node order.
    pub fn new(targets: &[Target]) -> Redirects {
        Redirects {
            nodes: targets
                .iter()
                .map(|t| RedirectNode {
                    https: t.scheme == Scheme::Https,
                    host: t.host.clone(),
                    port: t.port,
                    addrs: t.addrs.clone(),
                })
                .collect(),
        }
    }

    /// Judges `location` (as the answer of node `current` carried it; empty when it was
    /// unusable) for a request whose request-line target is `request_target`.
    pub fn judge(&self, location: &[u8], current: usize, request_target: &[u8]) -> Verdict {
        // A fragment is the client's own business.
        let location = match location.iter().position(|&b| b == b'#') {
            Some(n) => &location[..n],
            None => location,
        };
        if location.is_empty() {
            return Verdict::Refused(NO_LOCATION);
        }
        let (node, path) = if location[0] == b'/' && location.get(1) != Some(&b'/') {
            // An absolute path: the node that answered.
            (current, location)
        } else {
            let (https, rest) = if let Some(r) = strip_prefix_ci(location, b"http://") {
                (false, r)
            } else if let Some(r) = strip_prefix_ci(location, b"https://") {
                (true, r)
            } else if let Some(r) = location.strip_prefix(b"//") {
                // A network-path reference keeps the scheme of the node that answered.
                (self.nodes.get(current).is_some_and(|n| n.https), r)
            } else {
                return Verdict::Refused(NOT_HTTP);
            };
            let end = rest
                .iter()
                .position(|&b| b == b'/' || b == b'?')
                .unwrap_or(rest.len());
            let (authority, path) = rest.split_at(end);
            match self.find(https, authority) {
                Some(n) => (n, path),
                None => return Verdict::Refused(OUTSIDE),
            }
        };
        if !same_target(request_target, path) {
            return Verdict::Refused(OTHER_PATH);
        }
        Verdict::Node(node)
    }

    /// The node `authority` (`host[:port]`, `[v6][:port]`) names under the scheme.
    fn find(&self, https: bool, authority: &[u8]) -> Option<usize> {
        let text = std::str::from_utf8(authority).ok()?;
        if text.contains('@') {
            // User information in a redirect is never followed.
            return None;
        }
        let (host, port) = if let Some(v6) = text.strip_prefix('[') {
            let (h, after) = v6.split_once(']')?;
            (h, after)
        } else {
            match text.rfind(':') {
                Some(n) => (&text[..n], &text[n..]),
                None => (text, ""),
            }
        };
        let port = match port.strip_prefix(':') {
            None if port.is_empty() => {
                if https {
                    443
                } else {
                    80
                }
            }
            Some(p) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => {
                p.parse::<u16>().ok()?
            }
            _ => return None,
        };
        if host.is_empty() {
            return None;
        }
        let ip = host.parse::<IpAddr>().ok();
        self.nodes.iter().position(|n| {
            n.https == https
                && n.port == port
                && (n.host.eq_ignore_ascii_case(host)
                    || ip.is_some_and(|ip| n.addrs.contains(&SocketAddr::new(ip, port))))
        })
    }
}

fn strip_prefix_ci<'a>(s: &'a [u8], prefix: &[u8]) -> Option<&'a [u8]> {
    (s.len() >= prefix.len() && s[..prefix.len()].eq_ignore_ascii_case(prefix))
        .then(|| &s[prefix.len()..])
}

/// Whether a Location's path and query (`""`, `"?q"` or `"/p?q"`) name the request target.
fn same_target(request: &[u8], path: &[u8]) -> bool {
    match path.first() {
        None => request == b"/",
        Some(b'?') => request.first() == Some(&b'/') && &request[1..] == path,
        Some(_) => request == path,
    }
}

/// The request-line target of rendered request bytes (`GET /v1/x HTTP/1.1` gives `/v1/x`).
pub fn request_target(request: &[u8]) -> &[u8] {
    let line_end = request
        .iter()
        .position(|&b| b == b'\r' || b == b'\n')
        .unwrap_or(request.len());
    let mut parts = request[..line_end].split(|&b| b == b' ');
    parts.next();
    parts.next().unwrap_or(&[])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nodes() -> Redirects {
        Redirects::new(&[
            Target::parse("http://127.0.0.1:8200").unwrap(),
            Target::parse("http://localhost:8202").unwrap(),
            Target::parse("https://[::1]:8204").unwrap(),
        ])
    }

    const T: &[u8] = b"/v1/secret/data/s1?version=2";

    #[test]
    fn locations_of_the_target_are_followed() {
        let r = nodes();
        for (loc, current, want) in [
            (
                &b"http://127.0.0.1:8200/v1/secret/data/s1?version=2"[..],
                1,
                0,
            ),
            (b"HTTP://LOCALHOST:8202/v1/secret/data/s1?version=2", 0, 1),
            (b"https://[::1]:8204/v1/secret/data/s1?version=2", 0, 2),
            (
                b"http://127.0.0.1:8200/v1/secret/data/s1?version=2#frag",
                1,
                0,
            ),
            // A path alone, or a network-path reference: the answering node's scheme.
            (b"/v1/secret/data/s1?version=2", 1, 1),
            (b"//127.0.0.1:8200/v1/secret/data/s1?version=2", 1, 0),
            (b"//[::1]:8204/v1/secret/data/s1?version=2", 2, 2),
        ] {
            assert_eq!(
                r.judge(loc, current, T),
                Verdict::Node(want),
                "{}",
                String::from_utf8_lossy(loc)
            );
        }
        // An address the name resolves to is the node too (localhost is 127.0.0.1 or ::1).
        let only = Redirects::new(&[Target::parse("http://localhost:8300").unwrap()]);
        let ip = Target::parse("http://localhost:8300").unwrap().addrs[0];
        let loc = format!("http://{ip}/x");
        assert_eq!(only.judge(loc.as_bytes(), 0, b"/x"), Verdict::Node(0));
        // Default ports by scheme, and the root target.
        let d = Redirects::new(&[
            Target::parse("http://127.0.0.1").unwrap(),
            Target::parse("https://127.0.0.1").unwrap(),
        ]);
        assert_eq!(d.judge(b"http://127.0.0.1", 1, b"/"), Verdict::Node(0));
        assert_eq!(d.judge(b"https://127.0.0.1/", 0, b"/"), Verdict::Node(1));
        assert_eq!(
            d.judge(b"https://127.0.0.1?a=1", 0, b"/?a=1"),
            Verdict::Node(1)
        );
        assert_eq!(d.judge(b"https://127.0.0.1:443", 0, b"/"), Verdict::Node(1));
    }

    #[test]
    fn anything_else_is_refused() {
        let r = nodes();
        for (loc, why) in [
            (&b""[..], NO_LOCATION),
            (b"#only-a-fragment", NO_LOCATION),
            (b"ftp://127.0.0.1:8200/x", NOT_HTTP),
            (b"v1/secret/data/s1", NOT_HTTP),
            (
                b"http://127.0.0.1:8201/v1/secret/data/s1?version=2",
                OUTSIDE,
            ),
            (
                b"http://127.0.0.2:8200/v1/secret/data/s1?version=2",
                OUTSIDE,
            ),
            (
                b"https://127.0.0.1:8200/v1/secret/data/s1?version=2",
                OUTSIDE,
            ),
            (b"http://[::1]:8204/v1/secret/data/s1?version=2", OUTSIDE),
            (b"http://10.0.0.1:8200/v1/secret/data/s1?version=2", OUTSIDE),
            (
                b"http://u:p@127.0.0.1:8200/v1/secret/data/s1?version=2",
                OUTSIDE,
            ),
            (b"http://127.0.0.1:/v1/secret/data/s1?version=2", OUTSIDE),
            (
                b"http://127.0.0.1:82x0/v1/secret/data/s1?version=2",
                OUTSIDE,
            ),
            (
                b"http://127.0.0.1:+8200/v1/secret/data/s1?version=2",
                OUTSIDE,
            ),
            (
                b"http://127.0.0.1:70000/v1/secret/data/s1?version=2",
                OUTSIDE,
            ),
            (b"http://:8200/v1/secret/data/s1?version=2", OUTSIDE),
            (b"http://[::1/v1/secret/data/s1?version=2", OUTSIDE),
            (b"http://\xff:8200/v1", OUTSIDE),
            (
                b"http://127.0.0.1:8200/v1/secret/data/s2?version=2",
                OTHER_PATH,
            ),
            (b"http://127.0.0.1:8200/v1/secret/data/s1", OTHER_PATH),
            (b"http://127.0.0.1:8200", OTHER_PATH),
            (b"http://127.0.0.1:8200?version=2", OTHER_PATH),
            (b"/v1/secret/data/s1?version=3", OTHER_PATH),
        ] {
            assert_eq!(
                r.judge(loc, 0, T),
                Verdict::Refused(why),
                "{}",
                String::from_utf8_lossy(loc)
            );
        }
    }

    #[test]
    fn the_request_target_is_read_from_the_request_line() {
        assert_eq!(
            request_target(b"GET /v1/x?y=1 HTTP/1.1\r\nHost: a\r\n\r\n"),
            b"/v1/x?y=1"
        );
        assert_eq!(request_target(b"POST /a HTTP/1.1\nHost: a\n\n"), b"/a");
        assert_eq!(request_target(b"GET"), b"");
        assert_eq!(request_target(b""), b"");
        assert!(same_target(b"/", b""));
        assert!(!same_target(b"/a", b""));
        assert!(same_target(b"/?q", b"?q"));
        assert!(!same_target(b"x?q", b"?q"));
        assert!(!same_target(b"", b"?q"));
    }
}
