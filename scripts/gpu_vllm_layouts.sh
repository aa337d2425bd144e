#!/usr/bin/env bash
# Issue 15 on a GPU, one device call: build, ctest -L gpu, then each vLLM family of tests/data/vllm-*.json
# planned with --gen-layout vllm --bulk all and run with --transport cuda-ipc --check (every rank on
# the visible GPUs), beside --algo golden. Run from the repo root with $OUT set; writes
# $OUT/gpu_vllm_layouts.log. Env: BUILD (default build-gpu), JOBS (default nproc), SKIP_CTEST=1.
set -uo pipefail
OUT=${OUT:?set OUT to the results folder}
BUILD=${BUILD:-build-gpu}
LOG=$OUT/gpu_vllm_layouts.log
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
say() { echo "$@" | tee -a "$LOG"; }
{ nvidia-smi -L; git rev-parse HEAD 2>/dev/null; } >>"$LOG" 2>&1
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >>"$LOG" 2>&1 && cmake --build "$BUILD" -j "${JOBS:-$(nproc)}" >>"$LOG" 2>&1 ||
  { say "build failed"; tail -30 "$LOG"; exit 1; }
if [ "${SKIP_CTEST:-0}" != 1 ]; then
  (cd "$BUILD" && ctest -L gpu --output-on-failure --timeout 600) >>"$LOG" 2>&1
  say "ctest -L gpu: $(grep -E 'tests passed|tests failed' "$LOG" | tail -1)"
fi
R=$BUILD/apps/reshard/reshard
D=tests/data
run_family() {  # name ranks train_gpus train gen_gpus gen flags...
  local name=$1 np=$2 tg=$3 t=$4 gg=$5 g=$6; shift 6
  "$R" plan --model "$D/$name.json" --train-gpus "$tg" --train "$t" --gen-gpus "$gg" --gen "$g" --bulk all \
    --gen-layout vllm "$@" -o "$OUT/$name.json" --force >>"$LOG" 2>&1 || { say "$name: plan failed"; return; }
  for algo in reshard golden; do
    out=$(mpirun --oversubscribe -np "$np" "$R" run --plan "$OUT/$name.json" --transport cuda-ipc --check \
      --algo "$algo" --iters 3 2>&1)
    echo "$out" >>"$LOG"
    say "$name $algo: $(echo "$out" | grep -E '#wrong' | tail -1)"
  done
}
run_family vllm-qwen2 6 2 tp=2 4 tp=4 --head-dim 16
run_family vllm-qwen3-moe 6 2 ep=2 4 tp=4,ep=4
run_family vllm-deepseek-mla 4 2 ep=2 2 tp=2,ep=2 --gen-expert-placement round_robin
run_family vllm-mixtral 4 2 ep=2 2 tp=2 --head-dim 16
run_family vllm-qwen3-vl 4 2 tp=2 2 tp=2
run_family vllm-nemotron-h 4 2 tp=2 2 tp=2 --head-dim 16 --ssm-groups 2
run_family vllm-qwen3-next 4 2 tp=2 2 tp=2 --linear-key-heads 4
run_family vllm-qwen3.5 6 2 tp=2 4 tp=4 --linear-key-heads 4
rm -f "$OUT"/vllm-*.json
