//! `vblast setup` and `vblast cleanup`: the fixture the shards of one run share, made
//! once before them and removed once after them (`--run-id ID` and the run's --op flags).

use crate::cli::RunArgs;
use crate::config::scenario::Workload;
use crate::error::{Ending, Error};
use crate::session::fixtures::shared_session;
use crate::signals::Stop;
use crate::vault::fixture::{Mode, check_ops};

use super::Given;
use super::scenario::{scenario, validate};

/// `vblast setup` (`remove` false) and `vblast cleanup` (`remove` true).
pub fn run(args: &RunArgs, given: Given, stop: &Stop, remove: bool) -> Ending {
    let name = if remove { "cleanup" } else { "setup" };
    let Some(run_id) = args.shard.run_id.clone() else {
        return Ending::Failed(Error::input(format!(
            "vblast {name} needs --run-id (the one the shards are given)"
        )));
    };
    let Some(op) = args.ops.op.as_deref() else {
        return Ending::Failed(Error::input(format!(
            "vblast {name} needs --op (the operations and flags the shards run)"
        )));
    };
    if args.ops.no_setup || args.url.is_some() || args.shard.shard.is_some() {
        return Ending::Failed(Error::input(format!(
            "vblast {name} takes the run's Vault flags without --no-setup, --shard or a URL"
        )));
    }
    if let Err(e) = check_ops(op, &format!("vblast {name}"))
        .map_err(Error::input)
        .and_then(|_| validate(args))
    {
        return Ending::Failed(e);
    }
    let scenario = match scenario(args, given) {
        Ok(s) => s,
        Err(e) => return Ending::Failed(e),
    };
    if !matches!(scenario.workload, Workload::Vault(_)) {
        return Ending::Failed(Error::input(format!("vblast {name} needs --op")));
    }
    let mode = if remove { Mode::Remove } else { Mode::Create };
    match shared_session(&scenario, stop, mode, &run_id) {
        Ok(what) if remove => {
            for w in &what {
                eprintln!("vblast: removed {w}");
            }
            // What a shard 0 that was killed left of the shards' rendezvous.
            match crate::session::fixtures::rendezvous::remove_leftover(&scenario, &run_id) {
                Ok(Some(m)) => {
                    eprintln!("vblast: removed {m}");
                    Ending::Ok
                }
                Ok(None) => Ending::Ok,
                Err(e) => Ending::Failed(e),
            }
        }
        Ok(_) => Ending::Ok,
        Err(e) => Ending::Failed(e),
    }
}

#[cfg(test)]
mod tests {
    use super::super::scenario::sharding;
    use super::*;
    use crate::config::scenario::Scenario;
    use crate::session::fixtures::rendezvous::{SHARDS_WAIT, WAIT_MARGIN, wait_bound};
    use std::time::{Duration, Instant, SystemTime};

    fn args(v: &[&str]) -> (RunArgs, Scenario) {
        use clap::Parser;
        let mut all = vec!["vblast", "--address", "http://127.0.0.1:9", "--token", "t"];
        all.extend_from_slice(v);
        let a = crate::cli::Cli::try_parse_from(all).unwrap().run;
        let s = scenario(&a, Given::default()).unwrap();
        (a, s)
    }

    #[test]
    fn shard0_waits_as_long_as_the_schedule_or_the_flag_says() {
        let (now, wall) = (Instant::now(), SystemTime::now());
        let at = humantime::format_rfc3339_seconds(wall + Duration::from_secs(100)).to_string();
        let base = ["--op", "kv-read", "--shard", "0/3", "--run-id", "r"];
        let bound = |extra: &[&str]| {
            let mut v = base.to_vec();
            v.extend_from_slice(extra);
            let (a, s) = args(&v);
            wait_bound(&sharding(&a), &s, now, wall).duration_since(now)
        };
        assert_eq!(bound(&["-n", "10"]), SHARDS_WAIT);
        assert_eq!(
            bound(&["-n", "10", "--shards-wait", "90s"]),
            Duration::from_secs(90)
        );
        // Start + duration + request timeout + margin, from now (the start is 100 s ahead,
        // to the second).
        let d = bound(&["-z", "30s", "--timeout", "5s", "--start-at", &at]);
        let expect = Duration::from_secs(100 + 30 + 5) + WAIT_MARGIN;
        assert!(d <= expect && d + Duration::from_secs(1) > expect, "{d:?}");
        // The flag wins over the schedule.
        assert_eq!(
            bound(&["-z", "30s", "--start-at", &at, "--shards-wait", "2s"]),
            Duration::from_secs(2)
        );
        // A shard 0 that ended long after the schedule still gives the others 10 s.
        let (a, s) = args(&[&base[..], &["-z", "30s", "--start-at", &at]].concat());
        let late = wall + Duration::from_secs(3600);
        assert_eq!(
            wait_bound(&sharding(&a), &s, now, late).duration_since(now),
            Duration::from_secs(10)
        );
    }

    #[test]
    fn external_setup_takes_an_optional_value() {
        let base = ["--op", "kv-read", "--shard", "1/3", "--run-id", "r"];
        let flag = |extra: &[&str]| args(&[&base[..], extra].concat()).0.shard.external_setup;
        assert!(!flag(&[]));
        assert!(flag(&["--external-setup"]));
        assert!(flag(&["--external-setup=true"]));
        assert!(!flag(&["--external-setup=false"]));
    }
}
