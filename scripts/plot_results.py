#!/usr/bin/env python3
"""Plots from results JSON into results/*.png (needs python3-matplotlib: scripts/install_deps.sh --plots).

usage:
  plot_results.py collect-planning [--build DIR]   time `reshard plan` on every model in ../shared/models
                                                   -> results/planning_times.json
  plot_results.py plot                             results/*.json -> results/*.png

Plots: run_bandwidth.png (busbw and plan efficiency per measured config and phase, from `reshard run
--json` records), predicted_vs_published.png (results/predictions.json), predicted_vs_measured.png
(results/calibration.json from scripts/calibrate.sh --json), planning_time.png (planning time vs
model size).
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "results")


def collect_planning(build):
    reshard = os.path.join(build, "apps", "reshard", "reshard")
    models = os.environ.get("RESHARD_TEST_MODELS_DIR", os.path.join(ROOT, "..", "shared", "models"))
    rows = []
    for path in sorted(glob.glob(os.path.join(models, "*.json"))):
        doc = json.load(open(path))
        params = doc.get("params", doc)
        nbytes = 0
        moe = False
        for name, p in params.items():
            n = 1
            for d in p["shape"]:
                n *= d
            size = {"float32": 4, "F32": 4, "float8_e4m3fn": 1, "F8_E4M3": 1}.get(p["dtype"].replace("torch.", ""), 2)
            nbytes += n * size
            moe = moe or ".experts." in name
        flags = ["--train-gpus", "8", "--train", "ep=8" if moe else "tp=1", "--gen-gpus", "8", "--gen", "tp=8"]
        if "deepseek" in os.path.basename(path):
            flags += ["--exclude", r"^model\.layers\.61\."]
        out = os.path.join(build, "planning.cbor")
        t0 = time.perf_counter()
        r = subprocess.run([reshard, "plan", "--model", path, *flags, "-o", out, "--force"], capture_output=True, text=True)
        dt = time.perf_counter() - t0
        if r.returncode != 0:
            print("collect-planning: %s: %s" % (path, r.stderr.strip().splitlines()[-1:]), file=sys.stderr)
            continue
        rows.append({"model": doc.get("model", os.path.basename(path)), "file": os.path.basename(path), "bytes": nbytes,
                     "tensors": len(params), "config": " ".join(flags), "seconds": dt})
        print("collect-planning: %-40s %8.2f GB %7.3f s" % (os.path.basename(path), nbytes / 1e9, dt), file=sys.stderr)
    json.dump({"format": "reshard-planning-times", "version": 1,
               "note": "wall time of `reshard plan` (load metadata + plan + write CBOR), one run each",
               "rows": rows}, open(os.path.join(RESULTS, "planning_times.json"), "w"), indent=1)


def load(path):
    try:
        return json.load(open(path))
    except (OSError, ValueError):
        return None


def plot(plt):
    made = []
    runs = []
    for f in sorted(glob.glob(os.path.join(RESULTS, "*.json"))):
        d = load(f)
        if isinstance(d, dict) and d.get("format") == "reshard-run":
            runs.append((os.path.basename(f)[:-5], d))
    if runs:
        fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4))
        labels, busbw, eff = [], [], []
        for name, d in runs:
            for ph in d["phases"]:
                labels.append("%s\n%s" % (name, ph["phase"]))
                busbw.append(ph.get("busiest_gbps", ph.get("busbw_gbps")))
                eff.append(ph["plan_efficiency"])
        a.bar(range(len(labels)), busbw)
        a.set_xticks(range(len(labels)), labels, rotation=60, ha="right", fontsize=7)
        a.set_ylabel("busiest rank's bytes / time (GB/s)")
        a.set_title("Measured bandwidth per config and phase")
        b.bar(range(len(labels)), eff, color="tab:green")
        b.set_xticks(range(len(labels)), labels, rotation=60, ha="right", fontsize=7)
        b.set_ylim(0, 1.05)
        b.set_ylabel("plan efficiency (lower bound / busiest bytes)")
        b.set_title("Plan efficiency per config and phase")
        fig.tight_layout()
        made.append(save(fig, "run_bandwidth.png"))
    pred = load(os.path.join(RESULTS, "predictions.json"))
    if pred and pred.get("rows"):
        rows = pred["rows"]
        fig, a = plt.subplots(figsize=(10, 4.5))
        x = range(len(rows))
        lo = [r["published_s"][0] for r in rows]
        hi = [r["published_s"][1] for r in rows]
        a.bar([i - 0.2 for i in x], [r["simulation"]["total_time_ms"] / 1e3 for r in rows], 0.4, label="predicted (reshard simulate)")
        a.bar([i + 0.2 for i in x], lo, 0.4, color="tab:orange", label="published (low end; bar to high end)")
        a.errorbar([i + 0.2 for i in x], lo, yerr=[[0] * len(rows), [h - l for l, h in zip(lo, hi)]], fmt="none", ecolor="k", capsize=3)
        a.scatter(list(x), [r["simulation"]["lower_bound_time_ms"] / 1e3 for r in rows], marker="_", s=400, color="k", zorder=3, label="lower bound")
        a.set_xticks(list(x), [r["id"] for r in rows], rotation=30, ha="right", fontsize=8)
        a.set_ylabel("refit time (s)")
        a.set_title("Predicted vs published (seed table, NCCL M2N)")
        a.legend(fontsize=8)
        fig.tight_layout()
        made.append(save(fig, "predicted_vs_published.png"))
    cal = load(os.path.join(RESULTS, "calibration.json"))
    if cal and cal.get("rows"):
        # Log-log (rows span 0.1 ms to 0.6 s), one colour per system preset and cuda-ipc mode, marker per
        # algorithm.
        fig, a = plt.subplots(figsize=(6, 5.5))
        rows = cal["rows"]
        m = [r["measured_ms"] for r in rows]
        p = [r["predicted_ms"] for r in rows]
        for system, mode in sorted({(r["system"], r.get("ipc_mode") or "") for r in rows}):
            for algo, marker in (("reshard", "o"), ("golden", "s")):
                sel = [r for r in rows if r["system"] == system and (r.get("ipc_mode") or "") == mode and
                       r.get("algo", "reshard") == algo]
                if sel:
                    a.scatter([r["measured_ms"] for r in sel], [r["predicted_ms"] for r in sel], marker=marker,
                              label="%s%s, %s" % (system, " " + mode if mode else "", algo), alpha=0.8)
        lo, hi = min(m + p) / 1.5, max(m + p) * 1.5
        a.plot([lo, hi], [lo, hi], "k--", lw=0.8, label="exact")
        a.fill_between([lo, hi], [0.75 * lo, 0.75 * hi], [1.25 * lo, 1.25 * hi], alpha=0.15, label="±25 %")
        a.set_xscale("log")
        a.set_yscale("log")
        a.set_xlabel("measured (ms)")
        a.set_ylabel("predicted (ms)")
        inside = sum(1 for r in rows if abs(r["error"]) <= 0.25)
        a.set_title("Predicted vs measured: %d of %d phase rows within ±25 %%" % (inside, len(rows)))
        a.legend(fontsize=7)
        fig.tight_layout()
        made.append(save(fig, "predicted_vs_measured.png"))
    pt = load(os.path.join(RESULTS, "planning_times.json"))
    if pt and pt.get("rows"):
        fig, a = plt.subplots(figsize=(6, 4))
        a.scatter([r["bytes"] / 1e9 for r in pt["rows"]], [r["seconds"] for r in pt["rows"]], label="8 + 8 ranks")
        for r in pt["rows"]:
            a.annotate(r["file"][:-5], (r["bytes"] / 1e9, r["seconds"]), fontsize=7)
        if pred:
            a.scatter([r["simulation"]["plan"]["transfers"] and _model_bytes(r) / 1e9 for r in pred["rows"]],
                      [r["plan_seconds"] for r in pred["rows"]], marker="x", label="seed/M2N configs (up to 256 + 256)")
        a.set_xscale("log")
        a.set_xlabel("model bytes (GB)")
        a.set_ylabel("reshard plan wall time (s)")
        a.set_title("Planning time vs model size")
        a.legend(fontsize=8)
        fig.tight_layout()
        made.append(save(fig, "planning_time.png"))
    for m in made:
        print("plot_results: wrote", m)


def _model_bytes(row):
    f = row.get("model_file", "")
    d = load(f) if f and os.path.isfile(f) else None
    if not d:
        return float("nan")
    total = 0
    for p in d.get("params", d).values():
        n = 1
        for x in p["shape"]:
            n *= x
        total += n * {"float32": 4, "F32": 4, "float8_e4m3fn": 1, "F8_E4M3": 1}.get(p["dtype"].replace("torch.", ""), 2)
    return total


def save(fig, name):
    path = os.path.join(RESULTS, name)
    fig.savefig(path, dpi=110)
    return path


def main():
    ap = argparse.ArgumentParser(description="Plots from results JSON")
    ap.add_argument("command", choices=["plot", "collect-planning"])
    ap.add_argument("--build", default=os.environ.get("RESHARD_BUILD_DIR", os.path.join(ROOT, "build")))
    a = ap.parse_args()
    if a.command == "collect-planning":
        return collect_planning(a.build)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("plot_results: matplotlib is missing; run scripts/install_deps.sh --plots")
    plot(plt)


if __name__ == "__main__":
    main()
