"""Time per step of each custom kernel op and of Paddle matmul, at a given row count."""
import sys, time, collections
from steps import warmed_up, train_step
from paddle_elmo.model import kernels
model, opt, batches = warmed_up(int(sys.argv[1]))
ops = kernels.kernel()
acc = collections.defaultdict(float); cnt = collections.Counter()
class Wrapped:
    def __getattr__(self, name):
        f = getattr(ops, name)
        if not name.startswith('elmo'): return f
        def g(*a, **k):
            t0 = time.perf_counter(); r = f(*a, **k); acc[name] += time.perf_counter() - t0; cnt[name] += 1; return r
        return g
kernels._ops = Wrapped()
n = 10; t0 = time.perf_counter()
for _ in range(n): out, _ = train_step(model, opt, next(batches)); float(out['loss'])
total = (time.perf_counter() - t0) / n
for k, v in sorted(acc.items(), key=lambda kv: -kv[1]): print(f'{k:45s} {cnt[k]/n:5.1f}/step {1000*v/n:7.2f} ms')
print('step ms', 1000 * total, 'kernels sum', 1000 * sum(acc.values()) / n)
