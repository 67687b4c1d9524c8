#!/bin/bash
# usage: measure.sh REPO OUTDIR
cd "$1"; out="$2"; mkdir -p "$out"
P=.venv/bin/python
git log -1 --oneline > "$out/commit.txt"
date -u > "$out/start.txt"
$P benchmarks/stream.py > "$out/stream.txt" 2>&1
$P benchmarks/bench_pretrain.py --configs small --steps 20 --warmup 3 > "$out/pretrain.txt" 2>&1
$P benchmarks/profile_pretrain.py --configs small --steps 20 > "$out/profile_pretrain.txt" 2>&1
$P benchmarks/bench_embed.py --configs original --modes stateless --cache off --n_sentences 600 --exported none --allennlp_python none > "$out/embed.txt" 2>&1
$P benchmarks/profile_embed.py --configs original --n_sentences 600 > "$out/profile_embed.txt" 2>&1
date -u > "$out/end.txt"
