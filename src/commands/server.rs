//! The server-side sampling's flags (`cli::server`) as the library's `server_stats::Settings`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::cli::server::ServerArgs;
use crate::config::scenario::{Scenario, Workload};
use crate::error::Error;
use crate::server_stats::Settings;
use crate::server_stats::pprof::Profiling;

/// Shortest `--server-interval`: the sampler's requests stay a trickle beside the load.
const SHORTEST: Duration = Duration::from_millis(100);

/// How the run samples its nodes: by default every second in Vault mode; never in URL
/// mode (no Vault to ask) or with `--no-server-stats`.
pub fn settings(
    a: &ServerArgs,
    scenario: &Scenario,
    output: Option<&Path>,
) -> Result<Option<Settings>, Error> {
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
        pprof: profiling(a, output)?,
    }))
}

/// `--pprof-interval`, `--pprof-dir` (default: beside the results file), the directory
/// checked now, before the first request.
fn profiling(a: &ServerArgs, output: Option<&Path>) -> Result<Option<Profiling>, Error> {
    let Some(interval) = a.pprof_interval else {
        return Ok(None);
    };
    if interval < Duration::from_secs(2) {
        return Err(Error::input(format!(
            "--pprof-interval {}: give 2s or more (each interval holds a CPU profile of half of it)",
            humantime::format_duration(interval)
        )));
    }
    let beside = output
        .filter(|o| o.as_os_str() != "-")
        .and_then(Path::parent)
        .filter(|d| !d.as_os_str().is_empty());
    let dir = match (&a.pprof_dir, beside) {
        (Some(d), _) => d.clone(),
        (None, Some(d)) => d.to_path_buf(),
        (None, None) => PathBuf::from("."),
    };
    let p = Profiling { interval, dir };
    p.check().map_err(Error::input)?;
    Ok(Some(p))
}
