#!/usr/bin/env bash
# usage: tools/bench/scaling.sh   [env: QUICK=0 DURATION=2s OUT_DIR=target/scaling PEERS="wrk h2load ab"
#        CONNS_LIST="64 1000 5000 20000" C50000=0 SOURCES=127.0.0.2-127.0.0.4
#        RATE_FRACTIONS="0.1 0.25 0.5 0.75 1" TLS_CONNS="64 1000 5000" SHARDS_LIST="1 4 16 64"
#        MERGE_DURATION=3s MERGE_RUNS=3]
# Issue 26 item 3: how vblast's costs grow with its load, in one invocation, each point a few
# seconds, against nginx's canned kv response (nginx on core 0, every client on core 1):
#   connections   client CPU per request and peak RSS against -c (keep-alive, -z DURATION);
#                 C50000=1 adds 50,000 connections over --source-addrs SOURCES (vblast alone)
#   rate          the same against the open model's -R, as fractions of the closed-loop rate
#                 vblast reaches at -c 64 (the server's limit here), with the rate achieved
#   tls           keep-alive over TLS against -c
#   tls-handshake a TLS handshake per request (--no-keepalive --no-tls-resume) against -c:
#                 memory per handshake in flight
#   merge         `vblast report` of 1, 4, 16, 64 shard files (SHARDS_LIST) of a -z MERGE_DURATION
#                 run: wall time (median of MERGE_RUNS) and RSS, beside `jq -s` reading the same
#                 files (the cost of parsing the JSON alone)
# wrk, h2load and ab run at the points they can reach (a point a client cannot reach is an
# empty cell, drawn as "not reached"). vblast's RSS is the sampled sum over all its processes
# (tools/bench/lib.sh rss_sampler); a peer's is /usr/bin/time's max RSS (one process each).
# CPU = user + sys of the client and the worker processes it waited for (/usr/bin/time).
# Writes OUT_DIR/<curve>.csv and OUT_DIR/<curve>.svg (tools/scaling-chart.py) and prints the
# ratios vblast/peer at each point. QUICK=1: 1 s points, fewer of them (about a minute).
# Figures are printed, never asserted.
source "$(dirname "$0")/lib.sh"

QUICK="${QUICK:-0}"
if [ "$QUICK" = 1 ]; then
    DURATION="${DURATION:-1s}"; TLS_DURATION="${TLS_DURATION:-2s}"; CONNS_LIST="${CONNS_LIST:-64 1000}"
    RATE_FRACTIONS="${RATE_FRACTIONS:-0.25 1}"; TLS_CONNS="${TLS_CONNS:-64 500}"
    SHARDS_LIST="${SHARDS_LIST:-1 4}"; MERGE_DURATION="${MERGE_DURATION:-1s}"; MERGE_RUNS="${MERGE_RUNS:-1}"
fi
DURATION="${DURATION:-2s}"
TLS_DURATION="${TLS_DURATION:-4s}"
MIN_REQUESTS="${MIN_REQUESTS:-100}"
CONNS_LIST="${CONNS_LIST:-64 1000 5000 20000}"
C50000="${C50000:-0}"
SOURCES="${SOURCES:-127.0.0.2-127.0.0.4}"
RATE_FRACTIONS="${RATE_FRACTIONS:-0.1 0.25 0.5 0.75 1}"
TLS_CONNS="${TLS_CONNS:-64 1000 5000}"
SHARDS_LIST="${SHARDS_LIST:-1 4 16 64}"
MERGE_DURATION="${MERGE_DURATION:-3s}"
MERGE_RUNS="${MERGE_RUNS:-3}"
PEERS="${PEERS-wrk h2load ab}"
OUT_DIR="${OUT_DIR:-$ROOT/target/scaling}"
SECS="${DURATION%s}"
# A point's time limit: a client that cannot open its connections (wrk and h2load wait on
# them past their duration) stops here.
LIMIT=$((SECS + ${TLS_DURATION%s} + 40))

need nginx taskset curl jq openssl python3 /usr/bin/time
build
mkdir -p "$OUT_DIR"
NGINX_WORKERS=4 NGINX_RLIMIT=19000 NGINX_CONNS=18000 NGINX_KEEPALIVE=300s \
    NGINX_LISTEN_OPTS=" reuseport backlog=4096" start_nginx 0
URL="$NGINX_URL"
cert="$BENCH_TMP/tls-cert"; mkdir -p "$cert"
show "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=127.0.0.1 ..."
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
    -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
    -keyout "$cert/key.pem" -out "$cert/cert.pem" 2>/dev/null || die "openssl req failed"
NGINX_CA="$cert/cert.pem" NGINX_WORKERS=4 NGINX_RLIMIT=19000 NGINX_CONNS=18000 NGINX_KEEPALIVE=300s \
    NGINX_LISTEN_OPTS=" reuseport backlog=4096" \
    start_nginx 0 "ssl_certificate $cert/cert.pem; ssl_certificate_key $cert/key.pem; ssl_protocols TLSv1.2 TLSv1.3;"
TLS_URL="$NGINX_URL"
log "fd limits: soft $(ulimit -Sn), hard $(ulimit -Hn); $(nproc) cores; $(uptime)"

# timed OUT TF cmd...: runs cmd pinned to core 1 under /usr/bin/time (wall user sys maxrss KiB),
# sampling the summed RSS of its vblast processes into TF.rss; stdout to OUT.
timed() {
    local out="$1" tf="$2"; shift 2
    show "taskset -c 1 $*"
    timeout -k 5 "$LIMIT" /usr/bin/time -f '%e %U %S %M' -o "$tf" taskset -c 1 "$@" >"$out" 2>"$out.err" &
    local pid=$!
    rss_sampler "$pid" "$tf.rss" &
    local spid=$!
    wait "$pid" || true
    wait "$spid" || true
}

# Each client runner prints "REQUESTS FAILED RPS CPU_S RSS_KIB" (empty when it failed).
vblast_point() { # flags...
    local out="$BENCH_TMP/v.json" tf="$BENCH_TMP/v.time"
    timed "$out" "$tf" "$VBLAST" "$@" --format json
    jq -e .requests "$out" >/dev/null 2>&1 || { log "  vblast: no report: $(tail -n 3 "$out.err" | tr '\n' ' ')"; return 0; }
    local w u s m; read -r w u s m < <(tail -n 1 "$tf")
    log "  vblast: $(jq -r '"\(.requests) requests, \(.failed) failed, \(.rps|floor) req/s, \(.run.processes) processes"' "$out"), rss $(( $(cat "$tf.rss") / 1024 )) MiB"
    echo "$(jq -r .requests "$out") $(jq -r .failed "$out") $(jq -r .rps "$out") $(awk -v u="$u" -v s="$s" 'BEGIN{print u+s}') $(cat "$tf.rss")"
}

peer_point() { # client cmd...: parses the client's own summary
    local client="$1" out="$BENCH_TMP/peer.out" tf="$BENCH_TMP/peer.time"; shift
    timed "$out" "$tf" "$@"
    local w u s m n f r
    read -r w u s m < <(tail -n 1 "$tf")
    case "$client" in
        wrk) n="$(awk '/requests in/ { print $1 }' "$out")"
             f="$(awk '/Non-2xx/ { s += $NF } /Socket errors/ { gsub(/[^0-9 ]/, " "); s += $1 + $2 + $3 + $4 } END { print s + 0 }' "$out")"
             r="$(awk '/Requests\/sec/ { print $2 }' "$out")" ;;
        h2load) n="$(awk '/^requests:/ { print $8 }' "$out")"
                f="$(awk '/^requests:/ { print $10 + $12 }' "$out")"
                r="$(awk '/^finished in/ { print $4 }' "$out")" ;;
        ab) n="$(awk '/^Complete requests:/ { print $3 }' "$out")"
            f="$(awk '/^Failed requests:/ { print $3 }' "$out")"
            r="$(awk '/^Requests per second:/ { print $4 }' "$out")" ;;
    esac
    if [ -z "$n" ] || [ "${n:-0}" -lt "$MIN_REQUESTS" ]; then
        log "  $client: not reached: $(cat "$out" "$out.err" 2>/dev/null | grep -iv '^$\|copyright\|licensed\|this is\|benchmarking' | tail -n 2 | tr '\n' ' ')"
        return 0
    fi
    log "  $client: $n requests, ${f:-0} failed, ${r%.*} req/s, max rss $((m / 1024)) MiB"
    echo "$n ${f:-0} $r $(awk -v u="$u" -v s="$s" 'BEGIN{print u+s}') $m"
}

# row CSV CLIENT X "REQUESTS FAILED RPS CPU RSS": appends one CSV line (empty figures when
# the point was not reached).
row() {
    local csv="$1" client="$2" x="$3" n f r c m
    read -r n f r c m <<<"$4" || true
    if [ -z "${n:-}" ] || [ "$n" -lt "$MIN_REQUESTS" ]; then
        echo "$client,$x,,,,," >>"$csv"
        return
    fi
    awk -v cl="$client" -v x="$x" -v n="$n" -v f="$f" -v r="$r" -v c="$c" -v m="$m" 'BEGIN {
        printf "%s,%s,%.2f,%.1f,%.0f,%d,%d\n", cl, x, (n > 0 ? c * 1e6 / n : 0), m / 1024, r, n, f }' >>"$csv"
}
HEADER="client,x,cpu_us_per_req,rss_mib,achieved_rps,n_requests,n_failed"

# peers_at CSV X URL CONNS KIND SECS N: the peers at one point, for SECS seconds (KIND
# keepalive) or, a connection per request (KIND close), for N requests (vblast's count at
# this point: h2load and ab stop opening connections when their time is up, not in between).
peers_at() {
    local csv="$1" x="$2" url="$3" c="$4" kind="$5" secs="$6" n="${7:-1000}" p
    [ "$n" -ge "$c" ] 2>/dev/null || n="$c"
    if [ "$c" -gt $(( $(ulimit -Sn) - 32 )) ]; then
        # One process each: more connections than descriptors (vblast spreads over workers).
        log "  peers: not reached: -c $c is over this process's descriptor limit ($(ulimit -Sn))"
        for p in $PEERS; do [ "$p:$kind" = wrk:close ] || echo "$p,$x,,,,," >>"$csv"; done
        return 0
    fi
    for p in $PEERS; do
        command -v "$p" >/dev/null 2>&1 || continue
        case "$p:$kind" in
            wrk:keepalive) row "$csv" wrk "$x" "$(peer_point wrk wrk -t1 -c"$c" -d"${secs}s" "$url")" ;;
            wrk:close) ;; # wrk keeps its connections open
            h2load:keepalive) row "$csv" h2load "$x" "$(peer_point h2load h2load --h1 -c "$c" -D "$secs" "$url")" ;;
            h2load:close) row "$csv" h2load "$x" "$(peer_point h2load h2load --h1 -c "$c" -n "$n" -H 'Connection: close' "$url")" ;;
            ab:keepalive) row "$csv" ab "$x" "$(peer_point ab ab -q -k -c "$c" -t "$secs" -n 50000000 "$url")" ;;
            ab:close) row "$csv" ab "$x" "$(peer_point ab ab -q -c "$c" -n "$n" "$url")" ;;
        esac
    done
}

chart() { # curve title x-label [--log-x]
    local curve="$1" title="$2" xl="$3"; shift 3
    python3 "$ROOT/tools/scaling-chart.py" "$OUT_DIR/$curve.csv" "$OUT_DIR/$curve.svg" \
        --title "$title" --x-label "$xl" --note "$(date -u +%F) $(nproc) cores; tools/bench/scaling.sh" "$@" >&9
}

log "=== connections (keep-alive, -z $DURATION) ==="
csv="$OUT_DIR/connections.csv"; echo "$HEADER" >"$csv"
for c in $CONNS_LIST; do
    log "-- $c connections"
    row "$csv" vblast "$c" "$(vblast_point -c "$c" -z "$DURATION" --timeout 60s "$URL")"
    peers_at "$csv" "$c" "$URL" "$c" keepalive "$SECS"
done
if [ "$C50000" = 1 ]; then
    log "-- 50000 connections over --source-addrs $SOURCES (vblast only)"
    row "$csv" vblast 50000 "$(vblast_point -c 50000 -z "$DURATION" --source-addrs "$SOURCES" --timeout 60s "$URL")"
fi
chart connections "Cost against connections (keep-alive, nginx)" "connections (-c)" --log-x

log "=== rate (open model, -c 64, -z $DURATION) ==="
top="$(vblast_point -c 64 -z "$DURATION" "$URL" | awk '{ printf "%d", $3 }')"
[ -n "$top" ] && [ "$top" -gt 0 ] || die "no closed-loop rate to scale from"
log "closed-loop rate at -c 64: $top req/s (the server's limit with this client on one core)"
csv="$OUT_DIR/rate.csv"; echo "$HEADER" >"$csv"
for f in $RATE_FRACTIONS; do
    r="$(awk -v t="$top" -v f="$f" 'BEGIN { printf "%d", t * f }')"
    log "-- -R $r ($f of $top)"
    row "$csv" vblast "$r" "$(vblast_point -R "$r" -c 64 -z "$DURATION" "$URL")"
    if [[ " $PEERS " == *" h2load "* ]] && command -v h2load >/dev/null; then
        row "$csv" h2load "$r" "$(peer_point h2load h2load --h1 -c 64 --rps "$(awk -v r="$r" 'BEGIN { printf "%.2f", r / 64 }')" -D "$SECS" "$URL")"
    fi
done
chart rate "Cost against the request rate (open model, -c 64, nginx)" "target rate (requests/s)"

log "=== tls (keep-alive, -z $TLS_DURATION) ==="
csv="$OUT_DIR/tls.csv"; echo "$HEADER" >"$csv"
for c in $TLS_CONNS; do
    log "-- $c TLS connections"
    row "$csv" vblast "$c" "$(vblast_point -k -c "$c" -z "$TLS_DURATION" --timeout 60s "$TLS_URL")"
    peers_at "$csv" "$c" "$TLS_URL" "$c" keepalive "${TLS_DURATION%s}"
done
chart tls "Cost against connections over TLS (keep-alive, nginx)" "connections (-c)" --log-x

log "=== tls-handshake (a handshake per request, -z $TLS_DURATION; the peers: as many requests) ==="
csv="$OUT_DIR/tls-handshake.csv"; echo "$HEADER" >"$csv"
for c in $TLS_CONNS; do
    log "-- $c connections, each opened per request"
    v="$(vblast_point -k --no-keepalive --no-tls-resume -c "$c" -z "$TLS_DURATION" --timeout 60s "$TLS_URL")"
    row "$csv" vblast "$c" "$v"
    peers_at "$csv" "$c" "$TLS_URL" "$c" close "${TLS_DURATION%s}" "$(echo "$v" | awk '{ print $1 + 0 }')"
done
chart tls-handshake "Cost against connections, a TLS handshake per request (nginx)" "connections (-c)" --log-x

log "=== merge (shard files of -z $MERGE_DURATION runs) ==="
csv="$OUT_DIR/merge.csv"; echo "client,x,merge_s,rss_mib,n_bytes" >"$csv"
for s in $SHARDS_LIST; do
    dir="$BENCH_TMP/shards-$s"; mkdir -p "$dir"
    at="$(date -u -d '@'"$(( $(date +%s) + 3 + s / 8 ))" +%Y-%m-%dT%H:%M:%SZ)"
    show "taskset -c 1 $VBLAST -t 1 -R 100 -c 2 -z $MERGE_DURATION --shard I/$s --start-at $at --run-id scaling-$s -q --output $dir/shard-I.json $URL  (I = 0..$((s - 1)))"
    pids=()
    for i in $(seq 0 $((s - 1))); do
        timeout -k 5 120 taskset -c 1 "$VBLAST" -t 1 -R 100 -c 2 -z "$MERGE_DURATION" --shard "$i/$s" \
            --start-at "$at" --run-id "scaling-$s-$$" -q --output "$dir/shard-$i.json" "$URL" \
            >/dev/null 2>"$dir/shard-$i.err" &
        pids+=("$!")
    done
    for p in "${pids[@]}"; do wait "$p" || true; done
    files=("$dir"/shard-*.json)
    [ "${#files[@]}" = "$s" ] || { log "  only ${#files[@]} of $s shard files: $(cat "$dir"/*.err | head -n 3)"; echo "vblast,$s,,," >>"$csv"; continue; }
    walls=""; rss=0
    for _ in $(seq "$MERGE_RUNS"); do
        show "/usr/bin/time $VBLAST report $dir/shard-*.json --output $BENCH_TMP/merged.json"
        timeout -k 5 120 /usr/bin/time -f '%e %M' -o "$BENCH_TMP/m.time" taskset -c 1 "$VBLAST" report "${files[@]}" \
            --output "$BENCH_TMP/merged.json" >/dev/null 2>"$BENCH_TMP/m.err" || log "  merge failed: $(tail -n 2 "$BENCH_TMP/m.err")"
        read -r w m <"$BENCH_TMP/m.time"; walls+="$w"$'\n'; rss="$m"
    done
    bytes="$(cat "${files[@]}" | wc -c)"
    vm="$(printf '%s' "$walls" | median)"
    timeout -k 5 120 /usr/bin/time -f '%e %M' -o "$BENCH_TMP/j.time" taskset -c 1 jq -s length "${files[@]}" >/dev/null
    read -r jw jm <"$BENCH_TMP/j.time"
    log "  $s shards ($((bytes / 1024)) KiB): vblast report ${vm}s, $((rss / 1024)) MiB; jq -s ${jw}s, $((jm / 1024)) MiB; ratio $(ratio "$vm" "$jw")"
    echo "vblast,$s,$vm,$(awk -v m="$rss" 'BEGIN{printf "%.1f", m/1024}'),$bytes" >>"$csv"
    echo "jq -s (parse only),$s,$jw,$(awk -v m="$jm" 'BEGIN{printf "%.1f", m/1024}'),$bytes" >>"$csv"
done
chart merge "vblast report: merge time against shard files" "shard files" --log-x

# The ratios vblast/peer at every point both reached.
echo
[ -z "$BUILD_NOTE" ] || echo "$BUILD_NOTE"
echo "=== summary: ratios vblast/peer (CPU per request; RSS) at the points both reached; files in $OUT_DIR ==="
for curve in connections rate tls tls-handshake; do
    awk -F, -v curve="$curve" 'NR > 1 && $3 != "" { cpu[$1 "," $2] = $3; rss[$1 "," $2] = $4; xs[$2] = 1; if ($1 != "vblast") peers[$1] = 1 }
        END { for (x in xs) for (p in peers) if ((p "," x) in cpu && ("vblast," x) in cpu && cpu[p "," x] > 0 && rss[p "," x] > 0)
            printf "  %-13s x=%-6s vblast/%-6s CPU per request %.2f (%s vs %s us), RSS %.2f (%s vs %s MiB)\n", curve, x, p,
                cpu["vblast," x] / cpu[p "," x], cpu["vblast," x], cpu[p "," x], rss["vblast," x] / rss[p "," x], rss["vblast," x], rss[p "," x] }' \
        "$OUT_DIR/$curve.csv" | sort -t= -k2 -n
done
awk -F, 'NR > 1 && $3 != "" { printf "  merge         %s shards: %s %s s, %s MiB\n", $2, $1, $3, $4 }' "$OUT_DIR/merge.csv"
ls "$OUT_DIR"/*.svg
