"""Shares of a floor, computed the same way by every benchmark: a figure is the median of N runs
(N and every run's value printed), each run divided by the higher of the float32 [4096]^2 matmul
readings taken at its start and at its end.

Why: the machine's rate drifts while a run goes on (a shared VM's by a fifth within minutes), so a
figure computed against one reading depends on when that reading was taken; the higher of the two
readings around a run is the closer to what the machine could do during it, and never credits a
run for the machine having slowed down. One run can be lucky or unlucky; the median of N, with the
values beside it, says how much that matters. A roofline share (its floor timed in the run's own
process, at the run's shapes, just before and just after the run, each shape's faster timing kept:
roofline.fastest, the same rule) is a median of N runs in the same way.
"""
import json
import statistics
from typing import Dict, NamedTuple, Sequence, Tuple

DEFAULT_REPEATS = 3
AGAINST_RATE = 'each against the higher of its start/end matmul reading'
AGAINST_ROOFLINE = 'each against the roofline timed before and after it in its own process, the faster kept'
AS_MEASURED = 'each as its run measured it'


def reference_rate(readings):
    """The rate (GFLOP/s) a run's floor is counted at: the higher of its start and end readings."""
    return max(readings)


def share_of_floor(flops, seconds, readings):
    """One run's share of its floor: the time `flops` take at reference_rate(readings), over the
    run's `seconds` (the same FLOPs and seconds per token, per step or for the whole run)."""
    return flops / (reference_rate(readings) * 1e9) / seconds


class Figure(NamedTuple):
    """A robust figure: one value per run (in run order) and how each was computed."""
    what: str                                 # e.g. 'share of required floor'
    values: Tuple[float, ...]                 # one per run
    readings: Tuple[Tuple[float, ...], ...]   # each run's (start, end) matmul GFLOP/s; () for a roofline share
    against: str = AGAINST_RATE
    unit: str = '%'                           # '%': a share, printed in percent; 'x': a ratio; '': a number

    @property
    def median(self):
        return statistics.median(self.values)

    def shown(self, value):
        """One value as the line prints it: a share in percent, a ratio to 2 decimals, a number to 2
        decimals or, when the median is 100 or more, whole (the same for every value of the line)."""
        if self.unit == '%':
            return f'{100 * value:.1f}'
        return f'{value:.2f}' if self.unit == 'x' or abs(self.median) < 100 else f'{value:.0f}'

    def line(self):
        """`share of required floor: 64.2% (median of 3: 63.8, 64.2, 65.0; each against ...)`."""
        values = ', '.join(self.shown(v) for v in self.values)
        return (f'{self.what}: {self.shown(self.median)}{self.unit} (median of {len(self.values)}: {values}; '
                f'{self.against})')

    def record(self):
        """The figure as JSON: the median, N, the values, the readings, the rule and the unit."""
        return {'what': self.what, 'median': self.median, 'n': len(self.values), 'values': list(self.values),
                'matmul_readings': [list(r) for r in self.readings], 'against': self.against, 'unit': self.unit}


def rate_figure(what, values, readings, unit='%'):
    """A share against the matmul rate: `values` computed with share_of_floor from `readings` (or, with
    unit '', another quantity divided by reference_rate(readings), e.g. tokens/s per GFLOP/s)."""
    return Figure(what, tuple(values), tuple(tuple(r) for r in readings), AGAINST_RATE, unit)


def round_ratio_figure(what, values, baselines, baseline_name):
    """Ratios paired by round: each run's value over the value of `baseline_name`'s run in the same
    round of in_rounds (values and baselines in round order). Two runs of a round ran minutes apart,
    so the machine's drift falls on both alike and mostly cancels in their ratio, which a ratio of the
    two medians (runs of different rounds) would not."""
    if len(values) != len(baselines):
        raise ValueError(f'{what}: {len(values)} runs against {len(baselines)} of {baseline_name}')
    return Figure(what, tuple(v / b for v, b in zip(values, baselines)), (),
                  f"each against {baseline_name}'s run of the same round", 'x')


def roofline_figure(what, values):
    """A share of a roofline floor measured in each run's own process."""
    return Figure(what, tuple(values), (), AGAINST_ROOFLINE)


def median_run(values):
    """The index of the run whose value is the median (the lower middle one for an even N): the run
    whose table a benchmark prints beside the figure."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    return order[(len(values) - 1) // 2]


class Bracket:
    """Matmul readings between consecutive runs of one process: each run is bracketed by the reading
    taken just before it and the one just after (which is also the next run's start reading).

    # Parameters

    measure : `Callable[[], float]`
        Takes one reading, in GFLOP/s (matmul_rates.measure_matmul_gflops with the run's size).
    first : `float`, optional (default = `None`)
        A reading just taken (the first run's start); None: the first run takes its own.
    """

    def __init__(self, measure, first=None):
        self.measure, self.last = measure, first

    def run(self, fn):
        """fn() bracketed -> (its result, (start reading, end reading))."""
        start = self.measure() if self.last is None else self.last
        out = fn()
        self.last = self.measure()
        return out, (start, self.last)


def in_rounds(shapes, repeats, run_one):
    """Run each shape `repeats` times, in rounds over the shapes (so that drift falls on all of them
    alike) -> {shape: [run_one(shape, round) for each round]}."""
    runs = {shape: [] for shape in shapes}
    for round_ in range(repeats):
        for shape in shapes:
            runs[shape].append(run_one(shape, round_))
    return runs


def profile_figures(runs, whole):
    """A profile's figures over its runs (profile_pretrain's and profile_embed's worker results: each
    with 'ms', 'flops' per step or batch, 'rates' (start, end) and 'roofline' ({part: summary}, or
    None); whole: the key of the step's or batch's ms) -> [required figure, roofline figure (when
    the runs measured one)]."""
    times = [r['ms'][whole] / 1000 for r in runs]
    out = [rate_figure('share of required floor',
                       [share_of_floor(r['flops']['total'], t, r['rates']) for r, t in zip(runs, times)],
                       [r['rates'] for r in runs])]
    if all(r['roofline'] for r in runs):
        out.append(roofline_figure('share of roofline floor',
                                   [sum(s['roofline ms'] for s in r['roofline'].values()) / 1000 / t
                                    for r, t in zip(runs, times)]))
    return out


def add_flags(parser, json_aliases=()):
    """--repeats and --json_out, the flags of every benchmark that prints a share (json_aliases: older
    names of --json_out that keep working)."""
    parser.add_argument('--repeats', type=int, default=DEFAULT_REPEATS,
                        help='runs of each configuration and batch size (in rounds over them); each share printed '
                             'is the median of these runs, each run divided by the higher of the matmul readings '
                             'at its start and end (N and every value printed)')
    parser.add_argument('--json_out', *json_aliases, dest='json_out',
                        help='also write the figures (median, N, values, matmul readings), the commit, the machine '
                             'and the raw results to this JSON file')


def print_figures(figures: Dict[str, Sequence[Figure]]):
    """Each label's figures, one line each: `LABEL: share of ...: 64.2% (median of 3: ...)`."""
    for label, figs in figures.items():
        for figure in figs:
            print(f'{label}: {figure.line()}')


def write_json(path, figures: Dict[str, Sequence[Figure]], machine_info=None, **facts):
    """Write the figures machine-readably (so that a test can check a document's figure against the
    file) with the commit, the machine's facts and `facts` (the raw results)."""
    import machine
    from paddle_elmo.fileio import write_json_atomic
    info = machine_info or machine.machine_info()
    write_json_atomic({'commit': info['commit'], 'machine': info,
                       'figures': {label: [f.record() for f in figs] for label, figs in figures.items()},
                       **facts}, path)


def read_figures(path):
    """A --json_out file -> {label: [Figure]}, as written."""
    with open(path, encoding='utf-8') as f:
        data = json.load(f)
    return {label: [Figure(r['what'], tuple(r['values']), tuple(tuple(x) for x in r['matmul_readings']),
                           r['against'], r.get('unit', '%')) for r in records]
            for label, records in data['figures'].items()}
