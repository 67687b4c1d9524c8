"""The recurrence kernel alone, old against new, alternating in one process (issue 55, item 2):
one original-size layer and direction (random weights, LstmLayer's initialisation, seed 0) on the
step sizes of the first batch of 64 rt-polarity sentences as the embedder sorts them, without
gradients, as embedding runs it; each call timed, the calls of the two paths alternating (old,
new, then new, old), with identical outputs checked (np.array_equal). Less noisy than whole
embedding passes (ab.py) on a loaded machine: only the part that changed runs.

    taskset -c 1 python benchmarks/results/speed55_embed_2026-11-27/recurrence_ab.py CHANGE [ROUNDS] [THREADS]

CHANGE: packs (the kernel packing W_hidden and W_P at every call, against the layer's kept packs)
or gates (ab.py's: needs measure_gates.diff applied to kernels.cc).
"""
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, 'benchmarks')
import bench_embed, common  # noqa: E402

change = sys.argv[1]
rounds, threads = (int(v) for v in (sys.argv[2:] + ['15', '1'][len(sys.argv) - 2:])[:2])
common.set_threads(threads)
import paddle  # noqa: E402
from paddle_elmo.model import kernels  # noqa: E402
from paddle_elmo.model.lstm import LstmLayer, split_rows  # noqa: E402
from paddle_elmo.model.config import ModelConfig  # noqa: E402

config = ModelConfig(**bench_embed.CONFIGS['original'])
sentences, _ = bench_embed.read_sentences(bench_embed.DEFAULT_DATA, 64)
lengths = np.sort([len(s) + 2 for s in sentences])[::-1]
batch_sizes = (lengths[None, :] > np.arange(lengths[0])[:, None]).sum(axis=1)
paddle.seed(0)
layer = LstmLayer(config.projection_dim, config.cell_dim, config.projection_dim)
tokens, B = int(batch_sizes.sum()), int(batch_sizes[0])
rng = np.random.default_rng(0)
x = paddle.to_tensor(rng.uniform(-1, 1, (tokens, config.projection_dim)).astype(np.float32))
w_input, w_hidden = split_rows(layer.W, [layer.input_dim, layer.projection_dim])


def run(new):
    if change == 'gates':
        if new:
            os.environ.pop('ELMO_AB_OLD_GATES', None)
        else:
            os.environ['ELMO_AB_OLD_GATES'] = '1'
    packed = layer.packed_weights if change == 'gates' or new else None
    with paddle.no_grad():
        gates = paddle.matmul(x, w_input)
        h0, c0 = paddle.zeros([B, config.projection_dim]), paddle.zeros([B, config.cell_dim])
        start = time.perf_counter()
        h, c = kernels.recurrence(gates, layer.bias(), batch_sizes, h0, c0, w_hidden, layer.W_P,
                                  config.cell_clip, config.proj_clip, packed=packed)
        seconds = time.perf_counter() - start
    return seconds, (h.numpy(), c.numpy())


print(f'{change}: the recurrence of one original-size layer, {len(batch_sizes)} steps, {tokens} rows '
      f'(first step {B}), {threads} threads, {rounds} rounds')
first = {new: run(new)[1] for new in (False, True)}
seconds = {False: [], True: []}
for r in range(rounds):
    for new in ((False, True) if r % 2 == 0 else (True, False)):
        s, out = run(new)
        seconds[new].append(s)
        assert all(np.array_equal(a, b) for a, b in zip(out, first[new]))
    print(f'round {r} | old {1000 * seconds[False][-1]:7.1f} ms | new {1000 * seconds[True][-1]:7.1f} ms', flush=True)
old, new = statistics.median(seconds[False]), statistics.median(seconds[True])
paired = statistics.median(b / a for a, b in zip(seconds[False], seconds[True]))
print(f'median old {1000 * old:.1f} ms, new {1000 * new:.1f} ms: new / old = {new / old:.3f}; median of the '
      f'rounds\' new / old {paired:.3f}; fastest old {1000 * min(seconds[False]):.1f} ms, new '
      f'{1000 * min(seconds[True]):.1f} ms: {min(seconds[True]) / min(seconds[False]):.3f} (a load only adds time)')
print('identical outputs (old and new):', all(np.array_equal(a, b) for a, b in zip(first[False], first[True])))
