"""The pretraining step the benchmarks time (bench_pretrain, profile_pretrain, matmul_ceiling,
ab_pretrain): its configurations, batch sizes, data and recipe, and the model, optimizer and batch
stream built from them, so that every benchmark times the same step.

Each configuration trains on ../shared/data/lm-corpus/train.txt with a 150k-word vocabulary built
from it (cached), sampled softmax with 8192 negatives, Adagrad at lr 0.2 and global-norm clipping at
10: the run_pretrain.py step. `bundled` is the bundled model's configuration and recipe (the budget
preset: Adam, its own rows).
"""
import os

import flag_checks
import places

CONFIGS = {
    # LSTM 1024 -> 128, the original char CNN, 1 highway (as bench_embed.py's small)
    'small': dict(model=dict(projection_dim=128, cell_dim=1024, num_highways=1)),
    # the paper's model; a few steps only
    'original': dict(model=dict(projection_dim=512, cell_dim=4096, num_highways=2)),
}
BUNDLED = 'bundled'  # the budget preset: the bundled model's configuration and recipe
# Rows per step (each direction) measured by default: the presets' own (recipe.PRESETS: 128 for
# both), and for small also the 32 the benchmarks used until 2026-11-27.
BATCH_SIZES = {'small': (128, 32), 'original': (128,)}
VOCAB_SIZE, NEGATIVES, UNROLL = 150_000, 8192, 20
TRAIN = os.path.join(places.LM_CORPUS, 'train.txt')


def batch_sizes(name, given):
    """--batch_sizes (comma-separated; '' = the configuration's own: BATCH_SIZES, or the budget
    preset's for `bundled`) -> [int]."""
    from paddle_elmo.model.recipe import PRESETS
    if given:
        return flag_checks.positive_ints(given, '--batch_sizes')
    return [PRESETS['budget']['batch_size']] if name == BUNDLED else list(BATCH_SIZES[name])


def model_and_recipe(name):
    """-> (ModelConfig, negatives, optimizer name, lr) of configuration `name`."""
    from paddle_elmo.model.config import ModelConfig
    from paddle_elmo.model.recipe import PRESETS, split_fields
    if name == BUNDLED:
        model, recipe = split_fields(PRESETS['budget'])
        return ModelConfig(**model), recipe['n_negative_samples'], 'adam', recipe['lr']
    return ModelConfig(**CONFIGS[name]['model'], dropout=0.1), NEGATIVES, 'adagrad', 0.2


def vocabulary():
    """The step's vocabulary (built once, cached)."""
    from paddle_elmo.text.vocabulary import Vocabulary
    return Vocabulary(places.corpus_vocabulary(VOCAB_SIZE))


def stream(vocab, batch_size):
    """The step's LMStream batches (the same stream, seed and order for every benchmark)."""
    from paddle_elmo.text.batches import LMStream
    return iter(LMStream(TRAIN, vocab, batch_size, UNROLL, seed=0))


def step_batches(batch_size, steps, warmup):
    """The batches a run trains on, warm-up first -> [LMStream batch]."""
    batches = stream(vocabulary(), batch_size)
    return [next(batches) for _ in range(warmup + steps)]


def build(name, batch_size, max_grad_norm=10.0):
    """The model, optimizer and batch stream of configuration `name` at `batch_size` rows, in
    training mode -> (model, optimizer, batches, config, negatives, rule)."""
    from paddle_elmo.train.lm import LanguageModel
    from paddle_elmo.train.optimizers import make_optimizer
    import paddle
    from paddle_elmo.runtime import use_device
    use_device('cpu')  # as run_pretrain.py (glibc keeps freed memory)
    paddle.seed(0)
    config, negatives, rule, lr = model_and_recipe(name)
    vocab = vocabulary()
    model = LanguageModel(config, vocab.size, negatives)
    optimizer = make_optimizer(model, rule, lr, max_grad_norm, warmup_steps=100 if rule == 'adam' else 0)
    model.train()
    return model, optimizer, stream(vocab, batch_size), config, negatives, rule

