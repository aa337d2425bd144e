#!/usr/bin/env bash
# Probe: why CPU MPI runs with more ranks than cores take longer than `simulate` predicts (issue 18).
# Runs the device host's d32 plan (32 ranks) and a16 (16 ranks) under Open MPI's default (yield when
# oversubscribed), without yield, and bound two ranks per core; the small-message latency at 16/24/32
# ranks and the rate of k pairs at once while the others idle (latency_probe.cpp); the machine's CPU
# topology. usage: OUT=DIR scripts/oversub_probe.sh [--build DIR]   (about 6 min on the device host;
# it writes ~370 files, traces included: tar OUT, the device returns 8; results/gpu/oversub_probe/)
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${RESHARD_BUILD_DIR:-build}
[ "${1:-}" = --build ] && BUILD=$2
R=$BUILD/apps/reshard/reshard
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p "$OUT/trace"
{ nproc; lscpu; cat /sys/fs/cgroup/cpu.max /sys/fs/cgroup/cpuset.cpus.effective 2>&1; cat /proc/sys/kernel/sched_*granularity* 2>&1; } >"$OUT/machine.txt" 2>&1
mpicxx -O2 -std=c++17 -I scripts scripts/latency_probe.cpp -o "$OUT/latency_probe"
for np in 16 24 32; do mpirun --oversubscribe -np $np "$OUT/latency_probe" >"$OUT/latency_$np.json" 2>&1; done
for np in 24 32; do
  mpirun --oversubscribe --mca mpi_yield_when_idle 0 -np $np "$OUT/latency_probe" >"$OUT/latency_${np}_noyield.json" 2>&1
  mpirun --oversubscribe --map-by core --bind-to core:overload-allowed -np $np "$OUT/latency_probe" >"$OUT/latency_${np}_bindcore.json" 2>&1
done
P=results/gpu/fan_check/cpu/plans
run() {  # name np plan variant [mpirun flags...]
  local name=$1 np=$2 plan=$3 v=$4; shift 4
  mpirun --oversubscribe "$@" -np "$np" "$R" run --plan "$plan" --transport mpi --iters 5 --warmup 1 --check \
    --json "$OUT/${name}_$v.json" --force --mpi-trace "$OUT/trace/${name}_$v" >"$OUT/${name}_$v.log" 2>&1
  echo "$name $v rc=$? $(grep -E '#wrong' "$OUT/${name}_$v.log" | tail -1)"
}
run d32 32 $P/d32.json default
run d32 32 $P/d32.json noyield --mca mpi_yield_when_idle 0
run d32 32 $P/d32.json bindcore --map-by core --bind-to core:overload-allowed
run d32_direct 32 $P/d32_direct.json default
run c24 24 $P/c24.json default
run a16 16 $P/a16.json default
run a16 16 $P/a16.json yield --mca mpi_yield_when_idle 1
run d32 32 $P/d32.json default2
B="--map-by core --bind-to core:overload-allowed"
run d32 32 $P/d32.json bindcore2 $B
run d32_direct 32 $P/d32_direct.json bindcore $B
run c24 24 $P/c24.json bindcore $B
run a16 16 $P/a16.json bindcore $B
run b16 16 $P/b16.json bindcore $B
