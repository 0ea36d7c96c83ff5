//! ApacheBench's compatibility, and nothing else: `vblast ab` takes ab's command line as
//! ab parses it and reports as ab reports. Nothing outside this folder knows ab's flags,
//! its report's labels or its exit statuses.
//!
//! The folder spans layers (docs/design.md): each part is checked as a part of the layer
//! it serves (tools/check-layers.sh), so that nothing imports upward.
//! - `cli`: its arguments as clap gives them (command line);
//! - `command`: `vblast ab`, run and reported as ab does (commands);
//! - `options`: ab's getopt command line mapped onto a `Scenario` (commands);
//! - `report`: ab's report and `-e`'s CSV (rendering);
//! - `tls`: the TLS lines of ab's report, one handshake before the load (rendering).

pub mod cli;
pub mod command;
pub mod options;
pub mod report;
pub mod tls;
