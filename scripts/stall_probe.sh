#!/usr/bin/env bash
# Probe: where do the VM's 100-230 ms stalls of reshard's bulk stages come from (issue 18; docs/
# calibration.md, "Twenty iterations")? Builds scripts/stall_probes/*.cpp (in a temporary folder) and runs, on a
# machine otherwise idle: idle_gaps (a spinning thread per core: does the machine take the CPU away?),
# yield_crowd (16 processes copying and yielding: does the kernel starve one?) and mpi_stages (stages of
# 4 MiB pair exchanges between polled barriers, reshard's bulk stages without reshard, at 16 and 32
# ranks, and with packs and unpacks on the ranks' threads; which stages stall: stage 0 alone is a
# first-use cost). Writes OUT/stall_probe.log (the
# commands, the machine, one JSON line per result).
# usage: OUT=DIR scripts/stall_probe.sh   (about 3 min on the 2-core VM; memory: 16 ranks x 216 MiB at most)
set -euo pipefail
cd "$(dirname "$0")/.."
: "${OUT:?set OUT to the folder for the log}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p "$OUT"
BIN=$(mktemp -d)
trap 'rm -rf "$BIN"' EXIT
LOG=$OUT/stall_probe.log
: >"$LOG"
say() { echo "$*" | tee -a "$LOG"; }
say "# stall_probe.sh $(date -u +%FT%TZ) reshard $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
say "# machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo), $(mpirun --version | head -1), kernel $(uname -r)"
g++ -O2 -std=c++17 -pthread scripts/stall_probes/idle_gaps.cpp -o "$BIN/idle_gaps"
g++ -O2 -std=c++17 scripts/stall_probes/yield_crowd.cpp -o "$BIN/yield_crowd"
mpicxx -O2 -std=c++17 scripts/stall_probes/mpi_stages.cpp -o "$BIN/mpi_stages"
run() { say "\$ $*"; "$@" 2>&1 | tee -a "$LOG"; }
run "$BIN/idle_gaps" 60
run "$BIN/yield_crowd" 16 20 30
run mpirun --oversubscribe -np 16 "$BIN/mpi_stages" 200 4 9
run mpirun --oversubscribe -np 16 "$BIN/mpi_stages" 100 6 18
run mpirun --oversubscribe -np 32 "$BIN/mpi_stages" 200 8 9
run mpirun --oversubscribe -np 16 "$BIN/mpi_stages" 200 4 9 1  # with the packs and unpacks
run mpirun --oversubscribe -np 16 "$BIN/mpi_stages" 100 6 18 1
say "# done $(date -u +%FT%TZ)"
