#!/usr/bin/env bash
# usage: tools/bench/cpu-per-request.sh   [env: RUNS=5 DURATION=5s CONNS=64 PEERS="ab h2load" PEER_N=200000 STRACE=1 STRACE_DURATION=2s SCRAPE=0]
# Client CPU (user+sys) per request against a canned nginx kv response: vblast vs wrk
# (and optionally ab -k / h2load --h1), keep-alive, one client thread pinned to core 1,
# nginx pinned to core 0. Prints the median ratio vblast/wrk over RUNS alternating runs
# (goal: below 1, CPU per request under wrk's), and syscalls per request under strace -c -f (goal: vblast 2, wrk 4).
# SCRAPE=1 adds a third client, "scraped": vblast with --metrics-listen while curl fetches
# /metrics every second (curl's own CPU is not counted), and its ratio to wrk beside the
# plain one (issue 13: serving /metrics must leave the CPU per request unchanged).
# Figures are printed, never asserted.
source "$(dirname "$0")/lib.sh"

RUNS="${RUNS:-5}"
DURATION="${DURATION:-5s}"
CONNS="${CONNS:-64}"
PEERS="${PEERS-ab h2load}"
PEER_N="${PEER_N:-200000}"
STRACE="${STRACE:-1}"
STRACE_DURATION="${STRACE_DURATION:-2s}"
LIMIT=$(( ${DURATION%s} + 60 ))

need wrk taskset curl jq /usr/bin/time
build
start_nginx 0
URL="$NGINX_URL"

# Each runner prints "REQUESTS USER SYS" (client CPU seconds); the raw output is kept in $out.
timed() { # file cmd...
    local tf="$1"; shift
    show "$*"
    timeout -k 5 "$LIMIT" /usr/bin/time -f '%U %S' -o "$tf" "$@"
}

run_vblast() {
    local out="$BENCH_TMP/vblast.out" tf="$BENCH_TMP/vblast.time"
    timed "$tf" taskset -c 1 "$VBLAST" -t 1 -c "$CONNS" -z "$DURATION" --format json "$URL" >"$out" 2>"$out.err" \
        || { log "vblast failed: $(cat "$out.err")"; cat "$out" >&2; return 1; }
    local failed; failed="$(jq -r .failed "$out")"
    [ "$failed" = 0 ] || log "warning: vblast reports $failed failed requests: $(jq -c .errors "$out")"
    echo "$(jq -r .requests "$out") $(cat "$tf")"
}

run_scraped() {
    local out="$BENCH_TMP/scraped.out" tf="$BENCH_TMP/scraped.time" mport scraper scrapes="$BENCH_TMP/scrapes"
    mport="$(free_port)"
    : >"$scrapes"
    # Scrapes every second while the run lasts (bounded by the run's length and a limit).
    ( for _ in $(seq "$LIMIT"); do
          sleep 1
          curl -s --max-time 1 "http://127.0.0.1:$mport/metrics" 2>/dev/null | grep -c '^vblast_' >>"$scrapes" || true
      done ) &
    scraper=$!
    timed "$tf" taskset -c 1 "$VBLAST" -t 1 -c "$CONNS" -z "$DURATION" --format json \
        --metrics-listen "127.0.0.1:$mport" "$URL" >"$out" 2>"$out.err" \
        || { kill "$scraper" 2>/dev/null; log "vblast (scraped) failed: $(cat "$out.err")"; return 1; }
    kill "$scraper" 2>/dev/null || true
    wait "$scraper" 2>/dev/null || true
    local n; n="$(awk '$1>0' "$scrapes" | wc -l)"
    log "scraped: $n scrapes answered during the run"
    echo "$(jq -r .requests "$out") $(cat "$tf")"
}

run_wrk() {
    local out="$BENCH_TMP/wrk.out" tf="$BENCH_TMP/wrk.time"
    timed "$tf" taskset -c 1 wrk -t1 -c"$CONNS" -d"$DURATION" "$URL" >"$out" 2>&1 \
        || { log "wrk failed: $(cat "$out")"; return 1; }
    grep -q 'Socket errors\|Non-2xx' "$out" && log "warning: wrk: $(grep 'Socket errors\|Non-2xx' "$out")"
    echo "$(awk '/ requests in /{print $1}' "$out") $(cat "$tf")"
}

run_ab() {
    local out="$BENCH_TMP/ab.out" tf="$BENCH_TMP/ab.time"
    timed "$tf" taskset -c 1 ab -q -k -c "$CONNS" -n "$PEER_N" "$URL" >"$out" 2>&1 \
        || { log "ab failed: $(tail -n 5 "$out")"; return 1; }
    local failed; failed="$(awk '/^Failed requests:/{print $3}' "$out")"
    [ "$failed" = 0 ] || log "warning: ab failed requests: $failed"
    echo "$(awk '/^Complete requests:/{print $3}' "$out") $(cat "$tf")"
}

run_h2load() {
    local out="$BENCH_TMP/h2load.out" tf="$BENCH_TMP/h2load.time"
    timed "$tf" taskset -c 1 h2load --h1 -t 1 -c "$CONNS" -n "$PEER_N" "$URL" >"$out" 2>&1 \
        || { log "h2load failed: $(tail -n 5 "$out")"; return 1; }
    # "requests: N total, N started, N done, N succeeded, N failed, N errored, N timeout"
    echo "$(awk '/^requests:/{print $8}' "$out") $(cat "$tf")"
}

us_per_req() { # "REQ USER SYS" -> us per request
    awk '{ if ($1+0==0) print "nan"; else printf "%.3f\n", ($2+$3)*1e6/$1 }' <<<"$1"
}

TOOLS=(vblast wrk)
[ "${SCRAPE:-0}" = 1 ] && TOOLS=(vblast scraped wrk)
for p in $PEERS; do
    case "$p" in ab) need ab; TOOLS+=(ab) ;; h2load) need h2load; TOOLS+=(h2load) ;; *) die "unknown peer $p" ;; esac
done
declare -A ALL
for t in "${TOOLS[@]}"; do ALL[$t]=""; done
RATIOS=""
SRATIOS=""

for i in $(seq "$RUNS"); do
    # Alternate the order so neither tool always runs on a warmer (or noisier) machine.
    order=("${TOOLS[@]}")
    if [ $((i % 2)) -eq 0 ]; then
        order=(); for ((k=${#TOOLS[@]}-1; k>=0; k--)); do order+=("${TOOLS[$k]}"); done
    fi
    declare -A US=()
    for t in "${order[@]}"; do
        r="$("run_$t")"
        US[$t]="$(us_per_req "$r")"
        log "run $i: $t: requests=$(cut -d' ' -f1 <<<"$r") cpu_user+sys=$(awk '{print $2+$3}' <<<"$r")s -> ${US[$t]} us/req"
        ALL[$t]+="${US[$t]}"$'\n'
    done
    rr="$(ratio "${US[vblast]}" "${US[wrk]}")"
    log "run $i: ratio vblast/wrk = $rr"
    RATIOS+="$rr"$'\n'
    if [ -n "${US[scraped]:-}" ]; then
        rs="$(ratio "${US[scraped]}" "${US[wrk]}")"
        log "run $i: ratio scraped/wrk = $rs"
        SRATIOS+="$rs"$'\n'
    fi
done

# Syscalls per request: a shorter run of each under strace -c -f (strace slows both
# down a lot, so only the counts mean anything here).
SYS_LINES=()
if [ "$STRACE" = 1 ] && command -v strace >/dev/null 2>&1; then
    sys_report() { # name strace_file requests
        local total; total="$(awk '$NF=="total"{print $4}' "$2")"
        local top; top="$(awk -v n="$3" 'NR>2 && $1 ~ /^[0-9.]+$/ && $NF!="total" {
                printf "%s %.2f\n", $NF, $4/n }' "$2" \
            | sort -k2 -g -r | head -n 6 | awk '{printf "%s%s=%s", (NR>1?", ":""), $1, $2}')"
        SYS_LINES+=("$(printf '%s: %s syscalls/req over %s requests (%s)' "$1" "$(ratio "$total" "$3")" "$3" "$top")")
    }
    sf="$BENCH_TMP/strace.vblast"
    show "strace -c -f -o $sf taskset -c 1 $VBLAST -t 1 -c $CONNS -z $STRACE_DURATION --format json $URL"
    timeout -k 5 60 strace -c -f -o "$sf" taskset -c 1 "$VBLAST" -t 1 -c "$CONNS" -z "$STRACE_DURATION" \
        --format json "$URL" >"$BENCH_TMP/sv.out" 2>/dev/null || log "vblast under strace failed"
    sys_report vblast "$sf" "$(jq -r .requests "$BENCH_TMP/sv.out")"
    sf="$BENCH_TMP/strace.wrk"
    show "strace -c -f -o $sf taskset -c 1 wrk -t1 -c$CONNS -d$STRACE_DURATION $URL"
    timeout -k 5 60 strace -c -f -o "$sf" taskset -c 1 wrk -t1 -c"$CONNS" -d"$STRACE_DURATION" "$URL" \
        >"$BENCH_TMP/sw.out" 2>&1 || log "wrk under strace failed"
    sys_report wrk "$sf" "$(awk '/ requests in /{print $1}' "$BENCH_TMP/sw.out")"
fi

echo
[ -z "$BUILD_NOTE" ] || echo "$BUILD_NOTE"
echo "=== summary (client pinned to core 1, nginx to core 0; $CONNS keep-alive connections, 1 thread) ==="
line="cpu-per-request:"
for t in "${TOOLS[@]}"; do
    m="$(printf '%s' "${ALL[$t]}" | median)"
    line+=" $t $(printf '%.2f' "$m") us/req,"
    echo "  $t us/req per run: $(printf '%s' "${ALL[$t]}" | tr '\n' ' ')"
done
echo "  ratio vblast/wrk per run: $(printf '%s' "$RATIOS" | tr '\n' ' ')"
echo "$line ratio $(printf '%s' "$RATIOS" | median) (median of $RUNS; goal < 1)"
if [ -n "$SRATIOS" ]; then
    echo "  ratio scraped/wrk per run: $(printf '%s' "$SRATIOS" | tr '\n' ' ')"
    echo "scrape: ratio scraped/wrk $(printf '%s' "$SRATIOS" | median) against vblast/wrk $(printf '%s' "$RATIOS" | median) (median of $RUNS; goal: unchanged)"
fi
for l in "${SYS_LINES[@]+"${SYS_LINES[@]}"}"; do echo "syscalls: $l"; done
[ "${#SYS_LINES[@]}" -eq 0 ] || echo "syscalls goal: vblast 2/req (write + read) vs wrk 4/req"
