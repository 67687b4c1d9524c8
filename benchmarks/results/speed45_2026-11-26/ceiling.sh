#!/bin/bash
# The ceilings (BENCHMARKS.md, "What the products allow"): the products alone, and embedding at
# batches of 64 and 256. Run from the checkout root on an idle machine.
D=benchmarks/results/speed45_2026-11-26
python benchmarks/matmul_ceiling.py --configs small,original --steps 2 --n_sentences 128 --top 12 > $D/ceiling_products.txt 2>&1
for b in 64 256; do  # (their runs of 19:49 were under load: discarded)
  python benchmarks/profile_embed.py --configs original --n_sentences 512 --batch_size $b --out $D/ceiling_embed_b$b.json > $D/ceiling_embed_b$b.txt 2>&1
done
