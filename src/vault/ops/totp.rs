//! The TOTP family: `totp-generate`. Setup enables the TOTP secrets engine at a fresh
//! mount (`vblast-totp-xxxxxxxx`) and has it generate the key `vblast`; each request asks
//! for the key's current code, which the answer must hold. Cleanup disables the mount.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{
    Created, OpFlags, OpInfo, SetupCtx, VaultOp, call, disable_mount, mount_created, needs_setup,
    random_name,
};
use crate::capture::Expect;
use crate::error::Error;
use crate::signals::Stop;
use crate::template::{Piece, RequestSpec};
use crate::vault::client::Client;
use crate::workload::Operation;

/// The key vblast creates.
pub const KEY: &str = "vblast";

pub const GENERATE: OpInfo = OpInfo {
    name: "totp-generate",
    about: "GET <mount>/code/vblast: the current code of a TOTP key generated at setup",
    options: &[],
    config_from_flags,
    build,
};

/// No options yet: an empty config, unknown keys refused.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TotpConfig {}

fn config_from_flags(_: &OpFlags) -> Value {
    serde_json::to_value(TotpConfig {}).unwrap_or(Value::Null)
}

fn build(v: &Value) -> Result<Box<dyn VaultOp>, String> {
    serde_json::from_value::<TotpConfig>(v.clone()).map_err(|e| format!("bad config: {e}"))?;
    Ok(Box::new(Totp { mount: None }))
}

struct Totp {
    /// The mount, as soon as it may exist.
    mount: Option<String>,
}

impl Totp {
    fn prepare(&mut self, client: &mut Client) -> Result<(), String> {
        let mount = random_name("vblast-totp-");
        self.mount = Some(mount.clone());
        call(
            client,
            "POST",
            &format!("/v1/sys/mounts/{mount}"),
            Some(&json!({"type": "totp", "description": "vblast load test (temporary)"})),
            &format!("enabling totp at '{mount}'"),
        )
        .inspect_err(|_| self.mount = None)?;
        call(
            client,
            "POST",
            &format!("/v1/{mount}/keys/{KEY}"),
            Some(&json!({
                "generate": true,
                "issuer": "vblast",
                "account_name": "vblast@vblast.test",
                "exported": false,
            })),
            &format!("generating TOTP key '{KEY}' in '{mount}'"),
        )?;
        Ok(())
    }
}

impl VaultOp for Totp {
    fn check(&self, ctx: &SetupCtx) -> Result<(), Error> {
        needs_setup(ctx, GENERATE.name)
    }

    fn setup(&mut self, ctx: &SetupCtx) -> Result<(), Error> {
        needs_setup(ctx, GENERATE.name)?;
        let mut client = (ctx.make_client)();
        self.prepare(&mut client).map_err(Error::Setup)
    }

    fn operation(&self) -> Operation {
        let mount = self.mount.as_deref().unwrap_or("unset");
        let mut op = Operation::new(
            GENERATE.name,
            RequestSpec {
                method: "GET".into(),
                path: vec![Piece::lit(format!("/v1/{mount}/code/{KEY}"))],
                headers: vec![],
                body: None,
                captured_headers: vec![],
            },
        );
        op.expect = Some(Expect::present("data.code"));
        op
    }

    fn created(&self) -> Vec<Created> {
        mount_created("totp", self.mount.as_deref())
    }

    fn cleanup(&mut self, client: &mut Client, _stop: &Stop) -> Result<(), String> {
        disable_mount(client, "totp", &mut self.mount)
    }
}
