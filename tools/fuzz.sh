#!/usr/bin/env bash
# Coverage-guided fuzzing of the response parser (src/http.rs), the TLS record layer
# (src/tlsio.rs), the HPACK decoder (src/net/h2/hpack.rs), the HTTP/2 frame reader
# (src/net/h2/conn.rs) and the audit log's fast line reader against serde_json
# (src/profile/scan.rs) with cargo-fuzz (libFuzzer), on the stable toolchain.
#
#   tools/fuzz.sh SECONDS [TARGET...]     targets: http_response tls_records hpack h2_frames
#                                         audit_line
#                                         (default all)
#
# Each target runs SECONDS, starting from its seeds (fuzz/seeds/TARGET) and the corpus it
# grew before ($FUZZ_WORK/corpus/TARGET, default under the cargo target directory). A crash
# is saved under $FUZZ_WORK/artifacts/TARGET/ and fails the script; replay one with
#   tools/fuzz.sh 0 TARGET -- ARTIFACT      (or add it to fuzz/seeds/TARGET: the unit tests
# replay every seed). Debug assertions (integer overflow included) are on; no sanitizer:
# the code under test is safe Rust, and libFuzzer runs about twice as fast without ASan.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

secs=${1:?usage: tools/fuzz.sh SECONDS [TARGET...] [-- FILE...]}
shift
targets=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
    targets+=("$1")
    shift
done
[ "${1:-}" = "--" ] && shift
replay=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(http_response tls_records hpack h2_frames audit_line)

if ! command -v cargo-fuzz >/dev/null 2>&1; then
    echo "fuzz: installing cargo-fuzz" >&2
    cargo install cargo-fuzz --locked >&2
fi
# cargo-fuzz asks for nightly features (-Z flags); RUSTC_BOOTSTRAP lets the stable
# toolchain accept them.
export RUSTC_BOOTSTRAP=1
work=${FUZZ_WORK:-${CARGO_TARGET_DIR:-$PWD/target}/fuzz-work}
mkdir -p "$work"
# FUZZ_JOBS=N runs N fuzzing processes per target (libFuzzer then logs to fuzz-N.log).
parallel=()
if [ "${FUZZ_JOBS:-1}" -gt 1 ]; then
    parallel=(-jobs="$FUZZ_JOBS" -workers="$FUZZ_JOBS")
fi

for t in "${targets[@]}"; do
    mkdir -p "$work/corpus/$t" "$work/artifacts/$t"
    if [ ${#replay[@]} -gt 0 ]; then
        cargo fuzz run --fuzz-dir fuzz --target-dir "$work/target" -s none -a "$t" \
            "${replay[@]}"
        continue
    fi
    log="$work/$t.log"
    echo "fuzz: $t for ${secs}s (libFuzzer's output: $log)" >&2
    if ! cargo fuzz run --fuzz-dir fuzz --target-dir "$work/target" -s none -a "$t" \
        "$work/corpus/$t" "fuzz/seeds/$t" -- \
        -max_total_time="$secs" -max_len=8192 -timeout=10 -rss_limit_mb=2048 \
        "${parallel[@]}" \
        -artifact_prefix="$work/artifacts/$t/" -print_final_stats=1 >"$log" 2>&1; then
        tail -n 60 "$log" >&2
        echo "fuzz: $t FAILED; the input is under $work/artifacts/$t/" >&2
        exit 1
    fi
    runs=$(awk '/stat::number_of_executed_units/ { print $2 }' "$log")
    cov=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | sed -E 's/.*cov: ([0-9]+).*corp: ([0-9]+).*/\1 edges, corpus \2/')
    echo "fuzz: $t: ${runs:-?} runs in ${secs}s, no failure ($cov)" >&2
done
