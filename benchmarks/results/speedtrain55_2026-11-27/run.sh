#!/bin/bash
# Interleaved A/B runs of branch speedtrain against 1aeb1e1 (where it branched from main), in one process each.
# (the paths in the form OLD:NEW since the folder move after these runs; the raw files below name the paths as they were run)
cd "$(dirname "$0")/../../.."  # the checkout
out=benchmarks/results/speedtrain55_2026-11-27
for args in "--threads 1 --batch_size 32 --steps 12" "--threads 1 --batch_size 32 --steps 8 --max_grad_norm 1e9" "--threads 1 --batch_size 128 --steps 6"; do
  name=$(echo $args | tr -d '-' | tr ' ' '_')
  { date -u; echo "python benchmarks/ab_pretrain.py --base 1aeb1e1 --swap paddle_elmo/kernels.cc:paddle_elmo/model/kernels.cc,paddle_elmo/optimizers.py:paddle_elmo/train/optimizers.py $args"; uptime; \
    nice -n 10 taskset -c 1 python benchmarks/ab_pretrain.py --base 1aeb1e1 --swap paddle_elmo/kernels.cc:paddle_elmo/model/kernels.cc,paddle_elmo/optimizers.py:paddle_elmo/train/optimizers.py $args 2>&1 | grep -v "Warn\|warn\|INFO"; uptime; } > $out/base_vs_speedtrain_$name.txt
done
