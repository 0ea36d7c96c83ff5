#!/usr/bin/env bash
# usage: sudo tools/bench/sweep-repeats.sh   [env: SWEEPS=5 RATES=400..4000 STEPS=5 STEP=2s
#        WARMUP=300ms SLO=p99=20ms REPEATS=3 BW=4mbit STALL_MS=8 STALL_EVERY_MS=100]
# How often repeated sweeps reach the same answer, with and without repeats of unclear steps
# (issue 27). nginx (one worker, core 0) serves a canned kv read inside a network namespace
# of its own, behind a veth link whose namespace end has a `tc tbf` qdisc limiting it to BW,
# so latency climbs with the load (the queue behind the bandwidth). The noise is an nginx
# that stalls at random: a small Python loop (core 0) stops nginx (SIGSTOP to its master
# and worker, by pid) for a uniform 0..STALL_MS every exponential STALL_EVERY_MS on
# average, then lets it go on (SIGCONT), so a step's tail is noisy at every load. (A
# `tc netem` jitter would do the same on the link, but this machine's kernel has no netem
# qdisc: `tc qdisc add ... netem` answers "Specified qdisc kind is unknown".)
# vblast (core 1) sweeps it SWEEPS times with --max-repeats 0 and SWEEPS times with
# --max-repeats REPEATS, the two in turn, and prints, for each, the answers (highest
# sustained load) and how
# many of the sweeps gave the most common one, the steps repeated, and the wall time.
# Needs root (ip netns, tc). The namespace, its link, the staller and nginx are removed on
# exit. Never asserts.
source "$(dirname "$0")/lib.sh"

SWEEPS="${SWEEPS:-5}"
RATES="${RATES:-400..4000}"
STEPS="${STEPS:-5}"
STEP="${STEP:-2s}"
WARMUP="${WARMUP:-300ms}"
SLO="${SLO:-p99=20ms}"
REPEATS="${REPEATS:-3}"
BW="${BW:-4mbit}"
STALL_MS="${STALL_MS:-8}"
STALL_EVERY_MS="${STALL_EVERY_MS:-100}"

[ "$(id -u)" -eq 0 ] || die "needs root (ip netns, tc)"
need taskset jq nginx ip tc python3
NS="vbsr$$"
HOST_IF="vbsrh$$"
NS_IF="vbsrn$$"
NET="10.$(( $$ % 200 + 20 )).$(( $$ / 200 % 250 ))"
STALLER=""
NGINX_PIDS=""
netns_cleanup() {
    if [ -n "$STALLER" ]; then kill -TERM "$STALLER" 2>/dev/null || true; wait "$STALLER" 2>/dev/null || true; fi
    for p in $NGINX_PIDS; do kill -CONT "$p" 2>/dev/null || true; done
    bench_cleanup
    ip netns del "$NS" 2>/dev/null || true
    ip link del "$HOST_IF" 2>/dev/null || true
}
trap netns_cleanup EXIT

build
show "ip netns add $NS; veth $HOST_IF ($NET.1) <-> $NS_IF ($NET.2); tc qdisc add dev $NS_IF root tbf rate $BW burst 16kb latency 200ms"
ip netns add "$NS"
ip -n "$NS" link set lo up
ip link add "$HOST_IF" type veth peer name "$NS_IF"
ip link set "$NS_IF" netns "$NS"
ip addr add "$NET.1/24" dev "$HOST_IF"
ip link set "$HOST_IF" up
ip -n "$NS" addr add "$NET.2/24" dev "$NS_IF"
ip -n "$NS" link set "$NS_IF" up
ip netns exec "$NS" tc qdisc add dev "$NS_IF" root tbf rate "$BW" burst 16kb latency 200ms

dir="$BENCH_TMP/nginx"
mkdir -p "$dir/logs" "$dir/tmp"
cat >"$dir/nginx.conf" <<EOF
user root;
worker_processes 1;
pid $dir/logs/nginx.pid;
error_log $dir/logs/error.log warn;
events { worker_connections 4096; }
http {
$(nginx_http_common "$dir")
    server {
        listen $NET.2:8200;
        location /v1/ { return 200 '$KV_BODY'; }
    }
}
EOF
show "ip netns exec $NS taskset -c 0 nginx -p $dir -c $dir/nginx.conf -g 'daemon off;'"
ip netns exec "$NS" taskset -c 0 nginx -p "$dir" -c "$dir/nginx.conf" -e "$dir/logs/error.log" \
    -g 'daemon off;' </dev/null >"$dir/logs/stderr.log" 2>&1 &
BENCH_PIDS+=("$!")
for _ in $(seq 100); do (exec 3<>"/dev/tcp/$NET.2/8200") 2>/dev/null && break; sleep 0.05; done
URL="http://$NET.2:8200/v1/secret/data/foo"
master="${BENCH_PIDS[-1]}"
NGINX_PIDS="$master $(pgrep -P "$master" | tr '\n' ' ')"
show "taskset -c 0 python3 (staller: SIGSTOP $NGINX_PIDS for uniform 0..${STALL_MS}ms every exp ${STALL_EVERY_MS}ms, then SIGCONT)"
taskset -c 0 python3 - "$STALL_MS" "$STALL_EVERY_MS" $NGINX_PIDS <<'PY' &
import os, random, signal, sys, time
stall, every = float(sys.argv[1]) / 1000, float(sys.argv[2]) / 1000
pids = [int(p) for p in sys.argv[3:]]
def cont(*_):
    for p in pids:
        os.kill(p, signal.SIGCONT)
    sys.exit(0)
signal.signal(signal.SIGTERM, cont)
rng = random.Random(27)
while True:
    time.sleep(rng.expovariate(1 / every))
    for p in pids:
        os.kill(p, signal.SIGSTOP)
    time.sleep(rng.uniform(0, stall))
    for p in pids:
        os.kill(p, signal.SIGCONT)
PY
STALLER="$!"

# The two settings take turns (sweep 1 without repeats, sweep 1 with, sweep 2 without...),
# so a change in the machine's load during the run weighs on both alike.
declare -A ANSWERS REPEATED STEPS_RUN WALL
for i in $(seq "$SWEEPS"); do
    for repeats in 0 "$REPEATS"; do
        out="$BENCH_TMP/sweep-r$repeats-$i.json"
        started=$SECONDS
        show "taskset -c 1 $VBLAST sweep --rate $RATES --steps $STEPS --step-duration $STEP --step-warmup $WARMUP --resolution 5% --slo $SLO -c 20 --max-repeats $repeats --output $out $URL"
        timeout -k 5 900 taskset -c 1 "$VBLAST" sweep --rate "$RATES" --steps "$STEPS" \
            --step-duration "$STEP" --step-warmup "$WARMUP" --resolution 5% --slo "$SLO" \
            -c 20 --max-repeats "$repeats" --output "$out" "$URL" >"$out.txt" 2>"$out.err" || true
        jq -e '.steps | length > 0' "$out" >/dev/null 2>&1 \
            || die "sweep gave no steps: $(tail -n 5 "$out.err")"
        a="$(jq -r '.answer.highest_sustained // "none"' "$out")"
        ANSWERS[$repeats]+="$a"$'\n'
        REPEATED[$repeats]=$(( ${REPEATED[$repeats]:-0} + $(jq '[.steps[] | select(.repeats > 0)] | length' "$out") ))
        STEPS_RUN[$repeats]=$(( ${STEPS_RUN[$repeats]:-0} + $(jq '.steps | length' "$out") ))
        WALL[$repeats]=$(( ${WALL[$repeats]:-0} + SECONDS - started ))
        log "  --max-repeats $repeats sweep $i: $(grep '^Answer' "$out.txt")"
        log "      $(grep '^Repeats' "$out.txt" || true)"
    done
done
SUMMARY=()
for repeats in 0 "$REPEATS"; do
    answers="${ANSWERS[$repeats]}"
    same="$(grep . <<<"$answers" | sort | uniq -c | sort -k1,1rn -k2,2 | head -n1 | awk '{print $1" of '"$SWEEPS"' at "$2}')"
    SUMMARY+=("--max-repeats $repeats: answers $(grep . <<<"$answers" | tr '\n' ' ')| most common: $same | steps repeated: ${REPEATED[$repeats]} of ${STEPS_RUN[$repeats]} | ${WALL[$repeats]} s of sweeps")
done

log ""
log "=== sweep answers over $SWEEPS sweeps each, $(date -u '+%F %H:%M UTC'), tbf rate $BW, nginx stalled 0..${STALL_MS}ms every ~${STALL_EVERY_MS}ms, load average $(cut -d' ' -f1-3 /proc/loadavg) ==="
[ -z "$BUILD_NOTE" ] || log "$BUILD_NOTE"
for s in "${SUMMARY[@]}"; do log "$s"; done
