"""bilm-tf's update around a rule (`Optimizer`): gradients averaged over ranks, clipped by their
global norm, then Adagrad (bilm-tf's) or Adam with warm-up, the tables updated in the rows a step
read only (`make_optimizer`).
"""
import math

import paddle
from paddle import _C_ops

from paddle_elmo.fileio import InputError


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
