#!/usr/bin/env bash
# Issue 15 on a GPU, one device call: build, ctest -L gpu, then each vLLM family of tests/data/vllm-*.json
# planned with --gen-layout vllm --bulk all and run with --transport cuda-ipc --check (every rank on
# the visible GPUs), beside --algo golden. Run from the repo root with $OUT set; writes
# $OUT/gpu_vllm_layouts.log. Env: BUILD (default build-gpu), JOBS (default nproc), SKIP_CTEST=1.
set -uo pipefail
OUT=${OUT:?set OUT to the results folder}
LOG=$OUT/gpu_vllm_layouts.log
. "$(dirname "$0")/gpu_common.sh"
gpu_build_and_test
run_family() {  # name ranks train_gpus train gen_gpus gen flags...: --gen-layout vllm --bulk all
  local name=$1; shift
  run_case "$name" "tests/data/$name.json" "$@" --bulk all --gen-layout vllm
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
