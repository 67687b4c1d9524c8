#!/bin/bash
# Issue 64's changes of 2026-11-29 (second session) on this class (AMD EPYC, AVX2 only, MKL path 5),
# idle, two threads. From the checkout's root; PY: the project's python; BEFORE: a checkout of
# 623abb1 (main before the streamed LSTM kernel) for the embedding's before/after.
set -e
PY=${PY:-python}
BEFORE=${BEFORE:-../wt-before}
D=benchmarks/results/fusions64_2026-11-29
git rev-parse HEAD > $D/commit.txt
lscpu > $D/lscpu.txt
before() { (cd $BEFORE && PYTHONPATH=$PWD $PY "$@"); }
# 1. Each training change interleaved against its parent in one process (ab_pretrain.py).
#    The sampled-softmax kernels: the parent's sampled_softmax.py (gathered rows, the loss kernel).
for rows in 32 128; do
  $PY benchmarks/ab_pretrain.py --base becd48f --swap paddle_elmo/train/sampled_softmax.py \
      --batch_size $rows --steps 20 --warmup 3 > $D/ab_softmax_$rows.txt 2>&1
done
#    The char CNN's sparse backward was merged at 5bfa1a2 and reverted at 32e9770 (these runs said
#    slower): ab_charcnn_*.txt were taken at 93e47ce (5bfa1a2 and a docs commit) by
#      for rows in 32 128; do $PY benchmarks/ab_pretrain.py --base 5bfa1a2^1 \
#        --swap paddle_elmo/model/kernels.cc,paddle_elmo/model/kernels.py,paddle_elmo/model/token_layer.py,paddle_elmo/model/layer_math.py \
#        --base_cflags="-O3 -march=native -fno-trapping-math -fno-math-errno" --batch_size $rows --steps 20 --warmup 3; done
# 2. The streamed LSTM kernel (embedding): before and after, alternating (bench_embed_packed_*.txt;
#    bench_embed_{1,2}.txt are the same command at c4fbceb, before W_input was packed once a call).
EMBED="--configs original --modes stateless --cache off --n_sentences 600 --exported none"
before benchmarks/bench_embed.py $EMBED > $D/before_bench_embed_1.txt 2>&1
$PY benchmarks/bench_embed.py $EMBED > $D/bench_embed_packed_1.txt 2>&1
before benchmarks/bench_embed.py $EMBED > $D/before_bench_embed_2.txt 2>&1
$PY benchmarks/bench_embed.py $EMBED --json_out $D/bench_embed_original.json > $D/bench_embed_packed_2.txt 2>&1
#    Separate runs minutes apart moved with the VM's drift (the before runs alone span 690-790 tokens/s at
#    64): the two LstmStack._run_layer, 623abb1's (grouped products) and this commit's (streamed),
#    interleaved in one process on the same embedder and sentences, 3 rounds each.
cat > /tmp/ab_streamed_embed.py <<'PY'
import sys, time, statistics, importlib.util
sys.path.insert(0, 'benchmarks')
import bench_embed
from paddle_elmo.model import lstm
spec_ = importlib.util.spec_from_file_location('lstm_before', sys.argv[3] + '/paddle_elmo/model/lstm.py')
before = importlib.util.module_from_spec(spec_); spec_.loader.exec_module(before)
spec = dict(config='original', n_sentences=600, batch_size=int(sys.argv[1]), threads=2, device='cpu', seed=0, cache='off')
sentences, _ = bench_embed.read_sentences(bench_embed.DEFAULT_DATA, 600)
bilm, emb, _ = bench_embed.build_embedder(spec)
versions = {'grouped (623abb1)': before.LstmStack._run_layer, 'streamed (now)': lstm.LstmStack._run_layer}
times = {k: [] for k in versions}
outs = {}
for r in range(int(sys.argv[2])):
    for name, fn in versions.items():
        lstm.LstmStack._run_layer = fn
        t = time.perf_counter()
        for o in emb.iter_embeddings(sentences): last = o
        times[name].append(time.perf_counter() - t)
for name in versions:
    print(sys.argv[1], name, ['%.2f' % x for x in times[name]], 'median %.2f s' % statistics.median(times[name]))
PY
for batch in 256 64; do $PY /tmp/ab_streamed_embed.py $batch 3 $BEFORE; done > $D/ab_streamed_embed.txt 2>&1
# 3. The figures: the step and the embedding against their required floor and their roofline.
$PY benchmarks/profile_pretrain.py --configs small --steps 10 --repeats 3 --json_out $D/profile_pretrain_small.json > $D/profile_pretrain_small.txt 2>&1
git rev-parse HEAD > $D/commit_embed.txt
$PY benchmarks/profile_embed.py --configs original --n_sentences 600 --repeats 3 --json_out $D/profile_embed_original.json > $D/profile_embed_original.txt 2>&1
# 4. int8 (bench_export_original_a19cd9d.txt: the same command from a checkout of a19cd9d)
$PY benchmarks/bench_export.py --configs original --n_sentences 1000 > $D/bench_export_original.txt 2>&1
