#!/usr/bin/env bash
# The one test command: install deps, build, run all tests.
# Extra arguments are passed to the test binaries (after --), e.g.
#   tools/test.sh --nocapture
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

VBLAST_BAO="$(tools/deps.sh | tail -n1)"
export VBLAST_BAO
echo "test: VBLAST_BAO=$VBLAST_BAO" >&2

cargo build --release
# Fuzzing smoke run: 25 s per target (tools/fuzz.sh SECONDS for a real run).
tools/fuzz.sh 25
cargo test --release -- --test-threads=2 "$@"
