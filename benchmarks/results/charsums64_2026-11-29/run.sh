#!/bin/bash
# Issue 64, fifth session of 2026-11-29, on this class (AMD EPYC, AVX2 only, MKL path 5), idle, two
# threads, from the checkout's root; PY: the project's python. The floors' figures after the char CNN
# kernel works from the call's distinct chars (its forward and backward), and the embedding's peak.
set -e
PY=${PY:-python}
D=benchmarks/results/charsums64_2026-11-29
git rev-parse HEAD > $D/commit.txt
lscpu > $D/lscpu.txt
$PY benchmarks/profile_pretrain.py --configs small --steps 10 --repeats 3 --json_out $D/profile_pretrain_small.json > $D/profile_pretrain_small.txt 2>&1
$PY benchmarks/profile_embed.py --configs original --n_sentences 600 --repeats 3 --json_out $D/profile_embed_original.json > $D/profile_embed_original.txt 2>&1
$PY benchmarks/bench_embed.py --configs original --modes stateless --cache off --n_sentences 600 --exported none --repeats 3 --json_out $D/bench_embed_original.json > $D/bench_embed_original.txt 2>&1
