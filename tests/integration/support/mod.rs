//! What the integration tests share, one file per server or job: each server handle
//! listens on 127.0.0.1 only, on a private port, and stops its process (by pid) or its
//! threads when dropped.
//!
//! - `openbao`: OpenBao dev servers and what a run leaves on them.
//! - `cluster`: a real OpenBao HA cluster (PostgreSQL storage, or raft).
//! - `raft`: a raft cluster started by tools/raft-cluster.sh.
//! - `nginx`: nginx with canned Vault-shaped responses.
//! - `postgres`, `mariadb`: private database servers for db-creds.
//! - `redis`: a private redis-server for the redis secrets types.
//! - `prometheus`: a private Pushgateway, and a Prometheus scraping it.
//! - `rabbitmq`: a private RabbitMQ (management plugin, own epmd) for rabbitmq-creds.
//! - `raw`: fault-injecting plain TCP servers, in-process.
//! - `tls_server`: an in-process rustls server for TLS edge cases.
//! - `certs`: a CA and a leaf certificate for the TLS servers.
//! - `kube_api`: the Kubernetes API stand-in (TLS, in-process) for the kubernetes engines.
//! - `kube_pod`: a thread in network and mount namespaces the test creates, where the Kubernetes
//!   API's documented names resolve to the stand-in and a pod's service-account files exist.
//! - `client`: a tiny blocking HTTP/1.1 client for checking a server's state.
//! - `vblast`: the binary under test as a `Command`.
//! - `run`: running it with a watchdog, capturing its output.
//! - `figures`: checks on the figures it reports.
//! - `deps`: the other programs the tests run, and the documented skips.
//! - `ports`, `process`: free ports, and the processes the servers run as.

pub mod certs;
pub mod client;
pub mod cluster;
pub mod deps;
pub mod figures;
pub mod kube_api;
pub mod kube_pod;
pub mod mariadb;
pub mod nginx;
pub mod openbao;
pub mod ports;
pub mod postgres;
pub mod process;
pub mod prometheus;
pub mod rabbitmq;
pub mod raft;
pub mod raw;
pub mod redis;
pub mod run;
pub mod tls_server;
pub mod vblast;
