#!/usr/bin/env bash
# Packs on a side stream (--side-stream-packs, the default since 2026-12-07) against packs on the op's
# stream (--op-stream-packs) on the device machine, one call: build, ctest -L gpu (unless SKIP_CTEST=1),
# then side by side on cuda-ipc without box ops (--ipc-boxes off: every strided send packs into staging,
# as on NCCL), each `run --check --json` into $OUT/ipc/ (scripts/calibrate.sh models cuda-ipc with box
# ops only, so these are not among its inputs), alternating the two flags ROUNDS times (default 2) so
# drift hits both alike:
#   Qwen3-4B DP2 -> TP2 (4 ranks) and PP2 x DP2 -> TP2 x DP2 (8 ranks), push and pull.
# Ranks share the one GPU, so packs of different ranks take turns on it anyway; what a side stream
# overlaps here is a rank's own packs with its earlier batches' copies.
# TRANSPORT=nccl: the same pairs under NCCL, one GPU per rank, where the side stream is meant to pay
# (a pack beside the earlier batches' wire); each case needs as many GPUs as ranks (GPUS, default all
# visible) and is skipped with the count otherwise, so 4 GPUs run DP2 -> TP2 and 8 run both.
# Run from the repo root with $OUT set; writes $OUT/gpu_pack_stream.log, $OUT/ipc/ (or $OUT/nccl/),
# $OUT/plans/.
# Env: BUILD, JOBS, SKIP_CTEST, CMAKE_FLAGS (gpu_common.sh), ROUNDS, ITERS (default 5), TRANSPORT
# (cuda-ipc, the default, or nccl), GPUS.
set -uo pipefail
OUT=${OUT:?set OUT to the results folder}
LOG=$OUT/gpu_pack_stream.log
. "$(dirname "$0")/gpu_common.sh"
TRANSPORT=${TRANSPORT:-cuda-ipc}
case $TRANSPORT in
  cuda-ipc) DIR=ipc MODES="push pull" ;;
  nccl) DIR=nccl MODES=nccl GPUS=${GPUS:-$(nvidia-smi -L 2>/dev/null | wc -l)} ;;
  *) echo "TRANSPORT must be cuda-ipc or nccl, not $TRANSPORT" >&2; exit 2 ;;
esac
gpu_build_and_test
mkdir -p "$OUT/$DIR"
for c in "${QWEN3_4B_PAIRS[@]}"; do
  read -r name np tg t gg g <<<"$c"
  if [ "$TRANSPORT" = nccl ] && [ "$GPUS" -lt "$np" ]; then say "$name: skipped, $np ranks need $np GPUs, $GPUS visible"; continue; fi
  plan=$OUT/qwen3_4b_$name.json
  "$R" plan --model plans/qwen3-4b.json --train-gpus "$tg" --train "$t" --gen-gpus "$gg" --gen "$g" -o "$plan" \
    --force >>"$LOG" 2>&1 || { say "$name: plan failed"; continue; }
  for mode in $MODES; do
    # cuda-ipc without box ops packs every strided send, as NCCL does
    mpi=(--bind-to none) flags=(--transport nccl) stem=qwen3_4b_${name}
    [ "$mode" != nccl ] && mpi=() flags=(--transport cuda-ipc --ipc-mode "$mode" --ipc-boxes off) stem=${stem}_${mode}_staged
    for round in $(seq 1 "${ROUNDS:-2}"); do
      for packs in side op; do
        rec=$OUT/$DIR/${stem}_${packs}_r$round.json
        out=$(timeout 300 mpirun --oversubscribe ${mpi[@]+"${mpi[@]}"} -np "$np" "$R" run --plan "$plan" "${flags[@]}" \
          --check --iters "${ITERS:-5}" --warmup 1 "--$packs-stream-packs" --json "$rec" --force 2>&1)
        echo "$out" >>"$LOG"
        say "$name $mode $packs r$round: $(echo "$out" | grep -E '^ +total ' | awk '{print $4 " ms"}') $(echo "$out" | grep -E '#wrong' | tail -1)"
      done
    done
  done
done
keep_plans_by_fingerprint
