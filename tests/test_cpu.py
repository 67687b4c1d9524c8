"""Fast CPU defaults (runtime.py): MKL's AVX2 or AVX-512 path on AMD processors and the available cores, for the
scripts and for the library, unless the user chose; and results that do not depend on the path."""
import os
import subprocess
import sys

import pytest

from paddle_elmo import runtime as cpu
from conftest import FIXTURE, ROOT, require
from helpers import command_line

ASKED_PATH = cpu.mkl_path_to_ask()  # what this processor's MKL is asked for: None where MKL picks itself
CORES = len(os.sched_getaffinity(0))
# What the user's shell would hold: none of the variables this module decides about.
CLEAN_ENV = {k: v for k, v in os.environ.items()
             if k not in ('OMP_NUM_THREADS', 'MKL_DEBUG_CPU_TYPE', 'PADDLE_LOCAL_SIZE', 'GLOG_minloglevel')}
# In a child process: the threads MKL will use and the code path it runs (asking fixes it, so last).
MKL_STATE = ('import ctypes, os, paddle; from paddle_elmo import runtime as cpu; '
             'lib = ctypes.CDLL(os.path.join(os.path.dirname(paddle.__file__), "libs", "libmklml_intel.so")); '
             'print("STATE", lib.mkl_get_max_threads(), cpu.mkl_code_path())')


def python(code, env=None, **kwargs):
    proc = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, cwd=ROOT,
                          env={**CLEAN_ENV, 'PYTHONPATH': ROOT, **(env or {})}, timeout=300, **kwargs)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def mkl_state(proc):
    """-> (MKL's max threads, MKL's code path) printed by MKL_STATE."""
    line = [line for line in proc.stdout.splitlines() if line.startswith('STATE ')][-1]
    threads, path = line.split()[1:]
    return int(threads), path


@pytest.fixture(autouse=True)
def no_bundled_mkl_means_skip():
    import paddle
    if not os.path.exists(os.path.join(os.path.dirname(paddle.__file__), 'libs', 'libmklml_intel.so')):
        pytest.skip('this Paddle wheel ships no libmklml_intel.so (cpu.mkl_code_path is None there)')


AVX512 = 'avx512f avx512cd avx512bw avx512dq avx512vl'


@pytest.mark.parametrize('text, path', [
    ('vendor_id\t: AuthenticAMD\nflags\t\t: fpu sse2 avx avx2 fma\n', '5'),
    (f'vendor_id\t: AuthenticAMD\nflags\t\t: fpu sse2 avx avx2 fma {AVX512} avx512_vnni\n', '7'),
    # AVX-512 without BW (as Intel's Knights Landing): not what MKL's path 7 runs
    ('vendor_id\t: AuthenticAMD\nflags\t\t: fpu sse2 avx avx2 fma avx512f avx512cd avx512dq avx512vl\n', '5'),
    ('vendor_id\t: AuthenticAMD\nflags\t\t: fpu sse2 avx\n', None),             # no AVX2: nothing to gain
    (f'vendor_id\t: GenuineIntel\nflags\t\t: fpu sse2 avx avx2 fma {AVX512}\n', None),  # MKL knows Intel
    ('', None),
])
def test_mkl_is_asked_for_the_widest_path_an_amd_processor_runs(tmp_path, text, path):
    (tmp_path / 'cpuinfo').write_text(text + 'vendor_id\t: Other\n')
    assert cpu.mkl_path_to_ask(cpu.processor(str(tmp_path / 'cpuinfo'))) == path


@pytest.mark.parametrize('flags, runs', [('fpu sse2 avx', {'0'}), ('avx avx2 fma', {'0', '5'}),
                                         (f'avx avx2 fma {AVX512}', {'0', '5', '7'}),
                                         (f'avx {AVX512}', {'0'})])  # AVX-512 flags without AVX2: not path 7
def test_a_path_runs_where_the_processor_has_its_instructions(flags, runs):
    info = ('AuthenticAMD', set(flags.split()))
    assert {path for path in ('0', '4', '5', '7') if cpu.runs_mkl_path(path, info)} == runs  # 4: not ours to run


def test_a_users_mkl_debug_cpu_type_is_left_alone(monkeypatch):
    monkeypatch.setattr(cpu, 'mkl_path_to_ask', lambda: '7')
    monkeypatch.setattr(cpu, '_mkl_asked', None)
    monkeypatch.setenv('MKL_DEBUG_CPU_TYPE', '0')
    assert 'from the environment' in cpu.ask_mkl_for_fast_path() and os.environ['MKL_DEBUG_CPU_TYPE'] == '0'
    monkeypatch.delenv('MKL_DEBUG_CPU_TYPE')
    assert 'MKL_DEBUG_CPU_TYPE=7 set for this AMD processor' in cpu.ask_mkl_for_fast_path()
    assert os.environ['MKL_DEBUG_CPU_TYPE'] == '7'


@pytest.mark.parametrize('user_value, local_size, expected', [('', None, 2), ('1', None, 1), ('x', None, 2),
                                                             ('', '2', 1), ('', '4', 1), ('3', '2', 3)])
def test_threads_default_to_the_cores_unless_the_user_set_omp_num_threads(monkeypatch, user_value, local_size,
                                                                         expected):
    monkeypatch.setattr(cpu, '_USER_OMP_NUM_THREADS', user_value)
    monkeypatch.setattr(os, 'sched_getaffinity', lambda pid: {0, 1}, raising=False)
    monkeypatch.delenv('PADDLE_LOCAL_SIZE', raising=False)
    if local_size:
        monkeypatch.setenv('PADDLE_LOCAL_SIZE', local_size)
    assert cpu.default_threads() == expected


@pytest.mark.parametrize('order', ['paddle_elmo.cli.runner, paddle', 'paddle, paddle_elmo.runtime'])
@pytest.mark.parametrize('user_value', [None, '1', '3'])
def test_the_users_omp_num_threads_is_read_whatever_was_imported_first(order, user_value):
    # Paddle's import sets an unset OMP_NUM_THREADS to 1: imported first, cpu reads the process's
    # starting environment instead.
    env = {'OMP_NUM_THREADS': user_value} if user_value else {}
    proc = python(f'import os, {order}; from paddle_elmo import runtime as cpu; print(os.environ["OMP_NUM_THREADS"], cpu.default_threads())', env)
    assert proc.stdout.split() == [user_value or '1', user_value or str(CORES)]


def test_a_script_started_without_settings_runs_on_the_cores_and_the_fast_path_and_says_so(tmp_path):
    (tmp_path / 'in.txt').write_text('Hello world .\n')
    proc = subprocess.run(command_line('embed', tmp_path / 'in.txt', tmp_path / 'out.hdf5'), capture_output=True,
                          text=True, env=CLEAN_ENV, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    said = [line for line in proc.stderr.splitlines() if line.startswith('CPU: ')]  # the log
    threads = f'CPU: {CORES} thread{"s" * (CORES > 1)} (the available cores); MKL: '
    mkl = (f'{cpu.MKL_PATHS[ASKED_PATH]} (MKL_DEBUG_CPU_TYPE={ASKED_PATH} set for this AMD processor)'
           if ASKED_PATH else '')
    assert len(said) == 1 and said[0].startswith(threads + mkl), proc.stderr
    assert 'chose its' not in proc.stderr  # no warning that MKL was asked too late


@pytest.mark.parametrize('make, env, threads', [
    ('ELMoEmbedder(bilm=bilm)', {}, CORES),
    ('Elmo(bilm)', {}, CORES),
    ('ELMoEmbedder(bilm=bilm)', {'OMP_NUM_THREADS': '1'}, 1),
    ('ELMoEmbedder(bilm=bilm, cpu_threads=1)', {}, 1),
    ('Elmo(bilm, cpu_threads=1)', {}, 1),
])
def test_the_library_uses_the_cores_and_the_fast_path_unless_the_user_chose(make, env, threads):
    code = ('import paddle; from paddle_elmo import BiLM, ELMoEmbedder, Elmo; from conftest import tiny_config; '
            f'bilm = BiLM(tiny_config()); {make}; ' + MKL_STATE)
    proc = python(code, {**env, 'PYTHONPATH': f'{ROOT}:{ROOT}/tests'})
    got_threads, path = mkl_state(proc)
    assert got_threads == threads and 'chose its' not in proc.stderr  # asked in time: no warning
    if ASKED_PATH:  # elsewhere MKL picks its own path: not ours to assert
        assert path == ASKED_PATH


def test_importing_the_library_leaves_mkl_and_threads_alone():
    proc = python('from paddle_elmo import ELMoEmbedder; import os; print("ENV", os.environ.get("MKL_DEBUG_CPU_TYPE")); ' + MKL_STATE)
    assert 'ENV None' in proc.stdout and mkl_state(proc)[0] == 1  # Paddle's own default: one thread


# What docs/EMBEDDING.md ("What is set in your process, and when") and docs/PYPI.md say: the import sets
# GLOG_minloglevel alone; creating an embedder sets MKL_DEBUG_CPU_TYPE (on AMD), before any
# encode; each only where the user left the variable unset.
ENV_CHANGES = ('import json, os, sys; before = dict(os.environ); import paddle_elmo; imported = dict(os.environ); '
               'assert "paddle" not in sys.modules; from paddle_elmo import BiLM, ELMoEmbedder; '
               'from conftest import tiny_config; bilm = BiLM(tiny_config()); loaded = dict(os.environ); '
               'ELMoEmbedder(bilm=bilm); created = dict(os.environ); '
               'changes = lambda a, b: {k: v for k, v in b.items() if a.get(k) != v}; '
               'print("CHANGES", json.dumps([changes(before, imported), changes(loaded, created)]))')


@pytest.mark.parametrize('env', [{}, {'GLOG_minloglevel': '0', 'MKL_DEBUG_CPU_TYPE': '0'}], ids=['unset', 'user-set'])
def test_the_import_sets_glog_alone_and_an_embedder_sets_mkl_s_path_when_created(env):
    import json
    proc = python(ENV_CHANGES, {**env, 'PYTHONPATH': f'{ROOT}:{ROOT}/tests'})
    on_import, on_creation = json.loads(proc.stdout.split('CHANGES', 1)[1])
    assert on_import == ({} if env else {'GLOG_minloglevel': '2'})
    assert on_creation == ({'MKL_DEBUG_CPU_TYPE': ASKED_PATH} if ASKED_PATH and not env else {})


@pytest.mark.skipif(not ASKED_PATH, reason='MKL picks its path by itself on this processor')
def test_when_a_paddle_product_ran_first_the_embedder_warns_once_naming_the_fix():
    code = ('import warnings; warnings.simplefilter("always"); import paddle; x = paddle.ones([4, 4]); '
            'paddle.matmul(x, x); from paddle_elmo import BiLM, ELMoEmbedder; from conftest import tiny_config; '
            'bilm = BiLM(tiny_config()); ELMoEmbedder(bilm=bilm); ELMoEmbedder(bilm=bilm); ' + MKL_STATE)
    proc = python(code, {'PYTHONPATH': f'{ROOT}:{ROOT}/tests'})
    warned = [line for line in proc.stderr.splitlines() if 'chose its generic path' in line]
    assert len(warned) == 1 and f'Set MKL_DEBUG_CPU_TYPE={ASKED_PATH} in the environment' in warned[0]
    assert mkl_state(proc)[1] == '0'


@pytest.mark.parametrize('setting', ['0', '5', '7'])
def test_parity_and_the_training_update_hold_on_each_mkl_path(setting):
    # MKL's generic path ('0'), its AVX2 path ('5') and its AVX-512 path ('7', where the processor
    # runs it); the tests compare with AllenNLP's reference embeddings and with an independent
    # NumPy evaluation of bilm-tf's step.
    require(FIXTURE)
    if not cpu.runs_mkl_path(setting):
        pytest.skip(f'this processor lacks the instructions of MKL\'s path {setting}')
    tests = ['tests/test_elmo.py::test_stateful_run_matches_reference_top_layer',
             'tests/test_elmo.py::test_token_representations_match_reference',
             'tests/test_train_step.py::test_one_step_equals_bilm_tf_update_with_the_clip_active',
             'tests/test_train_step.py::test_one_step_equals_bilm_tf_update_with_the_clip_inactive']
    env = {**CLEAN_ENV, 'MKL_DEBUG_CPU_TYPE': setting}
    proc = subprocess.run([sys.executable, '-m', 'pytest', '-q', '-p', 'no:cacheprovider', *tests], cwd=ROOT,
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0 and '8 passed' in proc.stdout, proc.stdout[-3000:]  # the step: 3 token inputs x 2
    path = mkl_state(python('from paddle_elmo import runtime as cpu; cpu.configure(); ' + MKL_STATE, env))[1]
    if ASKED_PATH:
        assert path == setting
