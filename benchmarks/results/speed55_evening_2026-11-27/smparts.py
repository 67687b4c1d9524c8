"""Softmax forward's pieces, in situ: timers around each call of the sampled-softmax path. smparts.py ROWS STEPS"""
import sys, time, collections, functools
from steps import warmed_up
from bench_pretrain import NEGATIVES
from paddle_elmo.train import lm, sampled_softmax as ss
from paddle_elmo.model import kernels
import paddle
rows, n = int(sys.argv[1]), int(sys.argv[2])
acc = collections.defaultdict(float); on = [False]
def timed(name, f):
    @functools.wraps(f)
    def g(*a, **k):
        t = time.perf_counter(); r = f(*a, **k)
        if on[0]: acc[name] += time.perf_counter() - t
        return r
    return g
ss.LogUniformSampler.sample = timed('sampler.sample (NumPy)', ss.LogUniformSampler.sample)
ss.LogUniformSampler.expected_count = timed('expected_count + log (NumPy)', ss.LogUniformSampler.expected_count)
lm.sorted_union = timed('sorted_union (NumPy)', lm.sorted_union)
ss.Softmax.select_rows = timed('select_rows: gather W, b rows', ss.Softmax.select_rows)
ss.TableRows.take = timed('take: gather rows of targets / candidates', ss.TableRows.take)
ss.candidate_labels = timed('candidate_labels (NumPy)', ss.candidate_labels)
kernels.sampled_softmax_losses = timed('loss kernel', kernels.sampled_softmax_losses)
ss.Softmax.sampled_loss = timed('sampled_loss total (take, logits, matmul, loss)', ss.Softmax.sampled_loss)
lm.LanguageModel.sampled_losses = timed('softmax forward total (sampled_losses)', lm.LanguageModel.sampled_losses)
orig_matmul = paddle.matmul
def mm(x, y, transpose_x=False, transpose_y=False, name=None):
    t = time.perf_counter(); r = orig_matmul(x, y, transpose_x, transpose_y, name)
    if on[0] and transpose_y and y.shape[0] == NEGATIVES: acc['candidate logits matmul'] += time.perf_counter() - t
    return r
ss.paddle.matmul = mm
model, opt, batches = warmed_up(rows)
on[0] = True
t0 = time.perf_counter()
for _ in range(n): lm.train_step(model, opt, next(batches))
step = (time.perf_counter() - t0) / n
print(f'{rows} rows: step {1000*step:.0f} ms')
for k, v in sorted(acc.items(), key=lambda kv: -kv[1]): print(f'  {1000*v/n:7.2f} ms  {k}')
