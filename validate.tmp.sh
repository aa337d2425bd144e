O=$OUT/v; mkdir -p $O
(. scripts/gpu_common.sh; OUT=$O LOG=$O/build_ctest.log; gpu_build_and_test) | tail -3
nvidia-smi -L > $O/gpu.txt
python3 - <<'PY'
import json
params = {}
for l in range(2048):
    params["model.layers.%d.mlp.gate_proj.weight" % l] = {"shape": [128, 128], "dtype": "bfloat16"}
    params["model.layers.%d.mlp.down_proj.weight" % l] = {"shape": [128, 128], "dtype": "bfloat16"}
json.dump({"model": "stress-4096x32KiB", "params": params}, open('/tmp/stress.json', "w"))
PY
R=build-gpu/apps/reshard/reshard
$R plan --model /tmp/stress.json --train-gpus 2 --train tp=1 --gen-gpus 2 --gen tp=2 --bulk all --force -o /tmp/stress.plan.json > /dev/null
$R plan --model plans/qwen3-4b.json --train-gpus 2 --train tp=1 --gen-gpus 2 --gen tp=2 --force -o /tmp/q.plan.json > /dev/null
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for i in 1 2 3; do for p in stress q; do for algo in reshard golden; do
  echo "== $i $p $algo"
  mpirun --oversubscribe --bind-to none -np 4 $R run --plan /tmp/$p.plan.json --transport cuda-ipc --algo $algo --iters 10 --warmup 1 --batch-ops 4096 --batch-bytes 4Gi --staging-bytes 1Gi --check --json $O/$p.$algo.$i.json 2>&1 | grep -E "^ (bulk|misc|total)|wrong [0-9]"
done; done; done
cd $OUT && tar czf v.tgz v
