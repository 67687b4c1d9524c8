"""Shared measuring tools for the benchmarks: threads, the float32 matmul rate, FLOPs per token of
a configuration, peak memory, machine facts, isolated worker runs and Markdown tables.

The arithmetic floor of a run is `flops_per_token(options) / measure_matmul_gflops()`: the time
per token if every matrix product of the model ran at the speed of one large square matmul on
this machine. Elementwise work (sigmoid, tanh, clipping, the max-pool) is not counted, so a real
run is always slower than its floor unless it skips arithmetic the reference does.
"""
import datetime
import json
import os
import platform
import resource
import subprocess
import sys
import time
from typing import NamedTuple, Optional

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.abspath(os.path.join(ROOT, '..', 'shared'))

THREAD_ENV = ('OMP_NUM_THREADS', 'MKL_NUM_THREADS', 'OPENBLAS_NUM_THREADS')


# --------------------------------------------------------------------------------------------
# Threads
# --------------------------------------------------------------------------------------------

def thread_env(threads):
    """Environment variables that fix the CPU thread count; must be set before paddle is imported."""
    return {name: str(threads) for name in THREAD_ENV}


def set_threads(threads):
    """Use `threads` CPU threads in this process and MKL's fast path, as the scripts do (runtime.configure:
    MKL_DEBUG_CPU_TYPE=7 or 5 on AMD unless set; MKL_DEBUG_CPU_TYPE=0 in the environment measures the
    slow path); the environment too, for BLAS libraries that read it at load time and for child
    processes. -> runtime.configure's one-line summary."""
    os.environ.update(thread_env(threads))
    from paddle_elmo import runtime
    return runtime.configure(threads)


# --------------------------------------------------------------------------------------------
# Speed of the machine
# --------------------------------------------------------------------------------------------

def _synchronize():
    import paddle
    if paddle.device.get_device().startswith('gpu'):
        paddle.device.synchronize()


def measure_matmul_gflops(n=4096, seconds=3.0):
    """float32 GFLOP/s of Paddle's [n, n] x [n, n] matmul on the current device (best round).

    The best of repeated single products is the machine's rate; the median would mostly measure
    whatever else is running. One product is 2 * n^3 FLOPs.
    """
    import paddle
    a = paddle.randn([n, n], dtype='float32')
    b = paddle.randn([n, n], dtype='float32')
    paddle.matmul(a, b)  # warm-up: thread pool, page faults of the output
    _synchronize()
    best, start = 0.0, time.perf_counter()
    while True:
        t = time.perf_counter()
        paddle.matmul(a, b)
        _synchronize()
        best = max(best, 2.0 * n ** 3 / (time.perf_counter() - t) / 1e9)
        if time.perf_counter() - start >= seconds:
            return best


def measure_numpy_gflops(n=4096, seconds=3.0):
    """float32 GFLOP/s of NumPy's [n, n] x [n, n] product (its BLAS, usually OpenBLAS, on the
    threads it chose): what this processor does with a BLAS that knows it, beside Paddle's rate."""
    import numpy as np
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((n, n), dtype=np.float32), rng.standard_normal((n, n), dtype=np.float32)
    a @ b
    best, start = 0.0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        t = time.perf_counter()
        a @ b
        best = max(best, 2.0 * n ** 3 / (time.perf_counter() - t) / 1e9)
    return best


def time_calls(owner, method, seconds, part):
    """Replace owner.method by a call that adds its seconds to seconds[part] -> the original method."""
    inner = getattr(owner, method)

    def timed(*args, **kwargs):
        start = time.perf_counter()
        out = inner(*args, **kwargs)
        seconds[part] += time.perf_counter() - start
        return out
    setattr(owner, method, timed)
    return inner


def report_profiles(results, out, **facts):
    """The profile scripts' ending: each configuration's operator table (when --ops asked for one),
    then, with `out`, the results and the machine (and `facts`) as JSON."""
    for name, r in results.items():
        if r['ops']:
            print(f'\n{name}: operators by CPU time (Paddle profiler, a second pass)')
            print_table(r['ops'])
    if out:
        from paddle_elmo.fileio import write_json_atomic
        write_json_atomic({'machine': machine_info(), **facts, 'results': results}, out)


def operator_table(run, per, top, unit='step'):
    """run() under Paddle's profiler -> its `top` operators by CPU time, as rows of ms and calls per
    `unit` (`per` of them in the run). Its traces are not written (they are ~20 MB a step)."""
    import contextlib
    import io
    import paddle.profiler as profiler
    prof = profiler.Profiler(targets=[profiler.ProfilerTarget.CPU], on_trace_ready=lambda _: None)
    prof.start()
    run()
    prof.stop()
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        prof.summary(sorted_by=profiler.SortedKeys.CPUTotal, op_detail=False, thread_sep=False, time_unit='ms')
    rows, in_ops = [], False
    for line in text.getvalue().splitlines():
        in_ops = in_ops or 'Operator Summary' in line
        fields = line.split()
        named = 2 if 'dygraph' in line else 1  # "matmul dygraph 53 87.0 / ..." or "Global_MatmulGradNode 45 ..."
        if in_ops and len(fields) > named + 2 and fields[named].isdigit() and fields[named + 2] == '/':
            rows.append({'operator': ' '.join(fields[:named]), f'calls/{unit}': int(fields[named]) / per,
                         f'ms/{unit}': float(fields[named + 1]) / per})
    return rows[:top]


# --------------------------------------------------------------------------------------------
# FLOPs of a configuration
# --------------------------------------------------------------------------------------------

def flops_breakdown(config, *, training=False, vocab_size=None, n_negative_samples=None,
                    cached_char_cnn=False):
    """FLOPs per token by part, counting 2 * m * n * k per matrix product.

    Forward, per token (config: a ModelConfig; F = total filters, P = projection_dim,
    D = cell_dim, C = char_embed_dim, M = max_characters_per_token):
      char_cnn   sum over filters (width w, n filters) of 2 * (M - w + 1) * w * C * n
                 (all M positions, PAD included, as the reference convolves them)
      highway    n_highway * 2 * (2 * F * F)          (carry and transform products)
      projection 2 * F * P
      lstm       per layer and direction: 2 * (P + P) * 4D (input and previous h to the gates)
                 + 2 * D * P (the projection); times n_layers, times 2 directions
      softmax    training only, per direction: 2 * P * (n_negative_samples + 1) with a sampled
                 softmax (shared negatives plus the true word), else 2 * P * vocab_size
    cached_char_cnn: the token representations come from a cache (char CNN, highway and
    projection cost nothing). training: forward + backward ~= 3x the forward products; the char
    CNN is counted once per token (the reversed stream holds the same tokens; bilm-tf computes
    it twice). Elementwise work is not counted.
    """
    if training and cached_char_cnn:
        raise ValueError('cached_char_cnn applies to inference only (training updates the char CNN)')
    if training and n_negative_samples is None and vocab_size is None:
        raise ValueError('training FLOPs need n_negative_samples (sampled softmax) or vocab_size (full softmax)')
    max_chars, char_dim, n_filters = config.max_characters_per_token, config.char_embed_dim, config.n_filters
    P, D, L = config.projection_dim, config.cell_dim, config.num_layers
    parts = {
        'char_cnn': sum(2 * (max_chars - w + 1) * w * char_dim * n for w, n in config.cnn_filters),
        'highway': config.num_highways * 2 * (2 * n_filters * n_filters),
        'projection': 2 * n_filters * P,
        'lstm': 2 * L * (2 * (P + P) * 4 * D + 2 * D * P),
        'softmax': 0,
    }
    if cached_char_cnn:
        parts.update(char_cnn=0, highway=0, projection=0)
    if training:
        classes = n_negative_samples + 1 if n_negative_samples is not None else vocab_size
        parts['softmax'] = 2 * (2 * P * classes)
        parts = {k: 3 * v for k, v in parts.items()}
    parts['total'] = sum(parts.values())
    return parts


def flops_per_token(config, *, training=False, vocab_size=None, n_negative_samples=None,
                    cached_char_cnn=False):
    """Total FLOPs per token of a configuration; see flops_breakdown for what is counted."""
    return flops_breakdown(config, training=training, vocab_size=vocab_size,
                           n_negative_samples=n_negative_samples, cached_char_cnn=cached_char_cnn)['total']


def used_chars(char_ids, pad_id=None):
    """char ids [tokens, max_chars] (shifted ids, as token_ids makes them) -> int [tokens]: the
    position after each token's last char that is not PAD (its bytes + the begin and end of word
    marks: a 5-byte word uses 7)."""
    import numpy as np
    from paddle_elmo.model import packing
    from paddle_elmo.text.token_ids import PAD_CHAR
    return packing.used_chars(np.asarray(char_ids), PAD_CHAR + 1 if pad_id is None else pad_id)


def required_flops(config, batches, *, training=False, n_negative_samples=None, vocab_size=None,
                   token_cache=False, precomputed=None):
    """The matrix-product FLOPs a run over `batches` cannot do without (2 * m * n * k per product),
    as the model's code computes it, where flops_breakdown counts a fixed reference per token.

    batches: iterable of int arrays [rows, time, max_chars] of char ids (token_ids' shifted ids,
    0 = padding position; CharMapper.batch or LMStream's char_ids). Inference (embedding): each
    row is a sentence with its <S> and </S>, run by both LSTM directions. Training: pass a step's
    forward and backward windows as the rows of one batch (lm_step_char_ids); each row is run by
    its own direction and each of its positions has a target.
      char_cnn   once per distinct token of a batch (once per distinct token of the whole run with
                 token_cache, the cache that holds every word it meets), over the windows that
                 touch at least one char that is not PAD: a token using u positions (used_chars)
                 needs min(max_chars - w + 1, u) windows of width w, each 2 * w * C * n FLOPs. The
                 all-PAD windows give one value for every token (the code computes one per chunk)
                 and are not counted.
      highway    per distinct token as above (2 products of F x F per layer)
      projection per distinct token: char input F -> P; word+char (word_dim + F) -> P; word input none
      lstm       per position and direction run (inference: 2 per position; training: 1)
      softmax    training only: per position, 2 * P * (n_negative_samples + 1) (the true word and
                 the shared candidates, lm.sampled_loss) or 2 * P * vocab_size
    training multiplies everything by 3 (forward + backward), as flops_breakdown.
    precomputed: tokens (str) whose representation is read from a table (ELMoEmbedder's
    embedding_weight_file), never computed. Elementwise work is not counted.
    -> dict of parts and 'total', plus counts: 'positions' (real token positions of all rows),
    'distinct' (tokens through the char CNN), 'char_windows' (the windows counted, summed over
    the distinct tokens and the filter widths) and 'char_windows_by_width' ({width: windows}).
    """
    import numpy as np
    if training and n_negative_samples is None and vocab_size is None:
        raise ValueError('training FLOPs need n_negative_samples (sampled softmax) or vocab_size (full softmax)')
    max_chars, char_dim, n_filters = config.max_characters_per_token, config.char_embed_dim, config.n_filters
    P, D, L = config.projection_dim, config.cell_dim, config.num_layers
    has_chars = config.token_input != 'word'
    lstm_per_direction = L * (2 * (P + P) * 4 * D + 2 * D * P)
    classes = (n_negative_samples + 1) if n_negative_samples is not None else vocab_size
    skip = set()
    if precomputed is not None and has_chars:
        from paddle_elmo.text.token_ids import tokens_to_char_ids
        tokens = list(precomputed)
        if tokens:
            skip = {row.tobytes() for row in tokens_to_char_ids(tokens, max_chars)}
    seen = set()
    parts = dict(char_cnn=0, highway=0, projection=0, lstm=0, softmax=0)
    counts = dict(positions=0, distinct=0, char_windows=0,
                  char_windows_by_width={w: 0 for w, _ in config.cnn_filters} if has_chars else {})
    for batch in batches:
        ids = np.ascontiguousarray(batch, dtype=np.int64)
        ids = ids.reshape(-1, ids.shape[-1])
        real = ids[(ids > 0).any(axis=1)]
        positions = len(real)
        counts['positions'] += positions
        parts['lstm'] += positions * lstm_per_direction * (1 if training else 2)
        if training:
            parts['softmax'] += positions * 2 * P * classes
        if not has_chars:
            continue
        keys = {}
        for row in real:
            key = row.tobytes()
            if key not in skip and key not in seen:
                keys.setdefault(key, row)
        if token_cache:
            seen.update(keys)
        if not keys:
            continue
        distinct = np.stack(list(keys.values()))
        used = used_chars(distinct)
        windows = {w: np.minimum(max_chars - w + 1, used).sum() for w, _ in config.cnn_filters}
        parts['char_cnn'] += int(sum(2 * windows[w] * w * char_dim * n for w, n in config.cnn_filters))
        counts['char_windows'] += int(sum(windows[w] for w, _ in config.cnn_filters))
        for w in windows:
            counts['char_windows_by_width'][w] += int(windows[w])
        counts['distinct'] += len(distinct)
        parts['highway'] += len(distinct) * config.num_highways * 2 * (2 * n_filters * n_filters)
        parts['projection'] += len(distinct) * 2 * (config.word_dim * (config.token_input == 'word+char')
                                                    + n_filters) * P
    if training:
        parts = {k: 3 * v for k, v in parts.items()}
    parts = {k: int(v) for k, v in parts.items()}
    parts['total'] = sum(parts.values())
    return dict(parts, **counts)


def lm_step_char_ids(batch):
    """An LMStream batch -> the char ids of the step's forward and backward windows as one array
    [2B, T, max_chars], as required_flops(training=True) reads a step (the biLM runs the char CNN
    once per distinct token of the two: BiLM.lm_outputs)."""
    import numpy as np
    return np.concatenate([batch['char_ids'], batch['char_ids_reverse']])


# --------------------------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------------------------

LM_CORPUS = os.path.join(SHARED, 'data', 'lm-corpus')
RT_POLARITY = os.path.join(SHARED, 'data', 'rt-polarity')
ZH_CORPUS = os.path.join(SHARED, 'data', 'zh-corpus')
ZH_SENTIMENT = os.path.join(SHARED, 'data', 'zh-sentiment')


def corpus_vocabulary(size, corpus=LM_CORPUS):
    """The `size` most frequent words of CORPUS/train.txt (segmented: split on whitespace) + <S> </S>
    <UNK>, built once and cached as CACHE/NAME-vocab-SIZE.txt (paddle_elmo.cache) (NAME: the corpus's
    directory name, lm-corpus by default)."""
    from paddle_elmo.text.vocabulary import build_vocabulary, count_words, write_vocabulary
    name = os.path.basename(os.path.normpath(corpus))
    from paddle_elmo.cache import cache_dir
    path = cache_dir(f'{name}-vocab-{size}.txt')
    if not os.path.exists(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        write_vocabulary(build_vocabulary(count_words(os.path.join(corpus, 'train.txt')),
                                          max_vocab_size=size), path)
    return path


# --------------------------------------------------------------------------------------------
# Memory and machine
# --------------------------------------------------------------------------------------------

def peak_rss_mb():
    """Peak resident memory of this process so far, in MB (the whole process, Python included).

    On Linux, /proc's VmHWM: the peak of this program's own memory since it started. Not
    ru_maxrss there: a process started by fork and exec keeps, as its ru_maxrss, the peak of the
    parent it came from (the kernel carries the old memory's high-water mark over the exec), so a
    worker run by a benchmark that had measured the memory bandwidth over large arrays would report
    the benchmark's peak, not its own. ru_maxrss elsewhere (macOS has no /proc).
    """
    hwm = _proc_status_mb('VmHWM')
    if hwm is not None:
        return hwm
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2 ** 20 if sys.platform == 'darwin' else peak / 1024  # bytes on macOS, KB on Linux


def current_rss_mb():
    """Resident memory now, in MB (Linux /proc; None elsewhere)."""
    return _proc_status_mb('VmRSS')


def _proc_status_mb(field):
    """A kB field of /proc/self/status (VmRSS, VmHWM), in MB; None where there is no /proc."""
    try:
        with open('/proc/self/status') as f:
            for line in f:
                if line.startswith(field + ':'):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def _cpu_model():
    try:
        with open('/proc/cpuinfo') as f:
            for line in f:
                if line.startswith('model name'):
                    return line.split(':', 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or 'unknown'


def _ram_gb():
    try:
        with open('/proc/meminfo') as f:
            return round(int(f.readline().split()[1]) / 2 ** 20, 1)
    except (OSError, ValueError, IndexError):
        return None


def _git_commit():
    try:
        commit = subprocess.run(['git', 'rev-parse', '--short', 'HEAD'], cwd=ROOT, capture_output=True,
                                text=True, check=True).stdout.strip()
        dirty = subprocess.run(['git', 'status', '--porcelain', '--untracked-files=no'], cwd=ROOT,
                               capture_output=True, text=True).stdout.strip()
        return commit + ('+uncommitted changes' if dirty else '')
    except (OSError, subprocess.CalledProcessError):
        return 'unknown'


def load_average():
    """(1, 5, 15)-minute load averages, rounded."""
    return tuple(round(x, 2) for x in os.getloadavg())


def busiest_processes(n=3):
    """The n other processes using the most CPU (lifetime average), as 'pid %cpu command' lines:
    other work on the machine explains slow numbers."""
    try:
        out = subprocess.run(['ps', '-eo', 'pid,pcpu,args', '--sort=-pcpu'], capture_output=True,
                             text=True, check=True).stdout.splitlines()[1:]
    except (OSError, subprocess.CalledProcessError):
        return []
    others = [line.strip() for line in out if line.split()[0] != str(os.getpid())]
    return [line[:110] for line in others[:n]]


def machine_info():
    """Facts to record next to every number."""
    import paddle
    return {
        'date': datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC'),
        'cpu': _cpu_model(),
        'nproc': os.cpu_count(),
        'ram_gb': _ram_gb(),
        'python': platform.python_version(),
        'paddle': paddle.__version__,
        'commit': _git_commit(),
        'load_average': load_average(),
        'cpu_kernels': _cpu_kernels(),
        'mkl': _mkl(),
    }


def _mkl():
    """Paddle's MKL code path and how it was chosen (runtime.configure has run: asking fixes the path)."""
    from paddle_elmo import runtime
    path = runtime.mkl_code_path()
    return f"path {path} (MKL_DEBUG_CPU_TYPE={os.environ.get('MKL_DEBUG_CPU_TYPE', 'unset')})"


def _cpu_kernels():
    """'on' when kernels.cc is built and used on CPU, else 'off' (ELMO_CPU_KERNELS=0, no compiler)."""
    from paddle_elmo.model import kernels
    return 'on' if kernels.kernel() is not None else 'off'


def print_machine_info(info=None):
    info = info or machine_info()
    print(f"date {info['date']} | commit {info['commit']} | {info['cpu']}, nproc {info['nproc']}, "
          f"RAM {info['ram_gb']} GB | Python {info['python']}, Paddle {info['paddle']} | "
          f"CPU kernels {info['cpu_kernels']} | MKL {info['mkl']} | load average {info['load_average']}")
    for line in busiest_processes():
        print(f'  busy: {line}')


# --------------------------------------------------------------------------------------------
# Isolated runs and tables
# --------------------------------------------------------------------------------------------

def start_run(out_dir, threads):
    """A benchmark run's opening: its output directory, its threads, the machine and the float32
    matmul rate at the start (printed) -> (machine_info, GFLOP/s)."""
    os.makedirs(out_dir, exist_ok=True)
    set_threads(threads)
    info = machine_info()
    print_machine_info(info)
    gflops = measure_matmul_gflops()
    print(f'float32 matmul rate at the start: {gflops:.1f} GFLOP/s', flush=True)
    return info, gflops


def check_positive(a, names):
    """Each of the parsed flags `names` must be >= 1: a one-line InputError naming the first that is not."""
    from paddle_elmo.fileio import InputError
    for name in names:
        if getattr(a, name) < 1:
            raise InputError(f'--{name} must be >= 1, got {getattr(a, name)}')


def positive_ints(value, option):
    """A comma-separated flag value -> [int], at least one and each >= 1: else a one-line InputError
    naming `option`."""
    from paddle_elmo.fileio import InputError
    try:
        values = [int(v) for v in value.split(',') if v.strip()]
    except ValueError:
        raise InputError(f'{option}: expected comma-separated integers, got {value!r}')
    if not values or min(values) < 1:
        raise InputError(f'{option}: expected integers >= 1, got {value!r}')
    return values


def answer_worker(spec_json, workers):
    """A benchmark's worker process: run workers[spec['kind']](spec) and print its result as JSON."""
    spec = json.loads(spec_json)
    print(json.dumps(workers[spec['kind']](spec)))
    return 0


def run_worker(argv, env=None, timeout=None, python=None):
    """Run `python argv...` in a fresh process (so its peak memory is its own; this interpreter
    unless `python` names another) and return the JSON object it prints on its last stdout line.
    Raises RuntimeError with the worker's error."""
    proc = subprocess.run([python or sys.executable, *argv], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr.strip().splitlines() or ['(no output)'])[-1]
        raise RuntimeError(f'worker {" ".join(argv[:1])} failed (exit {proc.returncode}): {tail}')
    return json.loads(lines[-1])


def _cell(value):
    if isinstance(value, float):
        return f'{value:.0f}' if abs(value) >= 100 else f'{value:.3g}'
    return str(value)


def print_table(rows, columns=None):
    """Print rows (dicts) as a Markdown table; columns default to the keys of the first row."""
    if not rows:
        return
    columns = columns or list(rows[0])
    cells = [[_cell(row.get(c, '')) for c in columns] for row in rows]
    widths = [max(len(c), *(len(r[i]) for r in cells)) for i, c in enumerate(columns)]
    print('| ' + ' | '.join(c.ljust(w) for c, w in zip(columns, widths)) + ' |')
    print('|' + '|'.join('-' * (w + 2) for w in widths) + '|')
    for r in cells:
        print('| ' + ' | '.join(v.rjust(w) for v, w in zip(r, widths)) + ' |')


# --------------------------------------------------------------------------------------------
# Paired comparisons over cross-validation folds
# --------------------------------------------------------------------------------------------

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
