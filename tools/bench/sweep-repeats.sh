#!/usr/bin/env bash
# usage: sudo tools/bench/sweep-repeats.sh   [env: SWEEPS=5 RATES=200..4000 STEPS=5 STEP=1s
#        WARMUP=300ms SLO=p99=20ms REPEATS=3 DELAY=2ms JITTER=2ms BW=4mbit]
# How often repeated sweeps reach the same answer, with and without repeats of unclear steps
# (issue 27). nginx (one worker, core 0) serves a canned kv read inside a network namespace
# of its own, behind a veth link whose namespace end has a `tc netem` qdisc: DELAY with
# JITTER (normal distribution) and a BW bandwidth limit, so latency climbs with the load
# (the queue behind the bandwidth) and is noisy at every load (the jitter). vblast (core 1)
# sweeps it SWEEPS times with --max-repeats 0 and SWEEPS times with --max-repeats REPEATS,
# and prints, for each, the answers (highest sustained load) and how many of the sweeps gave
# the most common one, the steps repeated, and the wall time. Needs root (ip netns, tc).
# The namespace, its link and nginx are removed on exit. Never asserts.
source "$(dirname "$0")/lib.sh"

SWEEPS="${SWEEPS:-5}"
RATES="${RATES:-200..4000}"
STEPS="${STEPS:-5}"
STEP="${STEP:-1s}"
WARMUP="${WARMUP:-300ms}"
SLO="${SLO:-p99=20ms}"
REPEATS="${REPEATS:-3}"
DELAY="${DELAY:-2ms}"
JITTER="${JITTER:-2ms}"
BW="${BW:-4mbit}"

[ "$(id -u)" -eq 0 ] || die "needs root (ip netns, tc)"
need taskset jq nginx ip tc
NS="vbsr$$"
HOST_IF="vbsrh$$"
NS_IF="vbsrn$$"
NET="10.$(( $$ % 200 + 20 )).$(( $$ / 200 % 250 ))"
netns_cleanup() {
    bench_cleanup
    ip netns del "$NS" 2>/dev/null || true
    ip link del "$HOST_IF" 2>/dev/null || true
}
trap netns_cleanup EXIT

build
show "ip netns add $NS; veth $HOST_IF ($NET.1) <-> $NS_IF ($NET.2); tc qdisc add dev $NS_IF root netem delay $DELAY $JITTER distribution normal rate $BW"
ip netns add "$NS"
ip -n "$NS" link set lo up
ip link add "$HOST_IF" type veth peer name "$NS_IF"
ip link set "$NS_IF" netns "$NS"
ip addr add "$NET.1/24" dev "$HOST_IF"
ip link set "$HOST_IF" up
ip -n "$NS" addr add "$NET.2/24" dev "$NS_IF"
ip -n "$NS" link set "$NS_IF" up
ip netns exec "$NS" tc qdisc add dev "$NS_IF" root netem delay "$DELAY" "$JITTER" distribution normal rate "$BW"

dir="$BENCH_TMP/nginx"
mkdir -p "$dir/logs" "$dir/tmp"
cat >"$dir/nginx.conf" <<EOF
user root;
worker_processes 1;
pid $dir/logs/nginx.pid;
error_log $dir/logs/error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    client_body_temp_path $dir/tmp/body;
    proxy_temp_path $dir/tmp/proxy;
    fastcgi_temp_path $dir/tmp/fastcgi;
    uwsgi_temp_path $dir/tmp/uwsgi;
    scgi_temp_path $dir/tmp/scgi;
    keepalive_requests 100000000;
    default_type application/json;
    server_tokens off;
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

SUMMARY=()
for repeats in 0 "$REPEATS"; do
    answers=""; repeated=0; steps=0; started=$SECONDS
    for i in $(seq "$SWEEPS"); do
        out="$BENCH_TMP/sweep-r$repeats-$i.json"
        show "taskset -c 1 $VBLAST sweep --rate $RATES --steps $STEPS --step-duration $STEP --step-warmup $WARMUP --resolution 5% --slo $SLO -c 20 --max-repeats $repeats --output $out $URL"
        timeout -k 5 900 taskset -c 1 "$VBLAST" sweep --rate "$RATES" --steps "$STEPS" \
            --step-duration "$STEP" --step-warmup "$WARMUP" --resolution 5% --slo "$SLO" \
            -c 20 --max-repeats "$repeats" --output "$out" "$URL" >"$out.txt" 2>"$out.err" || true
        jq -e '.steps | length > 0' "$out" >/dev/null 2>&1 \
            || die "sweep gave no steps: $(tail -n 5 "$out.err")"
        a="$(jq -r '.answer.highest_sustained // "none"' "$out")"
        answers+="$a"$'\n'
        repeated=$((repeated + $(jq '[.steps[] | select(.repeats > 0)] | length' "$out")))
        steps=$((steps + $(jq '.steps | length' "$out")))
        log "  --max-repeats $repeats sweep $i: $(grep '^Answer' "$out.txt")"
        log "      $(grep '^Repeats' "$out.txt" || true)"
    done
    same="$(grep . <<<"$answers" | sort | uniq -c | sort -rn | head -n1 | awk '{print $1" of '"$SWEEPS"' at "$2}')"
    SUMMARY+=("--max-repeats $repeats: answers $(grep . <<<"$answers" | tr '\n' ' ')| most common: $same | steps repeated: $repeated of $steps | $((SECONDS - started)) s of sweeps")
done

log ""
log "=== sweep answers over $SWEEPS sweeps each, $(date -u '+%F %H:%M UTC'), netem delay $DELAY jitter $JITTER rate $BW, load average $(cut -d' ' -f1-3 /proc/loadavg) ==="
[ -z "$BUILD_NOTE" ] || log "$BUILD_NOTE"
for s in "${SUMMARY[@]}"; do log "$s"; done
