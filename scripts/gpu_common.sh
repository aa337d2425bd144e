# Sourced by the one-call device recipes (scripts/gpu_*_layouts.sh, gpu_schedule.sh): the log, the
# build, `ctest -L gpu`, and one case planned and run with --check beside --algo golden.
# Needs OUT (the results folder) and LOG set; env: BUILD (default build-gpu), JOBS (default nproc),
# SKIP_CTEST=1, CMAKE_FLAGS (extra configure flags, e.g. -DRESHARD_BUILD_TESTS=OFF where no ctest runs).
BUILD=${BUILD:-build-gpu}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
R=$BUILD/apps/reshard/reshard
# shellcheck source=damon.sh
. scripts/damon.sh  # the log's "# damon:" line: whether the host runs a kdamond (its CPU runs stall then)
say() { echo "$@" | tee -a "$LOG"; }
# The two Qwen3-4B plans the side-by-side recipes compare on, "NAME RANKS TRAIN_GPUS TRAIN GEN_GPUS GEN":
# DP2 -> TP2 (4 ranks) and PP2 x DP2 -> TP2 x DP2 (8).
# shellcheck disable=SC2034  # used by the recipes that source this file
QWEN3_4B_PAIRS=("dp2_tp2 4 2 tp=1 2 tp=2" "pp2dp2_tp2dp2 8 4 tp=1,pp=2 4 tp=2")

# Build (Release) and, unless SKIP_CTEST=1, `ctest -L gpu`; exits on a failed build.
gpu_build_and_test() {
  { nvidia-smi -L; git rev-parse HEAD 2>/dev/null; echo "# damon: $(damon_describe)"; } >>"$LOG" 2>&1
  # shellcheck disable=SC2086
  cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release ${CMAKE_FLAGS:-} >>"$LOG" 2>&1 &&
    cmake --build "$BUILD" -j "${JOBS:-$(nproc)}" >>"$LOG" 2>&1 || { say "build failed"; tail -30 "$LOG"; exit 1; }
  grep -E "reshard backends" "$LOG" | tail -1 | tee -a "$LOG"
  if [ "${SKIP_CTEST:-0}" != 1 ]; then
    (cd "$BUILD" && ctest -L gpu --output-on-failure --timeout 600) >>"$LOG" 2>&1
    say "ctest -L gpu: $(grep -E 'tests passed|tests failed' "$LOG" | tail -1)"
  fi
}

# The recipes that only run reshard (no ctest, no test or bench targets): build, and the folders for
# their records and traces, $OUT/ipc and $OUT/trace.
gpu_build_reshard_only() {
  SKIP_CTEST=1 CMAKE_FLAGS="-DRESHARD_BUILD_TESTS=OFF -DRESHARD_BUILD_BENCH=OFF" gpu_build_and_test
  mkdir -p "$OUT/ipc" "$OUT/trace"
}

# run_case NAME MODEL_JSON RANKS TRAIN_GPUS TRAIN GEN_GPUS GEN [plan flags...] [RUN run flags...]:
# plans into $OUT/NAME.json, runs --check with reshard and golden (cuda-ipc unless TRANSPORT is set),
# and logs each run's #wrong line.
run_case() {
  local name=$1 model=$2 np=$3 tg=$4 t=$5 gg=$6 g=$7; shift 7
  local plan_flags=() run_flags=()
  while [ $# -gt 0 ] && [ "$1" != RUN ]; do plan_flags+=("$1"); shift; done
  [ "${1:-}" = RUN ] && shift && run_flags=("$@")
  "$R" plan --model "$model" --train-gpus "$tg" --train "$t" --gen-gpus "$gg" --gen "$g" "${plan_flags[@]}" \
    -o "$OUT/$name.json" --force >>"$LOG" 2>&1 || { say "$name: plan failed"; return; }
  for algo in ${ALGOS:-reshard golden}; do
    out=$(mpirun --oversubscribe -np "$np" "$R" run --plan "$OUT/$name.json" --transport "${TRANSPORT:-cuda-ipc}" \
      --check --algo "$algo" --iters "${ITERS:-3}" "${run_flags[@]}" 2>&1)
    echo "$out" >>"$LOG"
    say "$name $algo: $(echo "$out" | grep -E '#wrong' | tail -1)"
  done
}

# window_case ALGO NAME RANKS TRAIN_GPUS TRAIN GEN_GPUS GEN [plan flags...]: run_case at window 1, 4 and
# 16 (ITERS default 5), each `run --json` into $OUT/ipc/NAME_wW.json (gpu_window.sh, gpu_golden_turns.sh).
window_case() {
  local algo=$1 name=$2 w; shift 2
  for w in 1 4 16; do
    ALGOS=$algo ITERS=${ITERS:-5} run_case "${name}_w$w" "$@" RUN --window "$w" --json "$OUT/ipc/${name}_w$w.json" --force
  done
}

# say_phases RECORD [DIGITS]: logs a `run --json` record's phase times, "NAME: PHASE T ms ..." (T with
# DIGITS decimals, default 3).
say_phases() {
  say "$(basename "$1" .json): $(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(" ".join("%s %.*f ms" % (p["phase"], int(sys.argv[2]), p["time_ms_avg"]) for p in r["phases"]))' "$1" "${2:-3}" 2>/dev/null)"
}

# Moves each plan $OUT/*.json under its fingerprint, $OUT/plans/<fp>.json, where scripts/calibrate.sh
# looks for a record's plan (results/plans/<fp>.json once committed).
keep_plans_by_fingerprint() {
  mkdir -p "$OUT/plans"
  local p fp
  for p in "$OUT"/*.json; do
    fp=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["fingerprint"])' "$p" 2>/dev/null) &&
      mv "$p" "$OUT/plans/$fp.json"
  done
  return 0  # a last file that is no plan (or none: the glob itself) is not a failure of the caller
}
