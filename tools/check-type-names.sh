#!/usr/bin/env bash
# One meaning per type name (docs/design.md): fails when two struct, enum, trait or type
# definitions in src/ share a name, naming each place. Run by tools/test.sh and a unit test.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
python3 - <<'PY'
import os, re, sys
pat = re.compile(r'^\s*(?:pub(?:\([a-z:]+\))?\s+)?(?:struct|enum|trait|type)\s+([A-Z][A-Za-z0-9]*)')
seen = {}
for root, _, files in os.walk("src"):
    for f in sorted(files):
        if not f.endswith(".rs"):
            continue
        path = os.path.join(root, f)
        in_tests = False
        for n, line in enumerate(open(path, encoding="utf-8"), 1):
            if line.startswith("#[cfg(test)]"):
                in_tests = True  # test-only helper types may repeat
            if in_tests:
                continue
            m = pat.match(line)
            if m:
                seen.setdefault(m.group(1), []).append(f"{path}:{n}")
dups = {k: v for k, v in seen.items() if len(v) > 1}
for name, places in sorted(dups.items()):
    print(f"check-type-names: {name} is defined {len(places)} times: {', '.join(places)}", file=sys.stderr)
if dups:
    sys.exit(1)
print(f"check-type-names: {len(seen)} type names, each defined once")
PY
