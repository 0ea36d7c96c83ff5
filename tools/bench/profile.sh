#!/usr/bin/env bash
# usage: tools/bench/profile.sh   [env: SIZE_MIB=1024 REQUESTS=5000 RUNS=3 LIMIT=1200]
# `vblast profile` against `jq -c '.request.path'` on the same large audit log (issue 37's
# performance goals: >= 10x jq's bytes per second, RSS < 64 MiB whatever the size).
# Makes a real audit log: an OpenBao dev server with a declared file audit device, a vblast
# mix of REQUESTS requests against it (its kv-list answers name the 1000 seeded secrets, HMAC'd:
# long lines; userpass logins take the server ~0.3 s each); then repeats that log into one file
# of at least SIZE_MIB MiB under the bench's temp dir in /tmp (removed on exit), reads it once to warm the page
# cache, and times each reader RUNS times, alternating (/usr/bin/time -f '%e %M'). Prints
# the median bytes/s of each, the ratio, and vblast's largest max RSS. Never asserts.
source "$(dirname "$0")/lib.sh"

SIZE_MIB="${SIZE_MIB:-1024}"
REQUESTS="${REQUESTS:-5000}"
RUNS="${RUNS:-3}"
LIMIT="${LIMIT:-1200}"

need jq curl /usr/bin/time
[ "$SIZE_MIB" -le 4096 ] || die "SIZE_MIB is at most 4096 (the log is written to /tmp)"
build
find_bao
dir="$BENCH_TMP/bao"
mkdir -p "$dir/home"
LOG="$BENCH_TMP/audit.log"
printf 'audit "file" "bench" {\n  options {\n    file_path = "%s"\n  }\n}\n' "$LOG" >"$dir/audit.hcl"
BAO_PORT="$(free_port)"
BAO_ADDR="http://127.0.0.1:$BAO_PORT"
show "HOME=$dir/home $BAO server -dev -dev-root-token-id root -dev-listen-address 127.0.0.1:$BAO_PORT -dev-no-store-token -config=$dir/audit.hcl"
HOME="$dir/home" "$BAO" server -dev -dev-root-token-id root \
    -dev-listen-address "127.0.0.1:$BAO_PORT" -dev-no-store-token -config="$dir/audit.hcl" \
    </dev/null >"$dir/log" 2>&1 &
BENCH_PIDS+=("$!")
deadline=$((SECONDS + 30))
until curl -sf --max-time 2 "$BAO_ADDR/v1/sys/health" >/dev/null 2>&1; do
    [ "$SECONDS" -lt "$deadline" ] || die "bao did not start: $(tail -n 20 "$dir/log")"
    sleep 0.2
done
MIX="kv-read:3,kv-write:1,kv-list:1,approle-login:1,userpass-login:1,transit-encrypt:1,token-lookup:1"
show "VAULT_ADDR=$BAO_ADDR VAULT_TOKEN=root $VBLAST -c 4 -n $REQUESTS --op $MIX"
VAULT_ADDR="$BAO_ADDR" VAULT_TOKEN=root timeout -k 5 "$LIMIT" \
    "$VBLAST" -c 4 -n "$REQUESTS" --op "$MIX" >"$BENCH_TMP/run.txt" 2>&1 || die "the run failed: $(tail -n 5 "$BENCH_TMP/run.txt")"
seed_bytes="$(stat -c %s "$LOG")"
log "seed log: $seed_bytes bytes, $(wc -l <"$LOG") entries"
BIG="$BENCH_TMP/big.log"
target=$((SIZE_MIB * 1024 * 1024))
show "repeat the seed log into $BIG up to $SIZE_MIB MiB"
: >"$BIG"
while [ "$(stat -c %s "$BIG")" -lt "$target" ]; do cat "$LOG" >>"$BIG"; done
size="$(stat -c %s "$BIG")"
cat "$BIG" >/dev/null

V_BPS=""; J_BPS=""; V_RSS=0
for i in $(seq "$RUNS"); do
    show "/usr/bin/time -f '%e %M' $VBLAST profile --format json $BIG > /dev/null"
    timeout -k 5 "$LIMIT" /usr/bin/time -f '%e %M' -o "$BENCH_TMP/v.time" \
        "$VBLAST" profile --format json "$BIG" >/dev/null 2>"$BENCH_TMP/v.err" || die "vblast profile failed: $(tail -n 3 "$BENCH_TMP/v.err")"
    read -r ve vm <"$BENCH_TMP/v.time"
    [ "$vm" -gt "$V_RSS" ] && V_RSS="$vm"
    V_BPS+="$(awk -v s="$size" -v t="$ve" 'BEGIN { printf "%.0f", s / (t > 0 ? t : 0.01) }')"$'\n'
    show "/usr/bin/time -f '%e' jq -c '.request.path' $BIG > /dev/null"
    timeout -k 5 "$LIMIT" /usr/bin/time -f '%e' -o "$BENCH_TMP/j.time" \
        jq -c '.request.path' "$BIG" >/dev/null || die "jq failed"
    je="$(tail -n 1 "$BENCH_TMP/j.time")"
    J_BPS+="$(awk -v s="$size" -v t="$je" 'BEGIN { printf "%.0f", s / (t > 0 ? t : 0.01) }')"$'\n'
    log "run $i: vblast profile ${ve}s (max RSS ${vm} KiB), jq ${je}s"
done
v="$(printf '%s' "$V_BPS" | median)"
j="$(printf '%s' "$J_BPS" | median)"
log ""
log "log: $size bytes ($(awk -v b="$size" 'BEGIN { printf "%.0f", b / 1048576 }') MiB: the seed log of $seed_bytes bytes repeated), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
log "vblast profile: $(awk -v b="$v" 'BEGIN { printf "%.1f", b / 1048576 }') MiB/s (median of $RUNS), max RSS $(awk -v k="$V_RSS" 'BEGIN { printf "%.1f", k / 1024 }') MiB (goal < 64)"
log "jq -c '.request.path': $(awk -v b="$j" 'BEGIN { printf "%.1f", b / 1048576 }') MiB/s (median of $RUNS)"
log "ratio vblast/jq: $(ratio "$v" "$j") (goal >= 10)"
${BUILD_NOTE:+log "$BUILD_NOTE"}
