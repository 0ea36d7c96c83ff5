#!/usr/bin/env bash
# usage: tools/multihost-demo.sh [SHARDS]   (default 3; env: VBLAST=path RATE=600 REQUESTS=1200 CONNS=24)
# Several machines on one: nginx in one Linux network namespace, each vblast shard in its
# own namespace with its own address, all joined by a bridge that lives in a namespace of
# its own (separate network stacks, as separate machines have; nothing leaves this machine:
# the bridge has no uplink). The shards run one open-model schedule, started together
# with --start-at, and `vblast report` merges their files. Prints every shard's share, then
# the merged report. Needs root (ip netns). Namespaces, links and processes are removed on
# every exit path (trap). Exit status: vblast report's.
set -euo pipefail
SHARDS="${1:-3}"; [ $# -gt 0 ] && shift
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VBLAST="${VBLAST:-${CARGO_TARGET_DIR:-$ROOT/target}/release/vblast}"
RATE="${RATE:-600}"; REQUESTS="${REQUESTS:-1200}"; CONNS="${CONNS:-24}"
TAG="vb$$"
NET=10.213.$(( $$ % 200 + 20 ))
SW="$TAG-sw"; SRV="$TAG-srv"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/vblast-multihost.XXXXXX")"
PIDS=(); NSS=()
say() { printf 'multihost: %s\n' "$*" >&2; }
cleanup() {
    local p n
    for p in "${PIDS[@]+"${PIDS[@]}"}"; do kill -TERM "$p" 2>/dev/null || true; done
    for p in "${PIDS[@]+"${PIDS[@]}"}"; do
        for _ in $(seq 30); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true
    done
    # Deleting a namespace deletes the veth ends and the bridge inside it.
    for n in "${NSS[@]+"${NSS[@]}"}"; do ip netns del "$n" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
[ "$(id -u)" -eq 0 ] || { say "needs root (ip netns)"; exit 2; }
[ -x "$VBLAST" ] || { say "no vblast at $VBLAST (cargo build --release, or set VBLAST)"; exit 2; }
command -v nginx >/dev/null || { say "needs nginx (tools/deps.sh)"; exit 2; }

newns() { ip netns add "$1"; NSS+=("$1"); ip -n "$1" link set lo up; }
# attach NS ADDR: a veth from NS to the bridge, NS's end addressed ADDR/24.
attach() {
    local ns="$1" addr="$2" i="$3"
    ip link add "$TAG-h$i" type veth peer name "$TAG-p$i"
    ip link set "$TAG-h$i" netns "$SW"
    ip link set "$TAG-p$i" netns "$ns"
    ip -n "$SW" link set "$TAG-h$i" master br0 up
    ip -n "$ns" addr add "$addr/24" dev "$TAG-p$i"
    ip -n "$ns" link set "$TAG-p$i" up
}
newns "$SW"
ip -n "$SW" link add br0 type bridge
ip -n "$SW" link set br0 up
newns "$SRV"
attach "$SRV" "$NET.1" 0
for i in $(seq 0 $((SHARDS - 1))); do
    newns "$TAG-s$i"
    attach "$TAG-s$i" "$NET.$((10 + i))" $((i + 1))
done

mkdir -p "$WORK/nginx/logs" "$WORK/nginx/tmp"
cat >"$WORK/nginx/nginx.conf" <<CONF
user root;
worker_processes 1;
pid $WORK/nginx/logs/nginx.pid;
error_log $WORK/nginx/logs/error.log warn;
events { worker_connections 4096; }
http {
    access_log $WORK/nginx/logs/access.log;
    client_body_temp_path $WORK/nginx/tmp/body;
    proxy_temp_path $WORK/nginx/tmp/proxy;
    fastcgi_temp_path $WORK/nginx/tmp/fastcgi;
    uwsgi_temp_path $WORK/nginx/tmp/uwsgi;
    scgi_temp_path $WORK/nginx/tmp/scgi;
    keepalive_requests 100000000;
    default_type application/json;
    server {
        listen $NET.1:8200;
        location /v1/ { return 200 '{"data":{"data":{"value":"bar"}}}'; }
    }
}
CONF
ip netns exec "$SRV" nginx -p "$WORK/nginx" -c "$WORK/nginx/nginx.conf" -e "$WORK/nginx/logs/error.log" \
    -g 'daemon off;' </dev/null >"$WORK/nginx/logs/stderr.log" 2>&1 &
PIDS+=("$!")
URL="http://$NET.1:8200/v1/secret/data/foo"
for _ in $(seq 50); do
    ip netns exec "$TAG-s0" bash -c "exec 3<>/dev/tcp/$NET.1/8200" 2>/dev/null && break
    sleep 0.1
done

AT="$(date -u -d '+4 seconds' +%Y-%m-%dT%H:%M:%SZ)"
say "$SHARDS shards of -R $RATE -n $REQUESTS -c $CONNS to $URL, starting together at $AT"
SPIDS=()
for i in $(seq 0 $((SHARDS - 1))); do
    ip netns exec "$TAG-s$i" timeout -k 5 60 "$VBLAST" -R "$RATE" -n "$REQUESTS" -c "$CONNS" -t 1 \
        --shard "$i/$SHARDS" --start-at "$AT" -q --output "$WORK/shard-$i.json" "$URL" \
        >"$WORK/shard-$i.out" 2>&1 &
    SPIDS+=("$!"); PIDS+=("$!")
done
rc=0
for i in "${!SPIDS[@]}"; do
    wait "${SPIDS[$i]}" || { rc=$?; say "shard $i exited $rc: $(tail -n 5 "$WORK/shard-$i.out")"; }
done
[ "$rc" -eq 0 ] || exit "$rc"
echo "Shards (each in its own network namespace):"
printf '  %-7s %-15s %9s %9s %12s  %s\n' shard address requests ok connections clock_start
for i in $(seq 0 $((SHARDS - 1))); do
    jq -r --arg a "$NET.$((10 + i))" \
        '"  \(.shard.index)/\(.shard.count)    \($a | . + "               " | .[0:15]) \(.requests | tostring | "         " + . | .[-9:]) \(.ok | tostring | "         " + . | .[-9:]) \(.run.connections | tostring | "            " + . | .[-12:])  \(.shard.clock_start)"' \
        "$WORK/shard-$i.json"
done
echo "nginx logged $(wc -l <"$WORK/nginx/logs/access.log") requests from $(awk '{print $1}' "$WORK/nginx/logs/access.log" | sort -u | tr '\n' ' ')"
echo
"$VBLAST" report "$WORK"/shard-*.json "$@"
