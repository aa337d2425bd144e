#!/usr/bin/env bash
# Predicts every row of the seed's refit table (../shared/seeds/000_*.txt) and NCCL M2N's published
# reshard_model_bench rows with `reshard simulate`, and writes results/predictions.json plus the
# markdown table between the PREDICTIONS markers of docs/performance.md.
# Needs the model metadata in ../shared/models (rows whose model is absent are skipped, not failed).
# usage: scripts/predict_seed_table.sh [BUILD_DIR]   (default: $RESHARD_BUILD_DIR or build)
# RESHARD_SIM_FLAGS (e.g. "--window 16") is added to every simulate; the outputs then go to
# $BUILD/predict only (results/ and docs/ keep the defaults' table).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-${RESHARD_BUILD_DIR:-build}}
RESHARD=$BUILD/apps/reshard/reshard
MODELS=${RESHARD_TEST_MODELS_DIR:-../shared/models}
WORK=$BUILD/predict
mkdir -p "$WORK" results
[ -x "$RESHARD" ] || { echo "predict: $RESHARD not built" >&2; exit 2; }

# Qwen3.5-397B has no public tensor listing here: generate a "like" model from its published sizes.
Q35=$WORK/qwen3.5-397b-a17b-like.json
[ -f "$Q35" ] || python3 scripts/make_model_meta.py scripts/model_configs/qwen3.5-397b-a17b-like.json -o "$Q35"

# Every plan knows its nodes (--gpus-per-node, as the simulated system): two-phase fan-outs node-aware.
DSV3_OPTS="--exclude ^model\.layers\.61\. --first-stage-layers 3 --last-stage-layers 2"
# id | source | platform | model file | plan flags | system preset + overrides | published low | high | note
ROWS=(
"qwen3-4b|seed|H100|$MODELS/qwen3-4b.json|--train-gpus 8 --train tp=1 --gen-gpus 8 --gen tp=8 --gpus-per-node 8|--system h100-nvl8-ib400|0.21|0.34|DP8 -> TP8, BF16"
"qwen3-30b-pp2|seed|H100|$MODELS/qwen3-30b-a3b.json|--train-gpus 16 --train ep=8,pp=2 --gen-gpus 16 --gen tp=8 --gpus-per-node 8|--system h100-nvl8-ib400|0.74|1.00|EP8xPP2 -> TP8xDP2, BF16"
"qwen3-30b-dp2|seed|H100|$MODELS/qwen3-30b-a3b.json|--train-gpus 16 --train ep=8 --gen-gpus 16 --gen tp=2 --gpus-per-node 8|--system h100-nvl8-ib400|2.90|4.00|EP8xDP2 -> TP2xDP8; seed row is FP8, planned BF16 (precision not supported yet)"
"dsv3-h100|seed|H100|$MODELS/deepseek-v3-bf16.json|--train-gpus 256 --train pp=16,ep=16 --gen-gpus 256 --gen tp=32 $DSV3_OPTS --gpus-per-node 8|--system h100-nvl8-ib400|2.39|2.83|PP16xEP16 -> TP32xDP8, BF16, layer 61 (MTP) excluded"
"qwen3.5-397b|seed|H100|$Q35|--train-gpus 256 --train tp=8,pp=8,ep=32,etp=1 --gen-gpus 256 --gen tp=16 --first-stage-layers 6 --last-stage-layers 6 --gpus-per-node 8|--system h100-nvl8-ib400|1.97|2.17|TP8xPP8xEP32 (etp 1: Megatron's default etp = tp needs 2048 GPUs) -> TP16xDP16, BF16, generated 'like' metadata, PP split 6/8x6/6 assumed"
"dsv3-gb200|seed|GB200|$MODELS/deepseek-v3-bf16.json|--train-gpus 256 --train pp=16,ep=16 --gen-gpus 256 --gen tp=32 $DSV3_OPTS --gpus-per-node 64|--system gb200-nvl72|1.93|2.59|PP16xEP16 -> TP32xDP8, BF16, layer 61 excluded"
"m2n-dsv3-128|m2n|GB200|$MODELS/deepseek-v3-bf16.json|--train-gpus 128 --train pp=4,ep=16 --gen-gpus 128 --gen tp=8 --bulk all --mtp-layers 61 --first-stage-layers 16 --last-stage-layers 15 --gpus-per-node 64|--system gb200-nvl72 --gpus-per-node 64|1.447|3.838|M2N: EP16xDP2xPP4 -> TP8xDP16, every tensor resharded (--bulk all); published: hierarchical 1447 ms, direct 3838 ms"
"m2n-qwen3-235b-64|m2n|GB200|$MODELS/qwen3-235b-a22b.json|--train-gpus 64 --train tp=2,cp=2,pp=4,ep=16,etp=1 --gen-gpus 64 --gen tp=8 --bulk all --first-stage-layers 23 --last-stage-layers 23 --gpus-per-node 64|--system gb200-nvl72 --gpus-per-node 64|0.989|2.175|M2N: TP2xCP2xEP16xPP4 -> TP8xDP8 (--bulk all); published: hierarchical 989 ms, direct 2175 ms"
)

OUT=$WORK/rows.jsonl
: > "$OUT"
for row in "${ROWS[@]}"; do
  IFS='|' read -r id src platform model flags sysflags lo hi note <<< "$row"
  if [ ! -f "$model" ]; then
    echo "predict: $id: $model absent, skipped" >&2
    continue
  fi
  plan=$WORK/$id.cbor
  t0=$(date +%s.%N)
  # shellcheck disable=SC2086  # flags are word lists by design
  "$RESHARD" plan --model "$model" $flags -o "$plan" --force 2> "$WORK/$id.plan.log"
  t1=$(date +%s.%N)
  # shellcheck disable=SC2086
  "$RESHARD" simulate "$plan" $sysflags ${RESHARD_SIM_FLAGS:-} --json > "$WORK/$id.sim.json"
  python3 - "$WORK/$id.sim.json" "$id" "$src" "$platform" "$lo" "$hi" "$note" "$t0" "$t1" "$model" >> "$OUT" <<'PY'
import json, sys
sim, id_, src, platform, lo, hi, note, t0, t1, model = sys.argv[1:]
s = json.load(open(sim))
print(json.dumps({"id": id_, "source": src, "platform": platform, "model_file": model, "note": note,
                  "published_s": [float(lo), float(hi)], "plan_seconds": float(t1) - float(t0),
                  "simulation": s}))
PY
  echo "predict: $id done" >&2
  rm -f "$plan"
done

python3 - "$OUT" "${RESHARD_SIM_FLAGS:-}" <<'PY'
import json, re, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
extra = sys.argv[2]
lines = ["| row | platform | model | mapping | published (s) | predicted total (s) | bulk / misc (s) | floor (s) | × floor | busiest link | pred ≤ published low |",
         "|---|---|---|---|---:|---:|---:|---:|---:|---|---|"]
for r in rows:
    s = r["simulation"]
    lo, hi = r["published_s"]
    tot = s["total_time_ms"] / 1e3
    p = s["plan"]
    tr = "tp{tp} pp{pp} ep{ep} ({num_gpus})".format(**p["train"])
    ge = "tp{tp} dp{dp} ({num_gpus})".format(**p["gen"])
    bl = s["busiest_link"]
    src = "seed" if r["source"] == "seed" else "NCCL M2N"
    lines.append(f"| {r['id']} ({src}) | {r['platform']} ({s['system']['name']}, {s['system']['gpus_per_node']}/domain) | {p['model']} | {tr} → {ge} | {lo:.2f}–{hi:.2f} | {tot:.3f} | {s['bulk_time_ms']/1e3:.3f} / {s['misc_time_ms']/1e3:.3f} | {max(s['floors']['nic_ms'], s['floors']['nvlink_ms'])/1e3:.3f} | {s['floors']['predicted_over_floor']:.2f} | rank {bl['rank']} {bl['resource']} | {'yes' if tot <= lo else 'NO'} |")
notes = [f"- **{r['id']}**: {r['note']}" for r in rows]
table = "\n".join(lines + [""] + notes)
if extra:  # not the defaults: print only
    print(f"with {extra}:\n{table}")
    sys.exit(0)
json.dump({"format": "reshard-predictions", "version": 1, "rows": rows}, open("results/predictions.json", "w"), indent=1)
doc = open("docs/performance.md").read()
new, n = re.subn(r"(<!-- PREDICTIONS BEGIN -->\n).*?(<!-- PREDICTIONS END -->)", lambda m: m.group(1) + table + "\n" + m.group(2), doc, flags=re.S)
if n != 1:
    sys.exit("predict: docs/performance.md lacks the PREDICTIONS BEGIN/END markers")
open("docs/performance.md", "w").write(new)
print(table)
PY
