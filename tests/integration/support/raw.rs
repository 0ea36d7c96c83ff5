//! Fault-injecting plain TCP servers, in-process: one that answers every request with
//! fixed bytes (garbage, a response cut short, anything) or never answers, and one that
//! trickles a response a byte at a time. They serve from background threads for at most
//! 30 s and stop when dropped.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// A TCP server on 127.0.0.1 that answers every connection with fixed bytes
/// (after reading the request head) and then closes. Runs in a background
/// thread for at most 30 s, or until dropped.
pub struct RawServer {
    /// `http://127.0.0.1:PORT`
    pub addr: String,
    pub port: u16,
    stop: Arc<AtomicBool>,
    conns: Arc<AtomicUsize>,
    handle: Option<JoinHandle<()>>,
}

enum RawMode {
    Reply(Vec<u8>),
    Hang,
}

impl RawServer {
    /// Answers every request with `hello there\r\n\r\n` (not HTTP), then closes.
    pub fn garbage() -> RawServer {
        Self::reply(b"hello there\r\n\r\n".to_vec())
    }

    /// Sends a response head promising 100 bytes, 3 bytes of body, then closes.
    pub fn close_mid_response() -> RawServer {
        Self::reply(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nabc".to_vec())
    }

    /// Answers every request with `bytes`, then closes.
    pub fn reply(bytes: Vec<u8>) -> RawServer {
        Self::spawn(RawMode::Reply(bytes))
    }

    /// Accepts connections and never answers (holds them until dropped).
    pub fn silent() -> RawServer {
        Self::spawn(RawMode::Hang)
    }

    /// Number of connections accepted so far.
    pub fn connections(&self) -> usize {
        self.conns.load(Ordering::SeqCst)
    }

    fn spawn(mode: RawMode) -> RawServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let conns = Arc::new(AtomicUsize::new(0));
        let mode = Arc::new(mode);
        let (stop2, conns2) = (stop.clone(), conns.clone());
        let handle = thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(30);
            let mut workers = Vec::new();
            while !stop2.load(Ordering::SeqCst) && Instant::now() < deadline {
                match listener.accept() {
                    Ok((stream, _)) => {
                        conns2.fetch_add(1, Ordering::SeqCst);
                        let mode = mode.clone();
                        let stop3 = stop2.clone();
                        workers.push(thread::spawn(move || {
                            raw_handle(stream, &mode, &stop3, deadline)
                        }));
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        thread::sleep(Duration::from_millis(5));
                    }
                    Err(_) => thread::sleep(Duration::from_millis(5)),
                }
            }
            stop2.store(true, Ordering::SeqCst);
            for w in workers {
                let _ = w.join();
            }
        });
        RawServer {
            addr: format!("http://127.0.0.1:{port}"),
            port,
            stop,
            conns,
            handle: Some(handle),
        }
    }
}

fn raw_handle(mut s: TcpStream, mode: &RawMode, stop: &AtomicBool, deadline: Instant) {
    let _ = s.set_nonblocking(false);
    let _ = s.set_read_timeout(Some(Duration::from_millis(100)));
    let _ = s.set_nodelay(true);
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    // Serve requests until the peer closes (a Reply closes after one).
    loop {
        // Read one request head (best effort).
        let head_deadline = Instant::now() + Duration::from_secs(5);
        loop {
            if stop.load(Ordering::SeqCst) || Instant::now() > deadline {
                return;
            }
            if buf.windows(4).any(|w| w == b"\r\n\r\n") {
                break;
            }
            match s.read(&mut chunk) {
                Ok(0) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
                Err(e)
                    if e.kind() == io::ErrorKind::WouldBlock
                        || e.kind() == io::ErrorKind::TimedOut =>
                {
                    if let RawMode::Reply(_) = mode
                        && Instant::now() > head_deadline
                    {
                        break;
                    }
                }
                Err(_) => return,
            }
        }
        match mode {
            RawMode::Reply(bytes) => {
                let _ = s.write_all(bytes);
                let _ = s.flush();
                let _ = s.shutdown(Shutdown::Write);
                // Drain briefly so the close is a FIN, not an RST.
                let end = Instant::now() + Duration::from_millis(200);
                while Instant::now() < end {
                    match s.read(&mut chunk) {
                        Ok(0) => break,
                        Ok(_) => {}
                        Err(e)
                            if e.kind() == io::ErrorKind::WouldBlock
                                || e.kind() == io::ErrorKind::TimedOut => {}
                        Err(_) => break,
                    }
                }
                return;
            }
            RawMode::Hang => {
                // Hold the connection, discarding input.
                buf.clear();
            }
        }
    }
}

impl Drop for RawServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// A plain HTTP server that answers every connection with `bytes`, one byte every `gap`
/// (a server that keeps each read short of any per-read timeout), for at most 30 s.
pub struct TrickleServer {
    /// `http://127.0.0.1:PORT`
    pub addr: String,
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl TrickleServer {
    pub fn start(bytes: Vec<u8>, gap: Duration) -> TrickleServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let stop2 = stop.clone();
        let bytes = Arc::new(bytes);
        let handle = thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(30);
            let mut workers = Vec::new();
            while !stop2.load(Ordering::SeqCst) && Instant::now() < deadline {
                match listener.accept() {
                    Ok((mut sock, _)) => {
                        let (stop, bytes) = (stop2.clone(), bytes.clone());
                        workers.push(thread::spawn(move || {
                            let _ = sock.set_nonblocking(false);
                            let _ = sock.set_nodelay(true);
                            for b in bytes.iter() {
                                if stop.load(Ordering::SeqCst) || Instant::now() > deadline {
                                    return;
                                }
                                if sock.write_all(&[*b]).is_err() {
                                    return;
                                }
                                thread::sleep(gap);
                            }
                        }));
                    }
                    Err(_) => thread::sleep(Duration::from_millis(5)),
                }
            }
            stop2.store(true, Ordering::SeqCst);
            for w in workers {
                let _ = w.join();
            }
        });
        TrickleServer {
            addr: format!("http://127.0.0.1:{port}"),
            stop,
            handle: Some(handle),
        }
    }
}

impl Drop for TrickleServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}
