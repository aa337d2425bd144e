#!/usr/bin/env bash
# Issue 18 on the device machine, one call: build, ctest -L gpu (the schedule and batch policy changed
# under every transport), a cuda-ipc run whose --json carries the one-process device-copy efficiency,
# then the host's copy and MPI rates (scripts/calibrate.sh --measure-host) and CPU MPI runs whose time
# the waits set (16 and 32 ranks, train PP 2 and 4, gen DP 2), each `run --json` for
# scripts/calibrate.sh. Run from the repo root with $OUT set; writes $OUT/gpu_schedule.log and
# $OUT/{ipc,cpu}/*.json. Env: BUILD, JOBS, SKIP_CTEST=1 (scripts/gpu_common.sh).
set -uo pipefail
OUT=${OUT:?set OUT to the results folder}
LOG=$OUT/gpu_schedule.log
. "$(dirname "$0")/gpu_common.sh"
gpu_build_and_test
mkdir -p "$OUT/ipc" "$OUT/cpu"
M=plans/qwen3-4b.json
# cuda-ipc, 4 ranks on the GPU: Qwen3-4B DP2 -> TP2 (the calibration recipe ea0529adf0e5f41e).
ALGOS=reshard run_case ipc_qwen3_4b_dp2_tp2 $M 4 2 tp=1 2 tp=2 RUN --json "$OUT/ipc/qwen3_4b_dp2_tp2.json" --force
say "ipc device efficiency: $(grep -o '"device_efficiency": [0-9.]*' "$OUT/ipc/qwen3_4b_dp2_tp2.json" | tail -1)"
# The host: memcpy one rank / all, MPI one pair / all pairs, at 16 ranks (cpu-mpi-local's procedure).
bash scripts/calibrate.sh --measure-host 16 >"$OUT/cpu/host_16.json" 2>>"$LOG"
say "host: $(cat "$OUT/cpu/host_16.json")"
# CPU MPI, host memory: waits set these (every gen rank receives from every train stage).
cpu_case() {  # name ranks train_gpus train gen_gpus gen
  local name=$1; shift
  TRANSPORT=mpi ALGOS=reshard ITERS=3 run_case "$name" $M "$@" RUN --warmup 1 --json "$OUT/cpu/$name.json" --force
}
cpu_case cpu_pp2dp4_tp4dp2 16 8 tp=1,pp=2 8 tp=4
cpu_case cpu_pp4dp2_tp4dp2 16 8 tp=1,pp=4 8 tp=4
cpu_case cpu_pp4dp4_tp8dp2 32 16 tp=1,pp=4 16 tp=8
keep_plans_by_fingerprint
