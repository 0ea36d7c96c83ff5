//! `vblast --worker` (internal): this process runs the engine for a coordinator, speaking
//! the protocol on stdin and stdout (`orchestrate::worker`).

use crate::signals::Stop;

/// Runs as a worker process; returns the exit status.
pub fn run(stop: &Stop) -> i32 {
    crate::orchestrate::worker::main(stop)
}
