"""bilm-tf's update around a rule (`Optimizer`): gradients averaged over ranks, clipped by their
global norm, then Adagrad (bilm-tf's) or Adam with warm-up, the tables updated in the rows a step
read only (`make_optimizer`).
"""
import math

import paddle
from paddle import _C_ops

from paddle_elmo.model import kernels
from paddle_elmo.fileio import InputError


class Optimizer:
    """bilm-tf's update around a rule: gradients averaged over ranks in one all-reduce, then all of
    them clipped together by their global norm, then the rule (`_update` on a parameter or on the
    table rows the step read, with their slots) applied.

    Dense parameters are updated whole; the tables (the softmax's W and b; a trainable word
    embedding) only in the rows the step read, which the step hands to `step(table_rows)` (as
    bilm-tf's sparse IndexedSlices updates: a row no batch touched keeps its weights and state).
    """

    def __init__(self, model, lr, max_grad_norm, world_size=1, decay=None, kernels=None):
        self.model, self.lr, self.max_grad_norm, self.world_size = model, lr, max_grad_norm, world_size
        self.kernels = model.kernels if kernels is None else kernels  # the model's, unless given
        self.decay = decay or Decay()
        tables = [model.softmax.W, model.softmax.b]
        if model.trained_word_embedding() is not None:
            tables.append(model.trained_word_embedding())
        names = {id(p): n for n, p in model.named_parameters()}
        self.sparse = [(names[id(p)], p) for p in tables]
        self.dense = [(n, p) for n, p in model.named_parameters()
                      if not p.stop_gradient and all(p is not t for t in tables)]
        self.n_updates = 0

    def _gradients(self, table_rows):
        """-> (averaged gradients: dense ones in self.dense's order, then the table rows' (table_rows:
        the step's TableRows, whose tables are self.sparse's, in order); their global norm; the
        clip's factor on them, 1.0 when the norm is within max_grad_norm)."""
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
        return grads, norm, (self.max_grad_norm / norm if norm > self.max_grad_norm else 1.0)

    @paddle.no_grad()
    def step(self, table_rows):
        """Apply one update, the tables' to their rows in `table_rows` (the step's TableRows, after
        backward); returns the global gradient norm before clipping.

        On CPU the kernels (kernels.cc) update every dense parameter in one call and each table's
        rows in place; elsewhere the rule's Paddle ops run tensor by tensor, the rows through a
        gather and a scatter. Both compute the same formula, operation for operation (an ulp apart
        where Paddle's adagrad takes Eigen's fast sqrt: kernels.cc)."""
        grads, norm, scale = self._gradients(table_rows)
        self.n_updates += 1
        lr = self.learning_rate()
        ops = kernels.fused_updates([p for _, p in self.dense + self.sparse], self.kernels)
        self._update_dense(ops, grads[:len(self.dense)], lr, scale)
        self._update_rows(ops, table_rows, grads[len(self.dense):], lr, scale)
        return norm

    def _update_dense(self, ops, grads, lr, scale):
        """The dense parameters from their gradients (self.dense's order)."""
        if ops is not None and self.dense:  # Paddle's custom-op call aborts on an empty list (--freeze_bilm)
            # On detached views: Paddle refuses in-place ops on leaves that need gradients.
            self._fused_dense(ops, [p.detach() for _, p in self.dense], [self.slots[n] for n, _ in self.dense],
                              grads, lr, scale)
            return
        lr_t = paddle.to_tensor([lr], dtype='float32')
        for (name, p), g in zip(self.dense, grads):
            self._update(p, _clipped(g, scale), self.slots[name], lr_t)

    def _update_rows(self, ops, table_rows, grads, lr, scale):
        """The tables' rows a step read (table_rows), from their gradients (self.sparse's order)."""
        grads, sparse = iter(grads), iter(self.sparse)
        lr_t = None if ops is not None else paddle.to_tensor([lr], dtype='float32')
        for rows in table_rows:
            ids = paddle.to_tensor(rows.ids)
            for _ in rows.tables:
                (name, p), g = next(sparse), next(grads)
                if ops is not None:
                    self._fused_rows(ops, p.detach(), self.slots[name], ids, g, lr, scale)
                    continue
                values = paddle.gather(p, ids)
                state = {k: paddle.gather(v, ids) for k, v in self.slots[name].items()}
                self._update(values, _clipped(g, scale), state, lr_t)
                for k, v in state.items():
                    paddle.scatter_(self.slots[name][k], ids, v)
                paddle.scatter_(p, ids, values)

    def learning_rate(self):
        return self.lr * self.decay.factor(self.n_updates)

    def clear_grad(self):
        """Drop the gradients (not zeroed: zeroing writes every one, and the next backward then adds
        into the zeros, a read and a write more per value; a dropped one is the backward's own
        result, the same floats)."""
        self.model.clear_gradients(set_to_zero=False)

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

    def __init__(self, model, lr, max_grad_norm, initial_accumulator=1.0, world_size=1, decay=None, kernels=None):
        super().__init__(model, lr, max_grad_norm, world_size, decay, kernels)
        self.slots = {n: {'accumulator': paddle.full(p.shape, initial_accumulator, dtype=p.dtype)}
                      for n, p in self.dense + self.sparse}

    def _update(self, param, grad, state, lr):
        _adagrad_update(param, grad, state['accumulator'], lr)

    def _fused_dense(self, ops, params, slots, grads, lr, scale):
        ops.elmo_adagrad_dense(params, [s['accumulator'] for s in slots], grads, lr, scale)

    def _fused_rows(self, ops, table, slots, ids, grad, lr, scale):
        ops.elmo_adagrad_rows(table, slots['accumulator'], ids, grad, lr, scale)


class Adam(Optimizer):
    """Adam with linear warm-up (not in bilm-tf; the budget recipe's option).

    lr rises linearly from lr / warmup_steps to lr over the first `warmup_steps` updates, then stays.
    The softmax rows (and a word embedding's) are updated lazily (only the rows a step selected,
    their moments decayed only when selected, as TensorFlow's LazyAdam): a dense Adam over a 100k x
    dim table every step would cost as much as the rest of the update.
    """

    def __init__(self, model, lr, max_grad_norm, warmup_steps=0, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 world_size=1, decay=None, kernels=None):
        super().__init__(model, lr, max_grad_norm, world_size, decay, kernels)
        self.warmup_steps, self.beta1, self.beta2, self.epsilon = warmup_steps, beta1, beta2, epsilon
        self.slots = {n: {'m': paddle.zeros(p.shape, dtype=p.dtype), 'v': paddle.zeros(p.shape, dtype=p.dtype)}
                      for n, p in self.dense + self.sparse}

    def learning_rate(self):
        warm = min(1.0, self.n_updates / self.warmup_steps) if self.warmup_steps else 1.0
        t = self.n_updates  # bias correction folded into the step size, as the Adam paper's last form
        return self.lr * warm * self.decay.factor(t - self.warmup_steps) * math.sqrt(1 - self.beta2 ** t) / (1 - self.beta1 ** t)

    def _update(self, param, grad, state, lr):
        m, v = state['m'], state['v']
        m.set_value(self.beta1 * m + (1 - self.beta1) * grad)
        v.set_value(self.beta2 * v + (1 - self.beta2) * grad * grad)
        param.set_value(param - lr * m / (paddle.sqrt(v) + self.epsilon))

    def _constants(self):
        """The kernels' b1, c1, b2, c2, eps: the floats the Paddle ops above multiply by."""
        return self.beta1, 1 - self.beta1, self.beta2, 1 - self.beta2, self.epsilon

    def _fused_dense(self, ops, params, slots, grads, lr, scale):
        ops.elmo_adam_dense(params, [s['m'] for s in slots], [s['v'] for s in slots], grads, lr, scale,
                            *self._constants())

    def _fused_rows(self, ops, table, slots, ids, grad, lr, scale):
        ops.elmo_adam_rows(table, slots['m'], slots['v'], ids, grad, lr, scale, *self._constants())


class Decay:
    """The learning rate's multiplier after warm-up: 1 with kind 'none' (bilm-tf: a constant rate);
    else from 1 down to `final` over `steps` updates, along a line ('linear') or a half cosine
    ('cosine'), then `final`: a run of a known number of steps can end at a low rate."""

    def __init__(self, kind='none', steps=0, final=0.1):
        if kind != 'none' and steps < 1:
            raise InputError(f'a {kind} learning-rate decay needs a number of steps >= 1, got {steps}')
        self.kind, self.steps, self.final = kind, steps, final

    def factor(self, update):
        """update: updates since warm-up ended (<= 0 during it) -> the multiplier."""
        if self.kind == 'none' or update <= 0:
            return 1.0
        done = min(1.0, update / self.steps)
        fall = done if self.kind == 'linear' else 0.5 * (1.0 - math.cos(math.pi * done))
        return 1.0 - (1.0 - self.final) * fall


def make_optimizer(model, name, lr, max_grad_norm, warmup_steps=0, world_size=1, decay=None, adam_beta2=0.999,
                   kernels=None):
    """'adagrad' (bilm-tf's: accumulators from 1.0) or 'adam' (with warm-up and adam_beta2); decay: a
    Decay (none: constant); kernels: whether its updates run on the CPU kernels (kernels.Kernels;
    None: the model's)."""
    if name == 'adagrad':
        return Adagrad(model, lr, max_grad_norm, initial_accumulator=1.0, world_size=world_size, decay=decay,
                       kernels=kernels)
    if name == 'adam':
        return Adam(model, lr, max_grad_norm, warmup_steps=warmup_steps, beta2=adam_beta2, world_size=world_size,
                    decay=decay, kernels=kernels)
    raise InputError(f'unknown optimizer {name!r} (adagrad or adam)')


def _clipped(grad, scale):
    """grad times the clip's factor (the Paddle-op path; the kernels apply it on the way)."""
    return grad if scale == 1.0 else grad * scale


def _adagrad_update(param, grad, accumulator, lr):
    """In place: accumulator += grad^2; param -= lr * grad / sqrt(accumulator) (TensorFlow's
    ApplyAdagrad). Paddle's fused adagrad kernel (what paddle.optimizer.Adagrad runs) with epsilon 0
    gives TF's formula in one pass instead of six elementwise ops."""
    _C_ops.adagrad_(param, grad, accumulator, lr, None, 0.0, False)
