#!/bin/bash
# bench_embed on main (4c91396+) with the kernels built with and without -fno-math-errno, alternating, separate caches
cd /work/main; out=/work/runs/m55/errno; mkdir -p $out
run() {  # $1 label, $2 python prelude
  PADDLE_ELMO_CACHE=/work/runs/m55/cache_$1 .venv/bin/python -c "
import sys, runpy
$2
sys.argv = ['bench_embed.py', '--configs', 'original', '--modes', 'stateless', '--cache', 'off', '--n_sentences', '600', '--exported', 'none', '--allennlp_python', 'none', '--batch_sizes', '64']
sys.path.insert(0, 'benchmarks')
runpy.run_path('benchmarks/bench_embed.py', run_name='__main__')
" > $out/embed_$1_$3.txt 2>&1
}
NOERRNO="from paddle_elmo.model import kernel_build; kernel_build.CFLAGS = tuple(f for f in kernel_build.CFLAGS if f != '-fno-math-errno')"
for r in 1 2 3; do
  run errno "$NOERRNO" $r
  run noerrno "pass" $r
done
