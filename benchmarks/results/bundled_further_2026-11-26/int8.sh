#!/bin/bash
# The released bundled model's int8 export on rt-polarity (the same 10 folds and protocol as downstream/elmo-final.json)
set -e
export OMP_NUM_THREADS=1
cd /work/runs/en-bundled2
P=/work/main/.venv/bin/paddle-elmo
date
$P export-inference --model bundled --output_dir export-int8 --quantize int8 > export-int8.log 2>&1
tail -3 export-int8.log
$P finetune --inference_model $PWD/export-int8 --inference_backend onnxruntime --data_dir /work/shared/data/rt-polarity \
  --cpu_threads 1 --quiet --output_json downstream/int8-final.json > downstream/int8-final.log 2>&1
tail -2 downstream/int8-final.log
/work/main/.venv/bin/python /work/main/benchmarks/compare_folds.py downstream/elmo-final.json downstream/int8-final.json
date
