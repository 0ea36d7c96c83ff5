//! vblast's integration tests, as one test binary: one module per area, each starting the
//! real servers it needs (see `support`) and running the vblast binary against them.
//! docs/testing.md says how to run one area or one test, and what each needs installed.

mod support;

mod capture;
mod catalogue;
mod chaos;
mod cleanup;
mod cluster;
mod core;
mod database;
mod deploy;
mod faults;
mod harness;
mod hosts;
mod html;
mod http2;
mod kubernetes;
mod lifecycle;
mod login;
mod margin;
mod messages;
mod metrics;
mod multihost;
mod open_model;
mod output;
mod profile;
mod progress;
mod protocols;
mod quotas;
mod redaction;
mod redirects;
mod reports;
mod results;
mod scaling;
mod schedule;
mod schema;
mod server_accounting;
mod server_stats;
mod server_stats_cluster;
mod session;
mod setup_phases;
mod shard;
mod shard_ops;
mod source_addrs;
mod sweep;
mod sweep_cluster;
mod sweep_steps;
mod tails;
mod tls;
mod vault_benchmark;
mod vb_types;
