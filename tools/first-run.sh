#!/usr/bin/env bash
# First benchmark on a fresh machine: install deps, build, start a local
# OpenBao dev server on a free 127.0.0.1 port, run vblast against it for 10 s,
# then stop the server. Extra arguments are passed to vblast, e.g.
#   tools/first-run.sh --op kv-write
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

BAO="$(tools/deps.sh | tail -n1)"
cargo build --release

# A free port P with P+1 also free (the dev server's cluster listener uses P+1).
free_port_pair() {
    python3 - <<'PY'
import socket
for _ in range(200):
    a = socket.socket(); a.bind(("127.0.0.1", 0)); p = a.getsockname()[1]
    b = socket.socket()
    try:
        b.bind(("127.0.0.1", p + 1))
    except OSError:
        a.close(); continue
    a.close(); b.close(); print(p); break
PY
}
PORT="$(free_port_pair 2>/dev/null || true)"
if [ -z "$PORT" ]; then PORT=$(( 20000 + RANDOM % 20000 )); fi
ADDR="http://127.0.0.1:$PORT"

LOG="$(mktemp -t vblast-bao.XXXXXX.log)"
HOME_DIR="$(mktemp -d -t vblast-bao-home.XXXXXX)"
BAO_PID=""
cleanup() {
    if [ -n "$BAO_PID" ]; then
        kill -CONT "$BAO_PID" 2>/dev/null || true
        kill "$BAO_PID" 2>/dev/null || true
        wait "$BAO_PID" 2>/dev/null || true
    fi
    rm -rf "$HOME_DIR"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "first-run: starting OpenBao dev server on $ADDR (log: $LOG)" >&2
env -u VAULT_ADDR -u VAULT_TOKEN HOME="$HOME_DIR" \
    "$BAO" server -dev -dev-root-token-id root -dev-no-store-token \
    -dev-listen-address "127.0.0.1:$PORT" </dev/null >"$LOG" 2>&1 &
BAO_PID=$!

health() {
    if [ -z "${VBLAST_NO_CURL:-}" ] && command -v curl >/dev/null 2>&1; then
        [ "$(curl -s -o /dev/null -w '%{http_code}' "$ADDR/v1/sys/health" 2>/dev/null)" = 200 ]
    else
        # bash /dev/tcp fallback
        (
            exec 3<>"/dev/tcp/127.0.0.1/$PORT" || exit 1
            printf 'GET /v1/sys/health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n' >&3
            IFS= read -r -t 2 line <&3 || exit 1
            case "$line" in "HTTP/1.1 200"*) exit 0 ;; *) exit 1 ;; esac
        ) 2>/dev/null
    fi
}

for _ in $(seq 1 300); do
    if health; then break; fi
    if ! kill -0 "$BAO_PID" 2>/dev/null; then
        echo "first-run: OpenBao exited; log:" >&2; cat "$LOG" >&2; exit 1
    fi
    sleep 0.1
done
if ! health; then
    echo "first-run: OpenBao not healthy after 30 s; log:" >&2; cat "$LOG" >&2; exit 1
fi

echo "first-run: running vblast against $ADDR" >&2
VAULT_ADDR="$ADDR" VAULT_TOKEN=root target/release/vblast -c 64 -z 10s --op kv-read "$@"
