#!/bin/sh
# Runs a GPU test command (per MPI rank) only where GPUs are present; otherwise prints
# "SKIP (no GPU): <reason>" and exits 0, which ctest reports as skipped (SKIP_REGULAR_EXPRESSION).
# usage: if_gpu.sh [--min-gpus N] [--visible LIST] -- command [args...]
#   --min-gpus N   skip unless at least N GPUs are listed by `nvidia-smi -L` (default 1)
#   --visible LIST export CUDA_VISIBLE_DEVICES=LIST first (e.g. 0: every rank on one GPU)
min=1
while [ $# -gt 0 ]; do
  case "$1" in
    --min-gpus) min=$2; shift 2 ;;
    --visible) CUDA_VISIBLE_DEVICES=$2; export CUDA_VISIBLE_DEVICES; shift 2 ;;
    --) shift; break ;;
    *) echo "if_gpu.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
if ! list=$(nvidia-smi -L 2>/dev/null); then
  echo "SKIP (no GPU): nvidia-smi -L failed or is missing on $(hostname)"
  exit 0
fi
count=$(printf '%s\n' "$list" | grep -c '^GPU ')
if [ "$count" -lt "$min" ]; then
  echo "SKIP (no GPU): needs $min GPU(s), $(hostname) has $count"
  exit 0
fi
exec "$@"
