#!/usr/bin/env bash
# Builds the libFuzzer targets with clang + ASan + UBSan into build-fuzz/ (or $RESHARD_FUZZ_BUILD_DIR)
# and runs each for a bounded time: usage: scripts/fuzz.sh [SECONDS_PER_TARGET (default 60)] [TARGET...]
# Starts from the committed seeds (fuzz/corpus/<target>) in a scratch corpus, so runs do not grow the
# repository. Any crash, sanitizer report, escaped exception, leak, timeout (10 s per input) or
# out-of-memory (2 GiB) fails the script; the input is saved under fuzz/regressions/<target>/, which
# the normal build replays as ctest fuzz_replay.<target>. Prints executions and time per target.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_TARGET=${1:-60}
shift || true
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=(model_json safetensors system_json plan)
BUILD_DIR=${RESHARD_FUZZ_BUILD_DIR:-build-fuzz}
JOBS=${RESHARD_JOBS:-$(nproc)}

if ! command -v clang++ >/dev/null || ! ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1; then
  bash scripts/install_deps.sh --fuzz
fi
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DRESHARD_BUILD_FUZZERS=ON -DRESHARD_SANITIZE=ON -DRESHARD_BUILD_TESTS=OFF -DRESHARD_BUILD_BENCH=OFF \
  -DRESHARD_WITH_MPI=OFF -DRESHARD_WITH_CUDA=OFF -DRESHARD_WITH_NCCL=OFF >/dev/null
cmake --build "$BUILD_DIR" -j "$JOBS" --target "${TARGETS[@]/#/fuzz_}"

export ASAN_OPTIONS=${ASAN_OPTIONS:-halt_on_error=1:detect_leaks=1:abort_on_error=1:intercept_tls_get_addr=0}  # see sanitize.sh
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
status=0
summary=()
for t in "${TARGETS[@]}"; do
  work=$BUILD_DIR/fuzz-work/$t
  rm -rf "$work" && mkdir -p "$work/corpus" "$work/artifacts"
  cp fuzz/corpus/"$t"/* "$work/corpus/"
  log=$work/fuzz.log
  echo "fuzz: $t for ${SECONDS_PER_TARGET}s"
  rc=0
  "$BUILD_DIR/fuzz/fuzz_$t" "$work/corpus" -max_total_time="$SECONDS_PER_TARGET" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$work/artifacts/" >"$log" 2>&1 || rc=$?
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
  secs=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
  if [ "$rc" -ne 0 ]; then
    status=1
    mkdir -p "fuzz/regressions/$t"
    for a in "$work"/artifacts/*; do
      [ -e "$a" ] || continue
      cp "$a" "fuzz/regressions/$t/"
      echo "fuzz: $t: saved $(basename "$a") to fuzz/regressions/$t/" >&2
    done
    grep -E 'ERROR|SUMMARY|runtime error|terminate|==[0-9]+==' "$log" | head -20 >&2 || true
    summary+=("$t: FAILED (exit $rc) after $execs executions; log $log")
  else
    summary+=("$t: ok, $execs executions in ${SECONDS_PER_TARGET}s ($secs/s), corpus $(ls "$work/corpus" | wc -l) inputs")
  fi
done
printf 'fuzz: %s\n' "${summary[@]}"
exit $status
