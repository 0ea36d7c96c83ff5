#!/usr/bin/env bash
# usage: tools/bench/sweep-overhead.sh   [env: RUNS=3 CONNS="100 1000" STEPS=4 STEP=2s WARMUP=500ms RATES=200..3000]
# What a sweep spends beyond its load (issue 11's performance goal): a rate sweep against an
# OpenBao dev server (server on core 0, vblast on core 1), RUNS times per connection count.
# From each step of the results file (`timing` of every step):
#   report_ready_ms  the step's row judged and printed after its end   (goal < 100 ms)
#   overhead_ms      the step's wall time beyond its warm-up + duration (connections are kept
#                    across rate steps, so only the first step opens them)
# Prints the median and the maximum of each over all steps of all runs. Never asserts.
source "$(dirname "$0")/lib.sh"

RUNS="${RUNS:-3}"
CONNS="${CONNS:-100 1000}"
STEPS="${STEPS:-4}"
STEP="${STEP:-2s}"
WARMUP="${WARMUP:-500ms}"
RATES="${RATES:-200..3000}"

need taskset curl jq
build
start_bao
taskset -pc 0 "${BENCH_PIDS[-1]}" >/dev/null

SUMMARY=()
for c in $CONNS; do
    READY=""; LATER=""; FIRST=""
    for i in $(seq "$RUNS"); do
        out="$BENCH_TMP/sweep-$c-$i.json"
        show "VAULT_TOKEN=root taskset -c 1 $VBLAST sweep --address $BAO_ADDR --op kv-read --rate $RATES --steps $STEPS --step-duration $STEP --step-warmup $WARMUP --slo p99=200ms -c $c --output $out"
        VAULT_TOKEN=root timeout -k 5 600 taskset -c 1 "$VBLAST" sweep --address "$BAO_ADDR" \
            --op kv-read --rate "$RATES" --steps "$STEPS" --step-duration "$STEP" \
            --step-warmup "$WARMUP" --slo p99=200ms -c "$c" --output "$out" \
            >"$out.txt" 2>"$out.err" || true
        jq -e '.steps | length > 0' "$out" >/dev/null 2>&1 \
            || die "sweep -c $c gave no steps: $(tail -n 5 "$out.err")"
        log "  -c $c run $i: $(jq -r '[.steps[] | "\(.load)/s ready \(.timing.report_ready_ms*100|round/100) ms, beyond plan \(.timing.overhead_ms|round) ms"] | join("; ")' "$out")"
        READY+="$(jq -r '.steps[].timing.report_ready_ms' "$out")"$'\n'
        FIRST+="$(jq -r '.steps[0].timing.overhead_ms' "$out")"$'\n'
        LATER+="$(jq -r '.steps[1:][].timing.overhead_ms' "$out")"$'\n'
    done
    max() { sort -g | tail -n1; }
    r_med="$(grep . <<<"$READY" | median)"; r_max="$(grep . <<<"$READY" | max)"
    l_med="$(grep . <<<"$LATER" | median)"; l_max="$(grep . <<<"$LATER" | max)"
    f_med="$(grep . <<<"$FIRST" | median)"
    SUMMARY+=("-c $c: report ready after a step's end: median $(printf '%.2f' "$r_med") ms, max $(printf '%.2f' "$r_max") ms (goal < 100 ms); later steps beyond their plan: median $(printf '%.0f' "$l_med") ms, max $(printf '%.0f' "$l_max") ms; first step (opens the connections): median $(printf '%.0f' "$f_med") ms")
done

log ""
log "=== sweep overhead, $RUNS runs each, load average $(cut -d' ' -f1-3 /proc/loadavg) ==="
[ -z "$BUILD_NOTE" ] || log "$BUILD_NOTE"
for s in "${SUMMARY[@]}"; do log "$s"; done
