#!/usr/bin/env bash
# The whole suite with real load beside it (issue 36 item 15): tools/test.sh runs while a
# loop of tools/bench/cpu-per-request.sh (nginx, vblast and wrk, pinned, waking thousands of
# times a second) runs for the suite's whole length. The load average is sampled every
# 30 s. The last line is the suite's own ("N passed, N failed"), after a line giving the
# date, the wall time and the load average (min/median/max); the exit status is the
# suite's. Record each run in docs/testing.md ("Under load").
#   tools/loaded-suite.sh [tools/test.sh arguments]
# LOAD_CMD replaces the load loop's command (default: one short cpu-per-request run).
set -euo pipefail
cd "$(dirname "$0")/.."

LOAD_CMD=${LOAD_CMD:-"RUNS=1 STRACE=0 PEERS= DURATION=5s tools/bench/cpu-per-request.sh"}
out="$(mktemp -d "${TMPDIR:-/tmp}/vblast-loaded.XXXXXX")"
started="$(date -u '+%Y-%m-%d %H:%M UTC')"
start=$SECONDS

# The load loop and the sampler run in process groups of their own, stopped by group at the end.
setsid bash -c "while :; do { $LOAD_CMD; } >>'$out/load.log' 2>&1 || sleep 1; done" &
load_pid=$!
setsid bash -c "while :; do cut -d' ' -f1 /proc/loadavg; sleep 30; done" >"$out/loadavg" &
sampler_pid=$!
stop_load() {
    kill -TERM -- "-$load_pid" "-$sampler_pid" 2>/dev/null || true
    wait "$load_pid" "$sampler_pid" 2>/dev/null || true
}
trap stop_load EXIT

set +e
tools/test.sh "$@" 2>&1 | tee "$out/suite.log"
rc=${PIPESTATUS[0]}
set -e
stop_load
trap - EXIT

loads="$(sort -n "$out/loadavg" | awk '{ a[NR] = $1 } END {
    if (NR) printf "%s/%s/%s", a[1], a[int((NR + 1) / 2)], a[NR]; else printf "-" }')"
benches="$(grep -c '^cpu-per-request:' "$out/load.log" 2>/dev/null || true)"
echo "loaded-suite: started $started, $(( (SECONDS - start) / 60 )) min, load average" \
    "min/median/max $loads, $benches benchmark runs completed beside; logs in $out"
tail -n1 "$out/suite.log"
exit "$rc"
