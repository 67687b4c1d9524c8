#!/bin/bash
# Issue 64's changes of 2026-11-29 (third session) on this class (AMD EPYC, AVX2 only, MKL path 5),
# idle, two threads. From the checkout's root; PY: the project's python; CHARCNN: a checkout of
# a6e4c58 (3742093 with the char CNN kernel alone: 48b20c6, 6cc8a5b (the roofline's bytes), 531bfed,
# and 93c513d cherry-picked);
# BASE: a checkout of 3742093 (main before this session).
set -e
PY=${PY:-python}
CHARCNN=${CHARCNN:-../wt-charcnn}
BASE=${BASE:-../wt-base}
D=benchmarks/results/charcnn64_2026-11-29
OUT=$PWD/$D  # for the steps run from another checkout
git rev-parse HEAD > $D/commit.txt
lscpu > $D/lscpu.txt
in_tree() { local tree=$1; shift; (cd $tree && PYTHONPATH=$PWD $PY "$@"); }
# 1. Each change interleaved against its parent in one process (ab_pretrain.py).
#    The char CNN kernel against 3742093's windows, products and pool kernels.
for rows in 32 128; do
  in_tree $CHARCNN benchmarks/ab_pretrain.py --base 3742093 \
      --swap paddle_elmo/model/kernels.cc,paddle_elmo/model/kernels.py,paddle_elmo/model/token_layer.py,paddle_elmo/model/layer_math.py,paddle_elmo/model/packing.py \
      --batch_size $rows --steps 20 --warmup 3 > $OUT/ab_charcnn_$rows.txt 2>&1
done
#    The sampled softmax's forward kernel against the char CNN alone (a6e4c58).
for rows in 32 128; do
  $PY benchmarks/ab_pretrain.py --base a6e4c58 \
      --swap paddle_elmo/model/kernels.cc,paddle_elmo/model/kernels.py,paddle_elmo/train/sampled_softmax.py \
      --batch_size $rows --steps 20 --warmup 3 > $D/ab_softmax_$rows.txt 2>&1
done
# 2. The figures: the step and the embedding against their required floor and their roofline; int8.
$PY benchmarks/profile_pretrain.py --configs small --steps 10 --repeats 3 --json_out $D/profile_pretrain_small.json > $D/profile_pretrain_small.txt 2>&1
$PY benchmarks/profile_embed.py --configs original --n_sentences 600 --repeats 3 --json_out $D/profile_embed_original.json > $D/profile_embed_original.txt 2>&1
$PY benchmarks/bench_export.py --configs original --n_sentences 1000 > $D/bench_export_original.txt 2>&1
# 3. Losses (not timed): 50 steps of the small step at 32 rows, forward and backward loss per step,
#    for 3742093, the char CNN alone and this commit; then 300 steps and the held-out perplexity.
cat > /tmp/losses50.py <<'PY'
import sys, json
sys.path.insert(0, 'benchmarks')
import pretraining_step
from paddle_elmo.train.lm import train_step
model, optimizer, batches, *_ = pretraining_step.build('small', 32)
losses = []
for _ in range(50):
    out, _ = train_step(model, optimizer, next(batches))
    losses.append([float(out['forward_loss']), float(out['backward_loss'])])
print(json.dumps(losses))
PY
{
  echo "{\"what\": \"pretraining_step small, 32 rows, 2 threads, 50 steps: [forward loss, backward loss] per step\","
  echo "\"base_3742093\": $(in_tree $BASE /tmp/losses50.py 2>/dev/null),"
  echo "\"charcnn_a6e4c58\": $(in_tree $CHARCNN /tmp/losses50.py 2>/dev/null),"
  echo "\"head\": $($PY /tmp/losses50.py 2>/dev/null)}"
} > $D/losses_50.json
Q="--preset small --steps 300 --results $OUT/quality_300.jsonl -- --batch_size 32"
in_tree $BASE benchmarks/bench_quality.py --label sm300-base-3742093 --out_dir ../runs/q-base3742093 $Q
in_tree $CHARCNN benchmarks/bench_quality.py --label sm300-charcnn --out_dir ../runs/q-charcnn $Q
$PY benchmarks/bench_quality.py --label sm300-head --out_dir ../runs/q-head $Q
