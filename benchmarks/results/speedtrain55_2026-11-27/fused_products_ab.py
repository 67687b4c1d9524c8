"""The highway's two products against one fused product, and the softmax's two directions against one
batched product, alternating in one process (fused_products_ab.txt). argv[1]: threads."""
import os, sys, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
import common
common.set_threads(int(sys.argv[1]))
import numpy as np
from paddle_elmo.runtime import paddle
paddle.seed(0)
def timeit(f, reps=3):
    t = time.perf_counter()
    for _ in range(reps): f()
    return (time.perf_counter() - t) / reps
def ab(name, fa, fb, rounds=15):
    ta, tb = [], []
    for r in range(rounds):
        for which in ((0, 1) if r % 2 == 0 else (1, 0)):
            (ta if which == 0 else tb).append(timeit(fa if which == 0 else fb))
    print(f'{name}: separate {1000*np.median(ta):.2f} ms, fused {1000*np.median(tb):.2f} ms, fused/separate {np.median(tb)/np.median(ta):.3f}')
# highway: x [552, 2048], Wc, Wt [2048, 2048]
M, D = 552, 2048
x = paddle.randn([M, D]); Wc = paddle.randn([D, D]); Wt = paddle.randn([D, D]); Wf = paddle.concat([Wc, Wt], axis=1)
ab('highway forward', lambda: (paddle.matmul(x, Wc), paddle.matmul(x, Wt)), lambda: paddle.matmul(x, Wf))
dc = paddle.randn([M, D]); dt = paddle.randn([M, D]); df = paddle.concat([dc, dt], axis=1)
ab('highway dx', lambda: paddle.matmul(dc, Wc, transpose_y=True) + paddle.matmul(dt, Wt, transpose_y=True), lambda: paddle.matmul(df, Wf, transpose_y=True))
ab('highway dW', lambda: (paddle.matmul(x, dc, transpose_x=True), paddle.matmul(x, dt, transpose_x=True)), lambda: paddle.matmul(x, df, transpose_x=True))
# softmax: h [640, 128] x Wc [8192, 128]^T per direction
n, P, C = 640, 128, 8192
hf, hb = paddle.randn([n, P]), paddle.randn([n, P]); cf, cb = paddle.randn([C, P]), paddle.randn([C, P])
h2, c2 = paddle.stack([hf, hb]), paddle.stack([cf, cb])
ab('softmax logits', lambda: (paddle.matmul(hf, cf, transpose_y=True), paddle.matmul(hb, cb, transpose_y=True)), lambda: paddle.matmul(h2, c2, transpose_y=True))
print('softmax logits identical:', np.array_equal(np.stack([paddle.matmul(hf, cf, transpose_y=True).numpy(), paddle.matmul(hb, cb, transpose_y=True).numpy()]), paddle.matmul(h2, c2, transpose_y=True).numpy()))
g2 = paddle.randn([2, n, C]); gf, gb = g2[0].contiguous(), g2[1].contiguous()
ab('softmax dh', lambda: (paddle.matmul(gf, cf), paddle.matmul(gb, cb)), lambda: paddle.matmul(g2, c2))
ab('softmax dWc', lambda: (paddle.matmul(gf, hf, transpose_x=True), paddle.matmul(gb, hb, transpose_x=True)), lambda: paddle.matmul(g2, h2, transpose_x=True))
print('dWc identical:', np.array_equal(np.stack([paddle.matmul(gf, hf, transpose_x=True).numpy(), paddle.matmul(gb, hb, transpose_x=True).numpy()]), paddle.matmul(g2, h2, transpose_x=True).numpy()))
print('highway fwd identical:', np.array_equal(np.concatenate([paddle.matmul(x, Wc).numpy(), paddle.matmul(x, Wt).numpy()], 1), paddle.matmul(x, Wf).numpy()))
