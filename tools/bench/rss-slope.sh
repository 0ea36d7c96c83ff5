#!/usr/bin/env bash
# usage: tools/bench/rss-slope.sh [DURATION_S] [extra vblast flags...]
#        [env: RATE=100 C=32 BASE_BIN=an/other/vblast]
# How fast vblast's memory grows over a long run (issue 25: what a run keeps every second).
# An OpenBao dev server (its own, one per binary) takes the chaos soak's mix
# (`-R RATE -c C --op kv-read:40,kv-write:20,approle-login:20,transit-encrypt:20
# --secrets 100`) for DURATION_S (default 150) seconds; vblast's RSS (VmRSS) is read every
# second, and the script prints the least-squares slope in KiB/s from 20% to 95% of the
# run, with the RSS at both ends. With BASE_BIN, that binary runs the same beside this
# tree's, at the same time, and both are printed (two builds side by side). Never asserts.
source "$(dirname "$0")/lib.sh"

D="${1:-150}"
shift || true
EXTRA=("$@")
RATE="${RATE:-100}"
C="${C:-32}"
[ "$D" -ge 20 ] 2>/dev/null || die "DURATION_S must be at least 20, not '$D'"
need curl python3
build

# measure NAME BIN: starts a dev server and the run in the background, sampling RSS into
# $BENCH_TMP/NAME.rss ("seconds KiB" lines); sets the pid of the sampler in WATCHERS.
WATCHERS=()
measure() {
    local name="$1" bin="$2" vp=""
    start_bao
    show "VAULT_ADDR=$BAO_ADDR $bin -R $RATE -c $C -z ${D}s --op kv-read:40,kv-write:20,approle-login:20,transit-encrypt:20 --secrets 100 --allow-errors --format json ${EXTRA[*]+${EXTRA[*]}}"
    VAULT_ADDR="$BAO_ADDR" VAULT_TOKEN=root timeout -k 5 $((D + 120)) "$bin" -R "$RATE" -c "$C" \
        -z "${D}s" --op kv-read:40,kv-write:20,approle-login:20,transit-encrypt:20 \
        --secrets 100 --allow-errors --format json ${EXTRA[@]+"${EXTRA[@]}"} \
        >"$BENCH_TMP/$name.json" 2>"$BENCH_TMP/$name.err" &
    BENCH_PIDS+=("$!")
    # The RSS read is vblast's own, the child `timeout` runs.
    local tp=$! deadline=$((SECONDS + 10))
    until vp="$(pgrep -P "$tp" | head -n1)" && [ -n "$vp" ]; do
        [ "$SECONDS" -lt "$deadline" ] || die "vblast did not start: $(tail -n 5 "$BENCH_TMP/$name.err")"
        sleep 0.05
    done
    (
        t0=$(date +%s.%N)
        while kill -0 "$vp" 2>/dev/null; do
            r=$(awk '/^VmRSS/ {print $2}' "/proc/$vp/status" 2>/dev/null || true)
            [ -n "$r" ] && echo "$(python3 -c "print(round($(date +%s.%N) - $t0, 2))") $r"
            sleep 1
        done
    ) >"$BENCH_TMP/$name.rss" &
    WATCHERS+=("$!")
}

measure this "$VBLAST"
[ -z "${BASE_BIN:-}" ] || measure base "$BASE_BIN"
for w in "${WATCHERS[@]}"; do wait "$w" || true; done

slope() {
    python3 - "$BENCH_TMP/$1.rss" "$D" <<'PY'
import sys
rows = [tuple(map(float, l.split())) for l in open(sys.argv[1]) if len(l.split()) == 2]
D = float(sys.argv[2])
pts = [(t, kb) for t, kb in rows if 0.2 * D <= t <= 0.95 * D]
if len(pts) < 3:
    print("too few samples"); sys.exit()
n = len(pts); mt = sum(t for t, _ in pts) / n; mk = sum(k for _, k in pts) / n
s = sum((t - mt) * (k - mk) for t, k in pts) / sum((t - mt) ** 2 for t, _ in pts)
print(f"slope {s:.2f} KiB/s from {pts[0][0]:.0f} s to {pts[-1][0]:.0f} s; RSS {pts[0][1] / 1024:.1f} -> {pts[-1][1] / 1024:.1f} MiB")
PY
}
log ""
log "=== vblast RSS over a ${D} s run at -R $RATE -c $C, $(date -u '+%F %H:%M UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg) ==="
[ -z "$BUILD_NOTE" ] || log "$BUILD_NOTE"
log "this tree: $(slope this)"
[ -z "${BASE_BIN:-}" ] || log "BASE_BIN ($BASE_BIN): $(slope base)"
