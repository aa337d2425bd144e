#!/usr/bin/env bash
# In what order one GPU runs several processes' queued kernels (no MPS), against simulate's turns
# (time_slice.h): bench/gpu_turns.cpp for each P of PS and depth of DEPTHS (kernels in flight per rank),
# each kernel WORK_US of GPU work, KERNELS per rank, HOST_US of host time between a finished kernel and
# the next launch. Run from the repo root on the GPU machine with $OUT set; about 20 s. Writes
# $OUT/gpu_turns.json (one record per run, the program's JSON) and $OUT/gpu_turns.log (commands, a table).
# Env: BUILD (default build-gpu; uses $BUILD/bench/reshard_gpu_turns when built, else compiles
# bench/gpu_turns.cpp with mpicxx against CUDA_HOME, default /usr/local/cuda), PS (default "2 4"), DEPTHS
# (default "1 2 4 16"), KERNELS (16), WORK_US (250), HOST_US (50), REPS (3), STREAMS (each rank's streams,
# kernels round-robin over them; default "1", e.g. "1 2" runs every case with each), FILL (1: each kernel
# holds the whole GPU, two 1024-thread blocks per SM; default 0, one thread).
set -uo pipefail
ROOT=$(pwd)
OUT=${OUT:?set OUT to the results folder}
BUILD=${BUILD:-build-gpu}
PS=${PS:-"2 4"}
DEPTHS=${DEPTHS:-"1 2 4 16"}
KERNELS=${KERNELS:-16}
WORK_US=${WORK_US:-250}
HOST_US=${HOST_US:-50}
REPS=${REPS:-3}
STREAMS=${STREAMS:-1}
FILL=${FILL:-0}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
# shellcheck source=gpu_probe.sh
. "$ROOT/scripts/gpu_probe.sh"
probe_recipe_start gpu_turns
probe_binary gpu_turns
n=0
for p in $PS; do
  for d in $DEPTHS; do
   for t in $STREAMS; do
    args=(--kernels "$KERNELS" --work-us "$WORK_US" --depth "$d" --host-us "$HOST_US" --reps "$REPS" --streams "$t" --fill "$FILL")
    say "\$ mpirun -np $p $BIN ${args[*]}"
    if timeout 60 mpirun --oversubscribe --bind-to none -np "$p" "$BIN" "${args[@]}" >"$WORK/$n.json" 2>>"$LOG"; then
      n=$((n + 1))
    else
      say "# failed"; rm -f "$WORK/$n.json"
    fi
   done
  done
done
mapfile -t RUNS < <(ls "$WORK"/*.json | sort -V)
python3 - "$OUT/gpu_turns.json" "${RUNS[@]}" <<'PY' | tee -a "$LOG"
import json, statistics, sys
recs = [json.load(open(f)) for f in sys.argv[2:]]
json.dump({"format": "reshard-gpu-turns-set", "version": 1, "runs": recs}, open(sys.argv[1], "w"), indent=1)
print(f"{'P':>3} {'depth':>5} {'streams':>7} {'kernels':>7} {'work_us':>8} {'span_us':>9} {'changes':>8} {'us/change':>9}")
for r in recs:
    m = sorted(r["reps"], key=lambda x: x["span_us"])[len(r["reps"]) // 2]
    print(f"{r['ranks']:>3} {r['depth']:>5} {r.get('streams', 1):>7} {r['kernels']:>7} {m['work_us']:>8.0f} {m['span_us']:>9.1f} "
          f"{m['changes']:>8} {m['us_per_change']:>9.1f}")
PY
