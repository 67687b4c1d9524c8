"""MKL's code paths side by side: the products a training step and an embedding batch run, timed
alone under each `MKL_DEBUG_CPU_TYPE` value, each path in its own process (MKL fixes its path at its
first product), with the [4096]^2 rate the floors are counted at.

    python benchmarks/mkl_paths.py                        # the paths this processor runs: 0, 5, 7
    python benchmarks/mkl_paths.py --paths 5,7 --seconds 2 --out paths.json

What it answers: which path runtime.mkl_path_to_ask should ask for on this processor, and whether a
path moves the products of the step more than the [4096]^2 rate (then it moves the share of the
floor too, not only tokens/s). Paths: 0 the generic one (MKL's choice on AMD), 5 AVX2, 7 AVX-512
(Skylake server's: needs AVX-512 F, CD, BW, DQ and VL; skipped on a processor without them).
Shapes (the small configuration at 32 and 128 rows, 8,192 negatives; the original size's LSTM at
64 rows): `SHAPES`. GFLOP/s are best-of rounds over --seconds, as common.measure_matmul_gflops.
"""
import argparse
import json
import os
import sys
import time

import common

# (name, m, k, n, transpose_a, transpose_b): C [m, n] = A [m, k] x B [k, n] (A or B stored transposed)
SHAPES = [
    ('[4096]^2 (the floors\' rate)', 4096, 4096, 4096, False, False),
    ('highway, 552 tokens (32 rows)', 552, 2048, 2048, False, False),
    ('highway, 1,712 tokens (128 rows)', 1712, 2048, 2048, False, False),
    ('char CNN width 7, 552 tokens x 12 windows', 6624, 112, 1024, False, False),
    ('LSTM input product, 640 positions', 640, 128, 4096, False, False),
    ('LSTM step h x W_hidden, 32 rows', 32, 128, 4096, False, False),
    ('LSTM step h x W_hidden, 128 rows', 128, 128, 4096, False, False),
    ('LSTM step, original size, 64 rows', 64, 512, 16384, False, False),
    ('softmax logits, 640 positions x 8,193', 640, 128, 8193, False, True),
    ('softmax dh = dlogits x W, 640 positions', 640, 8193, 128, False, False),
    ('softmax dW = dlogits^T x h, 640 positions', 8193, 640, 128, True, False),
]
PATHS = {'0': 'generic', '5': 'AVX2', '7': 'AVX-512'}


def worker(seconds):
    """Time every shape on this process's MKL path; print one JSON line."""
    from paddle_elmo import runtime
    import paddle
    paddle.base.core.set_num_threads(int(os.environ.get('OMP_NUM_THREADS', '2')))
    runtime.keep_freed_memory()  # as the commands: a product's output reuses freed pages
    rates = {}
    for name, m, k, n, ta, tb in SHAPES:
        a = paddle.randn([k, m] if ta else [m, k])
        b = paddle.randn([n, k] if tb else [k, n])
        product = lambda: paddle.matmul(a, b, transpose_x=ta, transpose_y=tb)
        product()
        best, start = 0.0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            t = time.perf_counter()
            product()
            best = max(best, 2.0 * m * k * n / (time.perf_counter() - t) / 1e9)
        rates[name] = best
    print(json.dumps({'path': runtime.mkl_code_path(), 'rates': rates}))


def runnable(path):
    """Whether this processor runs MKL's `path` (7 needs runtime.AVX512_FLAGS)."""
    from paddle_elmo import runtime
    return path != runtime.AVX512_PATH or runtime.AVX512_FLAGS <= runtime.processor()[1]


def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('--paths', default=','.join(PATHS), help='comma-separated MKL_DEBUG_CPU_TYPE values')
    p.add_argument('--threads', type=int, default=2, help='CPU threads')
    p.add_argument('--seconds', type=float, default=1.5, help='timing per shape and path')
    p.add_argument('--out', help='also write the results (JSON) here')
    p.add_argument('--worker', action='store_true', help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.worker:
        return worker(a.seconds)
    from paddle_elmo import runtime
    runtime.ask_mkl_for_fast_path()  # the header's MKL path: the one the library would run here
    common.print_machine_info()
    results = {}
    for path in [x for x in a.paths.split(',') if x]:
        if not runnable(path):
            print(f'path {path} skipped: this processor lacks the AVX-512 instructions it runs')
            continue
        env = {'MKL_DEBUG_CPU_TYPE': path, 'OMP_NUM_THREADS': str(a.threads)}
        results[path] = common.run_worker([__file__, '--worker', '--seconds', str(a.seconds)], env=env)
        if results[path]['path'] != path:
            print(f'MKL_DEBUG_CPU_TYPE={path}: MKL reports path {results[path]["path"]} (it ignores the variable)')
    base = '5' if '5' in results else next(iter(results), None)
    rows = []
    for name, *_ in SHAPES:
        row = {'product': name}
        for path, r in results.items():
            row[f'{PATHS.get(path, path)} ({path}) GFLOP/s'] = r['rates'][name]
        for path, r in results.items():
            if path != base:
                row[f'{path} / {base}'] = f"{r['rates'][name] / results[base]['rates'][name]:.3f}"
        rows.append(row)
    common.print_table(rows)
    if a.out:
        from paddle_elmo.fileio import write_json_atomic
        write_json_atomic({'machine': common.machine_info(), 'threads': a.threads, 'results': results}, a.out)


if __name__ == '__main__':
    sys.exit(main())
