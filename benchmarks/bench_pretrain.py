"""Pretraining speed: training tokens/s and peak memory, next to the arithmetic floor.

    python benchmarks/bench_pretrain.py                       # small (128 and 32 rows) and original, 2 threads
    python benchmarks/bench_pretrain.py --configs small --steps 20
    python benchmarks/bench_pretrain.py --configs small --batch_sizes 32    # one shape only

Tokens/s counts forward-direction target tokens (batch x unroll per step), as bilm-tf's logs do.
Each configuration trains the step of pretraining_step.py (lm-corpus, a 150k-word vocabulary, sampled
softmax with 8192 negatives, Adagrad and global-norm clipping: the run_pretrain.py step) in its own
process (so the peak memory is its own).

The figures (shares.py, the same rule in every benchmark): a run is one configuration at one batch
size in its own process; the float32 [4096]^2 matmul rate is read just before and just after it
(in this process) and the run is divided by the higher reading. Each configuration and batch size
runs --repeats times, in rounds over them, and each share printed is the median of its runs, with N
and every run's value: a figure then depends neither on when the rate was read nor on one run.
  required floor  flop_counts.required_flops: what the step cannot do without, on the very batches
                  the run trains on (the char CNN over the windows that touch a char, once per
                  distinct token of the step's two streams, highway and projection per distinct
                  token, the LSTMs per position, the sampled softmax per target); "achieved/required"
                  stays below 100% unless the arithmetic itself is beaten
  floor           flop_counts.flops_breakdown: a fixed reference per token (the char CNN over all
                  50 char positions of every token), more than the step computes
  NumPy floor     the reference at NumPy's matmul rate (read once at the start; its BLAS knows the
                  processor): the distance from Paddle's products to what the hardware does
The small configuration runs at 128 rows (as `--preset small` and bilm-tf train it) and at 32 (products
of few rows run far below the [4096]^2 rate). The memory bandwidth (stream.py's copy and triad) is
measured at the start: the memory side of profile_pretrain.py's roofline floors. MKL_DEBUG_CPU_TYPE=0
in the environment measures Paddle's slow MKL path on AMD processors (runtime.py); ELMO_CPU_KERNELS=0
the same step with Paddle ops only (kernels.py).
--floor_only prints the two counts for the run's batches without training or timing anything
(--gflops RATE gives their floors at a recorded matmul rate).
"""
import argparse
import dataclasses
import json
import statistics
import time

import cpu_threads
import flag_checks
import flop_counts
import machine
import markdown_tables
import matmul_rates
import places
import pretraining_step
import shares
import stream
import worker_runs
from paddle_elmo.cli.runner import run
from paddle_elmo.model.config import ModelConfig
from paddle_elmo.fileio import InputError

CONFIGS = pretraining_step.CONFIGS
REQUIRED, REFERENCE = 'share of required floor', 'share of reference floor'


def required_per_token(name, batch_size, steps, warmup, config=None):
    """-> (reference FLOPs per token (flops_breakdown), required FLOPs per token over the timed
    batches (flop_counts.required_flops), distinct tokens per step)."""
    config = config or pretraining_step.model_and_recipe(name)[0]
    timed = pretraining_step.step_batches(batch_size, steps, warmup)[warmup:]
    need = flop_counts.required_flops(config, [flop_counts.lm_step_char_ids(b) for b in timed], training=True,
                                      n_negative_samples=pretraining_step.NEGATIVES)
    tokens = len(timed) * batch_size * pretraining_step.UNROLL  # forward targets, as tokens/s counts them
    reference = flop_counts.flops_breakdown(config, training=True,
                                            n_negative_samples=pretraining_step.NEGATIVES)['total']
    return reference, need['total'] / tokens, need['distinct'] / len(timed)


def worker(name, batch_size, steps, warmup):
    """Train `steps` timed steps of configuration `name` at `batch_size` rows; print one JSON line."""
    from paddle_elmo.train.lm import train_step
    model, optimizer, batches, config, *_ = pretraining_step.build(name, batch_size)
    times = []
    for step in range(warmup + steps):
        batch = next(batches)
        t0 = time.perf_counter()
        out, _ = train_step(model, optimizer, batch)
        float(out['loss'])
        times.append(time.perf_counter() - t0)
    step_s = statistics.median(times[warmup:])
    print(json.dumps({'step_s': step_s, 'tokens_per_s': batch_size * pretraining_step.UNROLL / step_s,
                      'peak_mb': machine.peak_rss_mb(), 'config': dataclasses.asdict(config)}))


def timed_steps(name, steps):
    """The original size takes a few steps only (~minutes each)."""
    return steps if name != 'original' else min(steps, 3)


def run_shape(a, name, batch_size, bracket):
    """One run of configuration `name` at `batch_size` rows in its own process, bracketed by matmul
    readings -> the worker's result with its 'readings' (start, end)."""
    argv = [__file__, '--worker', name, '--batch_sizes', str(batch_size), '--steps', str(timed_steps(name, a.steps)),
            '--warmup', str(a.warmup), '--threads', str(a.threads)]
    r, readings = bracket.run(lambda: worker_runs.run_worker(argv, env=cpu_threads.thread_env(a.threads)))
    return dict(r, readings=readings)


def shape_figures(runs, reference, required):
    """A shape's runs (their tokens/s and readings) and FLOPs per token -> its figures."""
    readings = [r['readings'] for r in runs]
    share = lambda flops: [shares.share_of_floor(flops, 1 / r['tokens_per_s'], r['readings']) for r in runs]  # noqa
    return [shares.rate_figure(REQUIRED, share(required), readings),
            shares.rate_figure(REFERENCE, share(reference), readings)]


def shape_row(name, batch_size, steps, runs, figures, reference, required, numpy_gflops):
    """The table's row of one shape: medians over its runs (peak memory: the largest)."""
    tps = statistics.median(r['tokens_per_s'] for r in runs)
    numpy_floor = numpy_gflops * 1e9 / reference
    floor = statistics.median(shares.reference_rate(r['readings']) * 1e9 / reference for r in runs)
    return {'config': name, 'batch': batch_size, 'steps': steps, 'runs': len(runs),
            's/step': round(statistics.median(r['step_s'] for r in runs), 3), 'tokens/s': tps,
            'peak MB': max(r['peak_mb'] for r in runs), 'GFLOP/token': reference / 1e9,
            'GFLOP/s': tps * reference / 1e9, 'floor tokens/s': floor, 'achieved/floor': f'{figures[1].median:.0%}',
            'NumPy floor tokens/s': numpy_floor, 'achieved/NumPy floor': f'{tps / numpy_floor:.0%}',
            'required GFLOP/token': required / 1e9, 'achieved/required': f'{figures[0].median:.0%}'}


def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--configs', default='small,original', help='comma-separated: ' + ', '.join(CONFIGS))
    p.add_argument('--batch_sizes', default='',
                   help='comma-separated rows per step; default: each configuration\'s own (small: 128,32; original: 128)')
    p.add_argument('--steps', type=int, default=10, help='timed steps per run (median reported)')
    p.add_argument('--warmup', type=int, default=2, help='untimed steps first')
    p.add_argument('--threads', type=int, default=2, help='CPU threads')
    shares.add_flags(p)
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
    flag_checks.check_positive(a, ('repeats',))
    shapes = [(name, b) for name in a.configs.split(',') for b in pretraining_step.batch_sizes(name, a.batch_sizes)]
    if a.floor_only:
        return print_floors(a, shapes)
    cpu_threads.set_threads(a.threads)
    if a.worker:
        return worker(a.worker, int(a.batch_sizes), a.steps, a.warmup)
    info = machine.machine_info()
    machine.print_machine_info(info)
    places.corpus_vocabulary(pretraining_step.VOCAB_SIZE)  # build outside the timed workers
    numpy_gflops = matmul_rates.measure_numpy_gflops()
    bandwidth = stream.measure_stream_gbs(a.threads)
    print(f'float32 matmul rate: NumPy {numpy_gflops:.1f} GFLOP/s ({a.threads} threads); Paddle\'s is read '
          f'before and after each run')
    print(stream.describe(bandwidth), flush=True)
    bracket = shares.Bracket(matmul_rates.measure_matmul_gflops)
    runs = {shape: [] for shape in shapes}
    for round_ in range(a.repeats):
        for name, batch_size in shapes:
            r = run_shape(a, name, batch_size, bracket)
            runs[name, batch_size].append(r)
            print(f'{name}, {batch_size} rows, run {round_ + 1}/{a.repeats}: {r["tokens_per_s"]:.0f} tokens/s; '
                  f'matmul {r["readings"][0]:.1f} GFLOP/s before, {r["readings"][1]:.1f} after; '
                  f'load average {machine.load_average()}', flush=True)
    rows, figures = [], {}
    for (name, batch_size), shape_runs in runs.items():
        steps = timed_steps(name, a.steps)
        reference, required, _ = required_per_token(name, batch_size, steps, a.warmup,
                                                    ModelConfig(**shape_runs[0]['config']))
        label = f'{name}, {batch_size} rows'
        figures[label] = shape_figures(shape_runs, reference, required)
        rows.append(shape_row(name, batch_size, steps, shape_runs, figures[label], reference, required, numpy_gflops))
    markdown_tables.print_table(rows)
    shares.print_figures(figures)
    if a.json_out:
        shares.write_json(a.json_out, figures, info, threads=a.threads, steps=a.steps, warmup=a.warmup,
                          numpy_gflops=numpy_gflops, stream_gbs=bandwidth, rows=rows,
                          runs={f'{n}, {b} rows': r for (n, b), r in runs.items()})


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
    markdown_tables.print_table(rows)


if __name__ == '__main__':
    run(main)
