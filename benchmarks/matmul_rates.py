"""How fast this machine multiplies matrices: the float32 [4096]^2 rate every floor is counted at,
NumPy's rate beside it, and the time of one product at a given shape (the roofline's rate at that
shape, matmul_ceiling's products alone).

The best of repeated products is the machine's rate; a median would mostly measure whatever else
is running.
"""
import statistics
import time

import numpy as np


def _synchronize():
    import paddle
    if paddle.device.get_device().startswith('gpu'):
        paddle.device.synchronize()


def measure_matmul_gflops(n=4096, seconds=3.0):
    """float32 GFLOP/s of Paddle's [n, n] x [n, n] matmul on the current device (best round).

    The best of repeated single products is the machine's rate; the median would mostly measure
    whatever else is running. One product is 2 * n^3 FLOPs.
    """
    import paddle
    a = paddle.randn([n, n], dtype='float32')
    b = paddle.randn([n, n], dtype='float32')
    paddle.matmul(a, b)  # warm-up: thread pool, page faults of the output
    _synchronize()
    best, start = 0.0, time.perf_counter()
    while True:
        t = time.perf_counter()
        paddle.matmul(a, b)
        _synchronize()
        best = max(best, 2.0 * n ** 3 / (time.perf_counter() - t) / 1e9)
        if time.perf_counter() - start >= seconds:
            return best


def measure_numpy_gflops(n=4096, seconds=3.0):
    """float32 GFLOP/s of NumPy's [n, n] x [n, n] product (its BLAS, usually OpenBLAS, on the
    threads it chose): what this processor does with a BLAS that knows it, beside Paddle's rate."""
    import numpy as np
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((n, n), dtype=np.float32), rng.standard_normal((n, n), dtype=np.float32)
    a @ b
    best, start = 0.0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        t = time.perf_counter()
        a @ b
        best = max(best, 2.0 * n ** 3 / (time.perf_counter() - t) / 1e9)
    return best


def product_flops(x_shape, y_shape, tx, ty):
    """FLOPs of one product (2 m n k; leading batch dimensions multiply)."""
    m, k = (x_shape[-1], x_shape[-2]) if tx else (x_shape[-2], x_shape[-1])
    n = y_shape[-2] if ty else y_shape[-1]
    return 2 * int(np.prod(x_shape[:-2], dtype=np.int64)) * m * n * k


def time_product(x_shape, y_shape, tx, ty, seconds):
    """Median seconds of one paddle.matmul on random operands of these shapes."""
    import paddle
    x, y = paddle.randn(list(x_shape)), paddle.randn(list(y_shape))
    paddle.matmul(x, y, tx, ty)
    times, spent = [], 0.0
    while spent < seconds or len(times) < 5:
        t0 = time.perf_counter()
        paddle.matmul(x, y, tx, ty)
        times.append(time.perf_counter() - t0)
        spent += times[-1]
    return statistics.median(times)
