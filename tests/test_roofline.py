"""The roofline floors of the profile scripts (benchmarks/roofline.py) and the bandwidth they use
(benchmarks/stream.py): the products add up to the required floor's FLOPs, the bytes are the
documented counts (by hand here), the floor is the larger of the two times, the recurrence's
per-step products are timed as the kernel runs them (MKL's packed products where it links MKL),
and the stream kernels compute what they claim to move."""
import numpy as np
import pytest

from conftest import require_kernels
from helpers import benchmark_module
from paddle_elmo import ModelConfig
from paddle_elmo.text.token_ids import CharMapper


flop_counts, roofline, stream = (benchmark_module(name) for name in ('flop_counts', 'roofline', 'stream'))

# F = 3 filters (width 1 x 2, width 3 x 1), C = 4, M = 8 chars, 1 highway, P = 3, D = 5, 2 layers
CONFIG = ModelConfig(projection_dim=3, cell_dim=5, num_layers=2, cnn_filters=[[1, 2], [3, 1]], num_highways=1,
                     char_embed_dim=4, max_characters_per_token=8)
P, D = 3, 5
WEIGHTS = 4 * (P * 4 * D + D * P)  # one layer's W_hidden and W_P, bytes


def batches():
    mapper = CharMapper(8)
    return [mapper.batch([['ab', 'c'], ['abcdefg']])[0], mapper.batch([['c', 'ab', 'x'], ['q']])[0]]


def test_the_products_add_up_to_the_required_floors_flops():
    """Every product the floor times is one the required floor counts, and none is missing."""
    embed = roofline.embedding_parts(CONFIG, batches(), llc=None)
    assert sum(p.flops() for p in embed.values()) * 2 == flop_counts.required_flops(CONFIG, batches())['total']
    one, two = batches()
    steps = [{'char_ids': one, 'char_ids_reverse': one[:, ::-1]}, {'char_ids': two, 'char_ids_reverse': two}]
    train = roofline.training_parts(CONFIG, steps, negatives=4, table_rows=10, dense_params=100, rule='adagrad',
                                    llc=None)
    need = flop_counts.required_flops(CONFIG, [flop_counts.lm_step_char_ids(s) for s in steps], training=True,
                                 n_negative_samples=4)
    assert sum(p.flops() for p in train.values()) * 2 == need['total']
    # forward : backward = 1 : 2, part by part (dX and dW of every trained product)
    for part in ('token layer', 'LSTMs', 'softmax'):
        assert train[f'{part}, backward'].flops() == 2 * train[f'{part}, forward'].flops()


def test_the_recurrences_weights_stream_at_every_step_unless_they_fit_the_cache():
    """The first batch's rows have 4 and 3 positions (<S> ab c </S>, <S> abcdefg </S>): 4 steps a
    layer and direction, of 2, 2, 2 and 1 rows."""
    first = batches()[:1]
    assert roofline.step_rows(first[0]).tolist() == [2, 2, 2, 1]
    streamed = roofline.embedding_parts(CONFIG, first, llc=None)['LSTMs: recurrence (kernel)'].total_bytes()
    cached = roofline.embedding_parts(CONFIG, first, llc=1 << 20)['LSTMs: recurrence (kernel)'].total_bytes()
    # 2 directions x 2 layers: 4 steps' reads of both matrices against 1
    assert streamed - cached == 2 * 2 * (4 - 1) * WEIGHTS
    # Training's backward reads the whole W [I + P, 4D] (I = P) and W_P at each step
    steps = [{'char_ids': first[0], 'char_ids_reverse': first[0]}]
    backward = [roofline.training_parts(CONFIG, steps, negatives=4, table_rows=10, dense_params=100, rule='adagrad',
                                        llc=llc)['LSTMs, backward'].total_bytes() for llc in (None, 1 << 20)]
    assert backward[0] - backward[1] == 2 * 2 * (4 - 1) * 4 * (2 * P * 4 * D + D * P)


def test_the_optimizers_bytes_are_one_read_for_the_norm_then_the_rules_reads_and_writes():
    one = batches()[0]
    steps = [{'char_ids': one, 'char_ids_reverse': one}]
    for rule, values in (('adagrad', 1 + 5), ('adam', 1 + 7)):
        parts = roofline.training_parts(CONFIG, steps, negatives=4, table_rows=10, dense_params=100, rule=rule,
                                        llc=None)
        assert parts['optimizer'].total_bytes() == 4 * values * (100 + 10 * (P + 1))
        assert parts['optimizer'].flops() == 0


def test_a_products_bytes_are_its_operands_and_result_and_its_timed_rows_round_up():
    forward = roofline.Product((5, 7), (7, 11), calls=2)
    assert forward.flops() == 2 * 2 * 5 * 7 * 11 and forward.bytes() == 4 * 2 * (5 * 7 + 7 * 11 + 5 * 11)
    assert forward._replace(y_reads=1).bytes() == 4 * (2 * (5 * 7 + 5 * 11) + 7 * 11)
    assert forward.timed_shape() == ((6, 7), (7, 11), False, False, 0)  # 5 rows timed as 6 (ROW_GRID)
    # a recurrence's step: its rows and the rows its weight is packed for rounded up alike
    assert forward._replace(packed=5).timed_shape() == ((6, 7), (7, 11), False, False, 6)
    # dW = X^T dY: [7, 11] from [5, 7]^T [5, 11]; its sum over the 5 rows is not rounded
    dw = roofline.Product((5, 7), (5, 11), tx=True)
    assert dw.flops() == 2 * 7 * 11 * 5 and dw.bytes() == 4 * (5 * 7 + 5 * 11 + 7 * 11)
    assert dw.timed_shape() == ((5, 7), (5, 11), True, False, 0)


def test_the_roofline_is_the_longer_of_the_products_at_their_shapes_and_the_bytes_at_the_bandwidth():
    part = roofline.Part()
    part.add((6, 7), (7, 11), calls=3)
    part.add((5, 7), (7, 11))  # timed as 6 rows: 5/6 of that shape's time
    part.bytes = 1e6
    shape = ((6, 7), (7, 11), False, False, 0)
    fast = roofline.summary(part, {shape: 1e-6}, gbs=1.0)
    assert fast['at shape ms'] == pytest.approx(1000 * (3 + 5 / 6) * 1e-6)
    assert fast['memory ms'] == pytest.approx(1000 * part.total_bytes() / 1e9)
    assert fast['roofline ms'] == max(fast['at shape ms'], fast['memory ms']) == fast['memory ms']
    slow = roofline.summary(part, {shape: 1.0}, gbs=1.0)
    assert slow['roofline ms'] == slow['at shape ms'] > slow['memory ms']
    # a step's floor sums its parts' floors (they run one after another)
    both = roofline.summed([fast, slow])
    assert both['roofline ms'] == pytest.approx(fast['memory ms'] + slow['at shape ms'])
    assert roofline.columns(fast, ms=2 * fast['roofline ms'])['of roofline'] == '50%'


def test_the_floor_keeps_each_shapes_fastest_timing_around_the_run_and_the_best_bandwidth(monkeypatch):
    """Timed before and after the run, a floor takes each shape's faster timing (the two shapes' faster
    ones from different timings) and the better triad; each timing's own floor is kept to show drift."""
    a, b = ((6, 7), (7, 11), False, False, 0), ((2, 7), (7, 11), False, False, 0)
    part = roofline.Part()
    part.add((6, 7), (7, 11))
    part.add((2, 7), (7, 11))
    part.bytes = 1e6
    stream_ = {'threads': 2, 'array_mb': 64}
    before = roofline.Timing({**stream_, 'copy': 2.0, 'triad': 1.0}, {a: 3.0, b: 1.0})
    after = roofline.Timing({**stream_, 'copy': 1.0, 'triad': 4.0}, {a: 2.0, b: 5.0})
    best = roofline.fastest([before, after])
    assert best.seconds == {a: 2.0, b: 1.0}
    assert (best.stream['copy'], best.stream['triad'], best.stream['array_mb']) == (2.0, 4.0, 64)
    monkeypatch.setattr(roofline, 'packed_library', lambda: None)
    bandwidth, summaries, timed, floors = roofline.measure({'p': part}, [before, after])
    assert bandwidth == best.stream and timed == roofline.RECURRENCE_TIMED[False]
    assert summaries['p']['at shape ms'] == pytest.approx(3000.0)
    assert floors == [pytest.approx(4000.0), pytest.approx(7000.0)]  # neither timing's alone is the floor
    line = roofline.described({'stream': bandwidth, 'recurrence timed': timed, 'roofline timings': floors})
    assert '4000.0 ms before the run, 7000.0 after' in line


def products_by_packing(part):
    """A part's products -> {rows packed for (0: plain): {(x, y, tx, ty)}}."""
    out = {}
    for p in part.products:
        out.setdefault(p.packed, set()).add((p.x, p.y, p.tx, p.ty))
    return out


def test_the_kernels_products_are_packed_as_they_run_them_and_no_other_product_is():
    """As the kernels run them: h x W_hidden and m x W_proj a step, backward through the transposed
    whole W (W_input over W_hidden) and W_proj, MKL-packed for the call's first step's rows (2 here: steps
    of 2, 2, 2 and 1 rows, 7 positions); the input products and weight gradients plain. The softmax's
    logits h x W_cand^T packed for all the direction's rows, its backward's products plain, each in
    the layout the code multiplies."""
    one = batches()[0]
    steps = [{'char_ids': one, 'char_ids_reverse': one}]
    train = roofline.training_parts(CONFIG, steps, negatives=4, table_rows=10, dense_params=100, rule='adagrad',
                                    llc=None)
    G = 4 * D
    assert products_by_packing(train['LSTMs, forward']) == {
        2: {((r, P), (P, G), False, False) for r in (2, 1)} | {((r, D), (D, P), False, False) for r in (2, 1)},
        0: {((7, P), (P, G), False, False)}}
    # The training kernel's backward through the whole W [I + P, 4D] (I = P): dg W^T = [dx | dh_prev]
    # a step, [x | h_prev]^T dg once; the forward's x W_input a plain product over all the steps.
    assert products_by_packing(train['LSTMs, backward']) == {
        2: {((r, G), (2 * P, G), False, True) for r in (2, 1)} | {((r, P), (D, P), False, True) for r in (2, 1)},
        0: {((7, 2 * P), (7, G), True, False), ((7, D), (7, P), True, False)}}
    # Embedding: with the kernels the kernel makes the input products (packed for the largest block,
    # a block of steps at a time: here one block of all 7 positions); without them, one plain product
    # a layer before the loop.
    kernel, rest = roofline.EMBEDDING_PARTS[2:]
    embed = roofline.embedding_parts(CONFIG, [one], llc=None)
    assert products_by_packing(embed[kernel])[7] == {((7, P), (P, G), False, False)}
    assert set(products_by_packing(embed[kernel])) == {7, 2} and not embed[rest].products
    loops = roofline.embedding_parts(CONFIG, [one], llc=None, streamed=False)
    assert set(products_by_packing(loops[kernel])) == {2}
    assert products_by_packing(loops[rest]) == {0: {((7, P), (P, G), False, False)}}
    for name in ('token layer, backward', 'softmax, backward'):
        assert set(products_by_packing(train[name])) == {0}, name
    # The char CNN kernel's products (k = w C: 4 and 12 here) packed for all their windows; the
    # highway's and the projection's (k = F = 3) plain.
    for tokens in (train['token layer, forward'], embed[roofline.EMBEDDING_PARTS[0]]):
        cnn = [p for p in tokens.products if p.x[1] in (4, 12)]
        assert len(cnn) == 2 and all(p.packed == p.x[0] for p in cnn)
    assert {p.packed for p in train['token layer, forward'].products if p.x[1] == 3} == {0}
    classes = 4 + 1
    assert products_by_packing(train['softmax, forward']) == {7: {((7, P), (classes, P), False, True)}}
    assert products_by_packing(train['softmax, backward']) == {0: {((7, classes), (classes, P), False, False),
                                                                   ((7, classes), (7, P), True, False)}}


def test_with_mkl_the_packed_shapes_are_timed_by_mkls_packed_products_and_the_rest_by_paddle_matmul(monkeypatch):
    matmul_rates = benchmark_module('matmul_rates')
    timed = []
    monkeypatch.setattr(matmul_rates, 'time_product', lambda x, y, tx, ty, s: timed.append(('matmul', x, y)) or 1.0)
    monkeypatch.setattr(matmul_rates, 'time_packed_product',
                        lambda x, y, ty, rows, s, library: timed.append((library, x, y, rows)) or 2.0)
    part = roofline.Part()
    part.add((3, 4), (4, 5), packed=3)
    part.add((3, 4), (4, 5))
    seconds = roofline.time_shapes({'a': part}, 0.0, 'libmkl.so')
    assert seconds == {((3, 4), (4, 5), False, False, 3): 2.0, ((3, 4), (4, 5), False, False, 0): 1.0}
    assert sorted(timed, key=str) == [('libmkl.so', (3, 4), (4, 5), 3), ('matmul', (3, 4), (4, 5))]
    timed.clear()
    roofline.time_shapes({'a': part}, 0.0, None)  # no MKL: the kernel's products are paddle.matmul's
    assert timed == [('matmul', (3, 4), (4, 5))] * 2


def test_where_the_kernels_link_mkl_the_roofline_times_the_recurrence_on_it_and_its_products_are_right():
    """The library the roofline packs with is the one the kernels were built against (-DELMO_MKL exactly
    when kernel_build.mkl_library finds it), and through ctypes it computes x W and x W^T."""
    from paddle_elmo.model import kernel_build
    require_kernels()
    library = kernel_build.mkl_library()
    assert ('-DELMO_MKL' in kernel_build._runtime_flags([])['extra_cxx_cflags']) == (library is not None)
    assert roofline.packed_library() == library
    if library is None:
        pytest.skip("this Paddle wheel ships no MKL the kernels link: the recurrence's products are paddle.matmul's")
    assert 'packed' in roofline.described({'stream': {'threads': 1, 'array_mb': 1, 'copy': 1.0, 'triad': 1.0},
                                            'recurrence timed': roofline.RECURRENCE_TIMED[True],
                                            'roofline timings': [1.0, 1.0]})
    import paddle
    matmul_rates = benchmark_module('matmul_rates')
    x = paddle.randn([3, 4])
    for ty, w in ((False, paddle.randn([4, 5])), (True, paddle.randn([5, 4]))):
        out = paddle.zeros([3, 5])
        with matmul_rates.mkl_packed(library, w, ty, 4) as multiply:  # packed for 4 rows, run on 3
            multiply(x, out)
        np.testing.assert_allclose(out.numpy(), x.numpy() @ (w.numpy().T if ty else w.numpy()), rtol=1e-5, atol=1e-5)
    assert matmul_rates.time_packed_product((3, 4), (5, 4), True, 4, 0.0, library) > 0


def test_without_the_kernels_the_recurrence_is_timed_by_paddle_matmul(monkeypatch):
    from paddle_elmo.model import kernels
    monkeypatch.setattr(kernels, 'kernel', lambda: None)
    assert roofline.packed_library() is None


def test_stream_kernels_compute_their_formulas_on_every_slice(monkeypatch):
    monkeypatch.setattr(stream, 'BLOCK', 7)  # blocks that do not divide the slices
    n = 100
    a, b, c = np.zeros(n, np.float32), np.arange(n, dtype=np.float32), np.ones(n, np.float32)
    slices = stream._slices(n, 3)
    assert [s.stop - s.start for s in slices] == [33, 33, 34]
    stream._timed(stream._triad, (a, b, c), slices)
    np.testing.assert_array_equal(a, b + 3)
    stream._timed(stream._copy, (a, b), slices)
    np.testing.assert_array_equal(a, b)
    result = stream.measure_stream_gbs(threads=2, array_mb=1, seconds=0)
    assert result['copy'] > 0 and result['triad'] > 0 and result['array_mb'] == 1


def test_matmul_ceiling_compares_mkl_paths_product_by_product_and_by_the_floors_rate():
    # Two fake workers' results (matmul_ceiling.worker's: per product [calls, flops, seconds] a
    # step, and the [4096]^2 rate before and after): path 7 twice as fast on one product, the same
    # on the other, its rate (the higher of its readings, as every share divides by) 12.5% higher.
    ceiling = benchmark_module('matmul_ceiling')
    by_path = {'5': {'rows': {'a': [1, 1e9, 0.004], 'b': [2, 1e9, 0.001]}, 'rates': [200.0, 200.0]},
               '7': {'rows': {'a': [1, 1e9, 0.002], 'b': [2, 1e9, 0.001]}, 'rates': [215.0, 225.0]}}
    rows = ceiling.path_table('small', by_path, top=5)
    assert [r['product'] for r in rows] == ['a', 'b', '**all products**', "[4096]^2 rate, GFLOP/s (the floors')"]
    assert [r['path 5 ms'] for r in rows] == [4.0, 1.0, 5.0, 200.0]
    assert [r['path 7 ms'] for r in rows] == [2.0, 1.0, 3.0, 225.0]
    assert [r['7 / 5 speed'] for r in rows] == ['2.000', '1.000', '1.667', '1.125']
