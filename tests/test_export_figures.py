"""benchmarks/bench_export.py's figures: each runtime runs --repeats times in rounds over the runtimes,
each run bracketed by matmul readings; "x library" is the median over the rounds of the runtime's
tokens/s over the library's of the same round (not a ratio of medians), tokens/s per GFLOP/s each run
against the higher of its two readings; the table is the median run with the largest peak memory;
the --json_out file holds every run. Checked on bench_export's own main() with its workers and
matmul readings replaced by scripted ones (no model, no timing)."""
import json
import sys

import pytest

from helpers import benchmark_module

bench_export = benchmark_module('bench_export')

# tokens/s by round. int8 against the library of the same round: 1.2, 2.0, 1.875 -> median 1.875;
# the ratio of the medians would be 120 / 80 = 1.5, and pairing the runs sorted by speed 1.5 too.
# float32: 0.9, 0.9, 0.75 -> 0.9 (ratio of medians 0.75).
TOKENS_PER_S = {'library': (100.0, 50.0, 80.0), 'onnx float32': (90.0, 45.0, 60.0),
                'onnx int8': (120.0, 100.0, 150.0)}
PEAK_MB = {'library': (1000, 1100, 1050), 'onnx float32': (1600, 1500, 1650), 'onnx int8': (1250, 1200, 1300)}
# the start reading of the benchmark, then the model's bracket: 10 readings around its 9 runs, the
# first run's start (200) higher than its end (100), and one at the end of the benchmark
READINGS = (150.0, 200.0, 100.0, 100.0, 250.0, 125.0, 125.0, 125.0, 125.0, 125.0, 125.0, 140.0)
TOKENS = 1000


class ScriptedWorkers:
    """run_measurement's stand-in: records each spec, answers as the workers would."""

    def __init__(self, tmp_path):
        self.specs, self.calls, self.tmp_path = [], {r: 0 for r in bench_export.RUNTIMES}, tmp_path

    def __call__(self, spec):
        self.specs.append(spec)
        if spec['kind'] == 'export':
            return {p: {'dir': str(self.tmp_path / p), 'onnx_mb': mb, 'verified': {'onnxruntime int8': {}}}
                    for p, mb in (('float32', 357.0), ('int8', 141.0))}
        if spec['kind'] == 'agreement':
            return {'min_cosine': [1.0, 0.999, 0.998], 'mean_cosine': [1.0, 0.9995, 0.9993],
                    'max_rel_diff': [1e-6, 0.03, 0.03]}
        runtime = spec['runtime']
        i, self.calls[runtime] = self.calls[runtime], self.calls[runtime] + 1
        seconds = TOKENS / TOKENS_PER_S[runtime][i]
        return {'tokens': TOKENS, 'sentences': 10, 'seconds': seconds, 'cpu_seconds': 2 * seconds,
                'peak_rss_mb': PEAK_MB[runtime][i], 'model_rss_mb': 500 + i}


@pytest.fixture
def scripted_run(tmp_path, monkeypatch, capsys):
    """bench_export's main() on scripted workers and readings, --repeats 3 -> (stdout, the JSON file,
    the workers' specs in call order)."""
    readings = iter(READINGS)
    workers = ScriptedWorkers(tmp_path)
    monkeypatch.setattr(bench_export, 'run_measurement', workers)
    monkeypatch.setattr(bench_export.matmul_rates, 'measure_matmul_gflops', lambda: next(readings))
    monkeypatch.setattr(bench_export.cpu_threads, 'set_threads', lambda threads: None)
    monkeypatch.setattr(bench_export.machine, 'machine_info', lambda: {'commit': 'abc1234'})
    monkeypatch.setattr(bench_export.machine, 'print_machine_info', lambda info: None)
    data = tmp_path / 'sentences.txt'
    data.write_text('A sentence .\n', encoding='utf-8')
    out = tmp_path / 'export.json'
    monkeypatch.setattr(sys, 'argv', ['bench_export.py', '--configs', 'original', '--data_file', str(data),
                                      '--repeats', '3', '--json_out', str(out)])
    assert bench_export.main() == 0
    assert next(readings, None) is None  # every reading taken: one before and after each run, shared between runs
    return capsys.readouterr().out, json.loads(out.read_text()), workers.specs


def test_runtimes_run_in_rounds_and_the_agreement_once(scripted_run):
    _, _, specs = scripted_run
    assert [s.get('runtime', s['kind']) for s in specs] == ['export'] + list(bench_export.RUNTIMES) * 3 + ['agreement']
    assert {s['dir'] for s in specs if s.get('runtime') == 'onnx int8'} == {specs[-1]['dir']}  # the int8 export


def test_x_library_is_the_median_of_ratios_paired_by_round(scripted_run):
    stdout, data, _ = scripted_run
    figures = {label: {r['what']: r for r in records} for label, records in data['figures'].items()}
    int8 = figures['original, onnx int8']['x library']
    assert int8['values'] == pytest.approx([1.2, 2.0, 1.875]) and int8['median'] == pytest.approx(1.875)
    assert figures['original, onnx float32']['x library']['median'] == pytest.approx(0.9)
    assert 'x library' not in figures['original, library']
    assert ("original, onnx int8: x library: 1.88x (median of 3: 1.20, 2.00, 1.88; each against the library's run "
            "of the same round)") in stdout.splitlines()
    rows = {r['runtime']: r for r in data['speed']}
    assert rows['onnx int8']['x library'] == pytest.approx(1.875)  # the table quotes the figure


def test_tokens_per_gflops_takes_each_run_against_the_higher_of_its_own_readings(scripted_run):
    _, data, _ = scripted_run
    runs = data['runs']
    in_order = [runs[f'original, {runtime}'][round_] for round_ in range(3) for runtime in bench_export.RUNTIMES]
    assert [tuple(r['readings']) for r in in_order] == list(zip(READINGS[1:10], READINGS[2:11]))
    per_rate = {label: {r['what']: r for r in records}['tokens/s per GFLOP/s']['values']
                for label, records in data['figures'].items()}
    assert per_rate['original, library'][0] == pytest.approx(100 / 200)  # the start reading: the higher one
    assert per_rate['original, onnx int8'][0] == pytest.approx(120 / 250)  # the end reading
    assert per_rate['original, onnx float32'] == pytest.approx([90 / 100, 45 / 125, 60 / 125])


def test_the_table_is_the_median_run_with_the_largest_peak_and_the_json_holds_every_run(scripted_run):
    stdout, data, _ = scripted_run
    rows = {r['runtime']: r for r in data['speed']}
    assert rows['library']['tokens/s'] == pytest.approx(80) and rows['library']['run'] == '3 of 3'
    assert rows['library']['MB after load'] == 502 and rows['library']['peak MB'] == 1100  # the largest, run 2's
    assert rows['onnx int8']['tokens/s'] == pytest.approx(120) and rows['onnx int8']['run'] == '1 of 3'
    assert rows['onnx int8']['model.onnx MB'] == 141.0
    assert [r['round'] for r in data['runs']['original, onnx int8']] == [1, 2, 3]
    assert [r['peak_rss_mb'] for r in data['runs']['original, onnx float32']] == list(PEAK_MB['onnx float32'])
    assert data['matmul_gflops'] == READINGS[0] and data['matmul_gflops_end'] == READINGS[-1]
    assert ('original, library: tokens/s: 80.00 (median of 3: 100.00, 50.00, 80.00; each as its run measured '
            'it)') in stdout
    assert 'original onnx int8, run 2/3 ... 100 tokens/s, 10.0 s; matmul 125.0 GFLOP/s before, 125.0 after' in stdout


def test_repeats_below_one_is_a_one_line_error(capsys):
    with pytest.raises(bench_export.InputError, match='--repeats must be >= 1'):
        bench_export.parse_args(['--repeats', '0'])
