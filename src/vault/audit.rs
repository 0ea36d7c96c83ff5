//! The run's audit log, counted per operation to set against the client's counts. Either
//! a file audit device the server already has (`--audit-log FILE`, or the one `sys/audit`
//! lists writing the `--audit-path` file: OpenBao 2 declares its audit devices in its
//! configuration and refuses them over the API unless `unsafe_allow_api_audit_creation`),
//! used as it is, nothing created; or one enabled for the run (`--audit-path FILE`,
//! vault-benchmark's `audit_path`) under a fresh `vblast-audit-` name once the operations
//! are set up, before the load, as the session's last fixture, so that every exit path's
//! cleanup disables it and the run's state file names it (`vblast cleanup --run-id`).
//! Where the server refuses that and already has a file audit device, that one is used.

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde_json::Value;

use crate::error::{Cause, Error};
use crate::signals::Stop;
use crate::template::{Piece, RequestSpec};
use crate::vault::client::Client;
use crate::vault::ops::{Created, SetupCtx, VaultOp};
use crate::workload::Operation;

/// The log a run counts: the file, and the moment from which its entries are the run's
/// (an existing device's log holds what came before: the setup, other clients).
#[derive(Clone, Debug)]
pub struct CountedLog {
    pub file: PathBuf,
    pub since: SystemTime,
}

/// The audit device of a run: one it enabled (`name`), or none (an existing device's log
/// counted, or nothing enabled yet).
pub struct AuditDevice {
    path: PathBuf,
    /// Its name once asked for (cleared when the server refused it).
    name: Option<String>,
}

impl AuditDevice {
    pub fn new(path: &Path) -> AuditDevice {
        AuditDevice {
            path: path.to_path_buf(),
            name: None,
        }
    }
}

/// A file audit device the server has.
struct FileDevice {
    name: String,
    file: PathBuf,
}

/// The server's file audit devices writing JSON lines to a file, when the token may
/// list them (`sys/audit` needs sudo; None otherwise).
fn file_devices(client: &mut Client) -> Option<Vec<FileDevice>> {
    let r = client.request("GET", "/v1/sys/audit", None).ok()?;
    let v = r.json().filter(|_| r.status == 200)?;
    let table = v.get("data").filter(|d| d.is_object()).unwrap_or(&v);
    let devices = table
        .as_object()?
        .iter()
        .filter(|(_, d)| d["type"] == "file")
        .filter(|(_, d)| d["options"]["format"].as_str().is_none_or(|f| f == "json"))
        .filter(|(_, d)| d["options"]["prefix"].as_str().is_none_or(str::is_empty))
        .filter_map(|(name, d)| {
            let file = d["options"]["file_path"].as_str()?;
            (file != "stdout" && file != "discard").then(|| FileDevice {
                name: name.trim_end_matches('/').to_string(),
                file: PathBuf::from(file),
            })
        })
        .collect();
    Some(devices)
}

/// `--audit-path FILE` (`enable`) or `--audit-log FILE` (`existing`): the log the run
/// counts, and the fixture that removes what was enabled for it (nothing, when the
/// server's own device is used). The fixture comes back whatever happened, for the
/// session's cleanup.
pub fn prepare(
    ctx: &SetupCtx,
    enable: Option<&Path>,
    existing: Option<&Path>,
) -> (AuditDevice, Result<Option<CountedLog>, Error>) {
    let since = SystemTime::now();
    let counted = |file: &Path| {
        Ok(Some(CountedLog {
            file: file.to_path_buf(),
            since,
        }))
    };
    let devices = file_devices(&mut (ctx.make_client)());
    let writing = |file: &Path| {
        devices
            .iter()
            .flatten()
            .find(|d| d.file == file)
            .map(|d| d.name.clone())
    };
    if let Some(log) = existing {
        let device = AuditDevice::new(log);
        if let Err(e) = std::fs::File::open(log) {
            let e = Cause::io(
                format!(
                    "--audit-log {}: cannot read the server's audit log on this machine",
                    log.display()
                ),
                e,
            );
            return (device, Err(Error::input(e)));
        }
        match (&devices, writing(log)) {
            (_, Some(name)) => eprintln!(
                "vblast: counting the audit log {} of the server's file audit device {name}",
                log.display()
            ),
            (Some(list), None) => eprintln!(
                "vblast: --audit-log {}: no file audit device of the server writes it ({}); counted all the same",
                log.display(),
                listed(list)
            ),
            (None, None) => {}
        }
        return (device, counted(log));
    }
    let Some(path) = enable else {
        return (AuditDevice::new(Path::new("")), Ok(None));
    };
    let mut device = AuditDevice::new(path);
    if let Some(name) = writing(path) {
        eprintln!(
            "vblast: the server's file audit device {name} already writes {}: counted from it, nothing enabled",
            path.display()
        );
        return (device, counted(path));
    }
    let refused = match device.setup(ctx) {
        Ok(()) => return (device, counted(path)),
        Err(e) if ctx.stop.signal().is_some() => return (device, Err(e)),
        Err(e) => e,
    };
    match devices.as_ref().and_then(|d| d.first()) {
        Some(d) => {
            eprintln!(
                "vblast: the server did not enable an audit device writing {}; its own file audit device {} writes {}: counted from it instead",
                path.display(),
                d.name,
                d.file.display()
            );
            let file = d.file.clone();
            (device, counted(&file))
        }
        None => (device, Err(refused)),
    }
}

/// The devices of `sys/audit`, for a message.
fn listed(devices: &[FileDevice]) -> String {
    if devices.is_empty() {
        return "sys/audit lists no file audit device".into();
    }
    let each: Vec<String> = devices
        .iter()
        .map(|d| format!("{} writes {}", d.name, d.file.display()))
        .collect();
    format!("sys/audit: {}", each.join(", "))
}

impl VaultOp for AuditDevice {
    fn setup(&mut self, ctx: &SetupCtx) -> Result<(), Error> {
        let name = ctx.naming.random_name("vblast-audit-");
        self.name = Some(name.clone());
        let body = serde_json::json!({
            "type": "file",
            "description": "vblast --audit-path",
            "options": { "file_path": self.path.display().to_string() },
        });
        let refused = |e: Cause| {
            Error::input(e.within(format!(
                "--audit-path {}: the server cannot enable a file audit device writing there (OpenBao 2 enables audit devices only from its configuration, unless it sets unsafe_allow_api_audit_creation: declare `audit \"file\" \"NAME\" {{ options {{ file_path = \"FILE\" }} }}` there and give --audit-log FILE)",
                self.path.display()
            )))
        };
        let r = (ctx.make_client)()
            .request(
                "PUT",
                &format!("/v1/sys/audit/{name}"),
                Some(body.to_string().as_bytes()),
            )
            .map_err(refused)?;
        if !(200..300).contains(&r.status) {
            // Refused: nothing was enabled.
            self.name = None;
            return Err(refused(Cause::Http {
                what: format!("enabling audit device {name} failed"),
                status: r.status,
                excerpt: r.error_text(),
            }));
        }
        eprintln!(
            "vblast: audit device {name} writes {} during the run",
            self.path.display()
        );
        Ok(())
    }

    /// Never sent: the device is added after the run's operations were drawn.
    fn operation(&self) -> Operation {
        Operation::new(
            "audit-device",
            RequestSpec {
                method: "GET".into(),
                path: vec![Piece::lit("/v1/sys/health")],
                headers: vec![],
                body: None,
                captured_headers: vec![],
            },
        )
    }

    fn operations(&self) -> Vec<Operation> {
        Vec::new()
    }

    fn created(&self) -> Vec<Created> {
        self.name
            .iter()
            .map(|n| Created {
                what: format!("audit device {n}"),
                remove_with: format!("vault audit disable {n}"),
            })
            .collect()
    }

    fn cleanup(&mut self, client: &mut Client, _stop: &Stop) -> Result<(), Cause> {
        let Some(name) = &self.name else {
            return Ok(());
        };
        let r = client
            .request("DELETE", &format!("/v1/sys/audit/{name}"), None)
            .map_err(|e| e.within(format!("disabling audit device {name} failed")))?;
        if !(200..300).contains(&r.status) {
            return Err(Cause::Http {
                what: format!("disabling audit device {name} failed"),
                status: r.status,
                excerpt: r.error_text(),
            });
        }
        self.name = None;
        Ok(())
    }
}

/// What an operation's requests look like in the audit log: the audit operations its
/// method may be logged as, and the literal start of its path (without `/v1/`).
struct Shape {
    ops: &'static [&'static str],
    prefix: String,
}

fn shape(op: &Operation) -> Shape {
    let mut prefix = Vec::new();
    for p in &op.request.path {
        match p {
            Piece::Lit(b) => prefix.extend_from_slice(b),
            _ => break,
        }
    }
    let prefix = String::from_utf8_lossy(&prefix);
    let prefix = prefix.split('?').next().unwrap_or("");
    let ops: &[&str] = match op.request.method.as_str() {
        "GET" | "HEAD" => &["read", "list"],
        "LIST" => &["list"],
        "DELETE" => &["delete"],
        _ => &["update", "create"],
    };
    Shape {
        ops,
        prefix: prefix.trim_start_matches("/v1/").to_string(),
    }
}

/// The operation (index into `shapes`) an audit entry's request is: the longest prefix
/// that matches its path and operation.
fn which(shapes: &[Shape], path: &str, operation: &str) -> Option<usize> {
    shapes
        .iter()
        .enumerate()
        .filter(|(_, s)| path.starts_with(&s.prefix) && s.ops.contains(&operation))
        .max_by_key(|(_, s)| s.prefix.len())
        .map(|(i, _)| i)
}

/// The responses in the audit log at `path` per operation of `ops` (their order), those
/// logged at or after `from` (None: all) and, with `until`, not after it.
pub fn count(
    path: &Path,
    ops: &[Operation],
    from: Option<SystemTime>,
    until: Option<SystemTime>,
) -> Result<Vec<u64>, Cause> {
    let file = std::fs::File::open(path)
        .map_err(|e| Cause::io(format!("cannot read the audit log {}", path.display()), e))?;
    let shapes: Vec<Shape> = ops.iter().map(shape).collect();
    let mut counts = vec![0u64; ops.len()];
    for line in std::io::BufReader::new(file).lines() {
        let line = line.map_err(|e| Cause::io(format!("cannot read {}", path.display()), e))?;
        let Ok(v) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        if v["type"] != "response" {
            continue;
        }
        if let Some(at) = v["time"].as_str()
            && let Ok(t) = humantime::parse_rfc3339_weak(at.trim_end_matches('Z'))
            && (from.is_some_and(|from| t < from) || until.is_some_and(|until| t > until))
        {
            continue;
        }
        let req = &v["request"];
        let (Some(p), Some(o)) = (req["path"].as_str(), req["operation"].as_str()) else {
            continue;
        };
        if let Some(i) = which(&shapes, p, o) {
            counts[i] += 1;
        }
    }
    Ok(counts)
}

/// The report's line: each operation's count in the audit log beside the client's.
/// `in_flight`: the requests a signal left in flight at the stop (one per connection at
/// most; 0 when the run ended on its own): the server answered them, the client counted
/// no answer, so an excess of the log up to that many is theirs.
pub fn agreement(names: &[String], audit: &[u64], client: &[u64], in_flight: u64) -> String {
    let parts: Vec<String> = names
        .iter()
        .zip(audit.iter().zip(client))
        .map(|(n, (a, c))| {
            if a == c {
                format!("{n} {a} = {c}")
            } else {
                format!("{n} {a} vs client {c} ({:+})", *a as i64 - *c as i64)
            }
        })
        .collect();
    let exact = audit == client;
    let excess = audit
        .iter()
        .zip(client)
        .try_fold(0u64, |sum, (a, c)| a.checked_sub(*c).map(|d| sum + d));
    format!(
        "audit log: {}: {}",
        parts.join(", "),
        match excess {
            _ if exact => "exact agreement with the client's counts".to_string(),
            Some(n) if n <= in_flight => format!(
                "agreement with the client's counts but for {n} in flight at the stop (the server answered them after the client stopped counting)"
            ),
            _ => "differs from the client's counts".to_string(),
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(method: &str, path: &str) -> Operation {
        Operation::new(
            "x",
            RequestSpec {
                method: method.into(),
                path: vec![Piece::lit(path)],
                headers: vec![],
                body: None,
                captured_headers: vec![],
            },
        )
    }

    #[test]
    fn audit_responses_are_counted_per_operation() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("audit.log");
        let line = |t: &str, o: &str, p: &str| {
            format!(
                r#"{{"type":"{t}","time":"2026-12-02T06:00:00.5Z","request":{{"operation":"{o}","path":"{p}"}}}}"#
            )
        };
        let text = [
            line("request", "read", "kv/data/s1"),
            line("response", "read", "kv/data/s1"),
            line("response", "update", "kv/data/s2"),
            line("response", "read", "sys/host-info"),
            line("response", "read", "kv/data/s3"),
            "not json".into(),
        ]
        .join("\n");
        std::fs::write(&log, text).unwrap();
        let ops = [op("GET", "/v1/kv/data/s"), op("POST", "/v1/kv/data/s")];
        assert_eq!(count(&log, &ops, None, None).unwrap(), vec![2, 1]);
        let later = humantime::parse_rfc3339("2026-12-02T06:00:01Z").unwrap();
        assert_eq!(count(&log, &ops, Some(later), None).unwrap(), vec![0, 0]);
        let earlier = humantime::parse_rfc3339("2026-12-02T06:00:00Z").unwrap();
        assert_eq!(count(&log, &ops, None, Some(earlier)).unwrap(), vec![0, 0]);
        assert_eq!(
            count(&log, &ops, Some(earlier), Some(later)).unwrap(),
            vec![2, 1]
        );
        let names = ["kv-read".to_string(), "kv-write".to_string()];
        assert_eq!(
            agreement(&names, &[2, 1], &[2, 1], 0),
            "audit log: kv-read 2 = 2, kv-write 1 = 1: exact agreement with the client's counts"
        );
        assert!(agreement(&names, &[2, 0], &[2, 1], 0).contains("kv-write 0 vs client 1 (-1)"));
        // Stopped by a signal with 4 connections: 3 more in the log are those in flight.
        let stopped = agreement(&names, &[4, 2], &[2, 1], 4);
        assert!(
            stopped.contains("but for 3 in flight at the stop"),
            "{stopped}"
        );
        assert!(agreement(&names, &[4, 2], &[2, 1], 0).contains("differs"));
        assert!(agreement(&names, &[9, 2], &[2, 1], 4).contains("differs"));
    }
}
