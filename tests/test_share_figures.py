"""The benchmarks' robust figures (benchmarks/shares.py): a share of a floor is the median of N runs,
each divided by the higher of the matmul readings at its start and end, with N and every value in
the printed line and in the --json_out file."""
import json

import pytest

from helpers import benchmark_module


shares = benchmark_module('shares')

# Three runs of 1e12 FLOPs each: the rate fell during run 1 (300 -> 200), rose during run 2 (200 ->
# 250), held in run 3. Against the higher reading: 1e12 / 300e9 / 5 s = 2/3, 1e12 / 250e9 / 5 s =
# 0.8, 1e12 / 250e9 / 8 s = 0.5.
FLOPS, SECONDS = 1e12, (5.0, 5.0, 8.0)
READINGS = ((300.0, 200.0), (200.0, 250.0), (250.0, 250.0))


def figure():
    values = [shares.share_of_floor(FLOPS, s, r) for s, r in zip(SECONDS, READINGS)]
    return shares.rate_figure('share of required floor', values, READINGS)


def test_each_run_is_divided_by_the_higher_of_its_start_and_end_readings():
    assert figure().values == pytest.approx((2 / 3, 0.8, 0.5))
    # not the start reading alone (run 2 would be 1.0), nor the end alone (run 1: 1.0), nor the mean
    assert shares.share_of_floor(FLOPS, 5.0, (200.0, 250.0)) == pytest.approx(0.8)
    assert shares.share_of_floor(FLOPS, 5.0, (300.0, 200.0)) == pytest.approx(2 / 3)


def test_the_figure_is_the_median_of_the_runs_not_their_mean():
    f = figure()
    assert f.median == pytest.approx(2 / 3)  # the mean would be 0.656
    assert shares.rate_figure('x', [0.5, 0.6, 0.9], [(1, 1)] * 3).median == pytest.approx(0.6)
    assert shares.rate_figure('x', [0.5, 0.6, 0.7, 0.9], [(1, 1)] * 4).median == pytest.approx(0.65)
    assert shares.median_run([0.9, 0.5, 0.6]) == 2  # the run whose table is printed
    assert shares.median_run([0.7, 0.5, 0.6, 0.9]) == 2  # the lower middle one for an even N


def test_the_printed_line_gives_the_median_n_every_value_and_the_rule():
    assert figure().line() == ('share of required floor: 66.7% (median of 3: 66.7, 80.0, 50.0; each against the '
                               'higher of its start/end matmul reading)')
    roof = shares.roofline_figure('share of roofline floor', [0.78, 0.8])
    assert roof.line() == ('share of roofline floor: 79.0% (median of 2: 78.0, 80.0; each against the roofline '
                           'timed before and after it in its own process, the faster kept)')


def test_a_bracket_gives_each_run_the_readings_just_before_and_after_it():
    readings = iter([300.0, 200.0, 250.0])
    bracket = shares.Bracket(lambda: next(readings))
    assert bracket.run(lambda: 'a') == ('a', (300.0, 200.0))
    assert bracket.run(lambda: 'b') == ('b', (200.0, 250.0))  # the end reading is the next run's start


def test_rounds_run_every_shape_once_before_any_runs_twice():
    order = []
    runs = shares.in_rounds(['32', '128'], 2, lambda shape, round_: order.append(shape) or f'{shape}/{round_}')
    assert order == ['32', '128', '32', '128']
    assert runs == {'32': ['32/0', '32/1'], '128': ['128/0', '128/1']}


def test_profile_figures_divide_the_step_by_its_floors_in_each_run():
    # step 100 ms, 50e9 FLOPs: 50 ms at 1000 GFLOP/s (the higher of 800 and 1000) -> 0.5; roofline 60 + 20 ms -> 0.8
    run = {'ms': {'step': 100.0}, 'flops': {'total': 50e9}, 'rates': [800.0, 1000.0],
           'roofline': {'a': {'roofline ms': 60.0}, 'b': {'roofline ms': 20.0}}}
    required, roof = shares.profile_figures([run], 'step')
    assert required.values == pytest.approx((0.5,)) and roof.values == pytest.approx((0.8,))
    assert required.readings == ((800.0, 1000.0),) and roof.readings == ()
    assert len(shares.profile_figures([dict(run, roofline=None)], 'step')) == 1  # --shape_seconds 0: no roofline


def test_the_json_file_holds_what_a_test_of_a_document_needs(tmp_path):
    path = tmp_path / 'figures.json'
    info = {'commit': 'abc1234', 'cpu': 'some CPU'}
    shares.write_json(str(path), {'small, 32 rows': [figure()]}, info, threads=2)
    data = json.loads(path.read_text())
    assert data['commit'] == 'abc1234' and data['machine'] == info and data['threads'] == 2
    record = data['figures']['small, 32 rows'][0]
    assert record['median'] == pytest.approx(2 / 3) and record['n'] == 3
    assert record['values'] == pytest.approx([2 / 3, 0.8, 0.5])
    assert record['matmul_readings'] == [list(r) for r in READINGS]
    assert shares.read_figures(str(path)) == {'small, 32 rows': [figure()]}


def test_bench_pretrain_divides_each_run_by_its_own_higher_reading():
    # 2,000 tokens/s at 1e8 required FLOPs a token: 2e11 FLOP/s, 2/3 of 300 (run 1's higher reading),
    # 0.8 of 250 (run 2's); the reference count (2e8 FLOPs a token) twice as much
    bench_pretrain = benchmark_module('bench_pretrain')
    runs = [{'tokens_per_s': 2000.0, 'readings': (300.0, 200.0)}, {'tokens_per_s': 2000.0, 'readings': (200.0, 250.0)}]
    required, reference = bench_pretrain.shape_figures(runs, 2e8, 1e8)
    assert required.values == pytest.approx((2 / 3, 0.8)) and reference.values == pytest.approx((4 / 3, 1.6))
    assert required.readings == ((300.0, 200.0), (200.0, 250.0))


def test_a_profile_prints_the_table_of_its_median_run_and_writes_every_run(tmp_path, capsys):
    profiling = benchmark_module('profiling')
    shares_ = [0.5, 0.7, 0.6]  # required shares of runs 1-3: the median is run 3's

    def run_shape(a, shape, round_):
        return {'ms': {'step': 100.0}, 'flops': {'total': shares_[round_] * 100e9}, 'rates': [1000.0, 900.0],
                'roofline': None, 'ops': [], 'round': round_}
    a = type('Args', (), {'repeats': 3, 'json_out': str(tmp_path / 'p.json'), 'threads': 2})()
    profiling.profile_shapes(a, [('small', 32)], run_shape, lambda shape: f'{shape[0]}, {shape[1]} rows', 'step',
                             lambda shape, r: [{'run': r['round'] + 1}], {'commit': 'abc1234'})
    out = capsys.readouterr().out
    assert 'the table\'s run is run 3 of 3' in out and '|   3 |' in out
    assert 'small, 32 rows: share of required floor: 60.0% (median of 3: 50.0, 70.0, 60.0;' in out
    data = json.loads((tmp_path / 'p.json').read_text())
    assert sorted(data['results']) == ['small, 32 rows, run 1', 'small, 32 rows, run 2', 'small, 32 rows, run 3']
    assert data['figures']['small, 32 rows'][0]['values'] == pytest.approx([0.5, 0.7, 0.6])


def test_a_ratio_figure_pairs_runs_by_round_and_keeps_its_unit_in_the_json_file(tmp_path):
    ratio = shares.round_ratio_figure('x library', [120.0, 100.0, 150.0], [100.0, 50.0, 80.0], 'the library')
    assert ratio.line() == ("x library: 1.88x (median of 3: 1.20, 2.00, 1.88; each against the library's run of "
                            "the same round)")  # not 120 / 80, the ratio of the medians
    with pytest.raises(ValueError, match='2 runs against 3'):
        shares.round_ratio_figure('x library', [1.0, 2.0], [1.0, 1.0, 1.0], 'the library')
    speed = shares.rate_figure('tokens/s per GFLOP/s', [4.5, 5.0, 4.0], READINGS, unit='')
    assert speed.line().startswith('tokens/s per GFLOP/s: 4.50 (median of 3: 4.50, 5.00, 4.00; each against')
    path = tmp_path / 'figures.json'
    shares.write_json(str(path), {'int8': [ratio, speed], 'share': [figure()]}, {'commit': 'abc1234'})
    assert shares.read_figures(str(path)) == {'int8': [ratio, speed], 'share': [figure()]}
    data = json.loads(path.read_text())
    del data['figures']['share'][0]['unit']  # a file written before figures had units: shares
    path.write_text(json.dumps(data))
    assert shares.read_figures(str(path))['share'] == [figure()]
