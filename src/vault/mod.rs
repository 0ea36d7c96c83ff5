//! Everything that knows Vault's API: the blocking setup client, the preflight checks and
//! the operation registry (`ops`); a setup phase's many requests at the server's pace
//! (`bulk`, its connections set by `ramp`) and the setup's progress and phase times
//! (`progress`). The load engine knows none of it.

pub mod audit;
pub mod bulk;
pub mod client;
pub mod fixture;
pub mod login;
pub mod ops;
pub mod preflight;
pub mod progress;
pub mod ramp;
