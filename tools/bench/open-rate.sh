#!/usr/bin/env bash
# usage: tools/bench/open-rate.sh   [env: RATES="5000 10000 20000 40000" RUNS=3 DURATION=4 CONNS=32]
# Client CPU (user+sys) per request at a fixed rate (the open model) against a canned nginx
# kv response: `vblast -R RATE` against `h2load --h1 --rps RATE/CONNS` (each of h2load's
# CONNS clients at its share), keep-alive, each client on one thread pinned to core 1, nginx
# pinned to core 0, RUNS alternating pairs per rate. Prints each pair, then per rate the
# median CPU per request of each and their ratio, with vblast's median p50 latency and the
# requests it sent late. Below saturation a client at a fixed rate is idle between sends:
# vblast wakes for each request's intended instant (a timerfd to the microsecond), h2load
# on libev's millisecond timeouts (its sends leave in batches), so the wake-ups weigh on
# vblast at low rates and fade as the rate nears what one thread holds. Never asserts.
source "$(dirname "$0")/lib.sh"

RATES="${RATES:-5000 10000 20000 40000}"
RUNS="${RUNS:-3}"
DURATION="${DURATION:-4}"
CONNS="${CONNS:-32}"
LIMIT=$(( DURATION + 60 ))
for rate in $RATES; do
    [ $(( rate / CONNS )) -ge 1 ] || die "rate $rate is below one request a second for each of h2load's $CONNS clients"
done

need h2load taskset curl jq /usr/bin/time
build
start_nginx 0
URL="$NGINX_URL"

per_request_us() { awk '{ if ($1 > 0) printf "%.2f\n", ($2 + $3) * 1e6 / $1; else print "nan" }'; }

run_vblast() { # rate: prints "REQUESTS USER SYS P50_MS LATE"
    local out="$BENCH_TMP/vblast.out" tf="$BENCH_TMP/vblast.time"
    show "taskset -c 1 $VBLAST -t 1 -c $CONNS -R $1 -z ${DURATION}s --format json --no-server-stats $URL"
    timeout -k 5 "$LIMIT" /usr/bin/time -f '%U %S' -o "$tf" taskset -c 1 "$VBLAST" -t 1 -c "$CONNS" \
        -R "$1" -z "${DURATION}s" --format json --no-server-stats "$URL" >"$out" 2>"$out.err" \
        || log "vblast: exit status not 0: $(tail -n 1 "$out.err")"
    echo "$(jq -r .requests "$out") $(tail -n 1 "$tf") $(jq -r .latency_ms.p50 "$out") $(jq -r .late "$out")"
}

run_h2load() { # rate: prints "REQUESTS USER SYS"
    local out="$BENCH_TMP/h2load.out" tf="$BENCH_TMP/h2load.time" per=$(( $1 / CONNS ))
    show "taskset -c 1 h2load --h1 -c $CONNS --rps $per -D $DURATION $URL"
    timeout -k 5 "$LIMIT" /usr/bin/time -f '%U %S' -o "$tf" taskset -c 1 h2load --h1 -c "$CONNS" \
        --rps "$per" -D "$DURATION" "$URL" >"$out" 2>&1 || log "h2load: exit status not 0"
    echo "$(grep -o '[0-9]* succeeded' "$out" | cut -d' ' -f1) $(tail -n 1 "$tf")"
}

summary=()
for rate in $RATES; do
    v_us=(); h_us=(); p50=(); late=()
    for i in $(seq "$RUNS"); do
        v="$(run_vblast "$rate")"; h="$(run_h2load "$rate")"
        vu="$(echo "$v" | per_request_us)"; hu="$(echo "$h" | per_request_us)"
        log "rate $rate run $i: vblast $v -> $vu us/request; h2load $h -> $hu us/request"
        v_us+=("$vu"); h_us+=("$hu")
        p50+=("$(echo "$v" | cut -d' ' -f4)"); late+=("$(echo "$v" | cut -d' ' -f5)")
    done
    vm="$(printf '%s\n' "${v_us[@]}" | median)"; hm="$(printf '%s\n' "${h_us[@]}" | median)"
    summary+=("open-rate: $rate req/s: vblast $vm us/request (p50 $(printf '%s\n' "${p50[@]}" | median) ms, late ${late[*]}), h2load $hm; vblast/h2load $(ratio "$vm" "$hm")")
done
log ""
for s in "${summary[@]}"; do log "$s"; done
log "open-rate: -t 1 -c $CONNS, ${DURATION}s runs, $RUNS alternating pairs per rate; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
[ -n "$BUILD_NOTE" ] && log "$BUILD_NOTE"
exit 0
