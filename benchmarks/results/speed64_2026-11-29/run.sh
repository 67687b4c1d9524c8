#!/bin/bash
# Speed and memory at two threads on this session's class (AMD EPYC, AVX2 only, MKL path 5), idle:
# the parent commit 1da44be (a checkout at $BEFORE) against this commit, alternating, then this
# commit's robust figures (median of 3 runs, each against the higher of its start/end matmul reading).
# From the checkout's root; PY: the project's python.
set -e
PY=${PY:-python}
BEFORE=${BEFORE:-../wt-before}
D=benchmarks/results/speed64_2026-11-29
git rev-parse HEAD > $D/commit.txt
lscpu > $D/lscpu.txt
before() { (cd $BEFORE && PYTHONPATH=$PWD $PY "$@"); }
PRETRAIN="--configs small --steps 20 --warmup 3"
EMBED="--configs original --modes stateless --cache off --n_sentences 600 --exported none"
before benchmarks/bench_pretrain.py $PRETRAIN > $D/before_bench_pretrain_1.txt 2>&1
$PY benchmarks/bench_pretrain.py $PRETRAIN --repeats 3 --json_out $D/bench_pretrain_small.json > $D/bench_pretrain_small.txt 2>&1
before benchmarks/bench_pretrain.py $PRETRAIN > $D/before_bench_pretrain_2.txt 2>&1
before benchmarks/bench_embed.py $EMBED > $D/before_bench_embed_1.txt 2>&1
$PY benchmarks/bench_embed.py $EMBED --repeats 3 --json_out $D/bench_embed_original.json > $D/bench_embed_original.txt 2>&1
before benchmarks/bench_embed.py $EMBED > $D/before_bench_embed_2.txt 2>&1
$PY benchmarks/profile_pretrain.py --configs small --steps 10 --repeats 3 --json_out $D/profile_pretrain_small.json > $D/profile_pretrain_small.txt 2>&1
$PY benchmarks/profile_embed.py --configs original --n_sentences 600 --repeats 3 --json_out $D/profile_embed_original.json > $D/profile_embed_original.txt 2>&1
$PY benchmarks/bench_export.py --configs original --n_sentences 1000 --json_out $D/bench_export_original.json > $D/bench_export_original.txt 2>&1
