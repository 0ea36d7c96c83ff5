#!/usr/bin/env bash
# Starts a real OpenBao HA cluster on loopback (a private PostgreSQL holding the storage and
# the HA lock, NODES nodes, default 3), runs vblast against it with --nodes active, takes the
# active node away in the middle of the run (FAILURE: kill, the default, is SIGKILL; seal is
# `bao operator seal`; step-down is `bao operator step-down`), and prints vblast's report: the
# cluster before the run, a row per node, and the window of unavailability the failover left,
# beside the cluster's own leader change (sys/leader's active_time on the new active node).
#
#   tools/ha-demo.sh [SECONDS] [extra vblast flags...]     (default 30 s, failure at a third)
#   C=64 NODES=2 tools/ha-demo.sh 20   connections and nodes
#   FAILURE=seal tools/ha-demo.sh 12   seal the active node instead (or FAILURE=step-down)
#   KEEP=1 tools/ha-demo.sh    leaves the cluster running and prints how to reach it
#
# Everything it starts is stopped by pid on exit; its temporary directory is removed.
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-30}; shift || true
NODES=${NODES:-3}
FAILURE=${FAILURE:-kill}
case "$FAILURE" in kill|seal|step-down) ;; *)
    echo "ha-demo: FAILURE must be kill, seal or step-down, not '$FAILURE'" >&2; exit 2 ;;
esac
BAO=${VBLAST_BAO:-$(tools/deps.sh | tail -n1)}
PGBIN=$(ls -d /usr/lib/postgresql/*/bin | sort | tail -n1)
[ -x "$PGBIN/postgres" ] || { echo "ha-demo: PostgreSQL not found (tools/deps.sh installs it)" >&2; exit 2; }
cargo build --release -q
VBLAST=${CARGO_TARGET_DIR:-target}/release/vblast

DIR=$(mktemp -d /tmp/vblast-ha-demo.XXXXXX)
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
    rm -rf "$DIR"
}
trap cleanup EXIT

AS_PG=()
if [ "$(id -u)" -eq 0 ]; then
    chown postgres: "$DIR"
    AS_PG=(setpriv --reuid=postgres --regid=postgres --clear-groups)
fi
# shellcheck source=tools/free-ports.sh
. "$(dirname "${BASH_SOURCE[0]}")/free-ports.sh"

"${AS_PG[@]}" "$PGBIN/initdb" -A trust -U postgres -D "$DIR/pg" >/dev/null
PGPORT=$(free_port 1)
"${AS_PG[@]}" "$PGBIN/postgres" -D "$DIR/pg" -p "$PGPORT" -k "$DIR/pg" \
    -c listen_addresses=127.0.0.1 -c fsync=off >"$DIR/pg.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 100); do "$PGBIN/pg_isready" -q -h 127.0.0.1 -p "$PGPORT" && break; sleep 0.1; done

BASE=$(free_port $((2 * NODES)))
ADDRS=()
for i in $(seq 0 $((NODES - 1))); do
    p=$((BASE + 2 * i))
    cat >"$DIR/n$i.hcl" <<HCL
storage "postgresql" {
  connection_url = "postgres://postgres@127.0.0.1:$PGPORT/postgres?sslmode=disable"
  ha_enabled = "true"
}
listener "tcp" {
  address = "127.0.0.1:$p"
  cluster_address = "127.0.0.1:$((p + 1))"
  tls_disable = true
}
api_addr = "http://127.0.0.1:$p"
cluster_addr = "https://127.0.0.1:$((p + 1))"
disable_mlock = true
HCL
    HOME=$DIR "$BAO" server -config "$DIR/n$i.hcl" >"$DIR/n$i.log" 2>&1 &
    PIDS+=($!)
    ADDRS+=("http://127.0.0.1:$p")
done
for a in "${ADDRS[@]}"; do
    for _ in $(seq 100); do curl -s -o /dev/null "$a/v1/sys/health" && break; sleep 0.1; done
done
VAULT_ADDR=${ADDRS[0]} HOME=$DIR "$BAO" operator init -key-shares=1 -key-threshold=1 -format=json >"$DIR/init.json"
KEY=$(jq -r '.unseal_keys_b64[0]' "$DIR/init.json")
export VAULT_TOKEN=$(jq -r .root_token "$DIR/init.json")
for a in "${ADDRS[@]}"; do VAULT_ADDR=$a HOME=$DIR "$BAO" operator unseal "$KEY" >/dev/null; done
active() { for i in "${!ADDRS[@]}"; do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "${ADDRS[$i]}/v1/sys/health")" = 200 ] && { echo "$i"; return; }
done; echo -1; }
for _ in $(seq 300); do [ "$(active)" -ge 0 ] && break; sleep 0.1; done
A=$(active)
echo "ha-demo: $NODES nodes, active node $A (${ADDRS[$A]}), PostgreSQL on $PGPORT" >&2
if [ "${KEEP:-0}" = 1 ]; then
    echo "VAULT_ADDR=$(IFS=,; echo "${ADDRS[*]}") VAULT_TOKEN=<in $DIR/init.json>; Ctrl-C stops the cluster" >&2
    trap - EXIT; wait; exit 0
fi

# vblast's messages go to a file (its --progress lines say when the load has begun) and
# are shown after the run.
VAULT_ADDR=$(IFS=,; echo "${ADDRS[*]}") "$VBLAST" -c "${C:-16}" -z "${SECS}s" --op kv-read \
    --allow-errors --progress "$@" 2>"$DIR/vblast.err" &
VB=$!
# The failure comes a third of the way into the load, after the setup (a failure during
# the seeding fails the setup): counted from vblast's first progress line, one second in.
for _ in $(seq 1200); do
    grep -q '^progress:' "$DIR/vblast.err" 2>/dev/null && break
    kill -0 "$VB" 2>/dev/null || break
    sleep 0.1
done
sleep $((SECS / 3 > 1 ? SECS / 3 - 1 : 0))
case "$FAILURE" in
kill)
    echo "ha-demo: kill -9 the active node ${ADDRS[$A]} (pid ${PIDS[$((A + 1))]}) at $(date -u +%T.%3N)" >&2
    kill -9 "${PIDS[$((A + 1))]}" ;;
*)
    echo "ha-demo: bao operator $FAILURE on the active node ${ADDRS[$A]} at $(date -u +%T.%3N)" >&2
    VAULT_ADDR=${ADDRS[$A]} HOME=$DIR "$BAO" operator "$FAILURE" >/dev/null ;;
esac
wait "$VB" || true
grep -v '^progress:' "$DIR/vblast.err" >&2 || true
for i in "${!ADDRS[@]}"; do
    [ "$i" = "$A" ] && [ "$FAILURE" = kill ] && continue
    curl -s "${ADDRS[$i]}/v1/sys/leader" | jq -r 'select(.is_self) | "ha-demo: cluster: new active node \(.leader_address) since \(.active_time)"' >&2 || true
done
