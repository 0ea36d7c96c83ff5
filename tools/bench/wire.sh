#!/usr/bin/env bash
# usage: tools/bench/wire.sh   [env: DURATION=3s CONNS=16 RUNS=1 HOG="0 1" BAO=0]
# The wire's own latency beside vblast's two clocks (docs/reports.md, --clock kernel):
# tcpdump captures loopback traffic (kernel timestamps, nanosecond precision) while vblast
# runs against nginx (and OpenBao with BAO=1); each request's latency is taken from the
# packets (from the client's request segment to the server's last response segment before
# the connection's next request), and its p50, p99, p99.9 and count are printed beside
# vblast's own, by the user-space clock and by the kernel's. HOG=1 runs a busy loop pinned
# to the client's core beside it (another workload taking the client's CPU); HOG="0 1" does
# both. nginx on core 0, vblast on core 1 (-t 1). Figures are printed, never asserted.
source "$(dirname "$0")/lib.sh"

DURATION="${DURATION:-3s}"
CONNS="${CONNS:-16}"
RUNS="${RUNS:-1}"
HOGS="${HOG:-0 1}"
WITH_BAO="${BAO:-0}"
LIMIT=$(( ${DURATION%s} + 60 ))

need tcpdump taskset jq python3
build
start_nginx 0

# Per-request latencies from a pcap of one server port: "count p50 p99 p999" in us.
wire_latency() { # pcap port
    python3 - "$1" "$2" <<'PY'
import struct, sys
path, port = sys.argv[1], int(sys.argv[2])
data = open(path, "rb").read()
magic = struct.unpack("<I", data[:4])[0]
scale = 1e-9 if magic == 0xA1B23C4D else 1e-6
link = struct.unpack("<I", data[20:24])[0]
off, lat, conns = 24, [], {}
while off + 16 <= len(data):
    sec, frac, incl, _ = struct.unpack("<IIII", data[off:off + 16])
    pkt = data[off + 16: off + 16 + incl]
    off += 16 + incl
    t = sec + frac * scale
    ip = pkt[14:] if link == 1 else pkt[16:] if link == 113 else pkt[4:]
    if len(ip) < 20 or ip[0] >> 4 != 4 or ip[9] != 6:
        continue
    ihl = (ip[0] & 15) * 4
    total = struct.unpack(">H", ip[2:4])[0]
    tcp = ip[ihl:]
    sport, dport = struct.unpack(">HH", tcp[:4])
    payload = total - ihl - (tcp[12] >> 4) * 4
    if payload <= 0:
        continue
    if dport == port:  # a request segment: the one before closes the last request
        c = conns.get(sport)
        if c and c[1] is not None:
            lat.append(c[1] - c[0])
            conns[sport] = [t, None]
        elif not c:
            conns[sport] = [t, None]
    elif sport == port and dport in conns:
        conns[dport][1] = t
for start, end in conns.values():
    if end is not None:
        lat.append(end - start)
lat.sort()
q = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))] * 1e6 if lat else 0
print(len(lat), round(q(0.5)), round(q(0.99)), round(q(0.999)))
PY
}

# One run against URL (port PORT) with vblast's extra args; prints the comparison row.
one() { # label port hog args...
    local label="$1" port="$2" hog="$3"; shift 3
    local pcap="$BENCH_TMP/wire.pcap" out="$BENCH_TMP/wire.json" hogpid=""
    show "tcpdump -i lo -n -B 65536 --time-stamp-precision=nano -w $pcap tcp port $port"
    timeout "$LIMIT" tcpdump -i lo -n -B 65536 --time-stamp-precision=nano -w "$pcap" "tcp port $port" 2>"$pcap.err" &
    local dump=$!
    BENCH_PIDS+=("$dump")
    for _ in $(seq 100); do grep -q listening "$pcap.err" 2>/dev/null && break; sleep 0.05; done
    if [ "$hog" = 1 ]; then
        taskset -c 1 sh -c 'while :; do :; done' &
        hogpid=$!
        BENCH_PIDS+=("$hogpid")
    fi
    show "taskset -c 1 $VBLAST -t 1 -c $CONNS -z $DURATION --clock kernel --no-server-stats --format json $*"
    timeout "$LIMIT" taskset -c 1 "$VBLAST" -t 1 -c "$CONNS" -z "$DURATION" --clock kernel \
        --no-server-stats --format json "$@" >"$out" 2>"$out.err" || log "vblast: $(cat "$out.err")"
    [ -n "$hogpid" ] && { kill "$hogpid" 2>/dev/null; wait "$hogpid" 2>/dev/null || true; }
    sleep 0.5
    kill -INT "$dump" 2>/dev/null || true
    wait "$dump" 2>/dev/null || true
    grep -h "dropped by kernel" "$pcap.err" | sed 's/^/  tcpdump: /' >&9 || true
    local w; w="$(wire_latency "$pcap" "$port")"
    local u k
    u="$(jq -r '[.requests, (.clock.user_latency_ms.p50*1000|round), (.clock.user_latency_ms.p99*1000|round), (.clock.user_latency_ms.p999*1000|round)] | @tsv' "$out")"
    k="$(jq -r '[.requests, (.clock.kernel_latency_ms.p50*1000|round), (.clock.kernel_latency_ms.p99*1000|round), (.clock.kernel_latency_ms.p999*1000|round)] | @tsv' "$out")"
    printf '%-22s %-4s %-7s %9s %9s %9s %9s\n' "$label" "$hog" wire $w >&9
    printf '%-22s %-4s %-7s %9s %9s %9s %9s\n' "" "" user $u >&9
    printf '%-22s %-4s %-7s %9s %9s %9s %9s\n' "" "" kernel $k >&9
}

if [ "$WITH_BAO" = 1 ]; then
    start_bao
    export VAULT_TOKEN=root
fi
log ""
log "$(printf '%-22s %-4s %-7s %9s %9s %9s %9s' target hog clock count p50_us p99_us p999_us)"
for r in $(seq "$RUNS"); do
    for hog in $HOGS; do
        one "nginx (run $r)" "$NGINX_PORT" "$hog" "$NGINX_URL"
        if [ "$WITH_BAO" = 1 ]; then
            one "OpenBao kv-read (run $r)" "${BAO_PORT}" "$hog" --op kv-read --secrets 10 --address "$BAO_ADDR"
        fi
    done
done
[ -n "$BUILD_NOTE" ] && log "$BUILD_NOTE"
log "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
