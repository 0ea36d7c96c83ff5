//! vault-benchmark's compatibility, and nothing else: what a vault-benchmark user brings
//! (its command line, its HCL files, its report layouts) taken as vault-benchmark takes it
//! and run by vblast. Nothing outside this folder knows vault-benchmark's flags, its HCL
//! syntax, its test-type table or its layouts; each operation declares its own test types
//! as data beside it (`vault::ops::vb`: the type's name and how its config keys map), the
//! way vault-benchmark keeps one file per test type.
//!
//! The folder spans layers (docs/design.md): each part is checked as a part of the layer
//! it serves (tools/check-layers.sh), so that nothing imports upward.
//! - `cli`: its arguments as clap gives them (command line);
//! - `command`: `vblast vault-benchmark run|review`, its Go-style flags (commands);
//! - `settle`: a file under a command line, flags over environment over file (commands);
//! - `hcl`: the HCL file read and checked, its tests mapped onto the registry (runs);
//! - `report`: vegeta's metrics and the terse, verbose and JSON layouts (rendering).

pub mod cli;
pub mod command;
pub mod hcl;
pub mod report;
pub mod settle;
