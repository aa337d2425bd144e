# Sourced by the recipes that run a plain-C++ GPU probe of bench/ under mpirun (gpu_timeslice.sh,
# gpu_turns.sh). probe_binary NAME sets BIN to $BUILD/bench/reshard_NAME where the build has it, else
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
