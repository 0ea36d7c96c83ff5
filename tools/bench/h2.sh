#!/usr/bin/env bash
# usage: tools/bench/h2.sh   [env: RUNS=3 SHAPES="16x16 1x100" N=200000 MODES="h2 h2c" PEERS="h2load oha" PERF=0 STRACE=1]
# HTTP/2 client CPU per request against a canned nginx kv response (one worker pinned to
# core 0): vblast (-t 1) beside h2load (-t 1) and oha (--http2), each pinned to core 1, the
# same connections x streams per connection and request count, over TLS (ALPN h2) and h2c.
# SHAPES are CxM: -c C connections with M streams each (vblast --streams M, h2load -m M,
# oha -p M). Prints, per mode and shape, the medians over RUNS alternating runs of client
# CPU (user+sys) per request, the user share, req/s, and the ratios vblast/h2load and
# vblast/oha (goal, issue 24: CPU per request at most 1.0 x h2load's, user CPU below it).
# STRACE=1 adds syscalls per request of each client under strace -c -f (a shorter run);
# PERF=1 a `perf record` of vblast (top symbols). Figures are printed, never asserted.
source "$(dirname "$0")/lib.sh"

RUNS="${RUNS:-3}"
SHAPES="${SHAPES:-16x16 1x100}"
N="${N:-200000}"
MODES="${MODES:-h2 h2c}"
PEERS="${PEERS-h2load oha}"
STRACE="${STRACE:-1}"
PERF="${PERF:-0}"
LIMIT=300
OHA="${OHA:-$(command -v oha || echo "$HOME/.cargo/bin/oha")}"

need nginx h2load openssl taskset curl jq /usr/bin/time
for p in $PEERS; do
    case "$p" in
        h2load) ;;
        oha) [ -x "$OHA" ] || die "oha not found (cargo install oha)" ;;
        *) die "unknown peer $p" ;;
    esac
done
build

# nginx over TLS with h2 by ALPN, and nginx with h2c (prior knowledge), both on core 0.
declare -A URL
for mode in $MODES; do
    case "$mode" in
        h2)
            dir="$BENCH_TMP/certs"; mkdir -p "$dir"
            # A CA and a leaf signed by it (rustls refuses a CA certificate as the server's).
            show "openssl: a CA and a leaf for 127.0.0.1 in $dir"
            { openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
                  -subj /CN=vblast-bench-ca -addext basicConstraints=critical,CA:TRUE \
                  -addext keyUsage=critical,keyCertSign -keyout "$dir/ca.key" -out "$dir/ca.pem" &&
              openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
                  -subj /CN=127.0.0.1 -keyout "$dir/key.pem" -out "$dir/leaf.csr" &&
              printf 'subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n' >"$dir/leaf.ext" &&
              openssl x509 -req -in "$dir/leaf.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" \
                  -CAcreateserial -days 2 -extfile "$dir/leaf.ext" -out "$dir/cert.pem"; } \
                >/dev/null 2>&1 || die "openssl failed"
            NGINX_CA="$dir/ca.pem"
            NGINX_LISTEN_OPTS=" http2" start_nginx 0 \
                "ssl_certificate $dir/cert.pem; ssl_certificate_key $dir/key.pem; ssl_protocols TLSv1.3;"
            ;;
        h2c)
            NGINX_LISTEN_OPTS=" http2" NGINX_CURL_OPTS="--http2-prior-knowledge" start_nginx 0
            ;;
        *) die "unknown mode $mode" ;;
    esac
    URL[$mode]="$NGINX_URL"
done

timed() { # file cmd...
    local tf="$1"; shift
    show "$*"
    timeout -k 5 "$LIMIT" /usr/bin/time -f '%U %S %e' -o "$tf" "$@"
}

# Each runner prints "REQUESTS USER SYS ELAPSED" (client CPU seconds, wall seconds).
run_vblast() { # mode C M
    local out="$BENCH_TMP/vblast.out" tf="$BENCH_TMP/vblast.time" proto=(--http2-prior-knowledge)
    [ "$1" = h2 ] && proto=(--http2 --ca-cert "$NGINX_CA")
    timed "$tf" taskset -c 1 "$VBLAST" -t 1 -c "$2" --streams "$3" -n "$N" "${proto[@]}" \
        --no-server-stats --format json "${URL[$1]}" >"$out" 2>"$out.err" \
        || { log "vblast failed: $(cat "$out.err")"; return 1; }
    local ok; ok="$(jq -r .ok "$out")"
    [ "$ok" = "$N" ] || log "warning: vblast: $ok of $N ok: $(jq -c '.errors, .http2' "$out")"
    echo "$ok $(cat "$tf")"
}

run_h2load() { # mode C M
    local out="$BENCH_TMP/h2load.out" tf="$BENCH_TMP/h2load.time"
    timed "$tf" taskset -c 1 h2load -t 1 -c "$2" -m "$3" -n "$N" "${URL[$1]}" >"$out" 2>&1 \
        || { log "h2load failed: $(tail -n 5 "$out")"; return 1; }
    # "requests: N total, N started, N done, N succeeded, N failed, N errored, N timeout"
    local ok; ok="$(awk '/^requests:/{print $8}' "$out")"
    [ "$ok" = "$N" ] || log "warning: h2load: $(grep '^requests:' "$out")"
    grep -q 'Application protocol: h2' "$out" || log "warning: h2load did not speak h2: $(grep -i protocol "$out")"
    echo "$ok $(cat "$tf")"
}

run_oha() { # mode C M
    local out="$BENCH_TMP/oha.out" tf="$BENCH_TMP/oha.time"
    timed "$tf" taskset -c 1 "$OHA" --http2 --insecure --no-tui --output-format json \
        -c "$2" -p "$3" -n "$N" "${URL[$1]}" >"$out" 2>"$out.err" \
        || { log "oha failed: $(tail -n 5 "$out.err")"; return 1; }
    local ok; ok="$(jq -r '.statusCodeDistribution["200"] // 0' "$out")"
    [ "$ok" = "$N" ] || log "warning: oha: $ok of $N with 200: $(jq -c .errorDistribution "$out")"
    echo "$ok $(cat "$tf")"
}

us_per_req() { awk '{ if ($1+0==0) print "nan"; else printf "%.3f\n", ($2+$3)*1e6/$1 }' <<<"$1"; }
user_per_req() { awk '{ if ($1+0==0) print "nan"; else printf "%.3f\n", $2*1e6/$1 }' <<<"$1"; }
rps() { awk '{ if ($4+0==0) print "nan"; else printf "%.0f\n", $1/$4 }' <<<"$1"; }

TOOLS=(vblast $PEERS)
SUMMARY=()
for mode in $MODES; do
    for shape in $SHAPES; do
        c="${shape%x*}" m="${shape#*x}"
        declare -A US=() USER=() RPS=()
        for t in "${TOOLS[@]}"; do US[$t]=""; USER[$t]=""; RPS[$t]=""; done
        for i in $(seq "$RUNS"); do
            # Alternate the order so that no tool always runs on a warmer machine.
            order=("${TOOLS[@]}")
            if [ $((i % 2)) -eq 0 ]; then
                order=(); for ((k=${#TOOLS[@]}-1; k>=0; k--)); do order+=("${TOOLS[$k]}"); done
            fi
            for t in "${order[@]}"; do
                r="$("run_$t" "$mode" "$c" "$m")" || continue
                u="$(us_per_req "$r")"
                log "$mode -c $c -m $m run $i: $t: $(cut -d' ' -f1 <<<"$r") ok, cpu $(awk '{print $2"+"$3}' <<<"$r") s, $u us/req, $(rps "$r") req/s"
                US[$t]+="$u"$'\n'; USER[$t]+="$(user_per_req "$r")"$'\n'; RPS[$t]+="$(rps "$r")"$'\n'
            done
        done
        line="$mode -c $c -m $m:"
        declare -A MED=()
        for t in "${TOOLS[@]}"; do
            MED[$t]="$(printf '%s' "${US[$t]}" | median)"
            line+=" $t $(printf '%.2f' "${MED[$t]}") us/req (user $(printf '%.2f' "$(printf '%s' "${USER[$t]}" | median)")), $(printf '%.0f' "$(printf '%s' "${RPS[$t]}" | median)") req/s;"
        done
        for p in $PEERS; do
            line+=" vblast/$p $(ratio "${MED[vblast]}" "${MED[$p]}")"
        done
        SUMMARY+=("$line")
    done
done

# Syscalls per request (strace slows every client down: only the counts mean anything).
SYS_LINES=()
if [ "$STRACE" = 1 ] && command -v strace >/dev/null 2>&1; then
    mode="${MODES%% *}" shape="${SHAPES%% *}"
    c="${shape%x*}" m="${shape#*x}"
    sn=$((N / 4))
    for t in "${TOOLS[@]}"; do
        sf="$BENCH_TMP/strace.$t"
        case "$t" in
            vblast) proto=(--http2-prior-knowledge); [ "$mode" = h2 ] && proto=(--http2 --ca-cert "$NGINX_CA")
                    cmd=("$VBLAST" -t 1 -c "$c" --streams "$m" -n "$sn" "${proto[@]}" --no-server-stats "${URL[$mode]}") ;;
            h2load) cmd=(h2load -t 1 -c "$c" -m "$m" -n "$sn" "${URL[$mode]}") ;;
            oha) cmd=("$OHA" --http2 --insecure --no-tui -c "$c" -p "$m" -n "$sn" "${URL[$mode]}") ;;
        esac
        show "strace -c -f -o $sf taskset -c 1 ${cmd[*]}"
        timeout -k 5 "$LIMIT" strace -c -f -o "$sf" taskset -c 1 "${cmd[@]}" >/dev/null 2>&1 \
            || { log "$t under strace failed"; continue; }
        total="$(awk '$NF=="total"{print $4}' "$sf")"
        top="$(awk -v n="$sn" 'NR>2 && $1 ~ /^[0-9.]+$/ && $NF!="total" { printf "%s %.3f\n", $NF, $4/n }' "$sf" \
            | sort -k2 -g -r | head -n 5 | awk '{printf "%s%s=%s", (NR>1?", ":""), $1, $2}')"
        SYS_LINES+=("$t: $(awk -v a="$total" -v b="$sn" 'BEGIN{printf "%.3f", a/b}') syscalls/req ($mode -c $c -m $m, $sn requests: $top)")
    done
fi

# Where vblast's CPU goes (perf record of one run; top symbols).
PERF_LINES=""
if [ "$PERF" = 1 ] && command -v perf >/dev/null 2>&1; then
    mode="${MODES%% *}" shape="${SHAPES%% *}"
    c="${shape%x*}" m="${shape#*x}"
    proto=(--http2-prior-knowledge); [ "$mode" = h2 ] && proto=(--http2 --ca-cert "$NGINX_CA")
    show "perf record -g -o $BENCH_TMP/perf.data taskset -c 1 $VBLAST -t 1 -c $c --streams $m -n $N ${proto[*]} ${URL[$mode]}"
    timeout -k 5 "$LIMIT" perf record -o "$BENCH_TMP/perf.data" taskset -c 1 "$VBLAST" -t 1 -c "$c" \
        --streams "$m" -n "$N" "${proto[@]}" --no-server-stats "${URL[$mode]}" >/dev/null 2>&1 || log "perf record failed"
    PERF_LINES="$(perf report -i "$BENCH_TMP/perf.data" --stdio --no-children 2>/dev/null \
        | grep -E '^ +[0-9]' | head -n 15)"
fi

echo
[ -z "$BUILD_NOTE" ] || echo "$BUILD_NOTE"
echo "=== summary: $(date -u '+%F %H:%M UTC'); clients pinned to core 1, nginx (1 worker) to core 0; -n $N; medians of $RUNS ==="
for l in "${SUMMARY[@]}"; do echo "h2: $l"; done
for l in "${SYS_LINES[@]+"${SYS_LINES[@]}"}"; do echo "syscalls: $l"; done
[ -z "$PERF_LINES" ] || { echo "perf (vblast, $mode -c $c -m $m):"; echo "$PERF_LINES"; }
echo "goal (issue 24): vblast/h2load <= 1.0 in CPU per request, vblast's user CPU below h2load's"
