"""Pretraining speed: training tokens/s and peak memory, next to the arithmetic floor.

    python benchmarks/bench_pretrain.py                       # small (128 and 32 rows) and original, 2 threads
    python benchmarks/bench_pretrain.py --configs small --steps 20
    python benchmarks/bench_pretrain.py --configs small --batch_sizes 32    # one shape only

Tokens/s counts forward-direction target tokens (batch x unroll per step), as bilm-tf's logs do.
Each configuration trains on ../shared/data/lm-corpus/train.txt with a 150k-word vocabulary built
from it (cached in the toolkit's cache directory), sampled softmax with 8192 negatives, Adagrad and
global-norm clipping, exactly the run_pretrain.py step, in its own process (so the peak memory is
its own). The floor is the configuration's training FLOPs per token (benchmarks/common.py:
flops_breakdown, forward + backward = 3x the forward products) at the float32 matmul rate
measured at the start of the run; the ratio achieved/floor is the figure to compare across machines.
Each configuration runs at the batch sizes of --batch_sizes, by default its own (BATCH_SIZES): the
small configuration at 128 rows, as `--preset small` and bilm-tf train it, and at 32, the rows this
benchmark ran before (products of few rows run far below the [4096]^2 rate). The machine's memory
bandwidth (stream.py's copy and triad) is measured beside the matmul rate, in this process: the
memory side of profile_pretrain.py's roofline floors.
A second floor uses NumPy's matmul rate on the same machine (its BLAS knows the processor): the
distance from Paddle's products to what the hardware does. MKL_DEBUG_CPU_TYPE=0 in the environment
measures Paddle's slow MKL path on AMD processors (runtime.py).

That floor counts a fixed reference per token (the char CNN over all 50 char positions of every
token), more than the step computes. The required floor (common.required_flops) counts what the
step cannot do without, on the very batches the run trains on: the char CNN over the windows that
touch a char, once per distinct token of the step's two streams, the highway and projection per
distinct token, the LSTMs per position, the sampled softmax per target; "achieved/required" is
tokens/s over the rate / that count, and stays below 100% unless the arithmetic itself is beaten.
--floor_only prints the two counts for the run's batches without training or timing anything
(--gflops RATE gives their floors at a recorded matmul rate).
"""
import argparse
import dataclasses
import json
import os
import time

import common
import stream
from paddle_elmo.cli.runner import run
from paddle_elmo.model.config import ModelConfig
from paddle_elmo.fileio import InputError

CONFIGS = {
    # LSTM 1024 -> 128, the original char CNN, 1 highway (as bench_embed.py's small)
    'small': dict(model=dict(projection_dim=128, cell_dim=1024, num_highways=1)),
    # the paper's model; a few steps only
    'original': dict(model=dict(projection_dim=512, cell_dim=4096, num_highways=2)),
}
# Rows per step (each direction) measured by default: the presets' own (recipe.PRESETS: 128 for
# both), and for small also the 32 this benchmark used until 2026-11-27.
BATCH_SIZES = {'small': (128, 32), 'original': (128,)}
VOCAB_SIZE, NEGATIVES, UNROLL = 150_000, 8192, 20
TRAIN = os.path.join(common.LM_CORPUS, 'train.txt')
# ELMO_CPU_KERNELS=0 in the environment measures the same step with Paddle ops only (kernels.py).


def batch_sizes(name, given):
    """--batch_sizes (comma-separated; '' = the configuration's own, BATCH_SIZES) -> [int]."""
    return common.positive_ints(given, '--batch_sizes') if given else list(BATCH_SIZES[name])


def step_batches(batch_size, steps, warmup):
    """The LMStream batches a worker trains on (the same stream, seed and order), warm-up first."""
    from paddle_elmo.text.batches import LMStream
    from paddle_elmo.text.vocabulary import Vocabulary
    vocab = Vocabulary(common.corpus_vocabulary(VOCAB_SIZE))
    batches = iter(LMStream(TRAIN, vocab, batch_size, UNROLL, seed=0))
    return [next(batches) for _ in range(warmup + steps)]


def required_per_token(name, batch_size, steps, warmup, config=None):
    """-> (reference FLOPs per token (flops_breakdown), required FLOPs per token over the timed
    batches (common.required_flops), distinct tokens per step)."""
    config = config or ModelConfig(**CONFIGS[name]['model'], dropout=0.1)
    timed = step_batches(batch_size, steps, warmup)[warmup:]
    need = common.required_flops(config, [common.lm_step_char_ids(b) for b in timed], training=True,
                                 n_negative_samples=NEGATIVES)
    tokens = len(timed) * batch_size * UNROLL  # forward targets, as tokens/s counts them
    reference = common.flops_breakdown(config, training=True, n_negative_samples=NEGATIVES)['total']
    return reference, need['total'] / tokens, need['distinct'] / len(timed)


def worker(name, batch_size, steps, warmup):
    """Train `steps` timed steps of configuration `name` at `batch_size` rows; print one JSON line."""
    import numpy as np
    from paddle_elmo.text.batches import LMStream
    from paddle_elmo.text.vocabulary import Vocabulary
    from paddle_elmo.train.lm import LanguageModel, train_step
    from paddle_elmo.train.optimizers import Adagrad
    import paddle
    from paddle_elmo.runtime import use_device
    cfg = CONFIGS[name]
    use_device('cpu')  # as run_pretrain.py (glibc keeps freed memory)
    paddle.seed(0)
    vocab = Vocabulary(common.corpus_vocabulary(VOCAB_SIZE))
    config = ModelConfig(**cfg['model'], dropout=0.1)
    model = LanguageModel(config, vocab.size, NEGATIVES)
    optimizer = Adagrad(model, lr=0.2, max_grad_norm=10.0)
    batches = iter(LMStream(TRAIN, vocab, batch_size, UNROLL, seed=0))
    model.train()
    times = []
    for step in range(warmup + steps):
        batch = next(batches)
        t0 = time.perf_counter()
        out, _ = train_step(model, optimizer, batch)
        float(out['loss'])
        times.append(time.perf_counter() - t0)
    step_s = float(np.median(times[warmup:]))
    print(json.dumps({'step_s': step_s, 'tokens_per_s': batch_size * UNROLL / step_s,
                      'peak_mb': common.peak_rss_mb(), 'config': dataclasses.asdict(config)}))


def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--configs', default='small,original', help='comma-separated: ' + ', '.join(CONFIGS))
    p.add_argument('--batch_sizes', default='',
                   help='comma-separated rows per step; default: each configuration\'s own (small: 128,32; original: 128)')
    p.add_argument('--steps', type=int, default=10, help='timed steps per configuration (median reported)')
    p.add_argument('--warmup', type=int, default=2, help='untimed steps first')
    p.add_argument('--threads', type=int, default=2, help='CPU threads')
    p.add_argument('--floor_only', action='store_true',
                   help='print the reference and required FLOPs per token of the run\'s batches and exit '
                        '(no training, no timing)')
    p.add_argument('--gflops', type=float, default=0.0,
                   help='with --floor_only: a recorded matmul rate (GFLOP/s) to turn the counts into floors; 0 = none')
    p.add_argument('--worker', help=argparse.SUPPRESS)
    a = p.parse_args()
    unknown = [n for n in a.configs.split(',') if n not in CONFIGS]
    if unknown:
        raise InputError(f'--configs: unknown {", ".join(unknown)}; expected {", ".join(CONFIGS)}')
    shapes = [(name, b) for name in a.configs.split(',') for b in batch_sizes(name, a.batch_sizes)]
    if a.floor_only:
        return print_floors(a, shapes)
    common.set_threads(a.threads)
    if a.worker:
        return worker(a.worker, int(a.batch_sizes), a.steps, a.warmup)
    common.print_machine_info()
    common.corpus_vocabulary(VOCAB_SIZE)  # build outside the timed workers
    gflops, numpy_gflops = common.measure_matmul_gflops(), common.measure_numpy_gflops()
    print(f'float32 matmul rate: Paddle {gflops:.1f} GFLOP/s, NumPy {numpy_gflops:.1f} GFLOP/s ({a.threads} threads)')
    print(stream.describe(stream.measure_stream_gbs(a.threads)), flush=True)
    rows = []
    for name, batch_size in shapes:
        steps = timed_steps(name, a.steps)
        r = common.run_worker([__file__, '--worker', name, '--batch_sizes', str(batch_size), '--steps', str(steps),
                               '--warmup', str(a.warmup), '--threads', str(a.threads)],
                              env=common.thread_env(a.threads))
        parts = common.flops_breakdown(ModelConfig(**r['config']), training=True, n_negative_samples=NEGATIVES)
        floor, numpy_floor = gflops * 1e9 / parts['total'], numpy_gflops * 1e9 / parts['total']
        _, required, _ = required_per_token(name, batch_size, steps, a.warmup, ModelConfig(**r['config']))
        rows.append({'config': name, 'batch': batch_size, 'steps': steps,
                     's/step': round(r['step_s'], 3), 'tokens/s': r['tokens_per_s'],
                     'peak MB': r['peak_mb'], 'GFLOP/token': parts['total'] / 1e9,
                     'GFLOP/s': r['tokens_per_s'] * parts['total'] / 1e9,
                     'floor tokens/s': floor, 'achieved/floor': f"{r['tokens_per_s'] / floor:.0%}",
                     'NumPy floor tokens/s': numpy_floor,
                     'achieved/NumPy floor': f"{r['tokens_per_s'] / numpy_floor:.0%}",
                     'required GFLOP/token': required / 1e9,
                     'achieved/required': f"{r['tokens_per_s'] * required / (gflops * 1e9):.0%}"})
    common.print_table(rows)
    # The machine's speed drifts (this 2-core VM: 130-240 GFLOP/s within minutes): a rate far
    # from the first one means the ratios above are off by as much.
    print(f'float32 matmul rate at the end: {common.measure_matmul_gflops():.1f} GFLOP/s; '
          f'load average {common.load_average()}')


def timed_steps(name, steps):
    """The original size takes a few steps only (~minutes each)."""
    return steps if name != 'original' else min(steps, 3)


def print_floors(a, shapes):
    """--floor_only: the two FLOP counts per token of each configuration and batch size on the run's batches."""
    rows = []
    for name, batch_size in shapes:
        steps = timed_steps(name, a.steps)
        reference, required, distinct = required_per_token(name, batch_size, steps, a.warmup)
        row = {'config': name, 'batch': batch_size, 'timed steps': steps,
               'distinct tokens/step': distinct, 'reference GFLOP/token': reference / 1e9,
               'required GFLOP/token': required / 1e9, 'required/reference': f'{required / reference:.0%}'}
        if a.gflops:
            row.update({'floor tokens/s': a.gflops * 1e9 / reference,
                        'required floor tokens/s': a.gflops * 1e9 / required})
        rows.append(row)
    common.print_table(rows)


if __name__ == '__main__':
    run(main)
