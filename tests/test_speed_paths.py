"""The fast paths of the embedder compute exactly what the plain formulas compute.

CharEncoder skips all-PAD windows and token_embedding sorts tokens by length; LstmStack packs rows
time-major and regroups the gates. The LSTM recurrence and the char CNN's max-pool run in CPU
kernels (kernels.cc) or as Python loops of Paddle ops. Each is checked against a direct
implementation written here (full 50-position convolution; a per-row float64 LSTM), values and
gradients, once with the kernels and once with the loops.
"""

import os

import numpy as np
import paddle
import paddle.nn.functional as F
import pytest

from paddle_elmo.model import kernels
from conftest import require_kernels, tiny_config
from helpers import fixture_embedder
from paddle_elmo.text.token_ids import CharMapper
from paddle_elmo.model.bilm import BiLM
from paddle_elmo.model.lstm import LstmStack
from paddle_elmo.model.token_layer import CharEncoder, EagerOps
from paddle_elmo.model.packing import length_chunks, window_spans
from paddle_elmo import ELMoEmbedder
from paddle_elmo.model.kernels import add_bias, max_over_positions

# float32 against float64 / another summation order: ~1e-7 relative; a wrong window, gate or row
# moves values by > 1e-3.
TOL = 1e-5
@pytest.fixture(params=['kernels', 'python'])
def implementation(request):
    """The CPU kernels (kernels.cc), then the Python loops of Paddle ops: the kernels.Kernels to run."""
    if request.param == 'python':
        return kernels.PADDLE_OPS
    require_kernels()
    return kernels.CPU_KERNELS


def full_window_cnn(enc, char_ids):
    """The reference char CNN: every one of the max_chars positions, PAD windows included."""
    chars = enc.char_embed(char_ids)  # [tokens, max_chars, char_dim]
    pooled = []
    for width, weight, bias in zip(enc.widths, enc.conv_weights, enc.conv_biases):
        n_windows = enc.max_chars - width + 1
        windows = paddle.concat([chars[:, k:k + n_windows] for k in range(width)], axis=-1)
        pooled.append(paddle.max(paddle.matmul(windows, weight), axis=1) + bias)
    return enc.activation(paddle.concat(pooled, axis=-1))


def full_window_char_encoder(enc, char_ids, ops=None):
    """The reference computation: full_window_cnn, then the highway on `ops` (the char encoder's
    token ops) and the projection."""
    x = full_window_cnn(enc, char_ids)
    for highway in enc.highways:
        x = highway(x, ops)
    return enc.projection(x)


def test_max_over_positions_splits_the_gradient_among_ties_like_reduce_max():
    x_np = np.random.default_rng(0).normal(size=(5, 3, 4)).astype(np.float32)
    x_np[1:4, 0, 0] = x_np[:, 0, 0].max() + 1.0  # three tied maxima
    x = paddle.to_tensor(x_np, stop_gradient=False)
    g = np.arange(12, dtype=np.float32).reshape(3, 4) + 1
    y = max_over_positions(x)
    (y * paddle.to_tensor(g)).sum().backward()
    hits = x_np == x_np.max(axis=0)
    np.testing.assert_array_equal(y.numpy(), x_np.max(axis=0))
    np.testing.assert_allclose(x.grad.numpy(), hits * g / hits.sum(axis=0), rtol=1e-6)
    with paddle.no_grad():
        np.testing.assert_array_equal(max_over_positions(paddle.to_tensor(x_np)).numpy(), x_np.max(axis=0))


def test_add_bias_gradients_are_the_broadcast_add_gradients():
    x = paddle.randn([6, 5])
    b = paddle.randn([5])
    x.stop_gradient = b.stop_gradient = False
    g = paddle.randn([6, 5])
    (add_bias(x, b) * g).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), g.numpy())
    np.testing.assert_allclose(b.grad.numpy(), g.numpy().sum(axis=0), rtol=1e-6, atol=1e-6)


def odd_tokens(pad_id, count, seed=0):
    """Char ids [count, 50] of tokens that test the char CNN kernel's windows: repeated chars (tied
    windows), tokens of every length up to the longest, one whose tail holds a char other than PAD
    (a 0 after its PAD: its windows run to the end) and one made of PAD only (no window with a char)."""
    rng = np.random.default_rng(seed)
    ids = np.full((count, 50), pad_id, dtype=np.int64)
    for t in range(count):
        length = 48 if t == 0 else int(rng.integers(1, 20))
        ids[t, 0], ids[t, 1:length + 1], ids[t, length + 1] = 259, rng.integers(1, 4, size=length), 260
    ids[1, 30] = 0
    ids[2, :] = pad_id
    return ids


@pytest.mark.parametrize('count', [5, 300], ids=['one thread', 'threads'])  # 300 tokens: above kParallelMin
@pytest.mark.parametrize('activation', ['relu', 'tanh'])
def test_char_cnn_kernel_matches_the_full_convolution_and_its_gradients(count, activation):
    """kernels.char_cnn (each token's own windows, the PAD windows once, pooled a block at a time)
    against every one of the 50 positions in Paddle's ops: values, and gradients split among tied
    windows as reduce_max's, for the char embedding (its padding row 0 untouched), filters and biases."""
    require_kernels()
    results = []
    g = np.random.default_rng(1).normal(size=(count, 4 + 8 + 8 + 6)).astype(np.float32)
    for forward in (lambda e, ids: e.cnn(ids, EagerOps(kernels.CPU_KERNELS)),
                    lambda e, ids: full_window_cnn(e, paddle.to_tensor(ids))):
        enc = make_encoder(seed=3, cnn_filters=[[1, 4], [2, 8], [3, 8], [7, 6]], activation=activation)
        y = forward(enc, odd_tokens(enc.pad_id, count))
        (y * paddle.to_tensor(g)).sum().backward()
        results.append([y.numpy()] + [p.grad.numpy() for p in enc.parameters() if p.grad is not None])
    assert len(results[0]) == len(results[1]) == 1 + 1 + 4 + 4  # the embedding, 4 filters and their biases
    assert np.all(results[0][1][0] == 0)
    for fused, full in zip(*results):
        np.testing.assert_allclose(fused, full, atol=1e-4 * np.abs(full).max(), rtol=0)


@pytest.mark.parametrize('count', [6, 300], ids=['one thread', 'threads'])
def test_char_cnn_kernels_bias_and_relu_are_paddles_add_and_relu_bit_for_bit(count):
    """The kernel adds each filter's bias and applies relu to the token's max itself: its outputs and
    gradients are the same bits as its pre-activation (relu=False: the max plus the bias) through
    Paddle's relu, also where the pre-activation is exactly 0 (relu passes no gradient there, and
    a large gradient at that element must not reach the bias), for a token of PAD only and for a
    padding token (char ids 0, the embedding's zero row)."""
    require_kernels()
    enc = make_encoder(seed=5, cnn_filters=[[1, 4], [2, 70], [3, 8]])
    ids = odd_tokens(enc.pad_id, count)
    ids[3, :] = 0
    spans = window_spans(ids, enc.pad_id, enc.max_chars)
    weights, biases = list(enc.conv_weights), list(enc.conv_biases)
    with paddle.no_grad():
        pre = kernels.char_cnn(ids, spans, enc.char_embed.weight, weights, biases, False, enc.max_chars, enc.pad_id)
    # Move every bias so that token 4's pre-activation is exactly 0 in every column.
    shift = np.split(pre.numpy()[4], np.cumsum([b.shape[0] for b in biases])[:-1])
    for bias, s in zip(biases, shift):
        bias.set_value(bias.numpy() - s)
    g = np.random.default_rng(6).normal(size=pre.shape).astype(np.float32)
    g[4] = 1e3
    results = []
    for relu in (True, False):
        y = kernels.char_cnn(ids, spans, enc.char_embed.weight, weights, biases, relu, enc.max_chars, enc.pad_id)
        y = y if relu else F.relu(y)
        (y * paddle.to_tensor(g)).sum().backward()
        results.append([y.numpy()] + [p.grad.numpy().copy() for p in (enc.char_embed.weight, *weights, *biases)])
        enc.clear_gradients()
    with paddle.no_grad():
        at_zero = kernels.char_cnn(ids, spans, enc.char_embed.weight, weights, biases, False, enc.max_chars, enc.pad_id)
    assert np.all(at_zero.numpy()[4] == 0) and 0.05 < (results[0][0] > 0).mean() < 0.95
    assert np.abs(results[0][-1]).max() < 100  # token 4's gradient of 1e3 stopped at relu
    for fused, paddles in zip(*results):
        np.testing.assert_array_equal(fused, paddles)


def test_char_cnn_kernel_matches_the_full_convolution_over_several_blocks_of_columns():
    """Widths with more filters than the kernel's block of columns (64), one not a multiple of it:
    the products kept a block of columns at a time must be found again by the backward."""
    require_kernels()
    results = []
    g = np.random.default_rng(2).normal(size=(300, 100 + 70)).astype(np.float32)
    for forward in (lambda e, ids: e.cnn(ids, EagerOps(kernels.CPU_KERNELS)),
                    lambda e, ids: full_window_cnn(e, paddle.to_tensor(ids))):
        enc = make_encoder(seed=4, cnn_filters=[[2, 100], [3, 70]])
        y = forward(enc, odd_tokens(enc.pad_id, 300))
        (y * paddle.to_tensor(g)).sum().backward()
        results.append([y.numpy()] + [p.grad.numpy() for p in enc.parameters() if p.grad is not None])
    assert len(results[0]) == len(results[1]) == 1 + 1 + 2 + 2
    for fused, full in zip(*results):
        np.testing.assert_allclose(fused, full, atol=1e-4 * np.abs(full).max(), rtol=0)


def test_char_cnn_kernel_gives_the_same_bits_on_every_call(fixture_dir):
    """The threads take the blocks of tokens in a fixed order: with a dynamic schedule the fixture's
    char CNN gave other maxima on its vocabulary in 3 to 227 of 300 calls (more under load)."""
    require_kernels()
    enc = fixture_embedder(fixture_dir).bilm.char_encoder
    with open(os.path.join(fixture_dir, 'vocab_test.txt'), encoding='utf-8') as f:
        ids = CharMapper().tokens([line.rstrip('\n') for line in f if line.rstrip('\n')])
    with paddle.no_grad():
        first = enc.cnn(ids, EagerOps(kernels.CPU_KERNELS)).numpy()
        for _ in range(100):
            np.testing.assert_array_equal(enc.cnn(ids, EagerOps(kernels.CPU_KERNELS)).numpy(), first)


def test_char_cnn_kernel_names_a_char_id_outside_the_embedding():
    require_kernels()
    enc = make_encoder()
    ids = odd_tokens(enc.pad_id, 3)
    ids[1, 2] = 300
    with pytest.raises(Exception, match=r'char_cnn: char id 300 is not in \[0, 262\)'):
        with paddle.no_grad():
            enc.cnn(ids, EagerOps(kernels.CPU_KERNELS))


def test_with_the_kernel_distinct_tokens_run_in_even_chunks_without_the_kernel_by_length(monkeypatch):
    """The kernel runs each token's own windows, so a call's tokens need no sorting into chunks of
    similar lengths: one call for a training step's tokens, even pieces of at most `chunk` else.
    Paddle's ops pad a chunk's windows to its longest token: length_chunks' split."""
    require_kernels()
    calls = []
    fused = kernels.char_cnn
    monkeypatch.setattr(kernels, 'char_cnn', lambda ids, *args: calls.append(len(ids)) or fused(ids, *args))
    bilm = BiLM(tiny_config())
    words = [['a'] + ['w' * n for n in range(1, 30)]]
    ids, _ = CharMapper().batch(words)
    bilm.token_embedding(paddle.to_tensor(ids), chunk=64).sum().backward()
    assert calls == [32]  # 30 words, <S> and </S>
    with paddle.no_grad():
        bilm.token_embedding(paddle.to_tensor(ids), chunk=10)
    assert calls[1:] == [8, 8, 8, 8]  # the fewest pieces of at most 10
    ops = EagerOps(kernels.PADDLE_OPS, chunk=10)
    assert ops._chunks(np.arange(32)) == length_chunks(np.arange(32), 10)


@pytest.mark.parametrize('keys', ['hashed', 'every hash the same'])
def test_distinct_rows_give_np_uniques_rows_order_and_inverse(monkeypatch, keys):
    """distinct_rows tells rows apart by a hash, then sorts the distinct ones as np.unique sorts their
    bytes: the same first occurrences, order and inverse (the tokens' order, so every sum over them,
    is unchanged), also when rows differ only past the first columns, in ids above a byte, and when
    every hash collides (zero keys: the byte sort's own result)."""
    from paddle_elmo.model import packing
    if keys != 'hashed':
        monkeypatch.setattr(packing, '_ROW_KEYS', np.zeros(64, dtype=np.uint64))
    rng = np.random.default_rng(3)
    rows = rng.integers(0, 300, size=(40, 50))
    rows[:, 30:] = 261  # a tail of PAD, as tokens have
    rows[20:30] = rows[:10]  # repeated tokens
    rows[30, 49], rows[31] = 7, rows[1] + 256  # the same but the last column; ids above a byte
    ids = np.ascontiguousarray(rows[rng.permutation(40)], dtype=np.int64)
    _, first, inverse = np.unique(ids.view(np.dtype((np.void, 400))).ravel(), return_index=True, return_inverse=True)
    got_first, got_inverse = packing.distinct_rows(ids)
    assert np.array_equal(got_first, first) and np.array_equal(got_inverse, inverse.reshape(-1))
    assert len(first) == 30 and np.array_equal(ids[got_first][got_inverse], ids)


@pytest.mark.parametrize('columns', [40, 600], ids=['one thread', 'threads'])  # 600: above kParallelMin
def test_take_rows_gives_the_gathers_bits_with_repeated_rows(columns):
    """The softmax's row copies (kernels.take_rows) against paddle.gather: the same rows, and the
    same gradient bits when a row is taken several times (a step's repeated targets)."""
    require_kernels()
    rng = np.random.default_rng(0)
    x_np = rng.normal(size=(9, columns)).astype(np.float32)  # more columns than one thread's block
    index = paddle.to_tensor(np.array([3, 1, 3, 8, 0, 3, 3] * 6, dtype=np.int64))
    g = paddle.to_tensor((rng.normal(size=(42, columns)) * 10.0 ** rng.integers(-3, 4, size=(42, columns)))
                         .astype(np.float32))
    results = []
    for take in (paddle.gather, lambda x, index: kernels.take_rows(x, index, kernels.CPU_KERNELS)):
        x = paddle.to_tensor(x_np, stop_gradient=False)
        y = take(x, index)
        (y * g).sum().backward()
        results.append((y.numpy(), x.grad.numpy()))
    for gathered, taken in zip(*results):
        np.testing.assert_array_equal(taken, gathered)
    with paddle.no_grad():
        taken = kernels.take_rows(paddle.to_tensor(x_np), [8, 2], kernels.CPU_KERNELS)
        np.testing.assert_array_equal(taken.numpy(), x_np[[8, 2]])
    with pytest.raises(Exception, match=r'index 9 at position 0 is not in \[0, 9\)'):
        kernels.take_rows(paddle.to_tensor(x_np), [9], kernels.CPU_KERNELS)


def make_encoder(seed=0, **overrides):
    paddle.seed(seed)
    return CharEncoder(tiny_config(**overrides))


WORDS = ['a', 'of', 'the', 'movie', 'extraordinarily', 'x' * 60, 'é', '中文', '<S>', '</S>']


@pytest.mark.parametrize('words', [WORDS, ['a', 'an', 'the'], ['y' * 48]], ids=['mixed', 'short', 'longest'])
def test_char_encoder_skipping_pad_windows_matches_full_convolution(words, implementation):
    enc, ops = make_encoder(cnn_filters=[[1, 4], [2, 8], [3, 8], [7, 6]]), EagerOps(implementation)
    ids = paddle.to_tensor(CharMapper().tokens(words))
    with paddle.no_grad():
        np.testing.assert_allclose(enc(ids, ops).numpy(), full_window_char_encoder(enc, ids, ops).numpy(), atol=TOL,
                                   rtol=0)


def test_char_encoder_gradients_match_full_convolution(implementation):
    ids = paddle.to_tensor(CharMapper().tokens(['a', 'movie', 'the', 'zz']))
    grads, ops = [], EagerOps(implementation)
    for forward in (lambda e: e(ids, ops), lambda e: full_window_char_encoder(e, ids, ops)):
        enc = make_encoder(seed=3, cnn_filters=[[1, 4], [2, 8], [5, 6]])
        (forward(enc) ** 2).sum().backward()
        grads.append({n: p.grad.numpy() for n, p in enc.named_parameters() if p.grad is not None})
    assert grads[0].keys() == grads[1].keys() and any('char_embed' in n for n in grads[0])
    for name in grads[0]:
        np.testing.assert_allclose(grads[0][name], grads[1][name], atol=1e-4, rtol=1e-4, err_msg=name)


def test_length_chunks_cover_the_tokens_in_order_and_separate_rare_long_words():
    def check(used, max_size):
        chunks = length_chunks(used, max_size)
        assert chunks[0][0] == 0 and chunks[-1][1] == len(used)
        assert all(a < b and b - a <= max_size for a, b in chunks)
        assert all(b == a2 for (_, b), (a2, _) in zip(chunks, chunks[1:]))
        return chunks
    assert check([7] * 300, 1024) == [(0, 300)]
    assert check([5] * 400 + [40] * 10, 1024) == [(0, 400), (400, 410)]  # 10 long words do not widen 400
    assert check([5, 6, 7, 8], 1024) == [(0, 4)]  # a few windows more beat another chunk's overhead
    assert len(check([5] * 2500, 1024)) == 3
    assert length_chunks([], 8) == []


def test_token_embedding_sorts_chunks_and_restores_positions_with_zero_padding():
    paddle.seed(1)
    bilm = BiLM(tiny_config())
    mapper = CharMapper()
    sentences = [['extraordinarily', 'a', 'long', 'sentence', 'here'], ['b'], ['the', 'x' * 60]]
    ids, lengths = mapper.batch(sentences)
    with paddle.no_grad():
        got = bilm.token_embedding(paddle.to_tensor(ids), chunk=3).numpy()  # several chunks
        for row, sentence in enumerate(sentences):
            tokens = ['<S>', *sentence, '</S>']
            alone = full_window_char_encoder(bilm.char_encoder, paddle.to_tensor(mapper.tokens(tokens))).numpy()
            np.testing.assert_allclose(got[row, :len(tokens)], alone, atol=TOL, rtol=0)
            assert np.all(got[row, len(tokens):] == 0)
        empty = bilm.token_embedding(paddle.zeros([2, 3, 50], dtype='int64')).numpy()
    assert empty.shape == (2, 3, bilm.projection_dim) and np.all(empty == 0)


# ---- LSTM -----------------------------------------------------------------------------------

def test_cpu_kernels_build_where_there_is_a_compiler():
    """A broken build would silently fall back to the slow Paddle ops: fail loudly instead (no
    compiler: skipped, or failed under CI=true)."""
    require_kernels()


def kernel_and_paddle_ops(fn, arrays):
    """Run fn(*tensors, kernels.CPU_KERNELS), then fn(*tensors, kernels.PADDLE_OPS), and backpropagate
    the same random linear loss on its outputs -> two lists [outputs..., input gradients...] (numpy)."""
    require_kernels()
    results = []
    for implementation in (kernels.CPU_KERNELS, kernels.PADDLE_OPS):
        tensors = [paddle.to_tensor(np.asarray(a, dtype=np.float32), stop_gradient=False) for a in arrays]
        outs = fn(*tensors, implementation)
        outs = outs if isinstance(outs, tuple) else (outs,)
        rng = np.random.RandomState(9)
        loss = sum((o * paddle.to_tensor(rng.normal(size=o.shape).astype(np.float32))).sum() for o in outs)
        loss.backward()
        results.append([o.numpy() for o in outs] + [t.grad.numpy() for t in tensors])
    return results


def assert_kernel_matches(results, names):
    for name, got, ref in zip(names, *results):
        np.testing.assert_allclose(got, ref, atol=1e-5, rtol=1e-5, err_msg=name)


def test_recurrence_kernel_matches_the_loop_in_values_and_gradients():
    """The training kernel (layer_recurrence: x and the whole W, the input product made inside, W's
    blocks' gradients joined) against W split, x @ W_input and the loop: rows that end early, rows
    that never run (B > batch_sizes[0]), clipping, a loss on c."""
    rng = np.random.RandomState(3)
    I, D, P, B, sizes = 3, 6, 4, 5, [4, 4, 3, 1]
    arrays = [rng.normal(0, 2, (sum(sizes), I)), rng.normal(0, 1, 4 * D), rng.normal(0, 0.5, (I + P, 4 * D)),
              rng.normal(0, 0.5, (D, P)), rng.normal(0, 1, (B, P)), rng.normal(0, 2, (B, D))]

    def run(x, bias, w, w_proj, h0, c0, implementation):
        w_input, w_hidden = paddle.split(w, [I, P])
        with paddle.no_grad():  # the inference path keeps no activations, and gives the same values
            h_inf, c_inf = kernels.recurrence(paddle.matmul(x, w_input), bias, sizes, h0, c0, w_hidden, w_proj,
                                              1.5, 0.4, implementation)
        if implementation.cpu:
            h, c, _ = kernels.layer_recurrence(x, w, bias, sizes, h0, c0, w_proj, cell_clip=1.5, proj_clip=0.4)
        else:
            h, c = kernels.recurrence(paddle.matmul(x, w_input), bias, sizes, h0, c0, w_hidden, w_proj,
                                      cell_clip=1.5, proj_clip=0.4, kernels=implementation)
        # the training kernel's hidden product is added by MKL into the gates, which may round a
        # one-row step's last bit otherwise than the product then the add
        np.testing.assert_allclose(h_inf.numpy(), h.numpy(), rtol=1e-6, atol=0)
        np.testing.assert_allclose(c_inf.numpy(), c.numpy(), rtol=1e-6, atol=0)
        return h, c

    results = kernel_and_paddle_ops(run, arrays)
    assert np.abs(results[0][0]).max() == np.float32(0.4) and np.abs(results[0][1]).max() == np.float32(1.5)
    assert_kernel_matches(results, ['h', 'c', 'd x', 'd bias', 'd w', 'd w_proj', 'd h0', 'd c0'])
    assert np.all(results[0][6][sizes[0]:] == 0) and np.all(results[0][7][sizes[0]:] == 0)


def test_recurrence_kernel_gradients_when_no_loss_reads_the_cells():
    """A loss on h alone (the language model's: its cells feed only the detached final states): the
    kernel's backward gets no cell gradient (None, not Paddle's zeros) and still gives the loop's
    gradients, with rows that end early, rows that never run and both clips active."""
    rng = np.random.RandomState(4)
    I, D, P, B, sizes = 3, 6, 4, 5, [4, 4, 3, 1]
    arrays = [rng.normal(0, 2, (sum(sizes), I)), rng.normal(0, 1, 4 * D), rng.normal(0, 0.5, (I + P, 4 * D)),
              rng.normal(0, 0.5, (D, P)), rng.normal(0, 1, (B, P)), rng.normal(0, 2, (B, D))]
    cell_grads = []
    backward = kernels._KernelRecurrence.backward

    def recorded(ctx, grad_h, grad_c, *final_grads):
        cell_grads.append(grad_c)
        return backward(ctx, grad_h, grad_c, *final_grads)

    def run(x, bias, w, w_proj, h0, c0, implementation):
        if implementation.cpu:
            h, c, _ = kernels.layer_recurrence(x, w, bias, sizes, h0, c0, w_proj, cell_clip=1.5, proj_clip=0.4)
        else:
            w_input, w_hidden = paddle.split(w, [I, P])
            h, c = kernels.recurrence(paddle.matmul(x, w_input), bias, sizes, h0, c0, w_hidden, w_proj,
                                      cell_clip=1.5, proj_clip=0.4, kernels=implementation)
        return h

    kernels._KernelRecurrence.backward = staticmethod(recorded)
    try:
        results = kernel_and_paddle_ops(run, arrays)
    finally:
        kernels._KernelRecurrence.backward = backward
    assert cell_grads == [None]
    assert_kernel_matches(results, ['h', 'd x', 'd bias', 'd w', 'd w_proj', 'd h0', 'd c0'])
    assert np.abs(results[0][6][:sizes[0]]).max() > 0  # the cells carried a gradient back to c0


def test_recurrence_kernel_final_states_match_last_states_in_values_and_gradients():
    """The training kernel's final states (copied out by the kernel) against packing.last_states on the
    loop's outputs, and the gradients of a loss on them and on h: rows that end at different steps,
    rows that never run (B > batch_sizes[0]: their h0 and c0 carried through), both clips active."""
    from paddle_elmo.model.packing import last_states
    rng = np.random.RandomState(5)
    I, D, P, B, sizes = 3, 6, 4, 5, [4, 4, 3, 1]
    arrays = [rng.normal(0, 2, (sum(sizes), I)), rng.normal(0, 1, 4 * D), rng.normal(0, 0.5, (I + P, 4 * D)),
              rng.normal(0, 0.5, (D, P)), rng.normal(0, 1, (B, P)), rng.normal(0, 2, (B, D))]

    def run(x, bias, w, w_proj, h0, c0, implementation):
        if implementation.cpu:
            h, c, (h_last, c_last) = kernels.layer_recurrence(x, w, bias, sizes, h0, c0, w_proj, 1.5, 0.4)
        else:
            w_input, w_hidden = paddle.split(w, [I, P])
            h, c = kernels.recurrence(paddle.matmul(x, w_input), bias, sizes, h0, c0, w_hidden, w_proj,
                                      cell_clip=1.5, proj_clip=0.4, kernels=implementation)
            h_last, c_last = last_states(h, c, h0, c0, sizes)
        return h, h_last, c_last

    results = kernel_and_paddle_ops(run, arrays)
    assert_kernel_matches(results, ['h', 'h_last', 'c_last', 'd x', 'd bias', 'd w', 'd w_proj', 'd h0', 'd c0'])
    h0, c0 = arrays[4].astype(np.float32), arrays[5].astype(np.float32)
    np.testing.assert_array_equal(results[0][1][sizes[0]:], h0[sizes[0]:])
    np.testing.assert_array_equal(results[0][2][sizes[0]:], c0[sizes[0]:])


@pytest.mark.parametrize('final_loss', [False, True], ids=['loss-on-outputs', 'loss-on-final-states-too'])
@pytest.mark.parametrize('residual', [False, True], ids=['plain', 'residual'])
def test_training_kernel_drops_its_input_and_adds_the_residual_as_the_ops_did(residual, final_loss):
    """layer_recurrence with the input's dropout (a later group of steps of the dropped tensor: its
    first element's index carried in) and the residual inside the kernel: the same bits, values and
    gradients, as kernels.dropout on the whole input, the group's rows split off, the kernel without
    either and Paddle's add of the dropped input; rows that end early and that never run, both
    clips active, a loss on the outputs alone (the language model's) or on the final states too."""
    rng = np.random.RandomState(6)
    I = P = 4
    D, B, sizes, before = 6, 5, [4, 4, 3, 1], 3  # `before` rows of the dropped tensor precede the group
    arrays = [rng.normal(0, 2, (before + sum(sizes), I)), rng.normal(0, 1, 4 * D),
              rng.normal(0, 0.5, (I + P, 4 * D)), rng.normal(0, 0.5, (D, P)), rng.normal(0, 1, (B, P)),
              rng.normal(0, 2, (B, D))]
    seed, p = 123456789012, 0.3
    results = []
    for fused in (True, False):
        x_all, bias, w, w_proj, h0, c0 = [paddle.to_tensor(a.astype(np.float32), stop_gradient=False)
                                          for a in arrays]
        x = paddle.split(x_all, [before, sum(sizes)])[1]
        if fused:
            out, c, (h_last, c_last) = kernels.layer_recurrence(x, w, bias, sizes, h0, c0, w_proj, 1.5, 0.4,
                                                                (seed, p, before * I), residual)
        else:
            dropped = paddle.split(kernels.dropout(x_all, p, kernels.CPU_KERNELS, seed), [before, sum(sizes)])[1]
            out, c, (h_last, c_last) = kernels.layer_recurrence(dropped, w, bias, sizes, h0, c0, w_proj, 1.5, 0.4)
            out = out + dropped if residual else out  # bilm-tf's dropout wraps the residual cell
        loss_rng = np.random.RandomState(9)
        loss = sum((t * paddle.to_tensor(loss_rng.normal(size=t.shape).astype(np.float32))).sum()
                   for t in ((out, h_last, c_last) if final_loss else (out,)))
        loss.backward()
        results.append([out.numpy(), h_last.numpy(), c_last.numpy()] +
                       [t.grad.numpy() for t in (x_all, bias, w, w_proj, h0, c0)])
    names = ['out', 'h_last', 'c_last', 'd x', 'd bias', 'd w', 'd w_proj', 'd h0', 'd c0']
    for name, got, want in zip(names, *results):
        np.testing.assert_array_equal(got, want, err_msg=name)
    d_x = results[0][3]
    assert np.all(d_x[:before] == 0)  # rows before the group get no gradient
    assert residual or 0 < (d_x[before:] == 0).mean() < 0.8  # some elements dropped, not all


def test_training_kernel_adds_the_forget_bias_as_the_layers_bias_did():
    """layer_recurrence given B and the forget bias (added by the kernel) against B + forget bias in
    Paddle's add before the call (LstmLayer.bias()): the same bits, values and gradients, B's too,
    with a -0.0 in B (the sum's +0.0 where the offset is 0)."""
    rng = np.random.RandomState(7)
    I, D, P, B, sizes = 3, 6, 4, 5, [4, 4, 3, 1]
    b = rng.normal(0, 1, 4 * D).astype(np.float32)
    b[0] = -0.0
    forget = np.zeros(4 * D, dtype=np.float32)
    forget[2 * D:3 * D] = 1.0
    arrays = [rng.normal(0, 2, (sum(sizes), I)), b, rng.normal(0, 0.5, (I + P, 4 * D)),
              rng.normal(0, 0.5, (D, P)), rng.normal(0, 1, (B, P)), rng.normal(0, 2, (B, D))]
    results = []
    for in_kernel in (True, False):
        x, bias, w, w_proj, h0, c0 = [paddle.to_tensor(np.asarray(a, dtype=np.float32), stop_gradient=False)
                                      for a in arrays]
        forget_t = paddle.to_tensor(forget)
        if in_kernel:
            h, c, (h_last, c_last) = kernels.layer_recurrence(x, w, bias, sizes, h0, c0, w_proj, 1.5, 0.4,
                                                              forget_bias=forget_t)
        else:
            h, c, (h_last, c_last) = kernels.layer_recurrence(x, w, bias + forget_t, sizes, h0, c0, w_proj, 1.5, 0.4)
        loss_rng = np.random.RandomState(9)
        (h * paddle.to_tensor(loss_rng.normal(size=h.shape).astype(np.float32))).sum().backward()
        results.append([h.numpy(), c.numpy()] + [t.grad.numpy() for t in (x, bias, w, w_proj, h0, c0)])
    for name, got, want in zip(['h', 'c', 'd x', 'd bias', 'd w', 'd w_proj', 'd h0', 'd c0'], *results):
        np.testing.assert_array_equal(got, want, err_msg=name)


def test_recurrence_with_gradients_on_given_products_runs_paddle_ops():
    """kernels.recurrence on given gate products with gradients tracked runs the loop (the kernel's
    training form takes the layer's inputs): the kernels' setting gives the same numbers as Paddle's."""
    rng = np.random.RandomState(4)
    D, P, B, sizes = 6, 4, 3, [3, 2]
    arrays = [rng.normal(0, 2, (sum(sizes), 4 * D)), rng.normal(0, 1, 4 * D), rng.normal(0, 0.5, (P, 4 * D)),
              rng.normal(0, 0.5, (D, P)), rng.normal(0, 1, (B, P)), rng.normal(0, 2, (B, D))]

    def run(gates, bias, w_hidden, w_proj, h0, c0, implementation):
        return kernels.recurrence(gates, bias, sizes, h0, c0, w_hidden, w_proj, 1.5, 0.4, implementation)

    got, ref = kernel_and_paddle_ops(run, arrays)
    for a, b in zip(got, ref):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize('threads', [1, 2])
def test_inference_kernel_matches_the_training_kernel_over_blocks_and_rows_ending_at_every_step(threads):
    """streamed_recurrence (x and W_input, blocks of steps, the hidden product summed into the block's
    gates, h_last written where a row ends) against recurrence on x @ W_input: rows that end at
    different steps, in blocks of one to three steps, rows that never run (B > batch_sizes[0]), and
    enough cells (n * D >= kernels.cc's kParallelMin) that the gate pass is split among the threads."""
    from paddle_elmo.model.packing import last_states
    from paddle_elmo import runtime
    require_kernels()
    rng = np.random.RandomState(11)
    I, D, P, B = 24, 2048, 16, 10
    sizes, block_ends = [8, 8, 7, 5, 5, 3, 2, 1], [1, 3, 6, 8]
    x, w_input = rng.normal(0, 1, (sum(sizes), I)), rng.normal(0, 0.2, (I, 4 * D))
    bias, w_hidden, w_proj = rng.normal(0, 1, 4 * D), rng.normal(0, 0.2, (P, 4 * D)), rng.normal(0, 0.05, (D, P))
    h0, c0 = rng.normal(0, 1, (B, P)), rng.normal(0, 1, (B, D))
    x, w_input, bias, w_hidden, w_proj, h0, c0 = (paddle.to_tensor(a.astype(np.float32))
                                                  for a in (x, w_input, bias, w_hidden, w_proj, h0, c0))
    runtime.configure(threads)
    try:
        with paddle.no_grad():
            h, c = kernels.recurrence(paddle.matmul(x, w_input), bias, sizes, h0, c0, w_hidden, w_proj, 0.8, 0.5,
                                      kernels.CPU_KERNELS)
            h_last, c_last = last_states(h, c, h0, c0, sizes)
            got, (got_h_last, got_c_last) = kernels.streamed_recurrence(
                x, w_input, bias, sizes, block_ends, h0, c0, w_hidden, w_proj, 0.8, 0.5, kernels.CPU_KERNELS)
    finally:
        runtime.configure()
    assert np.abs(h.numpy()).max() == np.float32(0.5) and np.abs(c.numpy()).max() == np.float32(0.8)
    for name, value, reference in (('h', got, h), ('h_last', got_h_last, h_last), ('c_last', got_c_last, c_last)):
        np.testing.assert_allclose(value.numpy(), reference.numpy(), atol=TOL, rtol=0, err_msg=name)
    np.testing.assert_array_equal(got_h_last.numpy()[sizes[0]:], h0.numpy()[sizes[0]:])
    np.testing.assert_array_equal(got_c_last.numpy()[sizes[0]:], c0.numpy()[sizes[0]:])


def test_sampled_softmax_losses_kernel_matches_cross_entropy_with_accidental_hits():
    rng = np.random.RandomState(4)
    n, C = 7, 9
    true_np, cand_np, bias_np = rng.normal(0, 3, n), rng.normal(0, 3, (n, C)), rng.normal(0, 1, C)
    labels = np.array([0, 3, 0, 9, 1, 0, 0], dtype=np.int64)  # rows 1, 3, 4: the target is a candidate
    hits = labels > 0  # a hit's logit is the true logit
    cand_np[hits, labels[hits] - 1] = true_np[hits] - bias_np[labels[hits] - 1]

    def losses(true_logits, cand_logits, cand_bias, implementation):
        return kernels.sampled_softmax_losses(true_logits, cand_logits, cand_bias, labels, implementation)

    results = kernel_and_paddle_ops(losses, [true_np, cand_np, bias_np])
    assert_kernel_matches(results, ['losses', 'd true', 'd candidates', 'd bias'])
    logits = np.concatenate([true_np[:, None], cand_np + bias_np], axis=1).astype(np.float32).astype(np.float64)
    logits[hits, 0] = -np.inf
    top = logits.max(1)
    expected = np.log(np.exp(logits - top[:, None]).sum(1)) + top - logits[np.arange(n), labels]
    np.testing.assert_allclose(results[0][0], expected, atol=1e-5, rtol=1e-5)
    assert np.all(results[0][1][hits] == 0)  # a left-out true column gets no gradient


def step_rows(rng, R=40, P=6, n=30, C=12):
    """A step's softmax inputs: candidates (distinct rows), targets with repeats, some of them
    candidates (accidental hits: labels > 0), a row both a target and a candidate."""
    cand = rng.choice(R, C, replace=False)
    true_pos = rng.randint(0, R, n)
    true_pos[:4], true_pos[4:7] = cand[:4], true_pos[7]  # four hits; one row the target of four
    column = np.zeros(R, dtype=np.int64)
    column[cand] = np.arange(1, C + 1)
    arrays = [rng.normal(0, 1, (n, P)), rng.normal(0, 1, (R, P)), rng.normal(0, 1, (R, 1))]
    return arrays, (true_pos, cand, rng.normal(0, 1, n), rng.normal(0, 1, C), column[true_pos])


def test_sampled_softmax_kernels_match_gathering_the_rows_in_values_and_gradients():
    """The three kernels (true rows read in place, probabilities turned into the logits' gradient
    in place) against Paddle's ops on gathered rows: losses, d h, d W rows, d b rows."""
    arrays, consts = step_rows(np.random.RandomState(6))
    results = kernel_and_paddle_ops(lambda h, w, b, implementation: kernels.sampled_softmax(
        h, w, b, *consts, implementation), arrays)
    assert_kernel_matches(results, ['losses', 'd h', 'd w', 'd b'])
    untouched = np.setdiff1d(np.arange(40), np.concatenate(consts[:2]))
    assert len(untouched) and np.all(results[0][2][untouched] == 0) and np.all(results[0][3][untouched] == 0)


def test_sampled_softmax_kernels_match_over_blocks_of_rows_and_wide_logits():
    """The forward makes the logits and their exps (its own base-2 exp) block by block (16 rows) on
    the threads: 70 rows (four blocks and a tail), 300 candidates (enough to use the threads), against
    Paddle's ops; then logits spread over hundreds (exps that underflow in float32, rows whose largest
    logit is the true one or a candidate), whose losses Paddle's cross_entropy clips at 64, against
    float64."""
    arrays, consts = step_rows(np.random.RandomState(8), R=400, P=8, n=70, C=300)
    results = kernel_and_paddle_ops(lambda h, w, b, implementation: kernels.sampled_softmax(
        h, w, b, *consts, implementation), [arrays[0] * 3, *arrays[1:]])
    assert_kernel_matches(results, ['losses', 'd h', 'd w', 'd b'])
    h, w, b = [np.asarray(a, dtype=np.float32) for a in (arrays[0] * 16, *arrays[1:])]
    h[60:] = 16 * w[consts[0][60:]]  # rows whose largest logit is their true one
    loss = kernels.sampled_softmax(*[paddle.to_tensor(a, stop_gradient=False) for a in (h, w, b)], *consts,
                                   kernels.CPU_KERNELS)
    h, w, b = [a.astype(np.float64) for a in (h, w, b)]
    true_pos, cand, log_q_true, log_q_cand, labels = consts
    log_q_true, log_q_cand = [np.float32(q).astype(np.float64) for q in (log_q_true, log_q_cand)]
    true_logits = (h * w[true_pos]).sum(1) + b[true_pos, 0] - log_q_true
    logits = np.concatenate([true_logits[:, None], h @ w[cand].T + b[cand, 0] - log_q_cand], axis=1)
    logits[labels > 0, 0] = -np.inf
    top = logits.max(1)
    assert np.min(top - logits[:, 1:].min(1)) > 104 and len(set(logits.argmax(1) == 0)) == 2
    expected = np.log(np.exp(logits - top[:, None]).sum(1)) + top - logits[np.arange(len(labels)), labels]
    # a loss is a difference of log-sum-exp and logit, each up to ~250 (float32's ulp there: 1.5e-5)
    np.testing.assert_allclose(loss.numpy(), expected, rtol=2e-6, atol=1.5e-5)


def test_sampled_softmax_reading_the_tables_in_place_equals_the_copied_rows_whatever_the_values_hold():
    """With tables=(W, b, rows) the kernels read each step row from its table row rows[position] and
    leave w and b (uninitialised, as TableRows(copy=False) makes them: NaN here) unread: the same bits
    in losses and every gradient as on the rows copied out of the tables; a row map off by one
    (the neighbouring table rows) changes them."""
    require_kernels()
    rng = np.random.RandomState(11)
    (h, w, b), consts = step_rows(rng)
    V = 3 * w.shape[0]
    rows = np.sort(rng.choice(V, w.shape[0], replace=False))  # the step's rows among the table's
    table_w, table_b = rng.normal(0, 1, (V, w.shape[1])), rng.normal(0, 1, (V, 1))
    table_w[rows], table_b[rows] = w, b

    def run(values, tables):
        h_t = paddle.to_tensor(np.asarray(h, dtype=np.float32), stop_gradient=False)
        w_t, b_t = [paddle.to_tensor(np.asarray(a, dtype=np.float32), stop_gradient=False) for a in values]
        loss = kernels.sampled_softmax(h_t, w_t, b_t, *consts, kernels.CPU_KERNELS, tables)
        (loss * paddle.to_tensor(np.linspace(-1, 2, len(h), dtype=np.float32))).sum().backward()
        return [loss.numpy(), h_t.grad.numpy(), w_t.grad.numpy(), b_t.grad.numpy()]

    tables = [paddle.to_tensor(np.asarray(a, dtype=np.float32)) for a in (table_w, table_b)]
    copied = run((w, b), None)
    in_place = run((np.full(w.shape, np.nan), np.full(b.shape, np.nan)), (*tables, rows))
    for name, got, want in zip(['losses', 'd h', 'd w', 'd b'], in_place, copied):
        np.testing.assert_array_equal(got, want, err_msg=name)
    shifted = run((w, b), (*tables, np.minimum(rows + 1, V - 1)))
    assert not np.array_equal(shifted[0], copied[0])


def test_sampled_softmax_rows_backward_writes_every_element_of_its_uninitialised_gradients():
    """The backward hands the rows kernel grad_w and grad_b uninitialised (paddle.empty): the rows no
    target or candidate uses must come out zero whatever the buffers held, the others as from zeros."""
    require_kernels()
    rng = np.random.RandomState(9)
    (h, w, _), (true_pos, cand, _, _, labels) = step_rows(rng)
    n, P, C = len(true_pos), h.shape[1], len(cand)
    index = paddle.to_tensor(np.concatenate([true_pos, cand, labels, np.arange(w.shape[0])]).astype(np.int64))
    grad_true, grad_cand_bias = [paddle.to_tensor(rng.normal(0, 1, k).astype(np.float32)) for k in (n, C)]
    grad_cand_w = paddle.to_tensor(rng.normal(0, 1, (C, P)).astype(np.float32))
    h_t, w_t = [paddle.to_tensor(np.asarray(a, dtype=np.float32)) for a in (h, w)]
    outputs = []
    for fill in (0.0, np.nan):
        grad_h = paddle.zeros([n, P])
        grad_w, grad_b = paddle.full(w_t.shape, fill), paddle.full([w_t.shape[0], 1], fill)
        kernels.kernel().elmo_sampled_softmax_rows_backward(grad_h, grad_cand_w, grad_true, grad_cand_bias, h_t, w_t,
                                                            index, grad_w, grad_b)
        outputs.append((grad_w.numpy(), grad_b.numpy()))
    untouched = np.setdiff1d(np.arange(w.shape[0]), np.concatenate([true_pos, cand]))
    assert len(untouched) and np.all(outputs[1][0][untouched] == 0) and np.all(outputs[1][1][untouched] == 0)
    for from_zeros, from_nan in zip(*outputs):
        np.testing.assert_array_equal(from_nan, from_zeros)


def test_sampled_softmax_kernel_without_gradients_gives_the_same_losses():
    require_kernels()
    arrays, consts = step_rows(np.random.RandomState(7))
    h, w, b = [paddle.to_tensor(np.asarray(a, dtype=np.float32), stop_gradient=False) for a in arrays]
    loss = kernels.sampled_softmax(h, w, b, *consts, kernels.CPU_KERNELS).sum()
    with paddle.no_grad():
        plain = kernels.sampled_softmax(h, w, b, *consts, kernels.CPU_KERNELS).sum()
    assert float(plain) == pytest.approx(float(loss), rel=1e-6)


@pytest.mark.parametrize('tokens, dim', [(6, 10), (300, 70)], ids=['one thread', 'threads'])  # 300 x 70 > kParallelMin
def test_highway_gate_kernel_matches_paddle_ops(tokens, dim):
    """The gate's values and gradients against Paddle's ops; its biases' gradients summed in the pass
    that makes d carry and d transform, each thread a share of the columns (70: not a multiple of
    the 16-column groups) over the rows in order: the bits of a row-by-row float32 sum."""
    rng = np.random.RandomState(5)
    arrays = [rng.normal(0, 2, (tokens, dim)), rng.normal(0, 1, dim), rng.normal(0, 2, (tokens, dim)),
              rng.normal(0, 1, dim), rng.normal(0, 1, (tokens, dim))]
    results = kernel_and_paddle_ops(kernels.highway_gate, arrays)
    assert_kernel_matches(results, ['y', 'd carry', 'd carry bias', 'd transform', 'd transform bias', 'd x'])
    _, d_carry, d_carry_bias, d_transform, d_transform_bias, _ = results[0]
    for rows, summed in ((d_carry, d_carry_bias), (d_transform, d_transform_bias)):
        in_order = np.zeros(dim, dtype=np.float32)
        for row in rows:
            in_order += row
        np.testing.assert_array_equal(summed, in_order)


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def reference_stack(stack, x, lengths, states):
    """Per-row float64 LSTM in the bilm-tf layout (gates i, j, f, o; forget bias 1)."""
    clip = lambda v, k: np.clip(v, -k, k) if k else v
    layers = [(l.W.numpy().astype(np.float64), (l.B.numpy() + l.forget_bias.numpy()).astype(np.float64),
               l.W_P.numpy().astype(np.float64)) for l in stack.layers]
    batch, time, _ = x.shape
    outputs = [np.zeros((batch, time, stack.projection_dim)) for _ in layers]
    finals = [[None] * batch for _ in layers]
    for r in range(batch):
        inputs = x[r].astype(np.float64)
        for k, (W, B, W_P) in enumerate(layers):
            h, c = states[k][0][r].astype(np.float64), states[k][1][r].astype(np.float64)
            for t in range(lengths[r]):
                i, j, f, o = np.split(np.concatenate([inputs[t], h]) @ W + B, 4)
                c = clip(sigmoid(i) * np.tanh(j) + sigmoid(f) * c, stack.cell_clip)
                h = clip((sigmoid(o) * np.tanh(c)) @ W_P, stack.proj_clip)
                outputs[k][r, t] = h + (inputs[t] if stack.use_skip and k > 0 else 0)
            finals[k][r] = (h, c)
            inputs = outputs[k][r]
    return outputs, [(np.stack([f[0] for f in fs]), np.stack([f[1] for f in fs])) for fs in finals]


def random_case(stack, lengths, time, seed=0):
    rng = np.random.RandomState(seed)
    batch = len(lengths)
    x = rng.uniform(-1, 1, (batch, time, stack.projection_dim)).astype(np.float32)
    for r, n in enumerate(lengths):
        x[r, n:] = 0
    states = [(rng.uniform(-1, 1, (batch, stack.projection_dim)).astype(np.float32),
               rng.uniform(-2, 2, (batch, stack.dim)).astype(np.float32)) for _ in stack.layers]
    return x, states


def make_stack(seed=0, kernels=kernels.CPU_KERNELS, **overrides):
    paddle.seed(seed)
    stack = LstmStack(tiny_config(**overrides), kernels)
    stack.eval()
    with paddle.no_grad():  # a non-zero bias so that a misplaced gate block shows
        for layer in stack.layers:
            layer.B.set_value(np.random.RandomState(seed).uniform(-1, 1, layer.B.shape).astype(np.float32))
    return stack


@pytest.mark.parametrize('buffer_mb', [64, 0], ids=['one-group', 'step-groups'])
@pytest.mark.parametrize('lengths', [[5, 5, 5], [7, 4, 4, 1, 0], [1]], ids=['full', 'shrinking', 'one'])
def test_packed_stack_matches_per_row_reference(lengths, buffer_mb, implementation):
    stack = make_stack(cell_clip=0.5, proj_clip=0.3, kernels=implementation)  # small clips: clipping is exercised
    stack.GATE_BUFFER_MB = stack.GATE_BLOCK_MB = buffer_mb  # 0: gate products in groups (blocks) of a step or two
    time = max(lengths) + 2  # trailing padding columns too
    x, states = random_case(stack, lengths, time)
    batch_sizes = (np.array(lengths)[None, :] > np.arange(time)[:, None]).sum(axis=1)
    with paddle.no_grad():
        outs, finals = stack(paddle.to_tensor(x), batch_sizes,
                             [(paddle.to_tensor(h), paddle.to_tensor(c)) for h, c in states])
    ref_outs, ref_finals = reference_stack(stack, x, lengths, states)
    for got, ref in zip(outs, ref_outs):
        np.testing.assert_allclose(got.numpy(), ref, atol=TOL, rtol=0)
    for (h, c), (rh, rc) in zip(finals, ref_finals):
        np.testing.assert_allclose(h.numpy(), rh, atol=TOL, rtol=0)
        np.testing.assert_allclose(c.numpy(), rc, atol=TOL, rtol=0)
    assert np.all(outs[-1].numpy()[:, max(lengths):] == 0)


def naive_paddle_stack(stack, x, lengths, states):
    """Straight per-row, per-step formulas in Paddle (autograd reference for the gradients)."""
    outputs = []
    for r, n in enumerate(lengths):
        inputs = [x[r, t] for t in range(n)]
        for k, layer in enumerate(stack.layers):
            h, c = states[k][0][r], states[k][1][r]
            outs = []
            for t in range(n):
                gates = paddle.matmul(paddle.concat([inputs[t], h]), layer.W) + layer.B + layer.forget_bias
                i, j, f, o = paddle.split(gates, 4)
                c = paddle.clip(F.sigmoid(i) * paddle.tanh(j) + F.sigmoid(f) * c, -stack.cell_clip, stack.cell_clip)
                h = paddle.clip(paddle.matmul(F.sigmoid(o) * paddle.tanh(c), layer.W_P), -stack.proj_clip, stack.proj_clip)
                outs.append(h + inputs[t] if k > 0 else h)
            inputs = outs
        outputs.append(paddle.stack(inputs))
    return outputs


@pytest.mark.parametrize('buffer_mb', [64, 0], ids=['one-group', 'step-groups'])
def test_packed_stack_gradients_match_naive_steps(buffer_mb, implementation):
    lengths = [4, 2, 1]
    grads = []
    for packed in (True, False):
        stack = make_stack(seed=5, cell_clip=0.5, proj_clip=0.3, kernels=implementation)
        stack.GATE_BUFFER_MB = buffer_mb
        stack.train()  # dropout is 0 in tiny_config: training mode, same values
        x_np, states_np = random_case(stack, lengths, 4, seed=2)
        x = paddle.to_tensor(x_np, stop_gradient=False)
        states = [(paddle.to_tensor(h, stop_gradient=False), paddle.to_tensor(c, stop_gradient=False))
                  for h, c in states_np]
        if packed:
            outs, _ = stack(x, np.array([3, 2, 1, 1]), states)
            loss = sum((outs[-1][r, :n] ** 2).sum() for r, n in enumerate(lengths))
        else:
            loss = sum((o ** 2).sum() for o in naive_paddle_stack(stack, x, lengths, states))
        loss.backward()
        named = {n: p.grad.numpy() for n, p in stack.named_parameters()}
        named.update(x=x.grad.numpy(), h0=states[0][0].grad.numpy(), c1=states[1][1].grad.numpy())
        grads.append(named)
    for name in grads[0]:
        np.testing.assert_allclose(grads[0][name], grads[1][name], atol=1e-5, rtol=1e-4, err_msg=name)


@pytest.mark.parametrize('buffer_mb', [64, 0], ids=['one-group', 'step-groups'])
def test_training_stack_on_the_kernel_drops_and_adds_in_the_kernel_with_the_ops_bits(buffer_mb):
    """A training stack with dropout and residual connections on the kernel (the dropout of each
    layer's input and the residual inside its calls, a group of steps' masks from its first
    element's index on) against the same stack running kernels.dropout and Paddle's add around the
    calls: the same bits, the top layer's outputs (the language model's loss reads no other), final
    states and every gradient, in one group of steps or several. (With a loss on a lower layer's
    outputs too, their gradient's three terms are summed in another order: the last bits may differ.)"""
    require_kernels()
    lengths, batch_sizes = [4, 2, 1], np.array([3, 2, 1, 1])
    results = []
    for fused in (True, False):
        stack = make_stack(seed=5, cell_clip=0.5, proj_clip=0.3, dropout=0.4, use_skip_connections=True)
        stack.GATE_BUFFER_MB = buffer_mb
        stack.train()
        if not fused:
            stack._trains_on_kernel = lambda *args: False  # the layers still run the training kernel
        x_np, states_np = random_case(stack, lengths, 4, seed=2)
        x = paddle.to_tensor(x_np, stop_gradient=False)
        states = [(paddle.to_tensor(h, stop_gradient=False), paddle.to_tensor(c, stop_gradient=False))
                  for h, c in states_np]
        paddle.seed(11)
        outs, finals = stack(x, batch_sizes, states, top_only=True)
        loss = (outs[0] ** 2).sum() + sum(h.sum() + c.sum() for h, c in finals[:1])
        loss.backward()
        results.append([o.numpy() for o in outs] + [t.numpy() for final in finals for t in final] +
                       [p.grad.numpy() for p in stack.parameters()] + [x.grad.numpy()] +
                       [t.grad.numpy() for state in states for t in state])
    for i, (got, want) in enumerate(zip(*results)):
        np.testing.assert_array_equal(got, want, err_msg=f'result {i}')
    assert (results[0][0] == 0).mean() < 0.5 and (results[0][-5] == 0).any()  # x's gradient: some dropped


def test_stateful_embedder_gives_same_results_with_and_without_token_cache(tiny_bilm):
    batches = [[['a', 'b', 'c'], ['dd']], [['a'], ['e', 'f', 'g', 'h'], ['b', 'b']], [['c']]]
    results = []
    for cache in (0, 50000):
        embedder = ELMoEmbedder(bilm=tiny_bilm, stateful=True, token_cache_size=cache)
        embedder.reset_states()  # the state lives in the shared biLM
        results.append([embedder.embed_batch(b) for b in batches])
    for got, ref in zip(results[1], results[0]):
        for g, r in zip(got, ref):
            # not bit for bit on several threads: the char CNN's products then round by batch shape
            np.testing.assert_allclose(g, r, rtol=0, atol=1e-6)


def test_full_token_cache_serves_known_words_and_computes_the_rest(tiny_bilm):
    sentences = [[f'w{i}', f'w{i + 1}', 'shared'] for i in range(12)]
    reference = ELMoEmbedder(bilm=tiny_bilm, token_cache_size=0).encode(sentences)
    embedder = ELMoEmbedder(bilm=tiny_bilm, token_cache_size=3)
    got = embedder.encode(sentences, batch_size=4)
    assert len(embedder._token_cache) == 3
    for g, r in zip(got, reference):
        np.testing.assert_allclose(g, r, atol=3e-6, rtol=0)  # batch shapes differ: BLAS order only


def test_flops_per_token_counts_the_original_configuration_by_hand():
    from benchmarks.flop_counts import flops_breakdown, flops_per_token
    from paddle_elmo import ModelConfig
    options = ModelConfig()  # the original ELMo: filters up to [7, 1024], 2 highways, 4096 -> 512
    parts = flops_breakdown(options)
    # sum over [w, n] of 2 * (50 - w + 1) * w * 16 * n; 2 highways x 2 products of 2048^2;
    # 2048 -> 512; 2 layers x 2 directions x (2 * 1024 * 16384 + 2 * 4096 * 512)
    assert parts['char_cnn'] == 17616896 and parts['highway'] == 33554432
    assert parts['projection'] == 2097152 and parts['lstm'] == 150994944
    assert parts['total'] == 204263424
    assert flops_per_token(options, cached_char_cnn=True) == 150994944
    # training: 3x (forward + backward), plus a sampled softmax over 8192 + 1 classes per direction
    assert flops_per_token(options, training=True, n_negative_samples=8192) == 3 * (204263424 + 2 * 2 * 512 * 8193)
    with pytest.raises(ValueError, match='n_negative_samples'):
        flops_per_token(options, training=True)


def test_required_flops_counts_the_windows_tokens_and_positions_by_hand():
    """The floor of the arithmetic the code needs: char CNN on the windows that touch a char, once
    per distinct token of a batch, LSTMs per position, sampled softmax per training position."""
    from benchmarks.flop_counts import required_flops, used_chars
    from paddle_elmo import ModelConfig
    from paddle_elmo.model.packing import distinct_tokens
    # F = 3 filters (width 1 x 2, width 3 x 1), C = 4, M = 8 chars, 1 highway, P = 3, D = 5, 1 layer
    options = ModelConfig(projection_dim=3, cell_dim=5, num_layers=1, cnn_filters=[[1, 2], [3, 1]],
                          num_highways=1, char_embed_dim=4, max_characters_per_token=8)
    mapper = CharMapper(8)
    one, _ = mapper.batch([['ab', 'c'], ['abcdefg']])  # <S> ab c </S> | <S> abcdef </S> (cut to 6 bytes)
    two, _ = mapper.batch([['c', 'ab']])
    # positions 4 + 3 = 7; distinct <S> ab c </S> abcdef, using 3, 4, 3, 3, 8 chars (marks included)
    distinct, used, _ = distinct_tokens(one.reshape(-1, 8), mapper.tokens(['x'])[0, -1])
    assert sorted(used_chars(distinct).tolist()) == sorted(used.tolist()) == [3, 3, 3, 4, 8]
    # width 1: min(8, u) = 3 + 4 + 3 + 3 + 8 = 21 windows; width 3: min(6, u) = 3 + 4 + 3 + 3 + 6 = 19
    char_cnn = 2 * 21 * 1 * 4 * 2 + 2 * 19 * 3 * 4 * 1  # 792
    highway, projection = 5 * 2 * 2 * 3 * 3, 5 * 2 * 3 * 3  # 180, 90
    lstm = 2 * (3 + 3) * 4 * 5 + 2 * 5 * 3  # 270 per position and direction
    got = required_flops(options, [one])
    assert (got['char_cnn'], got['highway'], got['projection'], got['lstm']) == (char_cnn, highway, projection, 7 * 2 * lstm)
    assert got['total'] == 4842 and (got['positions'], got['distinct'], got['char_windows']) == (7, 5, 40)
    # the second batch holds 4 distinct tokens again; a cache of every word met computes none of them
    assert required_flops(options, [one, two])['distinct'] == 9
    cached = required_flops(options, [one, two], token_cache=True)
    assert cached['distinct'] == 5 and cached['total'] == 4842 + 4 * 2 * lstm
    # a token read from a table is not computed: ab's 4 + 4 windows go
    assert required_flops(options, [one], precomputed=['ab'])['char_cnn'] == 2 * 17 * 1 * 4 * 2 + 2 * 15 * 3 * 4 * 1
    # training: each row one direction, a target per position (true word + 4 candidates), x 3
    trained = required_flops(options, [one], training=True, n_negative_samples=4)
    assert trained['softmax'] == 3 * 7 * 2 * 3 * 5
    assert trained['total'] == 3 * (char_cnn + highway + projection + 7 * lstm + 7 * 2 * 3 * 5)
    # word input: no char CNN, highway or projection
    word = ModelConfig(projection_dim=3, cell_dim=5, num_layers=1, token_input='word')
    assert required_flops(word, [one])['total'] == 7 * 2 * lstm


def _rule_in_float32(rule, param, slots, grad, lr, scale):
    """The optimizer kernels' formula in NumPy float32, one IEEE operation at a time (kernels.cc:
    AdagradSpan, AdamSpan) -> the new (param, slots)."""
    f = np.float32
    g = grad * f(scale)
    if rule == 'adagrad':
        acc = slots[0] + g * g
        return param - f(lr) * g / (np.sqrt(acc) + f(0)), [acc]
    b1, b2, eps = f(0.9), f(0.999), f(1e-8)
    m = slots[0] * b1 + g * f(1 - 0.9)
    v = slots[1] * b2 + (g * f(1 - 0.999)) * g
    return param - (f(lr) * m) / (np.sqrt(v) + eps), [m, v]


@pytest.mark.parametrize('rule', ['adagrad', 'adam'])
def test_optimizer_kernels_are_the_rule_s_float32_operations_bit_for_bit(rule):
    """The update kernels, dense (several tensors, one of more than a thread's block) and a table's
    rows (scattered ids), against the rule in NumPy float32: the same bits. A build that
    approximates sqrt or the division (fast math, rsqrt) or contracts into FMAs, or a wrong slot,
    row, block or clip factor, changes them."""
    ops = require_kernels()
    rng = np.random.RandomState(11)
    f32 = lambda *shape: rng.normal(0, 1, shape).astype(np.float32)
    n_slots = 1 if rule == 'adagrad' else 2
    slot = lambda shape: (rng.uniform(0.5, 2, shape) if rule == 'adagrad' else rng.normal(0, 0.1, shape) ** 2).astype(
        np.float32)
    lr, scale = 0.2, 0.37
    constants = () if rule == 'adagrad' else (0.9, np.float32(1 - 0.9), 0.999, np.float32(1 - 0.999), 1e-8)
    dense = [(f32(9000), [slot(9000) for _ in range(n_slots)], f32(9000)),
             (f32(3, 7), [slot((3, 7)) for _ in range(n_slots)], f32(3, 7))]
    params = [paddle.to_tensor(p) for p, _, _ in dense]
    slots = [[paddle.to_tensor(s[k]) for _, s, _ in dense] for k in range(n_slots)]
    getattr(ops, f'elmo_{rule}_dense')(params, *slots, [paddle.to_tensor(g) for _, _, g in dense], lr, scale,
                                       *constants)
    for i, (p, s, g) in enumerate(dense):
        want_p, want_s = _rule_in_float32(rule, p, s, g, lr, scale)
        np.testing.assert_array_equal(params[i].numpy(), want_p)
        for k in range(n_slots):
            np.testing.assert_array_equal(slots[k][i].numpy(), want_s[k])
    table, table_slots = f32(40, 5), [slot((40, 5)) for _ in range(n_slots)]
    ids, grad = np.array([0, 3, 4, 17, 39], dtype=np.int64), f32(5, 5)
    t, ts = paddle.to_tensor(table), [paddle.to_tensor(s) for s in table_slots]
    getattr(ops, f'elmo_{rule}_rows')(t, *ts, paddle.to_tensor(ids), paddle.to_tensor(grad), lr, scale, *constants)
    want_rows, want_slot_rows = _rule_in_float32(rule, table[ids], [s[ids] for s in table_slots], grad, lr, scale)
    want, want_slots = table.copy(), [s.copy() for s in table_slots]
    want[ids] = want_rows
    for k in range(n_slots):
        want_slots[k][ids] = want_slot_rows[k]
    np.testing.assert_array_equal(t.numpy(), want)  # the other rows untouched
    for k in range(n_slots):
        np.testing.assert_array_equal(ts[k].numpy(), want_slots[k])


def test_dropout_kernel_keeps_one_minus_p_scales_them_and_drops_the_same_gradient():
    """The kernel's dropout: each element kept with probability 1 - p and scaled by 1 / (1 - p), the
    backward through the very mask of the forward, a seed from Paddle's generator (paddle.seed
    repeats it), and fresh masks from call to call."""
    require_kernels()
    x = paddle.to_tensor(np.random.RandomState(0).uniform(1, 2, (1280, 128)).astype(np.float32), stop_gradient=False)
    paddle.seed(5)
    y = kernels.dropout(x, 0.25, kernels.CPU_KERNELS)
    kept = y.numpy() != 0
    assert abs(kept.mean() - 0.75) < 0.005  # 163,840 draws: 5 standard errors is 0.0053
    np.testing.assert_allclose(y.numpy()[kept], x.numpy()[kept] / 0.75, rtol=1e-6)
    weights = np.random.RandomState(1).normal(size=(1280, 128)).astype(np.float32)
    (y * paddle.to_tensor(weights)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.where(kept, weights / 0.75, 0), rtol=1e-6)
    paddle.seed(5)
    again, other = (kernels.dropout(x, 0.25, kernels.CPU_KERNELS).numpy() != 0 for _ in range(2))
    assert (again == kept).all() and abs((other == kept).mean() - (0.75 ** 2 + 0.25 ** 2)) < 0.01
    rows, cols = kept.mean(axis=1), kept.mean(axis=0)  # no pattern along either axis
    assert rows.std() < 3 * np.sqrt(0.75 * 0.25 / 128) and cols.std() < 3 * np.sqrt(0.75 * 0.25 / 1280)


def padded_case(stack, lengths, time, seed):
    """random_case with large values at the padding positions of x (the stack must never read
    them) -> (x tensor with a gradient, states, batch_sizes, weights [batch, time, P] for the loss,
    non-zero at padding too)."""
    x_np, states_np = random_case(stack, lengths, time, seed=seed)
    present = np.arange(time)[None, :] < np.array(lengths)[:, None]
    x_np[~present] = 100.0
    weights = np.random.RandomState(seed + 1).uniform(0.5, 1.5, x_np.shape).astype(np.float32)
    batch_sizes = (np.array(lengths)[None, :] > np.arange(time)[:, None]).sum(axis=1)
    states = [(paddle.to_tensor(h), paddle.to_tensor(c)) for h, c in states_np]
    return paddle.to_tensor(x_np, stop_gradient=False), states, batch_sizes, paddle.to_tensor(weights)


@pytest.mark.parametrize('lengths', [[6, 4, 4, 1, 0], [6, 6, 6]], ids=['uneven', 'full'])
def test_stack_in_training_reads_no_padding_and_passes_it_no_gradient(lengths, implementation):
    """Training (dropout on the packed rows, the skip add, the unpack): the outputs at padding are
    exactly 0, whatever x holds there, and x's gradient at padding is exactly 0 while the loss weighs
    every position; at real positions the gradient is not 0."""
    stack = make_stack(seed=4, dropout=0.3, kernels=implementation)
    stack.train()
    time = 8
    x, states, batch_sizes, weights = padded_case(stack, lengths, time, seed=6)
    paddle.seed(1)
    outs, _ = stack(x, batch_sizes, states)
    sum(((o * weights) ** 2).sum() for o in outs).backward()
    present = np.arange(time)[None, :] < np.array(lengths)[:, None]
    for out in outs:
        assert np.all(out.numpy()[~present] == 0)
    grad = x.grad.numpy()
    assert np.all(grad[~present] == 0) and np.all(np.abs(grad[present]).sum(axis=-1) > 0)
    x_zero = paddle.to_tensor(np.where(present[..., None], x.numpy(), 0).astype(np.float32))
    paddle.seed(1)
    again, _ = stack(x_zero, batch_sizes, states)  # the padding's values never reach an output
    for out, other in zip(outs, again):
        np.testing.assert_array_equal(out.numpy(), other.numpy())


@pytest.mark.parametrize('lengths', [[5, 3, 3, 1], [4, 4]], ids=['uneven', 'full'])
def test_top_only_gives_the_full_stacks_top_layer_states_and_gradients(lengths, implementation):
    """top_only (the language model's training) unpacks the top layer alone: the same bits as the
    full stack's top layer, final states and every gradient, dropout's masks included."""
    results = []
    for top_only in (False, True):
        stack = make_stack(seed=8, dropout=0.4, kernels=implementation)
        stack.train()
        x, states, batch_sizes, weights = padded_case(stack, lengths, 5, seed=3)
        paddle.seed(2)
        outs, finals = stack(x, batch_sizes, states, top_only=top_only)
        assert len(outs) == (1 if top_only else len(stack.layers))
        ((outs[-1] * weights) ** 2).sum().backward()
        results.append([outs[-1].numpy(), *(s.numpy() for f in finals for s in f), x.grad.numpy(),
                        *(p.grad.numpy() for p in stack.parameters())])
    for got, want in zip(*results):
        np.testing.assert_array_equal(got, want)


def test_unpack_rows_puts_every_packed_row_back_with_zeros_and_no_gradient_at_padding():
    """packing_tensors' indices and unpack_rows against NumPy: lengths 3, 2, 0 of 4 steps (and a
    batch with no padding, whose unpack is one gather), values and the packed rows' gradient."""
    from paddle_elmo.model.packing import packing_tensors, unpack_rows
    for lengths, time in (([3, 2, 0], 4), ([2, 2], 2)):
        batch = len(lengths)
        sizes = tuple(int(n) for n in (np.array(lengths)[None, :] > np.arange(time)[:, None]).sum(axis=1) if n)
        pack, unpack = packing_tensors(sizes, batch, time, paddle.CPUPlace())
        tokens = sum(lengths)
        packed_np = np.random.RandomState(0).normal(size=(tokens, 3)).astype(np.float32)
        want, row = np.zeros((batch * time, 3), dtype=np.float32), 0
        for t in range(time):  # time-major: step t's running rows, longest first
            for r in range(batch):
                if t < lengths[r]:
                    want[r * time + t], row = packed_np[row], row + 1
        np.testing.assert_array_equal(pack.numpy(), [r * time + t for t in range(time) for r in range(batch)
                                                      if t < lengths[r]])
        packed = paddle.to_tensor(packed_np, stop_gradient=False)
        got = unpack_rows(packed, unpack)
        np.testing.assert_array_equal(got.numpy(), want)
        upstream = np.random.RandomState(1).normal(size=want.shape).astype(np.float32)
        (got * paddle.to_tensor(upstream)).sum().backward()
        np.testing.assert_array_equal(packed.grad.numpy(), upstream[pack.numpy()])


def test_last_states_read_each_rows_last_step_for_each_shape_asked_in_turn():
    """last_states keeps one index per shape of steps (last_rows): shapes asked in turn each get
    their own rows' last steps, and rows that did not run keep h0 and c0."""
    from paddle_elmo.model.packing import last_states
    rng = np.random.RandomState(5)
    h0, c0 = (paddle.to_tensor(rng.normal(size=(4, d)).astype(np.float32)) for d in (2, 3))
    for lengths in ([3, 2, 2, 0], [2, 2, 1, 1], [3, 2, 2, 0], [1, 1, 1, 1]):
        sizes = [n for n in (np.array(lengths)[None, :] > np.arange(3)[:, None]).sum(axis=1) if n]
        tokens = sum(lengths)
        h_all, c_all = (rng.normal(size=(tokens, d)).astype(np.float32) for d in (2, 3))
        h, c = last_states(paddle.to_tensor(h_all), paddle.to_tensor(c_all), h0, c0, sizes)
        offsets = np.concatenate([[0], np.cumsum(sizes)])
        for r, n in enumerate(lengths):
            want = (h_all[offsets[n - 1] + r], c_all[offsets[n - 1] + r]) if n else (h0.numpy()[r], c0.numpy()[r])
            np.testing.assert_array_equal(h.numpy()[r], want[0])
            np.testing.assert_array_equal(c.numpy()[r], want[1])


def test_a_stacks_dropout_seeds_are_the_seeds_of_dropouts_drawn_one_at_a_time():
    """dropout_seeds draws a stack's seeds at once: the masks are those of the dropouts drawing
    their own seeds one after another from the same generator state; F.dropout's masks draw their own."""
    require_kernels()
    x = paddle.to_tensor(np.ones((64, 8), dtype=np.float32))
    paddle.seed(9)
    one_by_one = [kernels.dropout(x, 0.5, kernels.CPU_KERNELS).numpy() for _ in range(3)]
    paddle.seed(9)
    seeds = kernels.dropout_seeds(x, 3, kernels.CPU_KERNELS)
    at_once = [kernels.dropout(x, 0.5, kernels.CPU_KERNELS, seed).numpy() for seed in seeds]
    for a, b in zip(one_by_one, at_once):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(one_by_one[0], one_by_one[1])
    assert kernels.dropout_seeds(x, 2, kernels.Kernels(dropout_masks='paddle')) == [None, None]


def test_frozen_weights_pass_the_same_gradient_to_the_input(implementation):
    """Frozen weights are read as views (split_rows), not copies: the input's gradient is unchanged."""
    grads = []
    for frozen in (False, True):
        stack = make_stack(seed=7, cell_clip=0.5, proj_clip=0.3, kernels=implementation)
        stack.GATE_BUFFER_MB = 0  # several step groups: the input is split too
        for p in stack.parameters():
            p.stop_gradient = frozen
        x_np, states_np = random_case(stack, [4, 2, 1], 4, seed=3)
        x = paddle.to_tensor(x_np, stop_gradient=False)
        states = [(paddle.to_tensor(h), paddle.to_tensor(c)) for h, c in states_np]
        outs, _ = stack(x, np.array([3, 2, 1, 1]), states)
        (outs[-1] ** 2).sum().backward()
        grads.append(x.grad.numpy())
    np.testing.assert_array_equal(grads[0], grads[1])
