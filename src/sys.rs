//! What the operating system allows and says: open-file limits, the ephemeral port range,
//! the calling thread's CPU time, and its sentence for an error number.

/// The CPU time the calling thread has used (user and system).
pub fn thread_cpu() -> std::time::Duration {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the struct we pass.
    if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) } != 0 {
        return std::time::Duration::ZERO;
    }
    std::time::Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

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

/// The operating system's sentence for error number `code` ("Connection refused").
pub fn strerror(code: i32) -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the XSI strerror_r writes a NUL-terminated string of at most buf.len() bytes.
    let rc = unsafe { libc::strerror_r(code, buf.as_mut_ptr().cast(), buf.len()) };
    let end = buf.iter().position(|&b| b == 0).unwrap_or(0);
    if rc != 0 || end == 0 {
        return format!("error {code}");
    }
    String::from_utf8_lossy(&buf[..end]).into_owned()
}
