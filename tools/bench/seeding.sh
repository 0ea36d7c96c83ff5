#!/usr/bin/env bash
# usage: tools/bench/seeding.sh   [env: RUNS=3 SECRETS=20000 SIZE=1024 PIN_SERVER=1 KV=2 CONNS=16 TOKENS=1
#                                        PACE=1 SEQ=1 USERS=1000 LEVELS="1 2 4 8 16 32" DUR=5]
#
# PACE=1 (the default; PACE=0 leaves it out): setup at the server's pace (issue 26 item 2).
# On the same server, each run measures vblast's setup phases as the results file gives
# them (run.setup_phases: `kv seeding` of SECRETS secrets, `userpass users` of USERS users
# of the login-read scenario, their connections set by vblast's ramp) against the best
# throughput a vblast load run of the same request reaches over LEVELS connections, DUR
# seconds each: kv-write (SIZE-byte values) for the seeding, and a URL-mode POST of one
# userpass user (the body setup sends; create and update cost the same bcrypt hash) for the
# user creation. Prints each phase's rate / the best run's rate (goal >= 0.9), medians of RUNS.
# Where a ratio below 1 comes from: the server's CPU (sampled every 50 ms from /proc/PID/stat)
# over each load level's run and over each phase (its end time from vblast's stderr,
# VBLAST_SETUP_TIMING) gives the share of that wall time the server was busy and its CPU per
# request, so that rate ratio = busy-share ratio x (the best run's CPU per request / the
# phase's): a phase that keeps the server as busy as the best run, on requests that cost it
# as much, has a ratio of 1.
# SEQ=0 leaves out the older part below (vblast's seeding against sequential writes).
# Issue 9's setup goal: seeding SECRETS KV secrets of SIZE bytes into an OpenBao dev server
# with vblast (its setup, reported as run.setup_s: preflight, mount, readiness, concurrent
# seeding on CONNS connections) against the same writes sent one at a time on one keep-alive
# connection (vault-benchmark's way), by two clients: a small Python http.client loop into the
# dev server's own mount (KV=1: a v1 mount the script makes), and vblast's own seeding held to
# one connection (VBLAST_SEED_CONNS=1: a fresh mount of the same version, the same requests).
# Server pinned to core 0 (PIN_SERVER=0: both cores), every client to core 1.
#
# Besides the times it prints where they go: the server's CPU time (utime + stime of its
# /proc/PID/stat, read before and after each client) per write and as a share of the wall
# time, each client's CPU per write, vblast's setup phases (VBLAST_SETUP_TIMING), and the
# floor the server's CPU puts under the ratio: vblast cannot seed in less wall time than the
# CPU its writes cost, server_cpu on one core (server pinned), (server_cpu + client_cpu) / 2
# on two. Prints medians and ratios vblast / sequential (goal <= 0.33). Never asserts.
#
# TOKENS=1 (the default; TOKENS=0 leaves it out) adds the token A/B: vblast's seeding on CONNS
# connections again with a service token, a batch token and an orphan batch token, all
# carrying one policy that allows just what the seeding does (mounts under vblast-*, writes
# in them), against the root token of the first row. Service against root is the cost of
# the ACL check (a root token skips it); a batch token is decoded, not looked up in storage,
# but OpenBao then looks its parent up (the root token) unless it is an orphan.
source "$(dirname "$0")/lib.sh"

RUNS="${RUNS:-3}"
SECRETS="${SECRETS:-20000}"
SIZE="${SIZE:-1024}"
KV="${KV:-2}"
CONNS="${CONNS:-16}"
PIN="${PIN_SERVER:-1}"

need curl jq python3 taskset /usr/bin/time
build
start_bao
SERVER_PID="${BENCH_PIDS[-1]}"
[ "$PIN" = 1 ] && taskset -a -pc 0 "$SERVER_PID" >/dev/null
TICK="$(getconf CLK_TCK)"
FIG="$BENCH_TMP/figures"
mkdir -p "$FIG"

if [ "$KV" = 1 ]; then
    SEQ_PATH=/v1/kv1/
    curl -sf -H 'X-Vault-Token: root' -X POST -d '{"type":"kv","options":{"version":"1"}}' \
        "$BAO_ADDR/v1/sys/mounts/kv1" >/dev/null || die "cannot mount kv v1"
else
    SEQ_PATH=/v1/secret/data/
fi

# The server's CPU seconds so far (all its threads).
server_cpu() { awk -v t="$TICK" '{ printf "%.2f\n", ($14 + $15) / t }' "/proc/$SERVER_PID/stat"; }
sub() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f\n", a - b }'; }
per_write_us() { awk -v s="$1" -v n="$SECRETS" 'BEGIN { printf "%.0f\n", s * 1e6 / n }'; }
share() { awk -v a="$1" -v b="$2" 'BEGIN { if (b+0==0) print "nan"; else printf "%.0f%%\n", 100 * a / b }'; }

python_sequential() { # prefix -> "seconds client_cpu_seconds"
    taskset -c 1 python3 - "$BAO_PORT" "$SEQ_PATH$1" "$SECRETS" "$SIZE" "$KV" <<'PY'
import http.client, json, os, sys, time
port, prefix, n, size, kv = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
value = {"value": "x" * size}
body = json.dumps({"data": value} if kv == "2" else value)
c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
t, c0 = time.monotonic(), os.times()
for i in range(n):
    c.request("POST", f"{prefix}-{i}", body, {"X-Vault-Token": "root"})
    r = c.getresponse(); r.read()
    if r.status not in (200, 204):
        sys.exit(f"write {i}: status {r.status}")
c1 = os.times()
print(f"{time.monotonic() - t:.3f} {c1.user - c0.user + c1.system - c0.system:.2f}")
PY
}

# vblast's setup on CONNS connections -> "setup_s client_cpu_seconds"; the mount is kept
# (--keep), so that cleanup's work stays out of the server's CPU figure, as the sequential
# writes stay on the server too.
vblast_setup() { # conns [token]
    local out="$BENCH_TMP/vblast.json" err="$BENCH_TMP/vblast.err" tm="$BENCH_TMP/time"
    VBLAST_SEED_CONNS="$1" VBLAST_SETUP_TIMING=1 VAULT_ADDR="$BAO_ADDR" VAULT_TOKEN="${2:-root}" \
        /usr/bin/time -o "$tm" -f '%U %S' taskset -c 1 "$VBLAST" --op kv-read --kv-version "$KV" \
        --secrets "$SECRETS" --secret-size "$SIZE" -c 1 -n 1 --keep --format json >"$out" 2>"$err" \
        || die "vblast failed: $(cat "$err")"
    grep 'setup:' "$err" | sed 's/^/    /' >&9
    echo "$(jq -r '.run.setup_s' "$out") $(awk '{ printf "%.2f\n", $1 + $2 }' "$tm")"
}

# measure NAME CMD...: runs CMD (which prints "seconds client_cpu"), prints one line with the
# server's CPU over it, and appends "seconds server_cpu client_cpu" to $FIG/NAME.
measure() {
    local name="$1" s0 s1 r secs ccpu scpu
    shift
    s0="$(server_cpu)"
    r="$("$@")" || die "$name failed"
    s1="$(server_cpu)"
    read -r secs ccpu <<<"$r"
    scpu="$(sub "$s1" "$s0")"
    log "  $name: ${secs}s; server CPU ${scpu}s ($(share "$scpu" "$secs") of the wall time, $(per_write_us "$scpu") us/write); client CPU ${ccpu}s ($(per_write_us "$ccpu") us/write)"
    echo "$secs $scpu $ccpu" >>"$FIG/$name"
}

PACE="${PACE:-1}"
SEQ="${SEQ:-1}"
USERS="${USERS:-1000}"
LEVELS="${LEVELS:-1 2 4 8 16 32}"
DUR="${DUR:-5}"

# A setup phase's rate (and connections) from a run's results: "rate connections".
phase_rate() { # results.json name
    jq -r --arg n "$2" '.run.setup_phases[] | select(.name == $n) | "\(.rate) \(.connections // 0)"' "$1"
}

# The server's CPU seconds, sampled every 50 ms into $SAMPLES ("unix_time cpu_seconds").
SAMPLES="$BENCH_TMP/server-cpu"
start_sampler() {
    taskset -c 1 python3 - "$SERVER_PID" "$SAMPLES" "$TICK" <<'PY' &
import sys, time
pid, out, tick = sys.argv[1], sys.argv[2], int(sys.argv[3])
with open(out, "w", buffering=1) as f:
    while True:
        try:
            with open(f"/proc/{pid}/stat") as s:
                fields = s.read().rsplit(")", 1)[1].split()
        except OSError:
            break
        f.write(f"{time.time():.3f} {(int(fields[11]) + int(fields[12])) / tick:.3f}\n")
        time.sleep(0.05)
PY
    BENCH_PIDS+=("$!")
}
# busy T0 T1 REQUESTS: "busy_share us_per_request" of the server between unix times T0 and T1.
busy() {
    python3 - "$SAMPLES" "$1" "$2" "$3" <<'PY'
import bisect, sys
rows = [tuple(map(float, l.split())) for l in open(sys.argv[1]) if len(l.split()) == 2]
ts = [r[0] for r in rows]
def at(t):
    i = bisect.bisect_left(ts, t)
    if i <= 0 or i >= len(rows):
        return rows[min(max(i, 0), len(rows) - 1)][1]
    (t0, c0), (t1, c1) = rows[i - 1], rows[i]
    return c0 + (c1 - c0) * (t - t0) / (t1 - t0)
t0, t1, n = float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
cpu = at(t1) - at(t0)
print(f"{cpu / (t1 - t0):.3f} {cpu * 1e6 / n if n > 0 else 0:.0f}")
PY
}
# stamped OUT CMD...: runs CMD on core 1, its stderr lines prefixed with the unix time into OUT.
stamped() {
    local out="$1"
    shift
    taskset -c 1 python3 -c '
import subprocess, sys, time
out = open(sys.argv[1], "w", buffering=1)
p = subprocess.Popen(sys.argv[2:], stderr=subprocess.PIPE, text=True)
for line in p.stderr:
    out.write(f"{time.time():.3f} {line}")
sys.exit(p.wait())' "$out" "$@"
}
# The end time and seconds of the setup phase NAME in a stamped stderr: "end seconds".
phase_end() { # stamped_file name
    grep "vblast: setup: $2 [0-9]* in " "$1" | tail -n1 | sed -E 's/^([0-9.]+) .* in ([0-9.]+)s.*/\1 \2/'
}

# The best throughput of a load run over LEVELS connections: "rate connections busy us_per_req"
# (the server's busy share and CPU per request over the best level's load phase, which starts
# when its last setup phase, the seeding, ends).
best_run() { # vblast args...
    local c best=0 at=0 r st="$BENCH_TMP/load.err" out="$BENCH_TMP/load.json" end b bb="0 0"
    for c in $LEVELS; do
        stamped "$st" env VBLAST_SETUP_TIMING=1 VAULT_ADDR="$BAO_ADDR" VAULT_TOKEN=root "$VBLAST" -q -c "$c" -z "${DUR}s" --format json "$@" >"$out" \
            || die "vblast $* failed"
        r="$(jq -r '.throughput' "$out")"
        end="$(phase_end "$st" "kv seeding")"
        b="$(busy "${end% *}" "$(awk -v t="${end% *}" -v d="$(jq -r .duration_s "$out")" 'BEGIN { printf "%.3f", t + d }')" \
            "$(jq -r .ok "$out")")"
        log "    -c $c: $(printf '%.0f' "$r")/s, server busy ${b% *}, $(printf '%s' "${b#* }") us/request"
        if awk -v a="$r" -v b="$best" 'BEGIN { exit !(a > b) }'; then best="$r"; at="$c"; bb="$b"; fi
    done
    echo "$best $at $bb"
}

# The best user-create throughput over LEVELS: at level C, C vblast processes (-c 1 each)
# post C different users side by side (one user written twice at once fails its
# storage transaction); their throughputs add up. "rate connections busy us_per_req" (the
# server's busy share and CPU per request from 0.5 s after the start to the end of DUR).
best_users() {
    local c k best=0 at=0 r t0 b bb="0 0"
    for c in $LEVELS; do
        t0="$(date +%s.%N)"
        for k in $(seq "$c"); do
            VAULT_ADDR="$BAO_ADDR" taskset -c 1 "$VBLAST" -q -c 1 -z "${DUR}s" --format json \
                -m POST -H "X-Vault-Token: root" -T application/json -d "$USER_BODY" \
                "$BAO_ADDR/v1/auth/bench-users/users/u$k" >"$BENCH_TMP/users-$k.json" 2>/dev/null &
        done
        wait || die "a user-create run failed"
        r="$(cat "$BENCH_TMP"/users-*.json | jq -s 'map(.throughput) | add')"
        rm -f "$BENCH_TMP"/users-*.json
        b="$(busy "$(awk -v t="$t0" 'BEGIN { printf "%.3f", t + 0.5 }')" \
            "$(awk -v t="$t0" -v d="$DUR" 'BEGIN { printf "%.3f", t + d }')" \
            "$(awk -v r="$r" -v d="$DUR" 'BEGIN { print r * (d - 0.5) }')")"
        log "    -c $c: $(printf '%.1f' "$r")/s, server busy ${b% *}, ${b#* } us/request"
        if awk -v a="$r" -v b="$best" 'BEGIN { exit !(a > b) }'; then best="$r"; at="$c"; bb="$b"; fi
    done
    echo "$best $at $bb"
}

# A setup phase of a stamped run: "rate connections busy us_per_req".
phase_figures() { # results.json stamped_err name
    local rc end n
    rc="$(phase_rate "$1" "$3")"
    end="$(phase_end "$2" "$3")"
    n="$(jq -r --arg n "$3" '.run.setup_phases[] | select(.name == $n) | .count' "$1")"
    echo "$rc $(busy "$(awk -v t="${end% *}" -v s="${end#* }" 'BEGIN { printf "%.3f", t - s }')" "${end% *}" "$n")"
}

pace_run() { # run number (the load runs first: a fresh server's first minute is not the setup's alone)
    local out="$BENCH_TMP/pace.json" err="$BENCH_TMP/pace.err" seed users kvw upw
    show "taskset -c 1 vblast --op kv-write --kv-version $KV --secrets 1000 --secret-size $SIZE -c C -z ${DUR}s (C in $LEVELS)"
    kvw="$(best_run --no-server-stats --op kv-write --kv-version "$KV" --secrets 1000 --secret-size "$SIZE")"
    show "C x taskset -c 1 vblast -m POST -H 'X-Vault-Token: root' -d '<the user setup sends>' -c 1 -z ${DUR}s $BAO_ADDR/v1/auth/bench-users/users/uK (K in 1..C, C in $LEVELS)"
    upw="$(best_users)"
    show "VBLAST_SETUP_TIMING=1 taskset -c 1 vblast --op kv-read --kv-version $KV --secrets $SECRETS --secret-size $SIZE -c 1 -n 1 --no-server-stats --output results.json"
    stamped "$err" env VBLAST_SETUP_TIMING=1 VAULT_ADDR="$BAO_ADDR" VAULT_TOKEN=root "$VBLAST" -q \
        --op kv-read --kv-version "$KV" --secrets "$SECRETS" --secret-size "$SIZE" -c 1 -n 1 \
        --no-server-stats --output "$out" >/dev/null || die "vblast seeding failed"
    grep 'setup: kv seeding:' "$err" | cut -d' ' -f2- | sed 's/^/    /' >&9
    read -r -a seed <<<"$(phase_figures "$out" "$err" "kv seeding")"
    log "  kv seeding: ${seed[0]}/s on ${seed[1]} connections, server busy ${seed[2]}, ${seed[3]} us/request"
    show "VBLAST_SETUP_TIMING=1 taskset -c 1 vblast --scenario login-read --users $USERS --secrets 10 -c 1 -n 1 --no-server-stats --output results.json"
    stamped "$err" env VBLAST_SETUP_TIMING=1 VAULT_ADDR="$BAO_ADDR" VAULT_TOKEN=root "$VBLAST" -q \
        --scenario login-read --users "$USERS" --secrets 10 -c 1 -n 1 --no-server-stats --output "$out" \
        >/dev/null || die "vblast user creation failed"
    grep 'setup: userpass users:' "$err" | cut -d' ' -f2- | sed 's/^/    /' >&9
    read -r -a users <<<"$(phase_figures "$out" "$err" "userpass users")"
    log "  userpass users: ${users[0]}/s on ${users[1]} connections, server busy ${users[2]}, ${users[3]} us/request"
    read -r -a kvw <<<"$kvw"
    read -r -a upw <<<"$upw"
    log "  best kv-write ${kvw[0]}/s at -c ${kvw[1]}; best user create ${upw[0]}/s at -c ${upw[1]}"
    echo "${seed[0]} ${kvw[0]} ${seed[2]} ${kvw[2]} ${seed[3]} ${kvw[3]}" >>"$FIG/pace-kv"
    echo "${users[0]} ${upw[0]} ${users[2]} ${upw[2]} ${users[3]} ${upw[3]}" >>"$FIG/pace-users"
}

if [ "$PACE" = 1 ]; then
    curl -sf -H 'X-Vault-Token: root' -X POST -d '{"type":"userpass"}' \
        "$BAO_ADDR/v1/sys/auth/bench-users" >/dev/null || die "cannot enable userpass"
    # What login-read's setup sends for each user (vault/ops/login_read.rs), bar the policy.
    USER_BODY='{"password":"0123456789abcdef0123456789abcdef","token_ttl":"10m","token_max_ttl":"10m","token_type":"service","token_policies":["default"]}'
    start_sampler
    log "setup at the server's pace: $SECRETS KV v$KV secrets of $SIZE B, $USERS userpass users; server $([ "$PIN" = 1 ] && echo "on core 0" || echo "on both cores"), clients on core 1"
    for run in $(seq "$RUNS"); do
        log "run $run (load average $(cut -d' ' -f1-3 /proc/loadavg))"
        pace_run "$run"
    done
    pcol() { awk -v c="$1" '{ print $c }' "$FIG/$2" | median; }
    pr() { awk -v c1="$1" -v c2="$2" '{ if ($c2 + 0 > 0) printf "%.3f\n", $c1 / $c2 }' "$FIG/$3" | median; }
    log "medians of $RUNS runs:"
    # Per run: rate ratio = busy-share ratio x CPU-per-request ratio (best run's / phase's).
    for f in kv users; do
        awk '{ printf "    %s run %d: ratio %.3f = busy %.2f/%.2f (%.3f) x server us/request %s/%s (%.3f)\n",
            f, NR, $1/$2, $3, $4, ($4 > 0 ? $3/$4 : 0), $6, $5, ($5 > 0 ? $6/$5 : 0) }' f="$f" "$FIG/pace-$f" >&9
    done
    log "  kv seeding $(pcol 1 pace-kv)/s, best kv-write run $(pcol 2 pace-kv)/s: ratio $(pr 1 2 pace-kv) (goal >= 0.9); busy share ratio $(pr 3 4 pace-kv), server CPU per request ratio (best run / phase) $(pr 6 5 pace-kv)"
    log "  userpass users $(pcol 1 pace-users)/s, best user-create run $(pcol 2 pace-users)/s: ratio $(pr 1 2 pace-users) (goal >= 0.9); busy share ratio $(pr 3 4 pace-users), server CPU per request ratio $(pr 6 5 pace-users)"
    if [ "$SEQ" != 1 ]; then
        [ -z "$BUILD_NOTE" ] || log "$BUILD_NOTE"
        exit 0
    fi
fi

TOKENS="${TOKENS:-1}"
if [ "$TOKENS" = 1 ]; then
    # The policy of the token A/B: what vblast's seeding sends (preflight's lookup-self, the
    # mount, its readiness read, the writes), nothing else. Tokens stay in variables.
    POLICY='path "auth/token/lookup-self" { capabilities = ["read"] }
path "sys/mounts/vblast-*" { capabilities = ["create", "update", "read"] }
path "vblast-*" { capabilities = ["create", "update", "read"] }'
    jq -n --arg p "$POLICY" '{policy: $p}' | curl -sf -H 'X-Vault-Token: root' -X PUT -d @- \
        "$BAO_ADDR/v1/sys/policies/acl/bench-seed" >/dev/null || die "cannot write the policy"
    make_token() { # type endpoint (create, create-orphan)
        curl -sf -H 'X-Vault-Token: root' -X POST \
            -d "{\"type\":\"$1\",\"policies\":[\"bench-seed\"],\"no_default_policy\":true,\"ttl\":\"2h\"}" \
            "$BAO_ADDR/v1/auth/token/$2" | jq -er '.auth.client_token'
    }
    declare -A TOKEN
    TOKEN[service]="$(make_token service create)" || die "cannot create a service token"
    TOKEN[batch]="$(make_token batch create)" || die "cannot create a batch token"
    TOKEN[orphan-batch]="$(make_token batch create-orphan)" || die "cannot create an orphan batch token"
fi
TOKEN_KINDS=(service batch orphan-batch)

log "seeding $SECRETS KV v$KV secrets of $SIZE B; server $([ "$PIN" = 1 ] && echo "on core 0" || echo "on both cores"), clients on core 1"
for run in $(seq "$RUNS"); do
    log "run $run"
    show "VBLAST_SETUP_TIMING=1 taskset -c 1 vblast --op kv-read --kv-version $KV --secrets $SECRETS --secret-size $SIZE -c 1 -n 1 --keep --format json (seeding on $CONNS connections)"
    measure vblast vblast_setup "$CONNS"
    show "sequential: $SECRETS writes on one keep-alive connection (python http.client)"
    measure python python_sequential "run$run"
    show "sequential: VBLAST_SEED_CONNS=1 vblast ... (vblast's seeding on one keep-alive connection)"
    measure vblast1 vblast_setup 1
    if [ "$TOKENS" = 1 ]; then
        for t in "${TOKEN_KINDS[@]}"; do
            show "VAULT_TOKEN=<$t token, policy bench-seed> vblast ... (seeding on $CONNS connections)"
            measure "$t" vblast_setup "$CONNS" "${TOKEN[$t]}"
        done
    fi
done

col() { awk -v c="$1" '{ print $c }' "$FIG/$2" | median; }
vm="$(col 1 vblast)"; vs="$(col 2 vblast)"; vc="$(col 3 vblast)"
pm="$(col 1 python)"; ps="$(col 2 python)"
om="$(col 1 vblast1)"; os="$(col 2 vblast1)"
pc="$(col 3 python)"; oc="$(col 3 vblast1)"
if [ "$PIN" = 1 ]; then
    floor="$vs"
    why="server CPU of vblast's seeding, on its one core"
else
    floor="$(awk -v s="$vs" -v c="$vc" 'BEGIN { printf "%.2f\n", (s + c) / 2 }')"
    why="(server CPU + vblast's CPU) / 2 cores"
fi
# One write at a time serialises the server's and the client's work: the sequential run
# lasts at least their sum, and about that much on a quiet machine.
busy() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f\n", a + b }'; }
log "medians of $RUNS runs ($SECRETS x $SIZE B, KV v$KV):"
log "  vblast (${CONNS} connections) ${vm}s, server CPU ${vs}s ($(per_write_us "$vs") us/write), vblast CPU ${vc}s"
log "  sequential, python http.client ${pm}s, server CPU ${ps}s ($(per_write_us "$ps") us/write, $(share "$ps" "$pm") busy), client CPU ${pc}s: ratio $(ratio "$vm" "$pm")"
log "  sequential, vblast on 1 connection ${om}s, server CPU ${os}s ($(per_write_us "$os") us/write, $(share "$os" "$om") busy), client CPU ${oc}s: ratio $(ratio "$vm" "$om")"
if [ "$TOKENS" = 1 ]; then
    for t in "${TOKEN_KINDS[@]}"; do
        tm="$(col 1 "$t")"; ts="$(col 2 "$t")"; tc="$(col 3 "$t")"
        log "  vblast (${CONNS} connections), $t token ${tm}s, server CPU ${ts}s ($(per_write_us "$ts") us/write, x$(ratio "$ts" "$vs") of root's), vblast CPU ${tc}s: ratio $(ratio "$tm" "$pm") (python), $(ratio "$tm" "$om") (vblast, 1 connection)"
    done
fi
log "  floor: ${floor}s ($why): lowest ratio this server allows against these runs $(ratio "$floor" "$pm") (python), $(ratio "$floor" "$om") (vblast, 1 connection)"
log "  floor against sequential runs that wait for nothing but CPU (server + client, a quiet machine): $(ratio "$floor" "$(busy "$ps" "$pc")") (python), $(ratio "$floor" "$(busy "$os" "$oc")") (vblast, 1 connection); goal <= 0.33"
[ -z "$BUILD_NOTE" ] || log "$BUILD_NOTE"
