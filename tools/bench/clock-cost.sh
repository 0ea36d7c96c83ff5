#!/usr/bin/env bash
# usage: tools/bench/clock-cost.sh   [env: RUNS=5 DURATION=3s CONNS=64 TX=1]
# Issue 41, item 3: the client CPU (user+sys) per request with --clock kernel against
# --clock user, keep-alive against a canned nginx kv response, one client thread pinned to
# core 1, nginx pinned to core 0, the two clocks alternating run by run. Prints each run,
# the medians and their ratio kernel/user (the goal: within 1.10 for kernel to be the
# default). With TX=1 (the default), --clock kernel-tx (the kernel's TX stamp as each send)
# runs too, and its ratio to both is printed. Figures are printed, never asserted.
source "$(dirname "$0")/lib.sh"

RUNS="${RUNS:-5}"
DURATION="${DURATION:-3s}"
CONNS="${CONNS:-64}"
TX="${TX:-1}"
LIMIT=$(( ${DURATION%s} + 60 ))

need taskset jq /usr/bin/time
build
start_nginx 0
URL="$NGINX_URL"

run_clock() { # clock -> "REQUESTS USER SYS"
    local out="$BENCH_TMP/$1.out" tf="$BENCH_TMP/$1.time"
    show "taskset -c 1 $VBLAST -t 1 -c $CONNS -z $DURATION --clock $1 --no-server-stats --format json $URL"
    timeout -k 5 "$LIMIT" /usr/bin/time -f '%U %S' -o "$tf" taskset -c 1 "$VBLAST" -t 1 -c "$CONNS" \
        -z "$DURATION" --clock "$1" --no-server-stats --format json "$URL" >"$out" 2>"$out.err" \
        || { log "vblast --clock $1 failed: $(cat "$out.err")"; return 1; }
    echo "$(jq -r .requests "$out") $(cat "$tf")"
}
per_request_us() { awk '{ printf "%.3f\n", ($2 + $3) * 1e6 / $1 }'; }

user=(); kernel=(); tx=()
for i in $(seq "$RUNS"); do
    u="$(run_clock user | per_request_us)"; user+=("$u")
    k="$(run_clock kernel | per_request_us)"; kernel+=("$k")
    t=-
    if [ "$TX" = 1 ]; then t="$(run_clock kernel-tx | per_request_us)"; tx+=("$t"); fi
    log "run $i: user $u us/request, kernel $k us/request, kernel-tx $t us/request"
done
mu="$(printf '%s\n' "${user[@]}" | median)"
mk="$(printf '%s\n' "${kernel[@]}" | median)"
log ""
log "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
[ -n "$BUILD_NOTE" ] && log "$BUILD_NOTE"
log "median client CPU per request: user clock $mu us, kernel clock $mk us"
log "kernel/user: $(ratio "$mk" "$mu")  (goal for the default: <= 1.10)"
if [ "$TX" = 1 ]; then
    mt="$(printf '%s\n' "${tx[@]}" | median)"
    log "median client CPU per request: kernel-tx clock $mt us"
    log "kernel-tx/user: $(ratio "$mt" "$mu"), kernel-tx/kernel: $(ratio "$mt" "$mk")  (opt-in)"
fi
