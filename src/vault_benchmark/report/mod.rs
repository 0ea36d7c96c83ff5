//! vault-benchmark's report layouts: vegeta's metrics (`vegeta`, the one model the three
//! are rendered from) and its terse table, verbose sections and JSON line.

pub mod json;
pub mod terse;
pub mod vegeta;
pub mod verbose;
