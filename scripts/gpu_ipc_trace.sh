#!/usr/bin/env bash
# cuda-ipc records and traces of the current build on the device machine, one call: build, ctest -L gpu,
# then Qwen3-4B DP2 -> TP2 (4 ranks) and PP2xDP2 -> TP2xDP2 (8 ranks; two-phase, the automatic choice,
# and --fanout direct) at window 1 and 16 (WINDOWS), the run's defaults otherwise. Each case runs twice with
# --check: once for the record ($OUT/ipc/NAME.json, read by scripts/calibrate.sh) and once with
# --ipc-trace ($OUT/trace/NAME.<rank>.tsv, read by scripts/ipc_trace.py), so the trace's host timestamps
# do not touch the record's times.
# CASES=config2 runs instead the H200 records' config 2 (Qwen3-30B-A3B EP4 -> TP4, 8 ranks) cut to 18 of 48
# layers to fit an H100 (the records' 36 need 109 GiB on one GPU); its plan C2_PLAN, default
# results/gpu/trace_h100/config2_18l/plans/5a93a6d5cb8963e7.json (made where RE2 is: `reshard plan --model
# plans/qwen3-30b-a3b.json --train-gpus 4 --train ep=4 --gen-gpus 4 --gen tp=4 --exclude
# 'model\.layers\.(1[89]|[2-4][0-9])\.'`), at those records' flags (--batch-ops 4096
# --batch-bytes 4Gi --staging-bytes 1Gi), reshard and golden, --ipc-mode push and pull, window 1 and 16.
# Run from the repo root with $OUT set; writes $OUT/gpu_ipc_trace.log and the plans under
# $OUT/plans/<fingerprint>.json. Env: BUILD, JOBS, SKIP_CTEST=1 (gpu_common.sh), ITERS (default 5), CASES
# (default "qwen3_4b"), WINDOWS (the qwen3_4b cases' windows, default "1 16").
set -uo pipefail
OUT=${OUT:?set OUT to the results folder}
LOG=$OUT/gpu_ipc_trace.log
. "$(dirname "$0")/gpu_common.sh"
gpu_build_and_test
mkdir -p "$OUT/ipc" "$OUT/trace"
ITERS=${ITERS:-5}
CASES=${CASES:-qwen3_4b}
# run_traced NAME RANKS PLAN [run flags...]: the record run, then the traced one.
run_traced() {
  local name=$1 np=$2 plan=$3 pass extra out; shift 3
  for pass in record trace; do
    extra=(--json "$OUT/ipc/$name.json" --force)
    [ "$pass" = trace ] && extra=(--ipc-trace "$OUT/trace/$name")
    out=$(timeout 300 mpirun --oversubscribe -np "$np" "$R" run --plan "$plan" --transport cuda-ipc \
          --check --iters "$ITERS" --warmup 1 "$@" "${extra[@]}" 2>&1)
    echo "$out" >>"$LOG"
    say "$name $pass: $(echo "$out" | grep -E '#wrong' | tail -1)"
  done
}
if [ "$CASES" = config2 ]; then
  C2_PLAN=${C2_PLAN:-results/gpu/trace_h100/config2_18l/plans/5a93a6d5cb8963e7.json}
  for mode in push pull; do
    for algo in reshard golden; do
      for w in 1 16; do
        run_traced "config2_${mode}_${algo}_w$w" 8 "$C2_PLAN" --ipc-mode "$mode" --algo "$algo" --window "$w" \
          --batch-ops 4096 --batch-bytes 4Gi --staging-bytes 1Gi
      done
    done
  done
else
plan() {  # plan NAME TRAIN_GPUS TRAIN GEN_GPUS GEN [plan flags...]
  local name=$1 tg=$2 t=$3 gg=$4 g=$5; shift 5
  "$R" plan --model plans/qwen3-4b.json --train-gpus "$tg" --train "$t" --gen-gpus "$gg" --gen "$g" "$@" \
    -o "$OUT/$name.json" --force >>"$LOG" 2>&1 || say "$name: plan failed"
}
plan dp2_tp2 2 tp=1 2 tp=2
plan pp2dp2_tp2dp2 4 tp=1,pp=2 4 tp=2
plan pp2dp2_tp2dp2_direct 4 tp=1,pp=2 4 tp=2 --fanout direct
for c in "dp2_tp2 4" "pp2dp2_tp2dp2 8" "pp2dp2_tp2dp2_direct 8"; do
  read -r name np <<<"$c"
  for w in ${WINDOWS:-1 16}; do run_traced "${name}_w$w" "$np" "$OUT/$name.json" --window "$w"; done
done
fi
for f in "$OUT"/ipc/*.json; do
  say_phases "$f"
done
keep_plans_by_fingerprint
