"""One embedding change against the code before it, alternating in one process (issue 55, item 2):
the original-size embedder as bench_embed.py builds it (random weights, seed 0, stateless, the
char-CNN cache off), the first N lines of rt-polarity.pos, batches of 64. Each round runs the old
path, then the new (or the reverse in odd rounds), each pass timed whole, with the matmul rate
before it; prints the seconds per pass, the median of each path, their ratio, and whether the
outputs are identical (np.array_equal over every sentence's layers).

    taskset -c 1 python benchmarks/results/speed55_embed_2026-11-27/ab.py CHANGE [N] [ROUNDS] [THREADS] [BATCH]

CHANGE names what is switched (CHANGES below):
  packs   the biLM's Kernels.keep_packs False (the kernel packs W_hidden and W_P at every call) / True
          (packed once per weight version, LstmLayer.packed_weights)
  gates   (a change measured and reverted: bc75d9a) the recurrence kernel's inference gates storing each row's activations to scratch (old)
          or not (new); needs kernels.cc with measure_gates.diff applied (a switch read from the
          environment, ELMO_AB_OLD_GATES, not in the committed kernel)
Besides the ratio of the medians, the median of each round's new / old (the two passes of a round
ran back to back, so a load that changes slowly affects both alike).
"""
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, 'benchmarks')
import bench_embed, common  # noqa: E402


def switch_packs(new):
    import dataclasses
    for stack in (bilm.forward_stack, bilm.backward_stack):
        stack.kernels = dataclasses.replace(stack.kernels, keep_packs=new)


def switch_gates(new):
    import os
    if new:
        os.environ.pop('ELMO_AB_OLD_GATES', None)
    else:
        os.environ['ELMO_AB_OLD_GATES'] = '1'


CHANGES = {'packs': switch_packs, 'gates': switch_gates}

change = sys.argv[1]
n, rounds, threads, batch = (int(v) for v in (sys.argv[2:] + ['128', '5', '1', '64'][len(sys.argv) - 2:])[:4])
spec = dict(threads=threads, device='cpu', seed=0, config='original', batch_size=batch, cache='off')
sentences, _ = bench_embed.read_sentences(bench_embed.DEFAULT_DATA, n)
bilm, embedder, _ = bench_embed.build_embedder(spec)


def run(new):
    CHANGES[change](new)
    start = time.perf_counter()
    out = [e.copy() for _, e in embedder.iter_embeddings(sentences)]  # reuse_memory: copies
    return time.perf_counter() - start, out


print(f'{change}: {n} sentences, {sum(map(len, sentences))} tokens, batches of {batch}, {threads} threads, '
      f'{rounds} rounds')
outputs = {old_new: run(old_new)[1] for old_new in (False, True)}  # warm-up
seconds = {False: [], True: []}
for r in range(rounds):
    for new in ((False, True) if r % 2 == 0 else (True, False)):
        rate = common.measure_matmul_gflops(seconds=1.0)
        s, out = run(new)
        seconds[new].append(s)
        same = all(np.array_equal(a, b) for a, b in zip(out, outputs[new]))
        print(f'round {r} | {"new" if new else "old"} | {s:7.3f} s | matmul {rate:5.1f} GFLOP/s | '
              f'same as its first pass: {same}', flush=True)
old, new = statistics.median(seconds[False]), statistics.median(seconds[True])
paired = statistics.median(b / a for a, b in zip(seconds[False], seconds[True]))
print(f'median old {old:.3f} s, new {new:.3f} s: new / old = {new / old:.3f} ({old / new:.3f}x); '
      f'median of the rounds\' new / old {paired:.3f}')
print('identical outputs (old and new):', all(np.array_equal(a, b) for a, b in zip(outputs[False], outputs[True])))
