#!/bin/bash
# Interleaved before/after: baseline 80372d0 (BASE_CHECKOUT) and the working tree (THIS_CHECKOUT), idle machine.
out=benchmarks/results/speed45_2026-11-26
for round in 1 2; do
  for tree in base main; do
    dir=THIS_CHECKOUT; [ $tree = base ] && dir=BASE_CHECKOUT
    cd $dir
    PYTHONPATH=$dir THIS_CHECKOUT/.venv/bin/python benchmarks/bench_pretrain.py --configs small --steps 20 --warmup 3 --threads 2 > $out/pretrain_${tree}_$round.txt 2>&1
    PYTHONPATH=$dir THIS_CHECKOUT/.venv/bin/python benchmarks/profile_pretrain.py --configs bundled --steps 20 > $out/profile_bundled_${tree}_$round.txt 2>&1
    PYTHONPATH=$dir THIS_CHECKOUT/.venv/bin/python benchmarks/bench_embed.py --configs original,small --modes stateless --cache off --n_sentences 600 --exported none > $out/embed_${tree}_$round.txt 2>&1
  done
done
