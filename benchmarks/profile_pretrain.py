"""Where a pretraining step's time goes: ms per step and share for each part, beside the time its
arithmetic needs at the machine's matmul rate.

    python benchmarks/profile_pretrain.py                       # small (128 and 32 rows) and bundled, 2 threads
    python benchmarks/profile_pretrain.py --configs small --steps 20 --ops 15
    python benchmarks/profile_pretrain.py --configs small --batch_sizes 32 --steps 3 --shape_seconds 0.05  # a quick look

The step is pretraining_step.py's, as bench_pretrain.py times it (the same configurations, batch sizes, stream, seed, sampled
softmax and Adagrad; `bundled` is the bundled model's configuration and recipe: the budget preset,
Adam, 64 rows) taken apart with timers around the library's own calls:
  data            LMStream's next batch (NumPy; drawn before the timed steps, its time added to them)
  token layer     BiLM.token_embedding forward (char CNN, highway, projection once per distinct
                  token of the step's two streams) and its backward
  LSTMs           both LstmStack forwards and their backward (the recurrence kernels and the
                  input-to-gate products)
  softmax         the candidate sampler, the rows of W and b the step reads, the sampled-softmax
                  logits and loss, and their backward
  optimizer       global norm, clipping and the update (dense and the table rows), clear_grad
  other           what the step runs outside these (dropout, the loss's sum, Python between calls)
The backward is split where gradients arrive: a hook on each stack's top output fires when the
softmax's backward is done with it, a hook on the token layer's output when both stacks' are done.
Paddle's engine may interleave the two directions; the split is then approximate, the total exact.

"floor ms" is the part's matrix-product FLOPs on the very batches timed (flop_counts.required_flops,
the count of bench_pretrain.py's "required floor"; forward + backward = 3x the forward) at the
higher of the float32 matmul rates read in the worker just before and just after its timed steps;
"of floor" = floor ms / ms. Parts with no product (data, optimizer) have no such floor.

The roofline columns (benchmarks/roofline.py, which documents how FLOPs and bytes are counted):
just before and just after the timed steps the worker measures the stream bandwidth (stream.py's
triad) and times each of the step's product shapes alone, the faster of the two kept per shape, as
the code runs them: the recurrence's per-step products (forward, and backward's through the
transposed weights), the char CNN's and the softmax's logits, where the kernels link MKL, as MKL's
packed products, the kernels' way (each run's line says which, and both timings' floors); "at shape
ms" is the part's products at those rates, "memory ms" its bytes (GFLOP and MB per step beside
them) at the bandwidth, "roofline ms" the larger, and "of roofline" = roofline ms / ms. The
optimizer has a roofline floor (its memory traffic); the step's is the sum of its parts'; a line
gives the optimizer's bandwidth (its MB over its ms) beside the triad's. --shape_seconds sets how long each shape is timed (0: no roofline).
--ops N adds Paddle's profiler: the N operators with the most CPU time per step (a second pass
over as many steps, profiled; the profiler adds its own overhead; ms and calls are per step).

The figures (shares.py, the rule of every benchmark): each configuration and batch size runs
--repeats times, each run a worker process of its own, in rounds over them; the step's share of its
required floor (each run against the higher of its two matmul readings) and of its roofline floor
(measured in the run's own worker) are each printed as the median of the runs, with N and every
value. The table is the run at the median share of the required floor.
"""
import argparse
import collections
import json
import time

import cpu_threads
import flag_checks
import flop_counts
import machine
import matmul_rates
import places
import pretraining_step
import profiling
import roofline
import shares
import stream
import worker_runs
from paddle_elmo.cli.runner import run
from paddle_elmo.fileio import InputError

CONFIGS = [*pretraining_step.CONFIGS, pretraining_step.BUNDLED]
REQUIRED, ROOFLINE = 'share of required floor', 'share of roofline floor'


class Timers:
    """Accumulated seconds per part; `wrap` times a bound method in place."""

    def __init__(self):
        self.seconds = collections.defaultdict(float)
        self.marks = {}

    def wrap(self, owner, method, part):
        return profiling.time_calls(owner, method, self.seconds, part)

    def mark_on_grad(self, tensor, name):
        """Record when the backward reaches `tensor` (the latest time over calls of one backward)."""
        def hook(grad):
            self.marks[name] = time.perf_counter()
            return grad
        tensor.register_hook(hook)


def instrument(model, timers):
    """Time the library's calls in place; mark where the backward reaches the token layer and the tops."""
    bilm = model.bilm
    token_embedding = bilm.token_embedding

    def token_layer(*args, **kwargs):
        t0 = time.perf_counter()
        x = token_embedding(*args, **kwargs)
        timers.seconds['forward: token layer'] += time.perf_counter() - t0
        timers.mark_on_grad(x, 'token layer')
        return x
    bilm.token_embedding = token_layer
    for direction, stack in enumerate((bilm.forward_stack, bilm.backward_stack)):
        forward = stack.forward

        def lstm(*args, forward=forward, direction=direction, **kwargs):
            t0 = time.perf_counter()
            outputs, finals = forward(*args, **kwargs)
            timers.seconds['forward: LSTMs'] += time.perf_counter() - t0
            timers.mark_on_grad(outputs[-1], f'top {direction}')
            return outputs, finals
        stack.forward = lstm
    timers.wrap(model.sampler, 'sample', 'forward: softmax')
    timers.wrap(model.softmax, 'select_rows', 'forward: softmax')
    timers.wrap(model.softmax, 'sampled_loss', 'forward: softmax')


def timed_step(model, optimizer, batch, timers):
    """lm.train_step, timed part by part (its phases' ends, and where the backward reaches each part)
    -> (the loss, the rows of the softmax's W and b the step read)."""
    from paddle_elmo.train.lm import train_step
    t0 = time.perf_counter()
    ends = {}
    out, _ = train_step(model, optimizer, batch, mark=lambda phase: ends.__setitem__(phase, time.perf_counter()))
    tops = max(timers.marks['top 0'], timers.marks['top 1'])
    s = timers.seconds
    s['forward: all'] += ends['forward'] - t0
    s['backward: softmax'] += tops - ends['forward']
    s['backward: LSTMs'] += timers.marks['token layer'] - tops
    s['backward: token layer'] += ends['backward'] - timers.marks['token layer']
    s['optimizer'] += ends['optimizer'] - ends['backward']
    s['step'] += ends['optimizer'] - t0
    return float(out['loss']), len(out['table_rows'][0].ids)


def draw(batches, steps):
    """The timed steps' batches, drawn before them (the roofline is timed on their shapes before the
    steps run) -> ([batch], the seconds the draws took: the step's data part)."""
    t0 = time.perf_counter()
    drawn = [next(batches) for _ in range(steps)]
    return drawn, time.perf_counter() - t0


def worker(name, batch_size, steps, warmup, top, shape_seconds, threads):
    """Profile `steps` steps of configuration `name` at `batch_size` rows after `warmup`; print one JSON line."""
    model, optimizer, batches, config, negatives, rule = pretraining_step.build(name, batch_size)
    from paddle_elmo.train.lm import train_step
    for _ in range(warmup):
        train_step(model, optimizer, next(batches))
    step_batches, data_seconds = draw(batches, steps)
    parts = lambda table_rows: roofline.training_parts(config, step_batches, negatives, table_rows,
                                                       sum(p.size for _, p in optimizer.dense), rule,
                                                       stream.last_level_cache_bytes())
    # The product shapes do not depend on the softmax rows the steps will read (only bytes do).
    shapes = parts(0)
    time_floor = lambda: roofline.time_floor(shapes, threads, shape_seconds)
    floor_before = time_floor() if shape_seconds > 0 else None
    rate_before = matmul_rates.measure_matmul_gflops()
    timers = Timers()
    instrument(model, timers)
    losses, table_rows = zip(*[timed_step(model, optimizer, b, timers) for b in step_batches])
    rate_after = matmul_rates.measure_matmul_gflops()
    timers.seconds['data'] += data_seconds
    timers.seconds['step'] += data_seconds
    need = flop_counts.required_flops(config, [flop_counts.lm_step_char_ids(b) for b in step_batches], training=True,
                                 n_negative_samples=negatives)
    ms = {k: 1000 * v / steps for k, v in timers.seconds.items()}  # before operator_table's steps add to them
    bandwidth, roof, timed, floors = None, None, None, None
    if floor_before:
        bandwidth, roof, timed, floors = roofline.measure(parts(sum(table_rows)), [floor_before, time_floor()])
    ops = profiling.operator_table(lambda: [train_step(model, optimizer, next(batches)) for _ in range(steps)], steps,
                                top) if top else []
    print(json.dumps({'ms': ms, 'batch_size': batch_size,
                      'flops': {k: need[k] / steps for k in ('char_cnn', 'highway', 'projection', 'lstm', 'softmax',
                                                             'total')},
                      'distinct/step': need['distinct'] / steps, 'losses': losses,
                      'rates': [rate_before, rate_after], 'stream': bandwidth, 'roofline': roof,
                      'roofline timings': floors, 'recurrence timed': timed, 'ops': ops}))


def optimizer_bandwidth(r):
    """The optimizer's memory traffic over its time, beside the stream triad of the same worker: one line."""
    moved, ms, triad = r['roofline']['optimizer']['MB'], r['ms']['optimizer'], r['stream']['triad']
    rate = moved / ms  # MB per ms = GB/s
    return (f'optimizer {moved:.0f} MB a step (roofline.py\'s count) in {ms:.1f} ms = {rate:.1f} GB/s, '
            f'{rate / triad:.0%} of the triad\'s {triad:.1f} GB/s')


def table(name, r):
    """The breakdown rows of one worker's result."""
    ms, flops, roof = r['ms'], r['flops'], r['roofline']
    rate = shares.reference_rate(r['rates']) * 1e9
    floor = lambda *parts: 1000 * sum(flops[p] for p in parts) / rate
    # Forward and backward of a part are 1/3 and 2/3 of its FLOPs (flop_counts.required_flops' 3x).
    token_parts, lstm_parts = ('char_cnn', 'highway', 'projection'), ('lstm',)
    forward_other = ms['forward: all'] - ms['forward: token layer'] - ms['forward: LSTMs'] - ms['forward: softmax']
    rows = [('data', ms['data'], None),
            ('token layer, forward', ms['forward: token layer'], floor(*token_parts) / 3),
            ('token layer, backward', ms['backward: token layer'], 2 * floor(*token_parts) / 3),
            ('LSTMs, forward', ms['forward: LSTMs'], floor(*lstm_parts) / 3),
            ('LSTMs, backward', ms['backward: LSTMs'], 2 * floor(*lstm_parts) / 3),
            ('softmax, forward', ms['forward: softmax'], floor('softmax') / 3),
            ('softmax, backward', ms['backward: softmax'], 2 * floor('softmax') / 3),
            ('optimizer', ms['optimizer'], None),
            ('other (dropout, loss, Python between calls)', forward_other, None)]
    label = f"{name}, {r['batch_size']} rows"
    out = [{'config': label, 'part': part, 'ms/step': t, 'share': f'{t / ms["step"]:.0%}',
            'floor ms': '' if f is None else round(f, 1), 'of floor': '' if f is None else f'{f / t:.0%}',
            **(roofline.columns(roof.get(part), t) if roof else {})}
           for part, t, f in rows]
    total_floor = floor('total')
    out.append({'config': label, 'part': '**step**', 'ms/step': ms['step'], 'share': '100%',
                'floor ms': round(total_floor, 1), 'of floor': f'{total_floor / ms["step"]:.0%}',
                **(roofline.columns(roofline.summed(roof.values()), ms['step']) if roof else {})})
    return out


def run_shape(a, shape, round_):
    """One profile run of `shape` (configuration, rows) in its own process; Paddle's profiler (--ops) in
    the first round only -> the worker's result."""
    name, batch_size = shape
    r = worker_runs.run_worker([__file__, '--worker', name, '--batch_sizes', str(batch_size), '--steps', str(a.steps),
                                '--warmup', str(a.warmup), '--threads', str(a.threads),
                                '--ops', str(a.ops if round_ == 0 else 0), '--shape_seconds', str(a.shape_seconds)],
                               env=cpu_threads.thread_env(a.threads))
    print(f'{name}, {batch_size} rows, run {round_ + 1}/{a.repeats}: {r["ms"]["step"]:.1f} ms a step; matmul rate '
          f'{r["rates"][0]:.1f} GFLOP/s before the timed steps, {r["rates"][1]:.1f} after; {r["distinct/step"]:.0f} '
          f'distinct tokens per step' + roofline.described(r), flush=True)
    if r['roofline']:
        print(f'{name}, {batch_size} rows: {optimizer_bandwidth(r)}')
    return r


def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--configs', default=f'small,{pretraining_step.BUNDLED}', help='comma-separated: ' + ', '.join(CONFIGS))
    p.add_argument('--batch_sizes', default='',
                   help='comma-separated rows per step; default: each configuration\'s own (small: 128,32; bundled: 64)')
    p.add_argument('--steps', type=int, default=20, help='timed steps per run')
    p.add_argument('--warmup', type=int, default=3, help='untimed steps first')
    p.add_argument('--threads', type=int, default=2, help='CPU threads')
    p.add_argument('--ops', type=int, default=0,
                   help='also list the N operators with the most CPU time (first round only; 0: none)')
    p.add_argument('--shape_seconds', type=float, default=0.2,
                   help='time each product shape of the roofline for this long (0: no roofline columns)')
    shares.add_flags(p, json_aliases=('--out',))
    p.add_argument('--worker', help=argparse.SUPPRESS)
    a = p.parse_args()
    unknown = [n for n in a.configs.split(',') if n not in CONFIGS]
    if unknown:
        raise InputError(f'--configs: unknown {", ".join(unknown)}; expected {", ".join(CONFIGS)}')
    flag_checks.check_positive(a, ('repeats',))
    cpu_threads.set_threads(a.threads)
    if a.worker:
        return worker(a.worker, int(a.batch_sizes), a.steps, a.warmup, a.ops, a.shape_seconds, a.threads)
    info = machine.machine_info()
    machine.print_machine_info(info)
    places.corpus_vocabulary(pretraining_step.VOCAB_SIZE)
    shapes = [(name, b) for name in a.configs.split(',') for b in pretraining_step.batch_sizes(name, a.batch_sizes)]
    profiling.profile_shapes(a, shapes, run_shape, lambda shape: f'{shape[0]}, {shape[1]} rows', 'step',
                             lambda shape, r: table(shape[0], r), info, steps=a.steps)


if __name__ == '__main__':
    run(main)
