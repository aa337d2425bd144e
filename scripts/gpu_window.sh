#!/usr/bin/env bash
# Batches in flight (--window) on the device machine, one call: build, ctest -L gpu (every transport's
# wait changed), then the same plans at window 1 (one batch at a time, the old executor), 4 and 16
# (the default), each `run --json` for scripts/calibrate.sh: cuda-ipc with 4 and 8 ranks on the GPU,
# and CPU MPI with 16 and 32 ranks whose time the waits set (train PP 2 and 4, gen DP 2).
# Run from the repo root with $OUT set; writes $OUT/gpu_window.log, $OUT/{ipc,cpu}/*.json and the
# plans under $OUT/plans/<fingerprint>.json. Env: BUILD, JOBS, SKIP_CTEST=1 (scripts/gpu_common.sh),
# CASES (default "ipc cpu"; "ipc" alone skips the CPU MPI runs, which take most of the call; "direct":
# the 8-rank plan with --fanout direct).
set -uo pipefail
OUT=${OUT:?set OUT to the results folder}
LOG=$OUT/gpu_window.log
. "$(dirname "$0")/gpu_common.sh"
gpu_build_and_test
mkdir -p "$OUT/ipc" "$OUT/cpu"
M=plans/qwen3-4b.json
ipc_case() {  # name ranks train_gpus train gen_gpus gen [plan flags]
  local name=$1; shift
  ITERS=5 window_case reshard "$name" $M "$@"
}
CASES=${CASES:-ipc cpu}
if [[ " $CASES " == *" ipc "* ]]; then
  ipc_case ipc_qwen3_4b_dp2_tp2 4 2 tp=1 2 tp=2
  ipc_case ipc_qwen3_4b_pp2dp2_tp2dp2 8 4 tp=1,pp=2 4 tp=2
fi
# The 8-rank plan without fan-outs: each train rank pushes to both gen replicas itself, so no gen rank
# waits on another process's copies before its own (on one time-sliced GPU those chains set the time).
if [[ " $CASES " == *" direct "* ]]; then
  ipc_case ipc_qwen3_4b_pp2dp2_tp2dp2_direct 8 4 tp=1,pp=2 4 tp=2 --fanout direct
fi
cpu_case() {  # name ranks train_gpus train gen_gpus gen
  local name=$1; shift
  for w in 1 16; do
    TRANSPORT=mpi ALGOS=reshard ITERS=3 run_case "${name}_w$w" $M "$@" RUN --warmup 1 --window "$w" \
      --json "$OUT/cpu/${name}_w$w.json" --force
  done
}
if [[ " $CASES " == *" cpu "* ]]; then
  cpu_case cpu_pp2dp4_tp4dp2 16 8 tp=1,pp=2 8 tp=4
  cpu_case cpu_pp4dp2_tp4dp2 16 8 tp=1,pp=4 8 tp=4
  cpu_case cpu_pp4dp4_tp8dp2 32 16 tp=1,pp=4 16 tp=8
fi
for f in "$OUT"/ipc/*.json "$OUT"/cpu/*.json; do
  [ -f "$f" ] || continue
  say_phases "$f" 2
done
keep_plans_by_fingerprint
