# shellcheck shell=bash
# Sourced by the recipes that run a GPU probe of bench/ under mpirun (gpu_timeslice.sh, gpu_turns.sh,
# gpu_copy_box_launch.sh).
#
# probe_recipe_start LOGNAME: a recipe's start: WORK (a temporary folder, removed on exit), LOG
# ($OUT/LOGNAME.log, emptied), say() (to stdout and the log), the run-as-root variables for mpirun, and
# the log's first lines (the recipe, the time, the commit, the GPUs). Needs OUT.
probe_recipe_start() {
  WORK=$(mktemp -d)
  trap 'rm -rf "$WORK"' EXIT
  LOG=$OUT/$1.log
  mkdir -p "$OUT"
  : >"$LOG"
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  say() { echo "$*" | tee -a "$LOG"; }
  say "# $(basename "$0") $(date -u +%FT%TZ) at $(git rev-parse --short HEAD 2>/dev/null)"
  nvidia-smi -L >>"$LOG" 2>&1
}

# probe_binary NAME (plain-C++ probes) sets BIN to $BUILD/bench/reshard_NAME where the build has it, else
# compiles bench/NAME.cpp with mpicxx against CUDA_HOME into $WORK; exits 1 if that fails. Needs ROOT,
# BUILD, WORK, CUDA_HOME, LOG and say().
probe_binary() {
  local name=$1
  BIN=$ROOT/$BUILD/bench/reshard_$name
  [ -x "$BIN" ] && return 0
  BIN=$WORK/reshard_$name
  say "\$ mpicxx -O2 bench/$name.cpp -lcudart -o $BIN  ($BUILD/bench has no reshard_$name)"
  mpicxx -O2 -std=c++17 -DOMPI_SKIP_MPICXX -I"$CUDA_HOME/include" "$ROOT/bench/$name.cpp" \
    -L"$CUDA_HOME/lib64" -L"$CUDA_HOME/targets/x86_64-linux/lib" -lcudart -Wl,-rpath,"$CUDA_HOME/lib64" \
    -o "$BIN" >>"$LOG" 2>&1 || { say "build failed"; exit 1; }
}
