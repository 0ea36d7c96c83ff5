//! The system family, nothing to set up or remove: `sys-health` (GET sys/health, which
//! must say `sealed: false`), `ha-status` (GET sys/ha-status, which must list the
//! cluster's nodes), `seal-status` (GET sys/seal-status,
//! which must say `sealed: false`) and `sys-metrics` (GET sys/metrics, telemetry in JSON,
//! which must hold its gauges). Like vault-benchmark's ha_status, seal_status and metrics.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::vb::no_settings;
use super::{Created, Fixture, OpInfo, OptionValues, SetupCtx, VaultBenchmark, VaultOp, VbType};
use crate::capture::Expect;
use crate::error::{Cause, Error};
use crate::signals::Stop;
use crate::template::{Piece, RequestSpec};
use crate::vault::client::Client;
use crate::workload::Operation;

const DOC: &str =
    "Nothing to set up or remove; like vault-benchmark's ha_status, seal_status and metrics tests.";

pub const HEALTH: OpInfo = OpInfo {
    name: "sys-health",
    request: "GET /v1/sys/health",
    doc: DOC,
    also: &[],
    vault_benchmark: VaultBenchmark::NoType,
    fixture: Fixture::None,
    bounds: &[],
    about: "GET sys/health; the answer must say sealed: false (no setup)",
    options: &[],
    config_from,
    build: build_health,
};

pub const HA_STATUS: OpInfo = OpInfo {
    name: "ha-status",
    request: "GET /v1/sys/ha-status",
    doc: DOC,
    also: &[],
    vault_benchmark: VaultBenchmark::Types(&[VbType {
        name: "ha_status",
        config: no_settings,
    }]),
    fixture: Fixture::None,
    bounds: &[],
    about: "GET sys/ha-status; the answer must list the nodes (no setup)",
    options: &[],
    config_from,
    build: build_ha,
};

pub const SEAL_STATUS: OpInfo = OpInfo {
    name: "seal-status",
    request: "GET /v1/sys/seal-status",
    doc: DOC,
    also: &[],
    vault_benchmark: VaultBenchmark::Types(&[VbType {
        name: "seal_status",
        config: no_settings,
    }]),
    fixture: Fixture::None,
    bounds: &[],
    about: "GET sys/seal-status; the answer must say sealed: false (no setup)",
    options: &[],
    config_from,
    build: build_seal,
};

pub const METRICS: OpInfo = OpInfo {
    name: "sys-metrics",
    request: "GET /v1/sys/metrics",
    doc: DOC,
    also: &[],
    vault_benchmark: VaultBenchmark::Types(&[VbType {
        name: "metrics",
        config: no_settings,
    }]),
    fixture: Fixture::None,
    bounds: &[],
    about: "GET sys/metrics (JSON telemetry; the token must be allowed to read it; no setup)",
    options: &[],
    config_from,
    build: build_metrics,
};

/// No options: an empty config, unknown keys refused.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SysConfig {}

fn config_from(_: &OptionValues) -> Value {
    serde_json::to_value(SysConfig {}).unwrap_or(Value::Null)
}

fn parse(v: &Value) -> Result<(), Cause> {
    serde_json::from_value::<SysConfig>(v.clone())
        .map(|_| ())
        .map_err(|e| Cause::from(format!("bad config: {e}")))
}

#[derive(Clone, Copy)]
enum SysKind {
    Health,
    HaStatus,
    SealStatus,
    Metrics,
}

fn build_health(v: &Value) -> Result<Box<dyn VaultOp>, Cause> {
    parse(v)?;
    Ok(Box::new(Sys(SysKind::Health)))
}

fn build_ha(v: &Value) -> Result<Box<dyn VaultOp>, Cause> {
    parse(v)?;
    Ok(Box::new(Sys(SysKind::HaStatus)))
}

fn build_seal(v: &Value) -> Result<Box<dyn VaultOp>, Cause> {
    parse(v)?;
    Ok(Box::new(Sys(SysKind::SealStatus)))
}

fn build_metrics(v: &Value) -> Result<Box<dyn VaultOp>, Cause> {
    parse(v)?;
    Ok(Box::new(Sys(SysKind::Metrics)))
}

struct Sys(SysKind);

impl VaultOp for Sys {
    fn setup(&mut self, _ctx: &SetupCtx) -> Result<(), Error> {
        Ok(())
    }

    fn operation(&self) -> Operation {
        let (name, path, expect) = match self.0 {
            SysKind::Health => (
                HEALTH.name,
                "/v1/sys/health",
                Expect::equals("sealed", "false"),
            ),
            SysKind::HaStatus => (
                HA_STATUS.name,
                "/v1/sys/ha-status",
                Expect::present("data.nodes"),
            ),
            SysKind::SealStatus => (
                SEAL_STATUS.name,
                "/v1/sys/seal-status",
                Expect::equals("sealed", "false"),
            ),
            SysKind::Metrics => (METRICS.name, "/v1/sys/metrics", Expect::present("Gauges")),
        };
        let mut op = Operation::new(
            name,
            RequestSpec {
                method: "GET".into(),
                path: vec![Piece::lit(path)],
                headers: vec![],
                body: None,
                captured_headers: vec![],
            },
        );
        op.expect = Some(expect);
        op
    }

    fn created(&self) -> Vec<Created> {
        Vec::new()
    }

    fn cleanup(&mut self, _client: &mut Client, _stop: &Stop) -> Result<(), Cause> {
        Ok(())
    }
}
