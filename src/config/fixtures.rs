//! How a run names, records and removes its fixtures, as a library value: its run id,
//! what this process does with a fixture (`Mode`), where the state file goes and how
//! long cleanup may wait for the server. The session builds its naming from it
//! (`vault::fixture::Naming`); nothing here reads a flag.

use std::path::PathBuf;
use std::time::Duration;

/// What this process does with the fixture of its run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Mode {
    /// Not shared: this run creates its own fixture and removes it (the default).
    #[default]
    Own,
    /// `vblast setup`: create the shared fixture and keep it.
    Create,
    /// A shard: use the fixture shard 0 (or `vblast setup`) made; only per-shard
    /// credentials are its own.
    Join,
    /// `vblast cleanup`: remove the shared fixture.
    Remove,
}

/// The default of `--cleanup-timeout`: disabling an auth path revokes every token its
/// logins made, which takes the server minutes for a few hundred thousand.
pub const CLEANUP_TIMEOUT: Duration = Duration::from_secs(600);

/// How a run's fixtures are named and removed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FixturePlan {
    /// `--run-id` (None: the session draws one).
    pub run_id: Option<String>,
    pub mode: Mode,
    /// `--external-setup`: the fixture comes from `vblast setup` (for messages).
    pub external: bool,
    /// How long cleanup waits for the server to remove what the run made.
    pub cleanup_timeout: Duration,
    /// Where the state file of the run goes (None: no state file).
    pub state_dir: Option<PathBuf>,
    /// `--audit-path`: a file audit device enabled for the run, its log written there.
    pub audit_path: Option<PathBuf>,
    /// `--audit-log`: the log of a file audit device the server already has, counted.
    pub audit_log: Option<PathBuf>,
}

impl Default for FixturePlan {
    fn default() -> FixturePlan {
        FixturePlan {
            run_id: None,
            mode: Mode::Own,
            external: false,
            cleanup_timeout: CLEANUP_TIMEOUT,
            state_dir: None,
            audit_path: None,
            audit_log: None,
        }
    }
}
