#!/usr/bin/env bash
# Accounting soak (issue 8): vblast at -c 2000 against nginx (access log on) while nginx is
# stalled (SIGSTOP 0.5-2 s), killed (-9) and restarted several times. Checks, and prints:
#   - every request counted exactly once: requests == ok + failed, per-operation and timeline
#     sums agree;
#   - the server's logged responses match vblast's completed (answered) requests;
#   - vblast's memory stays flat (RSS sampled each second);
#   - the run never stalls for longer than the faults explain (per-second timeline).
# Usage: tools/soak.sh [DURATION_S=300] ; env CONNS=2000. Loopback only; everything started
# here is stopped on exit, by pid. Minutes long: not part of the quick suite.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DURATION="${1:-300}"
CONNS="${CONNS:-2000}"
TMP="$(mktemp -d "${TMPDIR:-/tmp}/vblast-soak.XXXXXX")"
NGINX_PID=""
VBLAST_PID=""
cleanup() {
    [ -n "$NGINX_PID" ] && kill -CONT "$NGINX_PID" 2>/dev/null || true
    [ -n "$NGINX_PID" ] && kill -KILL "$NGINX_PID" 2>/dev/null || true
    [ -n "$VBLAST_PID" ] && kill -TERM "$VBLAST_PID" 2>/dev/null || true
    pkill -KILL -f "nginx -p $TMP/nginx" 2>/dev/null || true
    wait 2>/dev/null || true
    : # (the shell may still note "Killed" for nginx: it was killed on purpose)
    if [ -n "${KEEP:-}" ]; then echo "soak: files kept in $TMP"; else rm -rf "$TMP"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

command -v nginx >/dev/null || { echo "nginx not found (tools/deps.sh)"; exit 1; }
(cd "$ROOT" && cargo build --release 2>&1 | tail -n 1)
VBLAST="$ROOT/target/release/vblast"
PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
mkdir -p "$TMP/nginx/logs" "$TMP/nginx/tmp"
cat >"$TMP/nginx/nginx.conf" <<EOF
$( [ "$(id -u)" -eq 0 ] && echo "user root;" )
worker_processes 1;
worker_rlimit_nofile 16384;
pid $TMP/nginx/logs/nginx.pid;
error_log $TMP/nginx/logs/error.log warn;
events { worker_connections 8192; }
http {
    log_format soak '\$status';
    access_log $TMP/nginx/logs/access.log soak;
    client_body_temp_path $TMP/nginx/tmp/body;
    proxy_temp_path $TMP/nginx/tmp/proxy;
    fastcgi_temp_path $TMP/nginx/tmp/fastcgi;
    uwsgi_temp_path $TMP/nginx/tmp/uwsgi;
    scgi_temp_path $TMP/nginx/tmp/scgi;
    keepalive_requests 100000000;
    default_type application/json;
    server {
        listen 127.0.0.1:$PORT backlog=4096;
        location /v1/ { return 200 '{"data":{"data":{"value":"bar"}}}'; }
    }
}
EOF
start_nginx() {
    nginx -p "$TMP/nginx" -c "$TMP/nginx/nginx.conf" -g 'daemon off; master_process off;' \
        </dev/null >>"$TMP/nginx/logs/stderr.log" 2>&1 &
    NGINX_PID=$!
    for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && return; sleep 0.05; done
    echo "nginx did not start"; cat "$TMP/nginx/logs/"*.log; exit 1
}
start_nginx

echo "soak: vblast -c $CONNS -z ${DURATION}s against nginx 127.0.0.1:$PORT (faults every ~15 s)"
"$VBLAST" -c "$CONNS" -z "${DURATION}s" --timeout 5s --allow-errors -q --format json \
    --output "$TMP/results.json" "http://127.0.0.1:$PORT/v1/secret/data/soak" \
    >"$TMP/report.json" 2>"$TMP/stderr.log" &
VBLAST_PID=$!

# RSS of vblast and its worker processes, once a second.
(
    while kill -0 "$VBLAST_PID" 2>/dev/null; do
        pids="$VBLAST_PID $(pgrep -P "$VBLAST_PID" | tr '\n' ' ' || true)"
        rss=0
        for p in $pids; do
            r=$(awk '/VmRSS/ {print $2}' "/proc/$p/status" 2>/dev/null || echo 0)
            rss=$((rss + ${r:-0}))
        done
        echo "$SECONDS $rss"
        sleep 1
    done
) >"$TMP/rss.log" &

faults=0; stalls=0; kills=0
end=$((SECONDS + DURATION))
sleep 10
while [ $((SECONDS + 15)) -lt "$end" ] && kill -0 "$VBLAST_PID" 2>/dev/null; do
    faults=$((faults + 1))
    if [ $((faults % 3)) -eq 0 ]; then
        echo "  $SECONDS s: nginx killed"
        kill -KILL "$NGINX_PID"; wait "$NGINX_PID" 2>/dev/null || true
        kills=$((kills + 1)); sleep 1; start_nginx
        echo "  $SECONDS s: nginx restarted"
    else
        pause=$(python3 -c 'import random; print(round(random.uniform(0.5, 2.0), 2))')
        echo "  $SECONDS s: nginx stalled"
        kill -STOP "$NGINX_PID"; sleep "$pause"; kill -CONT "$NGINX_PID"
        stalls=$((stalls + 1))
        echo "  $SECONDS s: nginx stalled for ${pause}s"
    fi
    sleep 12
done
wait "$VBLAST_PID" || true
VBLAST_PID=""
sleep 1

R="$TMP/report.json"
requests=$(jq .requests "$R"); ok=$(jq .ok "$R"); failed=$(jq .failed "$R")
ops_sum=$(jq '[.ops[].requests] | add' "$R")
timeline_sum=$(jq '[.timeline[].requests] | add' "$R")
answered=$(jq '[.status[]] | add // 0' "$R")
logged=$(wc -l <"$TMP/nginx/logs/access.log")
zero_seconds=$(jq '[.timeline[] | select(.requests == 0)] | length' "$R")
rss_first=$(awk 'NR==5 {print $2}' "$TMP/rss.log"); rss_max=$(awk '$2>m {m=$2} END {print m}' "$TMP/rss.log")
rss_last=$(tail -n 3 "$TMP/rss.log" | head -n 1 | awk '{print $2}')
echo
echo "faults: $stalls stalls, $kills kills"
echo "requests $requests = ok $ok + failed $failed: $([ "$requests" -eq $((ok + failed)) ] && echo yes || echo NO)"
echo "per-operation sum $ops_sum, timeline sum $timeline_sum: $([ "$ops_sum" -eq "$requests" ] && [ "$timeline_sum" -eq "$requests" ] && echo agree || echo DISAGREE)"
echo "answered by the server (vblast's status counts) $answered, logged by nginx $logged, difference $((logged - answered))"
echo "errors: $(jq -c .errors "$R")"
echo "seconds with no completion: $zero_seconds of $(jq '.timeline | length' "$R")"
echo "RSS (KiB, vblast and workers): at 5 s $rss_first, max $rss_max, at the end $rss_last"
ok_all=1
[ "$requests" -eq $((ok + failed)) ] || ok_all=0
[ "$ops_sum" -eq "$requests" ] && [ "$timeline_sum" -eq "$requests" ] || ok_all=0
[ "$ok_all" -eq 1 ] && echo "soak: accounting holds" || { echo "soak: ACCOUNTING BROKEN"; exit 1; }
