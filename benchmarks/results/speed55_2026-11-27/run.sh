#!/bin/bash
#   run.sh measure REPO OUTDIR  one checkout: stream, bench_pretrain small, profile_pretrain, bench_embed
#                               original and profile_embed (base/)
#   run.sh final OUTDIR ROUNDS  interleaved: base (1aeb1e1) vs main, bench_pretrain small and
#                               bench_embed original (after/)
#   run.sh errno                bench_embed on main (4c91396+) with the kernels built with and without
#                               -fno-math-errno, alternating, separate caches (late/)

measure() {
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
}

final() {
  out="$1"; rounds="${2:-2}"; mkdir -p "$out"
  for r in $(seq 1 $rounds); do
    for repo in base main; do
      d=/work/wt-base; [ $repo = main ] && d=/work/main
      cd $d; git log -1 --oneline > "$out/${repo}_commit.txt"
      .venv/bin/python benchmarks/bench_pretrain.py --configs small --steps 20 --warmup 3 > "$out/pretrain_${repo}_$r.txt" 2>&1
      .venv/bin/python benchmarks/bench_embed.py --configs original --modes stateless --cache off --n_sentences 600 --exported none --allennlp_python none > "$out/embed_${repo}_$r.txt" 2>&1
    done
  done
  date -u > "$out/end.txt"
}

errno_run() {  # $1 label, $2 python prelude, $3 round
  PADDLE_ELMO_CACHE=/work/runs/m55/cache_$1 .venv/bin/python -c "
import sys, runpy
$2
sys.argv = ['bench_embed.py', '--configs', 'original', '--modes', 'stateless', '--cache', 'off', '--n_sentences', '600', '--exported', 'none', '--allennlp_python', 'none', '--batch_sizes', '64']
sys.path.insert(0, 'benchmarks')
runpy.run_path('benchmarks/bench_embed.py', run_name='__main__')
" > $out/embed_$1_$3.txt 2>&1
}

errno() {
  cd /work/main; out=/work/runs/m55/errno; mkdir -p $out
  NOERRNO="from paddle_elmo.model import kernel_build; kernel_build.CFLAGS = tuple(f for f in kernel_build.CFLAGS if f != '-fno-math-errno')"
  for r in 1 2 3; do
    errno_run errno "$NOERRNO" $r
    errno_run noerrno "pass" $r
  done
}

"$@"
