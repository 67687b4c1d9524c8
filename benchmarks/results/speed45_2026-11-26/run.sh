#!/bin/bash
#   run.sh ab       interleaved before/after: baseline 80372d0 (BASE_CHECKOUT) and the working tree
#                   (THIS_CHECKOUT), idle machine
#   run.sh ceiling  the ceilings: the products alone (matmul_ceiling.py), and embedding at batches of
#                   64 and 256 (profile_embed.py). Run from the checkout root on an idle machine.
out=benchmarks/results/speed45_2026-11-26

ab() {
  for round in 1 2; do
    for tree in base main; do
      dir=THIS_CHECKOUT; [ $tree = base ] && dir=BASE_CHECKOUT
      cd $dir
      PYTHONPATH=$dir THIS_CHECKOUT/.venv/bin/python benchmarks/bench_pretrain.py --configs small --steps 20 --warmup 3 --threads 2 > $out/pretrain_${tree}_$round.txt 2>&1
      PYTHONPATH=$dir THIS_CHECKOUT/.venv/bin/python benchmarks/profile_pretrain.py --configs bundled --steps 20 > $out/profile_bundled_${tree}_$round.txt 2>&1
      PYTHONPATH=$dir THIS_CHECKOUT/.venv/bin/python benchmarks/bench_embed.py --configs original,small --modes stateless --cache off --n_sentences 600 --exported none > $out/embed_${tree}_$round.txt 2>&1
    done
  done
}

ceiling() {
  python benchmarks/matmul_ceiling.py --configs small,original --steps 2 --n_sentences 128 --top 12 > $out/ceiling_products.txt 2>&1
  for b in 64 256; do  # (their runs of 19:49 were under load: discarded)
    python benchmarks/profile_embed.py --configs original --n_sentences 512 --batch_size $b --out $out/ceiling_embed_b$b.json > $out/ceiling_embed_b$b.txt 2>&1
  done
}

"${1:-ab}" "${@:2}"
