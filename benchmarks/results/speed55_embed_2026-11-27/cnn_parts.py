"""Where the char CNN's time goes in an embedding batch (issue 55 item 2): the original size's
CharEncoder.cnn on the distinct tokens of batches of 64 rt-polarity sentences, chunked as the
embedder chunks them, each step timed alone (median of repeats): the windows (gather + embedding
lookup), each filter's product, each filter's max over positions, and the concat + bias + relu.

    taskset -c 0 python benchmarks/results/speed55_embed_2026-11-27/cnn_parts.py [N] [THREADS]
"""
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, 'benchmarks')
import bench_embed, common  # noqa: E402

n, threads = (int(v) for v in (sys.argv[1:] + ['128', '1'][len(sys.argv) - 1:])[:2])
spec = dict(threads=threads, device='cpu', seed=0, config='original', batch_size=64, cache='off')
sentences, _ = bench_embed.read_sentences(bench_embed.DEFAULT_DATA, n)
bilm, embedder, _ = bench_embed.build_embedder(spec)
import paddle  # noqa: E402
from paddle_elmo.model import token_layer as bilm_module, kernels, layer_math  # noqa: E402
from paddle_elmo.model.packing import distinct_tokens, length_chunks  # noqa: E402

enc = bilm.char_encoder
ops = bilm_module.EagerOps()


def timed(fn, repeats=7):
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times)


totals = {}
batches = bench_embed.embedder_batches(sentences, 64, False)
with paddle.no_grad():
    for char_ids in batches:
        ids = char_ids.reshape(-1, char_ids.shape[-1])
        distinct, used, _ = distinct_tokens(ids, enc.pad_id)
        for a, b in length_chunks(used, 1024):
            chunk = paddle.to_tensor(distinct[a:b])
            u = ops.used_chars(chunk, enc.pad_id, enc.max_chars)
            windows = lambda: list(ops.char_windows(chunk, u, enc.widths, enc.max_chars, enc.char_embed))
            add = lambda k, v: totals.__setitem__(k, totals.get(k, 0.0) + v)
            add('chunks', 1)
            add('tokens', b - a)
            add('whole cnn', timed(lambda: enc.cnn(chunk)))
            add('windows (gather + lookup)', timed(windows))
            ws = windows()
            pooled = []
            for k, (w, weight) in enumerate(zip(ws, enc.conv_weights)):
                product = paddle.matmul(w, weight)
                add(f'filter {k} product (K {w.shape[2]}, n {weight.shape[1]})', timed(lambda: paddle.matmul(w, weight)))
                add(f'filter {k} max', timed(lambda: kernels.max_over_positions(product)))
                pooled.append(kernels.max_over_positions(product))
            bias = paddle.concat(list(enc.conv_biases))
            add('concat + bias + relu', timed(lambda: enc.activation(kernels.add_bias(paddle.concat(pooled, axis=-1), bias))))
            add('bias concat', timed(lambda: paddle.concat(list(enc.conv_biases))))
for k, v in totals.items():
    print(f'{k:60s} {v / len(batches):8.2f}' + (' ms/batch' if k not in ('chunks', 'tokens') else ' /batch'))
