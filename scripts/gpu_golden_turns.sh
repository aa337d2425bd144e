#!/usr/bin/env bash
# Golden's unpacks on one time-sliced GPU, one device call: build, then --algo golden at the run's
# defaults (256 MiB / 64-op batches) at window 1, 4 and 16 on the 4-rank (Qwen3-4B DP2 -> TP2) and the
# 8-rank (PP2xDP2 -> TP2xDP2) plans of gpu_window.sh, each `run --json` for scripts/calibrate.sh, and one
# --ipc-trace of the 4-rank plan at window 16 (scripts/ipc_trace.py: a receiver's gap from one wait's end
# to its next is its unpacks and the device sync, Executor::retire_oldest). Why: golden's receivers
# unpack each waited batch in their own context, so at small batches they take turns with one another
# (replayer.cpp, Replayer::unpack), which the records at 4 GiB batches hardly show.
# Run from the repo root with $OUT set; writes $OUT/gpu_golden_turns.log, $OUT/ipc/*.json,
# $OUT/trace/*.tsv and the plans under $OUT/plans/<fingerprint>.json. Env: BUILD, JOBS (gpu_common.sh),
# ITERS (default 5); no ctest (the executor is unchanged by the rule it checks).
set -uo pipefail
OUT=${OUT:?set OUT to the results folder}
LOG=$OUT/gpu_golden_turns.log
. "$(dirname "$0")/gpu_common.sh"
gpu_build_reshard_only
M=plans/qwen3-4b.json
window_case golden golden_qwen3_4b_dp2_tp2 $M 4 2 tp=1 2 tp=2
window_case golden golden_qwen3_4b_pp2dp2_tp2dp2 $M 8 4 tp=1,pp=2 4 tp=2
say "\$ trace: golden_qwen3_4b_dp2_tp2_w16 --ipc-trace $OUT/trace/golden_w16"
mpirun --oversubscribe -np 4 "$R" run --plan "$OUT/golden_qwen3_4b_dp2_tp2_w16.json" --transport cuda-ipc --algo golden \
  --iters 3 --ipc-trace "$OUT/trace/golden_w16" >>"$LOG" 2>&1
for f in "$OUT"/ipc/*.json; do
  [ -f "$f" ] || continue
  say_phases "$f" 2
done
keep_plans_by_fingerprint
