#!/usr/bin/env bash
# Issue 16 on a GPU, one device call: build, ctest -L gpu, then the Megatron layouts of the issue
# planned and run with --transport cuda-ipc --check (every rank on the visible GPUs), beside --algo
# golden: linear_qkv chunks with tp > query groups (both sides), output-gated linear_qkv with the
# gated delta net's in_proj, virtual pipeline with pp-before-dp rank order, and the names. Run from
# the repo root with $OUT set; writes $OUT/gpu_megatron_layouts.log. Env: BUILD (default build-gpu),
# JOBS (default nproc), SKIP_CTEST=1.
set -uo pipefail
OUT=${OUT:?set OUT to the results folder}
BUILD=${BUILD:-build-gpu}
LOG=$OUT/gpu_megatron_layouts.log
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
say() { echo "$@" | tee -a "$LOG"; }
{ nvidia-smi -L; git rev-parse HEAD 2>/dev/null; } >>"$LOG" 2>&1
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >>"$LOG" 2>&1 && cmake --build "$BUILD" -j "${JOBS:-$(nproc)}" >>"$LOG" 2>&1 ||
  { say "build failed"; tail -30 "$LOG"; exit 1; }
grep -E "reshard backends" "$LOG" | tail -1 | tee -a "$LOG"
if [ "${SKIP_CTEST:-0}" != 1 ]; then
  (cd "$BUILD" && ctest -L gpu --output-on-failure --timeout 600) >>"$LOG" 2>&1
  say "ctest -L gpu: $(grep -E 'tests passed|tests failed' "$LOG" | tail -1)"
fi
R=$BUILD/apps/reshard/reshard
D=tests/data
run_case() {  # name model ranks train_gpus train gen_gpus gen flags...
  local name=$1 model=$2 np=$3 tg=$4 t=$5 gg=$6 g=$7; shift 7
  "$R" plan --model "$D/$model.json" --train-gpus "$tg" --train "$t" --gen-gpus "$gg" --gen "$g" "$@" \
    -o "$OUT/$name.json" --force >>"$LOG" 2>&1 || { say "$name: plan failed"; return; }
  for algo in reshard golden; do
    out=$(mpirun --oversubscribe -np "$np" "$R" run --plan "$OUT/$name.json" --transport cuda-ipc --check \
      --algo "$algo" --iters 3 2>&1)
    echo "$out" >>"$LOG"
    say "$name $algo: $(echo "$out" | grep -E '#wrong' | tail -1)"
  done
}
run_case qkv_chunks_tp4_megatron_tp4 vllm-qwen2 8 4 tp=4 4 tp=4 --gen-layout megatron --bulk all --head-dim 16
run_case gated_qkv_gdn_tp2_megatron_tp4 vllm-qwen3-next 6 2 tp=2 4 tp=4 --gen-layout megatron --bulk all --linear-key-heads 4
run_case vpp2_ppdp_tp2 tiny-dense 6 4 tp=2,pp=2,vpp=2 2 tp=2 --train-order tp-cp-ep-pp-dp
run_case names_qwen35_megatron vllm-qwen3.5 4 2 tp=2 2 tp=2 --gen-layout megatron --bulk all --linear-key-heads 4
rm -f "$OUT"/*.json
