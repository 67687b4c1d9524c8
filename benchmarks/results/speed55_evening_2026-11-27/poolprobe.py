"""Fused pooling kernel vs per-width max kernels + concat + add + relu, forward and backward, at a 128-row step's chunk shapes."""
import sys, time
sys.path.insert(0, '/work/main')
import numpy as np, paddle, paddle.nn.functional as F
from paddle_elmo.runtime import use_device
use_device('cpu')
from paddle_elmo.model import kernels, layer_math
from paddle_elmo.model.token_layer import EagerOps
rows, pos = int(sys.argv[1]), int(sys.argv[2])
filters = [(1, 32), (2, 32), (3, 64), (4, 128), (5, 256), (6, 512), (7, 1024)]
rng = np.random.default_rng(0)
def make(seed=0):
    rng = np.random.default_rng(seed)
    xs = [paddle.to_tensor(rng.standard_normal((pos, rows, n)).astype('float32')) for _, n in filters]
    for x in xs: x.stop_gradient = False
    b = paddle.to_tensor(rng.standard_normal(2048).astype('float32') * 0.1); b.stop_gradient = False
    return xs, b
ops = EagerOps()
base = layer_math.TokenOps.pool_widths
def run(fused):
    xs, b = make()
    t0 = time.perf_counter()
    y = ops.pool_widths(iter(xs), b, F.relu) if fused else base(ops, iter(xs), b, F.relu)
    t1 = time.perf_counter()
    g = paddle.ones_like(y)
    y.backward(g)
    t2 = time.perf_counter()
    return t1 - t0, t2 - t1, y.numpy(), [x.grad.numpy() for x in xs], b.grad.numpy()
res = {True: [], False: []}
for r in range(30):
    for fused in (r % 2 == 0, r % 2 == 1):
        res[fused].append(run(fused))
for fused in (False, True):
    f = np.median([a for a, *_ in res[fused][3:]]) * 1000; bw = np.median([b for _, b, *_ in res[fused][3:]]) * 1000
    print(f'{"fused" if fused else "per width"}: forward {f:.2f} ms, backward {bw:.2f} ms')
a, b = res[False][-1], res[True][-1]
print('identical y', np.array_equal(a[2], b[2]), 'grads', all(np.array_equal(p, q) for p, q in zip(a[3], b[3])), 'bias grad', np.array_equal(a[4], b[4]))
