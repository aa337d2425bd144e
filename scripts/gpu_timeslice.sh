#!/usr/bin/env bash
# What P processes issuing GPU work on ONE GPU cost against one process alone: the context-switch cost
# of the h200-shared-1gpu preset (`switch_us`, docs/performance.md), and the GPU's time slice (`slice_us`).
# Run from the repo root on the GPU machine with $OUT set; about 30 s (60 s with MPS=1) on an H200:
#   $OUT/gpu_timeslice.json   the program's records per P (and per MPS state), nvidia-smi's GPU, driver
#                             and compute mode, and the derived costs (below)
#   $OUT/gpu_timeslice.log    every command and its output, and the summary tables
# Copies: for each P in PS (default "1 2 4 6 8"): mpirun -np P reshard_gpu_timeslice
# (bench/gpu_timeslice.cpp): every rank on device 0, all at once for WINDOW_S seconds per repetition
# (median of REPS), steps
#   sync      { cudaMemcpyAsync device-to-device of B bytes; cudaStreamSynchronize } for B in SIZES
#   pipelined { 32 copies of the smallest size back to back; cudaStreamSynchronize }
#   graph     { the same 32 copies as one CUDA graph launch; cudaStreamSynchronize }
# Derived, per MPS state (all in us):
#   gpu_copy_us      = min(pipelined, graph) step / 32 at P = 1: the GPU's time for one small copy, one
#                      context feeding it back to back (an upper bound: host or graph gaps included)
#   aggregate_step   = 1 / (sum over ranks of sync steps per second), smallest size: the GPU's time per
#                      synchronous step when P processes share it
#   switch_us(P)     = aggregate_step(P) - gpu_copy_us: what the GPU loses per synchronous step when the
#                      step's process must be switched in (at P >= 4 some process always has a step
#                      pending, so no idle time hides in it; at P = 2 it is an upper bound)
#   extra_vs_alone(P)= aggregate_step(P) - sync step at P = 1 (negative: the processes' host time overlaps)
#   fit(P)           = least squares of aggregate_step over SIZES: intercept (us) and GB/s of bytes copied
#                      (the shared copy rate; compare with the preset's 1911); switch_from_fit = intercept
#                      - gpu_copy_us, a cross-check of switch_us(P) with the bandwidth share taken out
#   switch_us_for_preset = median of switch_us(P) over P >= 4, MPS off: the value for h200-shared-1gpu
# Time slice: for each P in SLICE_PS (default "1 2 4 8"; P = 1 is the control: no other context, so no
# gaps): mpirun -np P reshard_gpu_timeslice --mode slice: every rank on device 0 launches at once one
# kernel of one thread that reads the GPU's clock (%globaltimer) in a tight loop for SPIN_MS ms and records
# each step between reads longer than GAP_US (its context switched out); SLICE_REPS repetitions. Derived,
# per MPS state, in derived.STATE.timeslice (us):
#   per_ranks[P]     running intervals with a gap at both ends (= the rank's time slices) and gaps (= the
#                    other P - 1 contexts' slices and P switches), median / mean / p10 / p90, inside the
#                    window where all P kernels run; run_share = time some rank ran / window (about 1
#                    time-sliced, about P when the kernels run concurrently, as under MPS);
#                    switch_from_share = (window - time run) / switches into a rank in it;
#                    switch_from_round = (median gap - (P - 1) x median slice) / P: cross-checks of switch_us
#   timeslice_us     = median over P >= 2 of the median running interval: the value for the preset's slice_us
#                    (also derived.STATE.timeslice_us)
# Env: BUILD (default build-gpu; uses $BUILD/bench/reshard_gpu_timeslice when built there, else compiles
#      bench/gpu_timeslice.cpp with mpicxx against CUDA_HOME, default /usr/local/cuda), PS (empty: no copy
#      sweep), WINDOW_S (default 0.1), REPS (default 3), SIZES (default 4Ki,1Mi,8Mi,64Mi), SLICE_PS (empty: no
#      slice sweep), SPIN_MS (default 200), GAP_US (default 5), SLICE_REPS (default 3),
#      MPS=1: after the plain sweeps, the same sweeps under the CUDA MPS control daemon (started here with
#      its pipe and log folders in a temp dir, stopped on exit; if it cannot start or its first client
#      fails, the log says why and the MPS sweep is skipped). Device settings are left alone.
set -uo pipefail
ROOT=$(pwd)
OUT=${OUT:?set OUT to the results folder}
BUILD=${BUILD:-build-gpu}
PS=${PS-"1 2 4 6 8"}
WINDOW_S=${WINDOW_S:-0.1}
REPS=${REPS:-3}
SIZES=${SIZES:-4Ki,1Mi,8Mi,64Mi}
SLICE_PS=${SLICE_PS-"1 2 4 8"}
SPIN_MS=${SPIN_MS:-200}
GAP_US=${GAP_US:-5}
SLICE_REPS=${SLICE_REPS:-3}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
WORK=$(mktemp -d)
LOG=$OUT/gpu_timeslice.log
mkdir -p "$OUT" "$WORK/runs"
: >"$LOG"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPIRUN=(mpirun --oversubscribe --allow-run-as-root --bind-to none)

say() { echo "$*" | tee -a "$LOG"; }

MPS_STATE=off
MPS_DIR=
cleanup() {
  if [ "$MPS_STATE" = on ]; then
    echo quit | nvidia-cuda-mps-control >>"$LOG" 2>&1
    sleep 1
    tail -n 20 "$MPS_DIR/log/control.log" >>"$LOG" 2>/dev/null
  fi
  rm -rf "$WORK" ${MPS_DIR:+"$MPS_DIR"}
}
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

say "# gpu_timeslice.sh $(date -u +%FT%TZ) on $(hostname)"
nvidia-smi >>"$LOG" 2>&1

# shellcheck source=gpu_probe.sh
. "$ROOT/scripts/gpu_probe.sh"
probe_binary gpu_timeslice

# run_p STATE OUT P ARGS...: one mpirun of P ranks writing OUT (removed when the run fails); its exit code.
run_p() {
  local state=$1 out=$2 p=$3 rc
  shift 3
  say "\$ ${MPIRUN[*]} -np $p $BIN $*   # MPS $state"
  timeout 60 "${MPIRUN[@]}" -np "$p" "$BIN" "$@" >"$out" 2>>"$LOG"
  rc=$?
  say "# exit $rc"
  [ $rc -eq 0 ] || rm -f "$out"
  return $rc
}

# sweep STATE: one mpirun per P of PS (copies), then of SLICE_PS (--mode slice); records in
# $WORK/runs/STATE-P.json and $WORK/runs/slice-STATE-P.json. Returns non-zero if the first run fails.
sweep() {
  local state=$1 first=1 p
  for p in $PS; do
    if ! run_p "$state" "$WORK/runs/$state-$p.json" "$p" --window-s "$WINDOW_S" --reps "$REPS" --sizes "$SIZES"; then
      [ $first = 1 ] && return 1
    fi
    first=0
  done
  for p in $SLICE_PS; do
    if ! run_p "$state" "$WORK/runs/slice-$state-$p.json" "$p" --mode slice --spin-ms "$SPIN_MS" --gap-us "$GAP_US" \
      --reps "$SLICE_REPS"; then
      [ $first = 1 ] && return 1
    fi
    first=0
  done
}

sweep off
if [ "${MPS:-0}" = 1 ]; then
  if ! command -v nvidia-cuda-mps-control >/dev/null 2>&1; then
    say "# MPS: nvidia-cuda-mps-control not found; no MPS sweep"
  else
    MPS_DIR=$(mktemp -d)
    export CUDA_MPS_PIPE_DIRECTORY=$MPS_DIR/pipe CUDA_MPS_LOG_DIRECTORY=$MPS_DIR/log
    mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
    say "\$ nvidia-cuda-mps-control -d  (CUDA_MPS_PIPE_DIRECTORY=$CUDA_MPS_PIPE_DIRECTORY)"
    if nvidia-cuda-mps-control -d >>"$LOG" 2>&1; then
      MPS_STATE=on
      # The first run is the probe: if a client fails under the daemon, no MPS records.
      sweep on || say "# MPS: the first client failed under the daemon (log above); no MPS records"
      echo get_server_list | nvidia-cuda-mps-control >>"$LOG" 2>&1
    else
      say "# MPS: nvidia-cuda-mps-control -d failed; no MPS sweep"
    fi
  fi
fi

python3 - "$WORK/runs" "$OUT/gpu_timeslice.json" "$PS" "$WINDOW_S" "$REPS" "$SIZES" "$SLICE_PS" "$SPIN_MS" \
  "$GAP_US" "$SLICE_REPS" <<'PY' 2>&1 | tee -a "$LOG"
import json, os, statistics, subprocess, sys
runs, out, ps, window, reps, sizes, slice_ps, spin_ms, gap_us, slice_reps = sys.argv[1:11]

def sh(cmd):
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=30).stdout.strip()
    except Exception as e:
        return "unavailable: %s" % e

doc = {"format": "reshard-gpu-timeslice-sweep", "version": 2,
       "command": "scripts/gpu_timeslice.sh", "arguments": {"ps": ps, "window_s": float(window), "reps": int(reps),
                                                            "sizes": sizes, "slice_ps": slice_ps,
                                                            "spin_ms": float(spin_ms), "gap_us": float(gap_us),
                                                            "slice_reps": int(slice_reps)},
       "gpu": sh("nvidia-smi --query-gpu=index,name,memory.total,driver_version,compute_mode,pci.bus_id "
                 "--format=csv,noheader"),
       "driver": sh("nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1"),
       "mps_requested": os.environ.get("MPS", "0") == "1",
       "states": {}, "derived": {}}

def load(prefix, plist):
    recs = {}
    for p in plist.split():
        f = os.path.join(runs, "%s-%s.json" % (prefix, p))
        if os.path.isfile(f):
            try:
                recs[int(p)] = json.load(open(f))
            except ValueError as e:
                print("unreadable %s: %s" % (f, e))
    return recs

def copies(state, recs):  # the switch cost from synchronous copies (mode copies)
    if 1 not in recs:
        print("MPS %s: no P = 1 copy run, no switch derived" % state)
        return {}
    def rec(p, mode, b=None):
        for r in recs[p]["records"]:
            if r["mode"] == mode and (b is None or r["bytes"] == b):
                return r
    sync_sizes = sorted({r["bytes"] for r in recs[1]["records"] if r["mode"] == "sync"})
    small = sync_sizes[0]
    gpu_copy = min(r["step_us_per_rank"] / r["copies_per_step"] for r in recs[1]["records"]
                   if r["mode"] in ("pipelined", "graph"))
    alone = rec(1, "sync", small)["step_us_per_rank"]
    rows = []
    for p in sorted(recs):
        s = rec(p, "sync", small)
        pp = rec(p, "pipelined")
        gr = rec(p, "graph")
        xs = [b for b in sync_sizes if rec(p, "sync", b)]
        ys = [rec(p, "sync", b)["aggregate_step_us"] for b in xs]
        mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
        sxx = sum((x - mx) ** 2 for x in xs)
        slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx > 0 else 0
        icpt = my - slope * mx
        rows.append({
            "ranks": p,
            "step_us_per_rank": s["step_us_per_rank"],
            "step_us_per_rank_min": s["step_us_per_rank_min"],
            "step_us_per_rank_max": s["step_us_per_rank_max"],
            "aggregate_steps_per_s": s["aggregate_steps_per_s"],
            "aggregate_step_us": s["aggregate_step_us"],
            "switch_us": s["aggregate_step_us"] - gpu_copy if p > 1 else None,
            "extra_vs_alone_us": s["aggregate_step_us"] - alone if p > 1 else None,
            "pipelined_aggregate_copy_us": pp["aggregate_step_us"] / pp["copies_per_step"],
            "graph_aggregate_copy_us": gr["aggregate_step_us"] / gr["copies_per_step"] if gr else None,
            "fit_intercept_us": icpt,
            "fit_gbps": 1e-3 / slope if slope > 0 else None,
            "switch_from_fit_us": icpt - gpu_copy if p > 1 else None,
            "aggregate_gbps_largest": rec(p, "sync", xs[-1])["aggregate_gbps"],
        })
    big = [r["switch_us"] for r in rows if r["ranks"] >= 4]
    d = {"small_bytes": small, "gpu_copy_us": gpu_copy, "alone_sync_step_us": alone, "per_ranks": rows,
         "switch_us_for_preset": statistics.median(big) if big else None}
    print("\nMPS %s: small copy %d B; GPU time per copy, one context back to back %.2f us; one process's "
          "sync step %.2f us" % (state, small, gpu_copy, alone))
    print("%5s %12s %14s %14s %10s %10s %12s %12s %10s %12s" % (
        "P", "step/rank", "rank min-max", "agg steps/s", "agg step", "switch", "vs alone", "pipelined",
        "fit icpt", "fit GB/s"))
    for r in rows:
        f = lambda v, w=10, dd=2: ("%*.*f" % (w, dd, v)) if v is not None else "%*s" % (w, "-")
        print("%5d %12.2f %6.1f-%-7.1f %14.0f %10.2f %s %s %s %s %s" % (
            r["ranks"], r["step_us_per_rank"], r["step_us_per_rank_min"], r["step_us_per_rank_max"],
            r["aggregate_steps_per_s"], r["aggregate_step_us"], f(r["switch_us"]), f(r["extra_vs_alone_us"], 12),
            f(r["pipelined_aggregate_copy_us"], 12), f(r["fit_intercept_us"]), f(r["fit_gbps"], 12, 1)))
    v = d["switch_us_for_preset"]
    print("switch_us (median over P >= 4): %s" % ("%.2f" % v if v is not None else "-"))
    return d

def timeslice(state, srecs):  # the time slice from spinning kernels (mode slice)
    rows = []
    for p in sorted(srecs):
        r = srecs[p]
        run, gap = r["running_us"], r["gaps_us"]
        rows.append({"ranks": p, "window_us": r["window_us"], "run_share": r["run_share"], "switches": r["switches"],
                     "running_count": run["count"], "running_median_us": run.get("median"),
                     "running_mean_us": run.get("mean"), "running_p10_us": run.get("p10"),
                     "running_p90_us": run.get("p90"), "gap_count": gap["count"], "gap_median_us": gap.get("median"),
                     "gap_mean_us": gap.get("mean"), "gap_p10_us": gap.get("p10"), "gap_p90_us": gap.get("p90"),
                     "switch_from_share_us": r["switch_from_share_us"],
                     "switch_from_round_us": r["switch_from_round_us"], "read_ns": r["read_ns"],
                     "truncated": r["truncated"]})
    multi = [x for x in rows if x["ranks"] >= 2 and x["running_median_us"] is not None]
    med = lambda k: statistics.median([x[k] for x in multi if x[k] is not None]) if multi else None
    d = {"per_ranks": rows, "timeslice_us": med("running_median_us"),
         "switch_from_share_us": med("switch_from_share_us"), "switch_from_round_us": med("switch_from_round_us")}
    print("\nMPS %s: time slice (kernels spinning on the GPU clock; gaps > %s us; %s ms, %s reps)" % (
        state, gap_us, spin_ms, slice_reps))
    print("%5s %10s %9s %9s %9s %19s %9s %19s %12s %12s %8s" % (
        "P", "window", "run share", "switches", "slices", "slice med (p10-p90)", "gaps", "gap med (p10-p90)",
        "sw share", "sw round", "read ns"))
    f = lambda v, w=9, dd=1: ("%*.*f" % (w, dd, v)) if v is not None else "%*s" % (w, "-")
    for x in rows:
        rng = lambda a, b, c: ("%s (%s-%s)" % (f(x[a], 7), f(x[b], 1), f(x[c], 1)) if x[a] is not None
                               else "-").rjust(19)
        print("%5d %10.0f %s %9d %9d %s %9d %s %s %s %8.1f%s" % (
            x["ranks"], x["window_us"], f(x["run_share"], 9, 3), x["switches"], x["running_count"],
            rng("running_median_us", "running_p10_us", "running_p90_us"), x["gap_count"],
            rng("gap_median_us", "gap_p10_us", "gap_p90_us"), f(x["switch_from_share_us"], 12),
            f(x["switch_from_round_us"], 12), x["read_ns"], "  TRUNCATED" if x["truncated"] else ""))
    print("timeslice_us (median over P >= 2): %s; switch from share %s, from round %s" % tuple(
        ("%.1f" % d[k]) if d[k] is not None else "-" for k in ("timeslice_us", "switch_from_share_us",
                                                              "switch_from_round_us")))
    return d

for state in ("off", "on"):
    recs, srecs = load(state, ps), load("slice-" + state, slice_ps)
    if not recs and not srecs:
        continue
    doc["states"][state] = {"mps": state, "runs": [recs[p] for p in sorted(recs)],
                            "slice_runs": [srecs[p] for p in sorted(srecs)]}
    d = copies(state, recs) if recs else {}
    if srecs:
        d["timeslice"] = timeslice(state, srecs)
        d["timeslice_us"] = d["timeslice"]["timeslice_us"]
    doc["derived"][state] = d
json.dump(doc, open(out, "w"), indent=1)
print("wrote %s" % out)
PY
