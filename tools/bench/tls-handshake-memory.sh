#!/usr/bin/env bash
# usage: tools/bench/tls-handshake-memory.sh   [env: RUNS=3 CONNS=15000 REQUESTS=20000 LIMIT=300 PEERS="ab h2load"]
# Issue 26 item 1: memory per TLS connection being opened. A handshake per request
# (vblast --no-keepalive) over TLS against an OpenBao -dev-tls server, kv-v2 reads of one
# secret, -c CONNS -n REQUESTS, against ab and h2load --h1 (Connection: close) at the same
# point in the same invocation. Prints each client's peak RSS (vblast: the sampled sum over
# all its processes, as tools/bench/c20000.sh; ab, h2load: /usr/bin/time's max RSS, one
# process each), wall time and successes, and the median ratios peer/vblast over RUNS
# alternating runs. Goal: vblast <= 96 MiB. Figures are printed, never asserted.
source "$(dirname "$0")/lib.sh"

RUNS="${RUNS:-3}"
CONNS="${CONNS:-15000}"
REQUESTS="${REQUESTS:-20000}"
LIMIT="${LIMIT:-300}"
PEERS="${PEERS-ab h2load}"

need curl jq /usr/bin/time
build
start_bao_tls
URL="$BAO_ADDR/v1/secret/data/foo"
show "curl --cacert $BAO_CA -H 'X-Vault-Token: root' -X POST -d '{\"data\":{\"value\":\"bar\"}}' $URL"
curl -sf --max-time 10 --cacert "$BAO_CA" -H 'X-Vault-Token: root' -X POST -d '{"data":{"value":"bar"}}' "$URL" >/dev/null \
    || die "could not write secret/data/foo"
log "fd limits: soft $(ulimit -Sn), hard $(ulimit -Hn)"

# Each runner appends "PEAK_KIB WALL_S OK" to its figures and logs the run.
V_RSS=""; V_WALL=""; A_RSS=""; A_WALL=""; H_RSS=""; H_WALL=""

run_vblast() {
    local out="$BENCH_TMP/v.json" tf="$BENCH_TMP/v.time" rc=0
    show "VAULT_ADDR=$BAO_ADDR VAULT_CACERT=$BAO_CA VAULT_TOKEN=root /usr/bin/time $VBLAST --no-keepalive -c $CONNS -n $REQUESTS -H 'X-Vault-Token: root' --timeout 120s --format json $URL"
    VAULT_ADDR="$BAO_ADDR" VAULT_CACERT="$BAO_CA" VAULT_TOKEN=root timeout -k 5 "$LIMIT" \
        /usr/bin/time -f '%e %M' -o "$tf" "$VBLAST" --no-keepalive -c "$CONNS" -n "$REQUESTS" \
        -H 'X-Vault-Token: root' --timeout 120s --format json "$URL" >"$out" 2>"$out.err" &
    local pid=$!
    rss_sampler "$pid" "$BENCH_TMP/v.rss" &
    local spid=$!
    wait "$pid" || rc=$?
    wait "$spid" || true
    if ! jq -e .requests "$out" >/dev/null 2>&1; then
        log "vblast exit $rc, no JSON report; stderr: $(tail -n 20 "$out.err")"
        return 1
    fi
    local wall maxrss tree
    read -r wall maxrss < <(tail -n 1 "$tf")
    tree="$(cat "$BENCH_TMP/v.rss")"
    log "vblast: exit $rc, wall ${wall}s, requests $(jq -r .requests "$out"), ok $(jq -r .ok "$out"), failed $(jq -r .failed "$out")," \
        "handshakes $(jq -r .tls_ms.count "$out") ($(jq -r .tls_resumed "$out") resumed), processes $(jq -r .run.processes "$out")," \
        "max RSS of one process $((maxrss / 1024)) MiB, sampled peak RSS of all vblast processes $((tree / 1024)) MiB"
    [ "$(jq -r .failed "$out")" = 0 ] || log "vblast errors: $(jq -c '{errors,error_messages}' "$out")"
    V_RSS+="$tree"$'\n'; V_WALL+="$wall"$'\n'
}

run_ab() {
    local out="$BENCH_TMP/ab.out" tf="$BENCH_TMP/ab.time" rc=0
    show "/usr/bin/time ab -c $CONNS -n $REQUESTS -H 'X-Vault-Token: root' $URL"
    timeout -k 5 "$LIMIT" /usr/bin/time -f '%e %M' -o "$tf" \
        ab -q -c "$CONNS" -n "$REQUESTS" -s 120 -H "X-Vault-Token: root" "$URL" >"$out" 2>&1 || rc=$?
    local wall maxrss
    read -r wall maxrss < <(tail -n 1 "$tf")
    if ! grep -q '^Complete requests:' "$out"; then
        log "ab: exit $rc after ${wall}s, max RSS $((maxrss / 1024)) MiB: $(grep -v '^This is\|^Copyright\|^Licensed\|^Benchmarking\|^$' "$out" | tail -n 3 | tr '\n' ' ')"
        return 1
    fi
    log "ab: exit $rc, wall ${wall}s, $(grep -E '^(Complete|Failed) requests:|^Non-2xx' "$out" | sed 's/  */ /g' | tr '\n' ';') max RSS $((maxrss / 1024)) MiB"
    A_RSS+="$maxrss"$'\n'; A_WALL+="$wall"$'\n'
}

run_h2load() {
    local out="$BENCH_TMP/h2load.out" tf="$BENCH_TMP/h2load.time" rc=0
    show "/usr/bin/time h2load --h1 -c $CONNS -n $REQUESTS -H 'Connection: close' -H 'X-Vault-Token: root' $URL"
    timeout -k 5 "$LIMIT" /usr/bin/time -f '%e %M' -o "$tf" \
        h2load --h1 -c "$CONNS" -n "$REQUESTS" -H 'Connection: close' -H "X-Vault-Token: root" "$URL" >"$out" 2>&1 || rc=$?
    local wall maxrss
    read -r wall maxrss < <(tail -n 1 "$tf")
    if ! grep -q '^requests:' "$out"; then
        log "h2load: exit $rc after ${wall}s, max RSS $((maxrss / 1024)) MiB: $(tail -n 3 "$out" | tr '\n' ' ')"
        return 1
    fi
    log "h2load: exit $rc, wall ${wall}s, $(grep '^requests:' "$out"); $(grep '^status codes:' "$out"); max RSS $((maxrss / 1024)) MiB"
    H_RSS+="$maxrss"$'\n'; H_WALL+="$wall"$'\n'
}

peers() {
    local p
    for p in $PEERS; do
        if command -v "$p" >/dev/null 2>&1; then "run_$p" || true; sleep 2; else log "$p not installed: skipped"; fi
    done
}

for i in $(seq "$RUNS"); do
    log "--- run $i/$RUNS ---"
    if [ $((i % 2)) -eq 1 ]; then
        run_vblast || true; sleep 2; peers
    else
        peers; run_vblast || true; sleep 2
    fi
done

m() { printf '%s' "$1" | grep -v '^$' | median; }
mib() { awk -v k="$1" 'BEGIN { if (k == "nan") print "nan"; else printf "%.1f\n", k / 1024 }'; }
v="$(m "$V_RSS")"; a="$(m "$A_RSS")"; h="$(m "$H_RSS")"
echo
[ -z "$BUILD_NOTE" ] || echo "$BUILD_NOTE"
echo "=== summary (OpenBao -dev-tls, kv-v2 read, a TLS handshake per request, -c $CONNS -n $REQUESTS; medians of $RUNS) ==="
echo "  vblast peak RSS KiB per run (all processes): $(printf '%s' "$V_RSS" | tr '\n' ' ') wall s: $(printf '%s' "$V_WALL" | tr '\n' ' ')"
echo "  ab max RSS KiB per run: $(printf '%s' "$A_RSS" | tr '\n' ' ') wall s: $(printf '%s' "$A_WALL" | tr '\n' ' ')"
echo "  h2load max RSS KiB per run: $(printf '%s' "$H_RSS" | tr '\n' ' ') wall s: $(printf '%s' "$H_WALL" | tr '\n' ' ')"
printf 'tls-handshake-memory: vblast %s MiB (goal <= 96 MiB), ab %s MiB, h2load %s MiB; ratio ab/vblast %s, h2load/vblast %s; per connection: vblast %s KiB\n' \
    "$(mib "$v")" "$(mib "$a")" "$(mib "$h")" "$(ratio "$a" "$v")" "$(ratio "$h" "$v")" \
    "$(awk -v k="$v" -v c="$CONNS" 'BEGIN { printf "%.1f", k / c }')"
