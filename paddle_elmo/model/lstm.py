"""The biLM's LSTMs: one layer with a projection in bilm-tf's parameter layout (`LstmLayer`), and one
direction's stack of them (`LstmStack`) on a packed, time-major layout whose recurrence runs in the
CPU kernels (kernels.recurrence) or Paddle's ops.
"""
import numpy as np

import paddle
import paddle.nn as nn

from paddle_elmo.model import kernels
from paddle_elmo.model.packing import last_states, packing_tensors, step_groups, unpack_rows


class LstmLayer(nn.Layer):
    """One LSTM layer with a projection, in the bilm-tf parameter layout.

    W: [input_dim + projection_dim, 4 * dim], rows [input; previous h], gate blocks i, j, f, o.
    B: [4 * dim] as stored; TensorFlow's forget bias of 1.0 is added to the f block at run time
       (kept out of B so that weights round-trip bit for bit).
    W_P: [dim, projection_dim], no bias.
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

    def bias(self):
        return self.B + self.forget_bias


class LstmStack(nn.Layer):
    """One direction: n_layers of LstmLayer, cell and projection clipping, residual from layer 1 on.

    The recurrence runs on a packed, time-major layout (as PyTorch's PackedSequence): step t holds
    the batch_sizes[t] rows still running, so padding is never computed and the active batch
    shrinks without copies. The input-to-gate product runs for many steps at once; only
    h @ W_hidden stays in the loop. On the CPU the kernel makes those products itself: in training
    from the whole W (kernels.layer_recurrence), in inference a block of steps at a time
    (kernels.streamed_recurrence), so that only one block's are alive. No
    parameter is sliced (Paddle's CPU slice backward is far slower than split's) and no broadcast op
    is differentiated. `kernels` (kernels.Kernels): the
    model's, which the recurrence and dropout run on.
    """

    GATE_BUFFER_MB = 64  # input-to-gate products per group of steps (see _run_layer)
    GATE_BLOCK_MB = 16  # inference on CPU: the kernel's input-to-gate products per block of steps

    def __init__(self, config, kernels):
        super().__init__()
        self.kernels = kernels
        self.dim, self.projection_dim = config.cell_dim, config.projection_dim
        self.cell_clip = config.cell_clip or None  # 0 / null: no clipping
        self.proj_clip = config.proj_clip or None
        self.use_skip = bool(config.use_skip_connections)
        self.dropout = float(config.dropout or 0.0)
        self.layers = nn.LayerList([LstmLayer(self.projection_dim, self.dim, self.projection_dim)
                                    for _ in range(config.num_layers)])

    def forward(self, x, batch_sizes, states, top_only=False):
        """Run the stack over rows sorted by length, longest first.

        x: [batch, time, projection_dim]; batch_sizes[t]: rows still running at step t
        (non-increasing; rows past their length are neither computed nor advanced);
        states: per layer (h [batch, projection_dim], c [batch, dim]); top_only: return the top
        layer's outputs alone (the language model's training reads no other: the others are never
        unpacked).
        Returns (outputs per layer [batch, time, projection_dim] with zeros at padding, or the top
        layer's alone in a list, final states).
        """
        batch, time = x.shape[0], x.shape[1]
        batch_sizes = np.asarray(batch_sizes, dtype=np.int64)[:time]
        batch_sizes = batch_sizes[batch_sizes > 0]
        if len(batch_sizes) == 0:  # nothing runs: zero outputs, states unchanged
            layers = 1 if top_only else len(self.layers)
            return [paddle.zeros([batch, time, self.projection_dim]) for _ in range(layers)], list(states)
        pack, unpack = packing_tensors(tuple(batch_sizes.tolist()), batch, time, x.place)
        x = paddle.gather(x.reshape([batch * time, -1]), pack)  # [tokens, P], packed
        dropout = self.training and self.dropout > 0
        seeds = kernels.dropout_seeds(x, len(self.layers), self.kernels) if dropout else None
        outputs, finals = [], []
        gate_buffer = {}  # inference: one buffer for the gate products of every group of every layer
        for i, (layer, (h, c)) in enumerate(zip(self.layers, states)):
            residual, drop = self.use_skip and i > 0, ((self.dropout, seeds[i]) if dropout else None)
            # Training on the kernel with its own masks (seed None: Paddle's): the kernel drops x and
            # adds the residual itself, no op around its calls forward or backward.
            fused = self._trains_on_kernel(layer, x, h, c) and (drop is None or drop[1] is not None)
            inputs = x if fused or drop is None else kernels.dropout(x, drop[0], self.kernels, drop[1])
            out, final = self._run_layer(layer, inputs, batch_sizes, h, c, gate_buffer, drop if fused else None,
                                         residual and fused)
            if residual and not fused:  # the input after its dropout (bilm-tf's dropout wraps the residual cell)
                out = out + inputs
            if not top_only or i == len(self.layers) - 1:  # back to [batch, time, P], zeros at padding
                outputs.append(unpack_rows(out, unpack).reshape([batch, time, -1]))
            finals.append(final)
            x = out
        return outputs, finals

    def _trains_on_kernel(self, layer, x, h, c):
        """Whether the layer runs on the training kernel (layer_recurrence): on the kernels' device, with gradients."""
        inference = not kernels.tracks_grad([x, layer.W, layer.W_P, layer.B, h, c])
        return self.kernels.for_tensor(x) is not None and not inference

    def _run_layer(self, layer, x, batch_sizes, h, c, gate_buffer, drop=None, residual=False):
        """x: packed [tokens, input_dim] -> (packed outputs [tokens, P], final (h [batch, P], c [batch, D])).
        gate_buffer: forward's dict holding the inference gate buffer (gate_products) when the
        kernel does not run it. drop (None, or (p, seed): kernels.dropout's) and residual (outputs
        h + x): the training kernel's, which drops x and adds it itself (only where it runs)."""
        inference = not kernels.tracks_grad([x, layer.W, layer.W_P, layer.B, h, c])
        on_kernel = self.kernels.for_tensor(x) is not None
        # Training on the kernel reads the whole W (layer_recurrence): no split, whose copies cost
        # in the forward and whose concat in the backward; it adds the forget bias to B itself.
        whole_w = on_kernel and not inference  # as _trains_on_kernel
        bias = layer.B if whole_w else layer.bias()
        if not whole_w:
            w_input, w_hidden = split_rows(layer.W, [layer.input_dim, layer.projection_dim])
        if inference and on_kernel:
            # The kernel makes each block's products just before it runs it: one block's alive.
            rows = (self.GATE_BLOCK_MB << 20) // (16 * self.dim)
            blocks = step_groups(batch_sizes, rows)
            return kernels.streamed_recurrence(x, w_input, bias, batch_sizes, [end for _, end in blocks], h, c,
                                               w_hidden, layer.W_P, self.cell_clip, self.proj_clip, self.kernels)
        # Groups of steps whose [tokens, 4D] gate buffer fits GATE_BUFFER_MB, so that the memory
        # stays bounded however long the batch: training keeps two such buffers (the gates, which the
        # kernel overwrites with their activations, and their gradient), inference only the gates, so
        # its groups take three times the tokens. Each group is a kernel call.
        tokens = (self.GATE_BUFFER_MB << 20) // (16 * self.dim)
        if inference:
            tokens *= 3
        groups = step_groups(batch_sizes, max(int(batch_sizes[0]), tokens))
        xs = split_rows(x, [int(batch_sizes[a:b].sum()) for a, b in groups]) if len(groups) > 1 else [x]
        outputs = []
        for (first, last), x_group in zip(groups, xs):
            sizes = batch_sizes[first:last]
            if whole_w:  # the kernel copies out the final states
                # the group's first element's index in x: the masks of one dropout over the layer's input
                masks = None if drop is None else (drop[1], drop[0], int(batch_sizes[:first].sum()) * x.shape[1])
                h_all, c_all, (h, c) = kernels.layer_recurrence(x_group, layer.W, bias, sizes, h, c, layer.W_P,
                                                                self.cell_clip, self.proj_clip, masks, residual,
                                                                layer.forget_bias)
            else:
                gates = gate_products(x_group, w_input, gate_buffer if inference else None)  # bias: recurrence's
                h_all, c_all = kernels.recurrence(gates, bias, sizes, h, c, w_hidden, layer.W_P,
                                                  self.cell_clip, self.proj_clip, self.kernels)
                h, c = last_states(h_all, c_all, h, c, sizes)
            del c_all  # [group tokens, D]: freed now, not after the next group's products are made
            outputs.append(h_all)
        return (outputs[0] if len(outputs) == 1 else paddle.concat(outputs)), (h, c)


def gate_products(x, w_input, buffer=None):
    """x [n, input_dim] x w_input -> the gates' input products [n, 4D].

    buffer: None (training on Paddle's ops: each group's own products), or a dict whose 'gates' tensor
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
    paddle.split, which copies but whose backward stays linear in the number of blocks (a slice's
    CPU backward is far slower).
    """
    if not kernels.tracks_grad([x]):
        ends = np.cumsum(sizes).tolist()
        return [x[end - size:end] for size, end in zip(sizes, ends)]
    return paddle.split(x, sizes)

