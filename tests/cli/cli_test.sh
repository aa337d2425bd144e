#!/usr/bin/env bash
# CLI tests of `reshard plan` and `reshard inspect`: usage: cli_test.sh RESHARD SOURCE_DIR CASE
# Each case runs in a fresh temporary directory and exits non-zero (with a reason) on failure.
set -u
RESHARD=$1
SRC=$2
CASE=$3
MODEL=$SRC/plans/qwen3-4b.json
SYSTEM=$SRC/plans/qwen3-4b-dp8-tp8.json
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK" || exit 1

fail() { echo "FAIL [$CASE]: $*" >&2; exit 1; }
# expect_rc CODE CMD...: runs CMD (stdout -> out.txt, stderr -> err.txt) and checks its exit status.
expect_rc() {
  local want=$1; shift
  "$@" >out.txt 2>err.txt
  local got=$?
  [ "$got" -eq "$want" ] || { cat err.txt >&2; fail "exit $got, expected $want: $*"; }
}
contains() { grep -qF -- "$2" "$1" || { cat "$1" >&2; fail "$1 lacks '$2'"; }; }

# A small MoE model (8 experts, 4 layers) in the metadata format, for configs with EP and PP.
write_moe_model() {
  {
    echo '{"model": "tiny-moe", "params": {'
    echo '"model.embed_tokens.weight": {"shape": [128, 32], "dtype": "bfloat16"},'
    for l in 0 1 2 3; do
      echo "\"model.layers.$l.self_attn.q_proj.weight\": {\"shape\": [32, 32], \"dtype\": \"bfloat16\"},"
      for e in 0 1 2 3 4 5 6 7; do
        for proj in gate_proj up_proj; do
          echo "\"model.layers.$l.mlp.experts.$e.$proj.weight\": {\"shape\": [24, 32], \"dtype\": \"BF16\"},"
        done
        echo "\"model.layers.$l.mlp.experts.$e.down_proj.weight\": {\"shape\": [32, 24], \"dtype\": \"torch.bfloat16\"},"
      done
    done
    echo '"model.norm.weight": {"shape": [32], "dtype": "float32"}}}'
  } >"$1"
}

case $CASE in
plan_json_and_cbor)
  expect_rc 0 "$RESHARD" plan --model "$MODEL" --system "$SYSTEM" -o plan.json
  expect_rc 0 "$RESHARD" plan --model "$MODEL" --system "$SYSTEM" -o plan.cbor
  expect_rc 0 "$RESHARD" plan --model "$MODEL" --system "$SYSTEM" -o plan.bin --format cbor
  contains plan.json '"format": "reshard-plan"'
  cmp -s plan.cbor plan.bin || fail "--format cbor differs from the .cbor extension's choice"
  head -c 1 plan.cbor | grep -q '{' && fail "plan.cbor looks like JSON"
  # Both formats carry the same plan.
  "$RESHARD" inspect plan.json --json >a.txt || fail "inspect plan.json"
  "$RESHARD" inspect plan.cbor --json >b.txt || fail "inspect plan.cbor"
  cmp -s a.txt b.txt || fail "inspect differs between the JSON and CBOR plan"
  ;;
deterministic)
  for f in json cbor; do
    expect_rc 0 "$RESHARD" plan --model "$MODEL" --system "$SYSTEM" -o one.$f
    expect_rc 0 "$RESHARD" plan --model "$MODEL" --system "$SYSTEM" -o two.$f
    cmp one.$f two.$f || fail "two runs gave different $f plans"
  done
  ;;
no_overwrite_without_force)
  echo "keep me" >plan.json
  expect_rc 2 "$RESHARD" plan --model "$MODEL" --system "$SYSTEM" -o plan.json
  contains err.txt "--force"
  [ "$(cat plan.json)" = "keep me" ] || fail "plan.json was modified"
  expect_rc 0 "$RESHARD" plan --model "$MODEL" --system "$SYSTEM" -o plan.json --force
  contains plan.json '"format": "reshard-plan"'
  [ "$(ls | grep -c tmp)" -eq 0 ] || fail "temporary files left: $(ls)"
  ;;
config_errors_listed_together)
  expect_rc 2 "$RESHARD" plan --model missing.json --train-gpus 12 --train tp=8,pp=1,bogus=2 --gen-gpus 8 \
    --gen tp=8,ep=4 --bucket-bytes 1.5G --bulk some --fanout sideways --exclude '(' -o plan.json
  for part in "missing.json" "--train: unknown key 'bogus'" "train: num_gpus 12 is not divisible by tp*pp = 8" \
    "gen: ep 4 must be 1 or equal tp = 8" "--bucket-bytes: '1.5G'" "--bulk" "--fanout" "--exclude: bad regex"; do
    contains err.txt "$part"
  done
  [ -z "$(ls | grep -v -e out.txt -e err.txt)" ] || fail "files left behind: $(ls)"
  # Planner-level problems (experts vs ep, stages) join the flag problems in one message.
  write_moe_model moe.json
  expect_rc 2 "$RESHARD" plan --model moe.json --train-gpus 12 --train ep=3,pp=3 --gen-gpus 4 --gen tp=4 \
    --first-stage-layers 2 --last-stage-layers 2 --mtp-layers x -o plan.json
  contains err.txt "experts are not divisible by train ep=3"
  contains err.txt "--mtp-layers: 'x' is not an integer"
  [ ! -e plan.json ] || fail "plan.json written despite errors"
  # A malformed system file names the file and the byte.
  echo '{"train": {"num_gpus": 8,}' >bad.json
  expect_rc 2 "$RESHARD" plan --model "$MODEL" --system bad.json
  contains err.txt "bad.json: malformed JSON at byte"
  # --system and the flags are exclusive.
  expect_rc 2 "$RESHARD" plan --model "$MODEL" --system "$SYSTEM" --gen-gpus 8
  contains err.txt "--system cannot be combined"
  # CLI11's own parse errors exit 2 as well.
  expect_rc 2 "$RESHARD" plan --model "$MODEL" --no-such-flag
  expect_rc 2 "$RESHARD" plan --system "$SYSTEM"
  ;;
system_file_equals_flags)
  expect_rc 0 "$RESHARD" plan --model "$MODEL" --system "$SYSTEM" -o sys.json
  expect_rc 0 "$RESHARD" plan --model "$MODEL" --train-gpus 8 --train tp=1,pp=1,ep=1,cp=1 --gen-gpus 8 --gen tp=8 \
    -o flags.json
  cmp sys.json flags.json || fail "qwen3-4b: --system and flags give different plans"
  write_moe_model moe.json
  expect_rc 0 "$RESHARD" plan --model moe.json --system "$SRC/plans/qwen3-30b-ep8pp2-tp8dp2.json" -o sys.cbor
  expect_rc 0 "$RESHARD" plan --model moe.json --train-gpus 16 --train tp=1,pp=2,ep=8,cp=1 --gen-gpus 16 \
    --gen tp=8,ep=1 -o flags.cbor
  cmp sys.cbor flags.cbor || fail "ep8pp2 -> tp8dp2: --system and flags give different plans"
  ;;
status_on_a_terminal)  # plan's status line shows on a terminal (script gives it one), never in a pipe
  command -v script >/dev/null || fail "script (util-linux) is needed for this test"
  script -qec "$RESHARD plan --model $MODEL --train-gpus 2 --gen-gpus 2 -o tty.json" /dev/null >tty.txt 2>&1 ||
    fail "plan under script failed: $(cat tty.txt)"
  contains tty.txt "reshard: planning 398 tensors for 2 + 2 ranks ..."
  expect_rc 0 "$RESHARD" plan --model "$MODEL" --train-gpus 2 --gen-gpus 2 -o pipe.json
  grep -q "planning" err.txt && fail "a status line went into a pipe"
  ;;
model_by_content)  # a safetensors shard and its index, renamed without their suffixes, read as what they are
  python3 - <<'PY' || fail "could not write the safetensors files"
import json, struct
tensors = {"model.layers.0.mlp.up_proj.weight": [8, 4], "model.layers.0.mlp.down_proj.weight": [4, 8],
           "model.norm.weight": [4]}
header, at = {}, 0
for name, shape in tensors.items():
    n = 2
    for d in shape:
        n *= d
    header[name] = {"dtype": "BF16", "shape": shape, "data_offsets": [at, at + n]}
    at += n
h = json.dumps(header).encode()
open("shard-a", "wb").write(struct.pack("<Q", len(h)) + h + bytes(at))
json.dump({"metadata": {"total_size": at}, "weight_map": {k: "shard-a" for k in tensors}}, open("weights", "w"))
PY
  expect_rc 0 "$RESHARD" plan --model weights --train-gpus 2 --gen-gpus 2 --gen tp=2 --summary
  contains out.txt "params       3: 2 bulk"
  expect_rc 0 "$RESHARD" plan --model shard-a --train-gpus 2 --gen-gpus 2 --gen tp=2 --summary
  contains out.txt "params       3: 2 bulk"
  ;;
one_vocabulary)  # the plan as first argument or --plan; --parallelism and --preset beside --system
  expect_rc 0 "$RESHARD" plan --model "$MODEL" --parallelism "$SYSTEM" -o v.json
  expect_rc 0 "$RESHARD" plan --model "$MODEL" --system "$SYSTEM" -o w.json
  cmp v.json w.json || fail "--parallelism and --system plan differently"
  expect_rc 0 "$RESHARD" verify --plan v.json
  contains out.txt "OK:"
  expect_rc 0 "$RESHARD" simulate v.json --preset gb200-nvl72
  contains out.txt "system gb200-nvl72"
  expect_rc 2 "$RESHARD" simulate v.json --preset nope
  contains err.txt "--preset: unknown system preset 'nope'"
  ;;
plan_summary)
  expect_rc 0 "$RESHARD" plan --model "$MODEL" --system "$SYSTEM"
  contains out.txt "bulk 5.01 GiB (66.9 %)"
  contains out.txt "efficiency   1.000"
  # The whole refit leads (issue 19): a gen rank receives 672399360 B of bulk (5.01 GiB / 8) and every
  # misc byte, 2665741312 B: 3338140672 B; bulk alone beside it.
  contains out.txt "lower bound  3.11 GiB on the busiest rank, whole refit (3338140672 B); bulk alone 641.25 MiB (672399360 B)"
  contains out.txt "efficiency   1.000 whole refit, 1.000 bulk alone"
  # Memory (issue 19): train rank 0 holds the bulk whole (5.01 GiB) and the misc bucket it roots
  # (1021.93 MiB) = 6.01 GiB, + staging (run's default, 512 MiB) + no landings (BF16 to BF16) + the
  # largest bucket = 7.51 GiB; a gen rank 641.25 MiB of bulk + 2.48 GiB misc + the same = 4.61 GiB.
  # All 16: 91.40 GiB.
  contains out.txt "memory       7.51 GiB at most a rank (rank 0, train: storages 6.01 GiB, staging 512.00 MiB, landings 0 B"
  contains out.txt "all ranks 91.40 GiB"
  contains out.txt "at run's default --staging-bytes 512Mi"  # spelled as run --help shows it
  [ -z "$(ls | grep -v -e out.txt -e err.txt)" ] || fail "a file was written without -o"
  expect_rc 0 "$RESHARD" plan --model "$MODEL" --system "$SYSTEM" -o p.json --summary
  contains out.txt "fingerprint"
  expect_rc 0 "$RESHARD" plan --model "$MODEL" --system "$SYSTEM" -o q.json
  [ -s out.txt ] && fail "-o without --summary printed a summary"
  contains err.txt "wrote q.json"
  ;;
inspect)
  expect_rc 0 "$RESHARD" plan --model "$MODEL" --system "$SYSTEM" -o plan.cbor --summary
  mv out.txt plan_summary.txt
  expect_rc 0 "$RESHARD" inspect plan.cbor
  cmp -s out.txt plan_summary.txt || fail "inspect summary differs from plan --summary"
  fp=$(grep '^fingerprint' out.txt | awk '{print $2}')
  [ -n "$fp" ] || fail "no fingerprint in the summary"
  expect_rc 0 "$RESHARD" inspect plan.cbor --rank 9
  contains out.txt "     9 gen"
  [ "$(wc -l <out.txt)" -eq 2 ] || fail "--rank 9 printed more than one row"
  expect_rc 0 "$RESHARD" inspect plan.cbor --param model.layers.3.mlp.down_proj.weight
  contains out.txt "dst        tp=8  ranks [8, 9, 10, 11, 12, 13, 14, 15]  [S(1)]"
  contains out.txt "transfers  8"
  contains out.txt "src_local"
  expect_rc 0 "$RESHARD" inspect plan.cbor --param model.norm.weight
  contains out.txt "bucket"
  expect_rc 0 "$RESHARD" inspect plan.cbor --json --rank 3 --param model.layers.0.mlp.up_proj.weight
  contains out.txt "\"fingerprint\": \"$fp\""
  contains out.txt '"transfer_count": 8'
  [ "$(grep -c '"rank":' out.txt)" -eq 1 ] || fail "--json --rank 3 lists other ranks"
  if command -v python3 >/dev/null; then python3 -m json.tool out.txt >/dev/null || fail "--json is not JSON"; fi
  expect_rc 2 "$RESHARD" inspect plan.cbor --param no.such.param
  contains err.txt "no param named 'no.such.param'"
  expect_rc 2 "$RESHARD" inspect plan.cbor --rank 16
  contains err.txt "outside the plan's world of 16 ranks"
  expect_rc 2 "$RESHARD" inspect missing.json
  echo '{"format": "something-else"}' >other.json
  expect_rc 2 "$RESHARD" inspect other.json
  ;;
catastrophic_regexes)
  # Nested quantifiers against a long name of a's that ends in a mismatch: exponential backtracking in
  # std::regex (killed at 15 s), linear in RE2. Both the --exclude and a --rules match must finish fast.
  long=$(printf 'a%.0s' $(seq 1 40))
  printf '{"params": {"%s.x.mlp.down_proj.weight": {"shape": [8, 8], "dtype": "bfloat16"}, "model.norm.weight": {"shape": [8], "dtype": "bfloat16"}}}' "$long" >m.json
  printf '{"rules": [{"match": "^(a+)+$", "path": "misc"}]}' >rules.json
  start=$(date +%s%N)
  expect_rc 0 timeout 10 "$RESHARD" plan --model m.json --train-gpus 1 --gen-gpus 1 --exclude '^(a|aa)+$' \
    --rules rules.json -o p.json
  ms=$(( ($(date +%s%N) - start) / 1000000 ))
  [ "$ms" -lt 5000 ] || fail "planning took $ms ms: a regex is not linear"
  contains err.txt "wrote p.json"
  ;;
concurrent_writers)
  # Two writers to one -o without --force: exactly one wins ("wrote"), the other reports that the
  # file exists; the file is one complete plan, and no temporary is left.
  "$RESHARD" plan --model "$MODEL" --system "$SYSTEM" -o plan.json >a.out 2>a.err &
  "$RESHARD" plan --model "$MODEL" --system "$SYSTEM" -o plan.json >b.out 2>b.err &
  wait
  wins=$(cat a.err b.err | grep -c "wrote plan.json")
  [ "$wins" -eq 1 ] || { cat a.err b.err >&2; fail "$wins writers report writing plan.json"; }
  cat a.err b.err | grep -q "the file exists; pass --force" || fail "the loser does not say the file exists"
  "$RESHARD" inspect plan.json >/dev/null || fail "plan.json is not a complete plan"
  [ -z "$(ls | grep tmp)" ] || fail "a temporary is left: $(ls)"
  ;;
simulate_no_bulk)
  # A plan with no bulk bytes has no bound to compare with: no "2397751.13x" ratio.
  printf '{"params": {"model.norm.weight": {"shape": [8], "dtype": "bfloat16"}}}' >m.json
  expect_rc 0 "$RESHARD" plan --model m.json --train-gpus 1 --gen-gpus 1 -o p.json
  expect_rc 0 "$RESHARD" simulate p.json
  contains out.txt "no bulk bytes"
  grep -q "x that" out.txt && fail "a ratio to a zero bound"
  true
  ;;
usage_error_once)
  # Under a launcher every rank parses the same bad flag: only rank 0 prints, with the prefix.
  OMPI_COMM_WORLD_RANK=3 "$RESHARD" run --bogus >out.txt 2>err.txt
  [ $? -eq 2 ] || fail "rank 3: exit $?, expected 2"
  [ ! -s err.txt ] && [ ! -s out.txt ] || fail "rank 3 printed: $(cat err.txt out.txt)"
  OMPI_COMM_WORLD_RANK=0 "$RESHARD" run --bogus >out.txt 2>err.txt
  [ $? -eq 2 ] || fail "rank 0: exit $?, expected 2"
  head -n 1 err.txt | grep -q '^reshard: ' || fail "rank 0's message lacks the prefix: $(cat err.txt)"
  [ "$(grep -c 'reshard: ' err.txt)" -eq 1 ] || fail "printed more than once: $(cat err.txt)"
  ;;
unknown_names)  # a mistyped command or flag is named, with the closest known one (issue 19)
  expect_rc 2 "$RESHARD" bogus
  contains err.txt "reshard: unknown command 'bogus'; commands: plan, inspect, verify, run, simulate"
  expect_rc 2 "$RESHARD" simulte plan.json
  contains err.txt "unknown command 'simulte' (did you mean simulate?)"
  expect_rc 2 "$RESHARD" plan --modle "$MODEL" --system "$SYSTEM"
  contains err.txt "reshard: plan: unknown flag --modle (did you mean --model?)"
  expect_rc 2 "$RESHARD" run --plan p.json --iter=3
  contains err.txt "run: unknown flag --iter (did you mean --iters?)"
  expect_rc 0 "$RESHARD" run --help
  contains out.txt "--iters INT:POSITIVE=5"
  contains out.txt "--warmup INT:NONNEGATIVE=5"
  contains out.txt "--timeout FLOAT=300"
  expect_rc 0 "$RESHARD" simulate --help
  contains out.txt "--batch-ops INT=64"
  contains out.txt "--staging-bytes TEXT=512Mi"  # the policy's default, shown as one types it
  # Flags that would do nothing, a plan given as the model, an empty --param, absurd figures.
  expect_rc 2 "$RESHARD" plan --model "$MODEL" --system "$SYSTEM" --head-dim 64 --first-stage-layers 3
  contains err.txt "--head-dim does nothing here"
  contains err.txt "--first-stage-layers/--last-stage-layers split the train pipeline and need train pp > 1 (got pp=1)"
  expect_rc 0 "$RESHARD" plan --model "$MODEL" --system "$SYSTEM" -o plan.json
  expect_rc 2 "$RESHARD" plan --model plan.json --system "$SYSTEM"
  contains err.txt "plan.json is a reshard plan (fingerprint "
  expect_rc 2 "$RESHARD" inspect plan.json --param ''
  contains err.txt "needs a param name"
  expect_rc 2 "$RESHARD" simulate plan.json --latency-us 1e300
  contains err.txt "--latency-us must be at most 1e+06 us, got 1e+300"
  [ "$(grep -c 'latency' err.txt)" -eq 1 ] || fail "the latency problem was reported more than once: $(cat err.txt)"
  expect_rc 0 "$RESHARD" simulate plan.json --system cpu-mpi-local
  contains out.txt "one NVLink domain holds every rank"
  # The window is per stream unless --window-per-rank; both at once is refused, not the last one taken.
  contains out.txt "window 16 per stream"
  expect_rc 0 "$RESHARD" simulate plan.json --window-per-rank
  contains out.txt "window 16 per rank"
  expect_rc 2 "$RESHARD" simulate plan.json --window-per-stream --window-per-rank
  contains err.txt "--window-per-stream excludes --window-per-rank"
  # The broadcast fan rate is echoed in the header; a bad one is named.
  expect_rc 0 "$RESHARD" simulate plan.json --system cpu-mpi-local --fan-gbps 11.29
  contains out.txt "broadcast sends at once: the first at the link's rate, each further one 11.29 GB/s"
  expect_rc 2 "$RESHARD" simulate plan.json --fan-gbps fast
  contains err.txt "--fan-gbps: expected a non-negative number, got 'fast'"
  # More ranks than host cores without single copy: echoed with the share; refused with single copy.
  expect_rc 0 "$RESHARD" simulate plan.json --system cpu-mpi-local --sender-copies --host-cores 2
  contains out.txt "ranks a domain on 2 cores: each rank's transfers move at 2/"
  expect_rc 2 "$RESHARD" simulate plan.json --system cpu-mpi-local --host-cores 2
  contains err.txt "--host-cores 2 applies only without single copy (--sender-copies)"
  expect_rc 2 "$RESHARD" simulate plan.json --sender-copies --host-cores many
  contains err.txt "--host-cores"
  # NCCL presets: pack kernels on a side stream (the executor's default), or on the op's stream.
  expect_rc 0 "$RESHARD" simulate plan.json --system h100-nvl8-ib400
  contains out.txt "a pack kernel on a side stream, beside the earlier batches' wire, behind the rank's earlier packs"
  expect_rc 0 "$RESHARD" simulate plan.json --system h100-nvl8-ib400 --op-stream-packs
  contains out.txt "a pack kernel queued on its op's stream behind the batches flushed there before (--op-stream-packs)"
  expect_rc 0 "$RESHARD" simulate plan.json --system h100-nvl8-ib400 --op-stream-packs --json
  python3 -c 'import json,sys; j=json.load(open("out.txt"))["system"]; assert j["kernel_packs"] is True and j["side_stream_packs"] is False' ||
    fail "simulate --op-stream-packs --json: kernel_packs/side_stream_packs wrong: $(head -c 300 out.txt)"
  expect_rc 2 "$RESHARD" simulate plan.json --side-stream-packs --op-stream-packs
  contains err.txt "excludes"
  # The hand-off charged by each phase's working ranks: echoed in the header and the JSON's model.
  expect_rc 0 "$RESHARD" simulate plan.json --system cpu-mpi-local --latency-us 900 --latency-per-busy-rank
  contains out.txt "latency is the busy hand-off with every rank working: a phase pays it x its domain's working ranks"
  expect_rc 0 "$RESHARD" simulate plan.json --system cpu-mpi-local --latency-per-busy-rank --json
  python3 -c 'import json,sys; assert json.load(open("out.txt"))["system"]["latency_per_busy_rank"] is True' ||
    fail "simulate --json lacks system.latency_per_busy_rank: $(head -c 300 out.txt)"
  ;;
plots)  # inspect --plot and simulate --timeline write SVGs (issue 19), checked before the work
  expect_rc 0 "$RESHARD" plan --model "$MODEL" --system "$SYSTEM" -o plan.json
  expect_rc 0 "$RESHARD" inspect plan.json --plot traffic.svg
  contains err.txt "wrote traffic.svg"
  grep -q '^<svg ' traffic.svg || fail "traffic.svg is not an SVG"
  # DP8 -> TP8 (864 transfers: each param's 8 TP pieces from the 8 replicas, the same pairing for
  # every param): 8 train -> gen pairs; the 3 misc buckets' roots 0, 1, 2 reach the 15 other ranks
  # each (group 0), 3 of those pairs being bulk pairs already: 8 + 45 - 3 = 50 cells.
  [ "$(grep -c '<rect .*<title>rank' traffic.svg)" -eq 50 ] || fail "traffic.svg: expected 50 cells"
  expect_rc 0 "$RESHARD" simulate plan.json --timeline timeline.svg
  grep -q '^<svg ' timeline.svg || fail "timeline.svg is not an SVG"
  [ "$(grep -c '<title>rank' timeline.svg)" -ge 16 ] || fail "timeline.svg has fewer batches than ranks"
  expect_rc 2 "$RESHARD" simulate plan.json --timeline timeline.svg
  contains err.txt "--force"
  expect_rc 2 "$RESHARD" inspect plan.json --plot plan.json --force
  # One param's pieces: down_proj [2560, 9728] of DP8 -> TP8 is held whole by the 8 train replicas
  # (one box, named by all 8) and cut along its 9728 columns (row-parallel input dim) into 8 gen boxes of 1216.
  expect_rc 0 "$RESHARD" inspect plan.json --param model.layers.0.mlp.down_proj.weight --plot param.svg
  contains err.txt "wrote param.svg (param pieces, SVG)"
  [ "$(grep -c '<title>rank' param.svg)" -eq 9 ] || fail "param.svg: expected 9 boxes"
  contains param.svg "rank 0,1,2,3,4,5,6,7: [0:2560, 0:9728]"
  contains param.svg "rank 8: [0:2560, 0:1216]"
  contains param.svg "rank 15: [0:2560, 8512:9728]"
  ;;
simulate_refuses_what_run_refuses)  # the plan checks `run` makes before anything moves, and sane rates
  TINY=$SRC/tests/data
  expect_rc 0 "$RESHARD" plan --model "$TINY/tiny-moe.json" --train-gpus 2 --train ep=2 --gen-gpus 2 --gen tp=2 -o p.json
  # A bucket whose size disagrees with its params fails static verification (and no longer exhausts memory).
  python3 -c 'import json; d=json.load(open("p.json")); d["buckets"][0]["bytes"]=2**62; json.dump(d, open("bb.json", "w"))'
  expect_rc 2 "$RESHARD" simulate bb.json
  contains err.txt "bb.json fails static verification (1 problem; reshard verify lists them):"
  contains err.txt "plan says 4611686018427387904"
  # A shape whose bytes wrap past int64 to its true size: refused when read, by verify and simulate alike.
  python3 -c 'import json; d=json.load(open("p.json")); d["params"][0]["shape"]=[2, 2**62+24816]; json.dump(d, open("wrap.json", "w"))'
  for cmd in verify simulate; do
    expect_rc 2 "$RESHARD" $cmd wrap.json
    contains err.txt "wrap.json: params[0].shape: [2, 4611686018427412720] has more elements than int64 holds"
  done
  # An MXFP8 landing larger than --staging-bytes: run's executor refuses it, so simulate does.
  expect_rc 0 "$RESHARD" plan --model "$TINY/tiny-mx.json" --train-gpus 2 --train tp=2 --gen-gpus 2 --gen tp=2 \
    --gen-precision mxfp8 -o mx.json
  expect_rc 2 "$RESHARD" simulate mx.json --staging-bytes 4Ki
  contains err.txt "exceeds --staging-bytes 4096 (MXFP8 shards land whole before they are quantized)"
  # Rates too small for a finite time, and numbers a double cannot hold, each named with the rest.
  touch timeline.svg
  expect_rc 2 "$RESHARD" simulate p.json --nvlink-gbps 1e-300 --copy-gbps 1e-400 --fan-gbps 1e999 \
    --batch-bytes 4K --timeline timeline.svg
  contains err.txt "invalid simulate configuration (5 problems):"
  contains err.txt "--nvlink-gbps must be at least 1e-06 GB/s, got 1e-300"
  contains err.txt "--copy-gbps: '1e-400' is too small for a double"
  contains err.txt "--fan-gbps: '1e999' is too large for a double"
  contains err.txt "--batch-bytes must be at least 4Ki = 4096 bytes (got 4000)"
  contains err.txt "--timeline timeline.svg: the file exists; pass --force to overwrite"
  ;;
empty_values)  # a flag given '' was read as "not given": no file written, a check skipped, no error
  expect_rc 2 "$RESHARD" plan --model "$MODEL" --train-gpus 1 --gen-gpus 1 -o '' --layer-map ''
  contains err.txt "reshard: plan: empty value for --layer-map, --output; give a value or leave the flag out"
  expect_rc 2 "$RESHARD" inspect '' --model ''
  contains err.txt "reshard: inspect: empty value for plan, --model; give a value or leave the flag out"
  [ -z "$(ls -A | grep -v -e '^err.txt$' -e '^out.txt$')" ] || fail "files were written: $(ls -A)"
  ;;
long_output_name)  # a valid name of 250 bytes: its temporary once passed NAME_MAX (exit 3 after planning)
  name=$(printf 'a%.0s' $(seq 250)).json
  expect_rc 0 "$RESHARD" plan --model "$MODEL" --train-gpus 1 --gen-gpus 1 -o "$name"
  contains "$name" '"format": "reshard-plan"'
  [ "$(ls -A | grep -v -e '^err.txt$' -e '^out.txt$')" = "$name" ] || fail "left behind: $(ls -A)"
  ;;
*)
  fail "unknown case"
  ;;
esac
echo "PASS [$CASE]"
