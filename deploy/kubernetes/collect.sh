#!/usr/bin/env bash
# usage: deploy/kubernetes/collect.sh [-n NAMESPACE] [--job NAME] [--from-logs DIR] [--keep DIR] [REPORT OPTIONS...]
# Gathers the shards of the Indexed Job (default name: vblast) and runs `vblast report` over
# them: each pod printed its results file to its log between the marker lines
# (`vblast --output -`); this takes it out of `kubectl logs` of every pod of the job (or of
# saved logs, one file per pod, with --from-logs DIR), checks that every pod gave one, and
# merges them (vblast report checks they are one run's shards, each once). Options after
# the script's own go to `vblast report` (--format json, --output merged.json, --latency).
# VBLAST names the binary (default: vblast on PATH); KUBECTL the kubectl.
set -euo pipefail
JOB=vblast; NS=(); FROM=""; KEEP=""
VBLAST="${VBLAST:-vblast}"; KUBECTL="${KUBECTL:-kubectl}"
while [ $# -gt 0 ]; do
    case "$1" in
        -n|--namespace) NS=(-n "$2"); shift 2 ;;
        --job) JOB="$2"; shift 2 ;;
        --from-logs) FROM="$2"; shift 2 ;;
        --keep) KEEP="$2"; shift 2 ;;
        *) break ;;
    esac
done
die() { printf 'collect: %s\n' "$*" >&2; exit 2; }
WORK="$(mktemp -d "${TMPDIR:-/tmp}/vblast-collect.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/logs" "$WORK/shards"
if [ -n "$FROM" ]; then
    [ -d "$FROM" ] || die "$FROM is not a directory of pod logs"
    cp "$FROM"/* "$WORK/logs/" 2>/dev/null || die "no logs in $FROM"
else
    pods="$("$KUBECTL" get pods "${NS[@]}" -l "job-name=$JOB" \
        -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}')"
    [ -n "$pods" ] || die "no pods of job $JOB"
    for p in $pods; do
        "$KUBECTL" logs "${NS[@]}" "$p" >"$WORK/logs/$p.log" || die "cannot read the log of pod $p"
    done
fi
for log in "$WORK/logs"/*; do
    name="$(basename "$log")"; name="${name%.log}"
    awk '$0 == "----- BEGIN VBLAST RESULTS -----" { on = 1; next }
         $0 == "----- END VBLAST RESULTS -----" { on = 0; done = 1; next }
         on { print }
         END { exit done ? 0 : 1 }' "$log" >"$WORK/shards/$name.json" \
        || die "$name printed no complete results file (did the pod finish?)"
done
[ -z "$KEEP" ] || { mkdir -p "$KEEP"; cp "$WORK/shards"/*.json "$KEEP/"; }
"$VBLAST" report "$WORK/shards"/*.json "$@"
