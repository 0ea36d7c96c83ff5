#!/usr/bin/env bash
# The sizing story in one command: one OpenBao dev server, swept at two "instance sizes"
# (half a core and one core, set with a CPU cgroup quota on the server's process, the
# server pinned to core 0 and vblast to core 1), then the two sweeps compared: text on
# stdout and in $OUT/sizing.txt, the overlaid chart in $OUT/sizing.html.
#
# With CROSSCHECK=1, after each sweep the same server is also run at fixed rates (plain
# `vblast -R RATE`, one run per load the sweep stepped through) and the script checks
# that the sweep's first breaking coarse step is within one coarse step of the first
# coarse load that breaks the objective in the fixed runs (the answer then lies in the
# bracket below it); the finer comparison at the bisection's loads is printed, not judged
# (timing-dependent: meant for an otherwise quiet machine).
#
# Needs root (cgroups). Knobs: RATES (200..12000), STEPS (5), STEP (5s), WARMUP (1s),
# P99 (20ms), CONNS (64), OP (kv-read), OUT (target/sizing-demo), SIZES ("50000 100000":
# the quota per 100 ms period, in microseconds, of each size). The sweeps read the server's
# cgroup through --server-pid: each report gives its CPU as a share of the quota, and the
# verdict names "CPU (quota)" when the quota's throttling grew at the knee.
set -euo pipefail
cd "$(dirname "$0")/.."

RATES=${RATES:-200..12000}
STEPS=${STEPS:-5}
STEP=${STEP:-5s}
WARMUP=${WARMUP:-1s}
P99=${P99:-20ms}
CONNS=${CONNS:-64}
OP=${OP:-kv-read}
OUT=${OUT:-target/sizing-demo}
SIZES=${SIZES:-"50000 100000"}
BAO=${VBLAST_BAO:-$(tools/deps.sh | tail -n1)}

cargo build --release -q
VBLAST="${CARGO_TARGET_DIR:-target}/release/vblast"
mkdir -p "$OUT"

PORT=$((10000 + RANDOM % 20000))
LOG="$OUT/bao.log"
taskset -c 0 "$BAO" server -dev -dev-root-token-id=root \
    -dev-listen-address="127.0.0.1:$PORT" >"$LOG" 2>&1 &
BAO_PID=$!

# The CPU limit: cgroup v2 (cpu.max) when the unified hierarchy has the cpu controller,
# else cgroup v1 (cpu.cfs_quota_us).
CG=""
if grep -qw cpu /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
    CG=/sys/fs/cgroup/vblast-sizing-$$
    mkdir "$CG"
    limit() { echo "$1 100000" >"$CG/cpu.max"; }
elif [ -d /sys/fs/cgroup/cpu ]; then
    CG=/sys/fs/cgroup/cpu/vblast-sizing-$$
    mkdir "$CG"
    echo 100000 >"$CG/cpu.cfs_period_us"
    limit() { echo "$1" >"$CG/cpu.cfs_quota_us"; }
else
    echo "sizing-demo: no CPU cgroup controller (neither cgroup v2 cpu.max nor v1 cpu)" >&2
    kill "$BAO_PID"
    exit 1
fi

cleanup() {
    kill "$BAO_PID" 2>/dev/null || true
    wait "$BAO_PID" 2>/dev/null || true
    [ -n "$CG" ] && rmdir "$CG" 2>/dev/null || true
}
trap cleanup EXIT

export VAULT_ADDR="http://127.0.0.1:$PORT" VAULT_TOKEN=root
for _ in $(seq 1 100); do
    curl -fs "$VAULT_ADDR/v1/sys/health" >/dev/null 2>&1 && break
    sleep 0.1
done
# Every thread of the server (cgroup.procs moves the whole process).
echo "$BAO_PID" >"$CG/cgroup.procs"

files=()
crosscheck_failed=0
for quota in $SIZES; do
    limit "$quota"
    name="cpu-$((quota / 1000))pct"
    echo "== $name: the server limited to $((quota / 1000))% of one core" >&2
    taskset -c 1 "$VBLAST" sweep --op "$OP" --rate "$RATES" --steps "$STEPS" \
        --step-duration "$STEP" --step-warmup "$WARMUP" --slo "p99=$P99" -c "$CONNS" \
        --server-pid "$BAO_PID" \
        --output "$OUT/$name.json" --html "$OUT/$name.html" | tee "$OUT/$name.txt"
    files+=("$OUT/$name.json")
    if [ "${CROSSCHECK:-0}" = 1 ]; then
        echo "== $name: fixed-rate runs at the sweep's loads" >&2
        loads=$(python3 -c 'import json,sys; print(" ".join(str(l) for l in sorted({s["load"] for s in json.load(open(sys.argv[1]))["steps"]})))' "$OUT/$name.json")
        for rate in $loads; do
            taskset -c 1 "$VBLAST" -R "$rate" -c "$CONNS" -z "$STEP" --warmup "$WARMUP" \
                --op "$OP" --output "$OUT/$name-fixed-$rate.json" -q >/dev/null || true
        done
        python3 - "$OUT/$name.json" "$P99" "$OUT/$name-fixed" $loads <<'EOF' || crosscheck_failed=1
import json, sys
sweep = json.load(open(sys.argv[1]))
bound = sys.argv[2]
bound_ms = float(bound[:-2]) if bound.endswith("ms") else float(bound.rstrip("s")) * 1000
prefix, loads = sys.argv[3], [int(x) for x in sys.argv[4:]]
held = {}
for load in loads:
    r = json.load(open(f"{prefix}-{load}.json"))
    p99, rps = r["latency_ms"]["p99"], r["rps"]
    held[load] = p99 <= bound_ms and rps >= 0.98 * load
    print(f"  fixed -R {load}: achieved {rps:.1f}/s p99 {p99:.2f}ms {'pass' if held[load] else 'FAIL'}")
coarse = [s["load"] for s in sweep["steps"] if s["phase"] == "coarse"]
sweep_break = next((s["load"] for s in sweep["steps"] if s["phase"] == "coarse" and s["verdict"] != "pass"), None)
fixed_break = next((l for l in coarse if not held[l]), None)
fine = next((l for l in loads if not held[l]), None)
answer = sweep["answer"]
print(f"  sweep: highest sustained {answer['highest_sustained']}, first broken {answer['first_broken']} (coarse break at {sweep_break})")
print(f"  fixed runs: first break at {fine} over every load, at {fixed_break} over the coarse loads")
if sweep_break is None or fixed_break is None:
    print("  cross-check: no coarse break on one side; nothing to compare")
    sys.exit(0)
d = abs(coarse.index(sweep_break) - coarse.index(fixed_break))
print(f"  cross-check: the sweep's coarse break is {d} coarse step(s) from the fixed runs' ({'holds' if d <= 1 else 'DOES NOT hold'})")
sys.exit(0 if d <= 1 else 1)
EOF
    fi
done

"$VBLAST" compare "${files[@]}" --html "$OUT/sizing.html" | tee "$OUT/sizing.txt"
echo "sizing-demo: $OUT/sizing.txt and $OUT/sizing.html" >&2
if [ "$crosscheck_failed" = 1 ]; then
    echo "sizing-demo: the cross-check did not hold for every size (see above)" >&2
    exit 1
fi
