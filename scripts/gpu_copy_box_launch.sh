#!/usr/bin/env bash
# What one executor pack or unpack launch (cuda_copy_box) costs the host thread: bench/copy_box_launch.cpp
# for each P of PS processes on ONE GPU (P = 1: a rank alone on its GPU, as under NCCL; P > 1: the
# *-shared-1gpu presets' time-slicing). Run from the repo root on the GPU machine with $OUT set; about
# a minute with the build. Writes $OUT/copy_box_launch.json (one record per P, the program's JSON) and
# $OUT/copy_box_launch.log (commands, a table). Env: BUILD (default build-gpu; configured and the one
# target built when missing), PS (default "1 2 4 8"), LAUNCHES (256), REPS (9).
set -uo pipefail
OUT=${OUT:?set OUT to the results folder}
BUILD=${BUILD:-build-gpu}
PS=${PS:-"1 2 4 8"}
LAUNCHES=${LAUNCHES:-256}
REPS=${REPS:-9}
# shellcheck source=gpu_probe.sh
. "$(dirname "$0")/gpu_probe.sh"
probe_recipe_start copy_box_launch
BIN=$BUILD/bench/reshard_copy_box_launch
if [ ! -x "$BIN" ]; then
  say "\$ cmake --build $BUILD --target reshard_copy_box_launch"
  { [ -f "$BUILD/CMakeCache.txt" ] || cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release; } >>"$LOG" 2>&1 &&
    cmake --build "$BUILD" --target reshard_copy_box_launch -j "$(nproc)" >>"$LOG" 2>&1 ||
    { say "build failed"; tail -30 "$LOG"; exit 1; }
fi
for p in $PS; do
  say "\$ mpirun -np $p $BIN --launches $LAUNCHES --reps $REPS"
  timeout 120 mpirun --oversubscribe --bind-to none -np "$p" "$BIN" --launches "$LAUNCHES" --reps "$REPS" \
    >"$WORK/$p.json" 2>>"$LOG" || { say "# failed"; rm -f "$WORK/$p.json"; }
done
mapfile -t RUNS < <(ls "$WORK"/*.json 2>/dev/null | sort -V)
[ ${#RUNS[@]} -gt 0 ] || { say "no run succeeded"; exit 1; }
python3 - "$OUT/copy_box_launch.json" "${RUNS[@]}" <<'PY' | tee -a "$LOG"
import json, sys
recs = [json.load(open(f)) for f in sys.argv[2:]]
json.dump({"format": "reshard-copy-box-launch-set", "version": 1, "runs": recs}, open(sys.argv[1], "w"), indent=1)
print(f"{'P':>3} {'kind':>10} {'bytes':>8} {'issue_us':>9} {'(min-max)':>13} {'drain_us':>9} {'(min-max)':>13}")
for r in recs:
    for c in r["cases"]:
        i, d = c["issue_us"], c["drain_us"]
        print(f"{r['ranks']:>3} {c['kind']:>10} {c['bytes']:>8} {i['mean']:>9.3f} {i['min']:>6.2f}-{i['max']:<6.2f} "
              f"{d['mean']:>9.3f} {d['min']:>6.2f}-{d['max']:<6.2f}")
PY
