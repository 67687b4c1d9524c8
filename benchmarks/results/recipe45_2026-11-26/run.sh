#!/bin/bash
# usage: run.sh WAIT_PID "label:flags" ...   (runs the specs one after another, 1 thread each, 1,500 steps)
cd /work/main
wait_pid=$1; shift
while kill -0 $wait_pid 2>/dev/null; do sleep 10; done
for spec in "$@"; do
  label=${spec%%:*}; flags=${spec#*:}
  steps=1500; case $label in *6k*) steps=6000;; esac
  seed=1; case $label in *seed2*) seed=2;; esac
  .venv/bin/python benchmarks/bench_quality.py --preset budget --steps $steps --threads 1 --seed $seed --label $label \
    --out_dir ../runs/recipe45/$label --results ../runs/recipe45/results.jsonl -- $flags > ../runs/recipe45/$label.out 2>&1
done
