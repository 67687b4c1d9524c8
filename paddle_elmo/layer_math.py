"""Each layer's math once, in Paddle ops: the LSTM-with-projection step, the highway gate, and the
removal of <S> and </S> from the outputs.

    h, c = lstm_step(x_gates, h, c, w_hidden, w_proj, cell_clip, proj_clip, hidden_bias=None)
    y = highway_gate(carry, carry_bias, transform, transform_bias, x, add_bias=None)
    inner, mask = drop_boundaries(x, lengths, time, axis=1)

They run wherever Paddle does: eager (kernels.loop_recurrence and kernels.highway_gate's fallback,
i.e. every GPU run, and CPU runs without the C++ kernels) and in a static program (StaticBiLM,
the export). The C++ kernels (kernels.cc) are the one other implementation, tested against these
(tests/test_speed_paths.py). A model option that changes a step is written here and in kernels.cc;
remove_sentence_boundaries (BiLM's outputs, Elmo) and StaticBiLM share drop_boundaries.

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
