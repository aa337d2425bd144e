#!/usr/bin/env python3
"""Plots any set of `reshard run --json` records: per phase, each record's time (bar: the mean; whisker:
the fastest and slowest timed iteration from samples_ms) with its busiest rank's GB/s printed beside.

usage: plot_runs.py RECORD.json|DIR ... -o OUT.svg|OUT.png [--title T] [--force]

A file may hold one record or a JSON list of them (gpu_runs.json); a directory contributes its *.json.
Records of another format, or with status "error", are skipped with a note on stderr. SVG is written
by this script alone (no plotting library); PNG is the SVG rendered by rsvg-convert (librsvg2-bin,
installed by scripts/install_deps.sh). Records are labelled by file name, algo, transport and window.
"""
import argparse
import glob
import html
import json
import os
import shutil
import subprocess
import sys
import tempfile

COLORS = ["#4477aa", "#ee6677", "#228833", "#ccbb44", "#66ccee", "#aa3377", "#bbbbbb", "#000000"]


def records(paths):
    out = []
    for path in paths:
        files = sorted(glob.glob(os.path.join(path, "*.json"))) if os.path.isdir(path) else [path]
        for f in files:
            try:
                doc = json.load(open(f))
            except (OSError, ValueError) as e:
                sys.exit(f"plot_runs: {f}: {e}")
            for i, r in enumerate(doc if isinstance(doc, list) else [doc]):
                if not isinstance(r, dict) or r.get("format") != "reshard-run":
                    print(f"plot_runs: {f}: skipped an entry that is not a reshard-run record", file=sys.stderr)
                    continue
                if r.get("status") == "error" or not r.get("phases"):
                    print(f"plot_runs: {f}: skipped a record without phases ({r.get('error', 'no rows')})",
                          file=sys.stderr)
                    continue
                a = r.get("arguments", {})
                stem = os.path.splitext(os.path.basename(f))[0] + (f"[{i}]" if isinstance(doc, list) else "")
                label = f"{stem} {a.get('algo', '?')}/{a.get('transport', '?')}"
                if "window" in a:
                    label += f" w{a['window']}"
                out.append((label, r))
    return out


def svg(recs, title):
    names = {p["phase"] for _, r in recs for p in r["phases"]}

    def order(name):  # bulk stages by number, then misc, then total
        if name.startswith("bulk.pp") and name[7:].isdigit():
            return (0, int(name[7:]), name)
        return (1 if name == "misc" else 2 if name == "total" else 3, 0, name)

    phases = sorted(names, key=order)
    rows = [(ph, i) for ph in phases for i in range(len(recs))]
    longest = 0.0
    for _, r in recs:
        for p in r["phases"]:
            longest = max(longest, max(p.get("samples_ms") or [p["time_ms_avg"]]))
    longest = longest or 1.0
    bar, gap, left, width = 16, 10, 110, 520
    top = 40
    height = top + len(rows) * bar + len(phases) * gap + 30 + 18 * len(recs)
    e = html.escape
    s = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 200}" height="{height}" '
         f'font-family="sans-serif" font-size="11">',
         f'<rect width="100%" height="100%" fill="white"/>',
         f'<text x="10" y="20" font-size="14">{e(title)}</text>']
    y = top
    for ph in phases:
        s.append(f'<text x="10" y="{y + bar * len(recs) / 2 + 4:.1f}">{e(ph)}</text>')
        for i, (_, r) in enumerate(recs):
            p = next((q for q in r["phases"] if q["phase"] == ph), None)
            if p is not None:
                w = p["time_ms_avg"] / longest * width
                s.append(f'<rect x="{left}" y="{y}" width="{w:.1f}" height="{bar - 3}" fill="{COLORS[i % len(COLORS)]}">'
                         f'<title>{e(ph)}: {p["time_ms_avg"]:.3f} ms</title></rect>')
                samples = p.get("samples_ms") or []
                if len(samples) > 1:
                    x0, x1 = (left + v / longest * width for v in (min(samples), max(samples)))
                    cy = y + (bar - 3) / 2
                    s.append(f'<line x1="{x0:.1f}" y1="{cy:.1f}" x2="{x1:.1f}" y2="{cy:.1f}" stroke="black"/>')
                rate = p.get("busiest_gbps", p.get("busbw_gbps", 0.0))
                s.append(f'<text x="{left + w + 6:.1f}" y="{y + bar - 5}">{p["time_ms_avg"]:.2f} ms, '
                         f'{rate:.2f} GB/s busiest</text>')
            y += bar
        y += gap
    s.append(f'<line x1="{left}" y1="{y}" x2="{left + width}" y2="{y}" stroke="black"/>')
    s.append(f'<text x="{left}" y="{y + 14}">0</text>')
    s.append(f'<text x="{left + width}" y="{y + 14}" text-anchor="end">{longest:.2f} ms</text>')
    y += 30
    for i, (label, _) in enumerate(recs):
        s.append(f'<rect x="{left}" y="{y - 9}" width="10" height="10" fill="{COLORS[i % len(COLORS)]}"/>')
        s.append(f'<text x="{left + 16}" y="{y}">{e(label)}</text>')
        y += 18
    s.append("</svg>")
    return "\n".join(s) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("inputs", nargs="+")
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--title", default="reshard run: time per phase (bar: mean, whisker: fastest to slowest)")
    ap.add_argument("--force", action="store_true")
    a = ap.parse_args()
    png = a.output.endswith(".png")
    if not png and not a.output.endswith(".svg"):
        sys.exit(f"plot_runs: {a.output}: the output must end in .svg or .png")
    if os.path.lexists(a.output) and not a.force:
        sys.exit(f"plot_runs: {a.output} exists; --force replaces it")
    if png and shutil.which("rsvg-convert") is None:
        sys.exit("plot_runs: PNG needs rsvg-convert (librsvg2-bin: scripts/install_deps.sh); write .svg instead")
    recs = records(a.inputs)
    if not recs:
        sys.exit("plot_runs: no reshard-run records with phases in " + " ".join(a.inputs))
    text = svg(recs, a.title)
    out_dir = os.path.dirname(os.path.abspath(a.output))
    with tempfile.NamedTemporaryFile("w", dir=out_dir, suffix=".svg", delete=False) as t:
        t.write(text)
    try:
        if png:
            subprocess.run(["rsvg-convert", "-o", a.output, t.name], check=True)
        else:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(t.name, 0o666 & ~umask)  # a temporary file is private; the plot is not
            os.replace(t.name, a.output)
    finally:
        if os.path.exists(t.name):
            os.unlink(t.name)
    print(f"plot_runs: wrote {a.output} ({len(recs)} records)")


if __name__ == "__main__":
    main()
