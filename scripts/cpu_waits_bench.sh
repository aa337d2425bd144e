#!/usr/bin/env bash
# CPU MPI runs whose schedule has waits in it (issue 18's calibration: 16-32 ranks, train PP 2-4, gen
# DP 2, so bulk is two-phase fan-outs and PP stages share streams), for scripts/calibrate.sh.
# Plans Qwen3-4B layers 0-3 (embed_tokens excluded; the shipped plans/qwen3-4b.json) six ways, runs each
# under mpirun with --transport mpi at two flag sets, and writes into OUT (default results/cpu_waits):
#   plans/NAME.json          the plans (the records' arguments.plan points here)
#   NAME_FLAGS.json          `reshard run --ceiling on --json` records (since 2026-12-05, fourth stop: the
#                            plain send/recv ceiling of each phase measured in the same launch, which
#                            calibrate.sh reads), FLAGS = bench (run's defaults) or waits
#                            (window 1, 4-op / 4 MiB batches, 4 MiB staging, one stream: a wait per batch)
#                            or perrank / perstream (run's defaults before 2026-12-03, a window per rank
#                            and 256 MiB staging, and the same per stream); env FLAGSETS picks them
#                            (default "bench waits")
#   host_NP.json             scripts/calibrate.sh --measure-host NP before the runs of NP ranks: this
#                            machine's copy and MPI rates, which calibrate.sh simulates these records with
#   cpu_waits.log            every command and its output, with the machine
# usage: scripts/cpu_waits_bench.sh [--build DIR]   (env: OUT, ITERS default 20 (3 before 2026-12-05: on the
#        2-core VM one stalled iteration of 3 set a stage's mean), CONFIGS default all,
#        BIND=core: each rank bound to one core, round robin (mpirun --bind-to core:overload-allowed
#        --map-by core), so a launch cannot place its ranks differently from the one before; default
#        unbound (Open MPI's default: no binding when oversubscribed), as every record before 2026-12-04
#        PLAN_DIR: a folder holding NAME.json plans to copy instead of planning: the plans take --exclude,
#        a regex, which a build without RE2 refuses, e.g. the device's; fingerprints are checked by calibrate;
#        DAMON=pause: turn the host's running kdamonds off for the set and back on at exit (root; see
#        scripts/damon.sh: on the 2-core VM its pageout scheme stalls iterations by 100-230 ms); default
#        leave them; the log's "# damon:" line says what ran either way)
# Memory: at most ~13 GiB for all ranks of a 32-rank config (the plan summary's bound); one run at a time.
# Time: about 17 min on the 2-core VM at ITERS=20 (11 min at 3); 1.5 min on the device's 16-core host at 3.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${RESHARD_BUILD_DIR:-build}
[ "${1:-}" = --build ] && BUILD=$2
OUT=${OUT:-results/cpu_waits}
ITERS=${ITERS:-20}
RESHARD=$BUILD/apps/reshard/reshard
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
BIND_FLAGS=()
case ${BIND:-} in
  '') ;;
  core) BIND_FLAGS=(--bind-to core:overload-allowed --map-by core) ;;
  *) echo "cpu_waits_bench.sh: BIND must be core or empty, not '$BIND'" >&2; exit 2 ;;
esac
case ${DAMON:-} in
  ''|pause) ;;
  *) echo "cpu_waits_bench.sh: DAMON must be pause or empty, not '$DAMON'" >&2; exit 2 ;;
esac
# shellcheck source=damon.sh
. scripts/damon.sh
DAMON_WAS=$(damon_describe)  # before pausing: what the host runs
if [ "${DAMON:-}" = pause ]; then
  damon_pause || exit 2
  trap damon_resume EXIT
fi
mkdir -p "$OUT/plans"
LOG=$OUT/cpu_waits.log
: >"$LOG"
say() { echo "$*" | tee -a "$LOG"; }
say "# cpu_waits_bench.sh $(date -u +%FT%TZ) reshard $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
say "# machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo), $(mpirun --version | head -1)"

# name:train-gpus:train:gen-gpus:gen[:fanout]; the _direct twins move the same bytes without the
# two-phase fan-outs' second hop (--fanout direct), side by side with them
ALL="a16:8:tp=1,pp=2:8:tp=4 a16_direct:8:tp=1,pp=2:8:tp=4:direct b16:8:tp=2,pp=2:8:tp=2,pp=2
     c24:16:tp=1,pp=4:8:tp=4 d32:16:tp=2,pp=4:16:tp=4,pp=2 d32_direct:16:tp=2,pp=4:16:tp=4,pp=2:direct"
declare -A FLAGS=(
  [bench]=""
  [waits]="--window 1 --batch-ops 4 --batch-bytes 4Mi --staging-bytes 4Mi --streams 1"
  [perrank]="--window-per-rank --staging-bytes 256Mi"
  [perstream]="--window-per-stream --staging-bytes 256Mi"
)
say "# binding: ${BIND:-none} (BIND=core: one core each, round robin)"
say "# damon: $DAMON_WAS${DAMON:+; paused for this set: ${#DAMON_PAUSED[@]} kdamond(s) turned off}"
rm -f "$OUT"/host_*.json  # measured afresh, beside the records they describe
for cfg in ${CONFIGS:-$ALL}; do
  IFS=: read -r name tg tr gg ge fanout <<<"$cfg"
  plan=$OUT/plans/$name.json
  np=$((tg + gg))
  if [ ! -s "$OUT/host_$np.json" ]; then
    say "\$ scripts/calibrate.sh --measure-host $np > $OUT/host_$np.json"
    bash scripts/calibrate.sh --measure-host "$np" >"$OUT/host_$np.json"
    cat "$OUT/host_$np.json" >>"$LOG"
  fi
  if [ -n "${PLAN_DIR:-}" ]; then
    say "\$ cp $PLAN_DIR/$name.json $plan"
    cp "$PLAN_DIR/$name.json" "$plan"
  else
    say "\$ reshard plan ... -o $plan"
    "$RESHARD" plan --model plans/qwen3-4b.json --train-gpus "$tg" --train "$tr" --gen-gpus "$gg" --gen "$ge" \
    --exclude 'model\.layers\.([4-9]|[12][0-9]|3[0-5])\.' --exclude embed_tokens --fanout "${fanout:-auto}" -o "$plan" --force --summary \
    >>"$LOG" 2>&1
  fi
  for f in ${FLAGSETS:-bench waits}; do
    rec=$OUT/${name}_$f.json
    # shellcheck disable=SC2086
    cmd=(mpirun --oversubscribe ${BIND_FLAGS[@]+"${BIND_FLAGS[@]}"} -np "$np" "$RESHARD" run --plan "$plan" --check --iters "$ITERS"
         --warmup 1 --ceiling on ${FLAGS[$f]} --json "$rec" --force)
    say "\$ ${cmd[*]}"
    "${cmd[@]}" >>"$LOG" 2>&1
  done
done
say "# done $(date -u +%FT%TZ)"
