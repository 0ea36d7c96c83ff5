#!/usr/bin/env bash
# Chaos soak (issue 25 item 6): a mixed run (kv-read, kv-write, approle-login,
# transit-encrypt) at a fixed rate against a 3-node OpenBao HA cluster on PostgreSQL, every
# process in network namespaces of its own, with faults on a schedule scaled to the run:
#   10%  the active node killed (SIGKILL), restarted 2 s later (and unsealed: a standby);
#   35%  a standby stopped (SIGSTOP) for D/60 s (3..10 s), then SIGCONT;
#   50%  the active node's link: tc netem delay 100ms + 1% loss for D/20 s (30 s at 10 min).
#        A kernel without sch_netem (this machine's has none) gets 1% loss from iptables'
#        statistic match and a 1 Mbit/s tbf queue instead, and the report says so;
#   65%  PostgreSQL stopped (SIGSTOP of its postmaster and every backend) for 3 s;
#   80%  the connections to the active node reset (`ss -K`, the kernel's sock_destroy;
#        iptables REJECT --reject-with tcp-reset for 1 s where ss -K kills nothing).
# It checks, prints, and exits 1 when one fails:
#   - requests = ok + failed in total, per operation, per node and per second (the report's
#     ops, nodes and timeline add up to its totals);
#   - each unavailability window in the report starts within WINDOW_TOL s (default 1) of an
#     injected fault (a fault's own span plus the request timeout, for faults that stall
#     rather than refuse; for the lossy link, also the largest TCP retransmission timeout
#     the kernel held on that node's connections as the fault ended (`ss -ti` rto, both
#     sides): a segment lost just before the end is sent again only when its backed-off
#     timer fires, and a request waiting behind it can time out that much later), and the
#     SIGKILL opens one;
#   - vblast's RSS flat: growth under RSS_PCT % (default 5) from 20% to 100% of the load
#     (from the first sample at or after 20% outside any unavailability window);
#   - every fault survived without a hang: vblast ends by its deadline, no stretch of the
#     timeline longer than the request timeout + 1 s without one completed request, and
#     the cluster has one active node and two standbys at the end;
#   - nothing left on the server: `vblast cleanup --orphans` lists nothing;
#   - the audit log (a file audit device, `--audit-path`, enabled by vblast on the cluster:
#     the active node writes it, whichever node that is) per operation between the
#     client's successful requests and those it sent: every 2xx answer was logged (a
#     server that cannot audit does not answer), and the log also holds the active node's
#     error answers (PostgreSQL stopped) and answers a fault lost on the way (a reset, a
#     killed node); a standby's or a sealed node's refusal never reaches it. The two are
#     equal only without faults (docs/server-stats.md: exact agreement on one node).
#
#   - the schedule's requests (RATE x DURATION_S) = those sent + those not sent (the
#     report's not_sent: still waiting for a connection when the run ended);
#
#   tools/chaos.sh [DURATION_S] [extra vblast flags...]   (default 600, at least 20; the
#   suite's smoke run uses 20: the SIGKILL's failover, PostgreSQL's 15 s HA lock, takes
#   most of it, and the other faults fall inside or just after it)
#   env RATE (default 100 requests/s), C (connections, default 32), TIMEOUT (default 5s),
#       WINDOW_TOL, RSS_PCT, KEEP=1 (keep the directory), VBLAST (a built binary).
# Needs root (ip netns, tc, iptables), PostgreSQL (tools/deps.sh) and the bao binary
# ($VBLAST_BAO or tools/deps.sh). Everything it starts is stopped by pid on exit; its
# namespaces and temporary directory are removed. Load goes only into its own namespaces.
set -euo pipefail
cd "$(dirname "$0")/.."
D=${1:-600}
shift || true
EXTRA=("$@")
RATE=${RATE:-100}
C=${C:-32}
TIMEOUT=${TIMEOUT:-5}
WINDOW_TOL=${WINDOW_TOL:-1}
RSS_PCT=${RSS_PCT:-5}
[ "$D" -ge 20 ] 2>/dev/null || { echo "chaos: DURATION_S must be at least 20, not '$D'" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "chaos: needs root (network namespaces, tc, iptables)" >&2; exit 2; }
for t in ip tc iptables ss python3 curl jq setpriv; do
    command -v "$t" >/dev/null || { echo "chaos: $t not found" >&2; exit 2; }
done
BAO=${VBLAST_BAO:-$(tools/deps.sh | tail -n1)}
PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort | tail -n1)
[ -x "$PGBIN/postgres" ] || { echo "chaos: PostgreSQL not found (tools/deps.sh installs it)" >&2; exit 2; }
if [ -z "${VBLAST:-}" ]; then
    cargo build --release -q
    VBLAST=$PWD/${CARGO_TARGET_DIR:-target}/release/vblast
fi

DIR=$(mktemp -d /tmp/vblast-chaos.XXXXXX)
chmod 755 "$DIR"
TAG=vc$$
HUB=$TAG-h
NODES=3
declare -A PID=()    # node index or "pg" -> pid
VBPID=""
cleanup() {
    set +e
    for k in "${!PID[@]}"; do kill -CONT "${PID[$k]}" 2>/dev/null; done
    [ -n "$VBPID" ] && kill -TERM "$VBPID" 2>/dev/null
    for k in "${!PID[@]}"; do kill -KILL "${PID[$k]}" 2>/dev/null; done
    [ -n "$VBPID" ] && { sleep 1; kill -KILL "$VBPID" 2>/dev/null; }
    wait 2>/dev/null
    for i in $(seq 0 $((NODES - 1))); do ip netns del "$TAG-n$i" 2>/dev/null; done
    ip netns del "$HUB" 2>/dev/null
    if [ "${KEEP:-0}" = 1 ]; then echo "chaos: files kept in $DIR" >&2; else rm -rf "$DIR"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
say() { echo "chaos: $*" >&2; }
now() { date +%s.%N; }
in_hub() { ip netns exec "$HUB" "$@"; }

# --- network: a hub namespace (PostgreSQL and vblast) and one per node, each linked to the
# hub by a veth pair of its own (10.77.I.1 hub side, 10.77.I.2 node side); the hub routes
# between the nodes (their cluster port) and PostgreSQL listens on 10.77.0.1.
ip netns add "$HUB"
ip -n "$HUB" link set lo up
ip netns exec "$HUB" sysctl -qw net.ipv4.ip_forward=1
ADDRS=()
for i in $(seq 0 $((NODES - 1))); do
    ns=$TAG-n$i
    ip netns add "$ns"
    ip -n "$ns" link set lo up
    ip -n "$HUB" link add "h$i" type veth peer name "n$i" netns "$ns"
    ip -n "$HUB" addr add "10.77.$i.1/24" dev "h$i"
    ip -n "$HUB" link set "h$i" up
    ip -n "$ns" addr add "10.77.$i.2/24" dev "n$i"
    ip -n "$ns" link set "n$i" up
    ip -n "$ns" route add default via "10.77.$i.1"
    ADDRS+=("http://10.77.$i.2:8200")
done

# --- PostgreSQL in the hub, as the postgres account.
chown postgres: "$DIR"
AS_PG=(setpriv --reuid=postgres --regid=postgres --clear-groups)
"${AS_PG[@]}" "$PGBIN/initdb" -A trust -U postgres -D "$DIR/pg" >/dev/null
echo "host all all 10.77.0.0/16 trust" >>"$DIR/pg/pg_hba.conf"
ip netns exec "$HUB" "${AS_PG[@]}" "$PGBIN/postgres" -D "$DIR/pg" -p 5432 -k "$DIR/pg" \
    -c listen_addresses=10.77.0.1 -c fsync=off -c max_connections=300 >"$DIR/pg.log" 2>&1 &
PID[pg]=$!
for _ in $(seq 100); do in_hub "$PGBIN/pg_isready" -q -h 10.77.0.1 -p 5432 && break; sleep 0.1; done
in_hub "$PGBIN/pg_isready" -q -h 10.77.0.1 -p 5432 || { say "PostgreSQL did not start"; cat "$DIR/pg.log" >&2; exit 1; }

# --- the nodes, each in its namespace (started together, then each waited for).
launch_node() {
    local i=$1
    cat >"$DIR/n$i.hcl" <<HCL
storage "postgresql" {
  connection_url = "postgres://postgres@10.77.0.1:5432/postgres?sslmode=disable"
  ha_enabled = "true"
}
listener "tcp" {
  address = "10.77.$i.2:8200"
  cluster_address = "10.77.$i.2:8201"
  tls_disable = true
}
api_addr = "http://10.77.$i.2:8200"
cluster_addr = "https://10.77.$i.2:8201"
disable_mlock = true
unsafe_allow_api_audit_creation = true
HCL
    HOME=$DIR ip netns exec "$TAG-n$i" "$BAO" server -config "$DIR/n$i.hcl" >>"$DIR/n$i.log" 2>&1 &
    PID[$i]=$!
}
wait_node() {
    local i=$1
    for _ in $(seq 300); do in_hub curl -s -m 1 -o /dev/null "${ADDRS[$i]}/v1/sys/health" && return 0; sleep 0.1; done
    say "node $i did not listen"; cat "$DIR/n$i.log" >&2; return 1
}
start_node() { launch_node "$1" && wait_node "$1"; }
health() { in_hub curl -s -m 2 -o /dev/null -w '%{http_code}' "${ADDRS[$1]}/v1/sys/health" || true; }
active() { for i in "${!ADDRS[@]}"; do [ "$(health "$i")" = 200 ] && { echo "$i"; return; }; done; echo -1; }
bao() { HOME=$DIR VAULT_ADDR=${ADDRS[$1]} in_hub timeout 30 "$BAO" "${@:2}"; }
# Node 0 first: nodes started together race to create the storage's tables in PostgreSQL
# ("type openbao_kv_store already exists"), and the loser exits.
start_node 0
for i in $(seq 1 $((NODES - 1))); do launch_node "$i"; done
for i in $(seq 1 $((NODES - 1))); do wait_node "$i"; done
bao 0 operator init -key-shares=1 -key-threshold=1 -format=json >"$DIR/init.json"
KEY=$(jq -r '.unseal_keys_b64[0]' "$DIR/init.json")
export VAULT_TOKEN; VAULT_TOKEN=$(jq -r .root_token "$DIR/init.json")
for i in $(seq 0 $((NODES - 1))); do bao "$i" operator unseal "$KEY" >/dev/null; done
for _ in $(seq 300); do [ "$(active)" -ge 0 ] && break; sleep 0.1; done
A=$(active)
[ "$A" -ge 0 ] || { say "no active node"; exit 1; }
say "$NODES nodes in namespaces $TAG-n0..$((NODES - 1)), active node $A (${ADDRS[$A]}), PostgreSQL 10.77.0.1:5432"

# --- the run.
export VBLAST_STATE_DIR=$DIR/state
RUNID=chaos-$$
OPS=kv-read:40,kv-write:20,approle-login:20,transit-encrypt:20
VBARGS=(-R "$RATE" -c "$C" -z "${D}s" --op "$OPS" --secrets 100 --timeout "${TIMEOUT}s"
    --allow-errors --progress --run-id "$RUNID" --format json --output "$DIR/results.json"
    --audit-path "$DIR/audit.log"
    ${EXTRA[@]+"${EXTRA[@]}"})
say "vblast ${VBARGS[*]} (VAULT_ADDR: the 3 nodes)"
VAULT_ADDR=$(IFS=,; echo "${ADDRS[*]}") ip netns exec "$HUB" "$VBLAST" "${VBARGS[@]}" \
    >"$DIR/report.json" 2>"$DIR/vblast.err" &
VBPID=$!
: >"$DIR/rss"
( while kill -0 "$VBPID" 2>/dev/null; do
      r=$(awk '/^VmRSS/ {print $2}' "/proc/$VBPID/status" 2>/dev/null || true)
      [ -n "$r" ] && echo "$(now) $r" >>"$DIR/rss"
      sleep 1
  done ) &
RSSPID=$!
for _ in $(seq 1800); do
    # the load's own progress line ("progress: 1s ..."), not the seeding's
    grep -qE '^progress: [0-9]+s ' "$DIR/vblast.err" 2>/dev/null && break
    kill -0 "$VBPID" 2>/dev/null || break
    sleep 0.1
done
kill -0 "$VBPID" 2>/dev/null || { say "vblast ended before its load:"; cat "$DIR/vblast.err" >&2; exit 1; }
# The first progress line comes one second into the load.
T0=$(python3 -c "print($(now) - 1.0)")
at() { local t; t=$(python3 -c "print(max(0.0, $T0 + $D * $1 - $(now)))"); sleep "$t"; }
: >"$DIR/faults"
# fault NAME FIRST_S LAST_S STALLS(0|1): wall-clock times, made relative to the results
# file's started_at afterwards.
fault() { echo "$1 $2 $3 $4 ${5:-0}" >>"$DIR/faults"; }
# The largest TCP retransmission timeout, seconds, of the connections between the hub and
# node $1, read on both sides (`ss -ti`'s rto, milliseconds).
max_rto() {
    { in_hub ss -tin dst "10.77.$1.2"; ip netns exec "$TAG-n$1" ss -tin; } 2>/dev/null |
        grep -o 'rto:[0-9.]*' | cut -d: -f2 |
        awk 'BEGIN { m = 0 } $1 > m { m = $1 } END { printf "%.3f\n", m / 1000 }'
}
sig_pg() { # SIGNAL: the postmaster and every backend it has started
    local p; for p in ${PID[pg]} $(pgrep -P "${PID[pg]}" || true); do kill "-$1" "$p" 2>/dev/null || true; done
}

at 0.10
A=$(active)
if [ "$A" -ge 0 ]; then
    t1=$(now); kill -KILL "${PID[$A]}"; wait "${PID[$A]}" 2>/dev/null || true
    say "SIGKILL active node $A at +$(python3 -c "print(round($t1 - $T0, 2))") s"
    fault "kill-active-node-$A" "$t1" "$t1" 0
    sleep 2
    start_node "$A" && bao "$A" operator unseal "$KEY" >/dev/null && say "node $A restarted and unsealed"
else
    say "no active node to kill at 10%"; echo "missing kill" >>"$DIR/faults.missing"
fi

at 0.35
S=-1; for i in "${!ADDRS[@]}"; do [ "$(health "$i")" = 429 ] && { S=$i; break; }; done
STOP=$(python3 -c "print(min(10, max(3, $D // 60)))")
if [ "$S" -ge 0 ]; then
    t1=$(now); kill -STOP "${PID[$S]}"; sleep "$STOP"; kill -CONT "${PID[$S]}"; t2=$(now)
    say "SIGSTOP standby node $S for ${STOP} s"
    fault "stop-standby-$S" "$t1" "$t2" 1
else
    say "no standby to stop at 35%"; echo "missing standby-stop" >>"$DIR/faults.missing"
fi

at 0.50
A=$(active); [ "$A" -ge 0 ] || A=0
NET=$(python3 -c "print(max(3, $D // 20))")
ns=$TAG-n$A
if ip -n "$ns" 2>/dev/null tc qdisc add dev "n$A" root netem delay 100ms loss 1% 2>/dev/null; then
    ip -n "$HUB" tc qdisc add dev "h$A" root netem delay 100ms loss 1% 2>/dev/null || true
    how="tc netem delay 100ms loss 1%"
else
    how="no sch_netem in this kernel: iptables statistic 1% loss + tbf 1mbit queue"
    for pair in "$ns n$A" "$HUB h$A"; do
        set -- $pair
        ip netns exec "$1" iptables -I OUTPUT -o "$2" -m statistic --mode random --probability 0.01 -j DROP
        ip netns exec "$1" iptables -I FORWARD -o "$2" -m statistic --mode random --probability 0.01 -j DROP 2>/dev/null || true
        ip netns exec "$1" tc qdisc add dev "$2" root tbf rate 1mbit burst 16kbit latency 100ms
    done
fi
t1=$(now); sleep "$NET"
RTO=$(max_rto "$A")
for pair in "$ns n$A" "$HUB h$A"; do
    set -- $pair
    ip netns exec "$1" tc qdisc del dev "$2" root 2>/dev/null || true
    ip netns exec "$1" iptables -F OUTPUT 2>/dev/null || true
    ip netns exec "$1" iptables -F FORWARD 2>/dev/null || true
done
t2=$(now)
say "node $A's link: $how, ${NET} s (largest TCP retransmission timeout as it ended: ${RTO} s)"
fault "link-node-$A" "$t1" "$t2" 1 "$RTO"

at 0.65
t1=$(now); sig_pg STOP; sleep 3; sig_pg CONT; t2=$(now)
say "PostgreSQL stopped 3 s"
fault postgresql-stopped "$t1" "$t2" 1

at 0.80
A=$(active); [ "$A" -ge 0 ] || A=0
t1=$(now)
killed=$(in_hub ss -K -t dst "10.77.$A.2" dport = :8200 2>/dev/null | grep -c ESTAB || true)
if [ "${killed:-0}" -gt 0 ]; then
    how="ss -K: $killed connections"
else
    ip netns exec "$TAG-n$A" iptables -I INPUT -p tcp --dport 8200 -j REJECT --reject-with tcp-reset
    sleep 1
    ip netns exec "$TAG-n$A" iptables -F INPUT
    how="iptables REJECT tcp-reset 1 s"
fi
t2=$(now)
say "connections to node $A reset ($how)"
fault "reset-node-$A" "$t1" "$t2" 0

# --- the end: vblast must finish by its deadline (load end + timeout + cleanup grace).
DEADLINE=$(python3 -c "print($T0 + $D + $TIMEOUT + 120)")
while kill -0 "$VBPID" 2>/dev/null; do
    if python3 -c "import sys; sys.exit(0 if $(now) > $DEADLINE else 1)"; then
        say "HANG: vblast still running $((TIMEOUT + 120)) s after its load's end"
        echo hang >>"$DIR/faults.missing"
        kill -TERM "$VBPID"; sleep 5; kill -KILL "$VBPID" 2>/dev/null || true
        break
    fi
    sleep 1
done
set +e
wait "$VBPID"; VBRC=$?
set -e
VBPID=""
kill "$RSSPID" 2>/dev/null || true; wait "$RSSPID" 2>/dev/null || true
grep -v '^progress:' "$DIR/vblast.err" | sed 's/^/  /' >&2 || true
for _ in $(seq 300); do
    st=""; for i in "${!ADDRS[@]}"; do st="$st $(health "$i")"; done
    [ "$(echo "$st" | tr ' ' '\n' | grep -c '^200$')" = 1 ] &&
        [ "$(echo "$st" | tr ' ' '\n' | grep -c '^429$')" = $((NODES - 1)) ] && break
    sleep 0.1
done
say "cluster at the end (sys/health):$st"
A=$(active); [ "$A" -ge 0 ] || A=0
VAULT_ADDR=${ADDRS[$A]} in_hub timeout 120 "$VBLAST" cleanup --orphans \
    >"$DIR/orphans.out" 2>"$DIR/orphans.err" || echo "orphans-failed" >>"$DIR/faults.missing"

python3 - "$DIR" "$D" "$TIMEOUT" "$WINDOW_TOL" "$RSS_PCT" "$VBRC" "$st" "$NODES" <<'PY'
import json, os, sys
from datetime import datetime, timezone
d, D, timeout, tol, rss_pct, vbrc, st, nodes = sys.argv[1:]
D, timeout, tol, rss_pct, nodes = float(D), float(timeout), float(tol), float(rss_pct), int(nodes)
fails = []
def check(ok, what):
    print(("  ok    " if ok else "  FAIL  ") + what)
    if not ok:
        fails.append(what)
missing = open(f"{d}/faults.missing").read().split() if os.path.exists(f"{d}/faults.missing") else []
try:
    res = json.load(open(f"{d}/results.json"))
    rep = json.load(open(f"{d}/report.json"))
except Exception as e:
    print(f"chaos: no report ({e}); vblast exit {vbrc}")
    sys.exit(1)
start = datetime.strptime(res["started_at"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc).timestamp()
faults = []
for line in open(f"{d}/faults"):
    name, a, b, stalls, rto = line.split()
    faults.append((name, float(a) - start, float(b) - start, stalls == "1", float(rto)))
n, ok, failed = rep["requests"], rep["ok"], rep["failed"]
print(f"vblast exit {vbrc}: {n} requests, {ok} ok, {failed} failed over {rep['duration_s']:.1f} s")
rate = rep["run"]["target_rate"] or 0
scheduled = round(rate * D)
not_sent = rep["not_sent"]
print(f"scheduled {rate:g}/s x {D:g} s = {scheduled}: {n} sent (answered or failed), {not_sent} not sent"
      f" (the run ended while they waited for a connection); {rep['late']} sent late")
print("per operation:")
for o in rep["ops"]:
    print(f"  {o['name']:<16} {o['requests']:>8} = {o['ok']:>8} ok + {o['requests'] - o['ok']:>6} failed")
print("per node:")
for x in rep.get("nodes", []):
    print(f"  node {x['node']} {x['addr']:<24} {x['role']:<8} {x['requests']:>8} = {x['ok']:>8} ok + {x['requests'] - x['ok']:>6} failed")
tl = rep["timeline"]
bad = [s for s in tl if s["requests"] != s["ok"] + s["errors"]]
errsec = [s for s in tl if s["errors"]]
print(f"per second: {len(tl)} seconds, {len(errsec)} with failures:")
for s in errsec:
    print(f"  second {s['second']:>4}: {s['requests']:>5} = {s['ok']:>5} ok + {s['errors']:>5} failed")
print("faults (seconds from the load's start):")
for f in faults:
    print(f"  {f[0]:<24} {f[1]:8.2f} .. {f[2]:8.2f}" + (f"  (TCP retransmission timeout {f[4]:g} s as it ended)" if f[4] else ""))
wins = rep.get("windows", [])
print("unavailability windows:")
for w in wins:
    print(f"  {w['start_s']:8.2f} .. {'%8.2f' % w['end_s'] if w['end_s'] is not None else '     end'}  {w['failed']} failed, then {w['recovered_on']}")
print("checks:")
check(n == ok + failed, f"requests {n} = ok {ok} + failed {failed}")
check(scheduled == n + not_sent, f"scheduled {scheduled} = sent {n} + not sent {not_sent}")
check(sum(o["requests"] for o in rep["ops"]) == n and sum(o["ok"] for o in rep["ops"]) == ok,
      "the operations add up to the totals")
check(sum(x["requests"] for x in rep.get("nodes", [])) == n and sum(x["ok"] for x in rep.get("nodes", [])) == ok,
      "the nodes add up to the totals")
check(not bad and sum(s["requests"] for s in tl) == n and sum(s["ok"] for s in tl) == ok,
      "every second's requests = ok + failed, and the seconds add up to the totals"
      + (f" (not: seconds {[s['second'] for s in bad][:10]})" if bad else ""))
def explains(f, w):
    lo = f[1] - tol
    hi = (f[2] + timeout + f[4] if f[3] else f[1]) + tol
    return lo <= w["start_s"] <= hi
unexplained = [w for w in wins if not any(explains(f, w) for f in faults)]
check(not unexplained, f"each window starts within {tol:g} s of a fault"
      + (f" (not: {[round(w['start_s'], 2) for w in unexplained]})" if unexplained else ""))
kill = [f for f in faults if f[0].startswith("kill-")]
check(bool(kill) and any(explains(kill[0], w) for w in wins), "the SIGKILL of the active node opened a window")
rss = [tuple(map(float, l.split())) for l in open(f"{d}/rss") if len(l.split()) == 2]
rss = [(t - start, kb) for t, kb in rss if 0 <= t - start <= D]
# The base is the first sample from 20% of the load on that lies in no unavailability
# window: while a failover holds the connections down their buffers are not there, and
# they come back when it ends (a 60 s smoke run's 20% mark, 12 s, can fall inside the
# SIGKILL's window, which lasts up to PostgreSQL's 15 s HA lock). A leak grows after it.
def down(t):
    return any(w["start_s"] <= t <= (w["end_s"] if w["end_s"] is not None else D) for w in wins)
steady = [(t, kb) for t, kb in rss if t >= 0.2 * D and not down(t)]
base_t, base = steady[0] if steady else (None, None)
peak = max((kb for t, kb in rss if base_t is not None and t >= base_t), default=None)
if base and peak:
    g = 100.0 * (peak - base) / base
    check(g < rss_pct, f"vblast RSS {base / 1024:.1f} MiB at {100 * base_t / D:.0f}% of the load (the first steady sample from 20% on), peak {peak / 1024:.1f} MiB after: {g:+.1f}% (< {rss_pct:g}%)")
else:
    check(False, "vblast RSS sampled")
gap, run = 0, 0
for s in tl[:-1]:
    run = run + 1 if s["requests"] == 0 else 0
    gap = max(gap, run)
check("hang" not in missing and gap <= timeout + 1,
      f"no hang: vblast ended by its deadline, longest stretch without a completed request {gap} s (<= {timeout + 1:g})")
check(st.split().count("200") == 1 and st.split().count("429") == nodes - 1,
      f"the cluster survived: one active node and {nodes - 1} standbys ({st.strip()})")
check(vbrc == "0", f"vblast exit {vbrc} (0: --allow-errors lets the failed requests through)")
orph = open(f"{d}/orphans.out").read().strip()
check("orphans-failed" not in missing and not orph, "nothing left on the server (vblast cleanup --orphans lists none)"
      + (f":\n{orph}" if orph else ""))
# The audit line vblast printed: "audit log: kv-read 380 = 380, kv-write 7 vs client 9 (-2): ..."
import re
line = next((l for l in open(f"{d}/vblast.err") if l.startswith("vblast: audit log: ")), "")
logged = {m.group(1): int(m.group(2)) for m in re.finditer(r"([a-z0-9-]+) (\d+) (?:=|vs client)", line)}
print("audit log (responses logged, per operation, against the client's ok and sent):")
audit_ok = bool(logged)
for o in rep["ops"]:
    a = logged.get(o["name"])
    good = a is not None and o["ok"] <= a <= o["requests"]
    audit_ok = audit_ok and good
    print(f"  {o['name']:<16} ok {o['ok']:>8} <= logged {a if a is not None else '?':>8} <= sent {o['requests']:>8}"
          + ("" if good else "  <- not"))
check(audit_ok, "the audit log holds every successful request and no more than were sent"
      + ("" if line else " (no audit line from vblast)"))
check("missing" not in missing, "every fault injected")
print("chaos: " + ("all checks hold" if not fails else f"{len(fails)} check(s) failed"))
sys.exit(1 if fails else 0)
PY
