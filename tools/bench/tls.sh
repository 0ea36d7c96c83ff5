#!/usr/bin/env bash
# usage: tools/bench/tls.sh   [env: RUNS=3 DURATION=5s CONNS=64 HS_N=4000 HANDSHAKES=1
#                                   TLS_PROTOCOLS="TLSv1.2 TLSv1.3" RT=0 WAKEUPS=0 INSTR=0]
# vblast beside wrk against nginx (1 worker pinned to core 0, ECDSA P-256 certificate,
# ssl_protocols $TLS_PROTOCOLS), every client pinned to core 1 with one thread. Client CPU =
# user+sys of the client process (/usr/bin/time); server CPU = user+sys of the nginx worker
# (/proc/PID/stat) before and after each run. Medians of RUNS runs, the clients' order
# alternating from run to run; figures printed, never asserted.
# RT=1 runs the nginx worker and the clients as real-time tasks (chrt -f 1, within the
# kernel's real-time throttle: 95% of each core): on a machine busy with other work, a woken
# process otherwise waits for the running one's time slice, and the figures measure the
# scheduler rather than the server (its CPU over the wall time shows it: far below 100%).
# WAKEUPS=1 counts, with `perf stat -e sched:sched_waking -p WORKER`, the wake-ups the nginx
# worker performs (waking a client thread blocked on its sockets) and prints them per request.
#  1. keep-alive, over TLS and over plain HTTP, vblast -k -t 1 -c 64 -z 5s beside
#     wrk -t1 -c64 -d5s against the same saturated server: the server's CPU per request
#     behind each client (goal: vblast within 5% of wrk), each client's throughput (goal:
#     vblast at least wrk's), each client's own CPU per request (goal: vblast below wrk), and
#     how busy the server was (its CPU over the run's wall time: near 100% is saturated).
#     Ratios are vblast/wrk, medians of the per-run ratios (each run a pair side by side).
#  2. connection per request (HANDSHAKES=1): TLS handshakes per client CPU-second, vblast
#     --no-keepalive (full handshakes: --no-tls-resume; and with session resumption, its
#     default) vs ab -n N -c 64 and h2load --h1 -n N -c 64 -H 'Connection: close' (neither
#     resumes sessions nor verifies certificates; vblast runs with -k too). Ratios are
#     printed as vblast/peer handshakes per CPU-second (higher is better for vblast).
#  3. INSTR=1 (needs valgrind), before the others: nginx's user-space instructions per request
#     behind each client over TLS keep-alive: one nginx process (master_process off) under
#     valgrind --tool=callgrind, its counters zeroed before and dumped after each client run,
#     the requests counted by nginx's stub_status; the slope between a short and a long run of
#     each client (INSTR_LENS="3 12" seconds, INSTR_CONNS=4 connections), so the handshakes
#     cancel out; INSTR_ROUNDS=3 rounds, the clients' order alternating, the median of the
#     per-round ratios. Nearly deterministic where the CPU time is not, it resolves the
#     percent that the CPU time's run-to-run spread hides (the kernel's work is not in it).
#     RUNS=0 INSTR=1 runs only this.
source "$(dirname "$0")/lib.sh"

RUNS="${RUNS:-3}"
DURATION="${DURATION:-5s}"
CONNS="${CONNS:-64}"
HS_N="${HS_N:-4000}"
HANDSHAKES="${HANDSHAKES:-1}"
TLS_PROTOCOLS="${TLS_PROTOCOLS:-TLSv1.2 TLSv1.3}"
LIMIT=$(( ${DURATION%s} + 120 ))
RT="${RT:-0}"
RUN_AS=(); [ "$RT" = 1 ] && RUN_AS=(chrt -f 1)
WAKEUPS="${WAKEUPS:-0}"
INSTR="${INSTR:-0}"
INSTR_LENS="${INSTR_LENS:-3 12}"
INSTR_CONNS="${INSTR_CONNS:-4}"
INSTR_ROUNDS="${INSTR_ROUNDS:-3}"

need nginx wrk ab h2load openssl taskset curl jq /usr/bin/time
[ "$RT" = 1 ] && need chrt
[ "$WAKEUPS" = 1 ] && need perf
[ "$INSTR" = 1 ] && need valgrind callgrind_control
build

# The ECDSA P-256 certificate of 127.0.0.1 in $BENCH_TMP/tls-cert (made once).
tls_cert() {
    local dir="$BENCH_TMP/tls-cert"
    [ -f "$dir/cert.pem" ] && return
    mkdir -p "$dir"
    show "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 ..."
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
        -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
        -keyout "$dir/key.pem" -out "$dir/cert.pem" 2>/dev/null || die "openssl req failed"
}

# nginx with TLS on core 0; sets TLS_URL and TLS_CA.
start_nginx_tls() {
    local dir="$BENCH_TMP/tls-cert"
    tls_cert
    NGINX_CA="$dir/cert.pem"
    start_nginx 0 "ssl_certificate $dir/cert.pem; ssl_certificate_key $dir/key.pem; ssl_protocols $TLS_PROTOCOLS;"
    TLS_URL="$NGINX_URL"
    TLS_CA="$NGINX_CA"
}

# nginx_under_callgrind: one nginx process (no master) with TLS under callgrind on core 0,
# stub_status on a plain port; sets CG_PID, CG_DIR, CG_URL, CG_STATUS (needs tls-cert).
nginx_under_callgrind() {
    local dir="$BENCH_TMP/nginx-cg" cert="$BENCH_TMP/tls-cert" port status user=""
    mkdir -p "$dir/logs" "$dir/tmp"
    port="$(free_port)"; status="$(free_port)"
    [ "$(id -u)" -eq 0 ] && user="user root;"
    cat >"$dir/nginx.conf" <<EOF
$user
master_process off;
daemon off;
pid $dir/logs/nginx.pid;
error_log $dir/logs/error.log warn;
events { worker_connections 1024; }
http {
$(nginx_http_common "$dir")
    server {
        listen 127.0.0.1:$port ssl;
        ssl_certificate $cert/cert.pem; ssl_certificate_key $cert/key.pem; ssl_protocols $TLS_PROTOCOLS;
        location /v1/ { return 200 '$KV_BODY'; }
    }
    server { listen 127.0.0.1:$status; location / { stub_status; } }
}
EOF
    show "taskset -c 0 valgrind --tool=callgrind nginx -p $dir -c $dir/nginx.conf"
    (cd "$dir" && exec taskset -c 0 valgrind --tool=callgrind --callgrind-out-file="$dir/cg.out.%p" \
        nginx -p "$dir" -c "$dir/nginx.conf" -e "$dir/logs/error.log" </dev/null >"$dir/logs/valgrind.log" 2>&1) &
    CG_PID="$!"
    BENCH_PIDS+=("$CG_PID")
    wait_port "$port" 120 || die "nginx under valgrind did not start: $(tail -n 5 "$dir/logs/valgrind.log")"
    CG_DIR="$dir"
    CG_URL="https://127.0.0.1:$port/v1/secret/data/foo"
    CG_STATUS="http://127.0.0.1:$status/"
}

# instr_run CLIENT SECONDS: one keep-alive run against the nginx under callgrind; prints
# "REQUESTS INSTRUCTIONS", nginx's, from its zeroed counters to the dump after the run.
instr_run() {
    local client="$1" secs="$2" r0 r1 dump
    r0="$(curl -s --max-time 30 "$CG_STATUS" | awk 'NR == 3 { print $3 }')"
    callgrind_control -z "$CG_PID" >/dev/null 2>&1
    if [ "$client" = vblast ]; then
        show "taskset -c 1 vblast -k -t 1 -c $INSTR_CONNS -z ${secs}s -q $CG_URL"
        timeout -k 5 "$LIMIT" "${RUN_AS[@]+"${RUN_AS[@]}"}" taskset -c 1 "$VBLAST" -k -t 1 -c "$INSTR_CONNS" -z "${secs}s" -q "$CG_URL" >/dev/null \
            || die "vblast failed against the nginx under callgrind"
    else
        show "taskset -c 1 wrk -t1 -c$INSTR_CONNS -d${secs}s $CG_URL"
        timeout -k 5 "$LIMIT" "${RUN_AS[@]+"${RUN_AS[@]}"}" taskset -c 1 wrk -t1 -c"$INSTR_CONNS" -d"${secs}s" "$CG_URL" >/dev/null \
            || die "wrk failed against the nginx under callgrind"
    fi
    callgrind_control -d "$CG_PID" >/dev/null 2>&1
    r1="$(curl -s --max-time 30 "$CG_STATUS" | awk 'NR == 3 { print $3 }')"
    dump="$(ls -t "$CG_DIR"/cg.out.* | head -n 1)"
    # stub_status counts the request asking it: r1 includes the second look.
    echo "$((r1 - r0 - 1)) $(awk '/^(summary|totals):/ { print $2; exit }' "$dump")"
}

if [ "$INSTR" = 1 ]; then
    tls_cert
    nginx_under_callgrind
    log "== nginx's instructions per request under callgrind: TLS keep-alive, -c $INSTR_CONNS, runs of $INSTR_LENS s, $INSTR_ROUNDS rounds"
    INSTR_V=""; INSTR_W=""; INSTR_R=""
    for i in $(seq "$INSTR_ROUNDS"); do
        if [ $((i % 2)) -eq 1 ]; then pair="vblast wrk"; else pair="wrk vblast"; fi
        declare -A per=()
        for c in $pair; do
            pts=""
            for secs in $INSTR_LENS; do
                pt="$(instr_run "$c" "$secs")"
                log "  round $i, $c ${secs}s: $pt (requests, instructions)"
                pts+="$pt"$'\n'
            done
            per[$c]="$(printf '%s' "$pts" | awk 'NR == 1 { n1 = $1; i1 = $2 } END { if ($1 > n1) printf "%.0f", ($2 - i1) / ($1 - n1); else print "nan" }')"
        done
        INSTR_V+="${per[vblast]}"$'\n'; INSTR_W+="${per[wrk]}"$'\n'
        INSTR_R+="$(awk -v a="${per[vblast]}" -v b="${per[wrk]}" 'BEGIN { if (b + 0 == 0) print "nan"; else printf "%.3f", a / b }')"$'\n'
    done
    kill -TERM "$CG_PID" 2>/dev/null || true
    wait "$CG_PID" 2>/dev/null || true
    log "nginx's user-space instructions per request (callgrind, medians of $INSTR_ROUNDS rounds): vblast $(printf '%s' "$INSTR_V" | median | xargs printf %.0f), wrk $(printf '%s' "$INSTR_W" | median | xargs printf %.0f); ratio vblast/wrk $(printf '%s' "$INSTR_R" | median | xargs printf %.3f) (goal <= 1)  [rounds: $(printf '%s' "$INSTR_R" | tr '\n' ' ' | sed 's/ $//')]"
    [ "$RUNS" -gt 0 ] || exit 0
fi

start_nginx 0
PLAIN_URL="$NGINX_URL"; PLAIN_PID="$NGINX_PID"
start_nginx_tls
TLS_PID="$NGINX_PID"
if [ "$RT" = 1 ]; then
    for w in $(pgrep -P "$PLAIN_PID") $(pgrep -P "$TLS_PID"); do
        show "chrt -f -p 1 $w"
        chrt -f -p 1 "$w" || die "chrt failed (RT=1 needs the right to set real-time priorities)"
    done
fi
URL="$TLS_URL"

timed() { # time-file cmd...
    local tf="$1"; shift
    show "$*"
    timeout -k 5 "$LIMIT" /usr/bin/time -f '%U %S' -o "$tf" "$@"
}

cpu_of() { awk '{ printf "%.3f\n", $1 + $2 }' "$1"; }

# Each runner prints "COUNT CPU_SECONDS".
vblast_run() { # extra vblast flags...
    local out="$BENCH_TMP/vblast.out" tf="$BENCH_TMP/vblast.time"
    timed "$tf" "${RUN_AS[@]+"${RUN_AS[@]}"}" taskset -c 1 "$VBLAST" -t 1 "$@" --format json "$URL" >"$out" 2>"$out.err" \
        || { log "vblast failed: $(cat "$out.err")"; return 1; }
    local failed; failed="$(jq -r .failed "$out")"
    [ "$failed" = 0 ] || log "warning: vblast: $failed failed: $(jq -c .errors "$out")"
    log "  vblast: $(jq -r '"\(.requests) requests, \(.tls_ms.count) handshakes (\(.tls_resumed) resumed), \(.rps|floor) req/s"' "$out")"
    echo "$(jq -r .requests "$out") $(cpu_of "$tf")"
}

wrk_run() {
    local out="$BENCH_TMP/wrk.out" tf="$BENCH_TMP/wrk.time"
    timed "$tf" "${RUN_AS[@]+"${RUN_AS[@]}"}" taskset -c 1 wrk -t1 -c"$CONNS" -d"$DURATION" "$URL" >"$out" 2>&1 \
        || { log "wrk failed: $(cat "$out")"; return 1; }
    local n; n="$(awk '/requests in/ { print $1 }' "$out")"
    grep -q "Non-2xx" "$out" && log "warning: wrk: $(grep Non-2xx "$out")"
    log "  wrk: $n requests, $(awk '/Requests\/sec/ { print int($2) }' "$out") req/s"
    echo "$n $(cpu_of "$tf")"
}

ab_run() {
    local out="$BENCH_TMP/ab.out" tf="$BENCH_TMP/ab.time"
    timed "$tf" "${RUN_AS[@]+"${RUN_AS[@]}"}" taskset -c 1 ab -q -n "$HS_N" -c "$CONNS" "$URL" >"$out" 2>&1 \
        || { log "ab failed: $(tail -n 5 "$out")"; return 1; }
    local n fail
    n="$(awk '/^Complete requests:/ { print $3 }' "$out")"
    fail="$(awk '/^Failed requests:/ { print $3 }' "$out")"
    [ "${fail:-0}" = 0 ] || log "warning: ab: $fail failed requests"
    log "  ab: $n requests, $(awk '/^Requests per second:/ { print int($4) }' "$out") req/s"
    echo "$n $(cpu_of "$tf")"
}

h2load_run() {
    local out="$BENCH_TMP/h2load.out" tf="$BENCH_TMP/h2load.time"
    timed "$tf" "${RUN_AS[@]+"${RUN_AS[@]}"}" taskset -c 1 h2load --h1 -n "$HS_N" -c "$CONNS" -H 'Connection: close' "$URL" >"$out" 2>&1 \
        || { log "h2load failed: $(tail -n 5 "$out")"; return 1; }
    local ok
    ok="$(awk '/^requests:/ { print $8 }' "$out")"
    log "  h2load: $(grep '^requests:' "$out"), $(grep '^status codes:' "$out")"
    echo "$ok $(cpu_of "$tf")"
}

# per_cpu_s "COUNT CPU" -> units per CPU-second.
per_cpu_s() { awk '{ if ($2 > 0) printf "%.0f\n", $1 / $2; else print "nan" }'; }

# One keep-alive run of CLIENT (vblast or wrk) against the nginx of PROTO (tls or plain),
# appended to $BENCH_TMP/ka.PROTO.CLIENT as "requests client_cpu_s server_cpu_s req_per_s wall_s
# server_wakeups" (the last nan without WAKEUPS=1).
ka_run() { # proto client
    local proto="$1" client="$2" url pid s0 s1 t0 t1 r
    if [ "$proto" = tls ]; then url="$TLS_URL"; pid="$TLS_PID"; else url="$PLAIN_URL"; pid="$PLAIN_PID"; fi
    local pf="$BENCH_TMP/perf.wakeups" perf_pid="" wakeups=nan
    if [ "$WAKEUPS" = 1 ]; then
        perf stat -x, -o "$pf" -e sched:sched_waking -p "$(pgrep -P "$pid" | paste -sd,)" &
        perf_pid=$!
        sleep 0.3
    fi
    s0="$(nginx_cpu "$pid")"; t0="$(date +%s.%N)"
    if [ "$client" = vblast ]; then
        r="$(URL="$url" vblast_run -k -c "$CONNS" -z "$DURATION")"
    else
        r="$(URL="$url" wrk_run)"
    fi
    s1="$(nginx_cpu "$pid")"; t1="$(date +%s.%N)"
    if [ -n "$perf_pid" ]; then
        kill -INT "$perf_pid"; wait "$perf_pid" || true
        wakeups="$(awk -F, '/sched_waking/ { print $1 }' "$pf")"
    fi
    local out="$BENCH_TMP/$client.out" rps
    if [ "$client" = vblast ]; then rps="$(jq -r .rps "$out")"; else rps="$(awk '/Requests\/sec/ { print $2 }' "$out")"; fi
    echo "$r $(awk -v a="$s0" -v b="$s1" 'BEGIN { printf "%.3f", b - a }') $rps $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }') $wakeups" \
        >>"$BENCH_TMP/ka.$proto.$client"
    log "  $proto $client: server CPU $(tail -n1 "$BENCH_TMP/ka.$proto.$client" | awk '{ printf "%.3f us/req, busy %.0f%%", $3 * 1e6 / $1, 100 * $3 / $5 }')"
}

HS_V=""; HS_VR=""; HS_AB=""; HS_H2=""
for i in $(seq "$RUNS"); do
    # Alternate the order so neither client always runs on a warmer (or noisier) machine.
    if [ $((i % 2)) -eq 1 ]; then pair="vblast wrk"; else pair="wrk vblast"; fi
    for proto in tls plain; do
        log "== run $i/$RUNS: keep-alive, $proto"
        for c in $pair; do ka_run "$proto" "$c"; done
    done
    [ "$HANDSHAKES" = 1 ] || continue
    log "== run $i/$RUNS: connection per request, $HS_N requests"
    HS_V+="$(vblast_run -k --no-keepalive --no-tls-resume -c "$CONNS" -n "$HS_N" | per_cpu_s)"$'\n'
    HS_VR+="$(vblast_run -k --no-keepalive -c "$CONNS" -n "$HS_N" | per_cpu_s)"$'\n'
    HS_AB+="$(ab_run | per_cpu_s)"$'\n'
    HS_H2+="$(h2load_run | per_cpu_s)"$'\n'
done

m() { printf '%s' "$1" | grep -v '^$' | median; }
# col PROTO CLIENT EXPR: one figure per run from the ka file ($1 requests, $2 client CPU,
# $3 server CPU, $4 req/s, $5 wall seconds, $6 the server's wake-ups).
col() { awk "{ if (\$1 > 0) printf \"%.3f\\n\", $3; else print \"nan\" }" "$BENCH_TMP/ka.$1.$2"; }
# med PROTO CLIENT EXPR FORMAT: the median of col, printed with FORMAT.
med() { col "$1" "$2" "$3" | median | xargs printf "$4"; }
# pair_ratios PROTO EXPR: vblast/wrk of EXPR, run by run.
pair_ratios() {
    paste -d' ' <(col "$1" vblast "$2") <(col "$1" wrk "$2") \
        | awk '{ if ($2 + 0 == 0) print "nan"; else printf "%.3f\n", $1 / $2 }'
}
runs() { tr '\n' ' ' | sed 's/ $//'; }

log ""
log "Summary (medians of $RUNS runs; clients pinned to core 1, the nginx worker to core 0; ssl_protocols $TLS_PROTOCOLS; RT=$RT)"
[ -n "$BUILD_NOTE" ] && log "$BUILD_NOTE"
log "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
SRV='$3 * 1e6 / $1'; CLI='$2 * 1e6 / $1'; RPS='$4'; BUSY='100 * $3 / $5'; WAKE='$6 / $1'
for proto in tls plain; do
    log "keep-alive over $proto, $CONNS connections:"
    log "  server CPU per request: vblast $(med $proto vblast "$SRV" %.2f) us, wrk $(med $proto wrk "$SRV" %.2f) us; ratio vblast/wrk $(pair_ratios $proto "$SRV" | median | xargs printf %.3f) (goal <= 1.05)  [runs: $(pair_ratios $proto "$SRV" | runs)]"
    log "  throughput:             vblast $(med $proto vblast "$RPS" %.0f) req/s, wrk $(med $proto wrk "$RPS" %.0f) req/s; ratio vblast/wrk $(pair_ratios $proto "$RPS" | median | xargs printf %.3f) (goal >= 1)  [runs: $(pair_ratios $proto "$RPS" | runs)]"
    log "  client CPU per request: vblast $(med $proto vblast "$CLI" %.2f) us, wrk $(med $proto wrk "$CLI" %.2f) us; ratio vblast/wrk $(pair_ratios $proto "$CLI" | median | xargs printf %.3f) (goal < 1)  [runs: $(pair_ratios $proto "$CLI" | runs)]"
    log "  server busy (CPU / wall): vblast $(med $proto vblast "$BUSY" %.0f)%, wrk $(med $proto wrk "$BUSY" %.0f)%"
    [ "$WAKEUPS" = 1 ] && log "  server wake-ups per request: vblast $(med $proto vblast "$WAKE" %.3f), wrk $(med $proto wrk "$WAKE" %.3f)"
done
[ "$HANDSHAKES" = 1 ] || exit 0
hs_v="$(m "$HS_V")"; hs_vr="$(m "$HS_VR")"; hs_ab="$(m "$HS_AB")"; hs_h2="$(m "$HS_H2")"
log "TLS handshakes per client CPU-second (connection per request):"
log "  vblast full handshakes (--no-tls-resume): $hs_v   [runs: $(printf '%s' "$HS_V" | tr '\n' ' ')]"
log "  vblast with resumption (default):         $hs_vr   [runs: $(printf '%s' "$HS_VR" | tr '\n' ' ')]"
log "  ab:                                       $hs_ab   [runs: $(printf '%s' "$HS_AB" | tr '\n' ' ')]"
log "  h2load --h1 (Connection: close):          $hs_h2   [runs: $(printf '%s' "$HS_H2" | tr '\n' ' ')]"
log "  ratio vblast(full)/ab $(ratio "$hs_v" "$hs_ab"), vblast(full)/h2load $(ratio "$hs_v" "$hs_h2"), vblast(resumed)/ab $(ratio "$hs_vr" "$hs_ab")"
