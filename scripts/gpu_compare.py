#!/usr/bin/env python3
"""Side-by-side table of two GPU benchmark runs (scripts/gpu_bench.sh's gpu_runs.json), e.g. cuda-ipc
push vs pull measured in one device call: per config, algo and phase the time and efficiency of each,
the ratio, and each run's speed-up over golden (also across runs: each algorithm in its faster run).

usage: gpu_compare.py A.json B.json --labels pull push [-o OUT.md] [--title TITLE]
"""
import argparse
import json

from gpu_report import emit, fmt  # scripts/ is the script's directory, so first on sys.path


def runs(path):
    out = {}
    for r in json.load(open(path)):
        if r.get("format") == "reshard-run" and "phases" in r:
            out[(r["config"], r.get("arguments", {}).get("algo"))] = r
    return out


def phases(rec):
    return {p["phase"]: p for p in rec["phases"]}


def build(a, b, la, lb, title):
    lines = ["# " + title, "",
             "Times (ms) as in gpu_report.py: the mean over iterations of the slowest rank; efficiency against the copy ceiling "
             "measured in the same run (docs/gpu.md). `%s / %s` > 1: %s is faster." % (la, lb, lb), "",
             "| config | algo | phase | %s ms | %s ms | %s / %s | %s eff | %s eff |" % (la, lb, la, lb, la, lb),
             "|---|---|---|---:|---:|---:|---:|---:|"]
    for key in a:
        if key not in b:
            continue
        pa, pb = phases(a[key]), phases(b[key])
        for name in pa:
            if name not in pb:
                continue
            ta, tb = pa[name].get("time_ms_avg"), pb[name].get("time_ms_avg")
            ratio = ta / tb if ta and tb else None
            lines.append("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
                key[0], key[1], name, fmt(ta, ".3f"), fmt(tb, ".3f"), fmt(ratio, ".2f"),
                fmt(pa[name].get("efficiency"), ".3f"), fmt(pb[name].get("efficiency"), ".3f")))
    lines += ["", "Speed-up of reshard over golden (total time):", "",
              "| config | %s | %s | each in its faster mode |" % (la, lb), "|---|---:|---:|---:|"]
    for (config, algo), ra in a.items():
        if algo != "reshard" or (config, "golden") not in a or (config, "reshard") not in b or (config, "golden") not in b:
            continue
        ga, rb, gb = a[(config, "golden")], b[(config, "reshard")], b[(config, "golden")]
        best = min(ga["total_time_ms"], gb["total_time_ms"]) / min(ra["total_time_ms"], rb["total_time_ms"])
        lines.append("| %s | %.2fx | %.2fx | %.2fx |" % (
            config, ga["total_time_ms"] / ra["total_time_ms"], gb["total_time_ms"] / rb["total_time_ms"], best))
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--labels", nargs=2, default=["A", "B"])
    ap.add_argument("--title", default="GPU runs side by side")
    ap.add_argument("-o", "--output")
    args = ap.parse_args()
    emit(build(runs(args.a), runs(args.b), args.labels[0], args.labels[1], args.title), args.output)


if __name__ == "__main__":
    main()
