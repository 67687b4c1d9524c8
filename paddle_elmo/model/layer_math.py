"""Each layer's math once, in Paddle ops: the LSTM-with-projection step, the highway gate, the char
CNN, the word + char composition, the reversal of each row within its length and the removal of
<S> and </S> from the outputs.

    h, c = lstm_step(x_gates, h, c, w_hidden, w_proj, cell_clip, proj_clip, hidden_bias=None)
    y = highway_gate(carry, carry_bias, transform, transform_bias, x, add_bias=None)
    x = filter_windows(windows, weights, bias, activation, pool_widths)
    steps = reversed_steps(steps, lengths, where)
    inner, mask = drop_boundaries(x, lengths, time, axis=1)

They run wherever Paddle does: eager (kernels.loop_recurrence and kernels.highway_gate's fallback,
i.e. every GPU run, and CPU runs without the C++ kernels) and in a static program (StaticBiLM,
the export). The C++ kernels (kernels.cc) are the one other implementation, tested against these
(tests/test_speed_paths.py). A model option that changes a step is written here and in kernels.cc;
remove_sentence_boundaries (BiLM's outputs, Elmo) and StaticBiLM share drop_boundaries.

`TokenOps` is the token layer's steps in Paddle ops only, as a static program runs them
(StaticBiLM); token_layer.EagerOps replaces the ones BiLM runs otherwise (NumPy plans that skip
padding and repeated tokens, the C++ kernels). A token mode (token_modes.py) and CharEncoder are
written once against them.

Each function takes the products its callers already have, so that each keeps its own layout:
BiLM's packed recurrence adds the bias to every step's input products at once (add_bias, whose
backward is fast on CPU) and the export adds it to h's product in the loop (onnxruntime fuses it
into that product, int8 or not): `hidden_bias` says which. The sums are the same numbers either way
up to float rounding, and each caller's stay exactly as they were.
"""
import paddle
import paddle.nn.functional as F


def lstm_step(x_gates, h, c, w_hidden, w_proj, cell_clip=None, proj_clip=None, hidden_bias=None):
    """One step of bilm-tf's LSTM with a projection -> (h [rows, P], c [rows, D]).

    x_gates [rows, 4D]: the step's input products x @ W_x (with the bias, unless hidden_bias);
    h [rows, P], c [rows, D]: the previous state; w_hidden = W_h [P, 4D], w_proj = W_P [D, P];
    cell_clip / proj_clip: None or 0 for no clipping; hidden_bias [4D]: added to h @ W_h first.
    Gate blocks i, j, f, o (TensorFlow's order); TensorFlow's forget bias is in the bias (LstmLayer.bias).
    """
    hidden = paddle.matmul(h, w_hidden)
    # split copies each gate into a contiguous [rows, D] block (elementwise ops on strided column
    # slices are slow), and its backward is one concat.
    i, j, f, o = paddle.split(x_gates + (hidden if hidden_bias is None else hidden + hidden_bias), 4, axis=-1)
    c = F.sigmoid(i) * paddle.tanh(j) + F.sigmoid(f) * c
    if cell_clip:
        c = paddle.clip(c, -cell_clip, cell_clip)
    h = paddle.matmul(F.sigmoid(o) * paddle.tanh(c), w_proj)
    if proj_clip:
        h = paddle.clip(h, -proj_clip, proj_clip)
    return h, c


def highway_gate(carry, carry_bias, transform, transform_bias, x, add_bias=None):
    """y = g * relu(transform + transform_bias) + (1 - g) * x, g = sigmoid(carry + carry_bias).

    carry, transform: x's two products [tokens, dim] (x @ W_carry, x @ W_transform); biases [dim].
    bilm-tf's "carry" gate multiplies the transform branch; the nonlinearity is always relu.
    add_bias: how a bias is added, None for `+` (kernels.add_bias in training, for its fast backward
    on CPU). Not a default of operator.add: Paddle's dy2static re-evaluates defaults without this
    module's imports.
    """
    add = _plus if add_bias is None else add_bias
    gate = F.sigmoid(add(carry, carry_bias))
    return gate * F.relu(add(transform, transform_bias)) + (1.0 - gate) * x


def _plus(x, bias):
    return x + bias


def drop_boundaries(x, lengths, time, axis=1):
    """Outputs of sentences with <S> and </S> -> (the same without them, mask bool [batch, time - 2]).

    x: [batch, ...] with the time steps on `axis`; lengths int64 [batch] (real tokens per row, the
    boundaries included, padding at the end); time: x's steps, an int or (in a static program) a
    tensor. Positions 1 .. time - 2 are kept and each row's </S> (now at length - 2) is zeroed.
    """
    inner = paddle.slice(x, [axis], [1], [time - 1])
    mask = paddle.arange(time - 2, dtype='int64').unsqueeze(0) < (lengths - 2).unsqueeze(1)
    keep = mask.astype(x.dtype)
    for _ in range(axis - 1):  # [batch, time - 2] -> broadcastable to inner
        keep = keep.unsqueeze(1)
    for _ in range(len(x.shape) - axis - 1):
        keep = keep.unsqueeze(-1)
    return inner * keep, mask


def reversed_steps(steps, lengths, where):
    """Each row's steps read backwards within its length, padding steps left in place (the backward
    stack's order) -> int [batch, time].

    steps: int [batch, time] or [1, time] (0, 1, ...); lengths: int [batch, 1]; where: np.where
    (BiLM plans in NumPy) or paddle.where (a static program, whose steps are expanded to [batch, time])."""
    return where(steps < lengths, lengths - 1 - steps, steps)


def last_char_position(char_ids, pad_id, max_chars):
    """1 + the position of the last char of any row of char_ids int64 [tokens, max_chars] that is
    neither PAD nor 0 (a padding token), at least 1: int64 [] (a number a static program holds)."""
    real = paddle.logical_and(char_ids != pad_id, char_ids > 0).astype('int64')
    last = paddle.max(real * paddle.arange(1, max_chars + 1, dtype='int64'))
    return paddle.maximum(last, paddle.ones([], dtype='int64'))


def filter_windows(windows, weights, bias, activation, pool_widths):
    """bilm-tf's char CNN on windows of embedded chars -> [tokens, n_filters]: for each filter the max
    over window positions of windows @ W, then activation(max + bias) (the max of the pre-activation,
    as the reference: the activation is monotonic and the bias the same at every position).

    windows: one tensor per filter, in weights' order, [.., width * char_dim] with the positions on
    the axis max_over reduces; weights: one [width * char_dim, n] per filter; bias [n_filters];
    pool_widths: TokenOps.pool_widths or an override, given the products as an iterable, so that it
    decides how many it holds at once."""
    return pool_widths((paddle.matmul(window, weight) for window, weight in zip(windows, weights)), bias, activation)


class TokenOps:
    """The token layer's steps in Paddle ops only, on dynamic shapes: what a static program (the
    export) runs. token_layer.EagerOps replaces the ones whose eager form is faster."""

    add_bias = staticmethod(_plus)
    highway_gate = staticmethod(highway_gate)

    @staticmethod
    def max_over(x):
        """[tokens, windows, n] -> the max over windows [tokens, n]."""
        return paddle.max(x, axis=1)

    def pool_widths(self, products, bias, activation):
        """The char CNN's pooling: each filter width's products (an iterable of [.., n_i], positions
        on the axis max_over reduces) -> activation(max + bias), the widths side by side [tokens,
        sum n_i]."""
        pooled = [self.max_over(product) for product in products]
        return activation(self.add_bias(paddle.concat(pooled, axis=-1), bias))

    def char_cnn(self, char_ids, encoder):
        """bilm-tf's char CNN on char_ids int64 [tokens, max_chars] -> [tokens, n_filters]: the windows
        of embedded chars, each filter's product and max over the windows, its bias and activation
        (encoder: the token_layer.CharEncoder whose weights and shape it runs)."""
        used = self.used_chars(char_ids, encoder.pad_id, encoder.max_chars)
        windows = self.char_windows(char_ids, used, encoder.widths, encoder.max_chars, encoder.char_embed)
        return filter_windows(windows, encoder.conv_weights, paddle.concat(list(encoder.conv_biases)), encoder.activation,
                              self.pool_widths)

    @staticmethod
    def used_chars(char_ids, pad_id, max_chars):
        """The char positions any token of char_ids [tokens, max_chars] uses (last_char_position)."""
        return last_char_position(char_ids, pad_id, max_chars)

    @staticmethod
    def char_windows(char_ids, used, widths, max_chars, char_embed):
        """Each filter's windows of embedded chars [tokens, windows, width * char_dim], window k
        holding chars k .. k + width - 1 laid out width-major as the weight (bilm-tf's
        [1, width, char_dim, n] flattened). A window made only of PAD chars gives the same value
        for every token, so the windows that start after `used` are represented by the first of
        them (same max, a fraction of the work: most batches' longest word is far shorter than
        max_chars)."""
        n_chars = paddle.minimum(used + max(widths), paddle.full([], max_chars, dtype='int64'))
        chars = F.embedding(char_ids[:, :n_chars], char_embed.weight)  # [tokens, n_chars, char_dim]
        windows = []
        for width in widths:
            n_windows = paddle.minimum(used + 1, paddle.full([], max_chars - width + 1, dtype='int64'))
            windows.append(paddle.concat([chars[:, i:i + n_windows] for i in range(width)], axis=-1))
        return windows

    @staticmethod
    def per_distinct_token(char_ids, per_chunk, after, dim, pad_id):
        """after(per_chunk(ids)) (char ids [n, max_chars] -> [n, dim]) on each distinct row of char_ids
        [tokens, max_chars] -> [tokens, dim]. (per_chunk: the part whose work depends on the longest
        token, which EagerOps runs on chunks of similar lengths; here one call on all of them.)"""
        # On a float copy of the ids (exact: ids < 2^24): paddle2onnx 2.1 types Unique's output as
        # float whatever its input, and the ONNX model of an int64 unique fails to load.
        distinct, inverse = paddle.unique(char_ids.astype('float32'), return_inverse=True, axis=0)
        return paddle.gather(after(per_chunk(distinct.astype('int64'))), inverse.reshape([-1]))

    @staticmethod
    def word_rows(table, word_ids):
        """word_ids int64 [tokens] (vocabulary id + 1, 0 = padding) -> the rows of `table` [tokens,
        dim]. Padding reads row 0; the forward zeroes every padding position."""
        return paddle.gather(table, paddle.maximum(word_ids - 1, paddle.zeros([], dtype='int64')))

    def project(self, x, layer):
        """x [rows, in] through an nn.Linear `layer`, its bias added by add_bias -> [rows, out]."""
        return self.add_bias(paddle.matmul(x, layer.weight), layer.bias)

    def word_beside_chars(self, word_rows, features, projection):
        """The word + char composition (ELMoForManyLangs'): word rows [tokens, word_dim] beside the
        char features [tokens, n_filters] (word columns first), through `projection` -> [tokens, P]."""
        return self.project(paddle.concat([word_rows, features], axis=-1), projection)
