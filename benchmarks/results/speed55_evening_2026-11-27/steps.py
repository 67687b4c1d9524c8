"""bench_pretrain's small step at ROWS rows, warmed up: `python steps.py ROWS N` trains N steps (for
perf / py-spy); kprof.py and smparts.py start from warmed_up()."""
import sys, time
sys.path.insert(0, '/work/main/benchmarks'); sys.path.insert(0, '/work/main')
import common
from bench_pretrain import CONFIGS, VOCAB_SIZE, NEGATIVES, TRAIN, UNROLL
from paddle_elmo.model.config import ModelConfig
from paddle_elmo.text.batches import LMStream
from paddle_elmo.text.vocabulary import Vocabulary
from paddle_elmo.train.lm import LanguageModel, train_step
from paddle_elmo.train.optimizers import Adagrad
import paddle
from paddle_elmo.runtime import use_device


def warmed_up(rows, warmup=3):
    """-> (model, optimizer, batches) after `warmup` steps of the small configuration at `rows` rows."""
    use_device('cpu'); paddle.seed(0)
    vocab = Vocabulary(common.corpus_vocabulary(VOCAB_SIZE))
    model = LanguageModel(ModelConfig(**CONFIGS['small']['model'], dropout=0.1), vocab.size, NEGATIVES)
    opt = Adagrad(model, lr=0.2, max_grad_norm=10.0)
    batches = iter(LMStream(TRAIN, vocab, rows, UNROLL, seed=0))
    model.train()
    for _ in range(warmup): train_step(model, opt, next(batches))
    return model, opt, batches


if __name__ == '__main__':
    rows, n = int(sys.argv[1]), int(sys.argv[2])
    model, opt, batches = warmed_up(rows)
    print('warm', flush=True)
    t0 = time.perf_counter()
    for _ in range(n): train_step(model, opt, next(batches))
    print('step ms', 1000 * (time.perf_counter() - t0) / n, flush=True)
