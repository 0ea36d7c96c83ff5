#!/usr/bin/env bash
# usage: tools/bench/seeding.sh   [env: RUNS=3 SECRETS=20000 SIZE=1024 PIN_SERVER=1]
# Issue 9's setup goal: seeding SECRETS KV v2 secrets of SIZE bytes into an OpenBao dev server
# with vblast (its setup, reported as run.setup_s: mount, concurrent seeding, readiness) against
# the same writes sent one at a time on one keep-alive connection (vault-benchmark's way), by a
# small Python http.client loop. Server pinned to core 0 (PIN_SERVER=0: both cores), both clients
# to core 1. Prints each
# run's seconds and the median ratio vblast / sequential (goal <= 0.33). Never asserts.
source "$(dirname "$0")/lib.sh"

RUNS="${RUNS:-3}"
SECRETS="${SECRETS:-20000}"
SIZE="${SIZE:-1024}"

need curl jq python3 taskset
build
start_bao
[ "${PIN_SERVER:-1}" = 1 ] && taskset -a -pc 0 "${BENCH_PIDS[-1]}" >/dev/null

sequential() { # prefix -> seconds
    taskset -c 1 python3 - "$BAO_PORT" "$1" "$SECRETS" "$SIZE" <<'PY'
import http.client, json, sys, time
port, prefix, n, size = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
body = json.dumps({"data": {"value": "x" * size}})
c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
t = time.monotonic()
for i in range(n):
    c.request("POST", f"/v1/secret/data/{prefix}-{i}", body, {"X-Vault-Token": "root"})
    r = c.getresponse(); r.read()
    if r.status != 200:
        sys.exit(f"write {i}: status {r.status}")
print(f"{time.monotonic() - t:.3f}")
PY
}

v_runs=(); s_runs=()
for run in $(seq "$RUNS"); do
    show "taskset -c 1 vblast --op kv-read --secrets $SECRETS --secret-size $SIZE -c 1 -n 1 --format json"
    v="$(VAULT_ADDR="$BAO_ADDR" VAULT_TOKEN=root taskset -c 1 "$VBLAST" --op kv-read \
        --secrets "$SECRETS" --secret-size "$SIZE" -c 1 -n 1 --format json | jq -r '.run.setup_s')"
    show "sequential: $SECRETS writes on one keep-alive connection (python http.client)"
    s="$(sequential "run$run")" || die "sequential writes failed"
    log "run $run: vblast setup ${v}s, sequential ${s}s, ratio $(ratio "$v" "$s")"
    v_runs+=("$v"); s_runs+=("$s")
done
vm="$(printf '%s\n' "${v_runs[@]}" | median)"
sm="$(printf '%s\n' "${s_runs[@]}" | median)"
log "seeding $SECRETS x $SIZE B: vblast ${vm}s, sequential ${sm}s, ratio $(ratio "$vm" "$sm") (median of $RUNS; goal <= 0.33)"
