#!/usr/bin/env bash
# Issue 16 on a GPU, one device call: build, ctest -L gpu, then the Megatron layouts of the issue
# planned and run with --transport cuda-ipc --check (every rank on the visible GPUs), beside --algo
# golden: linear_qkv chunks with tp > query groups (both sides), output-gated linear_qkv with the
# gated delta net's in_proj, virtual pipeline with pp-before-dp rank order, and the names. Run from
# the repo root with $OUT set; writes $OUT/gpu_megatron_layouts.log. Env: BUILD (default build-gpu),
# JOBS (default nproc), SKIP_CTEST=1.
set -uo pipefail
OUT=${OUT:?set OUT to the results folder}
LOG=$OUT/gpu_megatron_layouts.log
. "$(dirname "$0")/gpu_common.sh"
gpu_build_and_test
D=tests/data
run_case qkv_chunks_tp4_megatron_tp4 $D/vllm-qwen2.json 8 4 tp=4 4 tp=4 --gen-layout megatron --bulk all --head-dim 16
run_case gated_qkv_gdn_tp2_megatron_tp4 $D/vllm-qwen3-next.json 6 2 tp=2 4 tp=4 --gen-layout megatron --bulk all --linear-key-heads 4
run_case vpp2_ppdp_tp2 $D/tiny-dense.json 6 4 tp=2,pp=2,vpp=2 2 tp=2 --train-order tp-cp-ep-pp-dp
run_case names_qwen35_megatron $D/vllm-qwen3.5.json 4 2 tp=2 2 tp=2 --gen-layout megatron --bulk all --linear-key-heads 4
rm -f "$OUT"/*.json
