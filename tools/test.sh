#!/usr/bin/env bash
# The one test command: install deps, build, run all tests.
# Extra arguments are passed to the test binaries (after --), e.g.
#   tools/test.sh --nocapture
# VBLAST_TEST_TIMEOUT (default 40m, any `timeout` duration) bounds the test run: a hang
# fails with a message instead of running until CI gives up.
# VBLAST_STRICT_TIMING=1 adds the exact timing checks (for a quiet machine).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

VBLAST_BAO="$(tools/deps.sh | tail -n1)"
export VBLAST_BAO
echo "test: VBLAST_BAO=$VBLAST_BAO" >&2

cargo build --release
# The benches are compiled (not run) so that they cannot rot unnoticed; in the release test
# profile, so that the test run below reuses what this builds.
cargo test --release --benches --no-run
# Fuzzing smoke run: 25 s per target (tools/fuzz.sh SECONDS for a real run).
tools/fuzz.sh 25

limit="${VBLAST_TEST_TIMEOUT:-40m}"
start=$SECONDS
# timeout runs the tests in a process group of their own (the servers they start too), and
# on expiry signals the whole group: TERM, then KILL 30 s later. Ctrl-C is passed on to that
# group, which is not the terminal's.
# Its output also goes to a log, whose "test result:" lines give the closing total.
log="$(mktemp "${TMPDIR:-/tmp}/vblast-test.XXXXXX")"
timeout --kill-after=30s "$limit" cargo test --release -- --test-threads=2 "$@" \
    > >(tee "$log") &
pid=$!
trap 'kill -INT -- "-$pid" 2>/dev/null || true' INT
trap 'kill -TERM -- "-$pid" 2>/dev/null || true' TERM
rc=0
while :; do
    wait "$pid" && rc=0 || rc=$?
    kill -0 "$pid" 2>/dev/null || break
done
trap - INT TERM
elapsed=$((SECONDS - start))
if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    echo "test: FAILED: the tests did not finish within $limit (VBLAST_TEST_TIMEOUT) and were" \
        "stopped after ${elapsed}s: a test hangs. Run one test binary at a time" \
        "(cargo test --release --test NAME -- --nocapture) to find it." >&2
    exit 124
fi
echo "test: tests took ${elapsed}s (exit $rc)" >&2
# One closing line over every test binary (cargo's own last line is the doc-tests' count).
sleep 0.2
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed/) p += $i;
     if ($(i+1) ~ /^failed/) f += $i } } END { printf "%d passed, %d failed\n", p, f }' "$log"
rm -f "$log"
exit "$rc"
