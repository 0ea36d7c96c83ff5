#!/usr/bin/env bash
# usage: tools/bench/c50000-source-addrs.sh   [env: CONNS=50000 DURATION=5s SOURCES=127.0.0.2-127.0.0.4 LIMIT=300]
# 50,000 keep-alive connections from this machine to one nginx address: more than the
# ephemeral port range allows from one source address (28,232 here), so vblast binds them
# round-robin over three loopback addresses (--source-addrs), and, with a hard limit of
# 20,000 descriptors per process, spreads them over worker processes. nginx runs 4 workers
# (reuseport) with room for the connections. Prints successes, connections opened, processes
# and the sampled peak RSS of all vblast processes together (goal <= 128 MiB). Never asserts.
source "$(dirname "$0")/lib.sh"
# The binary cargo builds (CARGO_TARGET_DIR honoured).
VBLAST="${CARGO_TARGET_DIR:-$ROOT/target}/release/vblast"
CONNS="${CONNS:-50000}"
DURATION="${DURATION:-5s}"
SOURCES="${SOURCES:-127.0.0.2-127.0.0.4}"
LIMIT="${LIMIT:-300}"
need nginx jq /usr/bin/time
build
NGINX_WORKERS=4 NGINX_RLIMIT=19000 NGINX_CONNS=18000 NGINX_KEEPALIVE=300s \
    NGINX_LISTEN_OPTS=" reuseport backlog=4096" start_nginx 0-1
URL="$NGINX_URL"
log "fd limits: soft $(ulimit -Sn), hard $(ulimit -Hn); ephemeral ports $(cat /proc/sys/net/ipv4/ip_local_port_range)"


out="$BENCH_TMP/v.json"; tf="$BENCH_TMP/v.time"; rc=0
show "/usr/bin/time -f '%e %U %S %M' $VBLAST -c $CONNS -z $DURATION --source-addrs $SOURCES --format json $URL"
timeout -k 5 "$LIMIT" /usr/bin/time -f '%e %U %S %M' -o "$tf" \
    "$VBLAST" -c "$CONNS" -z "$DURATION" --source-addrs "$SOURCES" --timeout 60s --format json "$URL" \
    >"$out" 2>"$out.err" &
pid=$!
rss_sampler "$pid" "$BENCH_TMP/v.rss" &
spid=$!
wait "$pid" || rc=$?
wait "$spid" || true
jq -e .requests "$out" >/dev/null 2>&1 || die "vblast exit $rc, no report: $(tail -n 20 "$out.err")"
read -r wall user sys maxrss < <(tail -n 1 "$tf")
tree="$(cat "$BENCH_TMP/v.rss")"
log "vblast: exit $rc, wall ${wall}s (user ${user}s, sys ${sys}s), processes $(jq -r .run.processes "$out"), threads $(jq -r .run.threads "$out")"
log "connections: -c $CONNS, opened $(jq -r .connections_opened "$out"); requests $(jq -r .requests "$out"), ok $(jq -r .ok "$out"), failed $(jq -r .failed "$out"), success ratio $(jq -r .success_ratio "$out")"
[ "$(jq -r .failed "$out")" = 0 ] || log "errors: $(jq -c '{errors,error_messages}' "$out")"
[ -s "$out.err" ] && log "vblast stderr: $(tail -n 5 "$out.err")"
log "peak RSS: largest process $((maxrss / 1024)) MiB, all vblast processes together (sampled) $((tree / 1024)) MiB (goal <= 128 MiB)"
