#!/usr/bin/env bash
# Builds reshard with AddressSanitizer + UndefinedBehaviorSanitizer (RESHARD_SANITIZE=ON, Debug) into
# build-asan/ (or $RESHARD_ASAN_BUILD_DIR) and runs the unit and MPI tests (ctest -L 'unit|mpi').
# Any sanitizer report fails its test and so the script: ASan and UBSan halt on the first error, leak
# checking is on, and only Open MPI's own leaks at finalize are suppressed (scripts/lsan_suppressions.txt).
# CUDA/NCCL are off: GPU code is not what this job checks, and nvcc does not take -fsanitize.
# Extra args go to ctest (e.g. -R bad_input).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${RESHARD_ASAN_BUILD_DIR:-build-asan}
JOBS=${RESHARD_JOBS:-$(nproc)}
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Debug -DRESHARD_SANITIZE=ON -DRESHARD_BUILD_BENCH=OFF \
  -DRESHARD_WITH_CUDA=OFF -DRESHARD_WITH_NCCL=OFF >/dev/null
cmake --build "$BUILD_DIR" -j "$JOBS"

# intercept_tls_get_addr=0: GCC 12's runtime (and GCC <= 13, LLVM <= 16) takes a dynamic TLS block whose
# start happens to sit 16 bytes into a page for a pre-2.25 glibc header and reads a bogus range from
# before it; LeakSanitizer's tracer then dies with SIGSEGV at exit ("Tracer caught signal 11", no leak
# reported; google/sanitizers#1322). It hit agree.plan_content once in CI. Dynamic TLS is only dlopen'd
# libraries' (Open MPI's components); reshard's own TLS is static and still scanned.
ASAN_BASE=halt_on_error=1:abort_on_error=1:detect_leaks=1:detect_stack_use_after_return=1:strict_string_checks=1:check_initialization_order=1:intercept_tls_get_addr=0
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export LSAN_OPTIONS=suppressions=$PWD/scripts/lsan_suppressions.txt:print_suppressions=0
if [ "$(id -u)" -eq 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
status=0
ASAN_OPTIONS=$ASAN_BASE ctest --test-dir "$BUILD_DIR" -L unit -LE mpi --output-on-failure -j "$JOBS" "$@" || status=1
# Under mpirun, leak stacks must be unwound in full (slow unwinder: Open MPI is built without frame
# pointers) for the suppressions to see Open MPI's frames; components stay loaded so they symbolize.
ASAN_OPTIONS=$ASAN_BASE:fast_unwind_on_malloc=0 OMPI_MCA_mca_base_component_disable_dlclose=1 \
  ctest --test-dir "$BUILD_DIR" -L mpi --output-on-failure -j "$JOBS" "$@" || status=1
exit $status
