"""Inference step groups of 1x against 3x the tokens (LstmStack._run_layer), alternating in one process:
the original-size embedder (random weights, seed 0), the first N lines of lm-corpus heldout, batches of 64,
cache on (one pass first fills it). Prints seconds per pass, the matmul rate between passes, and whether the outputs are identical.

    python benchmarks/results/speed45_2026-11-26/groups_ab.py [N] [ROUNDS] [THREADS]
"""
import sys
import time

import numpy as np

sys.path.insert(0, 'benchmarks')
import bench_embed, common  # noqa: E402

n, rounds, threads = (int(v) for v in (sys.argv[1:] + ['128', '3', '2'][len(sys.argv) - 1:])[:3])
spec = dict(threads=threads, device='cpu', seed=0, config='original', batch_size=64, cache='on')
sentences, _ = bench_embed.read_sentences(common.LM_CORPUS + '/heldout.txt', n)
bilm, embedder, _ = bench_embed.build_embedder(spec)
from paddle_elmo.model import lstm as bilm_module  # noqa: E402  (bilm.py then; lstm.py since the split)
groups = bilm_module.step_groups
# 1x: the groups the training's budget gives (a third of inference's tokens per group)
modes = {'1x (training grouping)': lambda sizes, rows: groups(sizes, max(int(sizes[0]), rows // 3)),
         '3x (inference grouping)': groups}


def run(mode):
    bilm_module.step_groups = modes[mode]
    import paddle
    with paddle.no_grad():
        start = time.perf_counter()
        out = [e.copy() for _, e in embedder.iter_embeddings(sentences)]  # reuse_memory: copies
        seconds = time.perf_counter() - start
    bilm_module.step_groups = groups
    return seconds, out


run('3x (inference grouping)')  # warm-up: fills the char-CNN cache, so that every timed pass reads it
print(f'{n} sentences, {sum(map(len, sentences))} tokens, {threads} threads')
first = {}
for r in range(rounds):
    for mode in modes:
        rate = common.measure_matmul_gflops(seconds=1.0)
        seconds, out = run(mode)
        first.setdefault(mode, out)
        print(f'round {r} | {mode:24s} | {seconds:6.3f} s | matmul {rate:5.1f} GFLOP/s', flush=True)
a, b = first.values()
print('identical outputs:', all(np.array_equal(x, y) for x, y in zip(a, b)),
      '| max abs difference:', max(float(np.abs(x - y).max()) for x, y in zip(a, b)))
