#!/usr/bin/env python3
"""Bandwidth per GPU benchmark config vs the copy ceiling measured in the same run. For each config
and the total phase: the ceiling (a plain device copy of the bytes each rank must receive at least,
all ranks at once: busiest rank's copy bytes / ceiling time) and, in the same units, those bytes over
the plan's and the golden path's measured time, so plan / ceiling is the reported efficiency.
Input: gpu_runs.json from scripts/gpu_bench.sh.

usage: plot_gpu.py RUNS.json -o OUT.png
"""
import argparse
import json

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("runs")
    ap.add_argument("-o", "--output", required=True)
    a = ap.parse_args()
    runs = [r for r in json.load(open(a.runs)) if r.get("format") == "reshard-run" and "phases" in r]
    configs = []
    for r in runs:
        if r["config"] not in configs:
            configs.append(r["config"])
    total = {(r["config"], r["arguments"]["algo"]): next(p for p in r["phases"] if p["phase"] == "total") for r in runs}

    fig, ax = plt.subplots(figsize=(max(6, 2.4 * len(configs)), 4.5))
    width = 0.27
    xs = range(len(configs))
    def value(c, algo, key):
        t = total.get((c, algo), {})
        if key == "ceiling_gbps":
            return t.get("ceiling_gbps") or 0
        # the lower-bound bytes the ceiling copied, at the measured time
        return (t.get("ceiling_bytes") or 0) / t["time_ms_avg"] / 1e6 if t.get("time_ms_avg") else 0

    series = [("reshard", "time", "plan (reshard)", "tab:blue"),
              ("golden", "time", "golden", "tab:gray"),
              ("reshard", "ceiling_gbps", "copy ceiling", "tab:green")]
    for i, (algo, key, label, color) in enumerate(series):
        vals = [value(c, algo, key) for c in configs]
        bars = ax.bar([x + (i - 1) * width for x in xs], vals, width, label=label, color=color)
        if key == "time" and algo == "reshard":
            for b, c in zip(bars, configs):
                eff = total.get((c, "reshard"), {}).get("efficiency")
                if eff:
                    ax.annotate("eff %.2f" % eff, (b.get_x() + b.get_width() / 2, b.get_height()),
                                ha="center", va="bottom", fontsize=8)
    ax.set_xticks(list(xs))
    ax.set_xticklabels([c.replace(" ", "\n", 2) for c in configs], fontsize=8)
    ax.set_ylabel("GB/s: busiest rank's lower-bound receive bytes / time")
    ax.set_title("reshard run --transport cuda-ipc, all ranks on one H200")
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(a.output, dpi=120)


if __name__ == "__main__":
    main()
