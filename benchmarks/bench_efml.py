"""ELMoForManyLangs' fixture model (../shared/fixtures/efml-tiny): one vector per sentence whatever
the batch. Prints JSON: how far apart a sentence's layers are when it is embedded stateless in
batches of 1, 2, 3 and 8 sentences in 3 shuffled orders (against all in one batch), how far ours
are from EFML's own first call (absolute and per layer's largest value), and how far EFML's own
second call is from its first (its carried state).

    python benchmarks/bench_efml.py > benchmarks/results/efml_2026-11-28/stateless.json
"""
import json
import os
import random
import sys

import h5py
import numpy as np

import places

FIXTURE = os.path.join(places.SHARED, 'fixtures', 'efml-tiny')


def references(name, n):
    with h5py.File(os.path.join(FIXTURE, name), 'r') as f:
        return [f[str(i)][...] for i in range(n)]


def main():
    sys.modules['torch'] = None  # measured where torch cannot be imported
    from paddle_elmo.use.embedder import ELMoEmbedder
    with open(os.path.join(FIXTURE, 'sentences.json'), encoding='utf-8') as f:
        sentences = json.load(f)
    embedder = ELMoEmbedder(os.path.join(FIXTURE, 'model'))
    one_batch = embedder.encode(sentences)
    batchings = 0
    apart = 0.0
    for batch_size in (1, 2, 3, 8):
        for seed in range(3):
            order = list(range(len(sentences)))
            random.Random(seed).shuffle(order)
            out = embedder.encode([sentences[i] for i in order], batch_size=batch_size)
            apart = max([apart] + [float(np.abs(out[j] - one_batch[i]).max()) for j, i in enumerate(order)])
            batchings += 1
    first = references('reference.hdf5', len(sentences))
    second = references('reference_second_call.hdf5', len(sentences))
    print(json.dumps({
        'sentences': len(sentences), 'batchings': batchings,
        'stateless_max_abs_apart_across_batchings': apart,
        'ours_vs_efml_first_call_max_abs': max(float(np.abs(a - b).max()) for a, b in zip(one_batch, first)),
        'ours_vs_efml_first_call_max_of_layer_scale': max(float(np.abs(a[k] - b[k]).max() / np.abs(b[k]).max())
                                                          for a, b in zip(one_batch, first) for k in range(len(b))),
        'efml_second_vs_first_call_max_abs': max(float(np.abs(a - b).max()) for a, b in zip(first, second)),
    }, indent=1))


if __name__ == '__main__':
    main()
