#!/usr/bin/env bash
# Issue-5 NCCL measurements on a machine with at least 2 GPUs, one device call, from the repo root
# with $OUT set. Writes $OUT/gpu_nccl.log (every command and its output) and $OUT/gpu_nccl_runs.json
# (the `reshard run --json` records, each with "config" and "command").
#   * build (reshard, reshard_gpu_tests), ctest -L gpu -R nccl (runs the NCCL tests whose MIN_GPUS fit)
#   * Qwen3-4B, 1 train GPU -> 1 gen GPU (one rank per GPU), --transport nccl, --check, reshard and
#     golden; the ceiling in the same run is NCCL send/recv of the same bytes between the two GPUs
#     (reshard/exec/ceiling.h), so efficiency = that time / the reshard time.
# With N >= 4 GPUs (GPUS, default: all visible) it also runs Qwen3-4B DP(N/2) -> TP(N/2).
# Env: BUILD (default build-gpu), ITERS (default 5), GIT_REV, SKIP_BUILD=1, SKIP_CTEST=1, RUN_FLAGS (extra
# `reshard run` flags for every run, e.g. "--batch-bytes 4Gi --staging-bytes 1Gi --batch-ops 4096").
set -uo pipefail
ROOT=$(pwd)
OUT=${OUT:?set OUT to the results folder}
BUILD=${BUILD:-build-gpu}
ITERS=${ITERS:-5}
read -r -a RUN_FLAGS <<<"${RUN_FLAGS:-}"
GPUS=${GPUS:-$(nvidia-smi -L 2>/dev/null | wc -l)}
LOG=$OUT/gpu_nccl.log
WORK=$(mktemp -d)
mkdir -p "$OUT"
: >"$LOG"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
RESHARD=$ROOT/$BUILD/apps/reshard/reshard
run() { echo "\$ $*" >>"$LOG"; "$@" >>"$LOG" 2>&1; local rc=$?; echo "# exit $rc" >>"$LOG"; return $rc; }

echo "# gpu_nccl_bench.sh $(date -u +%FT%TZ), git ${GIT_REV:-$(git rev-parse --short HEAD 2>/dev/null)}, $GPUS GPUs" >>"$LOG"
nvidia-smi -L >>"$LOG" 2>&1
nvidia-smi topo -m >>"$LOG" 2>&1
if [ "${SKIP_BUILD:-0}" != 1 ]; then
  run cmake -S "$ROOT" -B "$ROOT/$BUILD" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90
  run cmake --build "$ROOT/$BUILD" -j"$(nproc)" --target reshard reshard_gpu_tests
fi
if [ "${SKIP_CTEST:-0}" != 1 ]; then
  (cd "$ROOT/$BUILD" && ctest -L gpu -R nccl --output-on-failure --timeout 300) >"$WORK/ctest.log" 2>&1
  cat "$WORK/ctest.log" >>"$LOG"
  grep -E "tests passed|tests failed|\(Failed\)|Skipped" "$WORK/ctest.log"
fi

: >"$WORK/index.tsv"
bench() {  # config, ranks, plan args...
  local config=$1 ranks=$2; shift 2
  local plan=$WORK/$(echo "$config" | tr -c 'a-z0-9' '_').json
  run "$RESHARD" plan --model plans/qwen3-4b.json "$@" --force -o "$plan" || return
  for algo in reshard golden; do
    local json=$WORK/run_$(echo "$config" | tr -c 'a-z0-9' '_')_$algo.json
    local cmd=(mpirun --allow-run-as-root --bind-to none -np "$ranks" "$RESHARD" run --plan "$plan"
               --transport nccl --algo "$algo" --check --iters "$ITERS" --warmup 5 --json "$json" --force
               ${RUN_FLAGS[@]+"${RUN_FLAGS[@]}"})
    run "${cmd[@]}"
    printf '%s\t%s\t%s\n' "$config" "$json" "${cmd[*]}" >>"$WORK/index.tsv"
  done
}
bench "qwen3-4b 1 -> 1" 2 --train-gpus 1 --train tp=1 --gen-gpus 1 --gen tp=1
if [ "$GPUS" -ge 4 ]; then
  h=$((GPUS / 2))
  bench "qwen3-4b dp$h -> tp$h" "$GPUS" --train-gpus $h --train tp=1 --gen-gpus $h --gen tp=$h
fi
python3 - "$WORK/index.tsv" "$OUT/gpu_nccl_runs.json" <<'PY'
import json, sys
records = []
for line in open(sys.argv[1]):
    config, path, cmd = line.rstrip("\n").split("\t")
    try:
        r = json.load(open(path))
    except (OSError, ValueError):
        r = {"format": "reshard-run", "error": "no record (run failed; see gpu_nccl.log)"}
    r["config"], r["command"] = config, cmd
    records.append(r)
    t = [p for p in r.get("phases", []) if p.get("phase") == "total"]
    if t:
        print("%-22s %-8s %8.3f ms  ceiling %s %.1f GB/s  efficiency %.3f  wrong %s" % (
            config, r["arguments"]["algo"], t[0]["time_ms_avg"], r.get("ceiling_kind"), r.get("ceiling_gbps", 0),
            r.get("efficiency", 0), r.get("wrong")))
json.dump(records, open(sys.argv[2], "w"), indent=1)
PY
