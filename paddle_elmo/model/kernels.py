"""CPU kernels (kernels.cc) for the hot spots of Paddle's CPU ops, and the Paddle-op versions they replace.

    h_all, c_all = recurrence(gates_x, bias, batch_sizes, h0, c0, w_hidden, w_proj, cell_clip, proj_clip, kernels)
    h_all, c_all, (h, c) = layer_recurrence(x, w, bias, batch_sizes, h0, c0, w_proj, cell_clip, proj_clip,
                                            dropout, residual, forget_bias)  # training, CPU
    h_all, (h, c) = streamed_recurrence(x, w_input, bias, batch_sizes, block_ends, h0, c0, w_hidden, w_proj,
                                        cell_clip, proj_clip, kernels)   # inference on CPU: block by block
    y = char_cnn(char_ids, spans, embed, weights, biases, relu, max_chars, pad_id)   # [tokens, N]
    best = max_over_positions(x)   # [positions, rows, n] -> [rows, n], in Paddle's ops
    losses = sampled_softmax_losses(true_logits, cand_logits, cand_bias, labels, kernels)   # [n]
    losses = sampled_softmax(h, w, b, true_pos, cand_pos, log_q_true, log_q_cand, labels, kernels,
                             tables=None)  # [n]; tables: (W, b, rows) to read the rows in place
    y = highway_gate(carry, carry_bias, transform, transform_bias, x, kernels)   # [tokens, dim]
    y = add_bias(x, bias)          # [rows, k] + [k]
    rows = take_rows(x, index, kernels)     # x[index], x [R, d] (paddle.gather on axis 0)

recurrence: one LSTM layer in one direction on the packed time-major rows of lstm.LstmStack.
Step t runs the first batch_sizes[t] rows; gates_x [tokens, 4D] + bias [4D] is x @ W_input + b for
every step (gate blocks i, j, f, o); the results are h [tokens, P] and c [tokens, D] for every packed row.
As a Python loop it costs tens of Paddle ops per step (forward and backward), each with its own
single-threaded overhead on CPU; the kernel does a step in two matmuls and one pass over the gates.
layer_recurrence is the kernel's training form: it takes the layer's inputs x [tokens, I] and its
whole W (W_input over W_hidden) and makes x @ W_input itself, so that the backward takes both
blocks' gradients in the recurrence's own products (no split of W, no separate product's backward);
it also drops x (dropout's kernel masks), adds the residual and the forget bias, and copies out the
final states, so that no dropout, add or gather runs around its calls, forward or backward.
streamed_recurrence is its inference form: it takes the layer's inputs x [tokens, I] and W_input,
and makes each block of steps' products just before it runs them, so that one block's gates are
alive, not the layer's; it keeps no cells and returns each row's last state.

char_cnn: the char CNN's windows, products, max-pool (the gradient split equally among tied
maxima as TensorFlow's reduce_max), bias and relu in one call, each token's own windows only (the
bias and relu on each token's max while it is in cache, the backward's max and ties found again
from the kept products, so the call writes one [tokens, N] output): a window's product is
the sum of its chars' rows of the tables E W_j (the call's distinct chars times each char position's
rows of the weight), so the windows are never built, and the backward sums the windows' gradients
by char the same way. As Paddle ops: per filter width and chunk of tokens an embedding lookup, a
product over windows padded to the chunk's longest token and one maximum per window position
(max_over_positions, the path where the kernel does not run).

take_rows: the softmax's rows of a step (sampled_softmax.TableRows), copied on every thread, and
their gradient added in paddle.gather's order (its CPU kernels run on one thread).

sampled_softmax_losses: cross-entropy over [true logit, candidate logits] per row. As Paddle ops
it is a concat into [n, C + 1] and cross_entropy, whose CPU kernel evaluates exp one element at
a time; the kernel vectorises it and needs no concat. sampled_softmax is the training loss on a
step's rows of W and b, from the positions of each row's target and of the candidates: the same
numbers as gathering those rows and taking sampled_softmax_losses, up to the order of sums and the
exp's rounding, without the gathered copies and their gradients; given the tables, it reads the
step's rows from them in place, and w and b only take the rows' gradients. Its forward is one call (the
logits' product included, made block by block and turned into exps while in cache); its backward
takes no exp.

highway_gate: y = g * relu(t) + (1 - g) * x, g = sigmoid(carry + carry_bias), t = transform +
transform_bias, on the highway's two products. As Paddle ops: eight ops forward, more backward.

The kernels also add the biases themselves: Paddle's broadcast add is slower than a same-shape add
on CPU, and its backward (a column sum) far slower; add_bias is that add with a matmul backward.

The kernels are compiled on first use (kernel_build.py: g++, once, cached in the toolkit's cache
directory). Their loops over large tensors are split among OpenMP threads from Paddle's own Intel
OpenMP runtime (the threads MKL uses), when the wheel ships it.
The Python versions (the LSTM step and the highway gate are layer_math's, shared with the export)
stay as the path for GPUs, for machines without a compiler (a warning in the log says so, once)
and as the references the kernels are tested against.
ELMO_CPU_KERNELS=0 turns the kernels off.

Which of the two a model runs, and where its dropout masks come from, is a value the model carries
(`Kernels`: CPU_KERNELS, the kernels wherever they apply, or PADDLE_OPS, Paddle's ops alone), never
a process-wide switch: BiLM and LanguageModel take it (CPU_KERNELS by default) and hand it to their
parts, and every function here takes it from its caller.
"""
import logging
import os
from dataclasses import dataclass

import numpy as np

import paddle
import paddle.nn.functional as F
from paddle.autograd import PyLayer

from paddle_elmo.model import layer_math
from paddle_elmo.model.dropout_masks import DROPOUT_MASKS
from paddle_elmo.model.kernel_build import build
from paddle_elmo.model.packing import last_rows, with_initial_rows

log = logging.getLogger(__name__)

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'kernels.cc')
_ops = None  # the compiled module, or False once it is known to be unavailable


def kernel():
    """The compiled ops module, or None (turned off, or the build failed: a warning in the log, once)."""
    global _ops
    if _ops is None:
        _ops = False
        if os.environ.get('ELMO_CPU_KERNELS', '1') == '0':
            log.debug('CPU kernels off (ELMO_CPU_KERNELS=0): Python loops of Paddle ops')
        else:
            try:
                _ops = build(SOURCE)
            except Exception as e:  # no compiler, no headers: the Python loop still works
                log.warning('CPU kernels unavailable, using Python loops of Paddle ops (%s: %s)', type(e).__name__, e)
    return _ops or None


@dataclass(frozen=True)
class Kernels:
    """Which implementation of the hot spots a model runs, carried by the model (BiLM and its parts,
    LanguageModel and its softmax; the optimizer takes its model's) and passed to each function here.

    cpu: the compiled kernels for float32 tensors on the CPU, when they are built (False: Paddle's
        ops everywhere, as a GPU runs them: the references the kernels are tested against).
    dropout_masks: where training dropout's masks come from on the CPU, one of DROPOUT_MASKS
        (dropout_masks.py: 'kernel', the kernel's, or 'paddle', F.dropout's).
    """
    cpu: bool = True
    dropout_masks: str = 'kernel'

    def __post_init__(self):
        if self.dropout_masks not in DROPOUT_MASKS:
            raise ValueError(f'dropout masks must be one of {", ".join(DROPOUT_MASKS)}, got {self.dropout_masks!r}')

    def for_tensor(self, x):
        """The compiled module when the kernels are on and x (float32) is on the CPU, else None."""
        return kernel() if self.cpu and x.place.is_cpu_place() and x.dtype == paddle.float32 else None


CPU_KERNELS = Kernels()  # a model's default: the kernels wherever they apply
PADDLE_OPS = Kernels(cpu=False)  # Paddle's ops alone


def tracks_grad(tensors):
    """Whether autograd must see an op on these tensors (else the kernel runs without a PyLayer)."""
    return paddle.is_grad_enabled() and not all(t.stop_gradient for t in tensors)


def _needed_grads(ctx, grads):
    """A PyLayer's input gradients, None for inputs that had stop_gradient (ctx.needs, set in forward)."""
    return tuple(g if need else None for g, need in zip(grads, ctx.needs))


# --------------------------------------------------------------------------------------------
# Bias add with a fast backward
# --------------------------------------------------------------------------------------------

def add_bias(x, bias):
    """x [rows, k] + bias [k], with a fast backward on CPU."""
    return _AddBias.apply(x, bias)


class _AddBias(PyLayer):
    @staticmethod
    def forward(ctx, x, bias):
        ctx.needs = (not x.stop_gradient, not bias.stop_gradient)
        return x + bias

    @staticmethod
    def backward(ctx, grad):
        return _needed_grads(ctx, (grad, bias_grad(grad) if ctx.needs[1] else None))


def bias_grad(grad):
    """The gradient of a bias added to every row, from the sum's gradient [rows, k] -> [k]: a
    [1, rows] x [rows, k] product (Paddle's CPU column sum, the backward of a broadcast add, is far
    slower)."""
    return paddle.matmul(paddle.ones([1, grad.shape[0]], dtype=grad.dtype), grad).reshape([grad.shape[1]])


# --------------------------------------------------------------------------------------------
# LSTM recurrence
# --------------------------------------------------------------------------------------------

def recurrence(gates_x, bias, batch_sizes, h0, c0, w_hidden, w_proj, cell_clip, proj_clip, kernels):
    """Run the steps -> (h [tokens, P], c [tokens, D]), packed as gates_x [tokens, 4D] (bias [4D] not added).

    batch_sizes: positive, non-increasing rows per step; h0 [B, P], c0 [B, D] with B >= batch_sizes[0];
    cell_clip / proj_clip: None for no clipping. Runs the kernel on CPU when `kernels` allows it and
    no gradient is tracked (gates_x is only read); with gradients, Paddle's ops (the kernel's training
    form takes the layer's inputs rather than their products: layer_recurrence).
    """
    sizes = [int(n) for n in batch_sizes]
    ops = kernels.for_tensor(gates_x)
    if ops is None or tracks_grad((gates_x, bias, w_hidden, w_proj, h0, c0)):
        return loop_recurrence(gates_x, bias, sizes, h0, c0, w_hidden, w_proj, cell_clip, proj_clip)
    return tuple(ops.elmo_lstm_forward(gates_x, bias, w_hidden, w_proj, h0, c0, sizes, *_clips(cell_clip, proj_clip)))


def layer_recurrence(x, w, bias, batch_sizes, h0, c0, w_proj, cell_clip, proj_clip, dropout=None, residual=False,
                     forget_bias=None):
    """recurrence() in training on the CPU kernel, from the layer's inputs x [tokens, input_dim] and its
    whole W [input_dim + P, 4D] (W_input over W_hidden) -> (h [tokens, P], c [tokens, D],
    (h_last [B, P], c_last [B, D])): each row's state after its last step, h0 / c0 for rows that did
    not run (packing.last_states' values; the kernel copies them out, so no gathers run).

    dropout: None, or (seed, p, first): the kernel drops x first, with dropout()'s kernel mask of
    that seed and p, x's first element being element `first` of the tensor dropout() would drop
    (the same numbers as dropout() on the layer's input, split into groups of steps after it).
    residual: the first result is h + x after its dropout (input_dim = P), as a residual connection's
    output (bilm-tf's dropout wraps the residual cell). forget_bias: None, or a constant [4D] the
    kernel adds to bias (LstmLayer.forget_bias: the add is LstmLayer.bias()'s). These run inside the
    kernel's two calls, with no op of their own forward or backward.

    The kernel makes x @ W_input itself on W's rows, so W is never split (the split's copies and
    its backward's concat), and its backward takes the input product's gradients with the
    recurrence's: dg @ W^T per step gives [dx | dh_prev], and [x | h_prev]^T @ dg after the loop the
    whole grad_W. The kernel alone runs it (callers check `kernels.for_tensor(x)` first); the
    other parameters are recurrence's.
    """
    seed, p, first = dropout if dropout is not None else (0, 0.0, 0)
    offset = paddle.empty([0], dtype=bias.dtype) if forget_bias is None else forget_bias
    h, c, h_last, c_last = _KernelRecurrence.apply(x, w, bias, w_proj, h0, c0, offset, [int(n) for n in batch_sizes],
                                                   *_clips(cell_clip, proj_clip), int(seed), float(p), int(first),
                                                   bool(residual))
    return h, c, (with_initial_rows(h_last, h0), with_initial_rows(c_last, c0))


def _clips(cell_clip, proj_clip):
    """The kernels' clips: 0.0 for None (no clipping)."""
    return float(cell_clip or 0.0), float(proj_clip or 0.0)


def streamed_recurrence(x, w_input, bias, batch_sizes, block_ends, h0, c0, w_hidden, w_proj, cell_clip, proj_clip,
                        kernels):
    """recurrence() in inference (no gradient), from the layer's inputs rather than their products.

    # Parameters
    x: [tokens, input_dim], packed as recurrence's gates_x; w_input [input_dim, 4D]; bias [4D].
    block_ends: the step at which each block of steps ends (increasing, the last len(batch_sizes)):
        the kernel makes a block's products x @ w_input [block rows, 4D] just before it runs the
        block, so only one block's are alive.
    kernels: the model's, whose `for_tensor(x)` is the compiled module (the kernel alone runs it:
        callers check that first); the other parameters are recurrence's.

    Returns (h [tokens, P], (h_last [B, P], c_last [B, D])): each row's state after its last step,
    h0 / c0 for rows that did not run (packing.last_states' values, without the cells of every step).
    """
    h, h_last, c_last = kernels.for_tensor(x).elmo_lstm_inference(x, w_input, bias, w_hidden, w_proj, h0, c0,
                                                [int(n) for n in batch_sizes], [int(e) for e in block_ends],
                                                *_clips(cell_clip, proj_clip))
    return h, (h_last, c_last)


class _KernelRecurrence(PyLayer):
    """layer_recurrence's op: the first output is h, or h + x with a residual; the backward reads the
    product's input (x, or the kernel's dropped copy of it) and h."""

    @staticmethod
    def forward(ctx, x, w, bias, w_proj, h0, c0, bias_offset, sizes, cell_clip, proj_clip, seed, p, first, residual):
        args = (sizes, cell_clip, proj_clip, seed, p, first, residual)
        h, c, acts, m, h_last, c_last, out, dropped = kernel().elmo_lstm_training_forward(x, w, bias, w_proj, h0,
                                                                                          c0, bias_offset, *args)
        # An output no loss reads (the language model's cells, its detached final states) gets None,
        # not a zero tensor filled by Paddle: the kernel takes an empty cell gradient as zero.
        ctx.set_materialize_grads(False)
        ctx.save_for_backward(dropped if p > 0 else x, w, w_proj, h0, c0, h, c, acts, m)
        ctx.args = args
        ctx.needs = [not t.stop_gradient for t in (x, w, bias, w_proj, h0, c0)]
        return out if residual else h, c, h_last, c_last

    @staticmethod
    def backward(ctx, grad_out, grad_c, grad_h_last=None, grad_c_last=None):
        saved = ctx.saved_tensor()
        h, c = saved[5], saved[6]
        *args, residual = ctx.args
        grad_h = grad_out
        if grad_h_last is not None or grad_c_last is not None:  # the final states' join their last steps' rows
            index = last_rows(tuple(args[0]), h.place)
            grad_h, grad_c = _add_rows(grad_h, index, grad_h_last, h), _add_rows(grad_c, index, grad_c_last, c)
        empty = lambda t: paddle.empty([0, t.shape[1]], dtype=t.dtype)  # a zero gradient, unfilled
        grad_skip = grad_out if residual and grad_out is not None else empty(h)  # the residual's input's
        grad_h = paddle.zeros_like(h) if grad_h is None else grad_h
        grad_c = empty(c) if grad_c is None else grad_c
        return (*_needed_grads(ctx, kernel().elmo_lstm_backward(*saved, grad_h, grad_c, grad_skip, *args)), None)


def _add_rows(grad, index, rows, like):
    """grad [tokens, d] (None: zeros like `like`) with rows [n, d] added at its rows index [n] (rows None: grad)."""
    if rows is None:
        return grad
    return paddle.index_add(paddle.zeros_like(like) if grad is None else grad, index, 0, rows)


def loop_recurrence(gates_x, bias, batch_sizes, h0, c0, w_hidden, w_proj, cell_clip=None, proj_clip=None):
    """recurrence() as a Python loop of layer_math.lstm_step (any device, autograd)."""
    gates_x = add_bias(gates_x, bias)
    h, c = h0, c0
    hs, cs = [], []
    sizes = [int(n) for n in batch_sizes]
    for n, gates_in in zip(sizes, paddle.split(gates_x, sizes) if len(sizes) > 1 else [gates_x]):
        if n < h.shape[0]:
            h, c = h[:n], c[:n]
        h, c = layer_math.lstm_step(gates_in, h, c, w_hidden, w_proj, cell_clip, proj_clip)
        hs.append(h)
        cs.append(c)
    return (hs[0], cs[0]) if len(hs) == 1 else (paddle.concat(hs), paddle.concat(cs))


# --------------------------------------------------------------------------------------------
# The char CNN
# --------------------------------------------------------------------------------------------

def char_cnn(char_ids, spans, embed, weights, biases, relu, max_chars, pad_id):
    """bilm-tf's char CNN up to its activation: each filter's max over a token's windows of embedded
    chars plus its bias, through relu when `relu` -> [tokens, N], the widths side by side (N = sum
    of n_i), in one kernel call (float32 CPU tensors with the kernels on: token_layer.EagerOps calls
    it only there). Without `relu` the caller applies its activation (tanh) on the result.

    # Parameters
    char_ids: int64 numpy [tokens, cols >= max_chars], shifted char ids; spans: int64 numpy [tokens],
        packing.window_spans (the windows from spans[t] on are all PAD: computed once for every
        token, counted as many times as they are); embed [V, C], the char embedding; weights: one
        [w_i * C, n_i] per filter width w_i; biases: one [n_i] per width; pad_id: the id of PAD
        inside a token.
    The bias and relu are Paddle's add and relu (the same bits as adding and applying them after
    the max), relu's gradient passes where its output is positive, and the max's gradient is split
    among tied windows as TensorFlow's reduce_max (max_over_positions'); row 0 of embed (the
    padding token's char) gets none, as nn.Embedding's padding_idx.
    """
    ids, spans_t = (paddle.to_tensor(np.ascontiguousarray(a, dtype=np.int64)) for a in (char_ids, spans))
    attrs = (int(max_chars), int(pad_id), bool(relu))
    if tracks_grad([embed, *weights, *biases]):
        rows = [int(np.minimum(max_chars - w.shape[0] // embed.shape[1] + 1, spans).sum()) + 1 for w in weights]
        return _KernelCharCnn.apply(ids, spans_t, embed, rows, attrs, len(weights), *weights, *biases)
    out = _pooled(ids.shape[0], weights)
    kernel().elmo_char_cnn(ids, spans_t, embed, list(weights), list(biases), out,
                           [paddle.empty([1, w.shape[1]]) for w in weights], *attrs)
    return out


def _pooled(tokens, weights):
    """The kernel's output [tokens, N], to be written in place."""
    return paddle.empty([tokens, sum(w.shape[1] for w in weights)])


class _KernelCharCnn(PyLayer):
    """The forward keeps every window's product [rows_i, n_i] for the backward, which finds each
    token's max and the windows that reach it there and sums their gradients by char (the
    products are read only)."""

    @staticmethod
    def forward(ctx, ids, spans, embed, rows, attrs, widths, *weights_and_biases):
        weights, biases = weights_and_biases[:widths], weights_and_biases[widths:]
        out = _pooled(ids.shape[0], weights)
        products = [paddle.empty([r, w.shape[1]]) for r, w in zip(rows, weights)]
        kernel().elmo_char_cnn(ids, spans, embed, list(weights), list(biases), out, products, *attrs)
        ctx.save_for_backward(ids, spans, embed, *weights, *biases, *products)
        ctx.attrs, ctx.widths = attrs, widths
        ctx.needs = [not t.stop_gradient for t in (embed, *weights, *biases)]
        return out

    @staticmethod
    def backward(ctx, grad):
        ids, spans, embed, *rest = ctx.saved_tensor()
        n = ctx.widths
        weights, biases, products = rest[:n], rest[n:2 * n], rest[2 * n:]
        grad_embed = paddle.empty(embed.shape)
        grad_weights, grad_biases = [paddle.empty(w.shape) for w in weights], [paddle.empty(b.shape) for b in biases]
        kernel().elmo_char_cnn_backward(ids, spans, embed, weights, biases, grad, products, grad_embed, grad_weights,
                                        grad_biases, *ctx.attrs)
        return (None, None, *_needed_grads(ctx, (grad_embed, *grad_weights, *grad_biases)))


def max_over_positions(x):
    """[positions, rows, n] -> [rows, n]: the max over positions, its gradient split equally among
    tied maxima as TensorFlow's reduce_max (bilm-tf), in Paddle's ops (the char CNN's max where
    the kernel does not run)."""
    return _LoopMaxOverPositions.apply(x) if not x.stop_gradient else _running_max(x)


class _LoopMaxOverPositions(PyLayer):
    """Paddle's own routes are slower on CPU: max(axis)'s backward, and argmax + take_along_axis's
    (scatter, expand)."""

    @staticmethod
    def forward(ctx, x):
        best = _running_max(x)
        ctx.save_for_backward(x, best)
        return best

    @staticmethod
    def backward(ctx, grad):
        x, best = ctx.saved_tensor()
        # >= is == here (best is the max), and faster than == in Paddle's CPU kernels.
        hits = [(x[k] >= best).astype(grad.dtype) for k in range(x.shape[0])]
        share = grad / paddle.add_n(hits)
        return paddle.stack([hit * share for hit in hits])


def _running_max(x):
    """A running paddle.maximum over the contiguous [rows, n] slabs (faster than paddle.max on CPU)."""
    best = x[0]
    for k in range(1, x.shape[0]):
        best = paddle.maximum(best, x[k])
    return best


# --------------------------------------------------------------------------------------------
# Sampled-softmax cross-entropy
# --------------------------------------------------------------------------------------------

NEG_INF = -1e30  # a left-out true logit: exp() of it is exactly 0 in float32


def sampled_softmax_losses(true_logits, cand_logits, cand_bias, labels, kernels):
    """Per-row cross-entropy [n] over the logits [true_logits[i], cand_logits[i, :] + cand_bias].

    true_logits [n], cand_logits [n, C], cand_bias [C]; labels: int64 numpy [n], 0 when the row's target is the
    true column, k > 0 when it is candidate k - 1 (an accidental hit): then the true column,
    which holds the same word, is left out of the row.
    """
    ops = kernels.for_tensor(cand_logits)
    labels_t = paddle.to_tensor(labels)
    if ops is None:
        hit = (labels > 0).astype('float32')
        true_column = true_logits + paddle.to_tensor(hit * np.float32(NEG_INF))
        logits = paddle.concat([true_column.unsqueeze(1), add_bias(cand_logits, cand_bias)], axis=1)
        return F.cross_entropy(logits, labels_t, reduction='none').reshape([-1])  # [n], a block of one row too
    inputs = (true_logits, cand_logits, cand_bias)
    if tracks_grad(inputs):
        return _KernelSampledSoftmaxLoss.apply(*inputs, labels_t)
    return ops.elmo_sampled_softmax_loss(*inputs, labels_t)[0]


class _KernelSampledSoftmaxLoss(PyLayer):
    @staticmethod
    def forward(ctx, true_logits, cand_logits, cand_bias, labels):
        loss, lse = kernel().elmo_sampled_softmax_loss(true_logits, cand_logits, cand_bias, labels)
        ctx.save_for_backward(true_logits, cand_logits, cand_bias, labels, lse)
        ctx.needs = [not t.stop_gradient for t in (true_logits, cand_logits, cand_bias)]
        return loss

    @staticmethod
    def backward(ctx, grad):
        return _needed_grads(ctx, kernel().elmo_sampled_softmax_loss_backward(*ctx.saved_tensor(), grad))


def sampled_softmax(h, w, b, true_pos, cand_pos, log_q_true, log_q_cand, labels, kernels, tables=None):
    """Per-row sampled-softmax loss [n] on a step's rows of the softmax.

    # Parameters
    h: [n, P], the top layer's outputs; w [R, P] and b [R, 1]: the step's rows of W and b
        (sampled_softmax.TableRows' values); true_pos [n], cand_pos [C]: int64 numpy rows of w of
        each row's target and of the distinct candidates; log_q_true [n], log_q_cand [C]: numpy log
        expected counts subtracted from the logits; labels: as sampled_softmax_losses'.
    tables: None, or (W [V, P], b [V, 1], rows: int64 numpy [R], each of w's rows' row of W): the
        kernel (which must run: float32 on the CPU, kernels on) then reads the rows from W and b in
        place, and w and b only receive the rows' gradients (their contents are not read:
        TableRows made with copy=False).
    """
    if tables is None:
        if kernels.for_tensor(h) is None or not tracks_grad([h, w, b]):
            consts = [paddle.to_tensor(np.ascontiguousarray(a, dtype=dtype)) for a, dtype in (
                (true_pos, np.int64), (cand_pos, np.int64), (log_q_true, np.float32), (log_q_cand, np.float32))]
            return _rows_softmax_losses(h, w, b, *consts, labels, kernels)
        tables = (w, b, np.arange(w.shape[0], dtype=np.int64))
    table_w, table_b, rows = tables
    # the kernels' int64 constants in one array, their float32 ones in another: two conversions, not six
    index = paddle.to_tensor(np.concatenate([true_pos, cand_pos, labels, rows]).astype(np.int64, copy=False))
    log_q = paddle.to_tensor(np.concatenate([log_q_true, log_q_cand]).astype(np.float32, copy=False))
    if not tracks_grad([h, w, b]):
        return kernel().elmo_sampled_softmax_forward(h, table_w, table_b, index, log_q)[3]
    return _KernelSampledSoftmax.apply(h, w, b, table_w.detach(), table_b.detach(), index, log_q)


def _rows_softmax_losses(h, w, b, true_pos, cand_pos, log_q_true, log_q_cand, labels, kernels):
    """sampled_softmax's numbers by gathering the rows (Paddle's ops, or the kernels without gradients);
    labels: numpy, as sampled_softmax_losses takes them."""
    w_true, b_true = take_rows(w, true_pos, kernels), take_rows(b, true_pos, kernels).squeeze(-1)
    w_cand, b_cand = take_rows(w, cand_pos, kernels), take_rows(b, cand_pos, kernels).squeeze(-1)
    true_logits = (h * w_true).sum(axis=-1) + b_true - log_q_true
    cand_logits = paddle.matmul(h, w_cand, transpose_y=True)  # [n, C]
    return sampled_softmax_losses(true_logits, cand_logits, b_cand - log_q_cand, labels, kernels)


class _KernelSampledSoftmax(PyLayer):
    """The forward is one kernel call: the candidate rows copied once (for the backward's products),
    the true rows read in place, the logits made and turned into exps block by block while in
    cache. The backward turns the exps into the logits' gradient in place: one [n, C] buffer for
    both (Paddle 3.3 cannot run a PyLayer's backward twice in any case). w, b: the step's rows,
    which take the gradients; table_w, table_b: the tables the rows are read from (without
    gradients; w and b themselves when they hold the rows). index: true_pos, cand_pos, labels and
    the rows' table rows in one int64 tensor; log_q: log_q_true and log_q_cand in one float32 tensor."""

    @staticmethod
    def forward(ctx, h, w, b, table_w, table_b, index, log_q):
        w_cand, exps, row_scale, loss, true_prob = kernel().elmo_sampled_softmax_forward(h, table_w, table_b, index,
                                                                                         log_q)
        ctx.save_for_backward(h, table_w, w_cand, exps, row_scale, true_prob, index)
        ctx.shapes = (w.shape, b.shape)
        ctx.needs = [not t.stop_gradient for t in (h, w, b)]
        return loss

    @staticmethod
    def backward(ctx, grad):
        h, table_w, w_cand, exps, row_scale, true_prob, index = ctx.saved_tensor()
        ops = kernel()
        grad_true, grad_cand_bias = paddle.empty([h.shape[0]]), paddle.empty([w_cand.shape[0]])
        ops.elmo_sampled_softmax_logits_backward(exps, row_scale, true_prob, index, grad, grad_true, grad_cand_bias)
        grad_logits = exps  # turned into the logits' gradient in place
        grad_h = paddle.matmul(grad_logits, w_cand)  # [n, P]
        grad_cand_w = paddle.matmul(grad_logits, h, transpose_x=True)  # [C, P]
        grad_w, grad_b = [paddle.empty(shape) for shape in ctx.shapes]  # every element written by the kernel
        ops.elmo_sampled_softmax_rows_backward(grad_h, grad_cand_w, grad_true, grad_cand_bias, h, table_w, index,
                                               grad_w, grad_b)
        return (*_needed_grads(ctx, (grad_h, grad_w, grad_b)), None, None, None, None)


# --------------------------------------------------------------------------------------------
# Highway gating
# --------------------------------------------------------------------------------------------

def highway_gate(carry, carry_bias, transform, transform_bias, x, kernels):
    """y = g * relu(transform + transform_bias) + (1 - g) * x, g = sigmoid(carry + carry_bias).

    carry, transform, x: [tokens, dim] (carry and transform are x's two products); biases [dim].
    The kernel, or layer_math.highway_gate (the same math in Paddle ops).
    """
    inputs = (carry, carry_bias, transform, transform_bias, x)
    ops = kernels.for_tensor(x)
    if ops is None:
        return layer_math.highway_gate(carry, carry_bias, transform, transform_bias, x, add_bias=add_bias)
    if tracks_grad(inputs):
        return _KernelHighwayGate.apply(*inputs)
    return ops.elmo_highway_gate(*inputs)


class _KernelHighwayGate(PyLayer):
    @staticmethod
    def forward(ctx, carry, carry_bias, transform, transform_bias, x):
        ctx.save_for_backward(carry, carry_bias, transform, transform_bias, x)
        ctx.needs = [not t.stop_gradient for t in (carry, carry_bias, transform, transform_bias, x)]
        return kernel().elmo_highway_gate(carry, carry_bias, transform, transform_bias, x)

    @staticmethod
    def backward(ctx, grad):
        return _needed_grads(ctx, kernel().elmo_highway_gate_backward(*ctx.saved_tensor(), grad))


# --------------------------------------------------------------------------------------------
# Rows of a table
# --------------------------------------------------------------------------------------------

def take_rows(x, index, kernels):
    """x [R, d] -> x[index] [len(index), d] (paddle.gather on axis 0, the same bits forward and
    backward) with the rows copied, and their gradients added, on every thread. index: int64 [n]
    in [0, R) (a tensor or numpy; no negative indices counted from the end), else an error."""
    ops = kernels.for_tensor(x)
    if not isinstance(index, paddle.Tensor):
        index = paddle.to_tensor(np.asarray(index, dtype=np.int64))
    if ops is None:
        return paddle.gather(x, index)
    if tracks_grad([x]):
        return _KernelTakeRows.apply(x, index)
    return ops.elmo_take_rows(x, index)


class _KernelTakeRows(PyLayer):
    @staticmethod
    def forward(ctx, x, index):
        ctx.rows = x.shape[0]
        ctx.save_for_backward(index)
        return kernel().elmo_take_rows(x, index)

    @staticmethod
    def backward(ctx, grad):
        index, = ctx.saved_tensor()
        return kernel().elmo_take_rows_backward(index, grad, ctx.rows), None


# --------------------------------------------------------------------------------------------
# Optimizer updates
# --------------------------------------------------------------------------------------------

def fused_updates(tensors, kernels):
    """The compiled module when the in-place optimizer kernels can update `tensors` (float32 on the
    CPU, `kernels` on), else None (the optimizer then runs its Paddle ops, tensor by tensor)."""
    return kernel() if all(kernels.for_tensor(t) is not None for t in tensors) else None


# --------------------------------------------------------------------------------------------
# Dropout
# --------------------------------------------------------------------------------------------

def dropout_masks_on(device):
    """The masks a new run on `device` (Paddle's device string, 'cpu' or 'gpu:0') draws: 'kernel'
    when the CPU kernels run there, else 'paddle'."""
    return 'kernel' if device.startswith('cpu') and kernel() is not None else 'paddle'


def dropout(x, p, kernels, seed=None):
    """Training dropout (upscale in train, as F.dropout's default): x * keep / (1 - p), each element
    kept with probability 1 - p. On CPU the kernel's mask is a hash of a seed drawn from Paddle's
    generator (paddle.seed and checkpoints govern it) and of the element's index; elsewhere, and
    with kernels.dropout_masks 'paddle', F.dropout. seed: one of dropout_seeds' for x (None: drawn here)."""
    ops = kernels.for_tensor(x) if kernels.dropout_masks == 'kernel' else None
    if ops is None or p <= 0.0:
        return F.dropout(x, p, training=True) if p > 0.0 else x
    seed = dropout_seeds(x, 1, kernels)[0] if seed is None else seed
    if tracks_grad([x]):
        return _KernelDropout.apply(x, seed, float(p))
    return ops.elmo_dropout(x, seed, float(p))


def dropout_seeds(x, count, kernels):
    """The seeds of `count` kernel dropouts on tensors like x, in one draw from Paddle's generator: the
    numbers `count` calls of dropout() would draw one after another -> [int] (62 bits each), or
    [None] * count where dropout() takes F.dropout's masks, which draw their own."""
    if kernels.dropout_masks != 'kernel' or kernels.for_tensor(x) is None:
        return [None] * count
    pairs = paddle.randint(0, 2 ** 31 - 1, [2 * count], dtype='int64').numpy().reshape(count, 2)
    return (pairs @ np.array([2 ** 31, 1])).tolist()


class _KernelDropout(PyLayer):
    @staticmethod
    def forward(ctx, x, seed, p):
        ctx.args = (seed, p)
        return kernel().elmo_dropout(x, seed, p)

    @staticmethod
    def backward(ctx, grad):
        return kernel().elmo_dropout(grad, *ctx.args)  # the same mask and scale, from the same seed
