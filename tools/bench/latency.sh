#!/usr/bin/env bash
# usage: tools/bench/latency.sh   [env: RUNS=5 DURATION=5s RATE=2000 RATE_CONNS=8]
# Latency reported against a canned nginx kv response (nginx pinned to core 0, client to core 1).
# Like with like: both closed model at full speed over a single keep-alive connection,
#   vblast -t 1 -c 1 -z 5s   vs   wrk -t1 -c1 -d5s --latency
# p50 and p99 of each; the median over RUNS alternating runs of vblast p50 / wrk p50 (goal <= 1.2).
# For reference only, vblast's open model at a modest rate (-R 2000 -c 8), whose latency counts
# from each request's scheduled start, against the same wrk figures. Never asserts.
source "$(dirname "$0")/lib.sh"

RUNS="${RUNS:-5}"
DURATION="${DURATION:-5s}"
RATE="${RATE:-2000}"
RATE_CONNS="${RATE_CONNS:-8}"
LIMIT=$(( ${DURATION%s} + 60 ))

need wrk taskset curl jq
build
start_nginx 0
URL="$NGINX_URL"

VP50=""; VP99=""; WP50=""; WP99=""; OP50=""; OP99=""; R50=""; R99=""

run_vblast() { # extra args...; prints "p50_us p99_us"
    local out="$BENCH_TMP/v.json" rc=0
    show "taskset -c 1 $VBLAST -t 1 $* -z $DURATION --format json $URL"
    timeout -k 5 "$LIMIT" taskset -c 1 "$VBLAST" -t 1 "$@" -z "$DURATION" --format json "$URL" \
        >"$out" 2>"$out.err" || rc=$?
    jq -e .requests "$out" >/dev/null 2>&1 || { log "vblast exit $rc: $(tail -n 5 "$out.err")"; return 1; }
    [ "$(jq -r .failed "$out")" = 0 ] || log "warning: vblast failed requests: $(jq -c .errors "$out")"
    log "  vblast $*: $(jq -r '"\(.requests) requests, \(.rps|round) req/s, p50 \(.latency_ms.p50) ms, p99 \(.latency_ms.p99) ms, max \(.latency_ms.max) ms, measured from \(.latency_measured_from), late \(.late), max_lag_ms \(.max_lag_ms)"' "$out")"
    jq -r '"\(.latency_ms.p50*1000) \(.latency_ms.p99*1000)"' "$out"
}

run_wrk() { # prints "p50_us p99_us"
    local out="$BENCH_TMP/wrk.out" rc=0
    show "taskset -c 1 wrk -t1 -c1 -d$DURATION --latency $URL"
    timeout -k 5 "$LIMIT" taskset -c 1 wrk -t1 -c1 -d"$DURATION" --latency "$URL" >"$out" 2>&1 || rc=$?
    grep -q ' requests in ' "$out" || { log "wrk exit $rc: $(cat "$out")"; return 1; }
    local p50 p99
    p50="$(awk '$1=="50%"{print $2}' "$out")"
    p99="$(awk '$1=="99%"{print $2}' "$out")"
    log "  wrk: $(awk '/ requests in /{print $1" requests"} /^Requests\/sec/{print $2" req/s"}' "$out" | paste -sd, -), p50 $p50, p99 $p99"
    echo "$(to_us "$p50") $(to_us "$p99")"
}

for i in $(seq "$RUNS"); do
    log "--- run $i ---"
    if [ $((i % 2)) -eq 1 ]; then
        v="$(run_vblast -c 1)"; w="$(run_wrk)"
    else
        w="$(run_wrk)"; v="$(run_vblast -c 1)"
    fi
    o="$(run_vblast -c "$RATE_CONNS" -R "$RATE")"
    read -r v50 v99 <<<"$v"; read -r w50 w99 <<<"$w"; read -r o50 o99 <<<"$o"
    VP50+="$v50"$'\n'; VP99+="$v99"$'\n'; WP50+="$w50"$'\n'; WP99+="$w99"$'\n'
    OP50+="$o50"$'\n'; OP99+="$o99"$'\n'
    R50+="$(ratio "$v50" "$w50")"$'\n'; R99+="$(ratio "$v99" "$w99")"$'\n'
    log "run $i: p50 us vblast $v50 wrk $w50 (ratio $(ratio "$v50" "$w50")); p99 us vblast $v99 wrk $w99; open model p50 $o50 p99 $o99"
done

m() { printf '%s' "$1" | median; }
echo
[ -z "$BUILD_NOTE" ] || echo "$BUILD_NOTE"
echo "=== summary (nginx core 0, client core 1; one keep-alive connection, closed model, full speed) ==="
echo "  p50 us per run: vblast $(printf '%s' "$VP50" | tr '\n' ' ')| wrk $(printf '%s' "$WP50" | tr '\n' ' ')"
echo "  p99 us per run: vblast $(printf '%s' "$VP99" | tr '\n' ' ')| wrk $(printf '%s' "$WP99" | tr '\n' ' ')"
printf 'latency: vblast -c 1 p50 %.1f us p99 %.1f us, wrk -c1 p50 %.1f us p99 %.1f us, ratio p50 %s p99 %s (median of %s; goal p50 ratio <= 1.2)\n' \
    "$(m "$VP50")" "$(m "$VP99")" "$(m "$WP50")" "$(m "$WP99")" "$(m "$R50")" "$(m "$R99")" "$RUNS"
printf 'latency (reference, open model -R %s -c %s): vblast p50 %.1f us p99 %.1f us; p50 vs wrk -c1 p50: %s\n' \
    "$RATE" "$RATE_CONNS" "$(m "$OP50")" "$(m "$OP99")" "$(ratio "$(m "$OP50")" "$(m "$WP50")")"
