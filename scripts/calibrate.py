#!/usr/bin/env python3
# scripts/calibrate.sh's comparison (its header says what it does): argv = reshard binary, --system preset
# (or empty), --json output (or empty), the folder for rebuilt plans, then the inputs.
import glob, json, math, os, re, shlex, statistics, subprocess, sys
from collections import Counter

reshard, system, json_out, cache, inputs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
extra = shlex.split(os.environ.get("RESHARD_SIMULATE_FLAGS", ""))
def gpu_env(f):  # the run's gpu_env.json, beside its records; {} without one (CPU records)
    try:
        env = json.load(open(os.path.join(os.path.dirname(f), "gpu_env.json")))
    except (OSError, ValueError):
        return {}
    return env if isinstance(env, dict) else {}

def mps_on(f):  # whether CUDA MPS was on
    return str(gpu_env(f).get("mps", "")).strip().lower() == "on"

def damon(f):  # the host's DAMON during a CPU set, from the "# damon:" line of the cpu_waits.log beside it:
    # "paused", "on", "none", or None where the log has no such line (sets before 2026-12-05's seventh stop)
    try:
        line = next(l for l in open(os.path.join(os.path.dirname(f), "cpu_waits.log")) if l.startswith("# damon:"))
    except (OSError, StopIteration):
        return None
    return "paused" if "paused for this set" in line else "on" if " on (" in line else "none"

def run_commit(f):  # the commit the run was made at: gpu_env.json's "git", first word; None without it
    words = str(gpu_env(f).get("git", "")).split()
    return words[0] if words else None

sys.path.insert(0, "scripts")  # the repository root is the working directory (cd above)
from gpu_report import has_mode, ipc_mode  # a cuda-ipc record's mode, as the GPU reports read it

files = []
for p in inputs:
    files += sorted(os.path.join(p, f) for f in os.listdir(p) if f.endswith(".json")) if os.path.isdir(p) else [p]
records = []
for f in files:
    try:
        d = json.load(open(f))
    except (OSError, ValueError):
        continue
    for i, rec in enumerate(d if isinstance(d, list) else [d]):
        if isinstance(rec, dict) and rec.get("format") == "reshard-run" and "plan" in rec:  # none: the run failed
            name = os.path.splitext(os.path.basename(f))[0]
            if isinstance(d, list):
                name += ":" + rec.get("config", str(i)).split(" ")[0]
            if mps_on(f):
                name = "mps/" + name
            if rec.get("arguments", {}).get("transport") == "cuda-ipc" and has_mode(rec):
                name = ipc_mode(rec) + "/" + name
            if glob.glob(os.path.join(os.path.dirname(f), "host_*.json")):  # CPU sets of several machines
                name = os.path.basename(os.path.dirname(f)) + "/" + name
            if run_commit(f):  # several device calls hold the same configs: say which one
                name = run_commit(f) + "/" + name
            records.append((f, name, rec))
if not records:
    sys.exit("calibrate: no reshard-run records in " + " ".join(inputs))

def stress_model(path):  # the 4096 x 32 KiB model of scripts/gpu_bench.sh
    params = {}
    for l in range(2048):
        for w in ("gate_proj", "down_proj"):
            params["model.layers.%d.mlp.%s.weight" % (l, w)] = {"shape": [128, 128], "dtype": "bfloat16"}
    json.dump({"model": "stress-4096x32KiB", "source": "scripts/gpu_bench.sh", "params": params}, open(path, "w"))

recipes = json.load(open("results/plans/recipes.json"))["plans"] if os.path.isfile("results/plans/recipes.json") else {}

def plan_path(f, rec):
    fp = rec["plan"]["fingerprint"]
    given = rec["arguments"].get("plan", "")
    beside = os.path.join(os.path.dirname(f), "plans", os.path.basename(given)) if given else ""
    for c in [given, beside, f"results/plans/{fp}.cbor", f"results/plans/{fp}.json",
              f"{cache}/{fp}.cbor"]:
        if c and os.path.isfile(c):
            return c
    if fp not in recipes:
        return None
    os.makedirs(cache, exist_ok=True)
    args = list(recipes[fp])
    if "{stress_model}" in args:
        stress_model(f"{cache}/stress-model.json")
        args = [f"{cache}/stress-model.json" if a == "{stress_model}" else a for a in args]
    out = f"{cache}/{fp}.cbor"
    subprocess.run([reshard, "plan"] + args + ["--force", "-o", out], check=True, capture_output=True)
    return out

def machine_cores(f, rec):
    # A CPU record's host cores: the record's own (host_cores, one host; records from 2026-12-04), else
    # its set's host files' "cores", else the machine line of the cpu_waits.log beside it.
    if len(rec.get("host_cores") or []) == 1:
        return rec["host_cores"][0]
    for h in glob.glob(os.path.join(os.path.dirname(f), "host_*.json")):
        try:
            cores = json.load(open(h)).get("cores")
        except (OSError, ValueError):
            cores = None
        if cores:
            return cores
    try:
        m = re.search(r"^# machine: (\d+) cores", open(os.path.join(os.path.dirname(f), "cpu_waits.log")).read(), re.M)
        return int(m.group(1)) if m else None
    except OSError:
        return None

def ranks_bound(f, rec):
    # Whether mpirun bound the ranks: the record's rank_cpus (each rank's allowed CPUs, records from
    # 2026-12-04 on) narrower than its host, else the "# binding: core" line of the cpu_waits.log beside it.
    if rec.get("rank_cpus") and rec.get("host_cores"):
        return max(rec["rank_cpus"]) < min(rec["host_cores"])
    try:
        return re.search(r"^# binding: core", open(os.path.join(os.path.dirname(f), "cpu_waits.log")).read(), re.M) is not None
    except OSError:
        return False

def beside(f, name):
    # A JSON file that describes the machine of the records in f's folder: the nearest `name` in that
    # folder or one above it, up to results/ or the repository's root (one file serves the sets of one
    # machine); {} if none.
    d = os.path.dirname(os.path.abspath(f))
    while True:
        try:
            return json.load(open(os.path.join(d, name)))
        except (OSError, ValueError):
            pass
        if os.path.basename(d) == "results" or os.path.exists(os.path.join(d, ".git")) or os.path.dirname(d) == d:
            return {}
        d = os.path.dirname(d)

def host_file(f, rec):
    # The host file of a CPU record: host_<world>.json beside it.
    return os.path.join(os.path.dirname(f), "host_%d.json" % rec.get("world_size", 0))

def host_flags(f, rec):
    # A CPU record's own machine: host_<world>.json beside it (scripts/calibrate.sh --measure-host at the
    # run's rank count, made in the same call as the runs); the preset's constants from it, derived as
    # cpu-mpi-local's are (system_presets.cpp): link = one pair's point-to-point, copy = one rank's
    # memcpy, shared = all ranks' memcpy, copies per received byte = shared / the first half's
    # point-to-point to the second, every sender to every receiver (as train ranks feed gen ranks).
    world = rec.get("world_size", 0)
    try:
        h = json.load(open(host_file(f, rec)))
    except (OSError, ValueError):
        return []
    link = "%.3f" % h["p2p_one_pair_gbps"]
    # Host files from before the half-to-half measurement have the disjoint pairs' rate only.
    many = h.get("p2p_half_to_half_aggregate_gbps", h["p2p_all_pairs_aggregate_gbps"])
    # Without single copy the sender copies too (copy-in/copy-out). A host file without the field (from
    # before it was recorded, none of them a calibration input now) counts as single copy.
    none = h.get("single_copy_mechanism", "cma") == "none"
    # The broadcast's fan rate: the host file's (measured with it), else the nearest fan.json (the device
    # host's, measured in a later call by scripts/bcast_probe.cpp); without either, not modelled.
    fan = h.get("fan_gbps") or beside(f, "fan.json").get("fan_gbps", 0)
    # With single copy, a batch's hand-off while the others copy (mpi_busy_handoff.h) as its latency:
    # the median of every measurement of it on this machine at this rank count, the host file's and the
    # rounds in the nearest handoff.json (scripts/latency_probe.cpp; a number or a list of rounds): one
    # launch's probe moved 4x on the VM (docs/calibration.md, "The same launch's ceiling"); without any,
    # the preset's. Not without single copy: there --host-cores, fitted to those hosts' oversubscribed
    # records, already carries what sharing the cores costs, and the hand-off on top counted it twice
    # (986 against 1051 of 1355 rows, docs/calibration.md "Twenty iterations, and the hand-off in the model").
    handoff = None
    if not none:
        rounds = beside(f, "handoff.json").get("latency_busy_us", {}).get(str(world), [])
        rounds = (rounds if isinstance(rounds, list) else [rounds]) + ([h["latency_busy_us"]] if "latency_busy_us" in h else [])
        handoff = statistics.median(rounds) if rounds else None
    # Without single copy, the host's cores (simulate --host-cores).
    cores = machine_cores(f, rec)
    # The hand-off was measured with every rank working; a stage's batches wait only for its own working
    # ranks (--latency-per-busy-rank; latency_probe.cpp's latency_busy_us_with_c_copiers on the VM).
    return (["--latency-us", "%.2f" % handoff, "--latency-per-busy-rank"] if handoff else []) + (["--fan-gbps", "%.3f" % fan] if fan else []) + (["--host-cores", str(cores)] if none and cores else []) + [
            "--nvlink-gbps", link, "--nic-gbps", link, "--copy-gbps", "%.3f" % h["memcpy_one_rank_gbps"],
            "--shared-copy-gbps", "%.3f" % h["memcpy_all_ranks_aggregate_gbps"],
            "--wire-copies", "%.3f" % (h["memcpy_all_ranks_aggregate_gbps"] / many)] + (["--sender-copies"] if none else [])

# The one-GPU presets by the card's name in a record's versions.device: (without MPS, under MPS); None
# where a card was not measured that way (an H100 record under MPS is skipped). Every record on one GPU
# names one of these cards.
ONE_GPU_PRESETS = {"NVIDIA H100": ("h100-shared-1gpu", None),
                   "NVIDIA H200": ("h200-shared-1gpu", "h200-shared-1gpu-mps")}

# One rank per GPU (NCCL, which refuses two ranks on a GPU): the NVLink presets by card.
MULTI_GPU_PRESETS = {"NVIDIA H100": "h100-nvl8-ib400", "NVIDIA H200": "h200-nvl8-ib400"}

def preset(f, rec):
    """(preset, None), or (None, why the record has none)."""
    transport = rec["arguments"].get("transport")
    if transport == "mpi":
        return "cpu-mpi-local", None
    device = rec.get("versions", {}).get("device", "")
    # "NVIDIA H200 (device 0 of 2, 0000:00:06.0, 4 ranks on vm)": each part read on its own
    of, on = re.search(r"device \d+ of (\d+),", device), re.search(r"(\d+) ranks", device)
    gpus, ranks = int(of.group(1)) if of else None, int(on.group(1)) if on else 0
    if transport == "cuda-ipc" and gpus == 1:
        # every rank on the one device; under MPS their kernels run concurrently
        card = next((k for k in ONE_GPU_PRESETS if device.startswith(k)), None)
        if card is None:
            print("calibrate: no one-GPU preset for the device %r of %s (ONE_GPU_PRESETS)" % (device, f), file=sys.stderr)
            sys.exit(2)
        name = ONE_GPU_PRESETS[card][1 if mps_on(f) else 0]
        return name, None if name else "no preset for its device under MPS"
    if transport == "cuda-ipc" and gpus and ranks > gpus:
        return None, "ranks sharing several GPUs: no preset (cuda-ipc across GPUs is not modelled)"
    card = next((k for k in MULTI_GPU_PRESETS if device.startswith(k)), "NVIDIA H100")
    return MULTI_GPU_PRESETS[card], None

rows, errors, hosts_used, skipped = [], [], {}, []
fmt = "%-32s %-7s %-20s %-9s %11s %12s %8s %9s"
print(fmt % ("record", "algo", "system", "phase", "measured_ms", "predicted_ms", "error", "eff_GB/s"))
for f, name, rec in records:
    plan = plan_path(f, rec)
    if plan is None:
        print("%-32s skipped: plan %s not found (no file, no recipe)" % (name, rec["plan"]["fingerprint"]))
        skipped.append((f, name, "plan not found"))
        continue
    sysname, why = (system, None) if system else preset(f, rec)
    if sysname is None:
        print("%-32s skipped: %s (%s)" % (name, why, rec.get("versions", {}).get("device", "")))
        skipped.append((f, name, why))
        continue
    a = rec["arguments"]
    mode = ipc_mode(rec) if a.get("transport") == "cuda-ipc" else None
    preset_flags = os.environ.get("RESHARD_SIMULATE_FLAGS_" + sysname.upper().replace("-", "_"), "")
    machine = host_flags(f, rec) if a.get("transport") == "mpi" else []
    if machine:  # printed once per host file at the end, so a row can be simulated again by hand
        hosts_used.setdefault(host_file(f, rec), machine)
    flags = machine + extra + shlex.split(preset_flags)
    if "--ipc-mode" in flags:  # a sensitivity, e.g. push records simulated as pull
        mode = flags[flags.index("--ipc-mode") + 1] if mode else None
    else:
        flags = ["--ipc-mode", mode or "pull"] + flags
    args = [reshard, "simulate", plan, "--system", sysname, "--json", "--algo", a.get("algo", "reshard"),
            "--streams", str(a.get("streams", 2)), "--batch-ops", str(a.get("batch_ops", 64)),
            "--batch-bytes", str(a.get("batch_bytes", 268435456)),
            "--staging-bytes", str(a.get("staging_bytes", 268435456)),
            "--window", str(a.get("window", 1))] + flags  # records before --window ran one batch at a time
    # Where the executor queued its packs (GPU kernels; NCCL's presets model it): before 2026-12-07 on the op's stream
    args.append("--side-stream-packs" if a.get("side_stream_packs") else "--op-stream-packs")
    args.append("--window-per-stream" if a.get("window_per_stream") else "--window-per-rank")  # before 2026-12-03: per rank
    sim = json.loads(subprocess.run(args, check=True, capture_output=True, text=True).stdout)
    if sim["plan"]["fingerprint"] != rec["plan"]["fingerprint"]:
        print("%-32s skipped: plan file %s has fingerprint %s, the run %s" % (name, plan,
              sim["plan"]["fingerprint"], rec["plan"]["fingerprint"]))
        skipped.append((f, name, "the rebuilt plan's fingerprint differs (the planner changed since)"))
        continue
    predicted = {p["phase"]: p["time_ms"] for p in sim["phases"]}
    host_damon = damon(f)  # once per record: its set's log
    predicted["total"] = sim["total_time_ms"]
    for ph in rec["phases"]:
        phase, meas = ph["phase"], ph["time_ms_avg"]
        if phase not in predicted or meas <= 0 or not ph.get("bytes"):
            continue  # an empty phase times only the barrier
        pred = predicted[phase]
        err = pred / meas - 1
        eff = ph["busiest_bytes"] / (meas * 1e-3) / 1e9 if ph.get("busiest_bytes") else 0
        print(fmt % (name, a.get("algo", "reshard"), sysname, phase, "%.3f" % meas, "%.3f" % pred,
                     "%+.1f%%" % (err * 100), "%.3f" % eff))
        # The same build (the record's, else gpu_env.json's), machine, plan, schedule flags and phase,
        # measured in other calls too (see "spread" below): the machine is the preset and, for CPU
        # records, the host's core count and whether mpirun bound the ranks.
        same = json.dumps([(rec.get("build") or {}).get("git") or run_commit(f), sysname, machine_cores(f, rec),
                           ranks_bound(f, rec),
                           rec["plan"]["fingerprint"], a.get("transport"), a.get("algo", "reshard"), mode] +
                          args[args.index("--streams"):args.index("--window") + 2] + [args[-1], phase])
        rows.append({"record": f, "run": run_commit(f), "name": name, "algo": a.get("algo", "reshard"), "system": sysname,
                     "ipc_mode": mode, "phase": phase,
                     "measured_ms": meas, "predicted_ms": pred, "error": err, "effective_gbps": eff, "same": same})
        if host_damon:
            rows[-1]["damon"] = host_damon
        if ph.get("ceiling_ms"):  # the same launch's ceiling (run --ceiling): its machine, not the host file's
            rows[-1]["ceiling_ms"] = ph["ceiling_ms"]
        if phase == "total":
            errors.append(abs(err))
# Spread (see the header): each group's predicted / measured ratios, lowest and highest, once.
groups = {}
for r in rows:
    groups.setdefault(r["same"], []).append(r)
spans = {}
for key, g in groups.items():
    ratios = [r["predicted_ms"] / r["measured_ms"] for r in g]
    spans[key] = (min(ratios), max(ratios))
    for r in g:
        r["group_spread"], r["group_rows"] = max(ratios) / min(ratios), len(g)
for h, machine in hosts_used.items():  # each CPU host file's constants as simulate flags
    print("calibrate: host %s: %s" % (os.path.relpath(h), " ".join(machine)))
if errors:
    within = sum(1 for r in rows if abs(r["error"]) <= 0.25)
    print("calibrate: %d runs, mean |error| of totals %.1f %%, worst %.1f %%; %d of %d rows within 25 %%" %
          (len(errors), 100 * sum(errors) / len(errors), 100 * max(errors), within, len(rows)))
    if skipped:  # records no row stands for: the headline covers the others only
        print("calibrate: %d records skipped: %s" % (len(skipped), "; ".join(
            "%d %s" % (n, why) for why, n in sorted(Counter(w for _, _, w in skipped).items(), key=lambda kv: -kv[1]))))
    for mode in ("pull", "push"):
        sel = [r for r in rows if r["ipc_mode"] == mode]
        if sel:
            print("calibrate: cuda-ipc %s rows: %d of %d within 25 %%" %
                  (mode, sum(1 for r in sel if abs(r["error"]) <= 0.25), len(sel)))
    cpu = [r for r in rows if r["system"] == "cpu-mpi-local"]
    if any("damon" in r for r in cpu):  # the host's DAMON stalls oversubscribed runs (scripts/damon.sh)
        print("calibrate: CPU rows by the host's DAMON: " + "; ".join(
            "%s %d of %d within 25 %%" % (k, sum(1 for r in sel if abs(r["error"]) <= 0.25), len(sel))
            for k in ("paused", "on", "none", None)
            for sel in [[r for r in cpu if r.get("damon") == k]] if sel).replace("None", "not recorded"))
    for f in dict.fromkeys(r["record"] for r in rows):  # per record set, in input order
        sel = [r for r in rows if r["record"] == f]
        tot = [abs(r["error"]) for r in sel if r["phase"] == "total"]
        worst = max(sel, key=lambda r: abs(r["error"]))
        print("calibrate: set %-30s %2d of %2d rows within 25 %%, mean |error| of totals %4.1f %%, worst row "
              "%s %s %s %+.1f %%" % (sel[0]["name"].split(":")[0], sum(1 for r in sel if abs(r["error"]) <= 0.25),
                                     len(sel), 100 * sum(tot) / max(len(tot), 1), worst["name"], worst["algo"],
                                     worst["phase"], 100 * worst["error"]))
    for r in rows:
        if abs(r["error"]) > 0.25:
            print("calibrate: out: %s %s %s %+.1f %%" % (r["name"], r["algo"], r["phase"], 100 * r["error"]))
    wide = [g for g in groups.values() if g[0]["group_spread"] > 5 / 3]
    for g in wide:
        lo, hi = spans[g[0]["same"]]
        print("calibrate: spread: %s %s over %d records: predicted / measured %.2f..%.2f (%.2fx)" % (
              g[0]["name"].split(":")[0].split("/")[-1], g[0]["phase"], len(g), lo, hi, hi / lo))
    if wide:
        n = sum(len(g) for g in wide)
        print("calibrate: %d rows in %d groups of one plan, flags and phase spread more than 5/3 apart: no one scale "
              "of their predictions is within 25 %% of all (%d of them out)" %
              (n, len(wide), sum(1 for g in wide for r in g if abs(r["error"]) > 0.25)))
# Rows whose record carries its launch's ceiling (GPU records; CPU records with run --ceiling on since
# 2026-12-05: plain send/recv of the phase's busiest receive bytes, measured in the same launch): how many
# out rows predict the phase faster than that launch moved its bytes without reshard (so the constants,
# from another launch, overstated this launch's machine); and, over groups measured in several launches, how much of the
# launch-to-launch spread the ceiling accounts for (log standard deviation about each group's geometric
# mean, of the time and of the time / ceiling).
with_ceiling = [r for r in rows if r.get("ceiling_ms")]
if with_ceiling:
    out = [r for r in with_ceiling if abs(r["error"]) > 0.25]
    below = [r for r in out if r["predicted_ms"] < r["ceiling_ms"]]
    def about_mean(v):  # each value's deviation from the mean of its group
        return [x - sum(v) / len(v) for x in v]
    dev_t, dev_n = [], []
    for g in groups.values():
        g = [r for r in g if r.get("ceiling_ms")]
        if len(g) >= 2:
            dev_t += about_mean([math.log(r["measured_ms"]) for r in g])
            dev_n += about_mean([math.log(r["measured_ms"] / r["ceiling_ms"]) for r in g])
    sd = lambda d: math.sqrt(sum(x * x for x in d) / len(d)) if d else 0
    print("calibrate: ceiling: %d rows carry their launch's ceiling, %d of them within 25 %%; of the %d out, %d "
          "predict the phase faster than its launch's ceiling moved the busiest bytes" %
          (len(with_ceiling), len(with_ceiling) - len(out), len(out), len(below)))
    if dev_t:
        print("calibrate: ceiling: over %d rows measured in several launches, the log spread of a phase's time is "
              "%.3f, of its time / its launch's ceiling %.3f" % (len(dev_t), sd(dev_t), sd(dev_n)))
if json_out:
    json.dump({"format": "reshard-calibration", "version": 2, "rows": rows,
               "skipped": [{"record": f, "name": n, "why": w} for f, n, w in skipped]}, open(json_out, "w"), indent=1)
