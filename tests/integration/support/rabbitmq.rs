//! A private RabbitMQ with its management plugin for the rabbitmq secrets test: its own
//! epmd (a child of ours, on a private port), node name, data, log and config in a
//! temporary directory, AMQP, distribution and management ports on 127.0.0.1; never the
//! system service. The `guest` administrator (loopback only, RabbitMQ's default) is the
//! admin. Slow to start (about 10 s): start it once per test. Stopped (by pid: the node,
//! then its epmd) and removed when dropped.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use super::client::http_request;
use super::ports::free_port;
use super::process::stop_server;

const SERVER: &str = "/usr/lib/rabbitmq/bin/rabbitmq-server";

pub struct RabbitMq {
    /// The management API's port.
    pub port: u16,
    node: Child,
    epmd: Child,
    _dir: tempfile::TempDir,
}

impl RabbitMq {
    /// None when rabbitmq-server or epmd is missing (tools/deps.sh installs them).
    pub fn start() -> Option<RabbitMq> {
        if !Path::new(SERVER).is_file() {
            return None;
        }
        let epmd_bin = super::process::find_in_path("epmd")?;
        let dir = tempfile::Builder::new()
            .prefix("vblast-rabbitmq-")
            .tempdir()
            .unwrap();
        let d = dir.path();
        let [amqp, port, epmd_port, dist] = [free_port(), free_port(), free_port(), free_port()];
        std::fs::write(
            d.join("rabbitmq.conf"),
            format!(
                "listeners.tcp.default = 127.0.0.1:{amqp}\nmanagement.tcp.port = {port}\nmanagement.tcp.ip = 127.0.0.1\n"
            ),
        )
        .unwrap();
        std::fs::write(d.join("enabled_plugins"), "[rabbitmq_management].\n").unwrap();
        let log = |name: &str| std::fs::File::create(d.join(name)).unwrap();
        let epmd = Command::new(epmd_bin)
            .args(["-port", &epmd_port.to_string()])
            .stdin(Stdio::null())
            .stdout(log("epmd.log"))
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let p = |name: &str| d.join(name).display().to_string();
        let node = Command::new(SERVER)
            .env("HOME", d)
            .env("ERL_EPMD_PORT", epmd_port.to_string())
            .env("RABBITMQ_NODENAME", format!("vblast{amqp}@localhost"))
            .env("RABBITMQ_DIST_PORT", dist.to_string())
            .env("RABBITMQ_CONFIG_FILE", p("rabbitmq.conf"))
            .env("RABBITMQ_ENABLED_PLUGINS_FILE", p("enabled_plugins"))
            .env("RABBITMQ_MNESIA_BASE", p("mnesia"))
            .env("RABBITMQ_LOG_BASE", p("log"))
            .env("RABBITMQ_CONF_ENV_FILE", p("none.conf"))
            .env("RABBITMQ_ADVANCED_CONFIG_FILE", p("none.config"))
            .env("RABBITMQ_PID_FILE", p("pid"))
            .env("RABBITMQ_LOGS", "-")
            // The script then execs the Erlang VM: our child is the node itself, which
            // SIGTERM stops.
            .env("RUNNING_UNDER_SYSTEMD", "true")
            .stdin(Stdio::null())
            .stdout(log("server.log"))
            .stderr(log("server.err"))
            .spawn()
            .unwrap();
        let r = RabbitMq {
            port,
            node,
            epmd,
            _dir: dir,
        };
        let deadline = Instant::now() + Duration::from_secs(120);
        while r.users().is_none() {
            assert!(Instant::now() < deadline, "RabbitMQ did not start");
            thread::sleep(Duration::from_millis(250));
        }
        Some(r)
    }

    /// `http://guest:guest@127.0.0.1:PORT` (the management API).
    pub fn url(&self) -> String {
        format!("http://guest:guest@127.0.0.1:{}", self.port)
    }

    /// The users of the node (None until the management API answers).
    pub fn users(&self) -> Option<Vec<String>> {
        let addr = format!("http://127.0.0.1:{}", self.port);
        let auth = "Basic Z3Vlc3Q6Z3Vlc3Q="; // guest:guest
        let r = http_request(
            &addr,
            "GET",
            "/api/users",
            &[("Authorization", auth)],
            None,
            None,
        )
        .ok()?;
        if r.status != 200 {
            return None;
        }
        let v: serde_json::Value = serde_json::from_slice(&r.body).ok()?;
        let mut names: Vec<String> = v
            .as_array()?
            .iter()
            .filter_map(|u| u["name"].as_str().map(String::from))
            .collect();
        names.sort();
        Some(names)
    }
}

impl Drop for RabbitMq {
    fn drop(&mut self) {
        stop_server(&mut self.node, libc::SIGTERM);
        stop_server(&mut self.epmd, libc::SIGTERM);
    }
}
