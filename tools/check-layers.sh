#!/usr/bin/env bash
# The layer check (docs/design.md): reads the `crate::…` paths between the top-level
# modules of src/ (a file's module is the first part of its path under src/), and fails
# when they form a cycle, printing the edges it found; it also fails when a module other
# than cli/ and commands/ (and the crate root, lib.rs, which dispatches) names `cli::`.
# Comments are not read. Usage: tools/check-layers.sh [SRC_DIR]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
exec python3 - "${1:-src}" <<'PY'
import os, re, sys

src = sys.argv[1]
edges = {}          # (from, to) -> a file that has it
cli_named = []      # files outside cli/ and commands/ that name cli::
use_group = re.compile(r"\bcrate::\{([^}]*)\}")
path = re.compile(r"\bcrate::([A-Za-z_][A-Za-z0-9_]*)")
cli_path = re.compile(r"(?<![A-Za-z0-9_])cli::")

def code_of(text):
    """The text without // comments and /* */ blocks (strings are kept: a rough cut)."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return "\n".join(re.sub(r"//.*", "", line) for line in text.splitlines())

for root, _, files in os.walk(src):
    for name in files:
        if not name.endswith(".rs"):
            continue
        full = os.path.join(root, name)
        rel = os.path.relpath(full, src)
        top = rel.split(os.sep)[0]
        if top.endswith(".rs"):
            top = top[:-3]
        with open(full, encoding="utf-8") as f:
            code = code_of(f.read())
        targets = set(path.findall(code))
        for group in use_group.findall(code):
            for item in group.split(","):
                item = item.strip().split("::")[0].strip()
                if item and item != "self":
                    targets.add(item)
        for t in targets:
            if t != top and top not in ("lib", "main"):
                edges.setdefault((top, t), rel)
        if top not in ("cli", "commands", "lib", "main") and cli_path.search(code):
            cli_named.append(rel)

graph = {}
for (a, b) in edges:
    graph.setdefault(a, set()).add(b)

# Tarjan's strongly connected components: a component of more than one module is a cycle.
index, low, stack, on, comps = {}, {}, [], set(), []
def visit(v):
    index[v] = low[v] = len(index)
    stack.append(v); on.add(v)
    for w in sorted(graph.get(v, ())):
        if w not in index:
            visit(w); low[v] = min(low[v], low[w])
        elif w in on:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        comp = []
        while True:
            w = stack.pop(); on.discard(w); comp.append(w)
            if w == v:
                break
        if len(comp) > 1:
            comps.append(sorted(comp))
sys.setrecursionlimit(10000)
for v in sorted(graph):
    if v not in index:
        visit(v)

failed = False
for comp in comps:
    failed = True
    print(f"check-layers: a cycle between the modules {', '.join(comp)}; their edges:")
    for (a, b), f in sorted(edges.items()):
        if a in comp and b in comp:
            print(f"  {a} -> {b}  ({f})")
for f in sorted(cli_named):
    failed = True
    print(f"check-layers: {f} names cli:: (only cli/ and commands/ may: flags stay above the library)")
if failed:
    sys.exit(1)
print(f"check-layers: {len(edges)} edges between {len(set(a for a, _ in edges) | set(b for _, b in edges))} top-level modules, no cycle")
PY
