"""Paired comparison of classifier rows on the same folds: each row against the first.

    python benchmarks/compare_folds.py word2vec.json elmo.json concat.json
    python benchmarks/compare_folds.py RUN/downstream/results.jsonl:word2vec:13079 RUN/downstream/elmo-13079.json

A row is an --output_json of run_finetune.py / word2vec_base.py, or a row of a bench_downstream
results.jsonl named FILE:METHOD:STEP. Every row must come from the same --folds and --seed (the
folds are checked by count only: the scripts record the split in their args, compared here too).
Prints accuracy, the mean paired difference in points ± the corrected test's standard error and
its corrected 95% interval (an equivalence claim needs the whole interval inside its margin), the
folds where the row is better, and three two-sided p-values: the corrected resampled t-test (Nadeau & Bengio
2003, the headline: the folds share most of their training data, which the plain test ignores),
the plain paired t-test and Wilcoxon's signed-rank test. The corrected test needs n_test/n_train
of one fold: from the rows' recorded --folds and --dev_fraction (result .json files; results.jsonl
rows that record test_train_ratio), else --test_train_ratio.
"""
import argparse
import json
import os
import sys

import markdown_tables
import paired_folds
from paddle_elmo.fileio import InputError, require_package


def read_row(spec):
    """A row named on the command line.

    # Parameters

    spec : `str`
        A result .json file, or RESULTS.jsonl:METHOD:STEP.

    # Returns

    `Tuple[str, dict, Optional[tuple]]`
        Label, the row (its fold_accuracies, and what it records of its split: see
        paired_folds.recorded_test_train_ratio), and (folds, seed) when recorded.
    """
    path, _, selector = spec.partition(':')
    if not os.path.isfile(path):
        sys.exit(f'error: {path}: no such file')
    if not selector:
        with open(path, encoding='utf-8') as f:
            result = json.load(f)
        args = result.get('args', {})
        return os.path.basename(path), result, (args.get('folds'), args.get('seed'))
    method, _, step = selector.partition(':')
    with open(path, encoding='utf-8') as f:
        for line in f:
            row = json.loads(line) if line.strip() else None
            if row and row['method'] == method and str(row['step']) == step:
                return f'{method}@{step}', row, None
    sys.exit(f'error: {path} has no row of method {method!r} at step {step!r}')


def _p(value):
    return None if value is None else ('<0.0001' if value < 1e-4 else f'{value:.4f}')


COLUMNS = ['row', 'accuracy', 'diff ± corrected se (points)', 'corrected 95% interval', 'better', 'corrected t p', 'plain t p', 'Wilcoxon p', 'n_test/n_train']


def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument('rows', nargs='+', help='BASELINE ROW [ROW ...]: result .json files or RESULTS.jsonl:METHOD:STEP')
    p.add_argument('--test_train_ratio', type=float, default=paired_folds.PROTOCOL_TEST_TRAIN_RATIO,
                   help='n_test / n_train of one fold for the corrected t-test, when neither row records its '
                   'split (default: the protocol\'s 10 folds with a 0.1 dev split: 1 / (9 x 0.9))')
    a = p.parse_args()
    if len(a.rows) < 2:
        p.error('give a baseline and at least one row to compare with it')
    try:
        require_package('scipy.stats', 'classify')  # the tests' p-values (scipy comes with scikit-learn)
    except InputError as e:
        sys.exit(f'error: {e}')
    base_label, base_row, base_split = read_row(a.rows[0])
    base = base_row['fold_accuracies']
    table = [{'row': base_label, 'accuracy': f'{sum(base) / len(base):.4f}'}]
    for spec in a.rows[1:]:
        label, row, split = read_row(spec)
        accuracies = row['fold_accuracies']
        if len(accuracies) != len(base) or (split and base_split and split != base_split):
            sys.exit(f'error: {spec} ({len(accuracies)} folds, folds/seed {split}) is not on the folds of '
                     f'{a.rows[0]} ({len(base)} folds, folds/seed {base_split})')
        ratio = paired_folds.comparison_test_train_ratio((row, base_row), a.test_train_ratio)
        c = paired_folds.paired(accuracies, base, ratio)
        table.append({'row': label, 'accuracy': f'{sum(accuracies) / len(accuracies):.4f}',
                      'diff ± corrected se (points)': f'{100 * c.mean:+.2f} ± {100 * c.corrected_se:.2f}',
                      'corrected 95% interval': f'{100 * (c.mean - c.half_width_95):+.2f} to '
                                                f'{100 * (c.mean + c.half_width_95):+.2f}',
                      'better': f'{c.better}/{len(base)}',
                      'corrected t p': _p(c.corrected_p), 'plain t p': _p(c.plain_p), 'Wilcoxon p': _p(c.wilcoxon_p),
                      'n_test/n_train': f'{ratio:.4f}'})
    markdown_tables.print_table(table, COLUMNS)


if __name__ == '__main__':
    main()
