#!/usr/bin/env bash
# usage: tools/bench/merge16.sh   [env: SHARDS=16 DURATION=10m RATE=1600 CONNS=64 RUNS=5 OUT_DIR=DIR MERGE_ONLY=DIR]
# Issue 13's merge goal: a 16-shard merge of 10-minute runs takes under a second and the
# merged file is under 5 MiB. Runs SHARDS shards of one `-R RATE -c CONNS -z DURATION`
# schedule concurrently against nginx (pinned to core 0, the shards to core 1, started
# together with --start-at), each writing its results file, then times RUNS merges
# (`vblast report shard-*.json --output merged.json`, wall and CPU from /usr/bin/time) and
# prints the sizes of the shard files and of the merged file. OUT_DIR keeps the shard files;
# MERGE_ONLY=DIR measures the merge of shard files made before (no load).
# Figures are printed, never asserted.
source "$(dirname "$0")/lib.sh"

SHARDS="${SHARDS:-16}"
DURATION="${DURATION:-10m}"
RATE="${RATE:-1600}"
CONNS="${CONNS:-64}"
RUNS="${RUNS:-5}"

need taskset curl jq /usr/bin/time
build

if [ -n "${MERGE_ONLY:-}" ]; then
    DIR="$MERGE_ONLY"
else
    DIR="${OUT_DIR:-$BENCH_TMP/shards}"
    mkdir -p "$DIR"
    rm -f "$DIR"/shard-*.json
    start_nginx 0
    secs="$(awk -v d="$DURATION" 'BEGIN { n=d+0; if (d ~ /m$/) n*=60; else if (d ~ /h$/) n*=3600; print int(n) }')"
    at="$(date -u -d '@'"$(( $(date +%s) + 10 ))" +%Y-%m-%dT%H:%M:%SZ)"
    run_id="merge${SHARDS}-$(date +%s)"
    pids=()
    for i in $(seq 0 $((SHARDS - 1))); do
        show "taskset -c 1 $VBLAST -t 1 -R $RATE -c $CONNS -z $DURATION --shard $i/$SHARDS --start-at $at --run-id $run_id -q --output $DIR/shard-$i.json $NGINX_URL"
        timeout -k 5 $((secs + 120)) taskset -c 1 "$VBLAST" -t 1 -R "$RATE" -c "$CONNS" -z "$DURATION" \
            --shard "$i/$SHARDS" --start-at "$at" --run-id "$run_id" -q --format json \
            --output "$DIR/shard-$i.json" "$NGINX_URL" >"$DIR/shard-$i.out" 2>"$DIR/shard-$i.err" &
        pids+=("$!")
    done
    failed=0
    for i in "${!pids[@]}"; do
        wait "${pids[$i]}" || { failed=1; log "shard $i failed: $(cat "$DIR/shard-$i.err")"; }
    done
    [ "$failed" = 0 ] || die "a shard failed"
fi

files=("$DIR"/shard-*.json)
[ "${#files[@]}" -gt 1 ] || die "no shard files in $DIR"
walls=""
for r in $(seq "$RUNS"); do
    tf="$BENCH_TMP/merge.time"
    show "/usr/bin/time $VBLAST report $DIR/shard-*.json --output $BENCH_TMP/merged.json"
    timeout -k 5 120 /usr/bin/time -f '%e %U %S %M' -o "$tf" "$VBLAST" report "${files[@]}" \
        --output "$BENCH_TMP/merged.json" >"$BENCH_TMP/report.txt" 2>"$BENCH_TMP/report.err" \
        || die "vblast report failed: $(cat "$BENCH_TMP/report.err")"
    read -r wall user sys rss <"$tf"
    log "merge $r: wall ${wall}s, cpu $(awk -v u="$user" -v s="$sys" 'BEGIN{print u+s}')s, peak RSS $((rss / 1024)) MiB"
    walls+="$wall"$'\n'
done
in_bytes="$(cat "${files[@]}" | wc -c)"
out_bytes="$(wc -c <"$BENCH_TMP/merged.json")"
requests="$(jq -r .requests "$BENCH_TMP/merged.json")"
seconds="$(jq -r '.stats.timeline | length' "$BENCH_TMP/merged.json")"

echo
[ -z "$BUILD_NOTE" ] || echo "$BUILD_NOTE"
echo "=== summary: merge of ${#files[@]} shard files ($DIR) ==="
grep -h '^Duration' "$BENCH_TMP/report.txt" || true
echo "  merged: $requests requests, $seconds timeline seconds"
echo "  shard files: $(awk -v b="$in_bytes" 'BEGIN{printf "%.2f", b/1048576}') MiB in all; merged file $(awk -v b="$out_bytes" 'BEGIN{printf "%.2f", b/1048576}') MiB (goal < 5 MiB)"
echo "  merge wall time per run: $(printf '%s' "$walls" | tr '\n' ' ')"
echo "merge16: median $(printf '%s' "$walls" | median) s (goal < 1 s)"
