#!/bin/bash
# The bundled English biLM trained further (issue 45 item 3), 1 thread each step.
#   run.sh train         from the released weights + fitted softmax, word table frozen as before,
#                        lm-corpus train.txt in a new order (seed 2)
#   run.sh evaluate STEP export checkpoint STEP (softmax float16, as shipped), its held-out perplexity
#                        (first 51,200 targets, as the card) and frozen rt-polarity (the finetune protocol)
#   run.sh int8          the released bundled model's int8 export on rt-polarity (the same 10 folds and
#                        protocol as downstream/elmo-final.json)
set -e
export OMP_NUM_THREADS=1
D=/work/shared/data/lm-corpus
P=/work/main/.venv/bin/paddle-elmo
cd /work/runs/en-bundled2

train() {
  date
  $P pretrain --init_from_weights bundled --preset budget --seed 2 --cpu_threads 1 \
    --freeze_word_embeddings --from_weights_lr_scale 0.5 --warmup_steps 300 --lr_decay cosine --max_steps 16000 \
    --vocab_file /work/main/paddle_elmo/pretrained/vocab.txt --train_data_path $D/train.txt \
    --dev_data_path $D/heldout.txt --save_dir ckpt --save_freq 1000 --eval_minutes 15 --max_minutes ${MINUTES:-125}
  date
}

evaluate() {
  S=$1
  $P export-weights --init_from_ckpt ckpt/$S --output_dir export-$S --softmax_dtype float16
  $P eval --model export-$S --dev_data_path $D/heldout.txt --eval_max_tokens 51200 --cpu_threads 1 > export-$S/eval_51200.txt 2>&1
  tail -2 export-$S/eval_51200.txt
  $P finetune --model $PWD/export-$S --data_dir /work/shared/data/rt-polarity --cpu_threads 1 --quiet \
    --output_json downstream/elmo-$S.json > downstream/elmo-$S.log 2>&1
  tail -2 downstream/elmo-$S.log
}

int8() {
  date
  $P export-inference --model bundled --output_dir export-int8 --quantize int8 > export-int8.log 2>&1
  tail -3 export-int8.log
  $P finetune --inference_model $PWD/export-int8 --inference_backend onnxruntime --data_dir /work/shared/data/rt-polarity \
    --cpu_threads 1 --quiet --output_json downstream/int8-final.json > downstream/int8-final.log 2>&1
  tail -2 downstream/int8-final.log
  /work/main/.venv/bin/python /work/main/benchmarks/compare_folds.py downstream/elmo-final.json downstream/int8-final.json
  date
}

"${1:-train}" "${@:2}"
