//! What a run is asked to do, as library values: the `Scenario` (target, token, TLS,
//! load, workload), its rate `schedule`, how it spreads over shards and source addresses
//! (`spread`), the nodes of a cluster (`cluster`), how its fixtures are named and removed
//! (`fixtures`), and the units its durations are
//! written in. Nothing here reads a flag: the commands build these values.

pub mod cluster;
pub mod fixtures;
pub mod scenario;
pub mod schedule;
pub mod spread;
pub mod units;
