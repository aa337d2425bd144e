#!/usr/bin/env bash
# The demo: installs what is missing, builds, and plans the shipped default — Qwen3-4B from
# data-parallel training (8 GPUs, DP8) to tensor-parallel generation (8 GPUs, TP8) — printing the
# plan summary and writing the plan to build/demo-plan.json.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
bash scripts/build.sh
BUILD_DIR=${RESHARD_BUILD_DIR:-build}
"$BUILD_DIR/apps/reshard/reshard" plan --model plans/qwen3-4b.json --system plans/qwen3-4b-dp8-tp8.json \
  --summary -o "$BUILD_DIR/demo-plan.json" --force
echo
echo "Next: $BUILD_DIR/apps/reshard/reshard inspect $BUILD_DIR/demo-plan.json --param model.layers.0.mlp.down_proj.weight"
