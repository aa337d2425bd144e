#!/usr/bin/env bash
# Compares `reshard simulate` predictions with measured `reshard run --json` records and prints the
# error per phase, plus the effective bandwidth each measurement implies (a starting point for
# fitting a preset, e.g. cpu-mpi-local). Goal (issue 8): within +-25 %.
#
# usage: scripts/calibrate.sh [--build DIR] [--system PRESET] [--json OUT] [RUN_JSON|DIR ...]
#   default inputs: results/*.json records of format "reshard-run".
#   --system: the preset for every record; default cpu-mpi-local for transport "mpi", else
#             h100-nvl8-ib400. Extra `reshard simulate` flags: RESHARD_SIMULATE_FLAGS.
# A record's plan is found at its arguments.plan path, else at results/plans/<fingerprint>.{cbor,json};
# records whose plan is missing (or whose fingerprint differs) are listed and skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${RESHARD_BUILD_DIR:-build}
SYSTEM=""
JSON_OUT=""
INPUTS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --build) BUILD=$2; shift 2 ;;
    --system) SYSTEM=$2; shift 2 ;;
    --json) JSON_OUT=$2; shift 2 ;;
    -h|--help) sed -n 2,12p "$0"; exit 0 ;;
    *) INPUTS+=("$1"); shift ;;
  esac
done
[ ${#INPUTS[@]} -gt 0 ] || INPUTS=(results)
exec python3 - "$BUILD/apps/reshard/reshard" "$SYSTEM" "$JSON_OUT" "${INPUTS[@]}" <<'PY'
import json, os, shlex, subprocess, sys

reshard, system, json_out, inputs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
extra = shlex.split(os.environ.get("RESHARD_SIMULATE_FLAGS", ""))
files = []
for p in inputs:
    files += sorted(os.path.join(p, f) for f in os.listdir(p) if f.endswith(".json")) if os.path.isdir(p) else [p]
records = []
for f in files:
    try:
        d = json.load(open(f))
    except (OSError, ValueError):
        continue
    if isinstance(d, dict) and d.get("format") == "reshard-run":
        records.append((f, d))
if not records:
    sys.exit("calibrate: no reshard-run records in " + " ".join(inputs))

def plan_path(rec):
    fp = rec["plan"]["fingerprint"]
    for c in [rec["arguments"].get("plan", ""), f"results/plans/{fp}.cbor", f"results/plans/{fp}.json"]:
        if c and os.path.isfile(c):
            return c
    return None

rows, errors = [], []
print("%-36s %-16s %-10s %12s %12s %8s %12s" % ("record", "system", "phase", "measured_ms", "predicted_ms", "error", "eff_GB/s"))
for f, rec in records:
    plan = plan_path(rec)
    if plan is None:
        print("%-36s skipped: plan %s not found" % (os.path.basename(f), rec["plan"]["fingerprint"]))
        continue
    sysname = system or ("cpu-mpi-local" if rec["arguments"].get("transport") == "mpi" else "h100-nvl8-ib400")
    args = [reshard, "simulate", plan, "--system", sysname, "--json",
            "--streams", str(rec["arguments"].get("streams", 2)),
            "--batch-ops", str(rec["arguments"].get("batch_ops", 64)),
            "--batch-bytes", str(rec["arguments"].get("batch_bytes", 268435456))] + extra
    sim = json.loads(subprocess.run(args, check=True, capture_output=True, text=True).stdout)
    if sim["plan"]["fingerprint"] != rec["plan"]["fingerprint"]:
        print("%-36s skipped: plan file %s has fingerprint %s, the run %s" % (os.path.basename(f), plan,
              sim["plan"]["fingerprint"], rec["plan"]["fingerprint"]))
        continue
    predicted = {p["phase"]: p["time_ms"] for p in sim["phases"]}
    predicted["total"] = sim["total_time_ms"]
    for ph in rec["phases"]:
        name, meas = ph["phase"], ph["time_ms_avg"]
        if name not in predicted or meas <= 0:
            continue
        pred = predicted[name]
        err = pred / meas - 1
        eff = ph["busiest_bytes"] / (meas * 1e-3) / 1e9 if ph.get("busiest_bytes") else 0
        print("%-36s %-16s %-10s %12.3f %12.3f %+7.1f%% %12.3f" % (os.path.basename(f), sysname, name, meas, pred, err * 100, eff))
        rows.append({"record": f, "system": sysname, "phase": name, "measured_ms": meas, "predicted_ms": pred,
                     "error": err, "effective_gbps": eff})
        if name == "total":
            errors.append(abs(err))
if errors:
    print("calibrate: %d runs, mean |error| of totals %.1f %%, worst %.1f %% (goal: within 25 %%)" %
          (len(errors), 100 * sum(errors) / len(errors), 100 * max(errors)))
if json_out:
    json.dump({"format": "reshard-calibration", "version": 1, "rows": rows}, open(json_out, "w"), indent=1)
PY
