#!/usr/bin/env bash
# Issue-6 GPU measurements, run on the device machine after scripts/gpu_bench.sh (same build dir):
#   * MXFP8 quantize throughput vs a device copy of the same bytes (bench/bench_quantize.cu);
#   * refit time of the three precision pairs on one layout (Qwen3-4B shapes, DP2 -> TP2, 4 ranks on
#     one GPU through cuda-ipc, --check): BF16 -> BF16, block-FP8 -> FP8, BF16 -> MXFP8; and into a
#     Megatron destination: BF16 -> BF16 (megatron-bf16), block-FP8 dequantized on the sources ->
#     BF16 (megatron-fp8) and -> MXFP8 (megatron-fp8mx).
# Writes $OUT/gpu_precision.log and $OUT/gpu_precision.json (list of records).
set -uo pipefail
ROOT=$(pwd)
OUT=${OUT:?set OUT to the results folder}
BUILD=${BUILD:-build-gpu}
ITERS=${ITERS:-5}
RUN_FLAGS=${RUN_FLAGS-"--batch-bytes 4Gi --staging-bytes 1Gi --batch-ops 4096"}
WORK=$(mktemp -d)
LOG=$OUT/gpu_precision.log
: >"$LOG"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
RESHARD=$ROOT/$BUILD/apps/reshard/reshard
run() { echo "\$ $*" >>"$LOG"; "$@" >>"$LOG" 2>&1; local rc=$?; echo "# exit $rc" >>"$LOG"; return $rc; }

run cmake -S "$ROOT" -B "$ROOT/$BUILD" -DRESHARD_BUILD_BENCH=ON
run cmake --build "$ROOT/$BUILD" -j"$(nproc)" --target reshard_bench_quantize
run "$ROOT/$BUILD/bench/reshard_bench_quantize" "$WORK/quantize.json" --mib 1024 --iters 20

# Block-FP8 metadata with Qwen3-4B's shapes: every 2-D projection in e4m3 with a float32
# weight_scale_inv of [ceil(out/128), ceil(in/128)] beside it (DeepSeek-V3's published format).
python3 - plans/qwen3-4b.json "$WORK/qwen3-4b-fp8.json" <<'PY'
import json, sys
src = json.load(open(sys.argv[1]))["params"]
out = {}
for name, meta in src.items():
    shape = meta["shape"]
    quantize = len(shape) == 2 and name.endswith("_proj.weight")
    out[name] = {"shape": shape, "dtype": "float8_e4m3fn" if quantize else meta["dtype"]}
    if quantize:
        out[name[: -len("weight")] + "weight_scale_inv"] = {
            "shape": [-(-shape[0] // 128), -(-shape[1] // 128)], "dtype": "float32"}
json.dump({"model": "Qwen3-4B-block-fp8 (shapes of Qwen/Qwen3-4B)", "params": out}, open(sys.argv[2], "w"))
PY
P=(--train-gpus 2 --train tp=1 --gen-gpus 2 --gen tp=2 --force)
run "$RESHARD" plan --model plans/qwen3-4b.json "${P[@]}" -o "$WORK/bf16.json"
run "$RESHARD" plan --model "$WORK/qwen3-4b-fp8.json" "${P[@]}" --gen-precision fp8 -o "$WORK/fp8.json"
run "$RESHARD" plan --model plans/qwen3-4b.json "${P[@]}" --gen-precision mxfp8 -o "$WORK/mxfp8.json"
M=(--gen-layout megatron)
run "$RESHARD" plan --model plans/qwen3-4b.json "${P[@]}" "${M[@]}" -o "$WORK/megatron-bf16.json"
run "$RESHARD" plan --model "$WORK/qwen3-4b-fp8.json" "${P[@]}" "${M[@]}" -o "$WORK/megatron-fp8.json"
run "$RESHARD" plan --model "$WORK/qwen3-4b-fp8.json" "${P[@]}" "${M[@]}" --gen-precision mxfp8 \
  -o "$WORK/megatron-fp8mx.json"
for pair in bf16 fp8 mxfp8 megatron-bf16 megatron-fp8 megatron-fp8mx; do
  for algo in reshard golden; do
    run mpirun --oversubscribe --allow-run-as-root --bind-to none -np 4 "$RESHARD" run --plan "$WORK/$pair.json" \
      --transport cuda-ipc --algo $algo --check --iters "$ITERS" --warmup 1 $RUN_FLAGS \
      --json "$WORK/run.$pair.$algo.json" --force
  done
done
python3 - "$WORK" "$OUT/gpu_precision.json" <<'PY'
import glob, json, os, sys
work, out = sys.argv[1:3]
records = []
q = os.path.join(work, "quantize.json")
if os.path.exists(q):
    records.append({"kind": "quantize", "data": json.load(open(q))})
for path in sorted(glob.glob(os.path.join(work, "run.*.json"))):
    _, pair, algo, _ = os.path.basename(path).split(".")
    records.append({"kind": "run", "pair": pair, "algo": algo, "data": json.load(open(path))})
json.dump(records, open(out, "w"), indent=1)
print("wrote", out, len(records), "records")
PY
