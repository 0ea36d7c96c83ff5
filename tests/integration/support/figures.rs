//! Checks on the figures vblast reports that several areas share: integers, consistent
//! percentiles, and whether exact timing is asserted (`VBLAST_STRICT_TIMING`).

use serde_json::Value;

/// `VBLAST_STRICT_TIMING=1`: also assert exact timing figures (rates, lateness, upper
/// bounds on durations), which only hold on an otherwise idle machine. Without it, tests
/// assert only what noise cannot break: counts, and directions such as "never early".
pub fn strict_timing() -> bool {
    std::env::var_os("VBLAST_STRICT_TIMING").is_some_and(|v| v != "0")
}

/// A latency summary (`latency_ms`, `service_ms`, `connect_ms`, ...) of `count` samples
/// whose figures are consistent: min <= p50 <= p75 <= ... <= p9999 <= max, and the mean
/// between min and max.
pub fn assert_percentiles(v: &Value, count: u64, what: &str) {
    assert_eq!(v["count"].as_u64(), Some(count), "{what}.count: {v}");
    let keys = [
        "min", "p50", "p75", "p90", "p95", "p99", "p999", "p9999", "max",
    ];
    let vals: Vec<f64> = keys
        .iter()
        .map(|k| {
            v[*k]
                .as_f64()
                .unwrap_or_else(|| panic!("{what}.{k} is not a number: {v}"))
        })
        .collect();
    for (i, pair) in vals.windows(2).enumerate() {
        assert!(
            pair[0] <= pair[1],
            "{what}: {} {} > {} {}: {v}",
            keys[i],
            pair[0],
            keys[i + 1],
            pair[1]
        );
    }
    let mean = v["mean"]
        .as_f64()
        .unwrap_or_else(|| panic!("{what}.mean is not a number: {v}"));
    let (min, max) = (vals[0], vals[keys.len() - 1]);
    assert!(
        min <= mean && mean <= max,
        "{what}: mean {mean} not in [{min}, {max}]: {v}"
    );
    if count > 0 {
        assert!(max > 0.0, "{what}: {count} samples, max 0: {v}");
    }
}

/// `v` as an unsigned integer; fails the test when it is not one.
pub fn u(v: &Value) -> u64 {
    v.as_u64()
        .unwrap_or_else(|| panic!("not an unsigned integer: {v}"))
}

/// How many requests a sweep step of 1 s at rate `load` holds: the schedule places
/// exactly rate x duration requests in each measured second, and a step measured again
/// (`repeats`: unclear, or one side of a non-monotone pair) pools every measurement.
pub fn step_requests(step: &Value) -> u64 {
    u(&step["load"]) * (1 + step["repeats"].as_u64().unwrap_or(0))
}
