#!/usr/bin/env bash
# The layer check (docs/design.md): reads the `crate::…` paths between the top-level
# modules of src/ (a file's module is the first part of its path under src/), and those
# through `super::` (any number of them, inline `mod x {}` counted) and `self::`, in
# nested `use` groups too (`use crate::{a::{b, c}, d}` names a and d), and fails
# when they form a cycle, printing the edges it found; it also fails when a module other
# than cli/ and commands/ (and the crate root, lib.rs, which dispatches) names `cli::`.
# The compatibility folders (ab/, vault_benchmark/) span layers: each of their parts is
# checked as a part of the layer it serves (PARTS below, the rows of docs/design.md), so
# that a folder of its own does not hide an import upward.
# Comments are not read. Usage: tools/check-layers.sh [SRC_DIR]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
exec python3 - "${1:-src}" <<'PY'
import os, re, sys

src = sys.argv[1]
edges = {}          # (from, to) -> a file that has it
cli_named = []      # files outside cli/ and commands/ that name cli::
cli_path = re.compile(r"(?<![A-Za-z0-9_])cli::")
# A path that starts at the crate root, at a parent module (super::, any number of them) or
# at the module itself (self::), followed by a name or a `{...}` group.
start = re.compile(r"(?<![A-Za-z0-9_:])((?:crate|self|super)(?:\s*::\s*super)*)\s*::\s*")
inline_mod = re.compile(r"\bmod\s+([A-Za-z_][A-Za-z0-9_]*)\s*\{")
top_modules = set()
for entry in os.listdir(src):
    if entry.endswith(".rs"):
        top_modules.add(entry[:-3])
    elif os.path.isdir(os.path.join(src, entry)):
        top_modules.add(entry)
top_modules -= {"lib", "main"}

# The parts of the compatibility folders, each counted as the module of the layer it serves
# (a part not listed here, or the folder's mod.rs, is a module of its own: "ab::x").
PARTS = {
    ("ab", "cli"): "cli",
    ("ab", "command"): "commands",
    ("ab", "options"): "commands",
    ("ab", "report"): "report",
    ("ab", "tls"): "ab::tls",
    ("vault_benchmark", "cli"): "cli",
    ("vault_benchmark", "command"): "commands",
    ("vault_benchmark", "settle"): "commands",
    ("vault_benchmark", "hcl"): "vault_benchmark::hcl",
    ("vault_benchmark", "report"): "report",
}
FOLDERS = {a for a, _ in PARTS}

def node_of(path):
    """The checked module a path under src/ belongs to: its top-level module, or for a
    compatibility folder the layer its part serves."""
    if path and path[0] in FOLDERS and len(path) > 1:
        return PARTS.get((path[0], path[1]), f"{path[0]}::{path[1]}")
    return path[0] if path else "lib"

def second_names(code, pos):
    """After `folder`: the names of `::x` or `::{x, y}` at pos (empty when none)."""
    m = re.compile(r"\s*::\s*").match(code, pos)
    return first_names(code, m.end()) if m else []

def code_of(text):
    """The text without // comments and /* */ blocks (strings are kept: a rough cut)."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return "\n".join(re.sub(r"//.*", "", line) for line in text.splitlines())

def block_end(code, open_pos):
    depth = 0
    for j in range(open_pos, len(code)):
        if code[j] == "{":
            depth += 1
        elif code[j] == "}":
            depth -= 1
            if depth == 0:
                return j
    return len(code)

def group_items(code, open_pos):
    """The top-level items of the `{...}` group opening at open_pos (nested groups are
    kept whole inside their item: `a::{b, c}` is one item, whose first name is `a`)."""
    items, depth, cur = [], 0, []
    for j in range(open_pos, len(code)):
        ch = code[j]
        if ch == "{":
            depth += 1
            if depth == 1:
                continue
        elif ch == "}":
            depth -= 1
            if depth == 0:
                items.append("".join(cur))
                return items
        if depth == 1 and ch == ",":
            items.append("".join(cur)); cur = []
        else:
            cur.append(ch)
    return items

def first_names_at(code, pos):
    """first_names, each with the text and the place where the rest of its path follows
    (`crate::ab::report`: `ab`, then `::report`)."""
    m = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*|\{)").match(code, pos)
    if not m:
        return []
    if m.group(1) != "{":
        return [(m.group(1), code, m.end())]
    out = []
    for item in group_items(code, m.end() - 1):
        n = re.match(r"\s*([A-Za-z_][A-Za-z0-9_]*)", item)
        if n:
            out.append((n.group(1), item, n.end()))
    return out

def first_names(code, pos):
    """The first path segment(s) named at pos: one name, or each top-level item of a group."""
    m = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*|\{)").match(code, pos)
    if not m:
        return []
    if m.group(1) != "{":
        return [m.group(1)]
    out = []
    for item in group_items(code, m.end() - 1):
        n = re.match(r"\s*([A-Za-z_][A-Za-z0-9_]*)", item)
        if n:
            out.append(n.group(1))
    return out

for root, _, files in os.walk(src):
    for name in files:
        if not name.endswith(".rs"):
            continue
        full = os.path.join(root, name)
        rel = os.path.relpath(full, src)
        parts = rel[:-3].split(os.sep)
        if parts[-1] in ("mod", "lib", "main"):
            parts = parts[:-1]
        top = node_of(parts)
        with open(full, encoding="utf-8") as f:
            code = code_of(f.read())
        mods = [(m.start(), block_end(code, m.end() - 1), m.group(1)) for m in inline_mod.finditer(code)]
        targets = set()
        for m in start.finditer(code):
            # The module the path is written in: the file's, then its inline `mod x {}`s.
            here = parts + [n for a, b, n in sorted(mods) if a < m.start() < b]
            ups = m.group(1).replace(" ", "").split("::")
            if ups[0] == "crate":
                base = []
            else:
                base = list(here)
                for u in ups:
                    if u == "super":
                        base = base[:-1]
            for n, text, end in first_names_at(code, m.end()):
                path = base + [n]
                if path[0] not in top_modules:
                    continue
                if path[0] in FOLDERS and len(path) == 1:
                    # `crate::ab::{report, tls}`: each part named is a module of its own.
                    path_parts = [[path[0], s] for s in second_names(text, end)] or [path]
                else:
                    path_parts = [path]
                for pp in path_parts:
                    targets.add(node_of(pp))
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
