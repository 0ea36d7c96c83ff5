#!/usr/bin/env bash
# The long-login check of docs/cleanup.md at full size: an approle-login run of N logins
# (default 50,000) against a real OpenBao dev server ends with exit 0, every login ok, no
# "is left" line and nothing left on the server (the disable that revokes N tokens is
# waited for, within --cleanup-timeout). The suite runs the same test with 10,000.
# Usage: tools/soak-logins.sh [N]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
VBLAST_LOGINS="${1:-50000}" exec cargo test --release --test integration \
    cleanup::a_long_login_run_ends_with_exit_0_and_nothing_left -- --exact --nocapture
