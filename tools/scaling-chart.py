#!/usr/bin/env python3
"""Draws one scaling curve (a CSV of tools/bench/scaling.sh) as a self-contained SVG.

usage: tools/scaling-chart.py CSV SVG [--title T] [--x-label L] [--log-x] [--note N]

The CSV's first row names the columns: `client`, `x`, then one column per figure (for
example `cpu_us_per_req`, `rss_mib`); each further row is one client at one point. Every
figure column becomes a panel, with one line per client over x; an empty cell is a point
that client did not reach (left out, and said in the panel's footnote). Columns named
`note` or starting with `n_` are kept in the CSV only.

The SVG has no external reference (fonts are the browser's sans-serif). Its root carries
`data-points` (points drawn in all) and a small script that, when the SVG is opened by
itself in a browser, measures its lines and writes their total length in `data-drawn`
(tests/integration/scaling.rs reads it in headless Chromium); shown through an <img>, as
in docs/benchmarks.md, the script does not run and the chart is the same.
Python standard library only.
"""

import csv
import math
import sys
from xml.sax.saxutils import escape

COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2"]
PANEL_W, PANEL_H = 420, 280
MARGIN_L, MARGIN_R, MARGIN_T, MARGIN_B = 64, 16, 56, 64
LABELS = {
    "cpu_us_per_req": "client CPU per request (us)",
    "rss_mib": "peak RSS (MiB)",
    "rps": "requests per second",
    "achieved_rps": "achieved requests per second",
    "merge_s": "merge wall time (s)",
    "kib_per_conn": "RSS per connection (KiB)",
}


def args(argv):
    opts = {"title": "", "x_label": "x", "log_x": False, "note": ""}
    rest = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--log-x":
            opts["log_x"] = True
        elif a in ("--title", "--x-label", "--note"):
            i += 1
            opts[a[2:].replace("-", "_")] = argv[i]
        else:
            rest.append(a)
        i += 1
    if len(rest) != 2:
        sys.exit(__doc__.split("\n\n")[1])
    return rest[0], rest[1], opts


def number(cell):
    try:
        v = float(cell)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def read(path):
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        sys.exit(f"{path}: no rows")
    cols = [c for c in rows[0].keys() if c not in ("client", "x", "note") and not c.startswith("n_")]
    clients = []
    for r in rows:
        if r["client"] not in clients:
            clients.append(r["client"])
    return rows, cols, clients


def ticks(lo, hi, log):
    if log:
        out, p = [], math.floor(math.log10(lo))
        while 10 ** p <= hi * 1.0001:
            for m in (1, 2, 5):
                v = m * 10 ** p
                if lo * 0.9999 <= v <= hi * 1.0001:
                    out.append(v)
            p += 1
        return out or [lo, hi]
    if hi <= lo:
        hi = lo + 1
    raw = (hi - lo) / 5
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    v = math.floor(lo / step) * step
    out = []
    while v <= hi + step * 1e-9:
        out.append(round(v, 10))
        v += step
    return out


def fmt(v):
    if v == 0:
        return "0"
    if abs(v) >= 10000:
        return f"{v / 1000:g}k"
    if abs(v) >= 100:
        return f"{v:.0f}"
    return f"{v:.3g}"


def panel(rows, col, clients, opts, ox):
    """One panel's SVG elements (and the points drawn), at x offset ox."""
    pts = {c: [] for c in clients}
    missing = []
    for r in rows:
        x, y = number(r["x"]), number(r.get(col))
        if x is None or (opts["log_x"] and x <= 0):
            continue
        if y is None:
            missing.append(f"{r['client']} at {fmt(x)}")
        else:
            pts[r["client"]].append((x, y))
    xs = [x for p in pts.values() for x, _ in p] or [1, 10]
    ys = [y for p in pts.values() for _, y in p] or [0, 1]
    log = opts["log_x"]
    xlo, xhi = min(xs), max(xs)
    if xhi == xlo:
        xlo, xhi = (xlo / 2, xhi * 2) if log else (xlo - 1, xhi + 1)
    yt = ticks(0, max(ys) * 1.1 or 1, False)
    ylo, yhi = yt[0], yt[-1]
    w = PANEL_W - MARGIN_L - MARGIN_R
    h = PANEL_H - MARGIN_T - MARGIN_B
    fx = (lambda v: math.log10(v)) if log else (lambda v: v)

    def sx(v):
        return ox + MARGIN_L + (fx(v) - fx(xlo)) / (fx(xhi) - fx(xlo)) * w

    def sy(v):
        return MARGIN_T + h - (v - ylo) / (yhi - ylo) * h

    el = [f'<g class="panel" data-column="{escape(col)}">']
    el.append(f'<text x="{ox + MARGIN_L}" y="{MARGIN_T - 12}" class="ptitle">{escape(LABELS.get(col, col))}</text>')
    el.append(f'<rect x="{ox + MARGIN_L}" y="{MARGIN_T}" width="{w}" height="{h}" class="frame"/>')
    for t in yt:
        y = sy(t)
        el.append(f'<line x1="{ox + MARGIN_L}" x2="{ox + MARGIN_L + w}" y1="{y:.1f}" y2="{y:.1f}" class="grid"/>')
        el.append(f'<text x="{ox + MARGIN_L - 6}" y="{y + 4:.1f}" class="ytick">{fmt(t)}</text>')
    for t in ticks(xlo, xhi, log) if log else sorted(set(xs)):
        x = sx(t)
        el.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{MARGIN_T}" y2="{MARGIN_T + h}" class="grid"/>')
        el.append(f'<text x="{x:.1f}" y="{MARGIN_T + h + 16}" class="xtick">{fmt(t)}</text>')
    el.append(f'<text x="{ox + MARGIN_L + w / 2}" y="{MARGIN_T + h + 36}" class="xlabel">{escape(opts["x_label"])}</text>')
    drawn = 0
    for i, c in enumerate(clients):
        p = sorted(pts[c])
        if not p:
            continue
        color = COLORS[i % len(COLORS)]
        d = " ".join(f"{'M' if j == 0 else 'L'}{sx(x):.1f},{sy(y):.1f}" for j, (x, y) in enumerate(p))
        el.append(f'<path class="series" data-client="{escape(c)}" d="{d}" stroke="{color}"/>')
        for x, y in p:
            el.append(f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="3" fill="{color}"><title>{escape(c)}: {fmt(y)} at {fmt(x)}</title></circle>')
        drawn += len(p)
    if missing:
        text = "not reached: " + ", ".join(missing)
        if len(text) > 70:
            text = text[:67] + "..."
        el.append(f'<text x="{ox + MARGIN_L}" y="{MARGIN_T + h + 52}" class="foot">{escape(text)}</text>')
    el.append("</g>")
    return el, drawn


SCRIPT = """<script><![CDATA[
(function () {
  var total = 0;
  var paths = document.querySelectorAll('path.series');
  for (var i = 0; i < paths.length; i++) { total += paths[i].getTotalLength(); }
  document.documentElement.setAttribute('data-drawn', total.toFixed(1));
})();
]]></script>"""


def render(rows, cols, clients, opts):
    width = PANEL_W * len(cols)
    legend_h = 24
    height = PANEL_H + legend_h + (18 if opts["note"] else 0) + 36
    body, points = [], 0
    for k, col in enumerate(cols):
        el, n = panel(rows, col, clients, opts, k * PANEL_W)
        body.append('<g transform="translate(0,28)">')
        body.extend(el)
        body.append("</g>")
        points += n
    lx = MARGIN_L
    ly = PANEL_H + 28 + 14
    for i, c in enumerate(clients):
        color = COLORS[i % len(COLORS)]
        body.append(f'<g class="legend"><rect x="{lx}" y="{ly - 9}" width="14" height="4" fill="{color}"/><text x="{lx + 20}" y="{ly}">{escape(c)}</text></g>')
        lx += 30 + 8 * len(c)
    if opts["note"]:
        body.append(f'<text x="{MARGIN_L}" y="{ly + 20}" class="foot">{escape(opts["note"])}</text>')
    style = (
        "text{font-family:sans-serif;font-size:11px;fill:#222}"
        ".title{font-size:15px;font-weight:bold}.ptitle{font-size:12px;font-weight:bold}"
        ".frame{fill:#fff;stroke:#888}.grid{stroke:#e4e4e4}"
        ".ytick{text-anchor:end}.xtick,.xlabel{text-anchor:middle}.foot{fill:#666;font-size:10px}"
        ".series{fill:none;stroke-width:2}"
    )
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="scaling" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" data-points="{points}">'
        f'<style>{style}</style><rect width="100%" height="100%" fill="#fafafa"/>'
        f'<text x="{MARGIN_L}" y="22" class="title">{escape(opts["title"])}</text>'
    )
    return head + "\n".join(body) + SCRIPT + "</svg>\n", points


def main():
    src, dst, opts = args(sys.argv[1:])
    rows, cols, clients = read(src)
    if not cols:
        sys.exit(f"{src}: no figure columns beside client and x")
    svg, points = render(rows, cols, clients, opts)
    with open(dst, "w", encoding="utf-8") as f:
        f.write(svg)
    print(f"{dst}: {len(cols)} panels, {len(clients)} clients, {points} points")


if __name__ == "__main__":
    main()
