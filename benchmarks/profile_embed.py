"""Where embedding time goes: ms per batch and share for each part of ELMoEmbedder's run, beside
the time its arithmetic needs at the machine's matmul rate.

    python benchmarks/profile_embed.py                          # the original size, 600 sentences, batches of 64 and 256
    python benchmarks/profile_embed.py --configs original,small --n_sentences 1000 --batch_sizes 64

The run is bench_embed.py's (random weights, rt-polarity's first sentences, batches of 64 and 256
or --batch_sizes, stateless, the char-CNN cache off), taken apart with timers around the library's
own calls:
  token layer     BiLM.token_embedding: the char CNN (CharEncoder.cnn: with the kernels one call per
                  chunk of distinct tokens, else per chunk of similar lengths) and the highway and
                  projection once per distinct token of a batch
  LSTMs           BiLM.contextual: both stacks, of which "recurrence" is the kernel's call
                  (kernels.streamed_recurrence: the input-to-gate products a block of steps at a
                  time, then per step h x W_hidden, m x W_proj and the gates) and the rest the
                  packing gathers and the states; with the kernels off, the recurrence's loop alone,
                  the input-to-gate products then in the rest
  other           the embedder's batching, char ids, the layers' concatenation and the copy out
"floor ms" is the part's matrix-product FLOPs (flop_counts.required_flops on the very batches) at the
higher of the matmul rates read in the worker just before and just after its timed pass; "of floor"
= floor ms / ms. --ops N adds Paddle's profiler's N operators with the most CPU time (a second pass).

The roofline columns (benchmarks/roofline.py, which documents how FLOPs and bytes are counted):
just before and just after the timed pass the worker measures the stream bandwidth (stream.py's
triad) and times each of the batches' product shapes alone, the faster of the two kept per shape
(rows rounded up to roofline.ROW_GRID: the recurrence's rows fall as sentences end), as the code
runs them: the recurrence's per-step products and the char CNN's, where the kernels link MKL, as
MKL's packed products, the kernels' way (each run's line says which, and both timings' floors);
"at shape ms" is the part's products at those rates, "memory ms" its bytes (GFLOP and MB per batch
beside them) at the bandwidth, "roofline ms" the larger, "of roofline" = roofline ms / ms; the
batch's is the sum of its parts'. --shape_seconds sets how long each shape is timed (0: no roofline columns).

The figures (shares.py, the rule of every benchmark): each configuration and batch size runs
--repeats times, each run a worker process of its own, in rounds over them; the batch's share of its
required floor (each run against the higher of its two matmul readings) and of its roofline floor
(measured in the run's own worker) are each printed as the median of the runs, with N and every
value. The table is the run at the median share of the required floor.
"""
import argparse
import collections
import json
import time

import bench_embed
import cpu_threads
import flag_checks
import flop_counts
import machine
import matmul_rates
import profiling
import roofline
import shares
import stream
import worker_runs
from paddle_elmo.cli.runner import run

CONFIGS = bench_embed.CONFIGS


def instrument(bilm, seconds):
    """Time the library's calls in place -> nothing (seconds accumulates per part)."""
    from paddle_elmo.model import kernels, lstm

    timed = lambda owner, method, part: profiling.time_calls(owner, method, seconds, part)
    timed(bilm, 'token_embedding', 'token layer')
    timed(bilm.char_encoder, 'cnn', 'token layer: char CNN')
    timed(bilm, 'contextual', 'LSTMs')
    timed(lstm.kernels, 'recurrence', 'LSTMs: recurrence')  # kernels off
    timed(lstm.kernels, 'streamed_recurrence', 'LSTMs: recurrence')  # on: with the input products
    assert lstm.kernels is kernels


def worker(spec):
    """Embed the sentences once timed by part (and once under Paddle's profiler with --ops)."""
    sentences, _ = bench_embed.read_sentences(spec['data_file'], spec['n_sentences'])
    bilm, embedder, _ = bench_embed.build_embedder(spec)
    char_ids = bench_embed.embedder_batches(sentences, spec['batch_size'], False)
    from paddle_elmo.model import kernels
    streamed = kernels.kernel() is not None  # the LSTM kernel makes the input products (streamed_recurrence)
    parts = roofline.embedding_parts(bilm.config, char_ids, stream.last_level_cache_bytes(), streamed)
    time_floor = lambda: roofline.time_floor(parts, spec['threads'], spec['shape_seconds'])
    floor_before = time_floor() if spec['shape_seconds'] > 0 else None
    rate_before = matmul_rates.measure_matmul_gflops()
    seconds = collections.defaultdict(float)
    instrument(bilm, seconds)
    start = time.perf_counter()
    for _ in embedder.iter_embeddings(sentences):
        pass
    seconds['all'] = time.perf_counter() - start
    rate_after = matmul_rates.measure_matmul_gflops()
    bandwidth, roof, timed, floors = None, None, None, None
    if floor_before:
        bandwidth, roof, timed, floors = roofline.measure(parts, [floor_before, time_floor()])
    batches = -(-len(sentences) // spec['batch_size'])
    ms = {k: 1000 * v / batches for k, v in seconds.items()}  # before operator_table's pass adds to them
    ops = profiling.operator_table(lambda: [None for _ in embedder.iter_embeddings(sentences)], batches,
                                spec['ops'], unit='batch') if spec['ops'] else []
    need = flop_counts.required_flops(bilm.config, char_ids)
    return {'ms': ms, 'batches': batches, 'batch_size': spec['batch_size'], 'stream': bandwidth, 'roofline': roof,
            'roofline timings': floors, 'streamed': streamed,
            'recurrence timed': timed, 'tokens': sum(len(s) for s in sentences),
            'flops': {k: v / batches for k, v in need.items() if k in ('char_cnn', 'highway', 'projection', 'lstm',
                                                                       'total')},
            'rates': [rate_before, rate_after], 'ops': ops}


def table(name, r):
    ms, flops = r['ms'], r['flops']
    rate = shares.reference_rate(r['rates']) * 1e9
    floor = lambda *parts: 1000 * sum(flops[p] for p in parts) / rate
    # The recurrence's share of the LSTM FLOPs: per layer and direction 2P x 4D (previous h) + 2D x P
    # (projection) of the 2P x 4D + 2P x 4D + 2D x P (flop_counts.required_flops' lstm).
    from paddle_elmo.model.config import ModelConfig
    c = ModelConfig(**CONFIGS[name])
    # With the kernel, all of them are its (it makes the input products too).
    recurrent = 1.0 if r['streamed'] else (2 * c.projection_dim * 4 * c.cell_dim + 2 * c.cell_dim * c.projection_dim) / (
        4 * c.projection_dim * 4 * c.cell_dim + 2 * c.cell_dim * c.projection_dim)
    kernel, rest = roofline.EMBEDDING_PARTS[2:]
    rows = [('token layer: char CNN', ms['token layer: char CNN'], floor('char_cnn')),
            ('token layer: highway, projection, de-duplication', ms['token layer'] - ms['token layer: char CNN'],
             floor('highway', 'projection')),
            (kernel, ms['LSTMs: recurrence'], floor('lstm') * recurrent),
            (rest, ms['LSTMs'] - ms['LSTMs: recurrence'], floor('lstm') * (1 - recurrent) or None),
            ('other (batching, char ids, layers out)', ms['all'] - ms['token layer'] - ms['LSTMs'], None)]
    roof, label = r['roofline'], f"{name}, batches of {r['batch_size']}"
    out = [{'config': label, 'part': part, 'ms/batch': t, 'share': f'{t / ms["all"]:.0%}',
            'floor ms': '' if f is None else round(f, 1), 'of floor': '' if f is None else f'{f / t:.0%}',
            **(roofline.columns(roof.get(part), t) if roof else {})}
           for part, t, f in rows]
    out.append({'config': label, 'part': '**batch**', 'ms/batch': ms['all'], 'share': '100%',
                'floor ms': round(floor('total'), 1), 'of floor': f'{floor("total") / ms["all"]:.0%}',
                **(roofline.columns(roofline.summed(roof.values()), ms['all']) if roof else {})})
    return out


def run_shape(a, shape, round_):
    """One profile run of `shape` (configuration, sentences per batch) in its own process; Paddle's
    profiler (--ops) in the first round only -> the worker's result."""
    name, batch_size = shape
    spec = dict(config=name, n_sentences=a.n_sentences, batch_size=batch_size, threads=a.threads,
                data_file=a.data_file, ops=a.ops if round_ == 0 else 0, device='cpu', seed=0, cache='off',
                shape_seconds=a.shape_seconds)
    r = worker_runs.run_worker([__file__, '--worker', json.dumps(spec)], env=cpu_threads.thread_env(a.threads))
    print(f'{name}, batches of {batch_size}, run {round_ + 1}/{a.repeats}: '
          f'{r["tokens"] / (r["ms"]["all"] * r["batches"] / 1000):.0f} tokens/s; matmul rate {r["rates"][0]:.1f} '
          f'GFLOP/s before, {r["rates"][1]:.1f} after' + roofline.described(r),
          flush=True)
    return r


def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--configs', default='original', help='comma-separated: ' + ', '.join(CONFIGS))
    p.add_argument('--n_sentences', type=int, default=600, help='embed the first N lines of --data_file')
    p.add_argument('--batch_sizes', default='', help='comma-separated sentences per batch (default: 64,256)')
    p.add_argument('--threads', type=int, default=2, help='CPU threads')
    p.add_argument('--data_file', default=bench_embed.DEFAULT_DATA, help='sentences, one per line, whitespace tokens')
    p.add_argument('--ops', type=int, default=0,
                   help='also list the N operators with the most CPU time (first round only; 0: none)')
    p.add_argument('--shape_seconds', type=float, default=0.2,
                   help='time each product shape of the roofline for this long (0: no roofline columns)')
    shares.add_flags(p, json_aliases=('--out',))
    p.add_argument('--worker', help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.worker:
        return print(json.dumps(worker(json.loads(a.worker))))
    flag_checks.check_positive(a, ('repeats',))
    cpu_threads.set_threads(a.threads)
    info = machine.machine_info()
    machine.print_machine_info(info)
    shapes = [(name, b) for name in bench_embed.choices(a.configs, list(CONFIGS), '--configs')
              for b in bench_embed.batch_sizes(a.batch_sizes)]
    profiling.profile_shapes(a, shapes, run_shape, lambda shape: f'{shape[0]}, batches of {shape[1]}', 'all',
                             lambda shape, r: table(shape[0], r), info)


if __name__ == '__main__':
    run(main)
