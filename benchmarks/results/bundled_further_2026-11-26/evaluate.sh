#!/bin/bash
# evaluate.sh STEP: export checkpoint STEP (softmax float16, as shipped), its held-out perplexity
# (first 51,200 targets, as the card) and frozen rt-polarity (today's finetune protocol), 1 thread.
set -e
export OMP_NUM_THREADS=1
S=$1; D=/work/shared/data/lm-corpus
cd /work/runs/en-bundled2
P=/work/main/.venv/bin/paddle-elmo
$P export-weights --init_from_ckpt ckpt/$S --output_dir export-$S --softmax_dtype float16
$P eval --model export-$S --dev_data_path $D/heldout.txt --eval_max_tokens 51200 --cpu_threads 1 > export-$S/eval_51200.txt 2>&1
cat export-$S/eval_51200.txt | tail -2
$P finetune --model $PWD/export-$S --data_dir /work/shared/data/rt-polarity --cpu_threads 1 --quiet \
  --output_json downstream/elmo-$S.json > downstream/elmo-$S.log 2>&1
tail -2 downstream/elmo-$S.log
