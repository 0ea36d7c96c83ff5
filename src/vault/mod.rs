//! Everything that knows Vault's API: the blocking setup client, the preflight checks and
//! the operation registry (`ops`). The load engine knows none of it.

pub mod audit;
pub mod client;
pub mod fixture;
pub mod ops;
pub mod preflight;
