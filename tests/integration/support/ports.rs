//! Ports for the servers the tests start: free ones on 127.0.0.1 below the ephemeral
//! range (single, adjacent pairs for a dev server, runs for a cluster's nodes), and waiting
//! for a port to accept connections.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::thread;
use std::time::{Duration, Instant};

/// Servers in tests listen below the ephemeral range (32768-60999 here), where every
/// client's outgoing connections take their local ports: a listener port picked from that
/// range can be taken by a load run's connection a moment later.
const LISTEN_PORTS: std::ops::Range<u16> = 10_000..32_000;

fn random_listen_port() -> u16 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0),
    );
    let span = (LISTEN_PORTS.end - LISTEN_PORTS.start) as u64;
    LISTEN_PORTS.start + (h.finish() % span) as u16
}

/// A currently free TCP port on 127.0.0.1, outside the ephemeral range.
pub fn free_port() -> u16 {
    for _ in 0..1000 {
        let p = random_listen_port();
        if TcpListener::bind(("127.0.0.1", p)).is_ok() {
            return p;
        }
    }
    panic!("could not find a free port on 127.0.0.1 in {LISTEN_PORTS:?}");
}

/// A free port P such that P+1 is free too (the OpenBao dev server also
/// binds its cluster listener on port+1).
pub fn free_port_pair() -> u16 {
    for _ in 0..1000 {
        let p = random_listen_port();
        let Ok(_a) = TcpListener::bind(("127.0.0.1", p)) else {
            continue;
        };
        if TcpListener::bind(("127.0.0.1", p + 1)).is_ok() {
            return p;
        }
    }
    panic!("could not find two adjacent free ports on 127.0.0.1");
}

pub fn wait_for_port(port: u16, deadline: Instant) -> bool {
    let sa: SocketAddr = ([127, 0, 0, 1], port).into();
    while Instant::now() < deadline {
        if TcpStream::connect_timeout(&sa, Duration::from_millis(200)).is_ok() {
            return true;
        }
        thread::sleep(Duration::from_millis(20));
    }
    false
}

/// `count` ports from P on, every one of them free (nodes take P, P+2, ...; their cluster
/// listeners P+1, P+3, ...).
pub fn free_port_run(count: u16) -> u16 {
    for _ in 0..1000 {
        let p = random_listen_port();
        if p.checked_add(count).is_none_or(|e| e >= LISTEN_PORTS.end) {
            continue;
        }
        let held: Vec<_> = (p..p + count)
            .map_while(|q| TcpListener::bind(("127.0.0.1", q)).ok())
            .collect();
        if held.len() == count as usize {
            return p;
        }
    }
    panic!("could not find {count} consecutive free ports on 127.0.0.1");
}
