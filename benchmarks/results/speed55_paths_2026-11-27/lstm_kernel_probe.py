"""The recurrence kernel alone (elmo_lstm_forward / _backward: its packed MKL products and gates) on
random [R*20, 4096] gates, the small configuration (D 1024, P 128), 20 steps of R rows; and Paddle's
plain matmul at the same shapes. Run per MKL path: MKL_DEBUG_CPU_TYPE=5|7 python lstm_kernel_probe.py R
"""
import time, sys, numpy as np
from paddle_elmo.runtime import use_device
use_device('cpu')
import paddle
from paddle_elmo.model import kernels
ops = kernels.kernel()
R = int(sys.argv[1]); T = 20; D = 1024; P = 128
gx = paddle.randn([R*T, 4*D]); b = paddle.randn([4*D]); wh = paddle.randn([P, 4*D]) * 0.05; wp = paddle.randn([D, P]) * 0.05
h0 = paddle.zeros([R, P]); c0 = paddle.zeros([R, D]); e = paddle.empty([0], dtype='float32')
def t(f, n=30):
    for _ in range(3): f()
    t0 = time.perf_counter()
    for _ in range(n): f()
    return (time.perf_counter() - t0) / n * 1e3
fwd = lambda: ops.elmo_lstm_forward(gx, b, wh, wp, h0, c0, e, e, [R]*T, 3.0, 3.0, True)
ms = t(fwd); fl = R*T*(2*P*4*D + 2*D*P)
print(f'lstm fwd {R} rows: {ms:.2f} ms, {fl/ms/1e6:.0f} GFLOP/s')
h, c, acts, m = fwd()
gh = paddle.randn([R*T, P]); gc = paddle.randn([R*T, D])
bwd = lambda: ops.elmo_lstm_backward(wh, wp, h0, c0, h, c, acts, m, gh, gc, [R]*T, 3.0, 3.0)
ms = t(bwd); print(f'lstm bwd {R} rows: {ms:.2f} ms, {2*fl/ms/1e6:.0f} GFLOP/s')
a = paddle.randn([R, P]); a2 = paddle.randn([R, D])
ms1 = t(lambda: [paddle.matmul(a, wh) for _ in range(T)]); ms2 = t(lambda: [paddle.matmul(a2, wp) for _ in range(T)])
print(f'products alone per fwd: {ms1:.2f} + {ms2:.2f} ms = {(ms1+ms2):.2f} ({fl/(ms1+ms2)/1e6:.0f} GFLOP/s)')
big = paddle.randn([R*T, P]); ms3 = t(lambda: paddle.matmul(big, wh)); print(f'one product [{R*T},{P}]x[{P},{4*D}]: {ms3:.2f} ms {2*R*T*P*4*D/ms3/1e6:.0f} GFLOP/s')
