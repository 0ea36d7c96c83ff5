#!/usr/bin/env bash
# usage: tools/bench/server-stats-overhead.sh   [env: RUNS=5 N=20000 CONNS=4 INTERVAL=1s]
# Issue 23 item 8: what the server-side sampling (docs/server-stats.md) costs. Against one
# OpenBao dev server pinned to core 0, vblast pinned to core 1 runs N kv reads on CONNS
# connections, RUNS times each way, alternating: sampling on (the default, every INTERVAL)
# and off (--no-server-stats). Prints, as medians: vblast's CPU (user + sys) per request
# each way and their ratio on/off (goal: within 1%, ratio <= 1.01), and the server's CPU
# (utime + stime of its /proc/PID/stat, before and after each run) per request each way,
# and their ratio (the server's extra CPU from being sampled). It also prints what the
# sampler itself cost, measured directly: its CPU seconds as the run reports them
# (`server.sampling_cpu_s`: its thread's CPU clock, and its calls before and after the
# load) as a share of vblast's whole CPU in the same run; this share is free of the
# run-to-run noise that the on/off ratio carries. Never asserts.
source "$(dirname "$0")/lib.sh"

RUNS="${RUNS:-5}"
N="${N:-20000}"
CONNS="${CONNS:-4}"
INTERVAL="${INTERVAL:-1s}"

need curl jq taskset python3
build
start_bao
SERVER_PID="${BENCH_PIDS[-1]}"
taskset -a -pc 0 "$SERVER_PID" >/dev/null
TICK="$(getconf CLK_TCK)"
server_cpu() { awk -v t="$TICK" '{ printf "%.3f\n", ($14 + $15) / t }' "/proc/$SERVER_PID/stat"; }

# CMD... run, its user and system CPU written to FILE in microseconds' resolution
# (getrusage of the child; /usr/bin/time rounds to 10 ms).
RUSAGE='import os, subprocess, sys
p = subprocess.Popen(sys.argv[2:])
_, status, ru = os.wait4(p.pid, 0)
p.returncode = 0
open(sys.argv[1], "w").write("%.6f %.6f\n" % (ru.ru_utime, ru.ru_stime))
sys.exit(os.waitstatus_to_exitcode(status))'

# One run: prints "CLIENT_US_PER_REQ SERVER_US_PER_REQ SAMPLER_SHARE" (the sampler's CPU as
# a share of vblast's, 0 with sampling off).
one() { # on|off
    local out="$BENCH_TMP/run.json" tf="$BENCH_TMP/run.time" extra=(--server-interval "$INTERVAL") s0 s1
    [ "$1" = off ] && extra=(--no-server-stats)
    s0="$(server_cpu)"
    show "taskset -c 1 vblast -t 1 -c $CONNS -n $N --op kv-read ${extra[*]} --format json"
    VAULT_ADDR="$BAO_ADDR" VAULT_TOKEN=root timeout -k 5 600 python3 -c "$RUSAGE" "$tf" \
        taskset -c 1 "$VBLAST" -t 1 -c "$CONNS" -n "$N" --op kv-read "${extra[@]}" \
        --format json >"$out" 2>"$out.err" || die "vblast failed: $(cat "$out.err")"
    s1="$(server_cpu)"
    # Setup and cleanup are in both ways alike (the same kv mount and seeding).
    awk -v n="$(jq -r .requests "$out")" -v t="$(cat "$tf")" -v a="$s0" -v b="$s1" \
        -v own="$(jq -r '.server.sampling_cpu_s // 0' "$out")" 'BEGIN {
        split(t, c, " "); printf "%.3f %.3f %.5f\n", (c[1] + c[2]) * 1e6 / n, (b - a) * 1e6 / n, own / (c[1] + c[2]) }'
}

: >"$BENCH_TMP/on"; : >"$BENCH_TMP/off"
for i in $(seq "$RUNS"); do
    for way in on off; do
        r="$(one "$way")"
        read -r cu su sh <<<"$r"
        log "run $i $way: client $cu us/req, server $su us/req, sampler $(awk -v s="$sh" 'BEGIN { printf "%.2f", 100 * s }')% of vblast's CPU"
        echo "$r" >>"$BENCH_TMP/$way"
    done
done
c_on="$(cut -d' ' -f1 "$BENCH_TMP/on" | median)"; c_off="$(cut -d' ' -f1 "$BENCH_TMP/off" | median)"
s_on="$(cut -d' ' -f2 "$BENCH_TMP/on" | median)"; s_off="$(cut -d' ' -f2 "$BENCH_TMP/off" | median)"
echo "date: $(date -u '+%F %T') UTC, load average: $(cut -d' ' -f1-3 /proc/loadavg), RUNS=$RUNS N=$N CONNS=$CONNS INTERVAL=$INTERVAL"
[ -n "$BUILD_NOTE" ] && echo "$BUILD_NOTE"
echo "client CPU per request: sampling on $c_on us, off $c_off us, ratio on/off $(ratio "$c_on" "$c_off") (goal <= 1.01)"
echo "server CPU per request: sampling on $s_on us, off $s_off us, ratio on/off $(ratio "$s_on" "$s_off")"
share="$(cut -d' ' -f3 "$BENCH_TMP/on" | median)"
echo "the sampler's own CPU (measured in the runs with sampling on): $(awk -v s="$share" 'BEGIN { printf "%.2f", 100 * s }')% of vblast's CPU, median (goal: under 1%)"
