"""Shared fixtures: tiny model configs and paths into ../shared (tests needing it skip without it), and
the order in which pytest-xdist hands the modules out."""
import collections
import json
import os

import numpy as np
import paddle
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.abspath(os.path.join(ROOT, '..', 'shared'))
FIXTURE = os.path.join(SHARED, 'fixtures', 'allennlp-elmo')
RT = os.path.join(SHARED, 'data', 'rt-polarity')

paddle.set_device('cpu')


def pytest_configure(config):
    """MKL's fast path for every test, as the commands ask for it at their start: MKL fixes its path
    at its first product, and a test whose first product comes before any embedder would otherwise
    put the rest of its worker on the generic path. (A hook, not the import: child processes import
    this module for its configs, and test_cpu.py's check what the library asks for, and when.)"""
    from paddle_elmo.runtime import ask_mkl_for_fast_path
    ask_mkl_for_fast_path()


# The modules whose tests take longest together (setup included), slowest first, as measured in a
# run of `make test` on 2 cores (2026-11-30); most of the others take a few seconds each.
SLOWEST_MODULES = ('test_export', 'test_installs', 'test_structure', 'test_hostile_inputs', 'test_cpu', 'test_chinese',
                   'test_logging', 'test_pretrain', 'test_bundled_zh', 'test_preemption', 'test_example_commands',
                   'test_predict', 'test_what_users_have', 'test_efml', 'test_adapt', 'test_bad_inputs',
                   'test_finetune', 'test_bundled_model', 'test_card_figures', 'test_configs')


def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist, the modules in the order their workers should take them: SLOWEST_MODULES
    first, then the others by their number of tests (xdist's own order, which `make test` turns off
    with --no-loadscope-reorder: by that count alone the slowest modules, which have few tests, came
    last, and a worker still running one of them kept the suite waiting while the other had nothing
    left). Each module stays whole and its tests keep their order. Ordering only: a stale list costs
    the balance between the workers, never a test."""
    if not hasattr(config, 'workerinput'):  # not a pytest-xdist worker: the files' order
        return
    sizes = collections.Counter(item.path.stem for item in items)

    def place(item):
        module = item.path.stem
        slow = SLOWEST_MODULES.index(module) if module in SLOWEST_MODULES else len(SLOWEST_MODULES)
        return slow, -sizes[module], module

    items.sort(key=place)  # stable: a module's tests in their order


def skip_unless_ci(message):
    """Skip the test for something this machine lacks, or fail it under CI=true, whose machine has
    everything the suite needs (../shared, a C++ compiler, the package indexes): there a skip would
    hide a test that never ran."""
    if os.environ.get('CI') == 'true':
        pytest.fail(f'{message}; CI=true requires it')
    pytest.skip(message)


def require(path):
    """`path` (in ../shared); absent, the test is skipped, or fails under CI=true (CI has ../shared)."""
    if not os.path.exists(path):
        skip_unless_ci(f'{path} is absent (../shared is not beside this checkout)')
    return path


def require_compiler():
    """The CPU kernels need g++ ($CXX); without one (or with ELMO_CPU_KERNELS=0) the test is skipped,
    or fails under CI=true (CI has one)."""
    import shutil
    if shutil.which(os.environ.get('CXX', 'g++')) is None or os.environ.get('ELMO_CPU_KERNELS', '1') == '0':
        skip_unless_ci('no C++ compiler (or ELMO_CPU_KERNELS=0): the kernels are not built here')


def require_kernels():
    """The CPU kernels (kernels.cc, built with g++ on first use) -> their module: without a compiler,
    as require_compiler; with one, a build that fails is the test's failure (it would silently leave
    the slow Paddle ops in place)."""
    from paddle_elmo.model import kernels
    require_compiler()
    ops = kernels.kernel()
    assert ops is not None, 'the CPU kernels did not build although there is a compiler (the log says why)'
    return ops


@pytest.fixture
def rt_slice(tmp_path):
    """100 positive + 100 negative rt-polarity lines in a fresh directory."""
    require(RT)
    for name in ('rt-polarity.pos', 'rt-polarity.neg'):
        (tmp_path / name).write_text(''.join(_head_lines(os.path.join(RT, name), 100)), encoding='utf-8')
    return tmp_path


def _head_lines(path, n):
    with open(path, encoding='utf-8') as f:
        return [next(f) for _ in range(n)]


@pytest.fixture(scope='session')
def checkout_wheel(tmp_path_factory):
    """The checkout built as a wheel (pip, without build isolation: setuptools of the test extra), once
    per session, shared by pytest-xdist's workers (a build writes build/ in the checkout: two at once
    would clash): test_packaging reads it, test_installs installs it -> its path."""
    import fcntl
    import subprocess
    import sys
    session = tmp_path_factory.getbasetemp()
    if os.environ.get('PYTEST_XDIST_WORKER'):
        session = session.parent  # the workers' basetemps are popen-gwN/ in the session's directory
    out = session / 'checkout_wheel'
    with open(session / 'checkout_wheel.lock', 'w') as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not out.is_dir() or not [f for f in os.listdir(out) if f.endswith('.whl')]:
            out.mkdir(exist_ok=True)
            proc = subprocess.run([sys.executable, '-m', 'pip', 'wheel', '-q', '--no-deps', '--no-build-isolation',
                                   '-w', str(out), ROOT], capture_output=True, text=True, timeout=600)
            assert proc.returncode == 0, proc.stderr[-3000:]
    [name] = [f for f in os.listdir(out) if f.endswith('.whl')]
    return out / name


@pytest.fixture(scope='session')
def bundled_export(tmp_path_factory):
    """The bundled model exported (float32, Paddle + ONNX, as `paddle-elmo export-inference` writes it)
    by this environment's Paddle, once per session: test_serve and test_installs run it -> its directory."""
    from paddle_elmo.export.deploy import export_inference
    out = str(tmp_path_factory.mktemp('serve') / 'elmo_inference')
    export_inference('bundled', out)
    return out


@pytest.fixture
def unwarned():
    """Each warning given once per process (logs.warn_once) is given again in the test, and after it."""
    from paddle_elmo.logs import forget_warnings
    forget_warnings()
    yield
    forget_warnings()


@pytest.fixture
def fixture_dir():
    return require(FIXTURE)


@pytest.fixture
def fixture_sentences(fixture_dir):
    with open(os.path.join(fixture_dir, 'sentences.json')) as f:
        return [[s.split() for s in group] for group in json.load(f)]


def tiny_config(**overrides):
    """A ModelConfig small enough for any test; overrides are ModelConfig fields."""
    from paddle_elmo.model.config import ModelConfig
    kw = dict(projection_dim=8, cell_dim=16, num_layers=2, cnn_filters=[[1, 4], [2, 8], [3, 8]], num_highways=1,
              char_embed_dim=4, dropout=0.0)
    kw.update(overrides)
    return ModelConfig(**kw)


@pytest.fixture
def tiny_bilm():
    from paddle_elmo import BiLM
    paddle.seed(0)
    np.random.seed(0)
    return BiLM(tiny_config())


@pytest.fixture(scope='module')
def corpus(tmp_path_factory):
    """Two training shards, a held-out file and a vocabulary, all made up here."""
    d = tmp_path_factory.mktemp('corpus')
    words = ('the cat sat on a mat while dogs ran in parks near old houses and birds sang '
             'songs about rain wind sun snow').split()
    rng = np.random.RandomState(0)
    for name, n in (('train.0.txt', 60), ('train.1.txt', 60), ('heldout.txt', 20)):
        lines = [' '.join(rng.choice(words, rng.randint(3, 9))) + f' s{name[:5]}{i}' for i in range(n)]
        (d / name).write_text('\n'.join(lines) + '\n')
    vocab = ['<S>', '</S>', '<UNK>'] + words
    (d / 'vocab.txt').write_text('\n'.join(vocab) + '\n')
    return d


def one_line_error(proc, code=2):
    """The error line of a script that failed on bad input (exit code 2; `code` 1: a runtime failure
    such as a download's), one 'error: ' line, the last (progress bars may come before it), no
    traceback. -> that line."""
    assert proc.returncode == code, proc.stderr[-3000:]
    lines = proc.stderr.strip().splitlines()
    assert [line for line in lines if line.startswith('error: ')] == lines[-1:], proc.stderr[-3000:]
    assert 'Traceback' not in proc.stderr, proc.stderr[-3000:]
    return lines[-1]
