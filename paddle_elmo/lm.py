"""The biLM training objective: a softmax over the vocabulary on top of the biLM.

Training uses sampled softmax as bilm-tf does (TensorFlow's `sampled_softmax_loss` with the
log-uniform candidate sampler, unique candidates shared by the batch, logits corrected by the log
expected count, accidental hits removed). Evaluation uses the full softmax, computed in vocabulary
chunks so that an 800k vocabulary fits in memory.
"""
import math

import numpy as np

import paddle
import paddle.nn as nn
import paddle.nn.functional as F
from paddle import _C_ops

from paddle_elmo import kernels
from paddle_elmo.runtime import set_mode
from paddle_elmo.bilm import BiLM
from paddle_elmo.fileio import InputError
from paddle_elmo.token_ids import TokenInput


class LogUniformSampler:
    """Unique candidates from P(k) = log((k + 2) / (k + 1)) / log(V + 1) over frequency-ranked ids.

    Like TensorFlow's log_uniform_candidate_sampler(unique=True): draws until `n` distinct ids are
    found and reports each id's expected count 1 - (1 - P(k))^n_draws. When n >= V every id is
    taken with expected count 1, so the sampled loss becomes the exact full softmax.
    """

    def __init__(self, vocab_size, n, seed=0):
        self.vocab_size, self.n = vocab_size, n
        self.rng = np.random.default_rng(seed)
        self._log_range = math.log(vocab_size + 1)

    def probability(self, ids):
        ids = np.asarray(ids, dtype=np.float64)
        return (np.log(ids + 2) - np.log(ids + 1)) / self._log_range

    def _draw(self, size):
        return (np.exp(self.rng.random(size) * self._log_range).astype(np.int64) - 1).clip(0, self.vocab_size - 1)

    def sample(self):
        """-> (n distinct candidate ids int64, number of draws it took; None when all ids are taken)."""
        if self.n >= self.vocab_size:
            return np.arange(self.vocab_size, dtype=np.int64), None
        draws = np.empty(0, dtype=np.int64)
        while True:
            draws = np.concatenate([draws, self._draw(2 * self.n + 1024)])
            _, first = np.unique(draws, return_index=True)
            if len(first) >= self.n:
                first.sort()  # positions where a new id appeared, in draw order
                return draws[first[:self.n]], int(first[self.n - 1]) + 1

    def expected_count(self, ids, n_draws):
        if n_draws is None:
            return np.ones(len(ids), dtype=np.float64)
        return -np.expm1(n_draws * np.log1p(-self.probability(ids)))

    def state(self):
        return self.rng.bit_generator.state

    def set_state(self, state):
        self.rng.bit_generator.state = state


class TableRows:
    """The rows of one or more tables (parameters [vocab, ...] indexed alike) that a training step
    reads: ids (sorted unique int64 numpy [n]) and `values`, copies of those rows [n, ...] that are
    leaf tensors of their own, so their gradients are dense [n, ...] and can be all-reduced across
    ranks (Paddle's sparse SelectedRows gradients cannot). The step hands them to the optimizer,
    which updates those rows of the tables only, as bilm-tf's sparse IndexedSlices updates do (the
    softmax's W and b; the word embedding of word input)."""

    def __init__(self, tables, ids):
        index = paddle.to_tensor(ids)
        with paddle.no_grad():
            self.values = [paddle.gather(table, index) for table in tables]
        for value in self.values:
            value.stop_gradient = False
        self.tables, self.ids = tables, ids

    def take(self, ids):
        """ids (numpy, all among self.ids) -> the rows of each table, [len(ids), ...] each."""
        pos = paddle.to_tensor(np.searchsorted(self.ids, ids))
        return [paddle.gather(value, pos) for value in self.values]


class Softmax(nn.Layer):
    """W [vocab, projection_dim] and b [vocab, 1] over the vocabulary, shared by both directions.

    A training step works on the rows it needs only (`select_rows` -> TableRows); evaluation on
    all of them (`full_losses`).
    """

    def __init__(self, vocab_size, dim):
        super().__init__()
        self.vocab_size = vocab_size
        self.W = self.create_parameter([vocab_size, dim],
                                       default_initializer=nn.initializer.Normal(0.0, 1.0 / math.sqrt(dim)))
        self.b = self.create_parameter([vocab_size, 1], is_bias=True,
                                       default_initializer=nn.initializer.Constant(0.0))

    def select_rows(self, ids):
        """ids: sorted unique int64 numpy array of the rows a step reads -> TableRows of W and b."""
        return TableRows([self.W, self.b], ids)

    def sampled_loss(self, rows, h, targets, candidates, log_q_true, log_q_cand):
        """Mean sampled-softmax loss over tokens.

        rows: the softmax's TableRows of this step (they hold every target and candidate); h: [n, dim];
        targets: int64 numpy [n]; candidates: distinct int64 numpy [n_candidates] (shared by the batch); log_q_*: log expected counts (numpy) subtracted from the logits.
        An accidental hit (a row's target among the candidates) is not a negative: as its logit
        equals the true logit, the row simply takes that candidate column as its label and drops
        its separate true column.
        """
        w_true, b_true = rows.take(targets)
        w_cand, b_cand = rows.take(candidates)
        b_true, b_cand = b_true.squeeze(-1), b_cand.squeeze(-1)
        true_logits = (h * w_true).sum(axis=-1) + b_true - paddle.to_tensor(log_q_true.astype(np.float32))
        cand_logits = paddle.matmul(h, w_cand, transpose_y=True)  # [n, n_candidates]
        cand_bias = b_cand - paddle.to_tensor(log_q_cand.astype(np.float32))
        labels = candidate_labels(targets, candidates)
        return kernels.sampled_softmax_losses(true_logits, cand_logits, cand_bias, labels).mean()

    def full_losses(self, h, targets, max_logits=2 ** 25):
        """Per-token full-softmax losses [n]; h: [n, dim], targets: int64 numpy [n].

        The [rows, vocab] logits are made a block of rows at a time (at most `max_logits` floats, 128
        MB) and go through the fused cross-entropy kernel with every word as a candidate: one pass
        over the logits instead of the five elementwise ops of a logsumexp.
        """
        rows = max(1, max_logits // self.vocab_size)
        bias = self.b.squeeze(-1)
        losses = []
        for start in range(0, h.shape[0], rows):
            part, t = h[start:start + rows], targets[start:start + rows]
            logits = paddle.matmul(part, self.W, transpose_y=True)  # [rows, vocab]
            losses.append(kernels.sampled_softmax_losses(paddle.zeros([part.shape[0]]), logits, bias, t + 1))
        return paddle.concat(losses) if len(losses) > 1 else losses[0]


def candidate_labels(targets, candidates):
    """For each target: 1 + its column among the distinct candidates, or 0 (the true column) when
    it is not among them."""
    order = np.argsort(candidates, kind='stable')
    where = np.searchsorted(candidates, targets, sorter=order).clip(0, len(candidates) - 1)
    column = order[where]
    return np.where(candidates[column] == targets, column + 1, 0).astype(np.int64)


DIRECTIONS = (('char_ids', 'next_token_ids'), ('char_ids_reverse', 'next_token_ids_reverse'))
# Each TokenInput field's keys in LMStream's batches: (forward, backward).
INPUT_KEYS = {'char_ids': ('char_ids', 'char_ids_reverse'), 'word_ids': ('word_ids', 'word_ids_reverse')}
WORD_IDS = INPUT_KEYS['word_ids']


class LanguageModel(nn.Layer):
    """BiLM + a softmax shared by both directions, with dropout before it.

    Batches are the dicts made by dataset.LMStream (numpy arrays): 'char_ids', 'word_ids',
    'next_token_ids' and their '_reverse' twins, each [batch, unroll(, max_chars)]. In training mode
    the loss is the sampled softmax; in eval mode it is the full softmax (`token_losses` gives it
    per token). The biLM is stateful: each row's state carries over to the next batch, with
    gradients cut at the boundary. vocab: the Vocabulary of word input (word and word+char models
    read the training vocabulary, as bilm-tf's token mode).
    """

    def __init__(self, config, vocab_size, n_negative_samples=8192, seed=0, reset_state_at_sentence_start=False,
                 vocab=None):
        super().__init__()
        self.vocab_size = vocab_size
        self.bilm = BiLM(config, stateful=True, vocab=vocab)
        self.softmax = Softmax(vocab_size, config.projection_dim)
        self.dropout = float(config.dropout or 0.0)
        self.sampler = LogUniformSampler(vocab_size, n_negative_samples, seed)
        # Not bilm-tf's: a row whose window begins a sentence starts it from a zero state, as an
        # embedder starts every sentence (see run_pretrain.py --reset_state_at_sentence_start).
        self.reset_state_at_sentence_start = reset_state_at_sentence_start

    def forward(self, batch, agree_rows=None):
        """-> dict(loss (mean of the two directions), forward_loss, backward_loss: 0-d tensors; in
        training also table_rows, the TableRows the step read (the softmax's, then the word
        embedding's when it trains), for the optimizer).

        agree_rows: in training, a function that turns this rank's row ids of a table into the
        union over all ranks (so every rank's row gradients line up for the all-reduce).
        """
        if self.training:
            losses, rows = self.sampled_losses(batch, agree_rows)
        else:
            losses, rows = [loss.mean() for loss in self.full_softmax_losses(batch)], None
        out = {'loss': 0.5 * (losses[0] + losses[1]), 'forward_loss': losses[0], 'backward_loss': losses[1]}
        if rows is not None:
            out['table_rows'] = rows
        return out

    def sampled_losses(self, batch, agree_rows=None):
        """Mean sampled-softmax losses [forward, backward], after dropout on the top layer, and the
        TableRows they read: the softmax's, then the word embedding's when it trains."""
        agree_rows = agree_rows or (lambda ids: ids)
        if self.reset_state_at_sentence_start:
            self.bilm.zero_state_rows(batch['sentence_start'])
        word_rows = None
        if self.trained_word_embedding() is not None:
            used = np.unique(np.concatenate([batch[key].reshape(-1) for key in WORD_IDS]))
            word_rows = TableRows([self.bilm.word_embedding], agree_rows(used[used > 0] - 1))
        tops = self.bilm.lm_outputs(*self._inputs(batch), word_rows=word_rows)
        hs = [top.reshape([-1, top.shape[-1]]) for top in tops]
        targets = [batch[key].reshape(-1) for _, key in DIRECTIONS]
        if self.dropout > 0:
            hs = [F.dropout(h, self.dropout, training=True) for h in hs]
        samples = [self.sampler.sample() for _ in DIRECTIONS]  # one candidate set per direction
        ids = np.unique(np.concatenate(targets + [c for c, _ in samples]))
        rows = self.softmax.select_rows(agree_rows(ids))
        losses = [self.softmax.sampled_loss(rows, h, t, c, np.log(self.sampler.expected_count(t, n)),
                                            np.log(self.sampler.expected_count(c, n)))
                  for h, t, (c, n) in zip(hs, targets, samples)]
        return losses, [rows] + ([word_rows] if word_rows is not None else [])

    def trained_word_embedding(self):
        """The biLM's word embedding when it trains (word input, not frozen), else None: a table
        whose rows a step updates sparsely, as the softmax's."""
        embedding = getattr(self.bilm, 'word_embedding', None)
        return embedding if embedding is not None and not embedding.stop_gradient else None

    def _inputs(self, batch):
        """A batch's (forward, backward) TokenInput for BiLM.lm_outputs: the ids the model reads
        (config.input_mode.reads), each direction's under its own keys (INPUT_KEYS)."""
        reads = self.bilm.config.input_mode.reads
        return tuple(TokenInput(**{name: batch[INPUT_KEYS[name][d]] for name in reads}) for d in range(2))

    def full_softmax_losses(self, batch):
        """Per-token full-softmax losses, tensors (forward [n], backward [n]), n = batch x unroll."""
        tops = self.bilm.lm_outputs(*self._inputs(batch))
        return [self.softmax.full_losses(top.reshape([-1, top.shape[-1]]), batch[key].reshape(-1).astype(np.int64))
                for top, (_, key) in zip(tops, DIRECTIONS)]

    def token_losses(self, batch):
        """Eval helper: full_softmax_losses as numpy arrays, without gradients."""
        with paddle.no_grad():
            return [loss.numpy() for loss in self.full_softmax_losses(batch)]


class Optimizer:
    """bilm-tf's update around a rule: gradients averaged over ranks in one all-reduce, then all of
    them clipped together by their global norm, then the rule (`_update` on a parameter or on the
    table rows the step read, with their slots) applied.

    Dense parameters are updated whole; the tables (the softmax's W and b; a trainable word
    embedding) only in the rows the step read, which the step hands to `step(table_rows)` (as
    bilm-tf's sparse IndexedSlices updates: a row no batch touched keeps its weights and state).
    """

    def __init__(self, model, lr, max_grad_norm, world_size=1):
        self.model, self.lr, self.max_grad_norm, self.world_size = model, lr, max_grad_norm, world_size
        tables = [model.softmax.W, model.softmax.b]
        if model.trained_word_embedding() is not None:
            tables.append(model.trained_word_embedding())
        names = {id(p): n for n, p in model.named_parameters()}
        self.sparse = [(names[id(p)], p) for p in tables]
        self.dense = [(n, p) for n, p in model.named_parameters()
                      if not p.stop_gradient and all(p is not t for t in tables)]
        self.n_updates = 0

    def _gradients(self, table_rows):
        """Averaged, clipped gradients: dense ones in self.dense's order, then the table rows'
        (table_rows: the step's TableRows, whose tables are self.sparse's, in order)."""
        values = [v for rows in table_rows for v in rows.values]
        if [id(t) for rows in table_rows for t in rows.tables] != [id(p) for _, p in self.sparse]:
            raise ValueError('the step\'s table rows do not match the tables this optimizer updates')
        grads = [p.grad if p.grad is not None else paddle.zeros_like(p) for _, p in self.dense]
        grads += [v.grad for v in values]
        if self.world_size > 1:  # one all-reduce of everything: far fewer messages than per tensor
            import paddle.distributed as dist
            flat = paddle.concat([g.reshape([-1]) for g in grads])
            dist.all_reduce(flat)
            grads = [g.reshape(shape) for g, shape in
                     zip(paddle.split(flat / self.world_size, [g.size for g in grads]), [g.shape for g in grads])]
        # squared_l2_norm, as Paddle's own global-norm clipping: faster than dot on CPU.
        norm = math.sqrt(float(paddle.add_n([_C_ops.squared_l2_norm(g) for g in grads]).sum()))
        if norm > self.max_grad_norm:
            grads = [g * (self.max_grad_norm / norm) for g in grads]
        return grads, norm

    @paddle.no_grad()
    def step(self, table_rows):
        """Apply one update, the tables' to their rows in `table_rows` (the step's TableRows, after
        backward); returns the global gradient norm before clipping."""
        grads, norm = self._gradients(table_rows)
        self.n_updates += 1
        lr = paddle.to_tensor([self.learning_rate()], dtype='float32')
        for (name, p), g in zip(self.dense, grads):
            self._update(p, g, self.slots[name], lr)
        sparse_grads = iter(grads[len(self.dense):])
        sparse = iter(self.sparse)
        for rows in table_rows:
            ids = paddle.to_tensor(rows.ids)
            for _ in rows.tables:
                (name, p), g = next(sparse), next(sparse_grads)
                values = paddle.gather(p, ids)
                state = {k: paddle.gather(v, ids) for k, v in self.slots[name].items()}
                self._update(values, g, state, lr)
                for k, v in state.items():
                    paddle.scatter_(self.slots[name][k], ids, v)
                paddle.scatter_(p, ids, values)
        return norm

    def learning_rate(self):
        return self.lr

    def clear_grad(self):
        self.model.clear_gradients()

    def _state_items(self):
        """(checkpoint key, slot tensor) pairs; Adagrad's accumulators keep the bare parameter name
        they had before there were other rules, so older checkpoints still load."""
        for name, slots in self.slots.items():
            for k, v in slots.items():
                yield (name if k == 'accumulator' else f'{name}.{k}'), v

    def state_dict(self):
        state = dict(self._state_items())
        state['n_updates'] = self.n_updates
        return state

    def set_state_dict(self, state):
        for key, v in self._state_items():
            if key not in state or tuple(state[key].shape) != tuple(v.shape):
                raise InputError(f'optimizer state for "{key}" is missing or has the wrong shape (resume with the '
                                 f'--freeze_bilm / --freeze_word_embeddings of the run that saved it)')
            v.set_value(state[key])
        self.n_updates = int(state.get('n_updates', 0))


class Adagrad(Optimizer):
    """bilm-tf's optimizer: TensorFlow's Adagrad, accumulators from `initial_accumulator`
    (acc += g^2; w -= lr * g / sqrt(acc))."""

    def __init__(self, model, lr, max_grad_norm, initial_accumulator=1.0, world_size=1):
        super().__init__(model, lr, max_grad_norm, world_size)
        self.slots = {n: {'accumulator': paddle.full(p.shape, initial_accumulator, dtype=p.dtype)}
                      for n, p in self.dense + self.sparse}

    def _update(self, param, grad, state, lr):
        _adagrad_update(param, grad, state['accumulator'], lr)


class Adam(Optimizer):
    """Adam with linear warm-up (not in bilm-tf; the budget recipe's option).

    lr rises linearly from lr / warmup_steps to lr over the first `warmup_steps` updates, then stays.
    The softmax rows (and a word embedding's) are updated lazily (only the rows a step selected,
    their moments decayed only when selected, as TensorFlow's LazyAdam): a dense Adam over a 100k x
    dim table every step would cost as much as the rest of the update.
    """

    def __init__(self, model, lr, max_grad_norm, warmup_steps=0, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 world_size=1):
        super().__init__(model, lr, max_grad_norm, world_size)
        self.warmup_steps, self.beta1, self.beta2, self.epsilon = warmup_steps, beta1, beta2, epsilon
        self.slots = {n: {'m': paddle.zeros(p.shape, dtype=p.dtype), 'v': paddle.zeros(p.shape, dtype=p.dtype)}
                      for n, p in self.dense + self.sparse}

    def learning_rate(self):
        warm = min(1.0, self.n_updates / self.warmup_steps) if self.warmup_steps else 1.0
        t = self.n_updates  # bias correction folded into the step size, as the Adam paper's last form
        return self.lr * warm * math.sqrt(1 - self.beta2 ** t) / (1 - self.beta1 ** t)

    def _update(self, param, grad, state, lr):
        m, v = state['m'], state['v']
        m.set_value(self.beta1 * m + (1 - self.beta1) * grad)
        v.set_value(self.beta2 * v + (1 - self.beta2) * grad * grad)
        param.set_value(param - lr * m / (paddle.sqrt(v) + self.epsilon))


def make_optimizer(model, name, lr, max_grad_norm, warmup_steps=0, world_size=1):
    """'adagrad' (bilm-tf's: accumulators from 1.0) or 'adam' (with warm-up)."""
    if name == 'adagrad':
        return Adagrad(model, lr, max_grad_norm, initial_accumulator=1.0, world_size=world_size)
    if name == 'adam':
        return Adam(model, lr, max_grad_norm, warmup_steps=warmup_steps, world_size=world_size)
    raise InputError(f'unknown optimizer {name!r} (adagrad or adam)')


def _adagrad_update(param, grad, accumulator, lr):
    """In place: accumulator += grad^2; param -= lr * grad / sqrt(accumulator) (TensorFlow's
    ApplyAdagrad). Paddle's fused adagrad kernel (what paddle.optimizer.Adagrad runs) with epsilon 0
    gives TF's formula in one pass instead of six elementwise ops."""
    _C_ops.adagrad_(param, grad, accumulator, lr, None, 0.0, False)


def train_step(model, optimizer, batch, agree_rows=None):
    """One training step as bilm-tf takes it -> (model output dict, global gradient norm).

    The gradient is that of `total_loss * unroll_steps` (bilm-tf's training.py), not of the mean
    loss: with Adagrad's accumulators starting at 1.0 and the global-norm clip at 10, the plain mean
    makes every early update ~unroll_steps times smaller and the clip never acts. Under several
    ranks the optimizer averages each rank's scaled gradient before clipping, as bilm-tf's towers.
    """
    out = model(batch, agree_rows)
    unroll_steps = batch['next_token_ids'].shape[1]
    (out['loss'] * unroll_steps).backward()
    norm = optimizer.step(out['table_rows'])
    optimizer.clear_grad()
    return out, norm


def evaluate(model, batches, max_tokens=None, progress=None):
    """Full-softmax perplexity of `model` over eval batches (dataset.iter_eval_batches).

    Every target is weighted by batch['weights'] so each data token counts once. Forward and
    backward perplexities are exp of each direction's mean loss; 'perplexity' is exp of the mean
    of the two losses, the figure bilm-tf reports. The LSTM state starts from zeros and is carried
    across batches; the model's own carried state and train/eval mode are restored afterwards.
    """
    saved, was_training = model.bilm.get_states(), model.training
    model.bilm.reset_states()
    set_mode(model, False)
    totals, n_tokens = np.zeros(2), 0.0
    try:
        for batch in batches:
            weights = batch['weights'].reshape(-1).astype(np.float64)
            losses = model.token_losses(batch)
            totals += [float((loss * weights).sum()) for loss in losses]
            n_tokens += weights.sum()
            if progress is not None:
                progress.update(int(weights.sum()))
            if max_tokens and n_tokens >= max_tokens:
                break
    finally:
        model.bilm.set_states(saved)
        set_mode(model, was_training)
    if n_tokens == 0:
        raise InputError('no tokens to evaluate (is the data empty?)')
    forward, backward = totals / n_tokens
    return {'n_tokens': int(n_tokens), 'forward_loss': forward, 'backward_loss': backward,
            'forward_perplexity': math.exp(forward), 'backward_perplexity': math.exp(backward),
            'perplexity': math.exp(0.5 * (forward + backward))}
