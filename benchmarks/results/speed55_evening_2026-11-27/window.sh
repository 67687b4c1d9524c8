#!/bin/bash
# usage: window.sh OUTDIR ROUNDS -- the default (MKL path 7 here): bench_pretrain small and bench_embed original, ROUNDS times
out="$1"; rounds="${2:-2}"; mkdir -p "$out"; cd /work/main; P=.venv/bin/python
git log -1 --oneline > "$out/commit.txt"; date -u > "$out/start.txt"
$P benchmarks/stream.py > "$out/stream.txt" 2>&1
for r in $(seq 1 $rounds); do
  $P benchmarks/bench_pretrain.py --configs small --steps 20 --warmup 3 > "$out/pretrain_$r.txt" 2>&1
  $P benchmarks/bench_embed.py --configs original --modes stateless --cache off --n_sentences 600 --exported none --allennlp_python none > "$out/embed_$r.txt" 2>&1
done
date -u > "$out/end.txt"
