//! nginx with canned Vault-shaped responses (kv reads, error statuses, a redirect,
//! `Connection: close`, chunked bodies), plain or TLS, with extra configuration snippets;
//! stopped (SIGTERM, then SIGKILL) by its pid when its handle is dropped.

use std::fs;
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use super::certs::{TlsFiles, gen_tls_files};
use super::client::{HttpResponse, http_request};
use super::ports::free_port;
use super::process::{READY_TIMEOUT, find_in_path, stop_child};

/// Body served for `/v1/...` paths (a kv-v2 read response, ~148 bytes).
pub const KV_BODY: &str = r#"{"request_id":"0b6f5a3e-1c1e-4f3a-9d53-5a3b8f3c2a11","data":{"data":{"value":"bar"},"metadata":{"version":1}},"lease_duration":0,"renewable":false}"#;

/// Body served (chunked) for `/chunked`.
pub const CHUNKED_BODY: &str = r#"{"request_id":"5e0c3b1a-7d1f-4b2e-8c4a-2f9e6d7c1b30","data":{"data":{"value":"chunky"},"metadata":{"version":1}},"lease_duration":0,"renewable":false}"#;

/// An nginx serving canned responses on 127.0.0.1:PORT:
///
/// * any `/v1/...` path: 200 `application/json`, body [`KV_BODY`]
/// * `/status/{404,429,500,503}`: that status, `{"errors":[...]}` body
/// * `/status/307`: 307, `Location: <addr>/v1/secret/data/foo`, JSON body
/// * `/close`: 200 with `Connection: close`
/// * `/chunked`: 200 with `Transfer-Encoding: chunked`, body [`CHUNKED_BODY`]
/// * anything else: 404 JSON
pub struct Nginx {
    pub port: u16,
    /// `http://127.0.0.1:PORT` (or `https://` for TLS).
    pub addr: String,
    /// Certificate to trust when talking to a TLS nginx (set by the TLS
    /// constructors; may be overridden).
    pub ca_cert: Option<PathBuf>,
    child: Child,
    tempdir: tempfile::TempDir,
}

impl Nginx {
    /// Plain HTTP nginx.
    pub fn start() -> Nginx {
        Self::start_with("", "", None)
    }

    /// Plain HTTP nginx with extra server-level directives appended to the
    /// `server { }` block.
    pub fn with_extra(server_snippet: &str) -> Nginx {
        Self::start_with("", server_snippet, None)
    }

    /// Plain HTTP nginx with directives at the `http { }` level too (a `log_format`).
    pub fn with_http_extra(http_snippet: &str, server_snippet: &str) -> Nginx {
        Self::start_full("", http_snippet, server_snippet, None)
    }

    /// TLS nginx using the given certificate chain and key (PEM paths).
    /// `ca_cert` is set to `cert_pem` (right for a self-signed cert; set it to
    /// the CA yourself otherwise).
    pub fn start_tls(cert_pem: &Path, key_pem: &Path) -> Nginx {
        let snippet = format!(
            "ssl_certificate {};\n    ssl_certificate_key {};\n",
            cert_pem.display(),
            key_pem.display()
        );
        Self::start_with(" ssl", &snippet, Some(cert_pem.to_path_buf()))
    }

    /// TLS nginx with extra server directives (e.g. `ssl_protocols TLSv1.2;`).
    pub fn start_tls_with(cert_pem: &Path, key_pem: &Path, directives: &str) -> Nginx {
        let snippet = format!(
            "ssl_certificate {};\n    ssl_certificate_key {};\n    {directives}\n",
            cert_pem.display(),
            key_pem.display()
        );
        Self::start_with(" ssl", &snippet, Some(cert_pem.to_path_buf()))
    }

    /// TLS nginx with a freshly generated CA + leaf (see [`gen_tls_files`]);
    /// `ca_cert` is the generated CA. Returns the files too.
    pub fn start_tls_generated() -> (Nginx, TlsFiles) {
        let dir = tempfile::Builder::new()
            .prefix("vblast-certs-")
            .tempdir()
            .unwrap();
        let files = gen_tls_files(dir.path());
        let mut ng = Self::start_tls(&files.cert, &files.key);
        // Move the cert files into nginx's own tempdir so they live as long as it.
        let own = ng.prefix().join("certs");
        fs::create_dir_all(&own).unwrap();
        let moved = TlsFiles {
            ca_cert: own.join("ca.pem"),
            cert: own.join("cert.pem"),
            key: own.join("key.pem"),
        };
        fs::copy(&files.ca_cert, &moved.ca_cert).unwrap();
        fs::copy(&files.cert, &moved.cert).unwrap();
        fs::copy(&files.key, &moved.key).unwrap();
        ng.ca_cert = Some(moved.ca_cert.clone());
        (ng, moved)
    }

    /// nginx speaking HTTP/2 (tests/integration/http2.rs): `listen ... ssl http2` with a
    /// generated CA (`ca_cert` set) when `tls`, else `listen ... http2` (h2c); with
    /// `http_snippet` at the `http { }` level and `server_snippet` in the server.
    pub fn start_h2(tls: bool, http_snippet: &str, server_snippet: &str) -> Nginx {
        if !tls {
            return Self::start_full(" http2", http_snippet, server_snippet, None);
        }
        let dir = tempfile::Builder::new()
            .prefix("vblast-certs-")
            .tempdir()
            .unwrap();
        let files = gen_tls_files(dir.path());
        let snippet = format!(
            "ssl_certificate {};\n    ssl_certificate_key {};\n    {server_snippet}\n",
            files.cert.display(),
            files.key.display()
        );
        let mut ng = Self::start_full(" ssl http2", http_snippet, &snippet, None);
        let own = ng.prefix().join("ca.pem");
        fs::copy(&files.ca_cert, &own).unwrap();
        ng.ca_cert = Some(own);
        ng
    }

    /// The nginx prefix directory (config, logs, pid file).
    pub fn prefix(&self) -> &Path {
        self.tempdir.path()
    }

    /// nginx error log so far.
    pub fn error_log(&self) -> String {
        fs::read_to_string(self.prefix().join("logs/error.log")).unwrap_or_default()
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    fn start_with(listen_suffix: &str, server_snippet: &str, ca: Option<PathBuf>) -> Nginx {
        Self::start_full(listen_suffix, "", server_snippet, ca)
    }

    fn start_full(
        listen_suffix: &str,
        http_snippet: &str,
        server_snippet: &str,
        ca: Option<PathBuf>,
    ) -> Nginx {
        let mut last_err = String::new();
        for _ in 0..3 {
            match Self::try_start(listen_suffix, http_snippet, server_snippet, ca.clone()) {
                Ok(n) => return n,
                Err(e) => last_err = e,
            }
        }
        panic!("nginx did not start:\n{last_err}");
    }

    fn try_start(
        listen_suffix: &str,
        http_snippet: &str,
        server_snippet: &str,
        ca: Option<PathBuf>,
    ) -> Result<Nginx, String> {
        let tempdir = tempfile::Builder::new()
            .prefix("vblast-nginx-")
            .tempdir()
            .expect("tempdir");
        let p = tempdir.path();
        for d in ["logs", "tmp", "html"] {
            fs::create_dir_all(p.join(d)).unwrap();
        }
        fs::write(p.join("html/chunked.json"), CHUNKED_BODY).unwrap();
        fs::write(
            p.join("html/redirect.json"),
            r#"{"errors":["temporary redirect"]}"#,
        )
        .unwrap();
        let port = free_port();
        let prefix = p.display().to_string();
        // SAFETY: geteuid has no preconditions.
        let user = if unsafe { libc::geteuid() } == 0 {
            "user root;"
        } else {
            ""
        };
        let conf = format!(
            r#"{user}
worker_processes 1;
worker_rlimit_nofile 16384;
pid {prefix}/logs/nginx.pid;
error_log {prefix}/logs/error.log warn;
events {{
    worker_connections 8192;
}}
http {{
    access_log off;
    client_body_temp_path {prefix}/tmp/body;
    proxy_temp_path {prefix}/tmp/proxy;
    fastcgi_temp_path {prefix}/tmp/fastcgi;
    uwsgi_temp_path {prefix}/tmp/uwsgi;
    scgi_temp_path {prefix}/tmp/scgi;
    keepalive_requests 100000000;
    keepalive_timeout 75s;
    default_type application/json;
    server_tokens off;
    {http_snippet}
    server {{
    listen 127.0.0.1:{port}{listen_suffix};
    {server_snippet}
    location /v1/ {{
        return 200 '{KV_BODY}';
    }}
    location = /status/429 {{
        return 429 '{{"errors":["rate limit quota exceeded"]}}';
    }}
    location = /status/503 {{
        return 503 '{{"errors":["Vault is sealed"]}}';
    }}
    location = /status/404 {{
        return 404 '{{"errors":[]}}';
    }}
    location = /status/500 {{
        return 500 '{{"errors":["internal error"]}}';
    }}
    location = /status/307 {{
        error_page 307 /_canned/redirect.json;
        return 307 /v1/secret/data/foo;
    }}
    location /_canned/ {{
        internal;
        alias {prefix}/html/;
    }}
    location = /close {{
        keepalive_timeout 0;
        return 200 '{KV_BODY}';
    }}
    location = /chunked {{
        root {prefix}/html;
        ssi on;
        ssi_types application/json;
        try_files /chunked.json =404;
    }}
    location / {{
        return 404 '{{"errors":["no handler for route"]}}';
    }}
    }}
}}
"#
        );
        let conf_path = p.join("nginx.conf");
        fs::write(&conf_path, conf).unwrap();
        let stderr_path = p.join("logs/stderr.log");
        let stderr = fs::File::create(&stderr_path).unwrap();
        let nginx_bin = find_in_path("nginx")
            .or_else(|| Some(PathBuf::from("/usr/sbin/nginx")).filter(|p| p.is_file()))
            .expect("nginx not found (run tools/deps.sh)");
        let child = Command::new(nginx_bin)
            .arg("-p")
            .arg(p)
            .arg("-c")
            .arg(&conf_path)
            .arg("-e")
            .arg(p.join("logs/error.log"))
            .arg("-g")
            .arg("daemon off;")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .map_err(|e| format!("spawn nginx: {e}"))?;
        let scheme = if listen_suffix.contains("ssl") {
            "https"
        } else {
            "http"
        };
        let mut ng = Nginx {
            port,
            addr: format!("{scheme}://127.0.0.1:{port}"),
            ca_cert: ca,
            child,
            tempdir,
        };
        let deadline = Instant::now() + READY_TIMEOUT;
        let sa: SocketAddr = ([127, 0, 0, 1], port).into();
        loop {
            if let Ok(Some(status)) = ng.child.try_wait() {
                return Err(format!(
                    "nginx exited early ({status}); stderr:\n{}\nerror.log:\n{}",
                    fs::read_to_string(&stderr_path).unwrap_or_default(),
                    ng.error_log()
                ));
            }
            if TcpStream::connect_timeout(&sa, Duration::from_millis(200)).is_ok() {
                return Ok(ng);
            }
            if Instant::now() > deadline {
                stop_child(&mut ng.child, false);
                return Err(format!("nginx not listening on {port}"));
            }
            thread::sleep(Duration::from_millis(10));
        }
    }

    /// GET `path` (no special headers).
    pub fn get(&self, path: &str) -> HttpResponse {
        self.request("GET", path, &[], None)
    }

    /// Arbitrary request; panics on transport errors.
    pub fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&[u8]>,
    ) -> HttpResponse {
        http_request(
            &self.addr,
            method,
            path,
            headers,
            body,
            self.ca_cert.as_deref(),
        )
        .unwrap_or_else(|e| {
            panic!(
                "{method} {}{path} failed: {e}\nerror.log:\n{}",
                self.addr,
                self.error_log()
            )
        })
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        stop_child(&mut self.child, true);
    }
}
