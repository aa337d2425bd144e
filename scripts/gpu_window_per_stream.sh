#!/usr/bin/env bash
# A window per stream (--window-per-stream, the default since 2026-12-03) against a window per rank on the device
# machine, one call: build, ctest -L gpu (the per-stream GPU tests among them), then side by side, each
# `run --check --json` for scripts/calibrate.sh:
#   ipc/  cuda-ipc, ranks sharing the one GPU: Qwen3-4B DP2 -> TP2 (4 ranks), PP2xDP2 -> TP2xDP2 (8), and
#         the CPU-waits plans (results/cpu_waits_h200host/plans: 16-32 ranks, train PP 2-4, gen DP 2)
#   cpu/  CPU MPI on the host, the same plans (scripts/cpu_waits_bench.sh, flag sets perrank and perstream)
# Run from the repo root with $OUT set; writes $OUT/gpu_window_per_stream.log, $OUT/{ipc,cpu}/ and the
# Qwen3-4B plans under $OUT/plans/<fingerprint>.json. Env: BUILD, JOBS, SKIP_CTEST=1 (gpu_common.sh),
# CASES (default "ipc waits cpu").
set -uo pipefail
OUT=${OUT:?set OUT to the results folder}
LOG=$OUT/gpu_window_per_stream.log
. "$(dirname "$0")/gpu_common.sh"
gpu_build_and_test
mkdir -p "$OUT/ipc" "$OUT/cpu"
# The staging of the defaults these were measured against (256 MiB before 2026-12-03).
declare -A WINDOW=([rank]="--window-per-rank --staging-bytes 256Mi" [stream]="--window-per-stream --staging-bytes 256Mi")
CASES=${CASES:-ipc waits cpu}
if [[ " $CASES " == *" ipc "* ]]; then
  for c in "${QWEN3_4B_PAIRS[@]}"; do
    read -r name np tg t gg g <<<"$c"
    for w in rank stream; do
      # shellcheck disable=SC2086
      ALGOS=reshard ITERS=5 run_case "ipc_qwen3_4b_${name}_$w" plans/qwen3-4b.json "$np" "$tg" "$t" "$gg" "$g" \
        RUN --warmup 1 ${WINDOW[$w]} --json "$OUT/ipc/qwen3_4b_${name}_$w.json" --force
    done
  done
fi
P=results/cpu_waits_h200host/plans
if [[ " $CASES " == *" waits "* ]]; then
  for name in a16 b16 c24 d32; do
    np=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["world"]["size"])' "$P/$name.json")
    for w in rank stream; do
      # shellcheck disable=SC2086
      out=$(timeout 300 mpirun --oversubscribe -np "$np" "$R" run --plan "$P/$name.json" --transport cuda-ipc \
            --check --iters 5 --warmup 1 ${WINDOW[$w]} --json "$OUT/ipc/${name}_$w.json" --force 2>&1)
      echo "$out" >>"$LOG"
      say "ipc ${name}_$w: $(echo "$out" | grep -E '#wrong' | tail -1)"
    done
  done
fi
if [[ " $CASES " == *" cpu "* ]]; then
  # ITERS=3, as its earlier records (cpu_waits_bench.sh defaults to 20 since 2026-12-05): device time
  OUT=$OUT/cpu FLAGSETS="perrank perstream" ITERS=3 PLAN_DIR=$P RESHARD_BUILD_DIR=$BUILD bash scripts/cpu_waits_bench.sh \
    >>"$LOG" 2>&1
  say "cpu: $(grep -c '#wrong 0 (PASSED)' "$OUT/cpu/cpu_waits.log") runs passed --check"
fi
for f in "$OUT"/ipc/*.json "$OUT"/cpu/*_{perrank,perstream}.json; do
  [ -f "$f" ] || continue
  say_phases "$f"
done
keep_plans_by_fingerprint
