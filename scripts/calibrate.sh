#!/usr/bin/env bash
# Compares `reshard simulate` predictions with measured `reshard run --json` records and prints the
# error per phase, plus the effective bandwidth each measurement implies. Goal (issue 8): within +-25 %.
#
# usage: scripts/calibrate.sh [--build DIR] [--system PRESET] [--json OUT] [RUN_JSON|DIR ...]
#        scripts/calibrate.sh --measure-host [NP]   (the cpu-mpi-local microbenchmark, JSON on stdout)
#   inputs:   records of format "reshard-run", alone or in a JSON list (gpu_runs.json); by default every
#             measured set, listed once in the INPUTS default below (results/README.md says what each
#             holds). A row's name starts with the commit its run was made at (gpu_env.json's "git"
#             beside the record), then the mode and "mps/"; the summary counts rows per record set
#             (file) too.
#   simulated with each record's own algo, streams, batch caps, staging, window (per stream or
#             not) and packs' stream (side, else the op's: records before 2026-12-07), and cuda-ipc
#             records in their own mode (--ipc-mode): the record's transport_mode,
#             else versions.transport's suffix ", push" or ", pull" (records before b9e2768); with
#             neither (made before push existed) pull.
#   CPU MPI records: simulated with the host_<ranks>.json beside them, and its broadcast fan rate, or
#             where it predates that measurement the nearest fan.json in their folder or above, up to
#             results/. Without single copy, with its cores (the record's host_cores, else the host
#             file's, else the cpu_waits.log's machine line); with single copy (the VM's records), each
#             batch's latency is the host's busy hand-off: the median of the host file's
#             latency_busy_us and the rounds in the nearest handoff.json in the records' folder or
#             above (one per machine: results/cpu_waits_vm/, results/cpu_waits/), charged by each
#             phase's working ranks (simulate --latency-per-busy-rank). Each CPU host file's simulate
#             flags are printed at the end ("calibrate: host FILE: FLAGS").
#   --system: the preset for every record; default cpu-mpi-local for transport "mpi"; for cuda-ipc
#             records whose ranks share one device, the card's preset from ONE_GPU_PRESETS by the card
#             versions.device names (H200: h200-shared-1gpu, or h200-shared-1gpu-mps when the
#             gpu_env.json beside the record says "mps": "on"; H100: h100-shared-1gpu, and a record under
#             MPS is skipped: no preset; another card: exit 2 naming it); cuda-ipc records whose ranks share
#             several GPUs are skipped (not modelled); else, a rank per GPU (NCCL), the card's NVLink preset
#             from MULTI_GPU_PRESETS (h200-nvl8-ib400, h100-nvl8-ib400; the latter for an unnamed card).
#             The summary counts the records skipped, by reason.
#             Extra `reshard simulate` flags: RESHARD_SIMULATE_FLAGS (every record) and
#             RESHARD_SIMULATE_FLAGS_<PRESET> (records simulated on that preset; upper case, '-' as '_'),
#             e.g. RESHARD_SIMULATE_FLAGS_H200_SHARED_1GPU="--switch-us 10" (the MPS rows keep theirs);
#             an --ipc-mode there replaces the record's mode (RESHARD_SIMULATE_FLAGS="--ipc-mode pull").
# Spread: rows of one build, machine, plan, schedule flags and phase (each JSON row's "same") whose
# predicted / measured ratios lie more than 5/3 apart are listed ("calibrate: spread:"), with a count:
# no one scale of their predictions is within 25 % of all (each row's "group_spread").
# A record's plan is found at its arguments.plan path, else at results/plans/<fingerprint>.{cbor,json},
# else rebuilt with `reshard plan` from results/plans/recipes.json into $BUILD/calibrate-plans; a plan
# whose fingerprint differs from the record's is reported and the record skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${RESHARD_BUILD_DIR:-build}
SYSTEM=""
JSON_OUT=""
INPUTS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --build) BUILD=$2; shift 2 ;;
    --system) SYSTEM=$2; shift 2 ;;
    --json) JSON_OUT=$2; shift 2 ;;
    --measure-host) MEASURE_HOST=${2:-4}; shift $(( $# > 1 ? 2 : 1 )) ;;
    -h|--help) sed -n 2,42p "$0"; exit 0 ;;
    *) INPUTS+=("$1"); shift ;;
  esac
done
if [ -n "${MEASURE_HOST:-}" ]; then
  # The host microbenchmark; what it measures is in scripts/host_copy_bench.cpp.
  TMP=$(mktemp -d)
  trap 'rm -rf "$TMP"' EXIT
  mpicxx -O2 -std=c++17 -I scripts scripts/host_copy_bench.cpp -o "$TMP/host_copy_bench"
  # Open MPI's shared-memory single copy (cma, xpmem, or none: copy-in/copy-out, where the sender copies
  # too; simulate --sender-copies), as this environment sets it.
  mech=$(ompi_info --param btl vader --level 9 --parsable 2>/dev/null |
         sed -n 's/^mca:btl:vader:param:btl_vader_single_copy_mechanism:value://p' | head -1)
  out=$(mpirun --oversubscribe -np "$MEASURE_HOST" "$TMP/host_copy_bench")
  echo "${out%\}}, \"single_copy_mechanism\": \"${mech:-unknown}\", \"cores\": $(nproc)}"
  exit 0
fi
[ ${#INPUTS[@]} -gt 0 ] || INPUTS=(results results/gpu results/gpu/mps results/gpu/extra/mps_stress
                                  results/gpu/push results/gpu/push_mps results/gpu/pull
                                  results/gpu/extra/24ab0ab/push results/gpu/extra/24ab0ab/push_mps
                                  results/gpu/extra/24ab0ab/pull results/gpu/window_push_nosync/ipc
                                  results/gpu/bench_19254c7 results/gpu/bench_19254c7/config2_push
                                  results/gpu/bench_19254c7/pull results/gpu/window_direct/ipc
                                  results/cpu_waits results/cpu_waits_h200host
                                  results/gpu/window_per_stream/ipc results/gpu/window_per_stream/cpu
                                  results/gpu/window_per_stream/defaults/ipc
                                  results/gpu/window_per_stream/repeat/run1 results/gpu/window_per_stream/repeat/run2
                                  results/gpu/fan_check/cpu
                                  results/gpu/host_cores/run1 results/gpu/host_cores/run2
                                  results/cpu_waits_vm/full/run1 results/cpu_waits_vm/full/run2
                                  results/cpu_waits_vm/bind/unbound results/cpu_waits_vm/bind/bound1
                                  results/cpu_waits_vm/bind/bound2 results/cpu_waits_vm/bind/bound3
                                  results/gpu/host_bind/bound1 results/gpu/host_bind/free1
                                  results/gpu/host_bind/bound2 results/gpu/host_bind/free2
                                  results/gpu/window_current/ipc
                                  results/cpu_waits_vm/iters20/run1 results/cpu_waits_vm/iters20/run2
                                  results/gpu/ceiling/run1 results/gpu/ceiling/run2 results/gpu/ceiling/run3
                                  results/cpu_waits_vm/ceiling/run1 results/cpu_waits_vm/ceiling/run2
                                  results/cpu_waits_vm/busy/run1
                                  results/cpu_waits_vm/damon_off/run1 results/cpu_waits_vm/damon_off/run2
                                  results/cpu_waits_vm/damon_off/run3
                                  results/cpu_waits_vm/damon_off/ab_direct/run1 results/cpu_waits_vm/damon_off/ab_direct/run2
                                  results/gpu/trace_h100/run1_ipc results/gpu/trace_h100/ipc
                                  results/gpu/trace_h100/config2_18l/ipc results/gpu/golden_turns_h100/ipc
                                  results/cpu_waits_h100host/run1 results/cpu_waits_h100host/run2
                                  results/gpu/handshake_h100/ipc results/gpu/trace_w4_h100/ipc
                                  results/gpu/recheck_h100/ipc results/gpu/recheck_h100/bench results/gpu/recheck_h100/bench2
                                  results/gpu/recheck_h100/repeat/ipc results/gpu/windows28_h100/ipc
                                  results/gpu/recheck3_h100/ipc results/gpu/recheck3_h100/bench results/gpu/recheck3_h100/bench2
                                  results/gpu/recheck4_h100/ipc results/gpu/recheck4_h100/bench results/gpu/recheck4_h100/a16_rank
                                  results/gpu/recheck5_h100/ipc results/gpu/recheck5_h100/bench results/gpu/recheck5_h100/a16_rank
                                  results/gpu/recheck5_h100/cpu/run1 results/gpu/recheck5_h100/cpu/run2
                                  results/gpu/nccl results/gpu/x2/nccl results/gpu/x2/nccl_iters10
                                  results/gpu/x2/nccl_batch4g results/gpu/x2/ipc
                                  results/gpu/recheck6_h100/ipc results/gpu/recheck6_h100/bench
                                  results/gpu/recheck6_h100/bench2 results/gpu/recheck6_h100/cpu/run1
                                  results/gpu/config3_hosts_h100/host1/bench results/gpu/config3_hosts_h100/host1/bench2
                                  results/gpu/config3_hosts_h100/host2/bench results/gpu/config3_hosts_h100/host2/bench2
                                  results/gpu/warmup_h100 results/gpu/bench_2356a38_h100
                                  results/gpu/config3_hosts_h100/host3/bench results/gpu/config3_hosts_h100/host3/bench2
                                  results/gpu/config3_hosts_h100/host4/bench results/gpu/config3_hosts_h100/host4/bench2
                                  results/gpu/config3_hosts_h100/host5/bench results/gpu/config3_hosts_h100/host5/bench2
                                  results/gpu/config3_hosts_h100/host6/bench results/gpu/config3_hosts_h100/host6/bench2)
exec python3 scripts/calibrate.py "$BUILD/apps/reshard/reshard" "$SYSTEM" "$JSON_OUT" "$BUILD/calibrate-plans" "${INPUTS[@]}"
