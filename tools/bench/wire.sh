#!/usr/bin/env bash
# usage: tools/bench/wire.sh   [env: DURATION=3s CONNS=16 RUNS=1 HOG="0 1" BAO=0 TLS=0 PLAIN=1 CLOCK=kernel]
# The wire's own latency beside vblast's two clocks (docs/reports.md, --clock kernel):
# tcpdump captures loopback traffic (kernel timestamps, nanosecond precision) while vblast
# runs against nginx (an https nginx with TLS=1, TLS 1.3; OpenBao with BAO=1; PLAIN=0 leaves
# the plain nginx out); each request's latency is taken from the packets (from the client's
# first request segment to the server's last segment before the connection's next request:
# one request in flight per connection, so the pairing holds for TLS records too, once each
# connection's handshake segments are left out), and its p50, p99, p99.9 and count are
# printed beside vblast's own, by the user-space clock and by the kernel's.
# The capture keeps 128 bytes of each packet (the lengths come from the IP header, a TLS
# record's type from the payload's first byte), is handed each packet at once
# (--immediate-mode) and writes it at once (-U), and is stopped once its file has not grown
# for 2 s. Without these, libpcap handed packets over a block at a time (a block once full or
# 1 s old), and tcpdump stopped 0.5 s after the run lost its last responses: the counts short
# by 30-170, with 0 dropped, of earlier runs; under a CPU hog, 2 s after the run still lost
# one response per connection now and then. HOG=1 runs a busy loop pinned
# to the client's core beside it (another workload taking the client's CPU); HOG="0 1" does
# both. nginx on core 0, vblast on core 1 (-t 1). CLOCK=kernel-tx runs vblast with
# --clock kernel-tx and adds a row, tx-svc: its service time from the kernel's TX stamp of
# each request's last byte to the RX stamp of its response's end, the nearest vblast has
# to the wire's own span. Figures are printed, never asserted.
source "$(dirname "$0")/lib.sh"

DURATION="${DURATION:-3s}"
CONNS="${CONNS:-16}"
RUNS="${RUNS:-1}"
HOGS="${HOG:-0 1}"
WITH_BAO="${BAO:-0}"
WITH_TLS="${TLS:-0}"
WITH_PLAIN="${PLAIN:-1}"
CLOCK="${CLOCK:-kernel}"
LIMIT=$(( ${DURATION%s} + 60 ))

need tcpdump taskset jq python3
build
start_nginx 0
PLAIN_PORT="$NGINX_PORT" PLAIN_URL="$NGINX_URL"
if [ "$WITH_TLS" = 1 ]; then
    need openssl
    dir="$BENCH_TMP/certs"; mkdir -p "$dir"
    # A CA and a leaf signed by it (rustls refuses a CA certificate as the server's).
    { openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
          -subj /CN=vblast-bench-ca -addext basicConstraints=critical,CA:TRUE \
          -addext keyUsage=critical,keyCertSign -keyout "$dir/ca.key" -out "$dir/ca.pem" &&
      openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
          -subj /CN=127.0.0.1 -keyout "$dir/key.pem" -out "$dir/leaf.csr" &&
      printf 'subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n' >"$dir/leaf.ext" &&
      openssl x509 -req -in "$dir/leaf.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" \
          -CAcreateserial -days 2 -extfile "$dir/leaf.ext" -out "$dir/cert.pem"; } \
        >/dev/null 2>&1 || die "openssl failed"
    NGINX_CA="$dir/ca.pem"
    start_nginx 0 "ssl_certificate $dir/cert.pem; ssl_certificate_key $dir/key.pem; ssl_protocols TLSv1.3;"
    TLS_PORT="$NGINX_PORT" TLS_URL="$NGINX_URL"
fi

# Per-request latencies from a pcap of one server port: "count p50 p99 p999" in us. TLS=1
# (TLS 1.3): each connection's handshake segments left out, by the type of the record a
# client segment begins with: handshake (22) and change-cipher-spec (20), and the first
# application-data record (23), which is the client's Finished in TLS 1.3; and a client's
# 24-byte record, an encrypted alert (the close_notify that ends a connection, to which
# nginx answers with its own: without this, up to one more "request" per connection).
# A TCP retransmission (a segment ending at or before the flow's highest sequence so far:
# a loaded machine's loopback retransmits now and then) is left out in both directions.
wire_latency() { # pcap port tls
    python3 - "$1" "$2" "$3" <<'PY'
import struct, sys
path, port, tls = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
data = open(path, "rb").read()
magic = struct.unpack("<I", data[:4])[0]
scale = 1e-9 if magic == 0xA1B23C4D else 1e-6
link = struct.unpack("<I", data[20:24])[0]
off, lat, conns, finished, sent = 24, [], {}, set(), {}
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
    # A retransmission (a segment whose bytes were all sent before) is no new event.
    seq = struct.unpack(">I", tcp[4:8])[0]
    flow = (sport, dport)
    end_seq = (seq + payload) & 0xFFFFFFFF
    ahead = (end_seq - sent.get(flow, seq)) & 0xFFFFFFFF
    if flow in sent and (ahead == 0 or ahead >= 0x80000000):
        continue
    sent[flow] = end_seq
    if dport == port:  # a request segment: the one before closes the last request
        if tls:
            head = tcp[(tcp[12] >> 4) * 4:][:1]
            if head and head[0] in (20, 22):
                continue
            if head and head[0] == 23 and sport not in finished:
                finished.add(sport)
                continue
            if payload == 24:
                continue  # an alert (close_notify at the end): 5 + 2 + 1 + a 16-byte tag
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
one() { # label port tls hog capture-filter args...
    local label="$1" port="$2" tls="$3" hog="$4" filter="$5"; shift 5
    local pcap="$BENCH_TMP/wire.pcap" out="$BENCH_TMP/wire.json" hogpid=""
    show "tcpdump -i lo -n -s 128 -U --immediate-mode -B 65536 --time-stamp-precision=nano -w $pcap $filter"
    timeout "$LIMIT" tcpdump -i lo -n -s 128 -U --immediate-mode -B 65536 --time-stamp-precision=nano -w "$pcap" "$filter" 2>"$pcap.err" &
    local dump=$!
    BENCH_PIDS+=("$dump")
    for _ in $(seq 100); do grep -q listening "$pcap.err" 2>/dev/null && break; sleep 0.05; done
    if [ "$hog" = 1 ]; then
        taskset -c 1 sh -c 'while :; do :; done' &
        hogpid=$!
        BENCH_PIDS+=("$hogpid")
    fi
    show "taskset -c 1 $VBLAST -t 1 -c $CONNS -z $DURATION --clock $CLOCK --no-server-stats --format json $*"
    timeout "$LIMIT" taskset -c 1 "$VBLAST" -t 1 -c "$CONNS" -z "$DURATION" --clock "$CLOCK" \
        --no-server-stats --format json "$@" >"$out" 2>"$out.err" || log "vblast: $(cat "$out.err")"
    [ -n "$hogpid" ] && { kill "$hogpid" 2>/dev/null; wait "$hogpid" 2>/dev/null || true; }
    # The capture stopped once its file has not grown for 2 s (past libpcap's 1 s block
    # timeout, and tcpdump, -U, writes each packet as it gets it), at most 30 s.
    local size=-1 still=0
    for _ in $(seq 60); do
        local now; now="$(stat -c %s "$pcap" 2>/dev/null || echo 0)"
        if [ "$now" = "$size" ]; then still=$((still + 1)); [ "$still" -ge 4 ] && break; else still=0; fi
        size="$now"; sleep 0.5
    done
    kill -INT "$dump" 2>/dev/null || true
    wait "$dump" 2>/dev/null || true
    grep -h "captured\|dropped by kernel" "$pcap.err" | tr '\n' ',' | sed 's/^/  tcpdump: /; s/,$/\n/' >&9 || true
    local w; w="$(wire_latency "$pcap" "$port" "$tls")"
    local u k
    u="$(jq -r '[.requests, (.clock.user_latency_ms.p50*1000|round), (.clock.user_latency_ms.p99*1000|round), (.clock.user_latency_ms.p999*1000|round)] | @tsv' "$out")"
    k="$(jq -r '[.requests, (.clock.kernel_latency_ms.p50*1000|round), (.clock.kernel_latency_ms.p99*1000|round), (.clock.kernel_latency_ms.p999*1000|round)] | @tsv' "$out")"
    printf '%-22s %-4s %-7s %9s %9s %9s %9s\n' "$label" "$hog" wire $w >&9
    printf '%-22s %-4s %-7s %9s %9s %9s %9s\n' "" "" user $u >&9
    printf '%-22s %-4s %-7s %9s %9s %9s %9s\n' "" "" kernel $k >&9
    if [ "$CLOCK" = kernel-tx ]; then
        local t
        t="$(jq -r '[.clock.send_stamped, (.clock.kernel_service_ms.p50*1000|round), (.clock.kernel_service_ms.p99*1000|round), (.clock.kernel_service_ms.p999*1000|round)] | @tsv' "$out")"
        printf '%-22s %-4s %-7s %9s %9s %9s %9s\n' "" "" tx-svc $t >&9
    fi
}

if [ "$WITH_BAO" = 1 ]; then
    start_bao
    export VAULT_TOKEN=root
fi
log ""
log "$(printf '%-22s %-4s %-7s %9s %9s %9s %9s' target hog clock count p50_us p99_us p999_us)"
for r in $(seq "$RUNS"); do
    for hog in $HOGS; do
        if [ "$WITH_PLAIN" = 1 ]; then
            one "nginx (run $r)" "$PLAIN_PORT" 0 "$hog" "tcp port $PLAIN_PORT" "$PLAIN_URL"
        fi
        if [ "$WITH_TLS" = 1 ]; then
            one "nginx TLS 1.3 (run $r)" "$TLS_PORT" 1 "$hog" "tcp port $TLS_PORT" --ca-cert "$NGINX_CA" "$TLS_URL"
        fi
        if [ "$WITH_BAO" = 1 ]; then
            # The load from its own source address, captured alone: the setup's and the
            # cleanup's requests (23 of them) go from 127.0.0.1 and are not the run's.
            one "OpenBao kv-read (run $r)" "${BAO_PORT}" 0 "$hog" "tcp port $BAO_PORT and host 127.0.0.2" \
                --op kv-read --secrets 10 --source-addrs 127.0.0.2 --address "$BAO_ADDR"
        fi
    done
done
[ -n "$BUILD_NOTE" ] && log "$BUILD_NOTE"
log "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
