//! Every request carries the Host header of the node it is sent to (a proxy or load
//! balancer in front of each node routes by it): over `--nodes all` and `each`, after a
//! failover moves `--nodes active` to another node, and on a redirect's hop to the
//! Location's node; a single-address run sends exactly the bytes it always did. And a
//! request re-sent after a redirect is the same request: jwt-login's JWT (a pool item
//! taken in turn) is not replaced by the next one. Against nginx nodes on 127.0.0.1,
//! 127.0.0.2 and 127.0.0.3 logging the Host they were sent, and raw socket nodes that
//! keep every request's bytes beside a real OpenBao.

use std::fs;
use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use crate::support;
use crate::support::figures::u;
use crate::support::nginx::Nginx;
use crate::support::openbao::OpenBao;
use crate::support::run::{run, spawn};
use crate::support::vblast::env_cmd;

const HEALTH: &str = r#"{"initialized":true,"sealed":false,"standby":false,"cluster_id":"host-test","cluster_name":"nginx"}"#;

/// An nginx node of a fake cluster, at `http://IP:PORT`. It logs each request as
/// `Host|IP:PORT|METHOD URI` (the Host header as sent, the address it came in on);
/// `sys/health` answers 200 (active), or 429 (standby) while its flag file exists;
/// `sys/seal-status` answers 200, or what `seal_status` says.
struct Node {
    _ng: Nginx,
    /// `host:port` as the URL names it (what the Host header must say).
    host: String,
    addr: String,
    log: PathBuf,
    flag: PathBuf,
}

impl Node {
    fn start(dir: &Path, ip: &str, seal_status: &str) -> Node {
        let port = support::ports::free_port();
        let host = format!("{ip}:{port}");
        let log = dir.join(format!("{ip}-{port}.log"));
        let flag = dir.join(format!("{ip}-{port}.standby"));
        let ng = Nginx::with_http_extra(
            "log_format hosts '$http_host|$server_addr:$server_port|$request_method $request_uri';",
            &format!(
                "listen {host};
    access_log {log} hosts;
    location = /v1/sys/health {{
        if (-f {flag}) {{ return 429 '{standby}'; }}
        return 200 '{HEALTH}';
    }}
    location = /v1/sys/seal-status {{ {seal_status} }}",
                log = log.display(),
                flag = flag.display(),
                standby = HEALTH.replace("\"standby\":false", "\"standby\":true"),
            ),
        );
        Node {
            _ng: ng,
            addr: format!("http://{host}"),
            host,
            log,
            flag,
        }
    }

    fn standby(&self, yes: bool) {
        if yes {
            fs::write(&self.flag, "").unwrap();
        } else {
            let _ = fs::remove_file(&self.flag);
        }
    }

    /// The logged requests: (Host header, address it came in on, request line). Only
    /// whole lines: read while nginx is still writing, the file can end in part of one.
    fn requests(&self) -> Vec<(String, String, String)> {
        let text = fs::read_to_string(&self.log).unwrap_or_default();
        let whole = text.rfind('\n').map_or("", |end| &text[..=end]);
        whole
            .lines()
            .map(|l| {
                let mut f = l.splitn(3, '|').map(str::to_string);
                let mut next = || f.next().unwrap_or_default();
                (next(), next(), next())
            })
            .collect()
    }

    /// The load's requests this node got; fails the test when one of all the requests it
    /// got (health probes too) carried another Host than its own.
    fn load_with_own_host(&self, what: &str) -> u64 {
        let got = self.requests();
        for (host, at, line) in &got {
            assert_eq!(at, &self.host, "{what}: {line} came in elsewhere");
            assert_eq!(
                host, &self.host,
                "{what}: {line} sent to {} carried Host {host}",
                self.host
            );
        }
        got.iter()
            .filter(|(_, _, l)| l == "GET /v1/sys/seal-status")
            .count() as u64
    }
}

const OK: &str = "return 200 '{\"sealed\":false}';";

/// 32 connections in processes of 16 descriptors' room: two worker processes, which
/// build their requests from the plan they are sent (src/orchestrate/).
const WORKERS: [&str; 4] = ["-t", "2", "-c", "32"];
const WORKER_FDS: (&str, &str) = ("VBLAST_PROCESS_FDS", "116");

fn seal_status_run(nodes: &[&Node], extra: &[&str]) -> support::run::Out {
    seal_status_run_env(nodes, extra, &[])
}

fn seal_status_run_env(nodes: &[&Node], extra: &[&str], env: &[(&str, &str)]) -> support::run::Out {
    let mut args = Vec::new();
    for n in nodes {
        args.extend_from_slice(&["--address", n.addr.as_str()]);
    }
    if !extra.contains(&"-t") {
        args.extend_from_slice(&["-t", "1"]);
    }
    args.extend_from_slice(&["--op", "seal-status", "--format", "json", "--allow-errors"]);
    args.extend_from_slice(extra);
    let mut env = env.to_vec();
    env.push(("VAULT_TOKEN", "test-token"));
    run(env_cmd(&args, &env))
}

#[test]
fn each_node_gets_its_own_host_over_all_and_each() {
    let dir = tempfile::tempdir().unwrap();
    let nodes: Vec<Node> = ["127.0.0.1", "127.0.0.2", "127.0.0.3"]
        .iter()
        .map(|ip| Node::start(dir.path(), ip, OK))
        .collect();
    nodes[1].standby(true);
    nodes[2].standby(true);
    let all: Vec<&Node> = nodes.iter().collect();
    let out = seal_status_run(&all, &["--nodes", "all", "-c", "6", "-n", "600"]);
    out.assert_code(0);
    let v = out.json();
    assert_eq!(
        (u(&v["requests"]), u(&v["ok"])),
        (600, 600),
        "{}",
        out.show()
    );
    let per: Vec<u64> = nodes
        .iter()
        .map(|n| n.load_with_own_host("--nodes all"))
        .collect();
    assert!(per.iter().all(|&n| n > 0), "{per:?}\n{}", out.show());
    assert_eq!(per.iter().sum::<u64>(), 600, "{per:?}");

    let out = seal_status_run(&all, &["--nodes", "each", "-c", "2", "-n", "100"]);
    out.assert_code(0);
    let per2: Vec<u64> = nodes
        .iter()
        .map(|n| n.load_with_own_host("--nodes each"))
        .collect();
    let each: Vec<u64> = per2.iter().zip(&per).map(|(b, a)| b - a).collect();
    assert_eq!(each, [100, 100, 100], "{}", out.show());

    // Worker processes: the same.
    let mut extra = vec!["--nodes", "all", "-n", "960"];
    extra.extend(WORKERS);
    let out = seal_status_run_env(&all, &extra, &[WORKER_FDS]);
    out.assert_code(0);
    let v = out.json();
    assert!(u(&v["run"]["processes"]) >= 2, "{}", out.show());
    assert_eq!(u(&v["ok"]), 960, "{}", out.show());
    let per3: Vec<u64> = nodes
        .iter()
        .map(|n| n.load_with_own_host("--nodes all, worker processes"))
        .collect();
    let all3: Vec<u64> = per3.iter().zip(&per2).map(|(b, a)| b - a).collect();
    assert!(all3.iter().all(|&n| n > 0), "{all3:?}");
    assert_eq!(all3.iter().sum::<u64>(), 960, "{all3:?}");
}

#[test]
fn a_redirect_hop_carries_the_host_of_the_locations_node() {
    let dir = tempfile::tempdir().unwrap();
    let active = Node::start(dir.path(), "127.0.0.3", OK);
    // The standby redirects to the active node, as a Vault standby without forwarding.
    let standby = Node::start(
        dir.path(),
        "127.0.0.2",
        &format!("return 307 {}/v1/sys/seal-status;", active.addr),
    );
    standby.standby(true);
    // The standby first: the plan's first node is the one whose Host must not leak.
    let out = seal_status_run(
        &[&standby, &active],
        &[
            "--nodes",
            "all",
            "--follow-redirects",
            "-c",
            "4",
            "-n",
            "200",
        ],
    );
    out.assert_code(0);
    let v = out.json();
    assert_eq!(
        (u(&v["requests"]), u(&v["ok"])),
        (200, 200),
        "{}",
        out.show()
    );
    let redirected = standby.load_with_own_host("standby");
    assert!(redirected > 0, "{}", out.show());
    assert_eq!(u(&v["followed"]), redirected, "{}", out.show());
    // Its own connections' requests and every hop's: all with the active node's Host.
    assert_eq!(active.load_with_own_host("active"), 200, "{}", out.show());
}

#[test]
fn after_a_failover_the_new_active_node_gets_its_own_host() {
    failover(&["-t", "1", "-c", "4"], &[]);
}

#[test]
fn worker_processes_give_the_new_active_node_its_own_host() {
    let out = failover(&WORKERS, &[WORKER_FDS]);
    assert!(u(&out.json()["run"]["processes"]) >= 2, "{}", out.show());
}

/// `--nodes active` over two nginx nodes; the second becomes the active one mid-run.
fn failover(extra: &[&str], env: &[(&str, &str)]) -> support::run::Out {
    let dir = tempfile::tempdir().unwrap();
    let first = Node::start(dir.path(), "127.0.0.1", OK);
    let second = Node::start(dir.path(), "127.0.0.2", OK);
    second.standby(true);
    let mut args = vec![
        "--address",
        first.addr.as_str(),
        "--address",
        second.addr.as_str(),
        "--nodes",
        "active",
        "-z",
        "3s",
        "--op",
        "seal-status",
        "--format",
        "json",
        "--allow-errors",
    ];
    args.extend_from_slice(extra);
    let mut env = env.to_vec();
    env.push(("VAULT_TOKEN", "test-token"));
    let running = spawn(env_cmd(&args, &env));
    // The watcher reads sys/health every 100 ms: the second node becomes the active one.
    let deadline = Instant::now() + Duration::from_secs(20);
    while first.load_with_own_host("before") == 0 {
        assert!(Instant::now() < deadline, "no load reached the first node");
        thread::sleep(Duration::from_millis(20));
    }
    thread::sleep(Duration::from_millis(500));
    first.standby(true);
    second.standby(false);
    let out = running.finish(support::run::WATCHDOG);
    out.assert_code(0);
    let moved = second.load_with_own_host("the new active node");
    assert!(moved > 0, "the load did not move: {}", out.show());
    assert!(first.load_with_own_host("the old active node") > 0);
    out
}

/// A node of raw sockets that keeps every request's bytes (head and body), in order, and
/// answers from `answer(request, nth on its connection)`. Serves for 30 s at most.
struct Capture {
    addr: String,
    host: String,
    seen: Arc<Mutex<Vec<Vec<u8>>>>,
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

type Answer = dyn Fn(&[u8], usize) -> Vec<u8> + Send + Sync;

impl Capture {
    fn start(ip: &str, answer: Arc<Answer>) -> Capture {
        let listener = TcpListener::bind((ip, 0)).unwrap();
        listener.set_nonblocking(true).unwrap();
        let host = listener.local_addr().unwrap().to_string();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (seen2, stop2) = (seen.clone(), stop.clone());
        let handle = thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(30);
            let mut workers = Vec::new();
            while !stop2.load(Ordering::SeqCst) && Instant::now() < deadline {
                match listener.accept() {
                    Ok((s, _)) => {
                        let (seen, stop, answer) = (seen2.clone(), stop2.clone(), answer.clone());
                        workers.push(thread::spawn(move || {
                            serve(s, &seen, &stop, deadline, &*answer)
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
        Capture {
            addr: format!("http://{host}"),
            host,
            seen,
            stop,
            handle: Some(handle),
        }
    }

    /// The requests seen so far whose request line starts with `prefix`.
    fn requests(&self, prefix: &str) -> Vec<String> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .map(|r| String::from_utf8_lossy(r).into_owned())
            .filter(|r| r.starts_with(prefix))
            .collect()
    }
}

impl Drop for Capture {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// Reads requests off `s` (keep-alive) until it closes, keeping each and answering it.
fn serve(
    mut s: TcpStream,
    seen: &Mutex<Vec<Vec<u8>>>,
    stop: &AtomicBool,
    deadline: Instant,
    answer: &Answer,
) {
    let _ = s.set_nonblocking(false);
    let _ = s.set_read_timeout(Some(Duration::from_millis(100)));
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let mut nth = 0;
    loop {
        let whole = buf.windows(4).position(|w| w == b"\r\n\r\n").and_then(|h| {
            let head = String::from_utf8_lossy(&buf[..h]).to_ascii_lowercase();
            let len = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .map_or(0, |v| v.trim().parse::<usize>().unwrap_or(0));
            (buf.len() >= h + 4 + len).then_some(h + 4 + len)
        });
        if let Some(end) = whole {
            let req: Vec<u8> = buf.drain(..end).collect();
            seen.lock().unwrap().push(req.clone());
            if s.write_all(&answer(&req, nth)).is_err() {
                return;
            }
            nth += 1;
            continue;
        }
        if stop.load(Ordering::SeqCst) || Instant::now() > deadline {
            return;
        }
        match s.read(&mut chunk) {
            Ok(0) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return,
        }
    }
}

fn response(status: &str, headers: &str, body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 {status}\r\n{headers}Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

#[test]
fn a_single_address_run_sends_the_same_bytes_as_ever() {
    let node = Capture::start(
        "127.0.0.1",
        Arc::new(|_: &[u8], _| response("200 OK", "", "{}")),
    );
    let url = format!("{}/v1/x?y=1", node.addr);
    let out = run(env_cmd(
        &["-t", "1", "-c", "1", "-n", "3", "--format", "json", &url],
        &[("VAULT_TOKEN", "test-token")],
    ));
    out.assert_code(0);
    // No User-Agent: the server parses every header of every request (docs/benchmarks.md).
    let want = format!(
        "GET /v1/x?y=1 HTTP/1.1\r\nHost: {}\r\nX-Vault-Token: test-token\r\n\r\n",
        node.host
    );
    assert_eq!(node.requests("GET /v1/x"), vec![want; 3], "{}", out.show());
}

/// The JWT of a login request's body.
fn jwt(request: &str) -> String {
    let body = request.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    let v: serde_json::Value = serde_json::from_str(body)
        .unwrap_or_else(|e| panic!("login body is not JSON ({e}): {request}"));
    v["jwt"].as_str().unwrap_or_default().to_string()
}

fn host_of(request: &str) -> &str {
    request
        .lines()
        .find_map(|l| l.strip_prefix("Host: "))
        .unwrap_or("")
}

/// What a capture node answers a login (vblast reads only that it succeeded).
const LOGGED_IN: &str = r#"{"auth":{"client_token":"hvs.fake-token"}}"#;

/// `sys/health` of a standby in `bao`'s cluster (its cluster_id), for capture nodes that
/// stand beside it as one cluster.
fn standby_health_of(bao: &OpenBao) -> String {
    let (status, health) = bao.api("GET", "/v1/sys/health", None);
    assert_eq!(status, 200, "{health}");
    let id = serde_json::from_str::<serde_json::Value>(&health).unwrap()["cluster_id"]
        .as_str()
        .unwrap()
        .to_string();
    format!(r#"{{"initialized":true,"sealed":false,"standby":true,"cluster_id":"{id}"}}"#)
}

/// A capture node on `ip`: a standby by `health`, answering every login itself.
fn login_node(ip: &str, health: &str) -> Capture {
    let health = health.to_string();
    Capture::start(
        ip,
        Arc::new(move |req: &[u8], _| {
            if req.starts_with(b"GET /v1/sys/health") {
                response("429 Too Many Requests", "", &health)
            } else {
                response("200 OK", "", LOGGED_IN)
            }
        }),
    )
}

/// jwt-login takes the next JWT of its pool for each request; a request sent again after a
/// 307 is the same request, with the same JWT: to another node (a standby's redirect to
/// the active node) and to the same node (a redirect to a path alone).
#[test]
fn a_redirected_jwt_login_is_resent_with_the_same_jwt() {
    let bao = OpenBao::start();
    let standby_health = standby_health_of(&bao);
    // The active node the standby redirects to: answers the login.
    let second = login_node("127.0.0.3", &standby_health);
    let to_second = second.addr.clone();
    // The standby: a redirect to the second node's address, or (every other login on
    // a connection) to the path alone, answered on its own connection after that.
    let health = standby_health;
    let first = Capture::start(
        "127.0.0.2",
        Arc::new(move |req: &[u8], _| {
            let text = String::from_utf8_lossy(req);
            let path = text.split(' ').nth(1).unwrap_or("/").to_string();
            if text.starts_with("GET /v1/sys/health") {
                return response("429 Too Many Requests", "", &health);
            }
            // Not a login (the server sampler's GETs): not counted below.
            if !text.starts_with("POST ") {
                return response("404 Not Found", "", "{\"errors\":[]}");
            }
            // The n-th login this node saw decides: 1st, 4th, ... go to the other node;
            // 2nd, 5th, ... come back here by path; 3rd, 6th, ... are answered.
            static LOGINS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
            match LOGINS.fetch_add(1, Ordering::SeqCst) % 3 {
                0 => response(
                    "307 Temporary Redirect",
                    &format!("Location: {to_second}{path}\r\n"),
                    "",
                ),
                1 => response(
                    "307 Temporary Redirect",
                    &format!("Location: {path}\r\n"),
                    "",
                ),
                _ => response("200 OK", "", LOGGED_IN),
            }
        }),
    );
    let args = [
        "--address",
        first.addr.as_str(),
        "--address",
        second.addr.as_str(),
        "--address",
        bao.addr.as_str(),
        "--nodes",
        "all",
        "--follow-redirects",
        "-t",
        "1",
        "-c",
        "1",
        "-n",
        "6",
        "--op",
        "jwt-login",
        "--format",
        "json",
    ];
    let out = run(env_cmd(&args, &[("VAULT_TOKEN", bao.token.as_str())]));
    out.assert_code(0);
    let v = out.json();
    assert_eq!((u(&v["requests"]), u(&v["ok"])), (6, 6), "{}", out.show());
    // The one connection goes to the first node: each of its logins goes on to the
    // second node (and is answered there), or is redirected back to itself once and
    // answered on the re-send.
    let at_first = first.requests("POST /v1/auth/");
    let at_second = second.requests("POST /v1/auth/");
    assert_eq!((at_first.len(), at_second.len()), (9, 3), "{}", out.show());
    let mut by_request = Vec::new();
    for (i, r) in at_second.iter().enumerate() {
        assert_eq!(host_of(r), second.host, "{r}");
        // Request 2i went on to the second node; request 2i+1 came back to the first.
        let (there, back, again) = (&at_first[3 * i], &at_first[3 * i + 1], &at_first[3 * i + 2]);
        assert_eq!(
            jwt(there),
            jwt(r),
            "the hop to another node took another JWT"
        );
        assert_eq!(
            there.split_once("\r\n\r\n").map(|x| x.1),
            r.split_once("\r\n\r\n").map(|x| x.1),
            "the same body"
        );
        assert_eq!(
            back, again,
            "the re-send to the same node is the same bytes"
        );
        by_request.extend([jwt(there), jwt(back)]);
    }
    for r in &at_first {
        assert_eq!(host_of(r), first.host, "{r}");
    }
    // Six requests, the pool's first six JWTs in order: no re-send (nor the judging of a
    // redirect) took a turn of its own.
    let order: Vec<u64> = by_request.iter().map(|j| pool_index(j)).collect();
    assert_eq!(order, [0, 1, 2, 3, 4, 5], "{by_request:?}");
}

/// The index in its pool of a JWT vblast signed (its `jti` ends `-NNNNNNNN`).
fn pool_index(jwt: &str) -> u64 {
    use base64::Engine as _;
    let payload = jwt.split('.').nth(1).unwrap_or_default();
    let claims = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .unwrap_or_else(|e| panic!("not a JWT ({e}): {jwt}"));
    let claims: serde_json::Value = serde_json::from_slice(&claims).unwrap();
    let jti = claims["jti"].as_str().unwrap_or_default();
    jti.rsplit('-')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no pool index in jti {jti:?}"))
}

/// The nodes of `--nodes all` take jwt-login's turns from one count: the JWTs that reach
/// two capture nodes beside a real OpenBao (which set the JWT auth up and answers its
/// share) are each a different pool item, never the same one twice (each node's requests
/// counting their own turns would send the pool's first items to every node).
#[test]
fn nodes_share_one_pool_of_jwts() {
    let bao = OpenBao::start();
    let standby_health = standby_health_of(&bao);
    let (second, third) = (
        login_node("127.0.0.2", &standby_health),
        login_node("127.0.0.3", &standby_health),
    );
    let args = [
        "--address",
        bao.addr.as_str(),
        "--address",
        second.addr.as_str(),
        "--address",
        third.addr.as_str(),
        "--nodes",
        "all",
        "-t",
        "1",
        "-c",
        "3",
        "-n",
        "30",
        "--op",
        "jwt-login",
        "--format",
        "json",
    ];
    let out = run(env_cmd(&args, &[("VAULT_TOKEN", bao.token.as_str())]));
    out.assert_code(0);
    let v = out.json();
    assert_eq!((u(&v["requests"]), u(&v["ok"])), (30, 30), "{}", out.show());
    let mut seen: Vec<u64> = [&second, &third]
        .iter()
        .flat_map(|n| n.requests("POST /v1/auth/"))
        .map(|r| pool_index(&jwt(&r)))
        .collect();
    assert!(seen.len() >= 2, "{seen:?}: {}", out.show());
    seen.sort_unstable();
    let n = seen.len();
    seen.dedup();
    assert_eq!(seen.len(), n, "a pool item went out twice: {seen:?}");
    assert!(seen.iter().all(|i| *i < 30), "{seen:?}");
}

/// `vblast ab` sends the headers ab sends (`User-Agent: ApacheBench/2.3`, `Accept: */*`
/// and the `-H` ones), so the server parses behind it what it parses behind ab: the header
/// lines of each request, read off the socket, are ab's own (in another order: vblast's
/// Host comes first; the request line's HTTP version and ab's `Connection: Keep-Alive`
/// aside: vblast speaks HTTP/1.1, where keep-alive is the default). A `-H` User-Agent replaces ab's. The node
/// says `Connection: keep-alive`, without which ab -k waits for the close.
#[test]
fn vblast_ab_sends_the_headers_ab_sends() {
    let node = Capture::start(
        "127.0.0.1",
        Arc::new(|_: &[u8], _| response("200 OK", "Connection: keep-alive\r\n", "{}")),
    );
    let heads = |prefix: &str| -> Vec<Vec<String>> {
        node.requests(prefix)
            .iter()
            .map(|r| {
                let head = r.split("\r\n\r\n").next().unwrap_or_default();
                head.lines()
                    .skip(1)
                    .filter(|l| !l.to_ascii_lowercase().starts_with("connection:"))
                    .map(str::to_string)
                    .collect::<std::collections::BTreeSet<_>>()
                    .into_iter()
                    .collect()
            })
            .collect()
    };
    for (path, extra) in [
        ("/v1/plain", None),
        ("/v1/given", Some("User-Agent: probe/1")),
    ] {
        let url = format!("{}{path}", node.addr);
        let mut args = vec!["-k", "-n", "2", "-c", "1", "-s", "20"];
        if let Some(h) = extra {
            args.extend(["-H", h]);
        }
        args.push(&url);
        let ab = std::process::Command::new("ab")
            .args(&args)
            .output()
            .expect("ab (apache2-utils, installed by tools/deps.sh)");
        assert!(
            ab.status.success(),
            "ab: {}",
            String::from_utf8_lossy(&ab.stderr)
        );
        let theirs = heads(&format!("GET {path} HTTP/1.0"));
        let mut ours_args = vec!["ab"];
        ours_args.extend(&args);
        run(env_cmd(&ours_args, &[])).assert_code(0);
        let ours = heads(&format!("GET {path} HTTP/1.1"));
        assert_eq!(theirs.len(), 2, "ab's requests: {theirs:?}");
        assert_eq!(ours.len(), 2, "vblast ab's requests: {ours:?}");
        assert_eq!(ours[0], theirs[0], "{path}");
        let agent = if extra.is_some() {
            "probe/1"
        } else {
            "ApacheBench/2.3"
        };
        assert!(
            ours[0].contains(&format!("User-Agent: {agent}")),
            "{ours:?}"
        );
        assert!(ours[0].contains(&"Accept: */*".to_string()), "{ours:?}");
    }
}
