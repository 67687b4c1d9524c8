#!/bin/bash
# Issue 64, ninth session of 2026-11-30, on this class (AMD EPYC, AVX2 only, MKL path 5), idle, two
# threads, from the checkout's root; PY: the project's python. The session's training changes together
# against its start (4e95cbc), interleaved; then the pretraining step against its floors.
set -e
PY=${PY:-python}
D=benchmarks/results/folded64_2026-11-30
git rev-parse HEAD > $D/commit.txt
lscpu > $D/lscpu.txt
SWAP=paddle_elmo/model/kernels.cc,paddle_elmo/model/kernels.py,paddle_elmo/model/lstm.py,paddle_elmo/model/packing.py
for rows in 32 128; do
  $PY benchmarks/ab_pretrain.py --base 4e95cbc --swap $SWAP --batch_size $rows --steps 30 --warmup 3 > $D/ab_session_$rows.txt 2>&1
done
$PY benchmarks/profile_pretrain.py --configs small --steps 10 --repeats 3 --json_out $D/profile_pretrain_small.json > $D/profile_pretrain_small.txt 2>&1
