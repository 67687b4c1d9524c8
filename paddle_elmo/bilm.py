"""The ELMo bidirectional language model (Peters et al. 2018).

Computes exactly what allenai/bilm-tf and AllenNLP's `_ElmoBiLm` compute (see
bilm-tf's `bilm/model.py`, AllenNLP's `modules/elmo.py`). `BiLM(config, vocab=...)`: a token representation -- char CNN +
highway + projection (bilm-tf's char input), a word embedding (bilm-tf's token mode), or both
concatenated before the projection (ELMoForManyLangs) -- then separate forward and backward stacks
of LSTMs with a projection, cell/projection clipping and optional residual connections. It
returns L + 1 layers `[batch, time, 2 * projection_dim]` and a mask, in a stateful or a stateless mode. `config` is a `config.ModelConfig`; the index plans that skip
padding live in packing.py, the CPU kernels in kernels.py.

The token representation is the config's token mode's (token_modes.py: BiLM builds the layers its
`parts` name, TOKEN_PARTS, and runs its `embed`), on `EagerOps`: the token layer's steps as BiLM
runs them (NumPy plans, the kernels), beside layer_math.TokenOps, the export's.
"""
import math

import numpy as np

import paddle
import paddle.nn as nn
import paddle.nn.functional as F

from paddle_elmo import kernels, layer_math, weight_writes
from paddle_elmo.config import N_CHARACTERS
from paddle_elmo.token_ids import PAD_CHAR, TokenInput
from paddle_elmo.token_modes import CHAR_ENCODER, CHAR_IDS, WORD_EMBEDDING, WORD_IDS
from paddle_elmo.packing import distinct_tokens, last_states, length_chunks, packing_indices, row_order, step_groups

# --------------------------------------------------------------------------------------------
# The model
# --------------------------------------------------------------------------------------------

def _normal(std):
    return nn.initializer.Normal(mean=0.0, std=std)


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

    def forward(self, x, ops=None):
        """x: [tokens, dim] -> [tokens, dim]; ops: the forward's (EagerOps when None, layer_math.TokenOps)."""
        return (ops or EAGER).highway_gate(paddle.matmul(x, self.carry.weight), self.carry.bias,
                                           paddle.matmul(x, self.transform.weight), self.transform.bias, x)


class CharEncoder(nn.Layer):
    """Char ids [tokens, max_chars] -> token representations [tokens, projection_dim].

    Each convolution runs as one matrix multiply over the windows of the token; this is several
    times faster than Conv2D on CPU. The reference convolves all 50 positions, PAD included, but
    every window made only of PAD chars gives the same output whatever the token: it is computed
    once, and only windows that start before the chunk's last non-PAD char are multiplied (a
    5-letter word needs 7 windows, not 44). Same max, a fraction of the work.
    """

    def __init__(self, config, word_columns=0):
        super().__init__()
        # word_columns: a word row's, which come first in the projection's input (word+char, as in
        # ELMoForManyLangs' token embedder); the projection keeps bilm-tf's init, std sqrt(1 / n_filters).
        self.word_dim = word_columns
        self.max_chars = config.max_characters_per_token
        self.char_dim = config.char_embed_dim
        self.widths = [w for w, _ in config.cnn_filters]
        self.activation = F.relu if config.activation == 'relu' else F.tanh
        n_filters = config.n_filters
        # Row 0 is the padding char: it stays zero (padding_idx) and gets no gradient.
        self.char_embed = nn.Embedding(N_CHARACTERS, self.char_dim, padding_idx=0,
                                       weight_attr=paddle.ParamAttr(initializer=nn.initializer.Uniform(-1.0, 1.0)))
        self.conv_weights = nn.ParameterList()
        self.conv_biases = nn.ParameterList()
        for width, n in config.cnn_filters:
            # bilm-tf: uniform +-0.05 (Kim et al. 2015) for relu, normal(sqrt(1 / fan_in)) for tanh
            if self.activation is F.relu:
                init = nn.initializer.Uniform(-0.05, 0.05)
            else:
                init = _normal(math.sqrt(1.0 / (width * self.char_dim)))
            self.conv_weights.append(self.create_parameter([width * self.char_dim, n], default_initializer=init))
            self.conv_biases.append(self.create_parameter([n], is_bias=True,
                                                          default_initializer=nn.initializer.Constant(0.0)))
        self.pad_id = PAD_CHAR + 1  # char ids are shifted by one so that 0 means "no token"
        self.highways = nn.LayerList([Highway(n_filters) for _ in range(config.num_highways)])
        proj_dim = config.projection_dim
        self.projection = nn.Linear(self.word_dim + n_filters, proj_dim,
                                    weight_attr=paddle.ParamAttr(initializer=_normal(math.sqrt(1.0 / n_filters))),
                                    bias_attr=paddle.ParamAttr(initializer=nn.initializer.Constant(0.0)))

    def forward(self, char_ids, ops=None):
        """char_ids: int64 [tokens, max_chars] -> float32 [tokens, projection_dim] (char input only);
        ops: the forward's (EagerOps when None; layer_math.TokenOps in a static program)."""
        ops = ops or EAGER
        return ops.project(self.features(char_ids, ops), self.projection)

    def features(self, char_ids, ops=None):
        """char_ids: int64 [tokens, max_chars] -> the highway output, float32 [tokens, n_filters]."""
        ops = ops or EAGER
        return self.highway(self.cnn(char_ids, ops), ops)

    def cnn(self, char_ids, ops=None):
        """char_ids: int64 [tokens, max_chars] -> the char CNN's output, float32 [tokens, n_filters]:
        the part whose windows depend on the call's longest token (EagerOps runs it per chunk)."""
        ops = ops or EAGER
        used = ops.used_chars(char_ids, self.pad_id, self.max_chars)
        windows = ops.char_windows(char_ids, used, self.widths, self.max_chars, self.char_embed)
        return layer_math.char_cnn(windows, self.conv_weights, paddle.concat(list(self.conv_biases)), self.activation,
                                   ops.max_over, ops.add_bias)

    def highway(self, x, ops=None):
        """The highway layers on the char CNN's output x [tokens, n_filters] -> [tokens, n_filters]."""
        for highway in self.highways:
            x = highway(x, ops)
        return x

    def project_highway(self, x, ops=None):
        """The highway layers, then the projection: the char CNN's output [tokens, n_filters] ->
        [tokens, projection_dim] (char input)."""
        return (ops or EAGER).project(self.highway(x, ops), self.projection)


class EagerOps(layer_math.TokenOps):
    """The token layer's steps as BiLM runs them: planned in NumPy (windows up to the chunk's
    longest token, each distinct token once, in chunks of similar lengths) and on the C++ kernels
    (kernels.py), with their fast backward on CPU.

    chunk: at most this many distinct tokens per char-CNN call; table_rows: in training, the
    TableRows of the word embedding the step reads (sampled_softmax.py), so the update touches
    those rows only; None reads the whole embedding.
    """

    def __init__(self, chunk=1024, table_rows=None):
        self.chunk, self.table_rows = chunk, table_rows

    add_bias = staticmethod(kernels.add_bias)
    highway_gate = staticmethod(kernels.highway_gate)

    @staticmethod
    def max_over(x):
        """[windows, tokens, n] -> [tokens, n] (the kernel's max, TensorFlow's gradient for ties)."""
        return kernels.max_over_positions(x)

    @staticmethod
    def used_chars(char_ids, pad_id, max_chars):
        """As TokenOps.used_chars, a Python int (the windows are planned in NumPy), over all of
        char_ids' columns (a legacy checkpoint's batches may hold more than max_chars)."""
        return int(layer_math.last_char_position(char_ids, pad_id, char_ids.shape[1])) if char_ids.shape[0] else 1

    @staticmethod
    def char_windows(char_ids, used, widths, max_chars, char_embed):
        """As TokenOps.char_windows, position-major: [windows, tokens, width * char_dim] each."""
        # Windows starting at or after `used` are all PAD for every token of this call and all give
        # the same value: one of them (starting at `used`) stands for the rest.
        n_chars = min(max_chars, used + max(widths))
        # Position-major, so that each window position is a contiguous [tokens, n] slab.
        ids = char_ids[:, :n_chars].transpose([1, 0])  # [n_chars, tokens]
        tokens = ids.shape[1]
        for width in widths:
            n_windows = min(max_chars - width + 1, used + 1)
            # One gather builds all windows (slicing per offset is far slower in backward on CPU),
            # on the char ids: the embedding lookup then writes the windows in place, faster than
            # gathering and transposing embedded chars (BENCHMARKS.md, "Measured choices").
            index = (np.arange(n_windows)[:, None] + np.arange(width)[None, :]).reshape(-1)
            window_ids = paddle.gather(ids, paddle.to_tensor(index), axis=0).reshape(
                [n_windows, width, tokens]).transpose([0, 2, 1])  # [windows, tokens, width]
            yield char_embed(window_ids).reshape([n_windows, tokens, width * char_embed.weight.shape[1]])

    def per_distinct_token(self, char_ids, per_chunk, after, dim, pad_id):
        """As TokenOps.per_distinct_token, with zeros at padding tokens: each distinct real token is
        encoded once (gradients add up through the gather). `per_chunk` runs on chunks of similar
        lengths (length_chunks) of at most `chunk` tokens: a chunk of short words skips most all-PAD
        windows (see CharEncoder), and the peak memory stays bounded however long the input;
        `after` runs once on their concatenation when the call is one chunk's worth (a training
        step: one product per highway instead of one per chunk, and no gradient summed over
        chunks), else chunk by chunk."""
        ids = _numpy(char_ids)
        distinct, used, slot = distinct_tokens(ids, pad_id)
        if len(distinct) == 0:
            return paddle.zeros([ids.shape[0], dim])
        chunks = length_chunks(used, self.chunk)
        if len(distinct) <= self.chunk:
            parts = [per_chunk(paddle.to_tensor(distinct[a:b])) for a, b in chunks]
            encoded = after(parts[0] if len(parts) == 1 else paddle.concat(parts))
        else:
            parts = [after(per_chunk(paddle.to_tensor(distinct[a:b]))) for a, b in chunks]
            encoded = parts[0] if len(parts) == 1 else paddle.concat(parts)  # [distinct real tokens, dim]
        # Row 0 of the table is the zero vector that padding positions pick.
        table = paddle.concat([paddle.zeros([1, dim], dtype=encoded.dtype), encoded])
        return paddle.gather(table, paddle.to_tensor(slot))

    def word_rows(self, table, word_ids):
        """As TokenOps.word_rows; from `table_rows` (holding every id) when given."""
        index = _numpy(word_ids) - 1
        if self.table_rows is None:
            index = index.clip(0)
        else:
            table, index = self.table_rows.values[0], np.searchsorted(self.table_rows.ids, index.clip(0))
        return paddle.gather(table, paddle.to_tensor(index))


EAGER = EagerOps()


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

    keep_packed = True  # False: the kernel packs the weights at every call (as before; for comparisons)

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

    def packed_weights(self, max_rows):
        """W_hidden and W_P packed for the kernel's products of up to max_rows rows
        (kernels.pack_weight), kept for the next calls -> (W_hidden, W_P) packed, or None (then
        the kernel packs them per call).

        Kept for one key: the weights' (weight_writes.key: no write to them since) and max_rows
        (MKL's layout, and its results, depend on it); another key packs anew, so at most one pair
        is held (~60 MB for the original size), freed with the layer. Nothing is kept while the
        weights have a gradient: any optimizer may then update them unseen.
        """
        if not self.keep_packed or self.W.grad is not None or self.W_P.grad is not None:
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

    def __init__(self, config):
        super().__init__()
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
        for i, (layer, (h, c)) in enumerate(zip(self.layers, states)):
            if self.training and self.dropout > 0:
                x = kernels.dropout(x, self.dropout)
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
        w_input, w_hidden = split_rows(layer.W, [layer.input_dim, layer.projection_dim])
        bias = layer.bias()
        # Groups of steps whose [tokens, 4D] gate buffer fits GATE_BUFFER_MB: training keeps three
        # such buffers (the gates, their activations and their gradient; a whole batch of 64
        # rt-polarity sentences would need 780 MB at once), inference only the gates, so its groups
        # take 3x the tokens in the same memory. Each group is a kernel call; in inference the calls
        # reuse the layer's packed W_hidden and W_P (LstmLayer.packed_weights) while their first
        # step's rows are the same.
        tokens = (self.GATE_BUFFER_MB << 20) // (16 * self.dim)
        if not kernels.tracks_grad([x, layer.W, layer.W_P, layer.B, h, c]):
            tokens *= 3
        groups = step_groups(batch_sizes, max(int(batch_sizes[0]), tokens))
        xs = split_rows(x, [int(batch_sizes[a:b].sum()) for a, b in groups]) if len(groups) > 1 else [x]
        outputs = []
        for (first, last), x_group in zip(groups, xs):
            sizes = batch_sizes[first:last]
            gates = paddle.matmul(x_group, w_input)  # [group tokens, 4D], bias added by recurrence
            h_all, c_all = kernels.recurrence(gates, bias, sizes, h, c, w_hidden, layer.W_P,
                                              self.cell_clip, self.proj_clip, packed=layer.packed_weights)
            h, c = last_states(h_all, c_all, h, c, sizes)
            outputs.append(h_all)
        return (outputs[0] if len(outputs) == 1 else paddle.concat(outputs)), (h, c)


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


class BiLM(nn.Layer):
    """The ELMo biLM: the token representation, then a forward and a backward LstmStack.

    The token representation follows `config.token_input` (its token_modes.TokenMode): `char_encoder`
    (char CNN + highway + projection), `word_embedding` [vocab, projection_dim] (bilm-tf's token mode: row i is the
    vocabulary's id i, no padding row), or both: the word row [word_dim] and the highway output
    concatenated, then `char_encoder.projection`. Word input reads `word_ids`, int64 [batch, time]
    holding the vocabulary id + 1 and 0 for padding (bilm-tf's TokenBatcher layout); `vocab` (a
    vocabulary.Vocabulary) is the model's input vocabulary, which turns words into those ids.

    Stateful mode (as bilm-tf and AllenNLP): each batch row starts from the final state its row
    reached in the previous batch; rows beyond the batch keep their state; `reset_states()` zeroes
    them. Stateless mode: every row starts from zeros, so a sentence's result does not depend on
    the batch or on earlier calls.
    """

    def __init__(self, config, stateful=False, vocab=None):
        super().__init__()
        self.config = config.checked()
        self.vocab = None  # the word embedding's, when the mode has one
        self.stateful = stateful
        self.projection_dim = config.projection_dim
        self.n_layers = config.num_layers
        self.char_encoder = None
        for part in config.input_mode.parts:  # the token layers of config.token_input (token_modes.py)
            TOKEN_PARTS[part](self, config, vocab)
        self.forward_stack = LstmStack(config)
        self.backward_stack = LstmStack(config)
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

    # ---- forward ----------------------------------------------------------------------------
    def token_embedding(self, char_ids=None, word_ids=None, chunk=1024, word_rows=None):
        """The context-free token representations -> [batch, time, projection_dim], zeros at padding:
        config.input_mode's (token_modes.py), on EagerOps.

        char_ids: int64 [batch, time, max_chars] (tensor or numpy; 0 = padding), for a model with
        chars; word_ids: int64 [batch, time] (vocabulary id + 1, 0 = padding), for one with words;
        chunk: at most this many distinct tokens per char-CNN call. word_rows: in training, the
        TableRows of the word embedding the step reads (lm.py), so the update touches those rows
        only; None reads the whole embedding.
        """
        mode = self.config.input_mode
        given = {CHAR_IDS: char_ids, WORD_IDS: word_ids}
        for name in mode.reads:
            if given[name] is None:
                raise ValueError(f'this biLM ({mode.name} input) reads {name}: make them with '
                                 f'paddle_elmo.token_ids.InputMapper.of(bilm)')
        ids = {name: _numpy(given[name]) for name in mode.reads}
        first = ids[mode.reads[0]]
        batch, time = first.shape[:2]
        x = mode.embed(self, {name: a.reshape(batch * time, *a.shape[2:]) for name, a in ids.items()},
                       EagerOps(chunk, word_rows))
        present = first > 0 if first.ndim == 2 else (first > 0).any(axis=-1)
        return _zero_padding(x.reshape([batch, time, -1]), present)

    def forward(self, char_ids=None, lengths=None, token_embeddings=None, word_ids=None):
        """Run the biLM on sentences that already hold <S> and </S>.

        char_ids: int64 [batch, time, max_chars] (0 = padding), for a model with chars;
        word_ids: int64 [batch, time] (vocabulary id + 1, 0 = padding), for a model with words;
        or, instead of both, `token_embeddings` [batch, time, projection_dim] precomputed (zeros
        at padding) with `lengths`; or, as the first argument, a TokenInput (InputMapper.batch's).
        lengths: int array [batch] of real tokens per row (padding is at the end); derived from the
            ids when None.
        Returns dict: 'activations', a list of n_layers + 1 tensors [batch, time, 2 * projection_dim]
        (layer 0 is [x; x], then [forward; backward] per layer), and 'mask' [batch, time] bool.
        """
        char_ids, word_ids, lengths = TokenInput.of(char_ids, word_ids, lengths)
        if token_embeddings is None:
            token_embeddings = self.token_embedding(char_ids, word_ids)
        time = token_embeddings.shape[1]
        if lengths is None:
            present = _numpy(word_ids if char_ids is None else char_ids) > 0
            lengths = (present if char_ids is None else present.any(axis=-1)).sum(axis=1)
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
        # One gather both sorts the rows longest first and (backward) reverses each within its length.
        order, batch_sizes, forward_index, backward_index = row_order(lengths, time)
        flat_x = x.reshape([batch * time, -1])
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

    def lm_outputs(self, forward, backward, word_rows=None):
        """Top-layer outputs for language-model training on full windows.

        forward, backward: the two streams' TokenInput (numpy int ids [batch, unroll(, max_chars)],
        the ones the model reads; every row is a full window, lengths are not read); word_rows: the
        word embedding's TableRows of the step. The backward stream is already reversed (a separate
        stream, as in bilm-tf's training), so it is read as is. Both streams hold the same words:
        token_embedding runs the char CNN once per distinct token of the two.
        Returns (forward top [batch, unroll, P], backward top [batch, unroll, P]).
        """
        both = lambda name: None if getattr(forward, name) is None else np.concatenate(
            [getattr(forward, name), getattr(backward, name)])
        batch, time = (forward.char_ids if forward.char_ids is not None else forward.word_ids).shape[:2]
        # One chunk: a training window is small, and splitting it costs more op overhead than it saves.
        x = self.token_embedding(both('char_ids'), both('word_ids'), chunk=2 * batch * time, word_rows=word_rows)
        xs = paddle.unbind(x.reshape([2, batch, time, -1]))  # unbind, not x[d]: slice backward is slow
        batch_sizes = np.full(time, batch)
        tops = []
        for direction, stack in enumerate((self.forward_stack, self.backward_stack)):
            layer_outs, finals = stack(xs[direction], batch_sizes, self._initial_states(direction, batch))
            self._store_states(direction, finals)
            tops.append(layer_outs[-1])
        return tops[0], tops[1]


def _add_char_encoder(bilm, config, vocab):
    bilm.char_encoder = CharEncoder(config, config.input_mode.projection_word_columns(config))


def _add_word_embedding(bilm, config, vocab):
    if vocab is None:
        raise ValueError(f'a {config.token_input} model needs its input vocabulary (vocab=)')
    bilm.vocab = vocab
    # bilm-tf: a variable without an initializer, so TF1's glorot uniform
    bilm.word_embedding = bilm.create_parameter([vocab.size, config.word_embedding_dim],
                                                default_initializer=nn.initializer.XavierUniform())


# How BiLM builds each token layer a mode names in its `parts` (token_modes.py).
TOKEN_PARTS = {CHAR_ENCODER: _add_char_encoder, WORD_EMBEDDING: _add_word_embedding}


def _zero_padding(x, present):
    """x [..., dim] with zeros where `present` (bool numpy, x's leading shape) is false; x itself
    when nothing is padding (the common training window)."""
    return x if present.all() else x * paddle.to_tensor(present.astype(np.float32)).unsqueeze(-1)


def _numpy(ids):
    """Ids as a tensor or array-like -> numpy (the index plans are made in numpy)."""
    return ids.numpy() if isinstance(ids, paddle.Tensor) else np.asarray(ids)


def remove_sentence_boundaries(tensor, mask):
    """Drop <S> and </S> from [batch, time, ...] outputs: -> ([batch, time - 2, ...], mask).

    Rows are shifted left by one and the position of each row's </S> is zeroed.
    """
    return layer_math.drop_boundaries(tensor, mask.astype('int64').sum(axis=1), tensor.shape[1])
