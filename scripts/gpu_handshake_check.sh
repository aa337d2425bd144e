#!/usr/bin/env bash
# The one-GPU presets' per-batch handshake (48.3 us, measured on the 4- and 8-rank window-1 traces;
# system_presets.cpp) checked on plans it was not measured on, one device call: build, then the 16- to
# 32-rank plans of gpu_window_per_stream.sh (a16, b16, c24, d32: results/cpu_waits_h200host/plans) on
# cuda-ipc at --window 1 (every batch waited for, so every handshake is exposed), each `run --check
# --json` for scripts/calibrate.sh, and a16 once more with --ipc-trace, whose
# `python3 scripts/ipc_trace.py --handshake` re-measures the constant on another plan.
# Run from the repo root with $OUT set; writes $OUT/gpu_handshake_check.log, $OUT/ipc/*.json,
# $OUT/trace/a16_w1.<rank>.tsv. Env: BUILD, JOBS (gpu_common.sh), ITERS (default 5).
set -uo pipefail
OUT=${OUT:?set OUT to the results folder}
LOG=$OUT/gpu_handshake_check.log
. "$(dirname "$0")/gpu_common.sh"
gpu_build_reshard_only
P=results/cpu_waits_h200host/plans
for name in a16 b16 c24 d32; do
  np=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["world"]["size"])' "$P/$name.json")
  out=$(timeout 300 mpirun --oversubscribe -np "$np" "$R" run --plan "$P/$name.json" --transport cuda-ipc \
        --check --iters "${ITERS:-5}" --warmup 1 --window 1 --json "$OUT/ipc/${name}_w1.json" --force 2>&1)
  echo "$out" >>"$LOG"
  say "ipc ${name}_w1: $(echo "$out" | grep -E '#wrong' | tail -1)"
done
say "\$ trace: a16 --window 1 --ipc-trace $OUT/trace/a16_w1"
timeout 300 mpirun --oversubscribe -np 16 "$R" run --plan "$P/a16.json" --transport cuda-ipc --window 1 --iters 3 \
  --ipc-trace "$OUT/trace/a16_w1" >>"$LOG" 2>&1
say "$(python3 scripts/ipc_trace.py --handshake "$OUT/trace/a16_w1")"
for f in "$OUT"/ipc/*.json; do
  [ -f "$f" ] || continue
  say_phases "$f" 2
done
