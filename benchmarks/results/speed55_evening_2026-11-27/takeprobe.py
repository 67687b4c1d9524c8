import time, numpy as np, paddle, sys
from paddle_elmo.runtime import use_device
use_device('cpu')
R, rows = 8800, int(sys.argv[1])
rng = np.random.default_rng(0)
v = paddle.to_tensor(rng.standard_normal((R, 128)).astype('float32')); v.stop_gradient = False
b = paddle.to_tensor(rng.standard_normal((R, 1)).astype('float32')); b.stop_gradient = False
cand = paddle.to_tensor(rng.permutation(R)[:8192]); tgt = paddle.to_tensor(rng.integers(0, R, rows * 20))
gc = paddle.to_tensor(rng.standard_normal((8192, 128)).astype('float32')); gt = paddle.to_tensor(rng.standard_normal((rows * 20, 128)).astype('float32'))
def once():
    t0 = time.perf_counter()
    wc, bc, wt, bt = paddle.gather(v, cand), paddle.gather(b, cand), paddle.gather(v, tgt), paddle.gather(b, tgt)
    t1 = time.perf_counter()
    ((wc * gc).sum() + (wt * gt).sum() + bc.sum() + bt.sum()).backward()
    t2 = time.perf_counter()
    v.clear_grad(); b.clear_grad()
    return t1 - t0, t2 - t1
for _ in range(3): once()
r = np.array([once() for _ in range(30)])
print(rows, 'rows: forward gathers %.2f ms, backward (incl. the mul/sum grads) %.2f ms per direction' % tuple(np.median(r, 0) * 1000))
