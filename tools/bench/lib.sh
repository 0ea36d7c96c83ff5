# Shared helpers for tools/bench/*.sh (sourced, not run).
# Everything started here is recorded by pid and stopped on EXIT; load only ever goes
# to 127.0.0.1; every command runs under `timeout`.

set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VBLAST="${CARGO_TARGET_DIR:-$ROOT/target}/release/vblast"
BENCH_TMP="$(mktemp -d "${TMPDIR:-/tmp}/vblast-bench.XXXXXX")"
BENCH_PIDS=()

# Progress and the commands run go to fd 9, a copy of the original stdout, so they stay
# in order with the summary and survive $(...) captures and per-command redirections.
exec 9>&1
log() { printf '%s\n' "$*" >&9; }
die() { log "error: $*"; exit 1; }

bench_cleanup() {
    local p
    for p in "${BENCH_PIDS[@]+"${BENCH_PIDS[@]}"}"; do
        kill -TERM "$p" 2>/dev/null || true
    done
    for p in "${BENCH_PIDS[@]+"${BENCH_PIDS[@]}"}"; do
        for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$p" 2>/dev/null || true
        wait "$p" 2>/dev/null || true
    done
    rm -rf "$BENCH_TMP"
}
trap bench_cleanup EXIT
trap 'exit 130' INT TERM

# Prints the command (as it will run) then runs it.
show() { printf '+ %s\n' "$*" >&9; }

# Builds, then copies the binary into the temp dir so a concurrent rebuild of the tree
# cannot swap it mid-run. If the build fails (the tree is shared) and an older binary
# exists, goes on with that one and says so (BUILD_NOTE ends up in the summary).
BUILD_NOTE=""
build() {
    if [ -n "${VBLAST_BIN:-}" ]; then # a given binary, not built here
        cp "$VBLAST_BIN" "$BENCH_TMP/vblast"
        VBLAST="$BENCH_TMP/vblast"
        return
    fi
    show "cargo build --release"
    if ! (cd "$ROOT" && timeout 900 cargo build --release 2>&1 | tail -n 3 >&9); then
        [ -x "$VBLAST" ] || die "cargo build --release failed and there is no $VBLAST"
        BUILD_NOTE="WARNING: cargo build --release failed; measured the existing binary built $(date -r "$VBLAST" '+%F %T')"
        log "$BUILD_NOTE"
    fi
    cp "$VBLAST" "$BENCH_TMP/vblast"
    VBLAST="$BENCH_TMP/vblast"
}

need() {
    local t
    for t in "$@"; do
        command -v "$t" >/dev/null 2>&1 || die "$t not found (run tools/deps.sh)"
    done
}

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

wait_port() { # port timeout_s
    local port="$1" deadline=$((SECONDS + ${2:-30}))
    until (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do
        [ "$SECONDS" -lt "$deadline" ] || return 1
        sleep 0.05
    done
}

# The ~148-byte kv-v2 read body the test harness's nginx serves.
KV_BODY='{"request_id":"0b6f5a3e-1c1e-4f3a-9d53-5a3b8f3c2a11","data":{"data":{"value":"bar"},"metadata":{"version":1}},"lease_duration":0,"renewable":false}'

# nginx_http_common DIR: the lines every bench nginx's http block opens with (no access
# log, temp paths under DIR/tmp, keep-alive for the whole run, the kv body's type).
nginx_http_common() {
    local dir="$1"
    cat <<EOF
    access_log off;
    client_body_temp_path $dir/tmp/body;
    proxy_temp_path $dir/tmp/proxy;
    fastcgi_temp_path $dir/tmp/fastcgi;
    uwsgi_temp_path $dir/tmp/uwsgi;
    scgi_temp_path $dir/tmp/scgi;
    keepalive_requests 100000000;
    keepalive_timeout ${NGINX_KEEPALIVE:-75s};
    default_type application/json;
    server_tokens off;
EOF
}

# launch_nginx CPU DIR PORT: runs the nginx of DIR/nginx.conf (logs in DIR/logs) pinned to
# CPU, recorded for the cleanup, and waits for PORT; sets LAUNCHED_PID (its master).
launch_nginx() {
    local cpu="$1" dir="$2" port="$3"
    show "taskset -c $cpu nginx -p $dir -c $dir/nginx.conf -g 'daemon off;'"
    taskset -c "$cpu" nginx -p "$dir" -c "$dir/nginx.conf" -e "$dir/logs/error.log" \
        -g 'daemon off;' </dev/null >"$dir/logs/stderr.log" 2>&1 &
    LAUNCHED_PID="$!"
    BENCH_PIDS+=("$LAUNCHED_PID")
    wait_port "$port" 10 || die "nginx ($dir) did not start: $(cat "$dir/logs/"*.log)"
}

# start_nginx CPU [TLS_DIRECTIVES]: nginx (1 worker) pinned to core CPU; sets NGINX_PORT,
# NGINX_URL. With TLS_DIRECTIVES (ssl_certificate ... inside the server block) it listens
# with TLS and NGINX_URL is https (checked with NGINX_CA, which the caller sets).
# start_nginx CPUS [TLS_DIRECTIVES]: a canned kv response on $NGINX_URL, pinned to CPUS;
# NGINX_PID is its master process (`nginx_cpu` reads its workers' CPU).
# Sizes from the environment: NGINX_WORKERS (1), NGINX_RLIMIT (16384), NGINX_CONNS (8192),
# NGINX_KEEPALIVE (75s), NGINX_LISTEN_OPTS (extra listen parameters: " reuseport backlog=4096"),
# NGINX_CURL_OPTS (options of the curl that checks it: "--http2-prior-knowledge" for h2c).
start_nginx() {
    local cpu="$1" tls="${2:-}" dir="$BENCH_TMP/nginx" user="" ssl="" scheme=http
    need nginx
    mkdir -p "$dir/logs" "$dir/tmp"
    NGINX_PORT="$(free_port)"
    [ "$(id -u)" -eq 0 ] && user="user root;"
    if [ -n "$tls" ]; then ssl=" ssl"; scheme=https; dir="$BENCH_TMP/nginx-tls"; mkdir -p "$dir/logs" "$dir/tmp"; fi
    cat >"$dir/nginx.conf" <<EOF
$user
worker_processes ${NGINX_WORKERS:-1};
worker_rlimit_nofile ${NGINX_RLIMIT:-16384};
pid $dir/logs/nginx.pid;
error_log $dir/logs/error.log warn;
events { worker_connections ${NGINX_CONNS:-8192}; }
http {
$(nginx_http_common "$dir")
    server {
        listen 127.0.0.1:$NGINX_PORT$ssl${NGINX_LISTEN_OPTS:-};
        $tls
        location /v1/ { return 200 '$KV_BODY'; }
    }
}
EOF
    launch_nginx "$cpu" "$dir" "$NGINX_PORT"
    NGINX_PID="$LAUNCHED_PID"
    NGINX_URL="$scheme://127.0.0.1:$NGINX_PORT/v1/secret/data/foo"
    local got
    got="$(curl -s --max-time 5 ${NGINX_CURL_OPTS:-} ${NGINX_CA:+--cacert "$NGINX_CA"} "$NGINX_URL")"
    [ "$got" = "$KV_BODY" ] || die "nginx answered: $got"
}

# start_vault_standin CPU UPSTREAM_URL (http://HOST:PORT): a Vault that answers kv reads
# without cost, for rates one OpenBao cannot hold. An nginx pinned to CPU answers every GET
# of a kv-v2 secret on a vblast fixture mount (/v1/vblast-<hex>/data/...) itself, with
# $KV_BODY, and passes every other request (setup, seeding, logins, tokens, cleanup, sys/
# paths) to UPSTREAM_URL, the real server, so a run's setup and cleanup are the server's
# own. Sets STANDIN_ADDR and STANDIN_PID. Only kv reads go faster: any other operation
# runs at the server's pace.
start_vault_standin() {
    local cpu="$1" upstream="$2" dir="$BENCH_TMP/standin" user="" port
    [[ "$upstream" == http://* ]] || die "the stand-in passes to a plain http:// server, not $upstream"
    need nginx
    mkdir -p "$dir/logs" "$dir/tmp"
    port="$(free_port)"
    [ "$(id -u)" -eq 0 ] && user="user root;"
    cat >"$dir/nginx.conf" <<EOF
$user
worker_processes 1;
worker_rlimit_nofile 16384;
pid $dir/logs/nginx.pid;
error_log $dir/logs/error.log warn;
events { worker_connections 8192; }
http {
$(nginx_http_common "$dir")
    upstream vault { server ${upstream#http://}; keepalive 32; }
    server {
        listen 127.0.0.1:$port;
        proxy_http_version 1.1;
        proxy_set_header Connection "";
        location ~ ^/v1/vblast-[0-9a-f]+/data/ {
            if (\$request_method = GET) { return 200 '$KV_BODY'; }
            proxy_pass http://vault;
        }
        location / { proxy_pass http://vault; }
    }
}
EOF
    log "the stand-in: kv reads answered, the rest passed to $upstream"
    launch_nginx "$cpu" "$dir" "$port"
    STANDIN_PID="$LAUNCHED_PID"
    STANDIN_ADDR="http://127.0.0.1:$port"
    local got
    got="$(curl -s --max-time 5 "$STANDIN_ADDR/v1/vblast-0/data/a")"
    [ "$got" = "$KV_BODY" ] || die "the stand-in answered a kv read with: $got"
    curl -sf --max-time 5 "$STANDIN_ADDR/v1/sys/health" >/dev/null \
        || die "the stand-in does not pass sys/health to $upstream"
}

# nginx_cpu MASTER_PID: CPU seconds (user + system, from /proc/PID/stat) spent so far by the
# worker processes of the nginx whose master is MASTER_PID.
nginx_cpu() {
    local w ticks=0 tck
    tck="$(getconf CLK_TCK)"
    for w in $(pgrep -P "$1"); do
        ticks=$(( ticks + $(awk '{ print $14 + $15 }' "/proc/$w/stat" 2>/dev/null || echo 0) ))
    done
    awk -v t="$ticks" -v h="$tck" 'BEGIN { printf "%.3f\n", t / h }'
}

find_bao() {
    if [ -n "${VBLAST_BAO:-}" ] && "$VBLAST_BAO" version >/dev/null 2>&1; then
        BAO="$VBLAST_BAO"
    else
        BAO="$("$ROOT/tools/deps.sh" | tail -n1)"
    fi
}

# start_bao: an OpenBao dev server (root token "root"); sets BAO_PORT, BAO_ADDR.
start_bao() {
    find_bao
    local dir="$BENCH_TMP/bao"
    mkdir -p "$dir/home"
    BAO_PORT="$(free_port)"
    BAO_ADDR="http://127.0.0.1:$BAO_PORT"
    show "HOME=$dir/home $BAO server -dev -dev-root-token-id root -dev-listen-address 127.0.0.1:$BAO_PORT -dev-no-store-token"
    HOME="$dir/home" "$BAO" server -dev -dev-root-token-id root \
        -dev-listen-address "127.0.0.1:$BAO_PORT" -dev-no-store-token \
        </dev/null >"$dir/log" 2>&1 &
    BENCH_PIDS+=("$!")
    local deadline=$((SECONDS + 30))
    until curl -sf --max-time 2 "$BAO_ADDR/v1/sys/health" >/dev/null 2>&1; do
        [ "$SECONDS" -lt "$deadline" ] || die "bao did not start: $(tail -n 20 "$dir/log")"
        sleep 0.2
    done
}

# median of the numbers on stdin (one per line).
median() {
    sort -g | awk '{a[NR]=$1} END { if (NR==0) {print "nan"; exit}
        if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2 }'
}

# ratio A B, 2 decimals (nan when B is 0 or empty).
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b+0==0) print "nan"; else printf "%.2f\n", a/b }'; }

# wrk latency field ("812.00us", "1.20ms", "2.00s") -> microseconds.
to_us() {
    awk -v v="$1" 'BEGIN {
        n = v + 0
        if (v ~ /us$/) print n; else if (v ~ /ms$/) print n*1000;
        else if (v ~ /m$/) print n*60000000; else if (v ~ /s$/) print n*1000000; else print n }'
}

# rss_sampler PID FILE: the peak of the summed RSS (KiB) of every `vblast` process under
# PID (the parent and its worker processes), sampled every 100 ms until PID exits.
rss_sampler() {
    local root="$1" out="$2" peak=0 cur
    while kill -0 "$root" 2>/dev/null; do
        cur="$(ps -e -o pid=,ppid=,comm=,rss= | awk -v r="$root" '
            { pp[$1]=$2; c[$1]=$3; m[$1]=$4 }
            END { s=0; for (p in pp) { q=p; while (q in pp && q!=r && q>1) q=pp[q];
                  if (q==r && c[p]=="vblast") s+=m[p] } print s }')"
        [ "${cur:-0}" -gt "$peak" ] && peak="$cur"
        sleep 0.1
    done
    echo "$peak" >"$out"
}

# start_bao_tls: an OpenBao dev server with -dev-tls (root token "root"); sets BAO_PORT,
# BAO_ADDR (https) and BAO_CA (the CA it generated).
start_bao_tls() {
    find_bao
    local dir="$BENCH_TMP/bao-tls"
    mkdir -p "$dir/home" "$dir/tls"
    BAO_PORT="$(free_port)"
    BAO_ADDR="https://127.0.0.1:$BAO_PORT"
    BAO_CA="$dir/tls/vault-ca.pem"
    show "HOME=$dir/home $BAO server -dev -dev-tls -dev-tls-cert-dir $dir/tls -dev-root-token-id root -dev-listen-address 127.0.0.1:$BAO_PORT -dev-no-store-token"
    HOME="$dir/home" "$BAO" server -dev -dev-tls -dev-tls-cert-dir "$dir/tls" -dev-root-token-id root \
        -dev-listen-address "127.0.0.1:$BAO_PORT" -dev-no-store-token \
        </dev/null >"$dir/log" 2>&1 &
    BENCH_PIDS+=("$!")
    local deadline=$((SECONDS + 30))
    until [ -s "$BAO_CA" ] && curl -sf --max-time 2 --cacert "$BAO_CA" "$BAO_ADDR/v1/sys/health" >/dev/null 2>&1; do
        [ "$SECONDS" -lt "$deadline" ] || die "bao -dev-tls did not start: $(tail -n 20 "$dir/log")"
        sleep 0.2
    done
}
