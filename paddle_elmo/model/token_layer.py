"""The token layer of the biLM: a token's representation before the LSTMs.

bilm-tf's char input (a char CNN over each token's characters, max-pooled, then highway layers and
a projection: `CharEncoder`, `Highway`), its word input (an embedding table) or both
(ELMoForManyLangs). `TOKEN_PARTS` builds the layers a token mode names (token_modes.py), and
`EagerOps` holds the token layer's steps as BiLM runs them eagerly (NumPy index plans that skip
padding and repeated tokens, the CPU kernels), beside layer_math.TokenOps, the export's static ones.
"""
import math

import numpy as np

import paddle
import paddle.nn as nn
import paddle.nn.functional as F

from paddle_elmo.model import kernels, layer_math
from paddle_elmo.model.config import N_CHARACTERS
from paddle_elmo.text.token_ids import PAD_CHAR
from paddle_elmo.model.token_modes import CHAR_ENCODER, WORD_EMBEDDING
from paddle_elmo.model.packing import distinct_tokens, even_chunks, length_chunks, used_chars, window_spans


def ids_numpy(ids):
    """Ids as a tensor or array-like -> numpy (the index plans are made in numpy)."""
    return ids.numpy() if isinstance(ids, paddle.Tensor) else np.asarray(ids)


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

    Each convolution runs as matrix products over the windows of the tokens, faster than Conv2D
    on CPU. The reference convolves all 50 positions, PAD included, but every window made only of
    PAD chars gives the same output whatever the token: it is computed once, and only windows that
    hold a char are multiplied (a 5-letter word needs 7 windows, not 44): each token's own with the
    CPU kernel, up to a chunk's longest token with Paddle's ops. Same max, a fraction of the work.
    """

    def __init__(self, config, word_columns=0, char_table=(N_CHARACTERS, PAD_CHAR + 1)):
        super().__init__()
        # word_columns: a word row's, which come first in the projection's input (word+char, as in
        # ELMoForManyLangs' token embedder); the projection keeps bilm-tf's init, std sqrt(1 / n_filters).
        # char_table: (rows of the char embedding, shifted id of the padding inside a token), the
        # token mode's (ELMo's bytes by default; a dictionary's for ELMoForManyLangs' models).
        n_characters, self.pad_id = char_table
        self.word_dim = word_columns
        self.max_chars = config.max_characters_per_token
        self.char_dim = config.char_embed_dim
        self.widths = [w for w, _ in config.cnn_filters]
        self.activation = F.relu if config.activation == 'relu' else F.tanh
        n_filters = config.n_filters
        # Row 0 is the padding char: it stays zero (padding_idx) and gets no gradient.
        self.char_embed = nn.Embedding(n_characters, self.char_dim, padding_idx=0,
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
        the part whose work depends on the tokens' lengths (EagerOps runs it per chunk)."""
        return (ops or EAGER).char_cnn(char_ids, self)

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
    longest token, each distinct token once, in chunks) and on the C++ kernels (kernels.py), with
    their fast backward on CPU.

    kernels: the model's (kernels.Kernels); chunk: at most this many distinct tokens per char-CNN
    call; table_rows: in training, the TableRows of the word embedding the step reads
    (sampled_softmax.py), so the update touches those rows only; None reads the whole embedding.
    """

    def __init__(self, kernels, chunk=1024, table_rows=None):
        self.kernels, self.chunk, self.table_rows = kernels, chunk, table_rows

    add_bias = staticmethod(kernels.add_bias)

    def highway_gate(self, carry, carry_bias, transform, transform_bias, x):
        return kernels.highway_gate(carry, carry_bias, transform, transform_bias, x, self.kernels)

    @staticmethod
    def max_over(x):
        """[windows, tokens, n] -> [tokens, n] (TensorFlow's gradient for ties, faster than paddle.max's)."""
        return kernels.max_over_positions(x)

    def char_cnn(self, char_ids, encoder):
        """As TokenOps.char_cnn; on CPU one kernel call (kernels.char_cnn: each token's own windows,
        their products made from the call's distinct chars and pooled in cache)."""
        if self.kernels.for_tensor(encoder.char_embed.weight) is None:
            return super().char_cnn(char_ids, encoder)
        ids = ids_numpy(char_ids)
        relu = encoder.activation is F.relu  # in the kernel; another activation after it
        y = kernels.char_cnn(ids, window_spans(ids, encoder.pad_id, encoder.max_chars), encoder.char_embed.weight,
                             list(encoder.conv_weights), list(encoder.conv_biases), relu, encoder.max_chars,
                             encoder.pad_id)
        return y if relu else encoder.activation(y)

    @staticmethod
    def used_chars(char_ids, pad_id, max_chars):
        """As TokenOps.used_chars, a Python int, in NumPy (the windows are planned there), over all
        of char_ids' columns (a legacy checkpoint's batches may hold more than max_chars)."""
        return max(1, int(used_chars(ids_numpy(char_ids), pad_id).max(initial=0)))

    @staticmethod
    def char_windows(char_ids, used, widths, max_chars, char_embed):
        """As TokenOps.char_windows, position-major: [windows, tokens, width * char_dim] each."""
        # Windows starting at or after `used` are all PAD for every token of this call and all give
        # the same value: one of them (starting at `used`) stands for the rest.
        n_chars = min(max_chars, used + max(widths))
        # Position-major, so that each window position is a contiguous [tokens, n] slab.
        ids = ids_numpy(char_ids)[:, :n_chars].T  # [n_chars, tokens]
        tokens = ids.shape[1]
        for width in widths:
            n_windows = min(max_chars - width + 1, used + 1)
            # The windows' char ids in NumPy (a few thousand ints; as Paddle ops a gather, a
            # transpose and a copy per width and chunk), then one embedding lookup writes the windows
            # in place, faster than gathering and transposing embedded chars.
            index = (np.arange(n_windows)[:, None] + np.arange(width)[None, :]).reshape(-1)
            window_ids = ids[index].reshape(n_windows, width, tokens).transpose(0, 2, 1)  # [windows, tokens, width]
            yield char_embed(paddle.to_tensor(np.ascontiguousarray(window_ids))).reshape(
                [n_windows, tokens, width * char_embed.weight.shape[1]])

    def per_distinct_token(self, char_ids, per_chunk, after, dim, pad_id):
        """As TokenOps.per_distinct_token, with zeros at padding tokens: each distinct real token is
        encoded once (gradients add up through the gather). `per_chunk` runs on chunks of similar
        lengths (length_chunks) of at most `chunk` tokens: a chunk of short words skips most all-PAD
        windows (see CharEncoder), and the peak memory stays bounded however long the input;
        `after` runs once on their concatenation when the call is one chunk's worth (a training
        step: one product per highway instead of one per chunk, and no gradient summed over
        chunks), else chunk by chunk."""
        ids = ids_numpy(char_ids)
        distinct, used, slot = distinct_tokens(ids, pad_id)
        if len(distinct) == 0:
            return paddle.zeros([ids.shape[0], dim])
        chunks = self._chunks(used)
        if len(distinct) <= self.chunk:
            parts = [per_chunk(distinct[a:b]) for a, b in chunks]
            encoded = after(parts[0] if len(parts) == 1 else paddle.concat(parts))
        else:
            parts = [after(per_chunk(distinct[a:b])) for a, b in chunks]
            encoded = parts[0] if len(parts) == 1 else paddle.concat(parts)  # [distinct real tokens, dim]
        # Row 0 of the table is the zero vector that padding positions pick.
        table = paddle.concat([paddle.zeros([1, dim], dtype=encoded.dtype), encoded])
        return paddle.gather(table, paddle.to_tensor(slot))

    def _chunks(self, used):
        """The char CNN's calls on distinct tokens sorted by `used` -> [(start, end)]: with the kernel
        (each token runs its own windows) even pieces of at most `chunk` tokens; with Paddle's ops
        (windows up to a chunk's longest token) length_chunks."""
        if self.kernels.cpu and kernels.kernel() is not None and paddle.get_device() == 'cpu':
            return even_chunks(0, len(used), self.chunk)
        return length_chunks(used, self.chunk)

    def word_rows(self, table, word_ids):
        """As TokenOps.word_rows; from `table_rows` (holding every id) when given."""
        index = ids_numpy(word_ids) - 1
        if self.table_rows is None:
            index = index.clip(0)
        else:
            table, index = self.table_rows.values[0], self.table_rows.positions(index.clip(0))
        return paddle.gather(table, paddle.to_tensor(index))


EAGER = EagerOps(kernels.CPU_KERNELS)  # a token layer's ops when it is called alone, without the model's


def _add_char_encoder(bilm, config, vocab):
    mode = config.input_mode
    bilm.char_encoder = CharEncoder(config, mode.projection_word_columns(config), mode.char_table(vocab))
    if mode.chars_from_vocab:
        bilm.vocab = vocab  # the model's dictionaries (a Lexicon), which InputMapper.of(bilm) reads


def _add_word_embedding(bilm, config, vocab):
    if vocab is None:
        raise ValueError(f'a {config.token_input} model needs its input vocabulary (vocab=)')
    bilm.vocab = vocab
    # bilm-tf: a variable without an initializer, so TF1's glorot uniform
    bilm.word_embedding = bilm.create_parameter([vocab.size, config.word_embedding_dim],
                                                default_initializer=nn.initializer.XavierUniform())


# How BiLM builds each token layer a mode names in its `parts` (token_modes.py).
TOKEN_PARTS = {CHAR_ENCODER: _add_char_encoder, WORD_EMBEDDING: _add_word_embedding}
