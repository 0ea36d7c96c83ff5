#!/usr/bin/env bash
# Login churn against a raft node (issue 39 item 5): approle logins at a fixed rate for a set
# time against a one-node OpenBao raft cluster (tools/raft-cluster.sh), each login a new token
# written to BoltDB. The run samples the node every second with --server-pid, so its timeline
# holds the BoltDB files' sizes (vault.db, raft/raft.db), the freelist's free pages and the
# bytes the node wrote per second; the script prints them as a table, a row per STEP seconds.
#
#   tools/soak-login-churn.sh [SECONDS] [RATE] [STEP]     (defaults: 600 s, 200 logins/s, 60 s)
#
# Environment: VBLAST_BAO (the bao binary), OUT (a directory for the results file, the JSON
# report and the table; default a fresh /tmp/vblast-churn.*), DIR (the raft data directory's
# parent, empty or absent: a loop-mounted disk, say; default a fresh /tmp directory).
# The cluster is stopped and its directory removed at any exit (the run keeps its approle
# mount, --keep: revoking every login's token would take longer than the run itself).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

SECONDS_RUN=${1:-600}
RATE=${2:-200}
STEP=${3:-60}
for v in "$SECONDS_RUN" "$RATE" "$STEP"; do
    [[ "$v" =~ ^[1-9][0-9]*$ ]] || { echo "usage: $0 [SECONDS] [RATE] [STEP] (whole numbers, 1 or more)" >&2; exit 2; }
done
OUT=${OUT:-$(mktemp -d /tmp/vblast-churn.XXXXXX)}
mkdir -p "$OUT"
VBLAST=${VBLAST:-target/release/vblast}
[ -x "$VBLAST" ] || cargo build --release --quiet

CLUSTER=${DIR:-$(mktemp -d /tmp/vblast-churn-raft.XXXXXX)}
stop() { tools/raft-cluster.sh stop "$CLUSTER" >/dev/null 2>&1 || true; }
trap stop EXIT
tools/raft-cluster.sh 1 "$CLUSTER" >/dev/null
PID=$(head -1 "$CLUSTER/pids")

echo "login churn: $RATE approle logins/s for $SECONDS_RUN s against $(head -1 "$CLUSTER/addrs") (pid $PID)" >&2
VAULT_TOKEN=$(cat "$CLUSTER/root-token") "$VBLAST" --op approle-login \
    --address "$(head -1 "$CLUSTER/addrs")" -c 4 -R "$RATE" -z "${SECONDS_RUN}s" \
    --server-pid "$PID" --server-interval 1s --keep \
    --output "$OUT/churn.results.json" --format json >"$OUT/churn.json" || status=$?
# A schedule not kept on a busy machine (exit 1) still leaves its report: the table says it.
[ -s "$OUT/churn.json" ] || exit "${status:-1}"

python3 - "$OUT/churn.json" "$STEP" <<'EOF' | tee "$OUT/churn-table.md"
import json, sys
rep = json.load(open(sys.argv[1]))
step = float(sys.argv[2])
node = rep["server"]["nodes"][0]
mib = lambda b: "-" if b is None else f"{b / 1048576:.2f}"
print(f"logins answered {rep.get('requests', '-')}, {rep.get('rps', 0):.1f}/s; node {node['node']}")
print()
print("| second | vault.db MiB | raft.db MiB | free pages | writes MiB/s (this row's seconds) | raft commit ms |")
print("|---:|---:|---:|---:|---:|---:|")
rows, since = 0, []
last = node["intervals"][-1] if node["intervals"] else None
for i in node["intervals"]:
    since.append(i)
    if i["at_s"] < step * (rows + 1) and i is not last:
        continue
    if i is last and not since[:-1] and rows:
        break
    rows += 1
    r = i.get("raft") or {}
    w = [x["write_bytes_per_s"] for x in since if x.get("write_bytes_per_s") is not None]
    c = [x["raft"]["commit_ms"] for x in since if (x.get("raft") or {}).get("commit_ms") is not None]
    free = r.get("bolt_free_pages")
    print(f"| {i['at_s']:.0f} | {mib(r.get('bolt_fsm_bytes'))} | {mib(r.get('bolt_log_bytes'))} "
          f"| {'-' if free is None else int(free)} | {mib(sum(w) / len(w)) if w else '-'} "
          f"| {f'{sum(c) / len(c):.3f}' if c else '-'} |")
    since = []
for m in node.get("missing", []):
    print(f"\nnot sampled: {m}")
EOF
echo "results file, JSON report and table in $OUT (vblast's exit status ${status:-0})" >&2
exit "${status:-0}"
