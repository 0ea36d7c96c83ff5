#!/usr/bin/env bash
# usage: tools/bench/tls.sh   [env: RUNS=3 DURATION=5s CONNS=64 HS_N=4000]
# TLS client cost against nginx (1 worker, TLS 1.3, ECDSA P-256 certificate, pinned to core 0),
# every client pinned to core 1 with one thread. Client CPU = user+sys of the client process
# (/usr/bin/time). Medians of RUNS alternating runs; figures printed, never asserted.
#  1. keep-alive: client CPU microseconds per request, vblast -k -t 1 -c 64 -z 5s vs
#     wrk -t1 -c64 -d5s (ratio vblast/wrk; lower is better for vblast).
#  2. connection per request: TLS handshakes per client CPU-second, vblast --no-keepalive
#     (full handshakes: --no-tls-resume; and with session resumption, its default) vs
#     ab -n N -c 64 and h2load --h1 -n N -c 64 -H 'Connection: close' (neither resumes
#     sessions nor verifies certificates; vblast runs with -k too). Ratios peer/vblast
#     are printed as vblast/peer handshakes per CPU-second (higher is better for vblast).
source "$(dirname "$0")/lib.sh"

RUNS="${RUNS:-3}"
DURATION="${DURATION:-5s}"
CONNS="${CONNS:-64}"
HS_N="${HS_N:-4000}"
LIMIT=$(( ${DURATION%s} + 120 ))

need nginx wrk ab h2load openssl taskset curl jq /usr/bin/time
build

# nginx with TLS on core 0; sets TLS_URL and TLS_CA.
start_nginx_tls() {
    local dir="$BENCH_TMP/tls-cert"
    mkdir -p "$dir"
    show "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 ..."
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
        -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
        -keyout "$dir/key.pem" -out "$dir/cert.pem" 2>/dev/null || die "openssl req failed"
    NGINX_CA="$dir/cert.pem"
    start_nginx 0 "ssl_certificate $dir/cert.pem; ssl_certificate_key $dir/key.pem; ssl_protocols TLSv1.2 TLSv1.3;"
    TLS_URL="$NGINX_URL"
    TLS_CA="$NGINX_CA"
}

start_nginx_tls
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
    timed "$tf" taskset -c 1 "$VBLAST" -t 1 "$@" --format json "$URL" >"$out" 2>"$out.err" \
        || { log "vblast failed: $(cat "$out.err")"; return 1; }
    local failed; failed="$(jq -r .failed "$out")"
    [ "$failed" = 0 ] || log "warning: vblast: $failed failed: $(jq -c .errors "$out")"
    log "  vblast: $(jq -r '"\(.requests) requests, \(.tls_ms.count) handshakes (\(.tls_resumed) resumed), \(.rps|floor) req/s"' "$out")"
    echo "$(jq -r .requests "$out") $(cpu_of "$tf")"
}

wrk_run() {
    local out="$BENCH_TMP/wrk.out" tf="$BENCH_TMP/wrk.time"
    timed "$tf" taskset -c 1 wrk -t1 -c"$CONNS" -d"$DURATION" "$URL" >"$out" 2>&1 \
        || { log "wrk failed: $(cat "$out")"; return 1; }
    local n; n="$(awk '/requests in/ { print $1 }' "$out")"
    grep -q "Non-2xx" "$out" && log "warning: wrk: $(grep Non-2xx "$out")"
    log "  wrk: $n requests, $(awk '/Requests\/sec/ { print int($2) }' "$out") req/s"
    echo "$n $(cpu_of "$tf")"
}

ab_run() {
    local out="$BENCH_TMP/ab.out" tf="$BENCH_TMP/ab.time"
    timed "$tf" taskset -c 1 ab -q -n "$HS_N" -c "$CONNS" "$URL" >"$out" 2>&1 \
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
    timed "$tf" taskset -c 1 h2load --h1 -n "$HS_N" -c "$CONNS" -H 'Connection: close' "$URL" >"$out" 2>&1 \
        || { log "h2load failed: $(tail -n 5 "$out")"; return 1; }
    local ok
    ok="$(awk '/^requests:/ { print $8 }' "$out")"
    log "  h2load: $(grep '^requests:' "$out"), $(grep '^status codes:' "$out")"
    echo "$ok $(cpu_of "$tf")"
}

# per_unit "COUNT CPU" -> microseconds of CPU per unit; per_cpu_s -> units per CPU-second.
us_per() { awk '{ if ($1 > 0) printf "%.2f\n", $2 * 1e6 / $1; else print "nan" }'; }
per_cpu_s() { awk '{ if ($2 > 0) printf "%.0f\n", $1 / $2; else print "nan" }'; }

KA_V=""; KA_W=""; HS_V=""; HS_VR=""; HS_AB=""; HS_H2=""
for i in $(seq "$RUNS"); do
    log "== run $i/$RUNS: keep-alive"
    KA_V+="$(vblast_run -k -c "$CONNS" -z "$DURATION" | us_per)"$'\n'
    KA_W+="$(wrk_run | us_per)"$'\n'
    log "== run $i/$RUNS: connection per request, $HS_N requests"
    HS_V+="$(vblast_run -k --no-keepalive --no-tls-resume -c "$CONNS" -n "$HS_N" | per_cpu_s)"$'\n'
    HS_VR+="$(vblast_run -k --no-keepalive -c "$CONNS" -n "$HS_N" | per_cpu_s)"$'\n'
    HS_AB+="$(ab_run | per_cpu_s)"$'\n'
    HS_H2+="$(h2load_run | per_cpu_s)"$'\n'
done

m() { printf '%s' "$1" | grep -v '^$' | median; }
ka_v="$(m "$KA_V")"; ka_w="$(m "$KA_W")"
hs_v="$(m "$HS_V")"; hs_vr="$(m "$HS_VR")"; hs_ab="$(m "$HS_AB")"; hs_h2="$(m "$HS_H2")"
log ""
log "Summary (medians of $RUNS runs; client pinned to core 1, nginx to core 0)"
[ -n "$BUILD_NOTE" ] && log "$BUILD_NOTE"
log "keep-alive client CPU per request: vblast $ka_v us, wrk $ka_w us; ratio vblast/wrk $(ratio "$ka_v" "$ka_w")"
log "  per-run vblast: $(printf '%s' "$KA_V" | tr '\n' ' ')  wrk: $(printf '%s' "$KA_W" | tr '\n' ' ')"
log "TLS handshakes per client CPU-second (connection per request):"
log "  vblast full handshakes (--no-tls-resume): $hs_v   [runs: $(printf '%s' "$HS_V" | tr '\n' ' ')]"
log "  vblast with resumption (default):         $hs_vr   [runs: $(printf '%s' "$HS_VR" | tr '\n' ' ')]"
log "  ab:                                       $hs_ab   [runs: $(printf '%s' "$HS_AB" | tr '\n' ' ')]"
log "  h2load --h1 (Connection: close):          $hs_h2   [runs: $(printf '%s' "$HS_H2" | tr '\n' ' ')]"
log "  ratio vblast(full)/ab $(ratio "$hs_v" "$hs_ab"), vblast(full)/h2load $(ratio "$hs_v" "$hs_h2"), vblast(resumed)/ab $(ratio "$hs_vr" "$hs_ab")"
