#!/usr/bin/env bash
# The tests that need a quiet machine (issue 36 item 15): each is `#[ignore]`d in the suite
# with its reason, because what it provokes is timed against the load and a busy machine's
# own stalls blur it. Run them here, on an otherwise idle machine:
#   tools/quiet-tests.sh [test name filter]
# The suite (tools/test.sh) lists them as ignored; docs/testing.md names each.
set -euo pipefail
cd "$(dirname "$0")/.."
VBLAST_BAO="${VBLAST_BAO:-$(tools/deps.sh | tail -n1)}"
export VBLAST_BAO
echo "quiet-tests: load average now $(cut -d' ' -f1-3 /proc/loadavg) (meant for about 1 or less on 2 cores)" >&2
cargo test --release --test integration -- --ignored --test-threads=1 "$@"
