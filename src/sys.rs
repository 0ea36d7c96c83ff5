//! What the operating system allows: open-file limits and the ephemeral port range.

/// Current and hard RLIMIT_NOFILE.
pub fn nofile() -> (u64, u64) {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we pass.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) } != 0 {
        return (1024, 1024);
    }
    (r.rlim_cur, r.rlim_max)
}

/// Raises the soft RLIMIT_NOFILE to the hard limit; returns the limit now in force.
pub fn raise_nofile() -> u64 {
    let (cur, max) = nofile();
    if cur < max {
        let r = libc::rlimit {
            rlim_cur: max,
            rlim_max: max,
        };
        // SAFETY: setrlimit reads the struct we pass.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &r) } == 0 {
            return max;
        }
    }
    cur
}

/// Local ports the kernel hands out for outgoing connections.
pub fn ephemeral_ports() -> Option<(u64, u64)> {
    let text = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").ok()?;
    let mut it = text.split_whitespace().map(|v| v.parse::<u64>().ok());
    Some((it.next()??, it.next()??))
}
