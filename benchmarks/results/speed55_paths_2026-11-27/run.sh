#!/bin/bash
#   run.sh paths OUTDIR ROUNDS   MKL's AVX2 path (MKL_DEBUG_CPU_TYPE=5) vs the new default (7 on this
#                                AMD with AVX-512), alternating; then bench_export
#   run.sh window OUTDIR ROUNDS  the default (MKL path 7 here): bench_pretrain small and bench_embed
#                                original, ROUNDS times
out="$2"; rounds="${3:-2}"; mkdir -p "$out"; cd /work/main; P=.venv/bin/python

paths() {
  git log -1 --oneline > "$out/commit.txt"; git diff --stat >> "$out/commit.txt"; date -u > "$out/start.txt"
  $P benchmarks/stream.py > "$out/stream.txt" 2>&1
  for r in $(seq 1 $rounds); do
    for path in 5 7; do
      if [ $((r % 2)) = 0 ]; then path=$((12 - path)); fi   # alternate which goes first
      MKL_DEBUG_CPU_TYPE=$path $P benchmarks/bench_pretrain.py --configs small --steps 20 --warmup 3 > "$out/pretrain_path${path}_$r.txt" 2>&1
      MKL_DEBUG_CPU_TYPE=$path $P benchmarks/bench_embed.py --configs original --modes stateless --cache off --n_sentences 600 --exported none --allennlp_python none > "$out/embed_path${path}_$r.txt" 2>&1
    done
  done
  $P benchmarks/bench_export.py --configs original --n_sentences 1000 --json_out "$out/export_int8.json" > "$out/export.txt" 2>&1
  date -u > "$out/end.txt"
}

window() {
  git log -1 --oneline > "$out/commit.txt"; date -u > "$out/start.txt"
  $P benchmarks/stream.py > "$out/stream.txt" 2>&1
  for r in $(seq 1 $rounds); do
    $P benchmarks/bench_pretrain.py --configs small --steps 20 --warmup 3 > "$out/pretrain_$r.txt" 2>&1
    $P benchmarks/bench_embed.py --configs original --modes stateless --cache off --n_sentences 600 --exported none --allennlp_python none > "$out/embed_$r.txt" 2>&1
  done
  date -u > "$out/end.txt"
}

"$1"
