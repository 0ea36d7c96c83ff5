//! The server-side sampling's flags (`cli::server`) as the library's `server_stats::Settings`.

use std::time::Duration;

use crate::cli::server::ServerArgs;
use crate::config::scenario::{Scenario, Workload};
use crate::error::Error;
use crate::server_stats::Settings;

/// Shortest `--server-interval`: the sampler's requests stay a trickle beside the load.
const SHORTEST: Duration = Duration::from_millis(100);

/// How the run samples its nodes: by default every second in Vault mode; never in URL
/// mode (no Vault to ask) or with `--no-server-stats`.
pub fn settings(a: &ServerArgs, scenario: &Scenario) -> Result<Option<Settings>, Error> {
    if a.no_server_stats || matches!(scenario.workload, Workload::Url(_)) {
        return Ok(None);
    }
    let interval = a.server_interval.unwrap_or(Duration::from_secs(1));
    if interval < SHORTEST {
        return Err(Error::input(format!(
            "--server-interval {} is shorter than {}: sample at most ten times a second",
            humantime::format_duration(interval),
            humantime::format_duration(SHORTEST)
        )));
    }
    Ok(Some(Settings {
        interval,
        pids: a.server_pid.clone(),
    }))
}
