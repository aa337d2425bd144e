#!/usr/bin/env python3
"""Markdown report of a GPU benchmark (scripts/gpu_bench.sh): one row per run (config, transport, algo,
bytes, time, algbw, ceiling, efficiency, speed-up vs golden, #wrong, peak memory), the issue-4 goals
with their gaps, the exact commands, and the GPU, driver, CUDA, NCCL and MPI versions.

usage: gpu_report.py RUNS.json ENV.json [-o OUT.md]
"""
import argparse
import json
import sys


def total_of(rec):
    return next((p for p in rec.get("phases", []) if p.get("phase") == "total"), {})


def fmt(v, spec, none="-"):
    return none if v is None else format(v, spec)


def emit(text, path):
    """Writes `text` to `path`, or to standard output when there is none."""
    if path:
        open(path, "w").write(text)
    else:
        sys.stdout.write(text)


def gib(b):
    return "%.2f GiB" % (b / 2**30) if b >= 2**30 else "%.1f MiB" % (b / 2**20)


def has_mode(rec):
    """Whether a cuda-ipc record names its mode: transport_mode, or (records before b9e2768) a
    versions.transport ending in ", push" or ", pull"; records from before push existed do not."""
    return rec.get("transport_mode") in ("push", "pull") or \
        rec.get("versions", {}).get("transport", "").rstrip().endswith((", push", ", pull"))


def ipc_mode(rec):
    """cuda-ipc's mode of a record ("push" or "pull"; pull where it names none, see has_mode)."""
    if rec.get("transport_mode") in ("push", "pull"):
        return rec["transport_mode"]
    return "push" if rec.get("versions", {}).get("transport", "").rstrip().endswith(", push") else "pull"


def transport(rec):
    """The transport, with cuda-ipc's mode."""
    name = rec.get("arguments", {}).get("transport")
    return "cuda-ipc %s" % ipc_mode(rec) if name == "cuda-ipc" else name


def build(records, env):
    runs = [r for r in records if r.get("format") == "reshard-run"]
    golden = {r["config"]: r for r in runs if r.get("arguments", {}).get("algo") == "golden" and "phases" in r}
    lines = ["# GPU benchmark: reshard run on one H200 (issue 4)", ""]
    lines += ["Made by `scripts/gpu_bench.sh` (one device call) and `scripts/gpu_report.py`; every run has "
              "`--check` (every destination byte compared with the pattern). All ranks share the one GPU "
              "through `--transport cuda-ipc`. Definitions: docs/gpu.md.", ""]
    lines += ["| | |", "|---|---|"]
    for key, label in [("gpus", "GPU"), ("driver", "driver"), ("cuda_driver_api", "CUDA (driver API)"),
                       ("nvcc", "CUDA toolkit (nvcc)"), ("nccl", "NCCL"), ("mpi", "MPI"), ("mps", "CUDA MPS"),
                       ("git", "git")]:
        default = "off" if key == "mps" else "?"  # records from before MPS=1 existed ran without it
        lines.append("| %s | %s |" % (label, str(env.get(key, default)).replace("\n", "<br>")))
    lines.append("")
    lines += ["| config | ranks | transport | algo | bytes | time ms (total) | algbw GB/s | busiest GB/s | "
              "ceiling GB/s | efficiency | plan_eff | speed-up vs golden | ops/rank | us/op | peak/rank | #wrong |",
              "|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in runs:
        if "phases" not in r:
            lines.append("| %s | | | | | run failed (exit %s) | | | | | | | | | | |" % (r["config"], r.get("exit_code")))
            continue
        t = total_of(r)
        a = r.get("arguments", {})
        g = golden.get(r["config"])
        speedup = None
        if a.get("algo") == "reshard" and g:
            speedup = g["total_time_ms"] / r["total_time_ms"] if r["total_time_ms"] > 0 else None
        ops = t.get("ops_max_per_rank") or 0
        us_per_op = r["total_time_ms"] * 1e3 / ops if ops else None
        lines.append("| %s | %d | %s | %s | %s | %.3f | %.1f | %.1f | %s | %s | %.3f | %s | %d | %s | %s | %s |" % (
            r["config"], r.get("world_size", 0), transport(r), a.get("algo"), gib(t.get("bytes", 0)),
            r["total_time_ms"], t.get("algbw_gbps", 0), t.get("busiest_gbps", t.get("busbw_gbps", 0)), fmt(t.get("ceiling_gbps"), ".1f"),
            fmt(t.get("efficiency"), ".3f"), t.get("plan_efficiency", 0), fmt(speedup, ".2f") + ("x" if speedup else ""),
            ops, fmt(us_per_op, ".1f"), gib(r.get("peak_bytes_max", 0)), r.get("wrong")))
    lines.append("")

    lines += ["## Goals (issue 4)", ""]
    for r in runs:
        if "phases" not in r or r.get("arguments", {}).get("algo") != "reshard":
            continue
        t, c = total_of(r), r["config"]
        eff = t.get("efficiency")
        if c.startswith(("1", "2")):
            ok = eff is not None and eff >= 0.85
            lines.append("- %s: efficiency %s vs goal >= 0.85: %s" % (
                c, fmt(eff, ".3f"), "met" if ok else "NOT met (gap %s)" % fmt(None if eff is None else 0.85 - eff, ".3f")))
        if c.startswith("1") and c in golden:
            tp = r.get("plan", {}).get("gen", {}).get("tp", 1)
            want = tp * 0.8
            got = golden[c]["total_time_ms"] / r["total_time_ms"]
            lines.append("- %s: golden slower by %.2fx vs goal >= gen TP x 0.8 = %.1fx: %s" % (
                c, got, want, "met" if got >= want else "NOT met (gap %.2fx)" % (want - got)))
        if c.startswith("3"):
            ops = t.get("ops_max_per_rank") or 0
            lines.append("- %s: %.1f us per message (%d ops on the busiest rank in %.3f ms; total phase)" % (
                c, r["total_time_ms"] * 1e3 / max(ops, 1), ops, r["total_time_ms"]))
    for r in records:
        if r.get("format") == "reshard-nccl-refusal":
            lines.append("- %s: exit %s (want 2): %s" % (r["config"], r.get("exit_code"), r.get("message", "")))
    lines.append("")

    lines += ["## Phases", ""]
    lines += ["| config | algo | phase | bytes | time ms | algbw GB/s | ceiling GB/s | efficiency | #wrong |",
              "|---|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in runs:
        for p in r.get("phases", []):
            lines.append("| %s | %s | %s | %s | %.3f | %.1f | %s | %s | %s |" % (
                r["config"], r["arguments"]["algo"], p["phase"], gib(p["bytes"]), p["time_ms_avg"], p["algbw_gbps"],
                fmt(p.get("ceiling_gbps"), ".1f"), fmt(p.get("efficiency"), ".3f"), p.get("wrong")))
    lines.append("")
    lines += ["## Commands", ""]
    for r in runs:
        lines.append("- %s, %s: `%s` (exit %s)" % (r["config"], r.get("arguments", {}).get("algo", "?"),
                                                  r.get("command", "?"), r.get("exit_code")))
    lines.append("")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("runs")
    ap.add_argument("env")
    ap.add_argument("-o", "--output")
    a = ap.parse_args()
    records = json.load(open(a.runs))
    env = json.load(open(a.env))
    emit(build(records if isinstance(records, list) else [records], env), a.output)


if __name__ == "__main__":
    main()
