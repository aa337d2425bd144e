#!/usr/bin/env bash
# The issue-4 GPU benchmark, in one device call: run from the repo root on the GPU machine with $OUT
# set (results land there; at most 8 files come back, so everything is concatenated):
#   $OUT/gpu_bench.log         every command and its output (build tail, ctest -L gpu, each run)
#   $OUT/gpu_runs.json         JSON list of the `reshard run --json` records, each with "config" and "command"
#   $OUT/gpu_env.json          GPU, driver, CUDA, NCCL, MPI versions and the git revision
#   $OUT/gpu_h200.md           table + goals (scripts/gpu_report.py)
#   $OUT/gpu_h200_bandwidth.png  bandwidth per config vs the ceiling (scripts/plot_gpu.py, if matplotlib)
#   $OUT/gpu_bench.tar.gz      the per-run JSON, plans' summaries and the ctest log
# Configs (all ranks on one GPU through --transport cuda-ipc; each with --check, each beside --algo golden):
#   1. Qwen3-4B DP2 -> TP2 (4 ranks) and TP2 -> TP4 x DP1 (6 ranks)
#   2. Qwen3-30B-A3B EP4 -> TP4 (8 ranks), layers 0-35 of 48 (src + dst of all 48 would not fit 141 GB)
#   3. small-tensor stress: 4096 params of 32 KiB, DP2 -> TP2 (4 ranks): time per message
#   plus NCCL's refusal of two ranks on one GPU (exit 2 with the message).
# Env: GIT_REV (recorded as the revision; default: git rev-parse in the tree),
#      BUILD (default build-gpu), JOBS (default nproc), ITERS (default 5), SKIP_BUILD=1, SKIP_CTEST=1,
#      PLAN_DIR (a folder of plans NAME.json to use instead of planning here: config 2's plan takes
#      --exclude, a regex, which a build without RE2 refuses, e.g. the device's; make it on a machine
#      with RE2 and carry it), CONFIGS (config ids to run, default "1a 1b 2 3"), RUN_FLAGS (`reshard run` flags for every run;
#      default: 4 GiB / 4096-op batches, 1 GiB staging: on a GPU shared by all ranks each batch costs
#      ~0.5 ms of handshakes and context switches; config 1a with box ops measured efficiency 0.40 at
#      the 256 MiB / 64-op defaults, 0.60 at 1 GiB / 512 ops, 0.65 at 4 GiB / 4096 ops (docs/gpu.md).
#      Box ops stage nothing; golden's bulk broadcasts stage, and 8 x 1 GiB fits beside config 2).
#      MPS=1: run the GPU part (ctest -L gpu, the configs) under the CUDA MPS daemon, so the ranks
#      sharing the GPU are clients of one server instead of time-sliced contexts. Started here with
#      its pipe and log folders in a temp dir, probed with one tiny CUDA client, stopped on exit
#      (`echo quit | nvidia-cuda-mps-control`); when it cannot start or the probe fails, the log says
#      why and the runs go on without MPS. Device settings (compute mode etc.) are left alone.
#      Knobs of cuda-ipc reach the ranks from this environment too (docs/gpu.md, recorded in
#      gpu_env.json): RESHARD_CUDA_IPC_MODE=pull (push is the default), RESHARD_CUDA_IPC_BATCH=0 (one
#      launch per copy), RESHARD_CUDA_IPC_MEMCPY_MIN=<bytes>. Push vs pull in one device call:
#        bash scripts/gpu_bench.sh; RESHARD_CUDA_IPC_MODE=pull OUT=$OUT/pull SKIP_BUILD=1 SKIP_CTEST=1 \
#          bash scripts/gpu_bench.sh; scripts/gpu_compare.py $OUT/pull/gpu_runs.json $OUT/gpu_runs.json \
#          --labels pull push
set -uo pipefail
ROOT=$(pwd)
OUT=${OUT:?set OUT to the results folder}
BUILD=${BUILD:-build-gpu}
JOBS=${JOBS:-$(nproc)}
ITERS=${ITERS:-5}
RUN_FLAGS=${RUN_FLAGS-"--batch-bytes 4Gi --staging-bytes 1Gi --batch-ops 4096"}
WORK=$(mktemp -d)
LOG=$OUT/gpu_bench.log
mkdir -p "$OUT" "$WORK/runs" "$WORK/plans"
: >"$LOG"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPIRUN=(mpirun --oversubscribe --allow-run-as-root --bind-to none)
RESHARD=$ROOT/$BUILD/apps/reshard/reshard

say() { echo "$*" | tee -a "$LOG"; }
# Runs a command, logging it and its output; returns its exit code.
run() {
  say "\$ $*"
  "$@" >>"$LOG" 2>&1
  local rc=$?
  say "# exit $rc"
  return $rc
}

say "# gpu_bench.sh $(date -u +%FT%TZ) on $(hostname)"
nvidia-smi >>"$LOG" 2>&1

# MPS (MPS=1): the daemon and its folders are cleaned up on any exit.
MPS_STATE=off
MPS_DIR=
mps_stop() {
  [ "$MPS_STATE" = on ] || return 0
  echo quit | nvidia-cuda-mps-control >>"$LOG" 2>&1
  sleep 1
  echo "# MPS: daemon stopped; its control log:" >>"$LOG"
  tail -n 20 "$MPS_DIR/log/control.log" >>"$LOG" 2>/dev/null
  MPS_STATE=off
}
mps_cleanup() {
  mps_stop
  if [ -n "$MPS_DIR" ]; then rm -rf "$MPS_DIR"; fi
}
mps_off() {  # mps_off REASON: go on without MPS
  say "# MPS: $1; running without MPS"
  mps_stop
  unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
  MPS_STATE="off ($1)"
}
mps_start() {
  MPS_DIR=$(mktemp -d)
  trap mps_cleanup EXIT
  trap 'exit 143' TERM  # so a killed bench still stops the daemon (through the EXIT trap)
  trap 'exit 130' INT
  export CUDA_MPS_PIPE_DIRECTORY=$MPS_DIR/pipe CUDA_MPS_LOG_DIRECTORY=$MPS_DIR/log
  mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
  if ! command -v nvidia-cuda-mps-control >/dev/null 2>&1; then
    mps_off "nvidia-cuda-mps-control not found"
    return
  fi
  say "\$ nvidia-cuda-mps-control -d  (CUDA_MPS_PIPE_DIRECTORY=$CUDA_MPS_PIPE_DIRECTORY)"
  if ! nvidia-cuda-mps-control -d >>"$LOG" 2>&1; then
    mps_off "nvidia-cuda-mps-control -d failed"
    return
  fi
  MPS_STATE=on
  # The server starts on the first client: one context and allocation through the driver API must work.
  if ! python3 - >>"$LOG" 2>&1 <<'PROBE'
import ctypes, sys
cuda = ctypes.CDLL("libcuda.so.1")
dev, ctx, ptr = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_uint64()
steps = (("cuInit", lambda: cuda.cuInit(0)),
         ("cuDeviceGet", lambda: cuda.cuDeviceGet(ctypes.byref(dev), 0)),
         ("cuDevicePrimaryCtxRetain", lambda: cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev)),
         ("cuCtxSetCurrent", lambda: cuda.cuCtxSetCurrent(ctx)),
         ("cuMemAlloc", lambda: cuda.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(1 << 20))),
         ("cuMemFree", lambda: cuda.cuMemFree_v2(ptr)))
for what, call in steps:
    r = call()
    if r != 0:
        print("MPS probe: %s returned CUresult %d" % (what, r))
        sys.exit(1)
print("MPS probe: a CUDA client got a context and 1 MiB")
PROBE
  then
    mps_off "a CUDA client failed under the daemon (probe above)"
    return
  fi
  echo get_server_list | nvidia-cuda-mps-control >>"$LOG" 2>&1
  say "# MPS: on (daemon started, probe passed)"
}
if [ "${MPS:-0}" = 1 ]; then
  mps_start
fi
export RESHARD_BENCH_MPS="$MPS_STATE"  # recorded in gpu_env.json

if [ "${SKIP_BUILD:-0}" != 1 ]; then
  run cmake -S "$ROOT" -B "$ROOT/$BUILD" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DRESHARD_WITH_CUDA=ON -DRESHARD_WITH_NCCL=AUTO -DRESHARD_WITH_MPI=ON -DRESHARD_BUILD_BENCH=OFF ||
    { say "configure failed"; exit 1; }
  say "\$ cmake --build $BUILD -j$JOBS"
  cmake --build "$ROOT/$BUILD" -j"$JOBS" >"$WORK/build.log" 2>&1
  rc=$?
  tail -n 30 "$WORK/build.log" >>"$LOG"
  say "# exit $rc"
  [ $rc -eq 0 ] || { cp "$WORK/build.log" "$OUT/build.log"; exit 1; }
fi

# Versions: GPU and driver (nvidia-smi), CUDA (nvcc), NCCL (the library the binary loads), MPI.
NCCL_LIB=$(ldd "$RESHARD" 2>/dev/null | awk '/libnccl/ {print $3; exit}')
python3 - "$OUT/gpu_env.json" "$NCCL_LIB" "$ROOT" <<'EOF' >>"$LOG" 2>&1
import ctypes, json, os, subprocess, sys
out, nccl_lib, root = sys.argv[1:4]
def sh(cmd):
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=60).stdout.strip()
    except Exception as e:
        return "unavailable: %s" % e
env = {
    "gpus": sh("nvidia-smi --query-gpu=index,name,memory.total,driver_version,pci.bus_id --format=csv,noheader"),
    "driver": sh("nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1"),
    "cuda_driver_api": sh("nvidia-smi | grep -o 'CUDA Version: [0-9.]*'"),
    "nvcc": sh("nvcc --version | tail -2 | head -1") or sh("/usr/local/cuda/bin/nvcc --version | tail -2 | head -1"),
    "mpi": sh("mpirun --version | head -1"),
    # GIT_REV: the revision as the caller knows it (a copied tree's .git can be stale on the device).
    "git": os.environ.get("GIT_REV") or
           sh("cd %s && git rev-parse --short HEAD && git status --short | wc -l" % root).replace("\n", " dirty files: "),
    "nccl_library": nccl_lib,
    "mps": os.environ.get("RESHARD_BENCH_MPS", "off"),
    "cuda_ipc_knobs": {k: v for k, v in os.environ.items() if k.startswith("RESHARD_CUDA_IPC_")},
}
try:
    v = ctypes.c_int()
    ctypes.CDLL(nccl_lib or "libnccl.so.2").ncclGetVersion(ctypes.byref(v))
    env["nccl"] = "%d.%d.%d" % (v.value // 10000, v.value // 100 % 100, v.value % 100)
except OSError as e:
    env["nccl"] = "unavailable: %s" % e
json.dump(env, open(out, "w"), indent=2)
print(json.dumps(env, indent=2))
EOF

if [ "${SKIP_CTEST:-0}" != 1 ]; then
  say "\$ ctest -L gpu --output-on-failure"
  (cd "$ROOT/$BUILD" && ctest -L gpu --output-on-failure --timeout 600) >"$WORK/ctest_gpu.log" 2>&1
  say "# exit $?"
  grep -E "tests passed|tests failed|\(Failed\)|\(Skipped\)|Not Run|\*\*\*" "$WORK/ctest_gpu.log" | tee -a "$LOG"
fi

# Plans.
plan() {  # plan NAME MODEL reshard-plan-args...
  local name=$1 model=$2
  shift 2
  if [ -n "${PLAN_DIR:-}" ] && [ -f "$PLAN_DIR/$name.json" ]; then  # made elsewhere (e.g. where RE2 is)
    run cp "$PLAN_DIR/$name.json" "$WORK/plans/$name.json"
    return
  fi
  run "$RESHARD" plan --model "$model" "$@" --force -o "$WORK/plans/$name.json" &&
    "$RESHARD" plan --model "$model" "$@" --summary >"$WORK/plans/$name.summary.txt" 2>&1
}
python3 - "$WORK/stress-model.json" <<'EOF'
# 2048 layers x (gate_proj, down_proj) of 128 x 128 bf16 = 4096 params of 32 KiB (128 MiB).
import json, sys
params = {}
for l in range(2048):
    params["model.layers.%d.mlp.gate_proj.weight" % l] = {"shape": [128, 128], "dtype": "bfloat16"}
    params["model.layers.%d.mlp.down_proj.weight" % l] = {"shape": [128, 128], "dtype": "bfloat16"}
json.dump({"model": "stress-4096x32KiB", "source": "scripts/gpu_bench.sh", "params": params}, open(sys.argv[1], "w"))
EOF
plan qwen3_4b_dp2_tp2 plans/qwen3-4b.json --train-gpus 2 --train tp=1 --gen-gpus 2 --gen tp=2
plan qwen3_4b_tp2_tp4 plans/qwen3-4b.json --train-gpus 2 --train tp=2 --gen-gpus 4 --gen tp=4
plan qwen3_30b_ep4_tp4_36l plans/qwen3-30b-a3b.json --train-gpus 4 --train ep=4 --gen-gpus 4 --gen tp=4 \
  --exclude 'model\.layers\.(3[6-9]|4[0-7])\.'
plan stress_4096_dp2_tp2 "$WORK/stress-model.json" --train-gpus 2 --train tp=1 --gen-gpus 2 --gen tp=2 --bulk all

# Runs: each config with the plan and the golden path, --check, --json.
RECORDS=()
bench() {  # bench CONFIG RANKS PLAN ALGO [run flags...]
  local config=$1 ranks=$2 plan=$3 algo=$4
  shift 4
  case " ${CONFIGS:-1a 1b 2 3} " in *" ${config%% *} "*) ;; *) return 0 ;; esac
  local json=$WORK/runs/$config.$algo.json
  local cmd=("${MPIRUN[@]}" -np "$ranks" "$RESHARD" run --plan "$WORK/plans/$plan.json" --transport cuda-ipc
    --algo "$algo" --check --iters "$ITERS" --warmup 5 --json "$json" --force $RUN_FLAGS "$@")
  run "${cmd[@]}"
  local rc=$?
  printf '%s\t%s\t%s\t%s\n' "$config" "$rc" "$json" "${cmd[*]}" >>"$WORK/runs/index.tsv"
}
for algo in reshard golden; do
  bench "1a qwen3-4b dp2->tp2" 4 qwen3_4b_dp2_tp2 $algo
  bench "1b qwen3-4b tp2->tp4" 6 qwen3_4b_tp2_tp4 $algo
  bench "2 qwen3-30b-a3b ep4->tp4 (36 of 48 layers)" 8 qwen3_30b_ep4_tp4_36l $algo
  bench "3 stress 4096 x 32KiB dp2->tp2" 4 stress_4096_dp2_tp2 $algo
done

# NCCL on one GPU: refused before NCCL init, exit 2 on every rank, with the message.
run "${MPIRUN[@]}" -np 4 -x CUDA_VISIBLE_DEVICES=0 "$RESHARD" run --plan "$WORK/plans/qwen3_4b_dp2_tp2.json" \
  --transport nccl --iters 1
nccl_rc=$?
grep -o "NCCL refuses.*" "$LOG" | tail -1 >"$WORK/nccl_refusal.txt"

# One JSON list of the records (config, command, exit code added), the report and the plot.
python3 - "$WORK/runs/index.tsv" "$OUT/gpu_runs.json" "$nccl_rc" "$WORK/nccl_refusal.txt" <<'EOF' | tee -a "$LOG"
import json, os, sys
index, out, nccl_rc, refusal = sys.argv[1:5]
records = []
for line in open(index):
    config, rc, path, cmd = line.rstrip("\n").split("\t")
    rec = json.load(open(path)) if os.path.exists(path) else {"format": "reshard-run", "missing": True}
    rec.update({"config": config, "command": cmd, "exit_code": int(rc)})
    records.append(rec)
records.append({"format": "reshard-nccl-refusal", "config": "nccl on one GPU (4 ranks)", "exit_code": int(nccl_rc),
                "message": open(refusal).read().strip()})
json.dump(records, open(out, "w"), indent=1)
print("%d records -> %s" % (len(records), out))
EOF
run python3 scripts/gpu_report.py "$OUT/gpu_runs.json" "$OUT/gpu_env.json" -o "$OUT/gpu_h200.md"
run python3 scripts/plot_gpu.py "$OUT/gpu_runs.json" -o "$OUT/gpu_h200_bandwidth.png" ||
  say "# plot skipped (matplotlib missing?): run scripts/plot_gpu.py on the JSON later"
cp "$WORK/ctest_gpu.log" "$WORK/runs/" 2>/dev/null
cp "$WORK/plans/"*.summary.txt "$WORK/runs/" 2>/dev/null
tar -C "$WORK" -czf "$OUT/gpu_bench.tar.gz" runs
say "# done: $(ls "$OUT" | tr '\n' ' ')"
rm -rf "$WORK"
