"""How fast this machine multiplies matrices: the float32 [4096]^2 rate every floor is counted at,
NumPy's rate beside it, and the time of one product at a given shape (the roofline's rate at that
shape, matmul_ceiling's products alone), by paddle.matmul or, as the LSTM kernel runs its per-step
products when it links MKL, by MKL's packed products (through ctypes: Paddle ships no MKL headers).

The best of repeated products is the machine's rate; a median would mostly measure whatever else
is running.
"""
import contextlib
import ctypes
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
    return _median_seconds(lambda: paddle.matmul(x, y, tx, ty), seconds)


def time_packed_product(x_shape, y_shape, ty, pack_rows, seconds, library):
    """Median seconds of one product x [m, k] x op(y) as the LSTM kernel runs it with MKL (kernels.cc's
    RightMatrix): y packed once for products of up to pack_rows rows, then each product MKL's
    cblas_sgemm_compute, on `library` (kernel_build.mkl_library: in a process that has loaded it,
    the very copy the kernels and Paddle run, with its threads and code path)."""
    import paddle
    x, y = paddle.randn(list(x_shape)), paddle.randn(list(y_shape))
    out = paddle.empty([x_shape[0], y_shape[0] if ty else y_shape[1]])
    with mkl_packed(library, y, ty, pack_rows) as multiply:
        return _median_seconds(lambda: multiply(x, out), seconds)


def _median_seconds(call, seconds):
    """Median seconds of call() after a warm-up call, over at least `seconds` and 5 calls."""
    call()
    times, spent = [], 0.0
    while spent < seconds or len(times) < 5:
        t0 = time.perf_counter()
        call()
        times.append(time.perf_counter() - t0)
        spent += times[-1]
    return statistics.median(times)


# MKL's CBLAS constants (mkl_cblas.h; Paddle ships the library, not its headers).
ROW_MAJOR, NO_TRANS, TRANS, B_MATRIX, PACKED = 101, 111, 112, 162, 151


@contextlib.contextmanager
def mkl_packed(library, y, ty, pack_rows):
    """y (a float32 Paddle tensor [k, n], or with ty [n, k] standing for its transpose) packed by
    MKL for products of up to pack_rows rows, as the kernel packs a weight once per call -> a
    function multiply(x [m, k], out [m, n]) running out = x op(y) by cblas_sgemm_compute (the
    kernel's per-step product); the packed copy freed on exit."""
    mkl = _packed_api(library)
    n, k = y.shape if ty else y.shape[::-1]
    packed = mkl.cblas_sgemm_alloc(B_MATRIX, pack_rows, n, k)
    if not packed:
        raise MemoryError(f'MKL could not allocate a packed [{k}, {n}] matrix')
    try:
        mkl.cblas_sgemm_pack(ROW_MAJOR, B_MATRIX, TRANS if ty else NO_TRANS, pack_rows, n, k, 1.0, y.data_ptr(),
                             k if ty else n, packed)
        yield lambda x, out: mkl.cblas_sgemm_compute(ROW_MAJOR, NO_TRANS, PACKED, x.shape[0], n, k, x.data_ptr(), k,
                                                     packed, n, 0.0, out.data_ptr(), n)
    finally:
        mkl.cblas_sgemm_free(packed)


def _packed_api(library):
    """`library` through ctypes with the signatures of MKL's packed products (LP64: MKL_INT is int)."""
    mkl = ctypes.CDLL(library)
    i, f, p = ctypes.c_int, ctypes.c_float, ctypes.c_void_p
    mkl.cblas_sgemm_alloc.argtypes, mkl.cblas_sgemm_alloc.restype = [i, i, i, i], p
    mkl.cblas_sgemm_pack.argtypes, mkl.cblas_sgemm_pack.restype = [i, i, i, i, i, i, f, p, i, p], None
    mkl.cblas_sgemm_compute.argtypes = [i, i, i, i, i, i, p, i, p, i, f, p, i]
    mkl.cblas_sgemm_compute.restype = None
    mkl.cblas_sgemm_free.argtypes, mkl.cblas_sgemm_free.restype = [p], None
    return mkl
