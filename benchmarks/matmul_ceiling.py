"""The products alone: every Paddle matrix product of a training step (or an embedding batch),
timed by itself at its shapes, beside the rate of the [4096]^2 product the floors are counted at.

    python benchmarks/matmul_ceiling.py                      # small pretraining step and original embedding
    python benchmarks/matmul_ceiling.py --configs small --steps 3 --batch_sizes 32
    python benchmarks/matmul_ceiling.py --mkl_paths 5,7       # the same products on MKL's AVX2 and AVX-512 paths

What it answers: how fast can the step be if nothing but its products took time? One step of
profile_pretrain.py's configuration (or one batch of profile_embed.py's), at each of --batch_sizes
(default: the configuration's own, as those scripts: small 128 and 32 rows, embedding 64 and 256
sentences), runs with paddle.matmul
recorded (the shapes, the transposes and which operands need a gradient); then each distinct
product, and for training each product of its backward (dX = dY W^T when X needs a gradient,
dW = X^T dY when W does), is timed alone on random operands of its shapes, repeated for at least
--seconds, median per call. The products inside the recurrence kernel (h x W_hidden and m x W_proj
per step, in C++ through MKL) are not paddle.matmul calls and are not in this table: their share is
profile_*.py's "recurrence" row.

"of rate" = the product's GFLOP/s over the [4096]^2 rate read in the same worker, the higher of its
readings before and after the products (shares.py's rule).

--mkl_paths runs each worker once per MKL_DEBUG_CPU_TYPE value (MKL fixes its path at its first
product, so one process each; a path this processor cannot run, runtime.runs_mkl_path, is
skipped) and prints each product's time alone on each path side by side, with each path's
[4096]^2 rate: whether a path moves the step's products more than the rate the floors are
counted at (then it moves the share of the floor too, not only tokens/s). "ms alone" summed
over a step is a lower bound on the step's product time: in the step the operands are colder.
"""
import argparse
import collections
import json

import numpy as np

import bench_embed
import cpu_threads
import machine
import markdown_tables
import matmul_rates
import pretraining_step
import shares
import worker_runs


def record_products(run):
    """Run `run()` with paddle.matmul recorded -> Counter {(x shape, y shape, tx, ty, x grad, y grad): calls}."""
    import paddle
    calls = collections.Counter()
    inner = paddle.matmul

    def recording(x, y, transpose_x=False, transpose_y=False, name=None):
        calls[(tuple(x.shape), tuple(y.shape), bool(transpose_x), bool(transpose_y),
               not x.stop_gradient, not y.stop_gradient)] += 1
        return inner(x, y, transpose_x, transpose_y)
    paddle.matmul = recording
    try:
        run()
    finally:
        paddle.matmul = inner
    return calls


def products_of(key, training):
    """The products one recorded call stands for -> [(label, x shape, y shape, tx, ty)]:
    the forward, and with training its backward's (the operand gradients that are needed)."""
    x_shape, y_shape, tx, ty, x_grad, y_grad = key
    out = [('forward', x_shape, y_shape, tx, ty)]
    if len(x_shape) > 2 and len(y_shape) == 2 and not tx:  # windows [.., rows, k] @ W: one [rows', k] product
        x_shape = (int(np.prod(x_shape[:-1])), x_shape[-1])
    if training and len(x_shape) == 2 and len(y_shape) == 2:
        m = x_shape[1] if tx else x_shape[0]
        n = y_shape[0] if ty else y_shape[1]
        if x_grad:  # dX [m, k] = dY [m, n] x W^T (as stored: y_shape, transposed back)
            out.append(('backward dX', (m, n), y_shape, False, not ty))
        if y_grad:  # dW [k, n] = X^T [k, m] x dY [m, n]
            out.append(('backward dW', x_shape, (m, n), not tx, False))
    return out


def worker(spec):
    """Record one configuration's products and time them alone -> {'rows', 'rates'}."""
    cpu_threads.set_threads(spec['threads'])
    if spec['kind'] == 'train':
        from paddle_elmo.train.lm import train_step
        model, optimizer, batches, *_ = pretraining_step.build(spec['config'], spec['batch_size'])
        train_step(model, optimizer, next(batches))  # warm-up
        calls = record_products(lambda: [train_step(model, optimizer, next(batches)) for _ in range(spec['steps'])])
        per, training = spec['steps'], True
    else:
        sentences, _ = bench_embed.read_sentences(bench_embed.DEFAULT_DATA, spec['n_sentences'])
        _, embedder, _ = bench_embed.build_embedder(dict(config=spec['config'], threads=spec['threads'], device='cpu',
                                                         seed=1, batch_size=spec['batch_size'], cache='off'))
        calls = record_products(lambda: [None for _ in embedder.iter_embeddings(sentences)])
        per, training = -(-spec['n_sentences'] // spec['batch_size']), False
    rate = matmul_rates.measure_matmul_gflops()
    rows = collections.defaultdict(lambda: [0.0, 0.0, 0.0])  # label -> [calls, flops, seconds] per step
    timed = {}
    for key, n in calls.items():
        for label, xs, ys, tx, ty in products_of(key, training):
            shape = (xs, ys, tx, ty)
            if shape not in timed:
                timed[shape] = matmul_rates.time_product(xs, ys, tx, ty, spec['seconds'])
            name = f'{label} {"x".join(map(str, xs))}{"T" if tx else ""} @ {"x".join(map(str, ys))}{"T" if ty else ""}'
            row = rows[name]
            row[0] += n / per
            row[1] += n * matmul_rates.product_flops(xs, ys, tx, ty) / per
            row[2] += n * timed[shape] / per
    return {'rows': dict(rows), 'rates': [rate, matmul_rates.measure_matmul_gflops()]}


def reference_rate(result):
    """A worker's [4096]^2 rate, GFLOP/s: the higher of its readings before and after the products
    (shares.reference_rate, the rule of every benchmark)."""
    return shares.reference_rate(result['rates'])


def total(result, column):
    """A worker's rows summed over the products: column 0 calls, 1 FLOPs, 2 seconds (per step)."""
    return sum(v[column] for v in result['rows'].values())


def table(name, result, top):
    """Rows by time, the largest `top` and the sum."""
    rate = reference_rate(result) * 1e9
    rows = sorted(result['rows'].items(), key=lambda kv: -kv[1][2])
    out = []
    for product, (calls, flops, seconds) in rows[:top]:
        out.append({'config': name, 'product': product, 'calls': round(calls, 2), 'MFLOP': round(flops / 1e6, 1),
                    'ms alone': round(1000 * seconds, 2), 'floor ms': round(1000 * flops / rate, 2),
                    'of rate': f'{flops / seconds / rate:.0%}' if seconds else ''})
    flops, seconds = total(result, 1), total(result, 2)
    out.append({'config': name, 'product': f'**all {len(rows)} products**', 'calls': round(total(result, 0), 1),
                'MFLOP': round(flops / 1e6, 1), 'ms alone': round(1000 * seconds, 1),
                'floor ms': round(1000 * flops / rate, 1), 'of rate': f'{flops / seconds / rate:.0%}'})
    return out


def path_table(name, by_path, top):
    """Each product's ms alone per step on each MKL path (by_path: {path: worker result}; the
    largest `top` on the first path, then the sum), the speed against the first path, and a last
    row with each path's [4096]^2 rate in GFLOP/s (in the ms columns)."""
    paths = list(by_path)
    first = by_path[paths[0]]['rows']

    def row(product, values, digits, speed):  # values {path: ms or GFLOP/s}; speed(first's, this path's)
        out = {'config': name, 'product': product}
        out.update({f'path {path} ms': round(value, digits) for path, value in values.items()})
        out.update({f'{path} / {paths[0]} speed': f'{speed(values[paths[0]], values[path]):.3f}'
                    for path in paths[1:]})
        return out

    by_time = lambda first_ms, ms: first_ms / ms  # noqa: E731
    rows = [row(p, {path: 1000 * by_path[path]['rows'][p][2] for path in paths}, 2, by_time)
            for p in sorted(first, key=lambda k: -first[k][2])[:top]]
    rows.append(row('**all products**', {path: 1000 * total(by_path[path], 2) for path in paths}, 2, by_time))
    rates = {path: reference_rate(by_path[path]) for path in paths}
    return rows + [row("[4096]^2 rate, GFLOP/s (the floors')", rates, 1, lambda first_rate, rate: rate / first_rate)]


def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--configs', default='small,original', help='small: a pretraining step (profile_pretrain); '
                   'original: an embedding batch (profile_embed); also bundled')
    p.add_argument('--batch_sizes', default='', help='comma-separated rows per step (sentences per batch for '
                   'original); default: the configuration\'s own (small: 128,32; bundled: 64; original: 64,256)')
    p.add_argument('--steps', type=int, default=2, help='training steps recorded (after one warm-up)')
    p.add_argument('--n_sentences', type=int, default=128, help='sentences embedded (original)')
    p.add_argument('--seconds', type=float, default=0.3, help='time each distinct product for at least this long')
    p.add_argument('--threads', type=int, default=2, help='CPU threads')
    p.add_argument('--top', type=int, default=15, help='rows printed per configuration (the sum counts all)')
    p.add_argument('--mkl_paths', default='', help='comma-separated MKL_DEBUG_CPU_TYPE values to compare (e.g. '
                   '5,7); default: the path the library asks for here, alone')
    p.add_argument('--worker', help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.worker:
        return worker_runs.answer_worker(a.worker, {'train': worker, 'embed': worker})
    from paddle_elmo import runtime
    runtime.ask_mkl_for_fast_path()  # the header's MKL path: the one the library runs here
    machine.print_machine_info()
    paths = [x for x in a.mkl_paths.split(',') if x]
    for path in [x for x in paths if not runtime.runs_mkl_path(x)]:
        print(f'MKL path {path} skipped: this processor lacks its instructions')
    paths = [x for x in paths if runtime.runs_mkl_path(x)]
    for name in a.configs.split(','):
        kind = 'embed' if name == 'original' else 'train'
        sizes = (bench_embed.batch_sizes(a.batch_sizes) if kind == 'embed'
                 else pretraining_step.batch_sizes(name, a.batch_sizes))
        for batch_size in sizes:
            spec = dict(config=name, kind=kind, steps=a.steps, n_sentences=a.n_sentences, seconds=a.seconds,
                        threads=a.threads, batch_size=batch_size)
            what = 'pretraining step' if kind == 'train' else 'embedding batch'
            if paths:
                by_path = {path: worker_runs.run_worker([__file__, '--worker', json.dumps(spec)],
                                                   env={'MKL_DEBUG_CPU_TYPE': path}) for path in paths}
                markdown_tables.print_table(path_table(f'{name} ({what} of {batch_size})', by_path, a.top))
                continue
            result = worker_runs.run_worker([__file__, '--worker', json.dumps(spec)])
            print(f'{name}, batch {batch_size}: matmul rate {result["rates"][0]:.1f} GFLOP/s before the products '
                  f'were timed, {result["rates"][1]:.1f} after')
            markdown_tables.print_table(table(f'{name} ({what} of {batch_size})', result, a.top))


if __name__ == '__main__':
    main()
