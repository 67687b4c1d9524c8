#!/bin/bash
# usage: final.sh OUTDIR ROUNDS  -- interleaved: base (1aeb1e1) vs main, bench_pretrain small and bench_embed original
out="$1"; rounds="${2:-2}"; mkdir -p "$out"
for r in $(seq 1 $rounds); do
  for repo in base main; do
    d=/work/wt-base; [ $repo = main ] && d=/work/main
    cd $d; git log -1 --oneline > "$out/${repo}_commit.txt"
    .venv/bin/python benchmarks/bench_pretrain.py --configs small --steps 20 --warmup 3 > "$out/pretrain_${repo}_$r.txt" 2>&1
    .venv/bin/python benchmarks/bench_embed.py --configs original --modes stateless --cache off --n_sentences 600 --exported none --allennlp_python none > "$out/embed_${repo}_$r.txt" 2>&1
  done
done
date -u > "$out/end.txt"
