#!/bin/bash
# Issue 64, fourth session of 2026-11-29, on this class (AMD EPYC, AVX2 only, MKL path 5), idle, two
# threads, from the checkout's root; PY: the project's python. The figures with the roofline timed
# before and after each run (each shape's faster timing kept) and the kernels' products timed as
# the kernels run them; int8 in rounds against the library.
set -e
PY=${PY:-python}
D=benchmarks/results/floors64_2026-11-29
git rev-parse HEAD > $D/commit.txt
lscpu > $D/lscpu.txt
$PY benchmarks/profile_pretrain.py --configs small --steps 10 --repeats 3 --json_out $D/profile_pretrain_small.json > $D/profile_pretrain_small.txt 2>&1
$PY benchmarks/profile_embed.py --configs original --n_sentences 600 --repeats 3 --json_out $D/profile_embed_original.json > $D/profile_embed_original.txt 2>&1
$PY benchmarks/bench_export.py --configs original --n_sentences 1000 --repeats 3 --json_out $D/bench_export_original.json > $D/bench_export_original.txt 2>&1
