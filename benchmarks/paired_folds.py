"""Paired comparisons of two classifier rows over the same cross-validation folds: the corrected
resampled t-test (the headline p and its ±), the plain paired t-test and Wilcoxon's, and the
n_test / n_train ratio the correction needs."""
from typing import NamedTuple, Optional

# make_folds' protocol as the scripts run it: 10 folds, a tenth of each training fold kept for dev.
PROTOCOL_FOLDS, PROTOCOL_DEV_FRACTION = 10, 0.1


class PairedComparison(NamedTuple):
    """Two rows' accuracies on the same folds, compared fold by fold (see `paired`)."""
    mean: float                   # mean of a - b over the folds
    se: float                     # its plain standard error: sample std (ddof=1) / sqrt(k); nan below 2 folds
    corrected_se: float           # the corrected test's: sqrt((1/k + n_test/n_train) s^2), what a ± beside its p is
    half_width_95: float          # of the corrected 95% interval: t(0.975, k - 1) x corrected_se
    better: int                   # folds where a is better
    corrected_p: Optional[float]  # Nadeau & Bengio's corrected resampled t-test: the headline p
    plain_p: Optional[float]      # the plain paired t-test (overstates significance over CV folds)
    wilcoxon_p: Optional[float]   # Wilcoxon's signed-rank test (None when every difference is 0)


def fold_test_train_ratio(folds=PROTOCOL_FOLDS, dev_fraction=PROTOCOL_DEV_FRACTION):
    """n_test / n_train of one fold of `classifier.make_folds`, up to the rounding of fold sizes.

    A fold tests on 1/folds of the data; dev_fraction of the rest is the dev split and the
    remainder is n_train, the examples the classifier's weights are fitted on. Dev is not counted:
    it only picks the early-stopping epoch (one number per fold), and the overlap of the fitted-on
    sets is what correlates the folds' estimates (counting dev, 1/(folds-1), would give a t larger
    by 3% at 10 folds; leaving it out is the conservative choice). At the protocol's 10 folds and
    0.1 the ratio is 1/8.1 = 0.12346; the actual folds' mean ratio agrees to 1e-5, each fold's to
    1.1e-4 (rt-polarity, 10,662 sentences: test 1,066-1,067, dev 960, train 8,635-8,636;
    online_shopping, 52,703 reviews: test 5,270-5,271, dev 4,744, train 42,688-42,689).

    # Parameters

    folds : `int`, optional (default = `PROTOCOL_FOLDS`)
        The --folds of the rows (all of them, also when --run_folds ran only some).
    dev_fraction : `float`, optional (default = `PROTOCOL_DEV_FRACTION`)
        Their --dev_fraction.

    # Returns

    `Optional[float]`
        1 / ((folds - 1) * (1 - dev_fraction)); None for a single split (folds < 2), which has no
        folds to pair.
    """
    if folds < 2:
        return None
    return 1.0 / ((folds - 1) * (1.0 - dev_fraction))


PROTOCOL_TEST_TRAIN_RATIO = fold_test_train_ratio()  # 1/8.1 = 0.12346


def recorded_test_train_ratio(row):
    """n_test / n_train of one fold as a row records it, if it does.

    # Parameters

    row : `dict`
        A results.jsonl row of bench_downstream.py (its `test_train_ratio`, recorded since issue
        36) or an --output_json of run_finetune.py / word2vec_base.py (the --folds and
        --dev_fraction in its `args`).

    # Returns

    `Optional[float]`
        The ratio, or None when the row records neither.
    """
    if row.get('test_train_ratio') is not None:
        return row['test_train_ratio']
    args = row.get('args') or {}
    if args.get('folds') is None:
        return None
    return fold_test_train_ratio(args['folds'], args.get('dev_fraction', PROTOCOL_DEV_FRACTION))


def comparison_test_train_ratio(rows, default=PROTOCOL_TEST_TRAIN_RATIO):
    """n_test / n_train for comparing rows: the largest any of them records (the more conservative
    test, should their dev splits differ), else `default`.

    # Parameters

    rows : `Iterable[dict]`
        The compared rows (see `recorded_test_train_ratio`).
    default : `float`, optional (default = `PROTOCOL_TEST_TRAIN_RATIO`)
        The ratio when no row records one.

    # Returns

    `float`
    """
    return max((r for r in map(recorded_test_train_ratio, rows) if r is not None), default=default)


def resampled_t_p(diffs, test_train_ratio):
    """Two-sided p of the corrected resampled t-test of paired differences over resampled splits
    (Nadeau & Bengio 2003; Bouckaert & Frank 2004 for k-fold cross-validation).

    With k differences of mean m and sample variance s^2 (ddof=1),
    t = m / sqrt((1/k + n_test/n_train) * s^2), and p comes from Student's t with k - 1 d.f.
    The n_test/n_train term accounts for the folds sharing most of their training data, which
    makes their differences correlated; test_train_ratio = 0 is the plain paired t-test. k is the
    number of folds compared (fewer than --folds after --run_folds); the ratio is the partition's.

    # Parameters

    diffs : `Sequence[float]`
        The paired differences, one per fold (at least 2).
    test_train_ratio : `float`
        n_test / n_train of one fold (`fold_test_train_ratio`); 0 for the plain paired t-test.

    # Returns

    `float`
        The two-sided p; with all differences equal, 1.0 if they are 0, else 0.0.
    """
    from scipy import stats  # scikit-learn's dependency
    k, mean = len(diffs), sum(diffs) / len(diffs)
    se = corrected_se(diffs, test_train_ratio)
    if se == 0:
        return 1.0 if mean == 0 else 0.0
    return float(2 * stats.t.sf(abs(mean / se), k - 1))


def corrected_se(diffs, test_train_ratio):
    """The standard error of the mean paired difference under the corrected resampled t-test:
    sqrt((1/k + n_test/n_train) x s^2), s^2 the differences' sample variance (ddof=1). Beside the
    corrected p this, not the plain sqrt(s^2 / k), is the ± (1.49x the plain one at 10 folds and 1/8.1).

    # Parameters

    diffs : `Sequence[float]`
        The paired differences, one per fold (at least 2).
    test_train_ratio : `float`
        n_test / n_train of one fold; 0 gives the plain standard error.
    """
    k = len(diffs)
    mean = sum(diffs) / k
    variance = sum((d - mean) ** 2 for d in diffs) / (k - 1)
    return ((1.0 / k + test_train_ratio) * variance) ** 0.5


def paired(a, b, test_train_ratio=PROTOCOL_TEST_TRAIN_RATIO):
    """Compare two rows' per-fold accuracies on the same folds (a - b, fold by fold).

    # Parameters

    a, b : `Sequence[float]`
        The rows' accuracies, fold by fold, on the same folds.
    test_train_ratio : `float`, optional (default = `PROTOCOL_TEST_TRAIN_RATIO`, 0.12346)
        n_test / n_train of one fold, for the corrected t-test.

    # Returns

    `PairedComparison`
        Mean difference, its standard error, the folds where a is better, and the two-sided p of
        the corrected resampled t-test (the headline), of the plain paired t-test and of Wilcoxon's
        signed-rank test. The p-values are None with fewer than 2 folds.
    """
    if len(a) != len(b):
        raise ValueError(f'paired rows need the same folds, got {len(a)} and {len(b)} accuracies')
    diffs = [x - y for x, y in zip(a, b)]
    n = len(diffs)
    mean, better = sum(diffs) / n, sum(d > 0 for d in diffs)
    if n < 2:
        return PairedComparison(mean, float('nan'), float('nan'), float('nan'), better, None, None, None)
    from scipy import stats
    w_p = float(stats.wilcoxon(a, b).pvalue) if any(diffs) else None
    corrected = corrected_se(diffs, test_train_ratio)
    return PairedComparison(mean, corrected_se(diffs, 0.0), corrected, float(stats.t.ppf(0.975, n - 1)) * corrected,
                            better, resampled_t_p(diffs, test_train_ratio), resampled_t_p(diffs, 0.0), w_p)
