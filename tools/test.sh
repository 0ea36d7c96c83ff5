#!/usr/bin/env bash
# The one test command: check the layers and the functions' lengths, install deps, build,
# run all tests: the unit tests, the one integration test binary (tests/integration/, see
# docs/testing.md) and the doc tests. Every test binary runs even when one fails (--no-fail-fast); the last line is
# the total over all of them, "N passed, N failed", and the exit status is non-zero when
# anything failed.
# Extra arguments are passed to the test binaries (after --), e.g.
#   tools/test.sh --nocapture
# VBLAST_TEST_TIMEOUT (default 40m, any `timeout` duration) bounds the test run: a hang
# fails with a message instead of running until CI gives up.
# VBLAST_STRICT_TIMING=1 adds the exact timing checks (for a quiet machine).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# No import cycles between the top-level modules (when the tree has the check).
if [ -x tools/check-layers.sh ]; then
    tools/check-layers.sh || { echo "test: FAILED: tools/check-layers.sh" >&2; exit 1; }
fi
# No function over 100 lines without its reason (issue 21, item 7).
if [ -x tools/check-fn-length.sh ]; then
    tools/check-fn-length.sh || { echo "test: FAILED: tools/check-fn-length.sh" >&2; exit 1; }
fi
# One meaning per type name.
if [ -x tools/check-type-names.sh ]; then
    tools/check-type-names.sh || { echo "test: FAILED: tools/check-type-names.sh" >&2; exit 1; }
fi

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
# --no-fail-fast: a failing test binary does not hide the results of the ones after it.
# The documented skips (docs/testing.md) are listed in $VBLAST_TEST_SKIPS.
log="$(mktemp "${TMPDIR:-/tmp}/vblast-test.XXXXXX")"
VBLAST_TEST_SKIPS="$(mktemp "${TMPDIR:-/tmp}/vblast-skips.XXXXXX")"
export VBLAST_TEST_SKIPS
timeout --kill-after=30s "$limit" cargo test --release --no-fail-fast -- --test-threads=2 "$@" \
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
        "stopped after ${elapsed}s: a test hangs. Run one area at a time" \
        "(cargo test --release --test integration AREA:: -- --nocapture) to find it." >&2
    rm -f "$log" "$VBLAST_TEST_SKIPS"
    exit 124
fi
echo "test: tests took ${elapsed}s (exit $rc)" >&2
sleep 0.2
while IFS= read -r skip; do
    echo "test: skipped (documented in docs/testing.md): $skip" >&2
done < "$VBLAST_TEST_SKIPS"
# One closing line over every test binary (cargo's own last line is the doc-tests' count).
read -r passed failed < <(awk '/^test result:/ { for (i = 1; i <= NF; i++) {
     if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i } }
     END { printf "%d %d\n", p, f }' "$log")
# Why each failed test failed, last, where a shortened log still shows it: its panic's
# place, its message's first line and an assertion's left and right, each cut to 300
# characters (a message may carry a whole report).
if [ "$failed" -ne 0 ]; then
    echo "test: why each failed test failed:" >&2
    awk '/^---- .* stdout ----$/ { name = $2; inside = 1; next }
         /^failures:$/ || /^note: / { inside = 0; first = 0 }
         inside && /panicked at/ { print "  " name ": " substr($0, 1, 300); first = 1; next }
         inside && first { print "    " substr($0, 1, 300); first = 0; next }
         inside && /^ *(left|right): / { print "    " substr($0, 1, 300) }' "$log" >&2
fi
rm -f "$log" "$VBLAST_TEST_SKIPS"
if [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then
    # A binary that did not build or died before its "test result:" line counts no failure.
    echo "test: FAILED: cargo test exited $rc without a failed test counted: a test binary" \
        "did not build or crashed (see above)" >&2
fi
if [ "$failed" -ne 0 ] && [ "$rc" -eq 0 ]; then
    rc=1
fi
echo "$passed passed, $failed failed"
exit "$rc"
