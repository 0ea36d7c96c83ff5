#!/usr/bin/env bash
# usage: tools/bench/connect.sh   [env: RUNS=3 CONNS=15000 REQUESTS=20000 URL_PATH=/v1/secret/data/foo LIMIT=240 STRACE=0 VBLAST_BASE=]
# What opening connections costs the client: vblast -t 1 -c 15000 -n 20000 against h2load --h1
# -c 15000 -n 20000 (one thread each, pinned to core 1) on the same OpenBao dev server (pinned
# to core 0), the same path and the same token header, alternating in one invocation. Most of
# either client's work here is opening 15,000 connections (each carries one or two requests).
# Prints each run's client CPU (user + sys, /usr/bin/time), wall time and successes, and the
# median ratio vblast/h2load of CPU (goal <= 1). STRACE=1 adds one run of each under
# `strace -c -f` and prints syscalls per connection opened. Figures are printed, never asserted.
# h2load closes its connections first and leaves up to -c TIME_WAIT sockets (a minute on their
# local ports); vblast resets its connections and leaves none. The order alternates, so every
# other vblast run (and the STRACE run) opens its connections among h2load's TIME_WAITs: each
# run's line says how many there were. VBLAST_BASE=/path/to/an/older/vblast adds that binary
# to every run ("base"), for a before/after in the same invocation.
source "$(dirname "$0")/lib.sh"

RUNS="${RUNS:-3}"
CONNS="${CONNS:-15000}"
REQUESTS="${REQUESTS:-20000}"
URL_PATH="${URL_PATH:-/v1/secret/data/foo}"
LIMIT="${LIMIT:-240}"
STRACE="${STRACE:-0}"

need h2load taskset curl jq /usr/bin/time
[ "$(ulimit -n)" -gt "$((CONNS + 64))" ] || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
[ "$(ulimit -n)" -gt "$((CONNS + 64))" ] || die "open-file limit $(ulimit -n) is below -c $CONNS (h2load needs one descriptor per connection)"
build
start_bao
taskset -a -pc 0 "${BENCH_PIDS[-1]}" >/dev/null
URL="$BAO_ADDR$URL_PATH"
if [ "$URL_PATH" = /v1/secret/data/foo ]; then
    show "curl -H 'X-Vault-Token: root' -X POST -d '{\"data\":{\"value\":\"bar\"}}' $URL"
    curl -sf --max-time 10 -H 'X-Vault-Token: root' -X POST -d '{"data":{"value":"bar"}}' "$URL" >/dev/null \
        || die "could not write secret/data/foo"
fi
curl -sf --max-time 10 -H 'X-Vault-Token: root' "$URL" >/dev/null || die "$URL does not answer 200"
log "ephemeral ports $(tr '\t' - </proc/sys/net/ipv4/ip_local_port_range); fd limit $(ulimit -n); TIME_WAIT sockets now: $(ss -Htan state time-wait | wc -l)"

V_ARGS=(-t 1 -c "$CONNS" -n "$REQUESTS" -H 'X-Vault-Token: root' --format json "$URL")
V_CMD=(taskset -c 1 "$VBLAST" "${V_ARGS[@]}")
H_CMD=(taskset -c 1 h2load --h1 -t 1 -c "$CONNS" -n "$REQUESTS" -H 'X-Vault-Token: root' "$URL")

# Each runner prints "CPU WALL OK CONNS" (CPU = user + sys seconds).
run_vblast() { # [binary]
    local out="$BENCH_TMP/v.json" tf="$BENCH_TMP/v.time" rc=0 cmd=("${V_CMD[@]}")
    [ -z "${1:-}" ] || cmd=(taskset -c 1 "$1" "${V_ARGS[@]}")
    show "/usr/bin/time ${cmd[*]}"
    timeout -k 5 "$LIMIT" /usr/bin/time -f '%U %S %e' -o "$tf" "${cmd[@]}" >"$out" 2>"$out.err" || rc=$?
    jq -e .requests "$out" >/dev/null 2>&1 || { log "vblast exit $rc, no report: $(tail -n 5 "$out.err")"; return 1; }
    [ "$(jq -r .failed "$out")" = 0 ] || log "vblast errors: $(jq -c '{errors,error_messages}' "$out")"
    awk -v ok="$(jq -r .ok "$out")" -v c="$(jq -r .connections_opened "$out")" \
        'END { printf "%.2f %.2f %d %d\n", $1+$2, $3, ok, c }' "$tf"
}

run_h2load() {
    local out="$BENCH_TMP/h.out" tf="$BENCH_TMP/h.time" rc=0
    show "/usr/bin/time ${H_CMD[*]}"
    timeout -k 5 "$LIMIT" /usr/bin/time -f '%U %S %e' -o "$tf" "${H_CMD[@]}" >"$out" 2>&1 || rc=$?
    grep -q '^requests:' "$out" || { log "h2load exit $rc: $(tail -n 5 "$out")"; return 1; }
    # "requests: N total, N started, N done, N succeeded, N failed, N errored, N timeout"
    # "status codes: N 2xx, ..."; "traffic: ..."; clients that connected are not printed, so
    # the connection count is -c (h2load opens each client's connection once).
    awk -v ok="$(awk '/^status codes:/{print $3}' "$out")" -v c="$CONNS" \
        'END { printf "%.2f %.2f %d %d\n", $1+$2, $3, ok, c }' "$tf"
    grep -q ' 0 failed, 0 errored, 0 timeout' "$out" || log "h2load: $(grep '^requests:' "$out")"
}

run_base() { run_vblast "$VBLAST_BASE"; }

V_CPU=""; H_CPU=""; B_CPU=""; V_WALL=""; H_WALL=""; B_WALL=""; RATIOS=""; B_RATIOS=""
for i in $(seq "$RUNS"); do
    order=(vblast h2load)
    [ $((i % 2)) -eq 0 ] && order=(h2load vblast)
    if [ -n "${VBLAST_BASE:-}" ]; then
        order=(vblast h2load base)
        [ $((i % 2)) -eq 0 ] && order=(base h2load vblast)
    fi
    declare -A CPU=()
    for t in "${order[@]}"; do
        # Let the previous run's sockets settle (the server closes 15,000 of them).
        sleep 2
        tw="$(ss -Htan state time-wait | wc -l)"
        r="$("run_$t")" || die "$t failed"
        read -r cpu wall ok conns <<<"$r"
        log "run $i: $t: cpu user+sys ${cpu}s, wall ${wall}s, ok $ok of $REQUESTS, connections $conns ($tw TIME_WAIT sockets before it)"
        CPU[$t]="$cpu"
        case "$t" in
            vblast) V_CPU+="$cpu"$'\n'; V_WALL+="$wall"$'\n' ;;
            h2load) H_CPU+="$cpu"$'\n'; H_WALL+="$wall"$'\n' ;;
            base) B_CPU+="$cpu"$'\n'; B_WALL+="$wall"$'\n' ;;
        esac
    done
    rr="$(ratio "${CPU[vblast]}" "${CPU[h2load]}")"
    log "run $i: cpu ratio vblast/h2load = $rr"
    RATIOS+="$rr"$'\n'
    if [ -n "${VBLAST_BASE:-}" ]; then
        br="$(ratio "${CPU[base]}" "${CPU[h2load]}")"
        log "run $i: cpu ratio base/h2load = $br"
        B_RATIOS+="$br"$'\n'
    fi
done

SYS_LINES=()
if [ "$STRACE" = 1 ]; then
    need strace
    sys_report() { # name strace_file connections
        local total; total="$(awk '$NF=="total"{print $4}' "$2")"
        local top; top="$(awk -v n="$3" 'NR>2 && $1 ~ /^[0-9.]+$/ && $NF!="total" {
                e = ($5 ~ /^[0-9]+$/) ? $5 : 0
                printf "%s %.2f %d\n", $NF, $4/n, e }' "$2" \
            | sort -k2 -g -r | head -n 12 \
            | awk '{printf "%s%s=%s%s", (NR>1?", ":""), $1, $2, ($3>0 ? " (" $3 " failed)" : "")}')"
        SYS_LINES+=("$(printf '%s: %s syscalls per connection over %s connections: %s' "$1" "$(ratio "$total" "$3")" "$3" "$top")")
    }
    sleep 2
    sf="$BENCH_TMP/strace.vblast"
    show "strace -c -f -o $sf ${V_CMD[*]}"
    timeout -k 5 "$LIMIT" strace -c -f -o "$sf" "${V_CMD[@]}" >"$BENCH_TMP/sv.json" 2>/dev/null \
        || log "vblast under strace failed"
    sys_report vblast "$sf" "$(jq -r .connections_opened "$BENCH_TMP/sv.json")"
    sleep 2
    sf="$BENCH_TMP/strace.h2load"
    show "strace -c -f -o $sf ${H_CMD[*]}"
    timeout -k 5 "$LIMIT" strace -c -f -o "$sf" "${H_CMD[@]}" >"$BENCH_TMP/sh.out" 2>&1 \
        || log "h2load under strace failed"
    sys_report h2load "$sf" "$CONNS"
fi

echo
[ -z "$BUILD_NOTE" ] || echo "$BUILD_NOTE"
echo "=== summary (OpenBao dev server on core 0, client on core 1, one thread; -c $CONNS -n $REQUESTS, GET $URL_PATH) ==="
echo "  vblast cpu per run: $(printf '%s' "$V_CPU" | tr '\n' ' ')s; wall: $(printf '%s' "$V_WALL" | tr '\n' ' ')s"
echo "  h2load cpu per run: $(printf '%s' "$H_CPU" | tr '\n' ' ')s; wall: $(printf '%s' "$H_WALL" | tr '\n' ' ')s"
echo "  cpu ratio vblast/h2load per run: $(printf '%s' "$RATIOS" | tr '\n' ' ')"
echo "connect: vblast cpu $(printf '%s' "$V_CPU" | median)s (wall $(printf '%s' "$V_WALL" | median)s)," \
    "h2load cpu $(printf '%s' "$H_CPU" | median)s (wall $(printf '%s' "$H_WALL" | median)s)," \
    "ratio $(printf '%s' "$RATIOS" | median) (median of $RUNS; goal <= 1)"
if [ -n "${VBLAST_BASE:-}" ]; then
    echo "  base ($VBLAST_BASE) cpu per run: $(printf '%s' "$B_CPU" | tr '\n' ' ')s; wall: $(printf '%s' "$B_WALL" | tr '\n' ' ')s"
    echo "base: cpu $(printf '%s' "$B_CPU" | median)s (wall $(printf '%s' "$B_WALL" | median)s), ratio base/h2load $(printf '%s' "$B_RATIOS" | median)"
fi
for l in "${SYS_LINES[@]+"${SYS_LINES[@]}"}"; do echo "syscalls: $l"; done
