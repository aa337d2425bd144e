#!/usr/bin/env bash
# Runs the planner benchmark pinned to one core and gates it against results/baseline/planner.json
# (scripts/perf_gate: ratios to a reference computation timed in the same run). ~17 s.
# Exit 77 (ctest: skipped) when the DeepSeek-V3 metadata in ../shared/models is absent.
# usage: scripts/perf_gate_planner.sh BENCH_BINARY [OUT_JSON] [perf_gate flags...]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BENCH=${1:?usage: perf_gate_planner.sh BENCH_BINARY [OUT_JSON]}
OUT=${2:-$(dirname "$BENCH")/planner.json}
shift $(( $# >= 2 ? 2 : 1 ))
MODEL=${RESHARD_SHARED_MODELS:-$ROOT/../shared/models}/deepseek-v3-bf16.json
if [ ! -f "$MODEL" ]; then
  echo "perf_gate_planner: $MODEL absent; skipped"
  exit 77
fi
PIN=()
if command -v taskset >/dev/null; then PIN=(taskset -c "$(( $(nproc) - 1 ))"); fi
"${PIN[@]}" "$BENCH" --benchmark_format=json --benchmark_repetitions=5 > "$OUT"
echo "perf_gate_planner: load average $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')"
exec python3 "$ROOT/scripts/perf_gate" "$ROOT/results/baseline/planner.json" "$OUT" "$@"
