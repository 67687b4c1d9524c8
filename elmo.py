"""The ELMo bidirectional language model (Peters et al. 2018) in PaddlePaddle.

Computes exactly what allenai/bilm-tf and AllenNLP's `_ElmoBiLm` compute (see
`../shared/REFERENCE-ELMO.md`), loads and writes their `options.json` + `weights.hdf5` files, and
offers the pieces users plug into downstream models:

- `BiLM`: char CNN + highway + projection, then separate forward and backward stacks of LSTMs with
  a projection, cell/projection clipping and optional residual connections. Returns L + 1 layers
  `[batch, time, 2 * projection_dim]` and a mask, in a stateful or a stateless mode.
- `ScalarMix` and `Elmo`: softmax-normalised layer weights times gamma, for downstream models.
- `ELMoEmbedder`: sentences (lists of tokens) in, numpy arrays `[3, n_tokens, dim]` out.
"""
import copy
import json
import math
import os

import numpy as np
import paddle
import paddle.nn as nn
import paddle.nn.functional as F

import kernels
from kernels import add_bias
from dataset import BOS_TOKEN, EOS_TOKEN, N_CHARACTERS, CharMapper, check_sentences

# --------------------------------------------------------------------------------------------
# Options (the bilm-tf format)
# --------------------------------------------------------------------------------------------

ORIGINAL_FILTERS = [[1, 32], [2, 32], [3, 64], [4, 128], [5, 256], [6, 512], [7, 1024]]


def make_options(projection_dim=512, cell_dim=4096, n_layers=2, filters=None, n_highway=2,
                 char_embed_dim=16, max_characters_per_token=50, activation='relu', cell_clip=3.0,
                 proj_clip=3.0, use_skip_connections=True, dropout=0.1):
    """An options dict in the bilm-tf format; the defaults are the original ELMo model."""
    return {
        'bidirectional': True,
        'char_cnn': {
            'activation': activation,
            'embedding': {'dim': char_embed_dim},
            'filters': copy.deepcopy(filters or ORIGINAL_FILTERS),
            'max_characters_per_token': max_characters_per_token,
            'n_characters': N_CHARACTERS,
            'n_highway': n_highway,
        },
        'dropout': dropout,
        'lstm': {
            'cell_clip': cell_clip,
            'dim': cell_dim,
            'n_layers': n_layers,
            'proj_clip': proj_clip,
            'projection_dim': projection_dim,
            'use_skip_connections': use_skip_connections,
        },
    }


_REQUIRED = {
    'char_cnn': ('embedding', 'filters', 'n_highway', 'max_characters_per_token'),
    'lstm': ('dim', 'projection_dim', 'n_layers'),
}


def check_options(options, source='options'):
    """Raise ValueError naming `source` and the key when `options` is not a usable bilm-tf config."""
    for section, keys in _REQUIRED.items():
        if not isinstance(options.get(section), dict):
            raise ValueError(f'{source}: missing section "{section}" (a bilm-tf options file needs '
                             f'"char_cnn" and "lstm")')
        for key in keys:
            if key not in options[section]:
                raise ValueError(f'{source}: missing "{section}.{key}"')
    cnn, lstm = options['char_cnn'], options['lstm']
    if cnn.get('activation', 'relu') not in ('relu', 'tanh'):
        raise ValueError(f'{source}: char_cnn.activation must be "relu" or "tanh", '
                         f'got {cnn["activation"]!r}')
    if cnn.get('n_characters', N_CHARACTERS) not in (261, 262):
        raise ValueError(f'{source}: char_cnn.n_characters must be 261 or 262, got {cnn["n_characters"]}')
    max_chars = cnn['max_characters_per_token']
    for width, n in cnn['filters']:
        if not (1 <= width <= max_chars and n >= 1):
            raise ValueError(f'{source}: char_cnn.filters entry [{width}, {n}] needs '
                             f'1 <= width <= max_characters_per_token ({max_chars}) and n >= 1')
    if lstm['n_layers'] < 1:
        raise ValueError(f'{source}: lstm.n_layers must be >= 1, got {lstm["n_layers"]}')
    if not options.get('bidirectional', True):
        raise ValueError(f'{source}: only bidirectional models are supported')


def load_options(path):
    """Read and check an options.json file."""
    try:
        with open(path, encoding='utf-8') as f:
            options = json.load(f)
    except FileNotFoundError:
        raise FileNotFoundError(f'{path}: options file not found') from None
    except json.JSONDecodeError as e:
        raise ValueError(f'{path}: not valid JSON (line {e.lineno}: {e.msg})') from None
    check_options(options, path)
    return options


def save_json_atomic(obj, path):
    tmp = f'{path}.tmp'
    with open(tmp, 'w', encoding='utf-8') as f:
        json.dump(obj, f, indent=2, sort_keys=True)
    os.replace(tmp, path)


# --------------------------------------------------------------------------------------------
# The model
# --------------------------------------------------------------------------------------------

def _normal(std):
    return nn.initializer.Normal(mean=0.0, std=std)


def linear(x, layer):
    """x [rows, in] through an nn.Linear `layer` (weight [in, out], bias [out]) -> [rows, out]."""
    return add_bias(paddle.matmul(x, layer.weight), layer.bias)


class Highway(nn.Layer):
    """y = t * relu(x W_transform + b) + (1 - t) * x with t = sigmoid(x W_carry + b_carry).

    bilm-tf's "carry" gate multiplies the transform branch; the nonlinearity is always relu.
    """

    def __init__(self, dim):
        super().__init__()
        # bilm-tf init: carry bias -2 so that layers start close to the identity.
        self.carry = nn.Linear(dim, dim, weight_attr=paddle.ParamAttr(initializer=_normal(math.sqrt(1.0 / dim))),
                               bias_attr=paddle.ParamAttr(initializer=nn.initializer.Constant(-2.0)))
        self.transform = nn.Linear(dim, dim, weight_attr=paddle.ParamAttr(initializer=_normal(math.sqrt(1.0 / dim))),
                                   bias_attr=paddle.ParamAttr(initializer=nn.initializer.Constant(0.0)))

    def forward(self, x):
        """x: [tokens, dim] -> [tokens, dim]."""
        return kernels.highway_gate(paddle.matmul(x, self.carry.weight), self.carry.bias,
                                    paddle.matmul(x, self.transform.weight), self.transform.bias, x)


class CharEncoder(nn.Layer):
    """Char ids [tokens, max_chars] -> token representations [tokens, projection_dim].

    Each convolution runs as one matrix multiply over the windows of the token; this is several
    times faster than Conv2D on CPU. The reference convolves all 50 positions, PAD included, but
    every window made only of PAD chars gives the same output whatever the token: it is computed
    once, and only windows that start before the chunk's last non-PAD char are multiplied (a
    5-letter word needs 7 windows, not 44). Same max, a fraction of the work.
    """

    def __init__(self, options):
        super().__init__()
        cnn = options['char_cnn']
        self.max_chars = cnn['max_characters_per_token']
        self.char_dim = cnn['embedding']['dim']
        self.widths = [w for w, _ in cnn['filters']]
        self.activation = F.relu if cnn.get('activation', 'relu') == 'relu' else F.tanh
        n_filters = sum(n for _, n in cnn['filters'])
        # Row 0 is the padding char: it stays zero (padding_idx) and gets no gradient.
        self.char_embed = nn.Embedding(N_CHARACTERS, self.char_dim, padding_idx=0,
                                       weight_attr=paddle.ParamAttr(initializer=nn.initializer.Uniform(-1.0, 1.0)))
        self.conv_weights = nn.ParameterList()
        self.conv_biases = nn.ParameterList()
        for width, n in cnn['filters']:
            # bilm-tf: uniform +-0.05 (Kim et al. 2015) for relu, normal(sqrt(1 / fan_in)) for tanh
            if self.activation is F.relu:
                init = nn.initializer.Uniform(-0.05, 0.05)
            else:
                init = _normal(math.sqrt(1.0 / (width * self.char_dim)))
            self.conv_weights.append(self.create_parameter([width * self.char_dim, n], default_initializer=init))
            self.conv_biases.append(self.create_parameter([n], is_bias=True,
                                                          default_initializer=nn.initializer.Constant(0.0)))
        from dataset import PAD_CHAR
        self.pad_id = PAD_CHAR + 1  # char ids are shifted by one so that 0 means "no token"
        self.highways = nn.LayerList([Highway(n_filters) for _ in range(cnn['n_highway'])])
        proj_dim = options['lstm']['projection_dim']
        self.projection = nn.Linear(n_filters, proj_dim,
                                    weight_attr=paddle.ParamAttr(initializer=_normal(math.sqrt(1.0 / n_filters))),
                                    bias_attr=paddle.ParamAttr(initializer=nn.initializer.Constant(0.0)))

    def forward(self, char_ids):
        """char_ids: int64 [tokens, max_chars] -> float32 [tokens, projection_dim]."""
        used = self.used_chars(char_ids)
        # Windows starting at or after `used` are all PAD for every token of this call and all give
        # the same value: one of them (starting at `used`) stands for the rest.
        n_chars = min(self.max_chars, used + max(self.widths))
        # Position-major, so that each window position is a contiguous [tokens, n] slab below.
        ids = char_ids[:, :n_chars].transpose([1, 0])  # [n_chars, tokens]
        tokens = ids.shape[1]
        pooled = []
        for width, weight in zip(self.widths, self.conv_weights):
            n_windows = min(self.max_chars - width + 1, used + 1)
            # One gather builds all windows (slicing per offset is ~10x slower in backward on CPU),
            # on the char ids: the embedding lookup then writes the windows in place, 7x faster
            # (2x with backward) than gathering and transposing embedded chars.
            index = (np.arange(n_windows)[:, None] + np.arange(width)[None, :]).reshape(-1)
            window_ids = paddle.gather(ids, paddle.to_tensor(index), axis=0).reshape(
                [n_windows, width, tokens]).transpose([0, 2, 1])  # [windows, tokens, width]
            windows = self.char_embed(window_ids).reshape([n_windows, tokens, width * self.char_dim])
            # Max over positions of the pre-activation, as the reference; the activation is monotonic.
            pooled.append(kernels.max_over_positions(paddle.matmul(windows, weight)))  # [tokens, n]
        x = self.activation(add_bias(paddle.concat(pooled, axis=-1), paddle.concat(list(self.conv_biases))))
        for highway in self.highways:
            x = highway(x)  # [tokens, n_filters]
        return linear(x, self.projection)

    def used_chars(self, char_ids):
        """Positions up to the last non-PAD char of any token in char_ids [tokens, max_chars] (>= 1)."""
        if char_ids.shape[0] == 0:
            return 1
        not_pad = (char_ids != self.pad_id).astype('int32') * paddle.arange(1, char_ids.shape[1] + 1, dtype='int32')
        return max(int(not_pad.max()), 1)


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
    h @ W_hidden stays in the loop. No parameter is sliced (Paddle's CPU slice backward is ~40x
    slower than split's) and no broadcast op is differentiated.
    """

    GATE_BUFFER_MB = 64  # input-to-gate products per group of steps (see _run_layer)

    def __init__(self, options):
        super().__init__()
        lstm = options['lstm']
        self.dim, self.projection_dim = lstm['dim'], lstm['projection_dim']
        self.cell_clip = lstm.get('cell_clip') or None  # 0 / null: no clipping
        self.proj_clip = lstm.get('proj_clip') or None
        self.use_skip = bool(lstm.get('use_skip_connections', False))
        self.dropout = float(options.get('dropout', 0.0) or 0.0)
        self.layers = nn.LayerList([LstmLayer(self.projection_dim, self.dim, self.projection_dim)
                                    for _ in range(lstm['n_layers'])])

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
        for i, (layer, (h, c)) in enumerate(zip(self.layers, states)):
            if self.training and self.dropout > 0:
                x = F.dropout(x, self.dropout, training=True)
            out, final = self._run_layer(layer, x, batch_sizes, h, c)
            if self.use_skip and i > 0:
                out = out + x
            # Back to [batch, time, P]; padding positions pick the zero row.
            outputs.append(paddle.gather(paddle.concat([zero_row, out]), unpack).reshape([batch, time, -1]))
            finals.append(final)
            x = out
        return outputs, finals

    def _run_layer(self, layer, x, batch_sizes, h, c):
        """x: packed [tokens, input_dim] -> (packed outputs [tokens, P], final (h [batch, P], c [batch, D]))."""
        w_input, w_hidden = paddle.split(layer.W, [layer.input_dim, layer.projection_dim])
        bias = layer.bias()
        # Groups of steps whose gates fit GATE_BUFFER_MB: a whole batch of long sentences would
        # need three [tokens, 4D] buffers at once (780 MB for 64 rt-polarity sentences).
        groups = step_groups(batch_sizes, max(int(batch_sizes[0]), (self.GATE_BUFFER_MB << 20) // (16 * self.dim)))
        # split (not slicing) keeps the backward pass linear in the number of steps.
        xs = paddle.split(x, [int(batch_sizes[a:b].sum()) for a, b in groups]) if len(groups) > 1 else [x]
        outputs = []
        for (first, last), x_group in zip(groups, xs):
            sizes = batch_sizes[first:last]
            gates = paddle.matmul(x_group, w_input)  # [group tokens, 4D], bias added by recurrence
            h_all, c_all = kernels.recurrence(gates, bias, sizes, h, c, w_hidden, layer.W_P,
                                              self.cell_clip, self.proj_clip)
            h, c = last_states(h_all, c_all, h, c, sizes)
            outputs.append(h_all)
        return (outputs[0] if len(outputs) == 1 else paddle.concat(outputs)), (h, c)


def last_states(h_all, c_all, h0, c0, batch_sizes):
    """Each row's state after its last step -> (h [B, P], c [B, D]); rows that did not run keep h0, c0.

    h_all [tokens, P], c_all [tokens, D]: packed outputs of steps with batch_sizes[t] rows.
    """
    sizes = np.asarray(batch_sizes, dtype=np.int64)
    rows = np.arange(h0.shape[0])
    steps_run = (sizes[None, :] > rows[:, None]).sum(axis=1)  # [B]
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    # Index into [packed rows; h0 rows]: the row's last step, or its initial state.
    index = np.where(steps_run > 0, offsets[np.maximum(steps_run - 1, 0)] + rows, offsets[-1] + rows)
    index = paddle.to_tensor(index)
    return (paddle.gather(paddle.concat([h_all, h0]), index),
            paddle.gather(paddle.concat([c_all, c0]), index))


def packing_indices(batch_sizes, batch, time):
    """Time-major packing of [batch, time] rows sorted longest first.

    Returns (pack [tokens]: flat batch-major position of each packed token, step by step;
    unpack [batch * time]: 1 + packed position, or 0 at padding).
    """
    running = np.arange(batch)[None, :] < np.asarray(batch_sizes)[:, None]  # [steps, batch]
    steps, rows = np.nonzero(running)
    pack = (rows * time + steps).astype(np.int64)
    unpack = np.zeros(batch * time, dtype=np.int64)
    unpack[pack] = np.arange(1, len(pack) + 1)
    return pack, unpack


def step_groups(batch_sizes, max_rows):
    """Consecutive steps in groups of at most max_rows packed rows (at least one step each)
    -> list of (first step, end step)."""
    groups, first, rows = [], 0, 0
    for t, n in enumerate(np.asarray(batch_sizes).tolist()):
        if rows and rows + n > max_rows:
            groups.append((first, t))
            first, rows = t, 0
        rows += n
    groups.append((first, len(batch_sizes)))
    return groups


def length_chunks(used, max_size, position_cost=25, chunk_cost=100):
    """Split tokens sorted by used chars (ascending) into char-CNN chunks -> list of (start, end).

    A chunk of n tokens whose longest uses u chars costs about n * (u + 1) window products, plus
    per-op overhead that grows with its window positions and its number of ops (position_cost and
    chunk_cost, in token-windows, measured on CPU). The split minimises that total (dynamic
    programming over the distinct lengths); chunks larger than max_size are then cut evenly.
    """
    used = np.asarray(used)
    if len(used) == 0:
        return []
    ends = np.flatnonzero(np.diff(used)) + 1
    ends = np.append(ends, len(used))  # end of each run of equal lengths
    starts = np.concatenate([[0], ends[:-1]])
    best = [0.0] + [math.inf] * len(ends)
    cut = [0] * (len(ends) + 1)
    for j in range(1, len(ends) + 1):
        windows = int(used[ends[j - 1] - 1]) + 1
        for i in range(j):
            cost = best[i] + (ends[j - 1] - starts[i] + position_cost) * windows + chunk_cost
            if cost < best[j]:
                best[j], cut[j] = cost, i
    chunks, j = [], len(ends)
    while j > 0:
        start, end = int(starts[cut[j]]), int(ends[j - 1])
        pieces = -(-(end - start) // max_size)
        bounds = np.linspace(start, end, pieces + 1).round().astype(int)
        chunks[:0] = list(zip(bounds[:-1].tolist(), bounds[1:].tolist()))
        j = cut[j]
    return chunks


class BiLM(nn.Layer):
    """The ELMo biLM: CharEncoder, then a forward and a backward LstmStack.

    Stateful mode (as bilm-tf and AllenNLP): each batch row starts from the final state its row
    reached in the previous batch; rows beyond the batch keep their state; `reset_states()` zeroes
    them. Stateless mode: every row starts from zeros, so a sentence's result does not depend on
    the batch or on earlier calls.
    """

    def __init__(self, options, stateful=False):
        super().__init__()
        check_options(options)
        self.options = copy.deepcopy(options)
        self.stateful = stateful
        self.projection_dim = options['lstm']['projection_dim']
        self.n_layers = options['lstm']['n_layers']
        self.char_encoder = CharEncoder(options)
        self.forward_stack = LstmStack(options)
        self.backward_stack = LstmStack(options)
        self._states = None  # [direction][layer] -> (h [rows, P], c [rows, D]), detached

    # ---- state ----------------------------------------------------------------------------
    def reset_states(self):
        self._states = None

    def get_states(self):
        """The carried LSTM states as numpy arrays (None before the first batch), for checkpoints."""
        if self._states is None:
            return None
        return [None if d is None else [(h.numpy(), c.numpy()) for h, c in d] for d in self._states]

    def set_states(self, states):
        """Restore what get_states() returned."""
        self._states = None if states is None else [
            None if d is None else [(paddle.to_tensor(h), paddle.to_tensor(c)) for h, c in d] for d in states]

    def zero_state_rows(self, rows):
        """Carried states of the rows where `rows` (bool numpy [batch]) is true start again from zeros."""
        if self._states is None or not rows.any():
            return
        for direction, stored in enumerate(self._states):
            if stored is None:
                continue
            keep = np.ones(stored[0][0].shape[0], dtype=np.float32)
            keep[:len(rows)][rows] = 0.0
            keep = paddle.to_tensor(keep).unsqueeze(1)
            self._states[direction] = [(h * keep, c * keep) for h, c in stored]

    def _initial_states(self, direction, batch):
        stack = (self.forward_stack, self.backward_stack)[direction]
        zeros = lambda n: [(paddle.zeros([n, stack.projection_dim]), paddle.zeros([n, stack.dim]))
                           for _ in range(self.n_layers)]
        stored = self._states[direction] if self.stateful and self._states else None
        if stored is None:
            return zeros(batch)
        rows = stored[0][0].shape[0]
        if rows >= batch:
            return [(h[:batch], c[:batch]) for h, c in stored]
        return [(paddle.concat([h, zh]), paddle.concat([c, zc]))
                for (h, c), (zh, zc) in zip(stored, zeros(batch - rows))]

    def _store_states(self, direction, finals):
        if not self.stateful:
            return
        finals = [(h.detach(), c.detach()) for h, c in finals]  # gradients stop at batch boundaries
        if self._states is None:
            self._states = [None, None]
        stored = self._states[direction]
        batch = finals[0][0].shape[0]
        if stored is not None and stored[0][0].shape[0] > batch:
            finals = [(paddle.concat([h, sh[batch:]]), paddle.concat([c, sc[batch:]]))
                      for (h, c), (sh, sc) in zip(finals, stored)]
        self._states[direction] = finals

    # ---- forward --------------------------------------------------------------------------
    def token_embedding(self, char_ids, chunk=1024):
        """char_ids [batch, time, max_chars] (tensor or numpy) -> [batch, time, projection_dim].

        Each distinct real token goes through the char CNN once (gradients add up through the
        gather), in chunks of similar lengths (length_chunks) of at most `chunk` tokens: a chunk
        of short words skips most all-PAD windows (see CharEncoder), and the peak memory stays
        bounded however long the input. Padding (all-zero) tokens embed to zeros.
        """
        batch, time, max_chars = char_ids.shape
        ids = char_ids.numpy() if isinstance(char_ids, paddle.Tensor) else np.asarray(char_ids)
        distinct, used, slot = self._distinct_tokens(ids.reshape(batch * time, max_chars))
        if len(distinct) == 0:
            return paddle.zeros([batch, time, self.projection_dim])
        parts = [self.char_encoder(paddle.to_tensor(distinct[a:b])) for a, b in length_chunks(used, chunk)]
        encoded = parts[0] if len(parts) == 1 else paddle.concat(parts)  # [distinct real tokens, P]
        # Row 0 of the table is the zero vector that padding positions pick.
        table = paddle.concat([paddle.zeros([1, self.projection_dim], dtype=encoded.dtype), encoded])
        return paddle.gather(table, paddle.to_tensor(slot)).reshape([batch, time, self.projection_dim])

    def _distinct_tokens(self, ids):
        """ids [tokens, max_chars] -> (distinct real tokens sorted by used chars, stably;
        their used chars (position of the last non-PAD char); slot [tokens]: 1 + each token's
        row among them, 0 for padding)."""
        ids = np.ascontiguousarray(ids, dtype=np.int64)
        _, first, inverse = np.unique(ids.view(np.dtype((np.void, ids.shape[1] * 8))).ravel(),
                                      return_index=True, return_inverse=True)
        distinct = ids[first]
        real = np.nonzero((distinct > 0).any(axis=1))[0]
        not_pad = distinct[real] != self.char_encoder.pad_id
        used = np.where(not_pad.any(axis=1), ids.shape[1] - np.argmax(not_pad[:, ::-1], axis=1), 0)
        by_length = np.argsort(used, kind='stable')
        order = real[by_length]
        rank = np.zeros(len(distinct), dtype=np.int64)
        rank[order] = np.arange(1, len(order) + 1)
        return distinct[order], used[by_length], rank[inverse.reshape(-1)]

    def forward(self, char_ids, lengths=None, token_embeddings=None):
        """Run the biLM on sentences that already hold <S> and </S>.

        char_ids: int64 [batch, time, max_chars] (0 = padding), or None with `token_embeddings`
            [batch, time, projection_dim] precomputed (zeros at padding) and `lengths`.
        lengths: int array [batch] of real tokens per row (padding is at the end); derived from
            char_ids when None.
        Returns dict: 'activations', a list of n_layers + 1 tensors [batch, time, 2 * projection_dim]
        (layer 0 is [x; x], then [forward; backward] per layer), and 'mask' [batch, time] bool.
        """
        if token_embeddings is None:
            token_embeddings = self.token_embedding(char_ids)
        batch, time = token_embeddings.shape[0], token_embeddings.shape[1]
        if lengths is None:
            lengths = (char_ids > 0).any(axis=-1).astype('int64').sum(axis=1).numpy()
        lengths = np.asarray(lengths, dtype=np.int64)
        forward_out, backward_out = self.contextual(token_embeddings, lengths)
        mask = paddle.to_tensor(np.arange(time)[None, :] < lengths[:, None])
        layers = [paddle.concat([token_embeddings, token_embeddings], axis=-1)]
        layers += [paddle.concat([f, b], axis=-1) for f, b in zip(forward_out, backward_out)]
        return {'activations': layers, 'mask': mask}

    def contextual(self, x, lengths):
        """Both LSTM stacks over x [batch, time, P] with per-row lengths (numpy [batch]).

        Returns (forward outputs, backward outputs): lists per layer of [batch, time, P], in the
        input's order; the backward stack reads each row reversed within its own length.
        """
        batch, time = x.shape[0], x.shape[1]
        order = np.argsort(-lengths, kind='stable')  # longest first lets the active batch shrink
        sorted_lengths = lengths[order]
        batch_sizes = (sorted_lengths[None, :] > np.arange(time)[:, None]).sum(axis=1)
        # One gather both sorts the rows and (for the backward stack) reverses each within its length.
        steps = np.arange(time)[None, :]
        reverse_steps = np.where(steps < sorted_lengths[:, None], sorted_lengths[:, None] - 1 - steps, steps)
        flat_x = x.reshape([batch * time, -1])
        forward_index = order[:, None] * time + steps
        backward_index = order[:, None] * time + reverse_steps
        outputs = []
        for direction, (stack, index) in enumerate(((self.forward_stack, forward_index),
                                                    (self.backward_stack, backward_index))):
            inputs = paddle.gather(flat_x, paddle.to_tensor(index.reshape(-1))).reshape([batch, time, -1])
            states = self._initial_states(direction, batch)
            order_t = paddle.to_tensor(order)
            states = [(paddle.gather(h, order_t), paddle.gather(c, order_t)) for h, c in states]
            layer_outs, finals = stack(inputs, batch_sizes, states)
            # Undo the gather: scatter rows (and steps) back to where they came from.
            restore = np.empty(batch * time, dtype=np.int64)
            restore[index.reshape(-1)] = np.arange(batch * time)
            restore_t = paddle.to_tensor(restore)
            outputs.append([paddle.gather(o.reshape([batch * time, -1]), restore_t).reshape([batch, time, -1])
                            for o in layer_outs])
            inverse = paddle.to_tensor(np.argsort(order))
            self._store_states(direction, [(paddle.gather(h, inverse), paddle.gather(c, inverse))
                                           for h, c in finals])
        return outputs[0], outputs[1]

    def lm_outputs(self, forward_char_ids, backward_char_ids):
        """Top-layer outputs for language-model training on full windows.

        forward_char_ids / backward_char_ids: numpy int [batch, unroll, max_chars]; the backward
        stream is already reversed (a separate stream, as in bilm-tf's training), so it is read as
        is. Both streams hold the same words: token_embedding runs the char CNN once per distinct
        token of the two.
        Returns (forward top [batch, unroll, P], backward top [batch, unroll, P]).
        """
        batch, time = forward_char_ids.shape[:2]
        # One chunk: a training window is small, and splitting it costs more op overhead than it saves.
        x = self.token_embedding(np.concatenate([forward_char_ids, backward_char_ids]), chunk=2 * batch * time)
        xs = paddle.unbind(x.reshape([2, batch, time, -1]))  # unbind, not x[d]: slice backward is slow
        batch_sizes = np.full(time, batch)
        tops = []
        for direction, stack in enumerate((self.forward_stack, self.backward_stack)):
            layer_outs, finals = stack(xs[direction], batch_sizes, self._initial_states(direction, batch))
            self._store_states(direction, finals)
            tops.append(layer_outs[-1])
        return tops[0], tops[1]


def remove_sentence_boundaries(tensor, mask):
    """Drop <S> and </S> from [batch, time, ...] outputs: -> ([batch, time - 2, ...], mask).

    Rows are shifted left by one and the position of each row's </S> is zeroed.
    """
    lengths = mask.astype('int64').sum(axis=1)
    time = tensor.shape[1]
    inner = tensor[:, 1:time - 1]
    new_mask = paddle.arange(time - 2)[None, :] < (lengths - 2)[:, None]
    shape = [-1, time - 2] + [1] * (len(tensor.shape) - 2)
    return inner * new_mask.astype(tensor.dtype).reshape(shape), new_mask


# --------------------------------------------------------------------------------------------
# Weights: bilm-tf / AllenNLP hdf5, and our checkpoints
# --------------------------------------------------------------------------------------------

def hdf5_layout(bilm):
    """(dataset name, parameter, file->ours, ours->file) for every parameter of `bilm`."""
    same = lambda a: a
    enc = bilm.char_encoder
    layout = [('char_embed', enc.char_embed.weight,
               lambda a: np.concatenate([np.zeros((1, a.shape[1]), a.dtype), a]),  # prepend padding row
               lambda a: a[1:])]
    for i, (width, weight, bias) in enumerate(zip(enc.widths, enc.conv_weights, enc.conv_biases)):
        file_shape = (1, width, enc.char_dim, weight.shape[1])
        layout.append((f'CNN/W_cnn_{i}', weight, lambda a: a.reshape(a.shape[1] * a.shape[2], a.shape[3]),
                       lambda a, s=file_shape: a.reshape(s)))
        layout.append((f'CNN/b_cnn_{i}', bias, same, same))
    for k, highway in enumerate(enc.highways):
        for part in ('carry', 'transform'):
            linear = getattr(highway, part)
            layout += [(f'CNN_high_{k}/W_{part}', linear.weight, same, same),
                       (f'CNN_high_{k}/b_{part}', linear.bias, same, same)]
    layout += [('CNN_proj/W_proj', enc.projection.weight, same, same),
               ('CNN_proj/b_proj', enc.projection.bias, same, same)]
    for direction, stack in enumerate((bilm.forward_stack, bilm.backward_stack)):
        for k, layer in enumerate(stack.layers):
            prefix = f'RNN_{direction}/RNN/MultiRNNCell/Cell{k}/LSTMCell'
            layout += [(f'{prefix}/W_0', layer.W, same, same),
                       (f'{prefix}/B', layer.B, same, same),
                       (f'{prefix}/W_P_0', layer.W_P, same, same)]
    return layout


def _file_shape(param, to_file):
    return tuple(to_file(np.zeros(param.shape, dtype=np.float32)).shape)


def load_hdf5_weights(bilm, weight_file):
    """Fill `bilm` from a bilm-tf / AllenNLP weights.hdf5; shape mismatches name the dataset."""
    import h5py
    try:
        fin = h5py.File(weight_file, 'r')
    except (FileNotFoundError, OSError) as e:
        raise FileNotFoundError(f'{weight_file}: cannot open as hdf5 ({e})') from None
    with fin, paddle.no_grad():
        for name, param, from_file, to_file in hdf5_layout(bilm):
            if name not in fin:
                raise ValueError(f'{weight_file}: dataset "{name}" is missing (options ask for it)')
            array = fin[name][...]
            expected = _file_shape(param, to_file)
            if tuple(array.shape) != expected:
                raise ValueError(f'{weight_file}: dataset "{name}" has shape {tuple(array.shape)}, '
                                 f'options imply {expected}')
            param.set_value(from_file(array.astype(np.float32)))
    return bilm


def save_hdf5_weights(bilm, weight_file, extra=None):
    """Write `bilm` (and optional extra {name: array}, e.g. a softmax) as weights.hdf5, atomically."""
    import h5py
    tmp = f'{weight_file}.tmp'
    with h5py.File(tmp, 'w') as fout:
        for name, param, _, to_file in hdf5_layout(bilm):
            fout.create_dataset(name, data=to_file(param.numpy()))
        for name, array in (extra or {}).items():
            fout.create_dataset(name, data=array)
    os.replace(tmp, weight_file)


def checkpoint_paths(prefix):
    """'DIR/N' -> (DIR/options.json, DIR/N.pdparams)."""
    return os.path.join(os.path.dirname(prefix) or '.', 'options.json'), f'{prefix}.pdparams'


def load_checkpoint(params_file, stateful=False):
    """A checkpoint prefix ('DIR/N') -> (BiLM, the checkpoint's whole state dict).

    The state dict may be a LanguageModel's (keys 'bilm.*', 'softmax.*') or a BiLM's own.
    """
    options_file, ckpt = checkpoint_paths(params_file)
    if not os.path.exists(ckpt):
        raise FileNotFoundError(f'{ckpt}: checkpoint not found')
    full = paddle.load(ckpt)
    state = full
    if any(k.startswith('bilm.') for k in full):
        state = {k[len('bilm.'):]: v for k, v in full.items() if k.startswith('bilm.')}
    bilm = BiLM(load_options(options_file), stateful=stateful)
    expected = bilm.state_dict()
    for key, value in expected.items():
        if key not in state:
            raise ValueError(f'{ckpt}: parameter "{key}" is missing (options.json asks for it)')
        if tuple(state[key].shape) != tuple(value.shape):
            raise ValueError(f'{ckpt}: parameter "{key}" has shape {tuple(state[key].shape)}, '
                             f'{options_file} implies {tuple(value.shape)}')
    bilm.set_state_dict({k: state[k] for k in expected})
    return bilm, full


def load_bilm(params_file=None, options_file=None, weight_file=None, stateful=False):
    """A BiLM from a checkpoint prefix ('DIR/N') or from bilm-tf options + hdf5 weights."""
    if params_file is not None:
        if options_file is not None or weight_file is not None:
            raise ValueError('give either params_file (a checkpoint prefix) or options_file + weight_file')
        return load_checkpoint(params_file, stateful)[0]
    if options_file is None or weight_file is None:
        raise ValueError('give params_file (a checkpoint prefix like checkpoints/10000) '
                         'or both options_file and weight_file')
    return load_hdf5_weights(BiLM(load_options(options_file), stateful=stateful), weight_file)


def export_weights(bilm, output_dir, extra=None):
    """Write output_dir/options.json and output_dir/weights.hdf5, loadable by AllenNLP and bilm-tf."""
    os.makedirs(output_dir, exist_ok=True)
    options = copy.deepcopy(bilm.options)
    options['char_cnn']['n_characters'] = N_CHARACTERS  # prediction-time value, as bilm-tf expects
    save_json_atomic(options, os.path.join(output_dir, 'options.json'))
    save_hdf5_weights(bilm, os.path.join(output_dir, 'weights.hdf5'), extra)


# --------------------------------------------------------------------------------------------
# Downstream layers
# --------------------------------------------------------------------------------------------

class ScalarMix(nn.Layer):
    """gamma * sum_k softmax(w)_k * layer_k, optionally layer-normalising each layer first.

    With `do_layer_norm`, each layer is normalised by the mean and variance of its unmasked
    entries over the whole batch (as AllenNLP). `l2_penalty()` is l2_coef * sum(w^2): it pulls the
    weights toward equal, as bilm-tf's `weight_layers(l2_coef=...)`.
    """

    def __init__(self, n_layers, do_layer_norm=False, l2_coef=0.0, initial_weights=None, trainable=True):
        super().__init__()
        init = np.zeros(n_layers, np.float32) if initial_weights is None else np.asarray(initial_weights, np.float32)
        if init.shape != (n_layers,):
            raise ValueError(f'initial_weights must have {n_layers} values, got {init.shape}')
        self.weights_ = self.create_parameter([n_layers], default_initializer=nn.initializer.Assign(init))
        self.gamma = self.create_parameter([1], default_initializer=nn.initializer.Constant(1.0))
        self.weights_.stop_gradient = self.gamma.stop_gradient = not trainable
        self.do_layer_norm, self.l2_coef = do_layer_norm, l2_coef

    def normalized_weights(self):
        return F.softmax(self.weights_)

    def l2_penalty(self):
        return self.l2_coef * paddle.sum(self.weights_ ** 2)

    def forward(self, layers, mask=None):
        """layers: list of [batch, time, dim]; mask: [batch, time] (needed for layer norm)."""
        if len(layers) != self.weights_.shape[0]:
            raise ValueError(f'ScalarMix built for {self.weights_.shape[0]} layers got {len(layers)}')
        weights = self.normalized_weights()
        if self.do_layer_norm:
            if mask is None:
                raise ValueError('ScalarMix with do_layer_norm needs the mask')
            layers = [_masked_layer_norm(x, mask) for x in layers]
        mixed = sum(weights[k] * x for k, x in enumerate(layers))
        return self.gamma * mixed


def _masked_layer_norm(x, mask):
    m = mask.astype(x.dtype).unsqueeze(-1)
    count = m.sum() * x.shape[-1]
    mean = (x * m).sum() / count
    var = (((x - mean) * m) ** 2).sum() / count
    return (x - mean) / paddle.sqrt(var + 1e-12)


class Elmo(nn.Layer):
    """ELMo for downstream models: char ids -> one or more scalar mixes of the biLM layers + mask.

    The biLM is frozen by default (run without gradients, in eval mode); `requires_grad=True`
    fine-tunes it. Sentence boundaries are removed from the outputs: pass char ids made with
    `CharMapper.batch(sentences)` (which adds <S> and </S>).
    """

    def __init__(self, bilm, num_output_representations=1, requires_grad=False, do_layer_norm=False,
                 dropout=0.5, l2_coef=0.0):
        super().__init__()
        self.bilm = bilm
        self.requires_grad = requires_grad
        for p in self.bilm.parameters():
            p.stop_gradient = not requires_grad
        n = bilm.n_layers + 1
        self.scalar_mixes = nn.LayerList([ScalarMix(n, do_layer_norm, l2_coef)
                                          for _ in range(num_output_representations)])
        self.dropout = nn.Dropout(dropout)

    @classmethod
    def from_files(cls, params_file=None, options_file=None, weight_file=None, **kwargs):
        return cls(load_bilm(params_file, options_file, weight_file), **kwargs)

    def _freeze_mode(self):
        """A frozen biLM never uses dropout, even when a parent layer's train() reached it. Set
        per layer: bilm.eval() would also flip Paddle's global mode."""
        for layer in self.bilm.sublayers(include_self=True):
            layer.training = False

    def train(self, mode=True):
        super().train(mode)
        if not self.requires_grad:
            self._freeze_mode()
        return self

    def bilm_layers(self, char_ids, lengths=None):
        """The biLM's activations and mask, boundaries kept (what a cache would store)."""
        if self.requires_grad:
            return self.bilm(char_ids, lengths)
        self._freeze_mode()
        with paddle.no_grad():
            return self.bilm(char_ids, lengths)

    def mix(self, activations, mask):
        """Scalar mixes of precomputed activations (boundaries kept) -> dict of representations."""
        stripped = [remove_sentence_boundaries(a, mask) for a in activations]
        layers, new_mask = [s[0] for s in stripped], stripped[0][1]
        reps = [self.dropout(mix(layers, new_mask)) for mix in self.scalar_mixes]
        return {'elmo_representations': reps, 'mask': new_mask}

    def forward(self, char_ids, lengths=None):
        out = self.bilm_layers(char_ids, lengths)
        return self.mix(out['activations'], out['mask'])

    def l2_penalty(self):
        return sum(mix.l2_penalty() for mix in self.scalar_mixes)


# --------------------------------------------------------------------------------------------
# ELMoEmbedder: the Python API
# --------------------------------------------------------------------------------------------

def keep_freed_memory(mmap_threshold_mb=256, trim_threshold_mb=512):
    """Ask glibc's malloc to keep freed blocks for reuse instead of returning them to the OS.

    Paddle allocates a fresh tensor for every op on CPU. With glibc's default (dynamic) thresholds
    the MB-sized buffers of each LSTM step go back to the OS and return as new pages: embedding 128
    sentences with the original-size model took ~550k page faults (1.3 s of system time) and ran
    20-35% slower than with blocks up to 256 MB kept (peak memory within +35 MB). Process-wide
    and idempotent; returns False where malloc is not glibc's (macOS, Windows, musl).
    """
    import ctypes
    try:
        libc = ctypes.CDLL('libc.so.6')
        m_trim_threshold, m_mmap_threshold = -1, -3  # glibc's mallopt parameter numbers
        return bool(libc.mallopt(m_mmap_threshold, mmap_threshold_mb << 20) == 1 and
                    libc.mallopt(m_trim_threshold, trim_threshold_mb << 20) == 1)
    except (OSError, AttributeError):
        return False


def use_device(device, reuse_memory=True):
    """paddle.set_device(device); on CPU with reuse_memory, also keep_freed_memory(): Paddle
    allocates every op's output afresh, and returning those MB-sized buffers to the OS costs
    10-25% of a CPU training step or embedding batch in page faults."""
    paddle.set_device(device)
    if reuse_memory and device == 'cpu':
        keep_freed_memory()


class ELMoEmbedder:
    """Sentences (lists of str tokens) -> numpy ELMo layers.

    >>> embedder = ELMoEmbedder(options_file='options.json', weight_file='weights.hdf5')
    >>> [e.shape for e in embedder.encode([['Hello', 'world', '.'], ['Bye']])]
    [(3, 3, 1024), (3, 1, 1024)]

    params_file: a checkpoint prefix of ours ('checkpoints/10000'); or options_file + weight_file
        in the bilm-tf / AllenNLP format.
    batch_size: sentences per batch in `encode` / `embed_file`.
    stateful: carry LSTM state from batch to batch per row, as AllenNLP's ElmoEmbedder and bilm-tf
        do; the default (stateless) makes a sentence's embedding independent of other inputs.
    token_cache_size: char-CNN outputs of up to this many distinct tokens are kept, so a known word
        goes through the char CNN once (0 disables the cache).
    reuse_memory: on CPU, call `keep_freed_memory()` (process-wide malloc setting; see there).
    """

    def __init__(self, params_file=None, options_file=None, weight_file=None, batch_size=64,
                 device='cpu', stateful=False, token_cache_size=50000, bilm=None, reuse_memory=True):
        use_device(device, reuse_memory)
        if bilm is None:
            bilm = load_bilm(params_file, options_file, weight_file, stateful=stateful)
        self.bilm = bilm  # `bilm=`: an in-memory BiLM (e.g. being trained) instead of files
        self.bilm.stateful = stateful
        self.bilm.eval()
        self.batch_size = batch_size
        self.stateful = stateful
        self.token_cache_size = token_cache_size
        # Char ids are only needed for tokens the vector cache misses: a bound like the cache's keeps
        # embed_file's memory flat (the mapper's default bound, 1M tokens, is ~0.5 GB of ids).
        self.mapper = CharMapper(self.bilm.options['char_cnn']['max_characters_per_token'],
                                 max_cache=max(token_cache_size, 10000))
        self._token_cache = {}

    @property
    def dim(self):
        return 2 * self.bilm.projection_dim

    def reset_states(self):
        self.bilm.reset_states()

    # ---- core -----------------------------------------------------------------------------
    def _token_vectors(self, tokens):
        """Distinct tokens -> numpy [len(tokens), P]; runs the char CNN only on uncached ones."""
        missing = [t for t in tokens if t not in self._token_cache]
        if missing:
            ids = paddle.to_tensor(self.mapper.tokens(missing))
            with paddle.no_grad():
                vectors = self.bilm.token_embedding(ids.unsqueeze(0))[0].numpy()
            fresh = dict(zip(missing, vectors))
        else:
            fresh = {}
        room = self.token_cache_size - len(self._token_cache)
        for token in missing[:max(room, 0)]:
            self._token_cache[token] = fresh[token]
        return np.stack([self._token_cache[t] if t in self._token_cache else fresh[t] for t in tokens])

    def _run_batch(self, sentences):
        """One batch through the biLM -> (activations [layers, batch, time, 2P] numpy, lengths)."""
        check_sentences(sentences)
        padded = [[BOS_TOKEN, *s, EOS_TOKEN] for s in sentences]
        lengths = np.array([len(s) for s in padded], dtype=np.int64)
        vocab = list(dict.fromkeys(t for s in padded for t in s))
        index = {t: i for i, t in enumerate(vocab)}
        vectors = self._token_vectors(vocab)  # [distinct, P]
        positions = np.zeros((len(padded), lengths.max()), dtype=np.int64)
        for row, s in enumerate(padded):
            positions[row, :len(s)] = [index[t] + 1 for t in s]  # 0 selects the zero (padding) row
        table = np.concatenate([np.zeros((1, vectors.shape[1]), np.float32), vectors])
        with paddle.no_grad():
            x = paddle.to_tensor(table[positions])
            out = self.bilm(None, lengths, token_embeddings=x)
            layers = np.stack([a.numpy() for a in out['activations']])
        return layers, lengths

    def embed_batch(self, sentences):
        """One batch -> list of float32 [n_layers + 1, n_tokens, 2P], boundaries removed."""
        sentences = [list(s) if not isinstance(s, str) else s for s in sentences]
        if not sentences:
            return []
        layers, lengths = self._run_batch(sentences)
        return [np.ascontiguousarray(layers[:, row, 1:n - 1]) for row, n in enumerate(lengths)]

    def embed_sentence(self, tokens):
        return self.embed_batch([tokens])[0]

    def _batches(self, sentences, batch_size):
        """Index batches: in order when stateful (row state matters), else grouped by length."""
        order = np.arange(len(sentences))
        if not self.stateful:
            order = np.argsort([len(s) for s in sentences], kind='stable')
        for start in range(0, len(order), batch_size):
            yield order[start:start + batch_size]

    def iter_embeddings(self, sentences, batch_size=None):
        """Yield (index, float32 [n_layers + 1, n_tokens, 2P]) batch by batch, so that a long input
        never holds all its embeddings at once. Stateless runs group sentences by length, so the
        indices do not come in input order."""
        check_sentences(sentences)
        for idx in self._batches(sentences, batch_size or self.batch_size):
            yield from zip(idx.tolist(), self.embed_batch([sentences[i] for i in idx]))

    def encode(self, sentences, batch_size=None):
        """List of token lists -> list of float32 [n_layers + 1, n_tokens, 2P], input order kept."""
        results = [None] * len(sentences)
        for i, emb in self.iter_embeddings(sentences, batch_size):
            results[i] = emb
        return results

    def hub_outputs(self, sentences, mix_weights=None, gamma=1.0):
        """TF-Hub-style outputs for a batch, padded to its longest sentence (numpy arrays).

        word_emb [batch, time, P] (char-CNN token representation), lstm_outputs1/2
        [batch, time, 2P], elmo [batch, time, 2P] = gamma * sum softmax(mix_weights)_k layer_k
        (equal weights by default), default [batch, 2P] = mean of elmo over real tokens only,
        sequence_len [batch].
        """
        embs = self.encode(sentences)
        n_layers = self.bilm.n_layers + 1
        w = np.zeros(n_layers) if mix_weights is None else np.asarray(mix_weights, dtype=np.float64)
        w = np.exp(w - w.max())
        w = (w / w.sum()).astype(np.float32)
        lengths = np.array([e.shape[1] for e in embs], dtype=np.int64)
        padded = np.zeros((n_layers, len(embs), int(lengths.max(initial=0)), self.dim), np.float32)
        for row, e in enumerate(embs):
            padded[:, row, :e.shape[1]] = e
        elmo = gamma * np.tensordot(w, padded, axes=1)
        out = {'word_emb': padded[0, :, :, :self.bilm.projection_dim],
               'elmo': elmo, 'sequence_len': lengths,
               'default': elmo.sum(axis=1) / np.maximum(lengths, 1)[:, None]}
        for k in range(1, n_layers):
            out[f'lstm_outputs{k}'] = padded[k]
        return out

    def embed_file(self, input_file, output_file, output_format='all', batch_size=None, progress=True):
        """Embed a one-sentence-per-line file (whitespace tokens) into hdf5, as `allennlp elmo` did.

        Datasets: str(line index) -> [n_layers + 1, n_tokens, 2P] ('all'), [n_tokens, 2P] ('top' or
        'average'); plus 'sentence_to_index', a JSON string {sentence: index}. Lines are streamed
        in chunks, so memory stays flat however long the file is; the output appears atomically.
        """
        from run_embed import embed_file
        return embed_file(self, input_file, output_file, output_format, batch_size or self.batch_size,
                          progress)
