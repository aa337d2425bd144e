# DAMON (the kernel's Data Access MONitor) on a measuring host: describe it, pause it, resume it.
# Sourced by scripts/cpu_waits_bench.sh. Why: on the 2-core VM a kdamond with a paddr pageout scheme
# wakes every ~0.55 s and holds a core for 15-57 ms; with 16-32 ranks on 2 cores that stalls a bulk
# stage's iteration by 100-230 ms (docs/calibration.md, "The stalls are the host's DAMON").
# The sysfs root is $DAMON_SYSFS (default /sys/kernel/mm/damon/admin), so tests can use a fake tree.
DAMON_SYSFS=${DAMON_SYSFS:-/sys/kernel/mm/damon/admin}
DAMON_PAUSED=()

# One line: "none", or per kdamond its state, operations, sampling interval and scheme actions.
damon_describe() {
  local k ctx out="" actions
  for k in "$DAMON_SYSFS"/kdamonds/[0-9]*; do
    [ -f "$k/state" ] || continue
    actions=""
    for ctx in "$k"/contexts/[0-9]*; do
      [ -d "$ctx" ] || continue
      actions+="$(cat "$ctx/operations" 2>/dev/null || echo '?') sample $(cat "$ctx/monitoring_attrs/intervals/sample_us" 2>/dev/null || echo '?') us"
      actions+=" schemes [$(cat "$ctx"/schemes/[0-9]*/action 2>/dev/null | tr '\n' ' ' | sed 's/ $//')]; "
    done
    out+="kdamond $(basename "$k") $(cat "$k/state") (${actions%; }); "
  done
  echo "${out:-none}" | sed 's/; $//'
}

# Writes VALUE (on, off) into the kdamond's state file KDAMOND/state.
damon_set() { echo "$2" >"$1/state"; }

# Turns every running kdamond off and remembers which, for damon_resume. Fails (status 1, a message on
# stderr) where one cannot be turned off, e.g. without root.
damon_pause() {
  local k
  for k in "$DAMON_SYSFS"/kdamonds/[0-9]*; do
    [ -f "$k/state" ] && [ "$(cat "$k/state")" = on ] || continue
    if ! damon_set "$k" off 2>/dev/null; then
      echo "damon.sh: cannot turn $k off (writing its state failed; root only)" >&2
      damon_resume
      return 1
    fi
    DAMON_PAUSED+=("$k")
  done
}

# Turns the kdamonds damon_pause turned off back on.
damon_resume() {
  local k
  for k in ${DAMON_PAUSED[@]+"${DAMON_PAUSED[@]}"}; do
    damon_set "$k" on 2>/dev/null || echo "damon.sh: could not turn $k back on" >&2
  done
  DAMON_PAUSED=()
}
