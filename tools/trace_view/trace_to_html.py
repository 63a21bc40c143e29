#!/usr/bin/env python3
"""Renders a superkernel trace.json (Chrome Trace Event format) as a
self-contained HTML timeline: one row per track (core 0, core 1, ..., host),
a box per slice, colored by category (sub-kernel, wait, eager block, launch).
For a quick look in any browser without loading Perfetto; Perfetto and
chrome://tracing open the same trace.json interactively.

usage: trace_to_html.py TRACE_JSON OUT_HTML [--from US] [--span US]
"""
import html
import json
import sys

COLORS = {"subkernel": "#4e79a7", "wait": "#e15759", "eager": "#59a14f",
          "launch": "#9c755f", "superkernel": "#f28e2b"}


def main():
    args = sys.argv[1:]
    if len(args) < 2:
        sys.exit(__doc__)
    src, out = args[0], args[1]
    start = float(args[args.index("--from") + 1]) if "--from" in args else None
    span = float(args[args.index("--span") + 1]) if "--span" in args else None
    with open(src) as f:
        trace = json.load(f)
    events = trace["traceEvents"]
    names = {e["tid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    slices = [e for e in events if e["ph"] == "X"]
    t0 = min(e["ts"] for e in slices) if start is None else start
    t1 = max(e["ts"] + e["dur"] for e in slices) if span is None else t0 + span
    tids = sorted(names)
    width, row, left = 1400, 46, 90
    scale = (width - left - 10) / max(t1 - t0, 1e-9)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{row * len(tids) + 60}" '
             'font-family="sans-serif" font-size="11">']
    for i, tid in enumerate(tids):
        y = 30 + i * row
        parts.append(f'<text x="4" y="{y + row / 2 + 4}" font-size="13">{html.escape(names[tid])}</text>')
        parts.append(f'<line x1="{left}" y1="{y + row}" x2="{width}" y2="{y + row}" stroke="#ddd"/>')
        for e in slices:
            if e["tid"] != tid or e["ts"] + e["dur"] < t0 or e["ts"] > t1:
                continue
            x = left + (e["ts"] - t0) * scale
            w = max(e["dur"] * scale, 1.0)
            color = COLORS.get(e["cat"], "#999")
            label = html.escape(e["name"])
            parts.append(f'<rect x="{x:.1f}" y="{y + 6}" width="{w:.1f}" height="{row - 12}" fill="{color}" '
                         f'stroke="#fff"><title>{label} {e["dur"]:.2f} us</title></rect>')
            if w > 7 * len(e["name"]):
                parts.append(f'<text x="{x + 3:.1f}" y="{y + row / 2 + 4}" fill="#fff">{label}</text>')
    for k in range(6):
        t = t0 + (t1 - t0) * k / 5
        x = left + (t - t0) * scale
        parts.append(f'<text x="{x:.1f}" y="18" fill="#555">{t - t0:.1f} us</text>')
    legend_y = 30 + len(tids) * row + 20
    for k, (cat, color) in enumerate(COLORS.items()):
        parts.append(f'<rect x="{left + k * 140}" y="{legend_y - 10}" width="12" height="12" fill="{color}"/>')
        parts.append(f'<text x="{left + k * 140 + 16}" y="{legend_y}">{cat}</text>')
    parts.append("</svg>")
    with open(out, "w") as f:
        f.write(f"<!doctype html><meta charset=utf-8><title>{html.escape(src)}</title>"
                f"<body style='margin:8px;background:#fff'>{''.join(parts)}</body>")


if __name__ == "__main__":
    main()
