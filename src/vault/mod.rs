pub mod cert;
pub mod client;
pub mod kv;
pub mod setup;
