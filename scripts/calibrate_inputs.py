# What scripts/calibrate.py compares, read from the records and what lies beside them: the records
# themselves and their names, each record's plan (found or rebuilt), its machine (a CPU host's constants
# as simulate flags, its cores, whether its ranks were bound) and its preset.
import glob, json, os, re, statistics, subprocess, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpu_report import has_mode, ipc_mode  # a cuda-ipc record's mode, as the GPU reports read it


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


def record_name(f, d, i, rec):
    # The file's name, its config in a list, then prefixes: MPS, the cuda-ipc mode, the CPU set's machine
    # folder, and the commit (several device calls hold the same configs: say which one).
    name = os.path.splitext(os.path.basename(f))[0]
    if isinstance(d, list):
        name += ":" + rec.get("config", str(i)).split(" ")[0]
    if mps_on(f):
        name = "mps/" + name
    if rec.get("arguments", {}).get("transport") == "cuda-ipc" and has_mode(rec):
        name = ipc_mode(rec) + "/" + name
    if glob.glob(os.path.join(os.path.dirname(f), "host_*.json")):  # CPU sets of several machines
        name = os.path.basename(os.path.dirname(f)) + "/" + name
    if run_commit(f):
        name = run_commit(f) + "/" + name
    return name


def load_records(inputs):
    """(file, name, record) of every reshard-run record in the inputs (files, or folders of *.json)."""
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
                records.append((f, record_name(f, d, i, rec), rec))
    return records


def stress_model(path):  # the 4096 x 32 KiB model of scripts/gpu_bench.sh
    params = {}
    for l in range(2048):
        for w in ("gate_proj", "down_proj"):
            params["model.layers.%d.mlp.%s.weight" % (l, w)] = {"shape": [128, 128], "dtype": "bfloat16"}
    json.dump({"model": "stress-4096x32KiB", "source": "scripts/gpu_bench.sh", "params": params}, open(path, "w"))


class Plans:
    """A record's plan: the file its run named (or the same name in plans/ beside it), results/plans by
    fingerprint, else rebuilt from results/plans/recipes.json into the cache folder."""

    def __init__(self, reshard, cache, recipes="results/plans/recipes.json"):
        self.reshard, self.cache = reshard, cache
        self.recipes = json.load(open(recipes))["plans"] if os.path.isfile(recipes) else {}

    def path(self, f, rec):
        fp = rec["plan"]["fingerprint"]
        given = rec["arguments"].get("plan", "")
        beside_it = os.path.join(os.path.dirname(f), "plans", os.path.basename(given)) if given else ""
        for c in [given, beside_it, f"results/plans/{fp}.cbor", f"results/plans/{fp}.json",
                  f"{self.cache}/{fp}.cbor"]:
            if c and os.path.isfile(c):
                return c
        if fp not in self.recipes:
            return None
        os.makedirs(self.cache, exist_ok=True)
        args = list(self.recipes[fp])
        if "{stress_model}" in args:
            stress_model(f"{self.cache}/stress-model.json")
            args = [f"{self.cache}/stress-model.json" if a == "{stress_model}" else a for a in args]
        out = f"{self.cache}/{fp}.cbor"
        subprocess.run([self.reshard, "plan"] + args + ["--force", "-o", out], check=True, capture_output=True)
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
        log = open(os.path.join(os.path.dirname(f), "cpu_waits.log")).read()
    except OSError:
        return None
    m = re.search(r"^# machine: (\d+) cores", log, re.M)
    return int(m.group(1)) if m else None


def ranks_bound(f, rec):
    # Whether mpirun bound the ranks: the record's rank_cpus (each rank's allowed CPUs, records from
    # 2026-12-04 on) narrower than its host, else the "# binding: core" line of the cpu_waits.log beside it.
    if rec.get("rank_cpus") and rec.get("host_cores"):
        return max(rec["rank_cpus"]) < min(rec["host_cores"])
    try:
        log = open(os.path.join(os.path.dirname(f), "cpu_waits.log")).read()
    except OSError:
        return False
    return re.search(r"^# binding: core", log, re.M) is not None


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


def handoff_us(f, h, world):
    # With single copy, a batch's hand-off while the others copy (mpi_busy_handoff.h) as its latency: the
    # median of every measurement of it on this machine at this rank count, the host file's and the
    # rounds in the nearest handoff.json (scripts/latency_probe.cpp; a number or a list of rounds): one
    # launch's probe moved 4x on the VM (docs/calibration.md, "The same launch's ceiling"); None without
    # any (the preset's).
    rounds = beside(f, "handoff.json").get("latency_busy_us", {}).get(str(world), [])
    rounds = rounds if isinstance(rounds, list) else [rounds]
    rounds = rounds + ([h["latency_busy_us"]] if "latency_busy_us" in h else [])
    return statistics.median(rounds) if rounds else None


def host_flags(f, rec):
    # A CPU record's own machine: host_<world>.json beside it (scripts/calibrate.sh --measure-host at the
    # run's rank count, made in the same call as the runs); the preset's constants from it, derived as
    # cpu-mpi-local's are (system_presets.cpp): link = one pair's point-to-point, copy = one rank's
    # memcpy, shared = all ranks' memcpy, copies per received byte = shared / the first half's
    # point-to-point to the second, every sender to every receiver (as train ranks feed gen ranks).
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
    # The hand-off only with single copy: without it, --host-cores, fitted to those hosts' oversubscribed
    # records, already carries what sharing the cores costs, and the hand-off on top counted it twice
    # (986 against 1051 of 1355 rows, docs/calibration.md "Twenty iterations, and the hand-off in the model").
    handoff = None if none else handoff_us(f, h, rec.get("world_size", 0))
    # Without single copy, the host's cores (simulate --host-cores).
    cores = machine_cores(f, rec)
    flags = []
    if handoff:
        # The hand-off was measured with every rank working; a stage's batches wait only for its own
        # working ranks (--latency-per-busy-rank; latency_probe.cpp's latency_busy_us_with_c_copiers on the VM).
        flags += ["--latency-us", "%.2f" % handoff, "--latency-per-busy-rank"]
    if fan:
        flags += ["--fan-gbps", "%.3f" % fan]
    if none and cores:
        flags += ["--host-cores", str(cores)]
    flags += ["--nvlink-gbps", link, "--nic-gbps", link, "--copy-gbps", "%.3f" % h["memcpy_one_rank_gbps"],
              "--shared-copy-gbps", "%.3f" % h["memcpy_all_ranks_aggregate_gbps"],
              "--wire-copies", "%.3f" % (h["memcpy_all_ranks_aggregate_gbps"] / many)]
    return flags + (["--sender-copies"] if none else [])


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
            print("calibrate: no one-GPU preset for the device %r of %s (ONE_GPU_PRESETS)" % (device, f),
                  file=sys.stderr)
            sys.exit(2)
        name = ONE_GPU_PRESETS[card][1 if mps_on(f) else 0]
        return name, None if name else "no preset for its device under MPS"
    if transport == "cuda-ipc" and gpus and ranks > gpus:
        return None, "ranks sharing several GPUs: no preset (cuda-ipc across GPUs is not modelled)"
    card = next((k for k in MULTI_GPU_PRESETS if device.startswith(k)), "NVIDIA H100")
    return MULTI_GPU_PRESETS[card], None
