#!/bin/bash
# The bundled English biLM trained further (issue 45 item 3): from the released weights + fitted softmax,
# word table frozen as before, lm-corpus train.txt in a new order (seed 2), 1 thread.
export OMP_NUM_THREADS=1
D=/work/shared/data/lm-corpus
cd /work/runs/en-bundled2
date
/work/main/.venv/bin/paddle-elmo pretrain --init_from_weights bundled --preset budget --seed 2 --cpu_threads 1 \
  --freeze_word_embeddings --from_weights_lr_scale 0.5 --warmup_steps 300 --lr_decay cosine --max_steps 16000 \
  --vocab_file /work/main/paddle_elmo/pretrained/vocab.txt --train_data_path $D/train.txt \
  --dev_data_path $D/heldout.txt --save_dir ckpt --save_freq 1000 --eval_minutes 15 --max_minutes ${MINUTES:-125}
date
