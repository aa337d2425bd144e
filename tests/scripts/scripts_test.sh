#!/usr/bin/env bash
# The result scripts on committed records (label unit: python3 only, no GPU): each case regenerates a
# committed report byte for byte, or checks a script's verdict.
#   scripts_test.sh SOURCE_DIR CASE [BUILD_DIR]   (BUILD_DIR: the build whose reshard a case runs)
set -uo pipefail
ROOT=$1
CASE=$2
BUILD=${3:-build}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cd "$ROOT" || exit 1
fail() { echo "FAIL: $*"; exit 1; }

case "$CASE" in
  plot_runs_svg_png)  # plot_runs.py on committed run records: an SVG with a bar per record and phase, a PNG
    python3 scripts/plot_runs.py results/gpu/schedule_h200/cpu results/gpu/schedule_h200/ipc -o "$T/r.svg" ||
      fail "plot_runs.py (svg) exited $?"
    bars=$(grep -c '<title>' "$T/r.svg")
    # 3 CPU records x (bulk.pp0, bulk.pp1, misc, total) + 2 x (bulk.pp2, bulk.pp3) + the cuda-ipc record's 3 rows
    [ "$bars" -eq 19 ] || fail "expected 19 bars, got $bars"
    grep -q "cpu_pp4dp4_tp8dp2 reshard/mpi" "$T/r.svg" || fail "the legend lacks a record"
    python3 scripts/plot_runs.py results/gpu/schedule_h200/ipc -o "$T/r.png" || fail "plot_runs.py (png) exited $?"
    [ "$(head -c 8 "$T/r.png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] || fail "not a PNG"
    [ "$(stat -c %s "$T/r.png")" -gt 2000 ] || fail "PNG too small"
    python3 scripts/plot_runs.py results/gpu/schedule_h200/ipc -o "$T/r.png" 2>/dev/null && fail "overwrote without --force"
    ;;
  gpu_report_reproduces)  # results/gpu_h200.md is what gpu_report.py makes of the push records
    python3 scripts/gpu_report.py results/gpu/push/gpu_runs.json results/gpu/push/gpu_env.json -o "$T/r.md" ||
      fail "gpu_report.py exited $?"
    cmp "$T/r.md" results/gpu_h200.md || fail "results/gpu_h200.md differs from a fresh report"
    grep -q "cuda-ipc push" "$T/r.md" || fail "the report does not name the mode"
    ;;
  gpu_compare_reproduces)
    python3 scripts/gpu_compare.py results/gpu/pull/gpu_runs.json results/gpu/push/gpu_runs.json \
      --labels pull push -o "$T/c.md" || fail "gpu_compare.py exited $?"
    cmp "$T/c.md" results/gpu_h200_pull_vs_push.md || fail "results/gpu_h200_pull_vs_push.md differs"
    ;;
  gpu_report_transport_mode)  # a record's transport_mode wins over the version suffix
    python3 - "$T/m.json" <<'PY' || fail "could not write the record"
import json, sys
rec = json.load(open("results/gpu/push/gpu_runs.json"))[0]
rec["transport_mode"] = "pull"
json.dump([rec], open(sys.argv[1], "w"))
PY
    python3 scripts/gpu_report.py "$T/m.json" results/gpu/push/gpu_env.json -o "$T/m.md" || fail "gpu_report.py exited $?"
    grep -q "| cuda-ipc pull |" "$T/m.md" || fail "transport_mode was not used"
    ;;
  ipc_trace_steps)  # the stress trace: 12 steps (4 phases' worth of 3 iterations), every rank in each
    out=$(python3 scripts/ipc_trace.py results/gpu/extra/trace_poll/3 --last 1) || fail "ipc_trace.py exited $?"
    echo "$out" | grep -q "^12 steps" || fail "expected 12 steps: $out"
    [ "$(echo "$out" | grep -cE '^ +[0-3] ')" = 4 ] || fail "expected one line per rank (4): $out"
    ;;
  ipc_trace_handshake)  # the time-sliced GPU presets' per-batch latency is the committed window-1 traces'
    # measured handshake (system_presets.cpp), as simulate reports it
    out=$(python3 scripts/ipc_trace.py --handshake results/gpu/trace_h100/trace/dp2_tp2_w1 \
          results/gpu/trace_h100/trace/pp2dp2_tp2dp2_direct_w1) || fail "ipc_trace.py --handshake exited $?"
    measured=$(echo "$out" | sed -n 's/.*copier batches: median \([0-9.]*\) us.*/\1/p')
    [ -n "$measured" ] || fail "no median in: $out"
    for preset in h200-shared-1gpu h200-shared-1gpu-mps h100-shared-1gpu; do
      lat=$("$BUILD/apps/reshard/reshard" simulate results/gpu/trace_h100/plans/ea0529adf0e5f41e.json --system "$preset" \
            --json | python3 -c 'import json,sys; s=json.load(sys.stdin)["system"]; print(s["nvlink_latency_us"], s["nic_latency_us"])') ||
        fail "simulate --system $preset failed"
      [ "$lat" = "$measured $measured" ] || fail "$preset latency $lat, the traces' handshake $measured"
    done
    ;;
  ipc_trace_switches)  # at windows 1 and 4 the launching-rank changes the current executor's trace shows
    # (a bulk stage alone, and the total of all ops) are the switches simulate counts, within 15 % of
    # the trace's median or 2 (window 4's total: 12 before launches waited for the copier's waits)
    for w in 1 4; do
      out=$(python3 scripts/ipc_trace.py --switches results/gpu/trace_w4_h100/trace/pp2dp2_tp2dp2_direct_w$w) ||
        fail "ipc_trace.py --switches exited $?"
      sim=$("$BUILD/apps/reshard/reshard" simulate results/gpu/trace_h100/plans/68c57464ffa35c4c.json \
            --system h100-shared-1gpu --window $w --json |
            python3 -c 'import json,sys; d=json.load(sys.stdin); print(next(p["switches"] for p in d["phases"] if p["phase"] == "bulk.pp0"), d["total_switches"])') ||
        fail "simulate failed"
      read -r sim_stage sim_total <<<"$sim"
      for c in "0,1 $sim_stage" "0,1,2,3 $sim_total"; do
        read -r ranks want <<<"$c"
        measured=$(echo "$out" | awk -v r="$ranks" '$5 == r {print $4}' | sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}')
        [ -n "$measured" ] || fail "no steps launched by ranks $ranks in: $out"
        slack=$(( measured * 15 / 100 > 2 ? measured * 15 / 100 : 2 ))
        [ $((measured - want)) -le "$slack" ] && [ $((want - measured)) -le "$slack" ] ||
          fail "window $w, ranks $ranks: trace $measured rank changes, simulate $want switches"
      done
    done
    ;;
  perf_gate_gpu)  # the GPU baseline passes itself and fails the memcpy-era build (b784af1)
    python3 scripts/perf_gate results/baseline/gpu_h200.json results/gpu/push/gpu_runs.json >"$T/p" ||
      fail "the baseline's own run failed the gate: $(cat "$T/p")"
    if python3 scripts/perf_gate results/baseline/gpu_h200.json results/gpu/extra/push_b784af1/push/gpu_runs.json \
      >"$T/f"; then
      fail "the gate passed a run 13-18 % below the baseline"
    fi
    grep -q "FAILED" "$T/f" || fail "no FAILED verdict: $(cat "$T/f")"
    ;;
  perf_gate_bench_aggregates)  # BigO / RMS entries (coefficients, no cpu_time) and skips are not times
    python3 - "$T/b.json" <<'PY' || fail "could not write the record"
import json, sys
run = lambda name, t: {"name": name, "run_name": name, "run_type": "iteration", "cpu_time": t, "time_unit": "ms"}
doc = {"benchmarks": [run("BM_Reference_Sort1M", 50.0), run("BM_Load_DeepSeekV3", 100.0),
    {"name": "BM_Plan_Qwen3_4B_DpN_BigO", "run_name": "BM_Plan_Qwen3_4B_DpN", "run_type": "aggregate",
     "aggregate_name": "BigO", "cpu_coefficient": 1.0, "real_coefficient": 1.0, "big_o": "N"},
    {"name": "BM_Plan_Qwen3_4B_DpN_RMS", "run_name": "BM_Plan_Qwen3_4B_DpN", "run_type": "aggregate",
     "aggregate_name": "RMS", "rms": 0.01},
    {"name": "BM_Skipped", "run_name": "BM_Skipped", "run_type": "iteration", "error_occurred": False,
     "skipped": True, "error_message": "skipped"}]}
json.dump(doc, open(sys.argv[1], "w"))
PY
    python3 scripts/perf_gate "$T/b.json" "$T/b.json" >"$T/g" 2>&1 || fail "the gate failed on itself: $(cat "$T/g")"
    grep -q "load_deepseek_v3" "$T/g" || fail "the timed entry was not compared: $(cat "$T/g")"
    ;;
  measure_host)  # calibrate.sh --measure-host 4: every rate, the fan rate among them, as calibrate reads them
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    bash scripts/calibrate.sh --measure-host 4 >"$T/h.json" 2>"$T/err" || fail "measure-host exited $?: $(cat "$T/err")"
    python3 - "$T/h.json" "$(nproc)" <<'PY' || fail "bad host file: $(cat "$T/h.json")"
import json, sys
h = json.load(open(sys.argv[1]))
assert h["ranks"] == 4
for k in ("memcpy_one_rank_gbps", "memcpy_all_ranks_aggregate_gbps", "p2p_one_pair_gbps",
          "p2p_half_to_half_aggregate_gbps", "root_sends_1_ms", "root_sends_3_ms", "fan_gbps"):
    assert h[k] > 0, k
assert h["root_sends_3_ms"] > h["root_sends_1_ms"]  # three whole messages take longer than one
assert h["cores"] == int(sys.argv[2]), h["cores"]  # the host's nproc: simulate --host-cores
PY
    # Two ranks: one send only, so no root_sends_k beside root_sends_1 (once a duplicate key) and no fan rate.
    bash scripts/calibrate.sh --measure-host 2 >"$T/h2.json" 2>"$T/err" || fail "measure-host 2 exited $?: $(cat "$T/err")"
    python3 - "$T/h2.json" <<'PY' || fail "bad 2-rank host file: $(cat "$T/h2.json")"
import json, sys
def unique(pairs):
    keys = [k for k, _ in pairs]
    assert len(keys) == len(set(keys)), f"duplicate keys: {keys}"
    return dict(pairs)
h = json.load(open(sys.argv[1]), object_pairs_hook=unique)
assert h["ranks"] == 2 and h["root_sends_1_ms"] > 0 and h["fan_gbps"] == 0
assert not any(k.startswith("root_sends_") and k != "root_sends_1_ms" for k in h), h
PY
    ;;
  calibrate_handoff)  # with single copy a CPU record's batches cost the host's busy hand-off (the median of the
    # host file's and the rounds in the nearest handoff.json in the record's folder or above); without single
    # copy (--host-cores' hosts) not
    d="$T/set"; mkdir -p "$d"
    cp results/cpu_waits_vm/iters20/run1/a16_waits.json "$d/"
    predict() { RESHARD_BUILD_DIR=$BUILD bash scripts/calibrate.sh --json "$T/c.json" "$d" >"$T/out" 2>&1 ||
                  fail "calibrate exited $?: $(tail -3 "$T/out")"
                python3 -c 'import json,sys; print([r["predicted_ms"] for r in json.load(open(sys.argv[1]))["rows"] if r["phase"] == "total"][0])' "$T/c.json"; }
    host() {  # host_16.json: the record's own, with single copy $1 and latency_busy_us $2 (none: left out)
      python3 - results/cpu_waits_vm/iters20/run1/host_16.json "$d/host_16.json" "$1" "$2" <<'PY'
import json, sys
h = json.load(open(sys.argv[1]))
h["single_copy_mechanism"] = sys.argv[3]
if sys.argv[4] != "none":
    h["latency_busy_us"] = float(sys.argv[4])
json.dump(h, open(sys.argv[2], "w"))
PY
    }
    host cma none; base=$(predict)
    echo '{"latency_busy_us": {"16": 1000.0}}' >"$T/handoff.json"; above=$(predict)
    echo '{"latency_busy_us": {"16": 1000.0}}' >"$d/handoff.json"; beside=$(predict)
    # measured with every rank working, so charged per phase by its working ranks' share (printed per host file)
    grep -q "^calibrate: host .*/host_16.json: --latency-us 1000.00 --latency-per-busy-rank " "$T/out" ||
      fail "no busy-rank hand-off flags: $(grep '^calibrate: host' "$T/out")"
    echo '{"latency_busy_us": {"16": 500.0}}' >"$d/handoff.json"; nearer=$(predict)
    echo '{"latency_busy_us": {"16": 1000.0}}' >"$d/handoff.json"
    host cma 2000; own=$(predict)            # the median of 1000 and 2000: 1500
    echo '{"latency_busy_us": {"16": [1000, 900, 1100]}}' >"$d/handoff.json"
    host cma 4000; rounds=$(predict)         # the median of 900, 1000, 1100 and 4000: 1050
    echo '{"latency_busy_us": {"16": 1000.0}}' >"$d/handoff.json"
    host none 2000; copyin=$(predict)
    ! grep -q -- "--latency" "$T/out" || fail "a hand-off without single copy: $(grep '^calibrate: host' "$T/out")"
    rm "$d/handoff.json" "$T/handoff.json"; host none none; copyin0=$(predict)
    # a16 at the waits flags: misc's 51 messages of at most 4 MiB go one after another (window 1) down
    # binomial trees, and each costs a member with children one hand-off (a hop per hand-off since the
    # seventh stop of 2026-12-05), so each microsecond adds at least 0.051 ms
    echo "total predicted: base $base, handoff.json above $above, beside $beside, nearer $nearer, with the host file $own, rounds $rounds, copy-in $copyin / $copyin0 ms"
    python3 - "$base" "$beside" "$own" "$copyin" "$copyin0" "$above" "$nearer" "$rounds" <<'PY' || fail "base $base above $above beside $beside nearer $nearer own $own rounds $rounds copy-in $copyin / $copyin0"
import sys
base, beside, own, copyin, copyin0, above, nearer, rounds = map(float, sys.argv[1:])
per_us = (beside - nearer) / (1000 - 500)  # linear in the hand-off from 500 us up (one path is the longest)
assert above == beside, (above, beside)                     # a folder above serves the sets below it
assert beside - nearer >= 0.051 * 500, (nearer, beside)     # the nearest file wins
assert beside - base >= 0.051 * (1000 - 2), (base, beside)  # the preset charges 2 us
assert abs(own - beside - 500 * per_us) < 0.01 * per_us, (beside, own)     # host file pooled: 1500 us
assert abs(rounds - beside - 50 * per_us) < 0.01 * per_us, (beside, rounds)  # one outlier of four: 1050 us
assert copyin == copyin0, (copyin, copyin0)                 # ignored without single copy
PY
    ;;
  calibrate_cards)  # a one-GPU cuda-ipc record gets its card's preset; a card without one stops calibrate (exit 2)
    for card in H100 H200 B200; do
      mkdir -p "$T/$card"
      python3 - results/gpu/trace_w4_h100/ipc/dp2_tp2_w1.json "$T/$card/r.json" "NVIDIA $card" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
r["versions"]["device"] = sys.argv[3] + r["versions"]["device"][len("NVIDIA H100 80GB HBM3"):]
json.dump(r, open(sys.argv[2], "w"))
PY
    done
    for c in "H100 h100-shared-1gpu" "H200 h200-shared-1gpu"; do
      read -r card want <<<"$c"
      RESHARD_BUILD_DIR=$BUILD bash scripts/calibrate.sh --json "$T/$card.json" "$T/$card" >"$T/out" 2>&1 ||
        fail "calibrate exited $? on the $card record: $(tail -3 "$T/out")"
      got=$(python3 -c 'import json,sys; print(" ".join(sorted({r["system"] for r in json.load(open(sys.argv[1]))["rows"]})))' "$T/$card.json")
      [ "$got" = "$want" ] || fail "$card record simulated on '$got', want $want"
    done
    RESHARD_BUILD_DIR=$BUILD bash scripts/calibrate.sh "$T/B200" >"$T/out" 2>&1
    rc=$?
    [ $rc = 2 ] || fail "a B200 record: exit $rc, want 2: $(tail -3 "$T/out")"
    grep -q "no one-GPU preset for the device 'NVIDIA B200" "$T/out" || fail "no message naming the card: $(tail -3 "$T/out")"
    ;;
  calibrate_ceiling)  # a record's own ceiling in its rows, and how much of two launches' spread it accounts for
    for k in 1 2; do
      mkdir -p "$T/l$k/plans"; cp results/gpu/ceiling/run1/b16_bench.json results/gpu/ceiling/run1/host_16.json "$T/l$k/"
      cp results/gpu/ceiling/run1/plans/b16.json "$T/l$k/plans/"  # found beside the record
    done
    # the second launch: every phase and its ceiling 1.2x slower (a slower machine, the same schedule)
    python3 - "$T/l2/b16_bench.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for p in r["phases"]:
    p["time_ms_avg"] *= 1.2
    p["ceiling_ms"] *= 1.2
json.dump(r, open(sys.argv[1], "w"))
PY
    RESHARD_BUILD_DIR=$BUILD bash scripts/calibrate.sh --json "$T/c.json" "$T/l1" "$T/l2" >"$T/out" 2>&1 ||
      fail "calibrate exited $?: $(tail -3 "$T/out")"
    grep "ceiling:" "$T/out"
    # 8 rows (4 phases x 2 launches), each with its record's ceiling; the two launches' times are t and
    # 1.2 t: log deviations +-ln(1.2)/2 = 0.091 about their mean; over the ceiling, none
    grep -q "ceiling: 8 rows carry their launch's ceiling" "$T/out" || fail "no ceiling count: $(grep ceiling "$T/out")"
    grep -q "over 8 rows measured in several launches, the log spread of a phase's time is 0.091, of its time / its launch's ceiling 0.000" "$T/out" ||
      fail "spread: $(grep ceiling: "$T/out")"
    python3 - "$T/c.json" "$T/l1/b16_bench.json" <<'PY' || fail "rows without their ceiling"
import json, sys
rows, rec = json.load(open(sys.argv[1]))["rows"], json.load(open(sys.argv[2]))
want = {p["phase"]: p["ceiling_ms"] for p in rec["phases"]}
mine = [r for r in rows if r["record"].endswith("/l1/b16_bench.json")]
assert len(mine) == 4 and all(r["ceiling_ms"] == want[r["phase"]] for r in mine), mine
PY
    ;;
  cpu_waits_bench_bind)  # BIND=core: a 4-rank config, each rank bound to one CPU (the record and the log say so)
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    if BIND=socket OUT="$T/bad" bash scripts/cpu_waits_bench.sh --build "$BUILD" >"$T/out" 2>"$T/err"; then
      fail "BIND=socket was taken"
    fi
    grep -q "BIND must be core or empty, not 'socket'" "$T/err" || fail "no message: $(cat "$T/err")"
    [ ! -e "$T/bad" ] || fail "a refused BIND left $T/bad"
    BIND=core CONFIGS="t4:2:tp=1,pp=2:2:tp=2" FLAGSETS=bench ITERS=1 OUT="$T/good" \
      bash scripts/cpu_waits_bench.sh --build "$BUILD" >"$T/out" 2>"$T/err" || fail "exited $?: $(cat "$T/err")"
    grep -q "^# binding: core" "$T/good/cpu_waits.log" || fail "no binding line: $(head -3 "$T/good/cpu_waits.log")"
    grep -q "each rank bound to 1 CPU" "$T/good/cpu_waits.log" || fail "the run's hosts line says no binding"
    grep -q "^# damon: " "$T/good/cpu_waits.log" || fail "no damon line: $(head -5 "$T/good/cpu_waits.log")"
    python3 - "$T/good/t4_bench.json" <<'PY' || fail "bad record"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["status"] == "ok" and r["wrong"] == 0, r["status"]
assert r["rank_cpus"] == [1, 1, 1, 1], r["rank_cpus"]
assert r["ceiling_kind"] == "sendrecv", r.get("ceiling_kind")  # --ceiling on: calibrate.sh reads it
assert all(p["ceiling_ms"] > 0 for p in r["phases"] if p["bytes"] > 0), r["phases"]
PY
    ;;
  damon)  # scripts/damon.sh on a fake sysfs tree: describes, pauses only what runs, resumes it; a kdamond it
    # cannot turn off fails the pause and leaves the others as they were; cpu_waits_bench.sh refuses a bad DAMON
    fake_kdamond() {  # DIR STATE ACTION
      mkdir -p "$1/contexts/0/monitoring_attrs/intervals" "$1/contexts/0/schemes/0"
      echo "$2" >"$1/state"
      echo paddr >"$1/contexts/0/operations"
      echo 500000 >"$1/contexts/0/monitoring_attrs/intervals/sample_us"
      echo "$3" >"$1/contexts/0/schemes/0/action"
    }
    export DAMON_SYSFS=$T/damon
    mkdir -p "$DAMON_SYSFS"
    # shellcheck source=/dev/null
    . scripts/damon.sh
    [ "$(damon_describe)" = none ] || fail "no kdamond, described as: $(damon_describe)"
    fake_kdamond "$DAMON_SYSFS/kdamonds/0" on pageout
    fake_kdamond "$DAMON_SYSFS/kdamonds/1" off stat
    want="kdamond 0 on (paddr sample 500000 us schemes [pageout]); kdamond 1 off (paddr sample 500000 us schemes [stat])"
    [ "$(damon_describe)" = "$want" ] || fail "described as: $(damon_describe)"
    damon_pause || fail "pause failed"
    [ "$(cat "$DAMON_SYSFS/kdamonds/0/state")" = off ] || fail "kdamond 0 still on"
    [ "${#DAMON_PAUSED[@]}" -eq 1 ] || fail "paused ${#DAMON_PAUSED[@]}, not 1"
    damon_resume
    [ "$(cat "$DAMON_SYSFS/kdamonds/0/state")" = on ] || fail "kdamond 0 not resumed"
    [ "$(cat "$DAMON_SYSFS/kdamonds/1/state")" = off ] || fail "kdamond 1 (off before) turned on"
    # kdamond 2 cannot be turned off (its write fails), so the pause fails and turns kdamond 0 back on
    fake_kdamond "$DAMON_SYSFS/kdamonds/2" on pageout
    damon_set() { [ "$1" != "$DAMON_SYSFS/kdamonds/2" ] && echo "$2" >"$1/state"; }
    damon_pause 2>"$T/err" && fail "a pause that could not turn kdamond 2 off succeeded"
    grep -q "cannot turn .* off" "$T/err" || fail "no message: $(cat "$T/err")"
    [ "$(cat "$DAMON_SYSFS/kdamonds/0/state")" = on ] || fail "a failed pause left kdamond 0 off"
    if DAMON=stop OUT="$T/bad" bash scripts/cpu_waits_bench.sh >"$T/out" 2>"$T/err"; then fail "DAMON=stop was taken"; fi
    grep -q "DAMON must be pause or empty, not 'stop'" "$T/err" || fail "no message: $(cat "$T/err")"
    [ ! -e "$T/bad" ] || fail "a refused DAMON left $T/bad"
    ;;
  latency_probe)  # scripts/latency_probe.cpp builds and prints its JSON line at 4 ranks (k = 1, 2 pairs; c = 0, 2 copiers)
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    mpicxx -O2 -std=c++17 -I scripts scripts/latency_probe.cpp -o "$T/lp" || fail "mpicxx exited $?"
    mpirun --oversubscribe -np 4 "$T/lp" >"$T/out" 2>"$T/err" || fail "the probe exited $?: $(cat "$T/err")"
    python3 - "$T/out" <<'PY' || fail "bad probe line: $(cat "$T/out")"
import json, sys
h = json.loads(open(sys.argv[1]).read())
assert h["ranks"] == 4 and h["latency_one_pair_us"] > 0 and h["latency_all_pairs_us"] > 0 and h["latency_busy_us"] > 0
assert sorted(h["pair_gbps_with_k_pairs"]) == ["1", "2"], h
assert all(v > 0 for v in h["pair_gbps_with_k_pairs"].values())
assert sorted(h["latency_busy_us_with_c_copiers"]) == ["0", "2"], h  # c up to the 2 ranks besides the pair
assert all(v > 0 for v in h["latency_busy_us_with_c_copiers"].values())
PY
    ;;
  stall_probes)  # scripts/stall_probes/*.cpp build and print their JSON lines (short runs, 4 ranks)
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    g++ -O2 -std=c++17 -pthread scripts/stall_probes/idle_gaps.cpp -o "$T/ig" || fail "idle_gaps: g++ exited $?"
    g++ -O2 -std=c++17 scripts/stall_probes/yield_crowd.cpp -o "$T/yc" || fail "yield_crowd: g++ exited $?"
    mpicxx -O2 -std=c++17 scripts/stall_probes/mpi_stages.cpp -o "$T/ms" || fail "mpi_stages: mpicxx exited $?"
    "$T/ig" 1 >"$T/ig.out" || fail "idle_gaps exited $?"
    "$T/yc" 3 1 30 >"$T/yc.out" || fail "yield_crowd exited $?"
    mpirun --oversubscribe -np 4 "$T/ms" 6 2 2 1 >"$T/ms.out" 2>"$T/err" || fail "mpi_stages exited $?: $(cat "$T/err")"
    python3 - "$T" "$(nproc)" <<'PY' || fail "bad probe lines: $(cat "$T"/*.out)"
import json, sys
t, cores = sys.argv[1], int(sys.argv[2])
ig = [json.loads(l) for l in open(t + "/ig.out")]
assert sorted(x["core"] for x in ig) == list(range(cores)) and all(x["seconds"] == 1 for x in ig), ig
yc = [json.loads(l) for l in open(t + "/yc.out")]
assert sorted(x["process"] for x in yc) == [0, 1, 2] and all(x["turns"] > 0 for x in yc), yc
ms = json.loads(open(t + "/ms.out").read())
assert (ms["ranks"], ms["pairs"], ms["messages"], ms["copy"], ms["stages"]) == (4, 2, 2, 1, 6), ms
assert 0 < ms["median_ms"] <= ms["max_ms"] and all(0 <= s < 6 for s in ms["stalled_stages"]), ms
PY
    ;;
  bcast_probe)  # scripts/bcast_probe.cpp builds and prints every measurement at 4 ranks, 1 MiB
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    mpicxx -O2 -std=c++17 scripts/bcast_probe.cpp -o "$T/bp" || fail "mpicxx exited $?"
    mpirun --oversubscribe -np 4 "$T/bp" 1 >"$T/out" 2>"$T/err" || fail "the probe exited $?: $(cat "$T/err")"
    for what in ibcast two_ibcasts_all root_sends_k pairs_k relay_2hops memcpy_one; do
      grep -q "\"what\": \"$what\"" "$T/out" || fail "no $what line: $(cat "$T/out")"
    done
    python3 -c 'import json,sys; [json.loads(l) for l in open(sys.argv[1])]' "$T/out" || fail "not JSON lines"
    ;;
  *) fail "unknown case $CASE" ;;
esac
echo "ok: $CASE"
