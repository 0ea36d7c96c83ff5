//! `--source-addrs`: the local addresses connections are bound to, round-robin, so that one
//! machine holds more connections to one server address than the ephemeral port range
//! allows (a TCP connection is unique by both addresses and both ports: each local address
//! brings the whole range again). This module parses the flag, checks that every address is
//! present on the machine, and says before the run when the request cannot be met; the
//! binding itself is `transport::PortSlice`.

use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener};

use crate::error::Cause;

/// Most source addresses one run takes.
pub const MAX_ADDRS: usize = 4096;

/// Parses `A-B` (IPv4, inclusive) or `A,B,C`; no duplicates.
pub fn parse(spec: &str) -> Result<Vec<IpAddr>, Cause> {
    let bad = |why: String| Cause::Said(format!("--source-addrs {spec}: {why}"));
    let mut out: Vec<IpAddr> = Vec::new();
    for part in spec.split(',').map(str::trim) {
        if part.is_empty() {
            return Err(bad("an empty address".into()));
        }
        if let Some((a, b)) = part.split_once('-') {
            let a: Ipv4Addr = a
                .trim()
                .parse()
                .map_err(|_| bad(format!("{a} is not an IPv4 address")))?;
            let b: Ipv4Addr = b
                .trim()
                .parse()
                .map_err(|_| bad(format!("{b} is not an IPv4 address")))?;
            let (lo, hi) = (u32::from(a), u32::from(b));
            if hi < lo {
                return Err(bad(format!("the range {a}-{b} runs backwards")));
            }
            if (hi - lo) as usize >= MAX_ADDRS {
                return Err(bad(format!("more than {MAX_ADDRS} addresses")));
            }
            out.extend((lo..=hi).map(|x| IpAddr::V4(Ipv4Addr::from(x))));
        } else {
            out.push(
                part.parse()
                    .map_err(|_| bad(format!("{part} is not an IP address")))?,
            );
        }
    }
    if out.len() > MAX_ADDRS {
        return Err(bad(format!("more than {MAX_ADDRS} addresses")));
    }
    let mut sorted = out.clone();
    sorted.sort();
    if let Some(w) = sorted.windows(2).find(|w| w[0] == w[1]) {
        return Err(bad(format!("{} is given twice", w[0])));
    }
    Ok(out)
}

/// Every address must be one this machine can bind (assigned to an interface, or in
/// 127.0.0.0/8 on Linux's loopback).
pub fn check_present(addrs: &[IpAddr]) -> Result<(), Cause> {
    let missing: Vec<String> = addrs
        .iter()
        .filter(|ip| TcpListener::bind(SocketAddr::new(**ip, 0)).is_err())
        .map(|ip| ip.to_string())
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(Cause::Said(format!(
            "--source-addrs: {} not present on this machine (no interface has {}): add {} (`ip addr add ADDR/32 dev IFACE`) or leave {} out",
            missing.join(", "),
            if missing.len() == 1 { "it" } else { "them" },
            if missing.len() == 1 { "it" } else { "them" },
            if missing.len() == 1 { "it" } else { "them" },
        )))
    }
}

/// Refuses more connections than the addresses' ports hold, with the numbers.
pub fn check_capacity(connections: u64, addrs: &[IpAddr]) -> Result<(), Cause> {
    let Some((lo, hi)) = crate::sys::ephemeral_ports() else {
        return Ok(());
    };
    let ports = hi.saturating_sub(lo) + 1;
    let room = ports * addrs.len() as u64;
    if connections > room {
        return Err(Cause::Said(format!(
            "-c {connections} needs {connections} local (address, port) pairs to one server address, but {} source address{} x {ports} ephemeral ports ({lo}-{hi}) give {room}: add source addresses (at least {})",
            addrs.len(),
            if addrs.len() == 1 { "" } else { "es" },
            connections.div_ceil(ports)
        )));
    }
    Ok(())
}

/// The flag's text, parsed and checked (none: empty).
pub fn resolve(spec: Option<&str>) -> Result<Vec<IpAddr>, Cause> {
    let Some(spec) = spec else {
        return Ok(Vec::new());
    };
    let addrs = parse(spec)?;
    check_present(&addrs)?;
    Ok(addrs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_and_lists() {
        let v = parse("127.0.0.2-127.0.0.4").unwrap();
        assert_eq!(v.len(), 3);
        assert_eq!(v[2].to_string(), "127.0.0.4");
        assert_eq!(parse("127.0.0.5, 127.0.0.9").unwrap().len(), 2);
        assert!(
            parse("127.0.0.4-127.0.0.2")
                .unwrap_err()
                .to_string()
                .contains("backwards")
        );
        assert!(
            parse("127.0.0.2,127.0.0.2")
                .unwrap_err()
                .to_string()
                .contains("twice")
        );
        assert!(parse("x").unwrap_err().to_string().contains("not an IP"));
        assert!(
            parse("10.0.0.0-10.1.0.0")
                .unwrap_err()
                .to_string()
                .contains("more than")
        );
    }

    #[test]
    fn capacity_is_addresses_times_ports() {
        let (lo, hi) = crate::sys::ephemeral_ports().unwrap();
        let ports = hi - lo + 1;
        let three = parse("127.0.0.2-127.0.0.4").unwrap();
        assert!(check_capacity(ports * 3, &three).is_ok());
        let e = check_capacity(ports * 3 + 1, &three)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(&format!("{}", ports * 3)) && e.contains("3 source addresses"),
            "{e}"
        );
    }

    #[test]
    fn absent_addresses_are_named() {
        assert!(check_present(&parse("127.0.0.2").unwrap()).is_ok());
        // TEST-NET-3, assigned to no machine.
        let e = check_present(&parse("203.0.113.77").unwrap())
            .unwrap_err()
            .to_string();
        assert!(e.contains("203.0.113.77 not present"), "{e}");
    }
}
