"""Paired comparisons of classifier rows over cross-validation folds (benchmarks/paired_folds.paired and
the scripts that print them: compare_folds.py, bench_downstream.py's curve)."""
import csv
import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import ROOT
from benchmarks.paired_folds import (PROTOCOL_TEST_TRAIN_RATIO, comparison_test_train_ratio, fold_test_train_ratio,
                               paired, resampled_t_p)

COMPARE = os.path.join(ROOT, 'benchmarks', 'compare_folds.py')

# A constructed case: 10 folds, row a = row b + these differences (points / 100).
BASE = [0.75, 0.76, 0.74, 0.77, 0.75, 0.76, 0.78, 0.74, 0.75, 0.76]
DIFFS = [0.010, 0.006, 0.012, -0.002, 0.008, 0.004, 0.010, 0.000, 0.006, 0.006]


def t_corrected_by_hand():
    return 0.006 / math.sqrt((1 / 10 + 1 / 8.1) * 176e-6 / 9)


def test_corrected_resampled_t_test_against_a_hand_computation():
    from scipy import stats  # here, not at the top: scipy.stats is slow to import and only two tests need it
    # By hand, k = 10:
    #   mean m = 0.060 / 10 = 0.006
    #   deviations from m (x 1e-3): 4, 0, 6, -8, 2, -2, 4, -6, 0, 0; squares sum to 176e-6
    #   s^2 = 176e-6 / 9 = 19.5556e-6 (ddof = 1); se = sqrt(s^2 / 10) = 0.0013984
    #   n_test / n_train = 1 / (9 x 0.9) = 0.123457 (10 folds, a 0.1 dev split out of training)
    #   corrected t = m / sqrt((1/10 + 0.123457) x s^2) = 0.006 / sqrt(4.36983e-6) = 0.006 / 0.00209041 = 2.8703
    #   plain t     = m / sqrt(s^2 / 10) = 0.006 / 0.0013984 = 4.2906
    #   two-sided p, Student's t with 9 d.f.: corrected 0.01847, plain 0.00202 (scipy.stats.t)
    #   Wilcoxon: the 0 is dropped; of 9 differences the one negative (-0.002) has the smallest |d|,
    #   rank 1, so W- = 1; exact two-sided p = 2 x P(W <= 1) = 2 x 2 / 2^9 = 0.0078125
    a = [b + d for b, d in zip(BASE, DIFFS)]
    c = paired(a, BASE, 1 / 8.1)
    assert c.mean == pytest.approx(0.006) and c.better == 8
    assert c.se == pytest.approx(math.sqrt(176e-6 / 9 / 10))
    # the ± beside the corrected p: sqrt((1/10 + 1/8.1) x s^2) = 0.0020904, 1.495x the plain 0.0013984
    assert c.corrected_se == pytest.approx(0.00209041, abs=1e-8) == pytest.approx(0.006 / t_corrected_by_hand())
    assert c.half_width_95 == pytest.approx(stats.t.ppf(0.975, 9) * 0.00209041, abs=1e-8)
    t_corrected = 0.006 / math.sqrt((1 / 10 + 1 / 8.1) * 176e-6 / 9)
    t_plain = 0.006 / math.sqrt(176e-6 / 9 / 10)
    assert t_corrected == pytest.approx(2.8703, abs=1e-4) and t_plain == pytest.approx(4.2906, abs=1e-4)
    assert c.corrected_p == pytest.approx(2 * stats.t.sf(t_corrected, 9)) == pytest.approx(0.01847, abs=1e-5)
    assert c.plain_p == pytest.approx(2 * stats.t.sf(t_plain, 9)) == pytest.approx(0.00202, abs=1e-5)
    assert c.plain_p == pytest.approx(stats.ttest_rel(a, BASE).pvalue)
    assert c.wilcoxon_p == pytest.approx(0.0078125)
    assert c.corrected_p >= c.plain_p
    assert paired(a, BASE) == c  # the default ratio is the protocol's 1/8.1


def test_the_corrected_p_is_never_below_the_plain_one_and_grows_with_the_ratio():
    rng = np.random.default_rng(0)
    for _ in range(20):
        base = rng.uniform(0.7, 0.8, 10)
        a = base + rng.normal(0.003, 0.005, 10)
        c = paired(list(a), list(base))
        assert c.corrected_p >= c.plain_p
        diffs = list(a - base)
        assert resampled_t_p(diffs, 0.0) == pytest.approx(c.plain_p)
        assert resampled_t_p(diffs, 1 / 9) <= c.corrected_p <= resampled_t_p(diffs, 0.5)
    assert resampled_t_p([0.0, 0.0, 0.0], PROTOCOL_TEST_TRAIN_RATIO) == 1.0
    assert resampled_t_p([0.01, 0.01, 0.01], PROTOCOL_TEST_TRAIN_RATIO) == 0.0


def test_the_ratio_is_that_of_the_folds_make_folds_draws():
    from paddle_elmo.classify.data import make_folds
    assert fold_test_train_ratio() == pytest.approx(1 / 8.1) == pytest.approx(PROTOCOL_TEST_TRAIN_RATIO)
    assert fold_test_train_ratio(1) is None
    for pos, neg in ((5331, 5331), (26686, 26017)):  # rt-polarity, online_shopping
        folds = make_folds(np.array([1] * pos + [0] * neg), 10, 1, 0.1)
        ratios = [len(f.test) / len(f.train) for f in folds]  # train excludes dev: see fold_test_train_ratio
        assert np.mean(ratios) == pytest.approx(1 / 8.1, abs=1e-5)  # each fold: 1066-1067 / 8635-8636 ...
        assert max(abs(r - 1 / 8.1) for r in ratios) < 2e-4
    recorded = {'args': {'folds': 5, 'dev_fraction': 0.2}}
    assert comparison_test_train_ratio([{}, {}]) == PROTOCOL_TEST_TRAIN_RATIO
    assert comparison_test_train_ratio([recorded, {}]) == pytest.approx(1 / (4 * 0.8))
    assert comparison_test_train_ratio([{'test_train_ratio': 0.2}, {'test_train_ratio': 0.3}]) == 0.3


def test_paired_comparison_of_fold_accuracies_and_its_script(tmp_path):
    from scipy import stats
    c = paired([0.8, 0.7, 0.9, 0.6], [0.7, 0.7, 0.8, 0.7])
    assert c.mean == pytest.approx(0.025) and c.better == 2
    assert c.se == pytest.approx(np.std([0.1, 0.0, 0.1, -0.1], ddof=1) / 2)
    assert c.plain_p == pytest.approx(0.6376, abs=1e-4) and 0 < c.wilcoxon_p <= 1  # t = 0.025 / se = 0.52, 3 d.f.
    assert c.corrected_p >= c.plain_p
    with pytest.raises(ValueError, match='same folds'):
        paired([0.8], [0.7, 0.6])
    base, row, short = tmp_path / 'base.json', tmp_path / 'row.json', tmp_path / 'short.json'
    base.write_text(json.dumps({'fold_accuracies': [0.7, 0.7, 0.8, 0.7], 'args': {'folds': 4, 'seed': 1}}))
    row.write_text(json.dumps({'fold_accuracies': [0.8, 0.7, 0.9, 0.6], 'args': {'folds': 4, 'seed': 1}}))
    short.write_text(json.dumps({'fold_accuracies': [0.8, 0.7], 'args': {'folds': 2, 'seed': 1}}))
    ok = subprocess.run([sys.executable, COMPARE, str(base), str(row)], capture_output=True, text=True)
    # the corrected se: sqrt((1/4 + 1/2.7) x s^2), s = 0.0957: 7.54 points, not the plain 4.79
    corrected = np.std([0.1, 0.0, 0.1, -0.1], ddof=1) * math.sqrt(1 / 4 + 1 / 2.7)
    assert ok.returncode == 0 and f'+2.50 ± {100 * corrected:.2f}' in ok.stdout and '2/4' in ok.stdout, ok.stderr
    assert '± 4.79' not in ok.stdout
    half = stats.t.ppf(0.975, 3) * corrected
    assert f'{100 * (0.025 - half):+.2f} to {100 * (0.025 + half):+.2f}' in ok.stdout
    # 4 folds, dev 0.1 (the default when args do not record it): n_test/n_train = 1 / (3 x 0.9)
    expected = paired([0.8, 0.7, 0.9, 0.6], [0.7, 0.7, 0.8, 0.7], 1 / 2.7)
    assert f'{expected.corrected_p:.4f}' in ok.stdout and '0.3704' in ok.stdout and '0.6376' in ok.stdout
    bad = subprocess.run([sys.executable, COMPARE, str(base), str(short)], capture_output=True, text=True)
    assert bad.returncode == 1 and 'is not on the folds of' in bad.stderr


def test_compare_folds_prints_the_corrected_p_as_its_headline(tmp_path):
    results = tmp_path / 'results.jsonl'
    a = [b + d for b, d in zip(BASE, DIFFS)]
    results.write_text(json.dumps({'method': 'word2vec', 'step': 1, 'fold_accuracies': BASE}) + '\n' +
                       json.dumps({'method': 'concat', 'step': 1, 'fold_accuracies': a}) + '\n')
    proc = subprocess.run([sys.executable, COMPARE, f'{results}:word2vec:1', f'{results}:concat:1'],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    header, _, base_line, row_line = proc.stdout.splitlines()[:4]
    columns = [c.strip() for c in header.strip('|').split('|')]
    assert columns[5:9] == ['corrected t p', 'plain t p', 'Wilcoxon p', 'n_test/n_train']
    cells = [c.strip() for c in row_line.strip('|').split('|')]
    assert cells[5:9] == ['0.0185', '0.0020', '0.0078', '0.1235']  # the hand computation above
    given = subprocess.run([sys.executable, COMPARE, f'{results}:word2vec:1', f'{results}:concat:1',
                            '--test_train_ratio', str(1 / 9)], capture_output=True, text=True)
    assert given.returncode == 0 and '0.1111' in given.stdout, given.stderr


def test_the_downstream_curve_has_the_three_p_values(tmp_path):
    from benchmarks.bench_downstream import write_curve
    a = [b + d for b, d in zip(BASE, DIFFS)]
    rows = [{'method': m, 'step': 1, 'tokens': 10, 'accuracy_mean': float(np.mean(acc)),
             'accuracy_std': float(np.std(acc)), 'fold_accuracies': acc}
            for m, acc in (('word2vec', BASE), ('elmo+word2vec', a))]
    write_curve(rows, str(tmp_path), {}, 'rt-polarity')
    with open(tmp_path / 'curve.csv', newline='') as f:
        table = {r['method']: r for r in csv.DictReader(f)}
    assert table['word2vec']['corrected_t_p'] == ''
    row = table['elmo+word2vec']
    assert (row['corrected_t_p'], row['plain_t_p'], row['wilcoxon_p']) == ('0.0185', '0.002', '0.0078')
    rows[1]['test_train_ratio'] = 0.5  # a row's own record wins over the default
    write_curve(rows, str(tmp_path), {}, 'rt-polarity')
    with open(tmp_path / 'curve.csv', newline='') as f:
        row = {r['method']: r for r in csv.DictReader(f)}['elmo+word2vec']
    assert float(row['corrected_t_p']) == pytest.approx(resampled_t_p(DIFFS, 0.5), abs=1e-4)
