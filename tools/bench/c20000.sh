#!/usr/bin/env bash
# usage: tools/bench/c20000.sh   [env: RUNS=3 CONNS=20000 REQUESTS=20000 AB_CONNS=15000 LIMIT=240 AB_20000=1]
# 20,000 concurrent kv-v2 reads against an OpenBao dev server: vblast -c 20000 -n 20000 --op kv-read
# vs ab -c 15000 -n 20000 (ab -c 20000 hits the 20,000-fd hard limit: shown once when AB_20000=1).
# Prints wall time of each (/usr/bin/time), vblast's peak RSS, successes and the median ratio
# vblast wall / ab wall (goal < 1) and vblast peak RSS (goal <= 64 MiB). Never asserts.
# vblast's wall time includes its Vault setup (mount, seeding --secrets, cleanup); its load phase
# alone (duration_s of its JSON report) is printed beside it.
source "$(dirname "$0")/lib.sh"

RUNS="${RUNS:-3}"
CONNS="${CONNS:-20000}"
REQUESTS="${REQUESTS:-20000}"
AB_CONNS="${AB_CONNS:-15000}"
LIMIT="${LIMIT:-240}"
AB_20000="${AB_20000:-1}"

need ab curl jq /usr/bin/time
build
start_bao
URL="$BAO_ADDR/v1/secret/data/foo"
show "curl -H 'X-Vault-Token: root' -X POST -d '{\"data\":{\"value\":\"bar\"}}' $URL"
curl -sf --max-time 10 -H 'X-Vault-Token: root' -X POST -d '{"data":{"value":"bar"}}' "$URL" >/dev/null \
    || die "could not write secret/data/foo"
curl -sf --max-time 10 -H 'X-Vault-Token: root' "$URL" | jq -e '.data.data.value == "bar"' >/dev/null \
    || die "could not read secret/data/foo back"
log "fd limits: soft $(ulimit -Sn), hard $(ulimit -Hn)"


V_WALL=""; V_LOAD=""; V_RSS=""; V_TREE=""; A_WALL=""; RATIOS=""; LRATIOS=""

run_vblast() {
    local out="$BENCH_TMP/v.json" tf="$BENCH_TMP/v.time" rc=0
    show "VAULT_ADDR=$BAO_ADDR VAULT_TOKEN=root /usr/bin/time -f '%e %M' $VBLAST -c $CONNS -n $REQUESTS --op kv-read --format json"
    VAULT_ADDR="$BAO_ADDR" VAULT_TOKEN=root timeout -k 5 "$LIMIT" /usr/bin/time -f '%e %M' -o "$tf" \
        "$VBLAST" -c "$CONNS" -n "$REQUESTS" --op kv-read --format json >"$out" 2>"$out.err" &
    local pid=$!
    rss_sampler "$pid" "$BENCH_TMP/v.rss" &
    local spid=$!
    wait "$pid" || rc=$?
    wait "$spid" || true
    if ! jq -e .requests "$out" >/dev/null 2>&1; then
        log "vblast exit $rc, no JSON report; stderr: $(tail -n 20 "$out.err"); time: $(cat "$tf" 2>/dev/null)"
        return 1
    fi
    local wall maxrss tree
    read -r wall maxrss < <(tail -n 1 "$tf")
    tree="$(cat "$BENCH_TMP/v.rss")"
    log "vblast: exit $rc, wall ${wall}s, load phase $(jq -r '.duration_s*1000|round/1000' "$out")s," \
        "requests $(jq -r .requests "$out"), ok $(jq -r .ok "$out"), failed $(jq -r .failed "$out")," \
        "processes $(jq -r .run.processes "$out"), connections opened $(jq -r .connections_opened "$out")," \
        "max RSS of one process $((maxrss / 1024)) MiB, sampled peak RSS of all vblast processes $((tree / 1024)) MiB"
    [ "$(jq -r .failed "$out")" = 0 ] || log "vblast errors: $(jq -c '{errors,status,error_messages}' "$out")"
    [ -s "$out.err" ] && log "vblast stderr: $(tail -n 5 "$out.err")"
    V_WALL+="$wall"$'\n'; V_LOAD+="$(jq -r .duration_s "$out")"$'\n'
    V_RSS+="$maxrss"$'\n'; V_TREE+="$tree"$'\n'
    LAST_V_WALL="$wall"; LAST_V_LOAD="$(jq -r .duration_s "$out")"
}

run_ab() { # conns -> sets LAST_A_WALL
    local c="$1" out="$BENCH_TMP/ab.out" tf="$BENCH_TMP/ab.time" rc=0
    show "/usr/bin/time -f '%e %M' ab -c $c -n $REQUESTS -H 'X-Vault-Token: root' $URL"
    timeout -k 5 "$LIMIT" /usr/bin/time -f '%e %M' -o "$tf" \
        ab -c "$c" -n "$REQUESTS" -H "X-Vault-Token: root" "$URL" >"$out" 2>&1 || rc=$?
    local wall maxrss
    read -r wall maxrss < <(tail -n 1 "$tf")
    if ! grep -q '^Complete requests:' "$out"; then
        log "ab -c $c: exit $rc after ${wall}s: $(grep -v '^This is\|^Copyright\|^Licensed\|^Benchmarking\|^$' "$out" | tail -n 3 | tr '\n' ' ')"
        LAST_A_WALL=""
        return 1
    fi
    log "ab -c $c: exit $rc, wall ${wall}s, $(grep -E '^(Complete|Failed) requests:|^Non-2xx|^Requests per second:' "$out" \
        | sed 's/  */ /g' | tr '\n' ';') max RSS $((maxrss / 1024)) MiB"
    LAST_A_WALL="$wall"
}

if [ "$AB_20000" = 1 ]; then
    log "--- ab at 20000 concurrent, once (expected to fail on the fd limit) ---"
    run_ab 20000 || true
fi

for i in $(seq "$RUNS"); do
    log "--- run $i ---"
    LAST_V_WALL=""; LAST_A_WALL=""
    if [ $((i % 2)) -eq 1 ]; then
        run_vblast || true; sleep 2; run_ab "$AB_CONNS" || true
    else
        run_ab "$AB_CONNS" || true; sleep 2; run_vblast || true
    fi
    A_WALL+="${LAST_A_WALL}"$'\n'
    if [ -n "$LAST_V_WALL" ] && [ -n "$LAST_A_WALL" ]; then
        RATIOS+="$(ratio "$LAST_V_WALL" "$LAST_A_WALL")"$'\n'
        LRATIOS+="$(ratio "$LAST_V_LOAD" "$LAST_A_WALL")"$'\n'
        log "run $i: wall ratio vblast/ab = $(ratio "$LAST_V_WALL" "$LAST_A_WALL"), load-phase ratio = $(ratio "$LAST_V_LOAD" "$LAST_A_WALL")"
    fi
    sleep 2
done

med() { printf '%s' "$1" | grep -v '^$' | median; }
echo
[ -z "$BUILD_NOTE" ] || echo "$BUILD_NOTE"
echo "=== summary (OpenBao dev server, kv-v2 read; vblast -c $CONNS -n $REQUESTS vs ab -c $AB_CONNS -n $REQUESTS) ==="
echo "  vblast wall s per run: $(printf '%s' "$V_WALL" | tr '\n' ' ')  (load phase: $(printf '%s' "$V_LOAD" | awk '{printf "%.2f ", $1}'))"
echo "  ab wall s per run: $(printf '%s' "$A_WALL" | tr '\n' ' ')"
echo "  vblast max RSS KiB per run (largest process): $(printf '%s' "$V_RSS" | tr '\n' ' '); sampled sum over its processes: $(printf '%s' "$V_TREE" | tr '\n' ' ')"
printf 'c20000: vblast wall %.2f s (load phase %.2f s), ab -c %s wall %.2f s, ratio %s (load phase %s) (median of %s; goal < 1); vblast peak RSS %.1f MiB one process, %.1f MiB all processes (goal <= 64 MiB)\n' \
    "$(med "$V_WALL")" "$(med "$V_LOAD")" "$AB_CONNS" "$(med "$A_WALL")" "$(med "$RATIOS")" "$(med "$LRATIOS")" "$RUNS" \
    "$(awk -v k="$(med "$V_RSS")" 'BEGIN{print k/1024}')" "$(awk -v k="$(med "$V_TREE")" 'BEGIN{print k/1024}')"
