#!/usr/bin/env python3
# scripts/calibrate.sh's comparison (its header says what it does): argv = reshard binary, --system preset
# (or empty), --json output (or empty), the folder for rebuilt plans, then the inputs. What each record is
# compared with (its plan, machine and preset) is read by calibrate_inputs.py.
import json, math, os, shlex, subprocess, sys
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from calibrate_inputs import (Plans, damon, host_file, host_flags, load_records, machine_cores, preset, ranks_bound,
                              run_commit)
from gpu_report import ipc_mode  # a cuda-ipc record's mode, as the GPU reports read it

FMT = "%-32s %-7s %-20s %-9s %11s %12s %8s %9s"
WITHIN = 0.25  # the goal: a prediction within +-25 % of the measured time


def within(r):
    return abs(r["error"]) <= WITHIN


def simulate_args(reshard, plan, sysname, rec, flags):
    # `reshard simulate` with the record's own schedule: algo, streams, batch caps, staging, window (per
    # stream or per rank) and where its packs ran.
    a = rec["arguments"]
    args = [reshard, "simulate", plan, "--system", sysname, "--json", "--algo", a.get("algo", "reshard"),
            "--streams", str(a.get("streams", 2)), "--batch-ops", str(a.get("batch_ops", 64)),
            "--batch-bytes", str(a.get("batch_bytes", 268435456)),
            "--staging-bytes", str(a.get("staging_bytes", 268435456)),
            "--window", str(a.get("window", 1))] + flags  # records before --window ran one batch at a time
    # Where the executor queued its packs (GPU kernels; NCCL's presets model it): before 2026-12-07 on the op's stream
    args.append("--side-stream-packs" if a.get("side_stream_packs") else "--op-stream-packs")
    args.append("--window-per-stream" if a.get("window_per_stream") else "--window-per-rank")  # before 2026-12-03
    return args


class Comparison:
    """Every record simulated and set beside its measured phases: the rows, the records skipped and
    why, the CPU host files used, and |error| of each record's total."""

    def __init__(self, reshard, system, cache):
        self.reshard, self.system, self.plans = reshard, system, Plans(reshard, cache)
        self.extra = shlex.split(os.environ.get("RESHARD_SIMULATE_FLAGS", ""))
        self.rows, self.errors, self.hosts_used, self.skipped = [], [], {}, []

    def skip(self, f, name, why, shown):
        print("%-32s skipped: %s" % (name, shown))
        self.skipped.append((f, name, why))

    def add(self, f, name, rec):
        plan = self.plans.path(f, rec)
        if plan is None:
            return self.skip(f, name, "plan not found",
                             "plan %s not found (no file, no recipe)" % rec["plan"]["fingerprint"])
        sysname, why = (self.system, None) if self.system else preset(f, rec)
        if sysname is None:
            return self.skip(f, name, why, "%s (%s)" % (why, rec.get("versions", {}).get("device", "")))
        a = rec["arguments"]
        mode = ipc_mode(rec) if a.get("transport") == "cuda-ipc" else None
        preset_flags = os.environ.get("RESHARD_SIMULATE_FLAGS_" + sysname.upper().replace("-", "_"), "")
        machine = host_flags(f, rec) if a.get("transport") == "mpi" else []
        if machine:  # printed once per host file at the end, so a row can be simulated again by hand
            self.hosts_used.setdefault(host_file(f, rec), machine)
        flags = machine + self.extra + shlex.split(preset_flags)
        if "--ipc-mode" in flags:  # a sensitivity, e.g. push records simulated as pull
            mode = flags[flags.index("--ipc-mode") + 1] if mode else None
        else:
            flags = ["--ipc-mode", mode or "pull"] + flags
        args = simulate_args(self.reshard, plan, sysname, rec, flags)
        sim = json.loads(subprocess.run(args, check=True, capture_output=True, text=True).stdout)
        if sim["plan"]["fingerprint"] != rec["plan"]["fingerprint"]:
            return self.skip(f, name, "the rebuilt plan's fingerprint differs (the planner changed since)",
                             "plan file %s has fingerprint %s, the run %s" % (plan, sim["plan"]["fingerprint"],
                                                                              rec["plan"]["fingerprint"]))
        predicted = {p["phase"]: p["time_ms"] for p in sim["phases"]}
        predicted["total"] = sim["total_time_ms"]
        # The same build (the record's, else gpu_env.json's), machine, plan, schedule flags and phase,
        # measured in other calls too (see "spread"): the machine is the preset and, for CPU records, the
        # host's core count and whether mpirun bound the ranks.
        same = [(rec.get("build") or {}).get("git") or run_commit(f), sysname, machine_cores(f, rec),
                ranks_bound(f, rec), rec["plan"]["fingerprint"], a.get("transport"), a.get("algo", "reshard"),
                mode] + args[args.index("--streams"):args.index("--window") + 2] + [args[-1]]
        host_damon = damon(f)  # once per record: its set's log
        for ph in rec["phases"]:
            phase, meas = ph["phase"], ph["time_ms_avg"]
            if phase not in predicted or meas <= 0 or not ph.get("bytes"):
                continue  # an empty phase times only the barrier
            pred = predicted[phase]
            err = pred / meas - 1
            eff = ph["busiest_bytes"] / (meas * 1e-3) / 1e9 if ph.get("busiest_bytes") else 0
            print(FMT % (name, a.get("algo", "reshard"), sysname, phase, "%.3f" % meas, "%.3f" % pred,
                         "%+.1f%%" % (err * 100), "%.3f" % eff))
            row = {"record": f, "run": run_commit(f), "name": name, "algo": a.get("algo", "reshard"),
                   "system": sysname, "ipc_mode": mode, "phase": phase, "measured_ms": meas, "predicted_ms": pred,
                   "error": err, "effective_gbps": eff, "same": json.dumps(same + [phase])}
            if host_damon:
                row["damon"] = host_damon
            if ph.get("ceiling_ms"):  # the same launch's ceiling (run --ceiling): its machine, not the host file's
                row["ceiling_ms"] = ph["ceiling_ms"]
            self.rows.append(row)
            if phase == "total":
                self.errors.append(abs(err))


def group_spread(rows):
    # Spread (see calibrate.sh's header): the rows of one build, machine, plan, flags and phase, each
    # marked with its group's highest / lowest predicted / measured ratio; the groups, in first-row order.
    groups = {}
    for r in rows:
        groups.setdefault(r["same"], []).append(r)
    for g in groups.values():
        ratios = [r["predicted_ms"] / r["measured_ms"] for r in g]
        for r in g:
            r["group_spread"], r["group_rows"] = max(ratios) / min(ratios), len(g)
    return list(groups.values())


def print_summary(c, groups):
    rows = c.rows
    print("calibrate: %d runs, mean |error| of totals %.1f %%, worst %.1f %%; %d of %d rows within 25 %%" %
          (len(c.errors), 100 * sum(c.errors) / len(c.errors), 100 * max(c.errors), sum(map(within, rows)), len(rows)))
    if c.skipped:  # records no row stands for: the headline covers the others only
        print("calibrate: %d records skipped: %s" % (len(c.skipped), "; ".join(
            "%d %s" % (n, why) for why, n in Counter(w for _, _, w in c.skipped).most_common())))
    for mode in ("pull", "push"):
        sel = [r for r in rows if r["ipc_mode"] == mode]
        if sel:
            print("calibrate: cuda-ipc %s rows: %d of %d within 25 %%" % (mode, sum(map(within, sel)), len(sel)))
    cpu = [r for r in rows if r["system"] == "cpu-mpi-local"]
    if any("damon" in r for r in cpu):  # the host's DAMON stalls oversubscribed runs (scripts/damon.sh)
        print("calibrate: CPU rows by the host's DAMON: " + "; ".join(
            "%s %d of %d within 25 %%" % (k, sum(map(within, sel)), len(sel))
            for k in ("paused", "on", "none", None)
            for sel in [[r for r in cpu if r.get("damon") == k]] if sel).replace("None", "not recorded"))
    for f in dict.fromkeys(r["record"] for r in rows):  # per record set, in input order
        sel = [r for r in rows if r["record"] == f]
        tot = [abs(r["error"]) for r in sel if r["phase"] == "total"]
        worst = max(sel, key=lambda r: abs(r["error"]))
        print("calibrate: set %-30s %2d of %2d rows within 25 %%, mean |error| of totals %4.1f %%, worst row "
              "%s %s %s %+.1f %%" % (sel[0]["name"].split(":")[0], sum(map(within, sel)), len(sel),
                                     100 * sum(tot) / max(len(tot), 1), worst["name"], worst["algo"],
                                     worst["phase"], 100 * worst["error"]))
    for r in rows:
        if not within(r):
            print("calibrate: out: %s %s %s %+.1f %%" % (r["name"], r["algo"], r["phase"], 100 * r["error"]))
    wide = [g for g in groups if g[0]["group_spread"] > 5 / 3]
    for g in wide:
        ratios = [r["predicted_ms"] / r["measured_ms"] for r in g]
        print("calibrate: spread: %s %s over %d records: predicted / measured %.2f..%.2f (%.2fx)" % (
              g[0]["name"].split(":")[0].split("/")[-1], g[0]["phase"], len(g), min(ratios), max(ratios),
              max(ratios) / min(ratios)))
    if wide:
        print("calibrate: %d rows in %d groups of one plan, flags and phase spread more than 5/3 apart: no one scale "
              "of their predictions is within 25 %% of all (%d of them out)" %
              (sum(map(len, wide)), len(wide), sum(1 for g in wide for r in g if not within(r))))


def print_ceiling(rows, groups):
    # Rows whose record carries its launch's ceiling (GPU records; CPU records with run --ceiling on since
    # 2026-12-05: plain send/recv of the phase's busiest receive bytes, measured in the same launch): how
    # many out rows predict the phase faster than that launch moved its bytes without reshard (so the
    # constants, from another launch, overstated this launch's machine); and, over groups measured in
    # several launches, how much of the launch-to-launch spread the ceiling accounts for (log standard
    # deviation about each group's geometric mean, of the time and of the time / ceiling).
    with_ceiling = [r for r in rows if r.get("ceiling_ms")]
    if not with_ceiling:
        return
    out = [r for r in with_ceiling if not within(r)]
    below = [r for r in out if r["predicted_ms"] < r["ceiling_ms"]]

    def about_mean(v):  # each value's deviation from the mean of its group
        return [x - sum(v) / len(v) for x in v]

    dev_t, dev_n = [], []
    for g in groups:
        g = [r for r in g if r.get("ceiling_ms")]
        if len(g) >= 2:
            dev_t += about_mean([math.log(r["measured_ms"]) for r in g])
            dev_n += about_mean([math.log(r["measured_ms"] / r["ceiling_ms"]) for r in g])

    def sd(d):
        return math.sqrt(sum(x * x for x in d) / len(d)) if d else 0

    print("calibrate: ceiling: %d rows carry their launch's ceiling, %d of them within 25 %%; of the %d out, %d "
          "predict the phase faster than its launch's ceiling moved the busiest bytes" %
          (len(with_ceiling), len(with_ceiling) - len(out), len(out), len(below)))
    if dev_t:
        print("calibrate: ceiling: over %d rows measured in several launches, the log spread of a phase's time is "
              "%.3f, of its time / its launch's ceiling %.3f" % (len(dev_t), sd(dev_t), sd(dev_n)))


def main(argv):
    reshard, system, json_out, cache, inputs = argv[1], argv[2], argv[3], argv[4], argv[5:]
    records = load_records(inputs)
    if not records:
        sys.exit("calibrate: no reshard-run records in " + " ".join(inputs))
    c = Comparison(reshard, system, cache)
    print(FMT % ("record", "algo", "system", "phase", "measured_ms", "predicted_ms", "error", "eff_GB/s"))
    for f, name, rec in records:
        c.add(f, name, rec)
    groups = group_spread(c.rows)
    for h, machine in c.hosts_used.items():  # each CPU host file's constants as simulate flags
        print("calibrate: host %s: %s" % (os.path.relpath(h), " ".join(machine)))
    if c.errors:
        print_summary(c, groups)
    print_ceiling(c.rows, groups)
    if json_out:
        json.dump({"format": "reshard-calibration", "version": 2, "rows": c.rows,
                   "skipped": [{"record": f, "name": n, "why": w} for f, n, w in c.skipped]},
                  open(json_out, "w"), indent=1)


if __name__ == "__main__":
    main(sys.argv)
