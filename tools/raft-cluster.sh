#!/usr/bin/env bash
# Starts an N-node OpenBao cluster with integrated storage (raft) on loopback and leaves it
# running; stops one by the pids it recorded.
#
#   tools/raft-cluster.sh N [DIR]        start N nodes (default DIR: a fresh /tmp/vblast-raft.*)
#   tools/raft-cluster.sh stop DIR       stop the nodes started in DIR by pid, remove DIR
#
# Each node i listens on 127.0.0.1:BASE+2i (API) and BASE+2i+1 (cluster), keeps its raft data
# in DIR/raft<i> (raft.db is the BoltDB file) and logs to DIR/node<i>.log. Node 0 is
# initialised (one key share) and unsealed; the others join it (`retry_join`) and are unsealed
# in turn; the start returns when every node votes (autopilot's stabilisation time is set to
# 1 s) and one node is active, the others standbys.
#
# What it leaves in DIR: addrs (the API addresses, one a line, node 0 first), pids (the
# `bao server` pids, same order), root-token and unseal-key (mode 0600: a test cluster's
# secrets; never print them), node<i>.hcl. It prints the addresses, the pids and the path of
# root-token; VAULT_ADDR=$(paste -sd, DIR/addrs) VAULT_TOKEN=$(cat DIR/root-token) is what
# vblast --nodes all needs.
#
# Environment: VBLAST_BAO (the bao binary), BASE_PORT (else a free run of ports),
# UNJOINED=K (the last K nodes are started but neither unsealed nor joined: a node that has
# not yet joined; `bao operator unseal -address ADDR $(cat DIR/unseal-key)` joins one later).
# Every node has a telemetry stanza (Prometheus retention 60 s, no hostname prefix), so
# sys/metrics answers in Prometheus form.
set -euo pipefail

die() { echo "raft-cluster: $*" >&2; exit 2; }

stop() {
    local dir=$1
    [ -f "$dir/pids" ] || die "$dir/pids not found: not a directory this script started"
    local pids
    pids=$(cat "$dir/pids")
    for p in $pids; do kill -TERM "$p" 2>/dev/null || true; done
    for _ in $(seq 100); do
        local alive=0
        for p in $pids; do kill -0 "$p" 2>/dev/null && alive=1; done
        [ $alive = 0 ] && break
        sleep 0.1
    done
    for p in $pids; do kill -KILL "$p" 2>/dev/null || true; done
    rm -rf "$dir"
    echo "raft-cluster: stopped $(echo $pids | wc -w) node(s), removed $dir"
}

if [ "${1:-}" = stop ]; then
    [ -n "${2:-}" ] || die "usage: $0 stop DIR"
    stop "$2"
    exit 0
fi

N=${1:-}
[[ "$N" =~ ^[1-9][0-9]*$ ]] || die "usage: $0 N [DIR] | $0 stop DIR (N: the number of nodes, 1 or more)"
BAO=${VBLAST_BAO:-$(command -v bao || true)}
[ -x "$BAO" ] || die "no bao binary: set VBLAST_BAO (tools/deps.sh installs one)"
UNJOINED=${UNJOINED:-0}
[ "$UNJOINED" -lt "$N" ] || die "UNJOINED=$UNJOINED leaves no node to initialise"

if [ -n "${2:-}" ]; then
    DIR=$2
    mkdir -p "$DIR"
    [ -z "$(ls -A "$DIR")" ] || die "$DIR is not empty"
else
    DIR=$(mktemp -d /tmp/vblast-raft.XXXXXX)
fi
DIR=$(cd "$DIR" && pwd)
: >"$DIR/pids"
failed() {
    echo "raft-cluster: $1; the nodes' logs:" >&2
    tail -n 20 "$DIR"/node*.log >&2 || true
    stop "$DIR" >&2
    exit 1
}
trap 'failed "interrupted"' INT TERM

# shellcheck source=tools/free-ports.sh
. "$(dirname "${BASH_SOURCE[0]}")/free-ports.sh"
BASE=${BASE_PORT:-$(free_port $((2 * N)))}

health() { curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$1/v1/sys/health" || true; }
bao_at() { local a=$1; shift; HOME=$DIR VAULT_ADDR=$a "$BAO" "$@"; }

ADDRS=()
for i in $(seq 0 $((N - 1))); do
    p=$((BASE + 2 * i))
    ADDRS+=("http://127.0.0.1:$p")
    join=""
    [ "$i" -gt 0 ] && join="
  retry_join {
    leader_api_addr = \"${ADDRS[0]}\"
  }"
    mkdir -p "$DIR/raft$i"
    cat >"$DIR/node$i.hcl" <<HCL
storage "raft" {
  path = "$DIR/raft$i"
  node_id = "node$i"
  performance_multiplier = 1$join
}
listener "tcp" {
  address = "127.0.0.1:$p"
  cluster_address = "127.0.0.1:$((p + 1))"
  tls_disable = true
}
api_addr = "http://127.0.0.1:$p"
cluster_addr = "https://127.0.0.1:$((p + 1))"
disable_mlock = true
telemetry {
  prometheus_retention_time = "60s"
  disable_hostname = true
}
HCL
    HOME=$DIR setsid "$BAO" server -config "$DIR/node$i.hcl" >"$DIR/node$i.log" 2>&1 </dev/null &
    echo $! >>"$DIR/pids"
    echo "${ADDRS[$i]}" >>"$DIR/addrs"
done

wait_until() { # SECONDS WHAT COMMAND...
    local limit=$1 what=$2; shift 2
    local deadline=$((SECONDS + limit))
    until "$@"; do
        [ $SECONDS -lt $deadline ] || failed "$what after ${limit}s"
        sleep 0.2
    done
}
listening() { [ "$(health "$1")" != 000 ]; }
for a in "${ADDRS[@]}"; do wait_until 30 "$a does not listen" listening "$a"; done

umask 077
bao_at "${ADDRS[0]}" operator init -key-shares=1 -key-threshold=1 -format=json >"$DIR/init.json" \
    || failed "bao operator init failed"
python3 -c 'import json,sys
d=json.load(open(sys.argv[1]))
open(sys.argv[2],"w").write(d["root_token"])
open(sys.argv[3],"w").write(d["unseal_keys_b64"][0])' "$DIR/init.json" "$DIR/root-token" "$DIR/unseal-key"
rm -f "$DIR/init.json"
umask 022
KEY=$(cat "$DIR/unseal-key")
bao_at "${ADDRS[0]}" operator unseal "$KEY" >/dev/null || failed "unsealing node 0 failed"
is_active() { [ "$(health "$1")" = 200 ]; }
wait_until 60 "node 0 did not become active" is_active "${ADDRS[0]}"
VAULT_TOKEN=$(cat "$DIR/root-token") bao_at "${ADDRS[0]}" operator raft autopilot set-config \
    -server-stabilization-time=1s >/dev/null || true

# A joining node completes its join with the unseal key (the leader's challenge is sealed
# with it); until it has joined, an unseal may be refused: asked again.
joined() {
    [ "$(health "$1")" = 429 ] && return 0
    bao_at "$1" operator unseal "$KEY" >/dev/null 2>&1 || true
    return 1
}
JOIN=$((N - UNJOINED))
for i in $(seq 1 $((JOIN - 1))); do wait_until 90 "node $i did not join" joined "${ADDRS[$i]}"; done
voters() {
    VAULT_TOKEN=$(cat "$DIR/root-token") bao_at "${ADDRS[0]}" read -format=json \
        sys/storage/raft/configuration 2>/dev/null \
        | python3 -c 'import json,sys; print(sum(1 for s in json.load(sys.stdin)["data"]["config"]["servers"] if s["voter"]))' \
        2>/dev/null || echo 0
}
all_vote() { [ "$(voters)" = "$JOIN" ]; }
wait_until 90 "not every joined node votes" all_vote

echo "raft-cluster: $N node(s) in $DIR ($JOIN joined)"
for i in $(seq 0 $((N - 1))); do
    echo "  node $i  ${ADDRS[$i]}  pid $(sed -n "$((i + 1))p" "$DIR/pids")  data $DIR/raft$i"
done
echo "  root token: $DIR/root-token"
echo "  VAULT_ADDR=$(paste -sd, "$DIR/addrs") VAULT_TOKEN=\$(cat $DIR/root-token)"
echo "  stop: $0 stop $DIR"
