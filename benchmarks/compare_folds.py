"""Paired comparison of classifier rows on the same folds: each row against the first.

    python benchmarks/compare_folds.py word2vec.json elmo.json concat.json
    python benchmarks/compare_folds.py RUN/downstream/results.jsonl:word2vec:13079 RUN/downstream/elmo-13079.json

A row is an --output_json of run_finetune.py / word2vec_base.py, or a row of a bench_downstream
results.jsonl named FILE:METHOD:STEP. Every row must come from the same --folds and --seed (the
folds are checked by count only: the scripts record the split in their args, compared here too).
Prints accuracy, the mean paired difference in points with its standard error, the folds where
the row is better, and the two-sided p of the paired t-test and of Wilcoxon's signed-rank test.
"""
import argparse
import json
import os
import sys

import common


def read_row(spec):
    """-> (label, fold accuracies, (folds, seed) or None)."""
    path, _, selector = spec.partition(':')
    if not os.path.isfile(path):
        sys.exit(f'error: {path}: no such file')
    if not selector:
        with open(path, encoding='utf-8') as f:
            result = json.load(f)
        args = result.get('args', {})
        return os.path.basename(path), result['fold_accuracies'], (args.get('folds'), args.get('seed'))
    method, _, step = selector.partition(':')
    with open(path, encoding='utf-8') as f:
        for line in f:
            row = json.loads(line) if line.strip() else None
            if row and row['method'] == method and str(row['step']) == step:
                return f'{method}@{step}', row['fold_accuracies'], None
    sys.exit(f'error: {path} has no row of method {method!r} at step {step!r}')


def _p(value):
    return None if value is None else ('<0.0001' if value < 1e-4 else f'{value:.4f}')


def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('rows', nargs='+', help='BASELINE ROW [ROW ...]: result .json files or RESULTS.jsonl:METHOD:STEP')
    a = p.parse_args()
    if len(a.rows) < 2:
        p.error('give a baseline and at least one row to compare with it')
    base_label, base, base_split = read_row(a.rows[0])
    table = [{'row': base_label, 'accuracy': f'{sum(base) / len(base):.4f}'}]
    for spec in a.rows[1:]:
        label, accuracies, split = read_row(spec)
        if len(accuracies) != len(base) or (split and base_split and split != base_split):
            sys.exit(f'error: {spec} ({len(accuracies)} folds, folds/seed {split}) is not on the folds of '
                     f'{a.rows[0]} ({len(base)} folds, folds/seed {base_split})')
        mean, se, better, t_p, w_p = common.paired(accuracies, base)
        table.append({'row': label, 'accuracy': f'{sum(accuracies) / len(accuracies):.4f}',
                      'diff (points)': f'{100 * mean:+.2f} ± {100 * se:.2f}', 'better': f'{better}/{len(base)}',
                      't p': _p(t_p), 'Wilcoxon p': _p(w_p)})
    common.print_table(table, ['row', 'accuracy', 'diff (points)', 'better', 't p', 'Wilcoxon p'])


if __name__ == '__main__':
    main()
