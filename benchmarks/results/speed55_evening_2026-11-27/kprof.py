"""Time per step of each custom kernel op and of Paddle matmul, at a given row count."""
import sys, time, collections
sys.path.insert(0, '/work/main/benchmarks'); sys.path.insert(0, '/work/main')
import common
from bench_pretrain import CONFIGS, VOCAB_SIZE, NEGATIVES, TRAIN, UNROLL
from paddle_elmo.model.config import ModelConfig
from paddle_elmo.text.batches import LMStream
from paddle_elmo.text.vocabulary import Vocabulary
from paddle_elmo.train.lm import LanguageModel, train_step
from paddle_elmo.train.optimizers import Adagrad
from paddle_elmo.model import kernels
import paddle
from paddle_elmo.runtime import use_device
rows = int(sys.argv[1])
use_device('cpu'); paddle.seed(0)
vocab = Vocabulary(common.corpus_vocabulary(VOCAB_SIZE))
model = LanguageModel(ModelConfig(**CONFIGS['small']['model'], dropout=0.1), vocab.size, NEGATIVES)
opt = Adagrad(model, lr=0.2, max_grad_norm=10.0)
batches = iter(LMStream(TRAIN, vocab, rows, UNROLL, seed=0))
model.train()
for _ in range(3): train_step(model, opt, next(batches))
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
