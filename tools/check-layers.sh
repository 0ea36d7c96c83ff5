#!/usr/bin/env bash
# The layer check (docs/design.md): reads the `crate::…` paths between the top-level
# modules of src/ (a file's module is the first part of its path under src/), and those
# through `super::` (any number of them, inline `mod x {}` counted) and `self::`, in
# nested `use` groups too (`use crate::{a::{b, c}, d}` names a and d), and fails
# - when a module names one that the layer table of docs/design.md puts on a layer above
#   its own (the table is read from the document itself, top layer first: a row whose
#   first cell is empty is on the layer of the row above it);
# - when a top-level module of src/ is missing from that table, or the table names one
#   src/ does not have, or a folder of src/ (any depth, `net/h2/`) is not named in the
#   document;
# - when the modules form a cycle, printing the edges it found;
# - when a module other than cli/ and commands/ (and the crate root, lib.rs, which
#   dispatches) names `cli::`.
# The compatibility folders (ab/, vault_benchmark/) span layers: each of their parts is
# checked as a part of the layer it serves (PARTS below; the parts that are modules of
# their own are rows of the table, as `ab/tls.rs`), so that a folder of its own does not
# hide an import upward.
# Comments are not read. Usage: tools/check-layers.sh [SRC_DIR [DESIGN_MD]]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
exec python3 - "${1:-src}" "${2:-docs/design.md}" <<'PY'
import os, re, sys

src = sys.argv[1]
design = sys.argv[2]
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
# (a part not listed here, or the folder's mod.rs, is a module of its own: "ab::x", which
# the table names as `ab/x.rs` or `ab/x/`).
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
                    path_parts = [[path[0], x] for x in second_names(text, end)] or [path]
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

def layer_table(path):
    """The layer table of the design document: {module: (rank, layer name)}, rank 0 at the
    top. Its rows are `| Layer | Folder / file | Its one job |`; the modules of a row are the
    backquoted `name/` and `name.rs` of its second cell."""
    ranks, rank, name, in_table = {}, -1, None, False
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("| Layer |"):
                in_table = True
                continue
            if not in_table:
                continue
            if not line.startswith("|"):
                break
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) < 2 or all(re.fullmatch(r"[-: ]*", c) for c in cells):
                continue  # the line under the header
            if cells[0]:
                rank, name = rank + 1, cells[0]
            for m in re.finditer(r"`([A-Za-z0-9_]+(?:/[A-Za-z0-9_]+)?)(/|\.rs)`", cells[1]):
                ranks.setdefault(m.group(1).replace("/", "::"), (rank, name))
    return ranks

table = layer_table(design)
failed = False
if not table:
    failed = True
    print(f"check-layers: no layer table (a `| Layer |` header) in {design}")
# A compatibility folder's parts are checked in its stead: each is a layer's or a row's.
for (folder, part), node in sorted(PARTS.items()):
    if folder in top_modules and node not in table:
        failed = True
        print(f"check-layers: src/{folder}/{part} counts as {node}, which the layer table of {design} does not name")
for t in sorted(top_modules - FOLDERS - set(table)):
    failed = True
    print(f"check-layers: src/{t} is not in the layer table of {design}")
for t in sorted(t for t in set(table) - top_modules - {"lib", "main"} if "::" not in t):
    failed = True
    print(f"check-layers: the layer table of {design} names {t}, which {src} does not have")
with open(design, encoding="utf-8") as f:
    design_text = f.read()
for root, dirs, _ in os.walk(src):
    for d in dirs:
        folder = os.path.relpath(os.path.join(root, d), src).replace(os.sep, "/") + "/"
        if f"`{folder}`" not in design_text:
            failed = True
            print(f"check-layers: the folder src/{folder} is not named (as `{folder}`) in {design}")
for (a, b), f in sorted(edges.items()):
    if a in table and b in table and table[b][0] < table[a][0]:
        failed = True
        print(
            f"check-layers: {f} ({table[a][1]}) names {b}, which {design} puts above it ({table[b][1]})"
        )
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
print(f"check-layers: {len(edges)} edges between {len(set(a for a, _ in edges) | set(b for _, b in edges))} top-level modules, none upward in the {max(r for r, _ in table.values()) + 1} layers of {design}, no cycle")
PY
