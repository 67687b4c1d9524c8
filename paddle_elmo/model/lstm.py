"""The biLM's LSTMs: one layer with a projection in bilm-tf's parameter layout (`LstmLayer`), and one
direction's stack of them (`LstmStack`) on a packed, time-major layout whose recurrence runs in the
CPU kernels (kernels.recurrence) or Paddle's ops.
"""
import functools

import numpy as np

import paddle
import paddle.nn as nn

from paddle_elmo.model import kernels, weight_writes
from paddle_elmo.model.packing import last_states, packing_indices, step_groups


class LstmLayer(nn.Layer):
    """One LSTM layer with a projection, in the bilm-tf parameter layout.

    W: [input_dim + projection_dim, 4 * dim], rows [input; previous h], gate blocks i, j, f, o.
    B: [4 * dim] as stored; TensorFlow's forget bias of 1.0 is added to the f block at run time
       (kept out of B so that weights round-trip bit for bit).
    W_P: [dim, projection_dim], no bias.

    The recurrence kernel multiplies by W_hidden (W's last projection_dim rows) and W_P in MKL's
    packed layout; packing them costs 16-20 ms per original-size layer (more than a tenth of an
    embedding batch's time when done per call), so `packed_weights` keeps the packs until the
    weights change (weight_writes).
    """

    def __init__(self, input_dim, dim, projection_dim):
        super().__init__()
        self.input_dim, self.dim, self.projection_dim = input_dim, dim, projection_dim
        glorot = nn.initializer.XavierUniform()
        self.W = self.create_parameter([input_dim + projection_dim, 4 * dim], default_initializer=glorot)
        self.B = self.create_parameter([4 * dim], is_bias=True, default_initializer=nn.initializer.Constant(0.0))
        self.W_P = self.create_parameter([dim, projection_dim], default_initializer=glorot)
        forget = np.zeros(4 * dim, dtype=np.float32)
        forget[2 * dim:3 * dim] = 1.0
        self.register_buffer('forget_bias', paddle.to_tensor(forget), persistable=False)
        self._packs = None  # (key, packed W_hidden, packed W_P): packed_weights'

    def bias(self):
        return self.B + self.forget_bias

    def packed_weights(self, max_rows, keep=True):
        """W_hidden and W_P packed for the kernel's products of up to max_rows rows
        (kernels.pack_weight), kept for the next calls -> (W_hidden, W_P) packed, or None (then
        the kernel packs them per call; always when not `keep`, the model's Kernels.keep_packs).

        Kept for one key: the weights' (weight_writes.key: no write to them since) and max_rows
        (MKL's layout, and its results, depend on it); another key packs anew, so at most one pair
        is held (~60 MB for the original size), freed with the layer. Nothing is kept while the
        weights have a gradient: any optimizer may then update them unseen.
        """
        if not keep or self.W.grad is not None or self.W_P.grad is not None:
            self._packs = None
            return None
        weight_writes.watch(self.W)
        weight_writes.watch(self.W_P)
        key = (weight_writes.key([self.W, self.W_P]), int(max_rows))
        if self._packs is None or self._packs[0] != key:
            self._packs = None  # the old pair is freed before the new one is made
            w_hidden = split_rows(self.W, [self.input_dim, self.projection_dim])[1]
            self._packs = (key, kernels.pack_weight(w_hidden, max_rows), kernels.pack_weight(self.W_P, max_rows))
        return self._packs[1:]


class LstmStack(nn.Layer):
    """One direction: n_layers of LstmLayer, cell and projection clipping, residual from layer 1 on.

    The recurrence runs on a packed, time-major layout (as PyTorch's PackedSequence): step t holds
    the batch_sizes[t] rows still running, so padding is never computed and the active batch
    shrinks without copies. The input-to-gate product runs for many steps at once; only
    h @ W_hidden stays in the loop. No parameter is sliced (Paddle's CPU slice backward is ~40x
    slower than split's) and no broadcast op is differentiated.
    """

    GATE_BUFFER_MB = 64  # input-to-gate products per group of steps (see _run_layer)

    def __init__(self, config, kernels=kernels.CPU_KERNELS):
        super().__init__()
        self.kernels = kernels  # the model's (kernels.Kernels): the recurrence's and dropout's
        self.dim, self.projection_dim = config.cell_dim, config.projection_dim
        self.cell_clip = config.cell_clip or None  # 0 / null: no clipping
        self.proj_clip = config.proj_clip or None
        self.use_skip = bool(config.use_skip_connections)
        self.dropout = float(config.dropout or 0.0)
        self.layers = nn.LayerList([LstmLayer(self.projection_dim, self.dim, self.projection_dim)
                                    for _ in range(config.num_layers)])

    def forward(self, x, batch_sizes, states):
        """Run the stack over rows sorted by length, longest first.

        x: [batch, time, projection_dim]; batch_sizes[t]: rows still running at step t
        (non-increasing; rows past their length are neither computed nor advanced);
        states: per layer (h [batch, projection_dim], c [batch, dim]).
        Returns (outputs per layer [batch, time, projection_dim] with zeros at padding, final states).
        """
        batch, time = x.shape[0], x.shape[1]
        batch_sizes = np.asarray(batch_sizes, dtype=np.int64)[:time]
        batch_sizes = batch_sizes[batch_sizes > 0]
        if len(batch_sizes) == 0:  # nothing runs: zero outputs, states unchanged
            return [paddle.zeros([batch, time, self.projection_dim]) for _ in self.layers], list(states)
        pack, unpack = packing_indices(batch_sizes, batch, time)
        x = paddle.gather(x.reshape([batch * time, -1]), paddle.to_tensor(pack))  # [tokens, P], packed
        unpack = paddle.to_tensor(unpack)
        zero_row = paddle.zeros([1, self.projection_dim], dtype=x.dtype)
        outputs, finals = [], []
        gate_buffer = {}  # inference: one buffer for the gate products of every group of every layer
        for i, (layer, (h, c)) in enumerate(zip(self.layers, states)):
            if self.training and self.dropout > 0:
                x = kernels.dropout(x, self.dropout, self.kernels)
            out, final = self._run_layer(layer, x, batch_sizes, h, c, gate_buffer)
            if self.use_skip and i > 0:
                out = out + x
            # Back to [batch, time, P]; padding positions pick the zero row.
            outputs.append(paddle.gather(paddle.concat([zero_row, out]), unpack).reshape([batch, time, -1]))
            finals.append(final)
            x = out
        return outputs, finals

    def _run_layer(self, layer, x, batch_sizes, h, c, gate_buffer):
        """x: packed [tokens, input_dim] -> (packed outputs [tokens, P], final (h [batch, P], c [batch, D])).
        gate_buffer: forward's dict holding the inference gate buffer (gate_products)."""
        w_input, w_hidden = split_rows(layer.W, [layer.input_dim, layer.projection_dim])
        bias = layer.bias()
        # Groups of steps whose [tokens, 4D] gate buffer fits GATE_BUFFER_MB: training keeps three
        # such buffers (the gates, their activations and their gradient; a whole batch of 64
        # rt-polarity sentences would need 780 MB at once), inference only the gates, so its groups
        # take 3x the tokens in the same memory. Each group is a kernel call; in inference the calls
        # reuse the layer's packed W_hidden and W_P (LstmLayer.packed_weights) while their first
        # step's rows are the same.
        tokens = (self.GATE_BUFFER_MB << 20) // (16 * self.dim)
        inference = not kernels.tracks_grad([x, layer.W, layer.W_P, layer.B, h, c])
        if inference:
            tokens *= 3
        groups = step_groups(batch_sizes, max(int(batch_sizes[0]), tokens))
        xs = split_rows(x, [int(batch_sizes[a:b].sum()) for a, b in groups]) if len(groups) > 1 else [x]
        packed = functools.partial(layer.packed_weights, keep=self.kernels.keep_packs)
        outputs = []
        for (first, last), x_group in zip(groups, xs):
            sizes = batch_sizes[first:last]
            gates = gate_products(x_group, w_input, gate_buffer if inference else None)  # bias: recurrence's
            h_all, c_all = kernels.recurrence(gates, bias, sizes, h, c, w_hidden, layer.W_P,
                                              self.cell_clip, self.proj_clip, self.kernels, packed=packed)
            h, c = last_states(h_all, c_all, h, c, sizes)
            del c_all  # [group tokens, D]: freed now, not after the next group's products are made
            outputs.append(h_all)
        return (outputs[0] if len(outputs) == 1 else paddle.concat(outputs)), (h, c)


def gate_products(x, w_input, buffer=None):
    """x [n, input_dim] x w_input -> the gates' input products [n, 4D].

    buffer: None (training: autograd keeps each group's products), or a dict whose 'gates' tensor
    the products are written into (grown when too small): in inference one buffer serves every
    group of every layer of a forward, so the largest allocation is made once, not once per group,
    and glibc's heap (keep_freed_memory) is not fragmented by a new one every call.
    """
    if buffer is None:
        return paddle.matmul(x, w_input)
    rows = x.shape[0]
    held = buffer.get('gates')
    if held is None or held.shape[0] < rows:
        buffer['gates'] = held = None  # the smaller one is freed before the larger is made
        buffer['gates'] = held = paddle.empty([rows, w_input.shape[1]], dtype=x.dtype)
    return paddle.matmul(x, w_input, out=held[:rows])


def split_rows(x, sizes):
    """x [sum(sizes), ...] -> its consecutive blocks of sizes[i] rows.

    Views (free) when no gradient flows to x, as in embedding and for frozen weights; else
    paddle.split, whose copy costs (55 ms for an original-size W [1024, 16384]) but whose backward
    stays linear in the number of blocks (a slice's CPU backward is ~40x slower).
    """
    if not kernels.tracks_grad([x]):
        ends = np.cumsum(sizes).tolist()
        return [x[end - size:end] for size, end in zip(sizes, ends)]
    return paddle.split(x, sizes)

