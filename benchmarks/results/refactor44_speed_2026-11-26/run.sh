#!/bin/bash
# Issue 44's speed criterion: embedding and pretraining, before (e46b319) and after (main), interleaved, idle machine.
PY=MAIN_CHECKOUT/.venv/bin/python
OUT=OUT; mkdir -p $OUT
for round in 1 2; do
  for rev in base main; do
    if [ $rev = base ]; then D=BASE_CHECKOUT; else D=MAIN_CHECKOUT; fi
    cd $D
    PYTHONPATH=$D OMP_NUM_THREADS=2 $PY benchmarks/bench_embed.py --configs original,small --modes stateless --cache off \
      --n_sentences 600 --threads 2 --json_out $OUT/embed_${rev}_$round.json --quiet > $OUT/embed_${rev}_$round.txt 2>&1
    PYTHONPATH=$D OMP_NUM_THREADS=2 $PY benchmarks/bench_pretrain.py --configs small --steps 20 --warmup 3 --threads 2 \
      > $OUT/pretrain_${rev}_$round.txt 2>&1
  done
done
date
