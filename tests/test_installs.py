"""Each documented install (README, "Install") in a fresh virtual environment of its own, built from
one wheel of this checkout, doing what README says it does:

- the core (`pip install paddle-elmo`): every command's --help answers; every model-running command
  and public name ends in one line naming the extra to install, no traceback; build-vocab runs;
- `[serve]`: an ONNX export embeds with InferenceEmbedder(DIR) and `embed --inference_model DIR`, no
  backend named (onnxruntime is chosen, and said), with the full install's numbers;
- `[cpu]`: `paddle-elmo demo`, pretrain with checkpoints and a resume, eval, predict, embed and
  export-inference all succeed, README's first Python lines print the shape their comment gives, and
  without matplotlib (the [plot] extra) the curve is skipped in one line instead of failing the run.

The wheel is the one README's install builds (`pip wheel --no-deps -w DIR` of the checkout, conftest's
checkout_wheel), installed with README's extras; tests/test_docs.py holds README's install lines to
the checkout and its wheel.

The environments are what makes these tests slow (pip installs from its cache: ~10-60 s each, the
[cpu] one ~1 GB), so each is built once and kept across sessions in VENV_CACHE, keyed by the
wheel's contents and the Python version: a checkout whose package did not change reuses them. The
[cpu] journey runs as one script in one process. No package index answering, they skip (outside
CI) or fail (CI=true).
"""
import contextlib
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import time
import zipfile

import h5py
import numpy as np
import pytest

from conftest import ROOT, one_line_error, skip_unless_ci
from helpers import BLOCK_PACKAGES, ENV, SENTENCES, TINY_MODEL, assert_served_without_paddle, run_child

# Kept across sessions (outside the checkout); $PADDLE_ELMO_TEST_VENVS moves it.
VENV_CACHE = os.environ.get('PADDLE_ELMO_TEST_VENVS') or os.path.join(
    os.environ.get('XDG_CACHE_HOME') or os.path.expanduser('~/.cache'), 'paddle-elmo-test-venvs')
KEEP_PER_INSTALL = 2  # environments of other wheels kept per install (the ones used last), for a second checkout
INSTALLS = {'core': '', 'serve': '[serve]', 'cpu': '[cpu]'}  # name -> the extras pip is asked for
CPU_EXTRA = 'pip install "paddle-elmo[cpu]"'
SERVE_EXTRA = 'pip install "paddle-elmo[serve]"'
CLASSIFY_EXTRA = 'pip install "paddle-elmo[classify]"'


# ---- the environments ------------------------------------------------------------------------------


def wheel_digest(wheel):
    """A hash of the wheel's file names and contents (not of the zip, whose timestamps change with
    every build) -> 16 hex digits."""
    h = hashlib.sha256()
    with zipfile.ZipFile(wheel) as z:
        for name in sorted(z.namelist()):
            h.update(name.encode() + b'\0' + z.read(name) + b'\0')
    return h.hexdigest()[:16]


def pip(*args, timeout=1800):
    """This environment's pip (`--python DIR/bin/python` installs into another) -> its CompletedProcess."""
    return subprocess.run([sys.executable, '-m', 'pip', *args], capture_output=True, text=True, timeout=timeout,
                          env={k: v for k, v in os.environ.items() if k != 'PYTHONPATH'})


def require_index(tmp_dir):
    """Skip (fail under CI=true, which has the registries) when pip cannot reach a package index."""
    probe = pip('download', '--no-deps', '--dest', str(tmp_dir), 'tqdm', timeout=300)
    if probe.returncode != 0:
        skip_unless_ci(f'pip cannot reach a package index: {probe.stderr.strip().splitlines()[-1:]}')


@contextlib.contextmanager
def locked(path, wait=True):
    """An exclusive lock on `path` (pytest-xdist's workers, or two sessions, build an environment once)
    -> whether it is held (always, with `wait`; without, False when another holds it)."""
    import fcntl
    with open(path, 'a') as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        yield True


def install_venv(install, wheel, tmp_dir):
    """The environment of `install` (INSTALLS) with `wheel` installed as a user would (pip resolving
    its requirements), from VENV_CACHE when built before -> (its directory, the seconds its build
    took, recorded when it was built). Built in place (a venv records its own path), marked ready
    last: a half-built one is rebuilt."""
    os.makedirs(VENV_CACHE, exist_ok=True)
    key = f'{install}-py{sys.version_info[0]}{sys.version_info[1]}-{wheel_digest(wheel)}'
    venv, ready = os.path.join(VENV_CACHE, key), os.path.join(VENV_CACHE, key, 'ready.json')
    with locked(os.path.join(VENV_CACHE, f'{key}.lock')):
        if not os.path.exists(ready):
            require_index(tmp_dir)
            shutil.rmtree(venv, ignore_errors=True)
            start = time.time()
            # No pip (nor setuptools) of its own: this environment's pip installs into it (`pip --python`),
            # ~6 s less, and what the install needs must come from its requirements. (pip compiles every
            # module as it installs: with PYTHONDONTWRITEBYTECODE set, an import would not keep its .pyc.)
            subprocess.run([sys.executable, '-m', 'venv', '--without-pip', venv], check=True, timeout=300)
            proc = pip('--python', os.path.join(venv, 'bin', 'python'), 'install', '-q', f'{wheel}{INSTALLS[install]}')
            assert proc.returncode == 0, f'pip install {wheel.name}{INSTALLS[install]}:\n{proc.stderr[-3000:]}'
            with open(ready, 'w') as f:
                json.dump({'build_seconds': round(time.time() - start, 1)}, f)
        os.utime(ready)  # used now: prune_venvs keeps the ones used last
        prune_venvs(install, key)
        with open(ready) as f:
            return venv, json.load(f)['build_seconds']


def prune_venvs(install, keep):
    """Delete the environments of `install` for other wheels beyond the KEEP_PER_INSTALL used last."""
    others = [d for d in os.listdir(VENV_CACHE) if d.startswith(f'{install}-') and d != keep and not d.endswith('.lock')]

    def last_used(name):  # install_venv touches ready.json; a half-built one has none
        ready = os.path.join(VENV_CACHE, name, 'ready.json')
        return os.path.getmtime(ready) if os.path.exists(ready) else 0

    for old in sorted(others, key=last_used, reverse=True)[KEEP_PER_INSTALL - 1:]:
        with locked(os.path.join(VENV_CACHE, f'{old}.lock'), wait=False) as held:
            if held:  # else another session is building it
                shutil.rmtree(os.path.join(VENV_CACHE, old), ignore_errors=True)


def venv_fixture(install):
    @pytest.fixture(scope='session')
    def fixture(checkout_wheel, tmp_path_factory):
        venv, seconds = install_venv(install, checkout_wheel, tmp_path_factory.mktemp(f'probe_{install}'))
        print(f'\n{install} venv: {venv} (built in {seconds} s)')
        return venv
    return fixture


core_venv, serve_venv, cpu_venv = (venv_fixture(i) for i in INSTALLS)


def run_in(venv, args, cwd, timeout=600, **env):
    """`args` with the environment's bin/ first (`paddle-elmo`, `python`), the checkout not on the path."""
    bin_dir = os.path.join(venv, 'bin')
    environ = {k: v for k, v in ENV.items() if k != 'PYTHONPATH'}
    environ.update(env, PATH=bin_dir + os.pathsep + environ.get('PATH', ''), VIRTUAL_ENV=venv)
    return subprocess.run([shutil.which(args[0], path=environ['PATH']), *args[1:]], capture_output=True, text=True,
                          cwd=cwd, env=environ, timeout=timeout)


def installed_packages(venv, cwd):
    """Which of the optional packages the environment can import."""
    proc = run_in(venv, ['python', '-c', 'import importlib.util as u, json; print(json.dumps([m for m in ("paddle", '
                         '"onnxruntime", "onnx", "paddle2onnx", "gensim", "sklearn", "jieba", "matplotlib") '
                         'if u.find_spec(m)]))'], cwd)
    assert proc.returncode == 0, proc.stderr
    return set(json.loads(proc.stdout))


def test_the_wheel_digest_ignores_the_zip_s_timestamps(checkout_wheel, tmp_path):
    # a rebuilt wheel has new timestamps: the cached environments must still be found
    copy = tmp_path / checkout_wheel.name
    with zipfile.ZipFile(checkout_wheel) as src, zipfile.ZipFile(copy, 'w') as dst:
        for info in src.infolist():
            info.date_time = (2000, 1, 1, 0, 0, 0)
            dst.writestr(info, src.read(info.filename))
    assert wheel_digest(copy) == wheel_digest(checkout_wheel)


# ---- without matplotlib, in this environment (the quick form of the [cpu] journey's check) -----------


PLOT_SKIPPED = ('train_curve.png is not drawn (train_log.csv holds its numbers): matplotlib cannot be imported '
                '(No module named \'matplotlib\'')


def test_pretrain_without_matplotlib_skips_the_curve_in_one_line(tmp_path):
    text = ' '.join(['the cat sat on the mat', 'a dog ran in the park'] * 4)
    (tmp_path / 'train.txt').write_text((text + '\n') * 20)
    (tmp_path / 'vocab.txt').write_text('\n'.join(['<S>', '</S>', '<UNK>', *sorted(set(text.split()))]) + '\n')
    argv = ['pretrain', '--train_data_path', str(tmp_path / 'train.txt'), '--vocab_file', str(tmp_path / 'vocab.txt'),
            '--save_dir', str(tmp_path / 'run'), '--max_steps', '4', '--save_freq', '2', '--log_freq', '2'] + TINY_MODEL
    code = BLOCK_PACKAGES + f'from paddle_elmo.cli import main; main({argv!r})'
    proc = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, cwd=tmp_path, timeout=600,
                          env=dict(ENV, PYTHONPATH=ROOT, BLOCKED_PACKAGES='matplotlib'))
    assert proc.returncode == 0, proc.stderr[-3000:]
    skipped = [line for line in proc.stderr.splitlines() if 'train_curve.png' in line]
    assert len(skipped) == 1 and skipped[0].startswith(PLOT_SKIPPED), skipped  # three saves, one line
    assert skipped[0].endswith('it comes with the [plot] extra, pip install "paddle-elmo[plot]"')
    assert {'2.pdparams', 'final.pdparams', 'train_log.csv'} <= set(os.listdir(tmp_path / 'run'))  # step 4: final
    assert not (tmp_path / 'run' / 'train_curve.png').exists()


# ---- every command's --help without the optional packages ----------------------------------------------

# Python that asks `paddle-elmo CMD --help` of every command, then `SCRIPT --help` of each front-door
# script named in argv, in this one process -> JSON on stdout: {command or script: [exit code, stdout,
# stderr]}.
HELP_OF_EVERY_COMMAND = textwrap.dedent('''
    import contextlib, io, json, os, runpy, sys
    from paddle_elmo.cli import COMMANDS, main

    def help_of(call):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                call()
                code = None
            except SystemExit as e:
                code = e.code
        return [code, out.getvalue(), err.getvalue()]

    scripts = sys.argv[1:]  # main() sets sys.argv
    results = {name: help_of(lambda: main([name, '--help'])) for name in COMMANDS}
    for script in scripts:
        sys.argv = [script, '--help']
        results[os.path.basename(script)] = help_of(lambda: runpy.run_path(script, run_name='__main__'))
    print(json.dumps(results))
''')
EVERY_OPTIONAL_PACKAGE = 'paddle,sklearn,scipy,gensim,jieba,onnx,onnxruntime,paddle2onnx,matplotlib'


def assert_every_help_answers(proc, names):
    """Each of `names` (commands and scripts) printed its usage and flags on stdout, nothing on stderr,
    and exited 0: what a user reads to learn what to install, before installing it."""
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(proc.stdout)
    assert sorted(results) == sorted(names)
    for name, (code, out, err) in results.items():
        assert code == 0 and not err, (name, code, err[-2000:])
        assert out.startswith('usage: ') and '--help' in out and '--quiet' in out, (name, out[:500])


def test_every_command_s_help_answers_without_the_optional_packages():
    # The quick form of the core venv's check: every optional package's import made to fail.
    from paddle_elmo.cli import COMMANDS
    scripts = [os.path.join(ROOT, script) for _, script, _ in COMMANDS.values() if script]
    code = BLOCK_PACKAGES + HELP_OF_EVERY_COMMAND
    proc = subprocess.run([sys.executable, '-c', code, *scripts], capture_output=True, text=True, cwd=ROOT,
                          timeout=300, env=dict(ENV, PYTHONPATH=ROOT, BLOCKED_PACKAGES=EVERY_OPTIONAL_PACKAGE))
    assert_every_help_answers(proc, [*COMMANDS, *map(os.path.basename, scripts)])


# ---- the core install --------------------------------------------------------------------------------

# Python in the core environment: every public name imports or raises the ImportError that names
# the extra; README's quick start; InferenceEmbedder on an export. -> JSON on stdout.
CORE_PYTHON = textwrap.dedent('''
    import json, sys
    import paddle_elmo
    from paddle_elmo.export.inference import InferenceEmbedder

    def error(call):
        try:
            call()
        except ImportError as e:
            return [type(e).__name__, str(e), e.__cause__ is None and e.__suppress_context__]
        return None

    names = {name: error(lambda: getattr(paddle_elmo, name)) for name in paddle_elmo.__all__}
    quick_start = error(lambda: paddle_elmo.ELMoEmbedder())
    export = error(lambda: InferenceEmbedder(sys.argv[1]))
    print(json.dumps({'names': names, 'quick_start': quick_start, 'export': export}))
''')


@pytest.fixture(scope='module')
def core_inputs(tmp_path_factory):
    """What the commands read in the core tests: a sentence file, a vocabulary, polarity data, a
    directory that looks like an export and one that looks like a checkpoint (the bundled model's options
    and vocabulary, empty model files: the core fails before reading them, once every input is checked)."""
    d = tmp_path_factory.mktemp('core')
    (d / 'in.txt').write_text('The cat sat on the mat .\n')
    (d / 'vocab.txt').write_text('<S>\n</S>\n<UNK>\nThe\ncat\n')
    (d / 'rt').mkdir()
    for name in ('rt-polarity.pos', 'rt-polarity.neg'):
        (d / 'rt' / name).write_text('a fine film .\n' * 20)
    (d / 'export').mkdir()
    for name in ('options.json', 'vocab.txt'):
        shutil.copy(os.path.join(ROOT, 'paddle_elmo', 'pretrained', name), d / 'export' / name)
    for name in ('inference.json', 'inference.pdiparams', 'model.onnx'):
        (d / 'export' / name).write_bytes(b'')
    (d / 'ckpt').mkdir()
    shutil.copy(os.path.join(ROOT, 'paddle_elmo', 'pretrained', 'options.json'), d / 'ckpt' / 'options.json')
    (d / 'ckpt' / 'final.pdparams').write_bytes(b'')
    return d


@pytest.mark.venv
def test_the_core_install_holds_no_optional_package_and_runs_build_vocab(core_venv, core_inputs, tmp_path):
    assert installed_packages(core_venv, tmp_path) == set()
    proc = run_in(core_venv, ['paddle-elmo', 'build-vocab', '--train_data_path', str(core_inputs / 'in.txt'),
                              '--output_file', str(tmp_path / 'v.txt')], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / 'v.txt').read_text().split()[:3] == ['<S>', '</S>', '<UNK>']


@pytest.mark.venv
def test_the_core_install_answers_every_command_s_help(core_venv, tmp_path):
    from paddle_elmo.cli import COMMANDS
    assert_every_help_answers(run_in(core_venv, ['python', '-c', HELP_OF_EVERY_COMMAND], tmp_path), COMMANDS)


@pytest.mark.venv
def test_the_core_install_s_python_api_names_the_extra(core_venv, core_inputs, tmp_path):
    proc = run_in(core_venv, ['python', '-c', CORE_PYTHON, str(core_inputs / 'export')], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    needs_paddle = {name: e for name, e in result['names'].items() if e is not None}
    assert {'ELMoEmbedder', 'Elmo', 'BiLM', 'ScalarMix'} <= set(needs_paddle)
    # a model's configuration and files are read without Paddle (the commands check them before importing it)
    assert all(result['names'][name] is None for name in ('ModelConfig', 'read_model_config', 'resolve_model',
                                                           'LoadedModel'))
    for name, (kind, message, chain_hidden) in [*needs_paddle.items(), ('quick start', result['quick_start'])]:
        assert kind == 'MissingPackageError' and '\n' not in message, (name, message)
        assert message.startswith('paddle cannot be imported') and CPU_EXTRA in message, (name, message)
        assert chain_hidden, name  # `raise ... from None`: no ModuleNotFoundError traceback above it
    kind, message, _ = result['export']  # neither Paddle nor onnxruntime: [serve] runs an export
    assert kind == 'MissingPackageError' and message.startswith('onnxruntime cannot be imported')
    assert SERVE_EXTRA in message


@pytest.mark.venv
def test_the_core_install_s_quick_start_ends_in_one_line_naming_the_extra(core_venv, tmp_path):
    proc = run_in(core_venv, ['python', '-c', 'from paddle_elmo import ELMoEmbedder; ELMoEmbedder()'], tmp_path)
    assert proc.returncode == 1
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith('paddle_elmo.fileio.MissingPackageError: paddle cannot be imported') and CPU_EXTRA in last
    assert 'ModuleNotFoundError' not in proc.stderr and 'During handling' not in proc.stderr, proc.stderr


# Every model-running command, with inputs good enough to get past its flags -> the extra it names.
CORE_COMMANDS = {
    'embed': (['embed', 'in.txt', 'out.hdf5'], CPU_EXTRA),
    'embed --inference_model': (['embed', 'in.txt', 'out.hdf5', '--inference_model', 'export'], SERVE_EXTRA),
    'predict': (['predict', '--prefix', 'The cat'], CPU_EXTRA),
    'eval': (['eval', '--dev_data_path', 'in.txt'], CPU_EXTRA),
    'pretrain': (['pretrain', '--train_data_path', 'in.txt', '--vocab_file', 'vocab.txt', '--save_dir', 'out'],
                 CPU_EXTRA),
    'finetune': (['finetune', '--data_dir', 'rt'], CPU_EXTRA),
    # its flags parse without Paddle (--help answers): the first package its work needs is gensim
    'word2vec': (['word2vec', '--data_dir', 'rt', '--train_data_path', 'in.txt'], CLASSIFY_EXTRA),
    'dump': (['dump', '--output_file', 'out.hdf5'], CPU_EXTRA),
    'export-weights': (['export-weights', '--model', 'ckpt', '--output_dir', 'out'], CPU_EXTRA),
    'export-inference': (['export-inference', '--output_dir', 'out'], CPU_EXTRA),
    'demo': (['demo', '--output_dir', 'out'], CPU_EXTRA),
}


@pytest.mark.venv
@pytest.mark.parametrize('command', list(CORE_COMMANDS))
def test_the_core_install_s_commands_end_in_one_line_naming_the_extra(command, core_venv, core_inputs, tmp_path):
    argv, extra = CORE_COMMANDS[command]
    work = tmp_path / 'work'
    shutil.copytree(core_inputs, work)
    proc = run_in(core_venv, ['paddle-elmo', *argv], work)
    line = one_line_error(proc)  # exit 2: the install is the user's to complete (README, "Output, logs and errors")
    assert ' cannot be imported (No module named ' in line and extra in line, line
    assert not (work / 'out.hdf5').exists() and not (work / 'out').exists()  # nothing written


# ---- the [serve] install -----------------------------------------------------------------------------


@pytest.mark.venv
def test_the_serve_install_embeds_an_export_without_a_backend_named(serve_venv, bundled_export, tmp_path):
    assert installed_packages(serve_venv, tmp_path) == {'onnxruntime'}  # the install is what it claims
    python = os.path.join(serve_venv, 'bin', 'python')
    env = {k: v for k, v in os.environ.items() if k != 'PYTHONPATH'}
    child = run_child(python, bundled_export, tmp_path / 'api', env)  # InferenceEmbedder and cli.main, as installed
    from paddle_elmo.export.inference import InferenceEmbedder
    expected = InferenceEmbedder(bundled_export, backend='onnxruntime').encode(SENTENCES)
    assert_served_without_paddle(tmp_path / 'api', bundled_export, child, expected)
    # the installed command itself, as README shows it
    out = tmp_path / 'command.hdf5'
    proc = run_in(serve_venv, ['paddle-elmo', 'embed', str(tmp_path / 'api' / 'input.txt'), str(out),
                               '--inference_model', bundled_export], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f'wrote {len(SENTENCES)} sentences' in proc.stdout and 'run by onnxruntime' in proc.stderr
    with h5py.File(out, 'r') as f:
        for i, e in enumerate(expected):
            np.testing.assert_allclose(f[str(i)][...], e, rtol=1e-5, atol=1e-5)
    # what [serve] does not do: an explicit paddle backend, and the model itself, name [cpu]
    for argv in (['--inference_model', bundled_export, '--inference_backend', 'paddle'], []):
        proc = run_in(serve_venv, ['paddle-elmo', 'embed', str(tmp_path / 'api' / 'input.txt'),
                                   str(tmp_path / 'no.hdf5'), *argv], tmp_path)
        assert CPU_EXTRA in one_line_error(proc) and not (tmp_path / 'no.hdf5').exists()


# ---- the [cpu] install -------------------------------------------------------------------------------

# README's jobs for a [cpu] user, one after the other in one process (bash), each command's exit code
# in $OUT/codes and its output in $OUT/NAME.out / .err. The pretraining is a tiny model (the
# arguments after OUT) on the demo's corpus and vocabulary: checkpoints at steps 2 and 4, then a
# resume from 2 to step 6 in a directory of its own (the finished run's 'final' is kept).
CPU_JOURNEY = textwrap.dedent('''
    OUT=$1; shift; TINY=("$@")
    step() { name=$1; shift; "$@" > "$OUT/$name.out" 2> "$OUT/$name.err"; echo "$name $?" >> "$OUT/codes"; }
    TRAIN=$(python -c 'from paddle_elmo.text.corpus import SAMPLE_TRAIN; print(SAMPLE_TRAIN)')
    HELDOUT=$(python -c 'from paddle_elmo.text.corpus import SAMPLE_HELDOUT; print(SAMPLE_HELDOUT)')
    printf "It's raining, isn't it?\\nShe paid the bank.\\n" > "$OUT/sentences.txt"
    step demo paddle-elmo demo --output_dir "$OUT/demo"
    step pretrain paddle-elmo pretrain --train_data_path "$TRAIN" --vocab_file "$OUT/demo/vocab.txt" \\
        --save_dir "$OUT/run" --max_steps 4 --save_freq 2 --log_freq 1 --seed 1 "${TINY[@]}"
    step resume paddle-elmo pretrain --train_data_path "$TRAIN" --vocab_file "$OUT/demo/vocab.txt" \\
        --save_dir "$OUT/resumed" --init_from_ckpt "$OUT/run/2" --max_steps 6 "${TINY[@]}"
    step eval paddle-elmo eval --dev_data_path "$HELDOUT" --init_from_ckpt "$OUT/run/final" --batch_size 8
    step predict paddle-elmo predict --prefix "The stock market" --top_k 5
    step embed paddle-elmo embed "$OUT/sentences.txt" "$OUT/out.hdf5"
    step export paddle-elmo export-inference --init_from_ckpt "$OUT/run/final" --output_dir "$OUT/export"
    step embed_export paddle-elmo embed "$OUT/sentences.txt" "$OUT/export.hdf5" --inference_model "$OUT/export"
    step quick_start python "$OUT/readme_first_lines.py"
''')
STEPS = ['demo', 'pretrain', 'resume', 'eval', 'predict', 'embed', 'export', 'embed_export', 'quick_start']


@pytest.fixture(scope='module')
def cpu_journey(cpu_venv, tmp_path_factory):
    """CPU_JOURNEY run in the [cpu] environment -> (its directory, {step: exit code})."""
    out = tmp_path_factory.mktemp('cpu_journey')
    (out / 'readme_first_lines.py').write_text(readme_first_python(), encoding='utf-8')
    start = time.time()
    proc = run_in(cpu_venv, ['bash', '-c', CPU_JOURNEY, 'journey', str(out), *TINY_MODEL], out, timeout=3600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    print(f'\n[cpu] journey: {time.time() - start:.0f} s')
    codes = dict(line.split() for line in (out / 'codes').read_text().splitlines())
    return out, {step: int(code) for step, code in codes.items()}


def readme_first_python():
    """README's first Python block: what a user runs first after the install."""
    with open(os.path.join(ROOT, 'README.md'), encoding='utf-8') as f:
        return re.search(r'```python\n(.*?)```', f.read(), re.S).group(1)


def plot_lines(text):
    return [line for line in text.splitlines() if 'train_curve.png' in line and 'not drawn' in line]


@pytest.mark.venv
def test_the_cpu_install_runs_readme_s_jobs_without_the_plot_extra(cpu_venv, cpu_journey, tmp_path):
    out, codes = cpu_journey
    failed = {step: (out / f'{step}.err').read_text()[-2000:] for step, code in codes.items() if code != 0}
    assert not failed, failed
    assert list(codes) == STEPS
    installed = installed_packages(cpu_venv, tmp_path)
    assert {'paddle', 'onnxruntime', 'onnx', 'paddle2onnx'} <= installed and 'matplotlib' not in installed
    read = lambda name: (out / name).read_text()  # noqa: E731
    # demo: its pretraining skipped the curve in one line, and the summary points at the log instead
    assert len(plot_lines(read('demo.err'))) == 1 and 'Done in' in read('demo.out')
    assert f'training curve: {out / "demo" / "checkpoints" / "train_log.csv"}' in read('demo.out')
    # pretrain: checkpoints, one line about the curve per run, the resume continuing from step 2
    for name in ('pretrain.err', 'resume.err'):
        [line] = plot_lines(read(name))
        assert line.startswith(PLOT_SKIPPED) and line.endswith('pip install "paddle-elmo[plot]"')
    assert 'step 3/6' in read('resume.err') and 'step 1/' not in read('resume.err')
    assert {'2.pdparams', 'final.pdparams'} <= set(os.listdir(out / 'run'))
    assert {'4.pdparams', 'final.pdparams', 'options.json'} <= set(os.listdir(out / 'resumed'))  # 4: the resume's
    assert not (out / 'run' / 'train_curve.png').exists()
    # eval, predict, embed, export, and embed of the export (Paddle chosen: it can be imported)
    assert 'perplexity' in read('eval.out')
    assert len([line for line in read('predict.out').splitlines() if line.startswith('  0.')]) == 5
    with h5py.File(out / 'out.hdf5', 'r') as f:
        assert f['0'].shape == (3, 8, 256) and f['1'].shape == (3, 5, 256)  # moses: It 's raining , isn 't it ?
    assert {'inference.json', 'inference.pdiparams', 'model.onnx', 'options.json'} <= set(os.listdir(out / 'export'))
    assert 'run by paddle' in read('embed_export.err')
    with h5py.File(out / 'export.hdf5', 'r') as f:
        assert f['0'].shape == (3, 4, 16)  # the tiny model's tokenizer: whitespace (It's raining, isn't it?)
    shape = read('quick_start.out').strip()  # README's first lines: the shape their comment gives
    assert shape == '(3, 8, 256)' and f'# {shape}: ' in readme_first_python()
