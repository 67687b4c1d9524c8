"""Serving an ONNX export where Paddle is not installed: InferenceEmbedder(DIR, backend='onnxruntime')
and `paddle-elmo embed --inference_model DIR --inference_backend onnxruntime` need numpy, h5py,
onnxruntime and the package's text code only (the core install and the [serve] extra), and give
the numbers the full install gives on the same export."""
import json
import os
import subprocess
import sys
import textwrap
import tomllib

import h5py
import numpy as np
import pytest

from conftest import ROOT
from helpers import BLOCK_PACKAGES

SENTENCES = ['The bank of the river .', 'She paid the bank on friday .', 'x', 'antidisestablishmentarianism']

# Run in a child: embeds SENTENCES with InferenceEmbedder (-> OUT/encode.npz), then runs the embed
# command (-> OUT/embed.hdf5, its stderr in OUT/embed.err). With BLOCKED_PACKAGES=paddle, importing
# Paddle fails, as where it is not installed.
CHILD = BLOCK_PACKAGES + textwrap.dedent('''
    import json
    import numpy as np
    from paddle_elmo.inference import InferenceEmbedder
    model_dir, out, sentences = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    layers = InferenceEmbedder(model_dir, backend='onnxruntime').encode(sentences)
    np.savez(os.path.join(out, 'encode.npz'), *layers)
    assert not [m for m in sys.modules if m == 'paddle' or m.startswith('paddle.')]
    with open(os.path.join(out, 'input.txt'), 'w') as f:
        f.write(''.join(s + chr(10) for s in sentences))
    from paddle_elmo.cli import main
    sys.stderr = open(os.path.join(out, 'embed.err'), 'w')
    main(['embed', os.path.join(out, 'input.txt'), os.path.join(out, 'embed.hdf5'), '--inference_model', model_dir,
          '--inference_backend', 'onnxruntime', '--quiet'])
''')


@pytest.fixture(scope='module')
def bundled_export(tmp_path_factory):
    """The bundled model exported (float32, Paddle + ONNX) by the full install -> (directory, what
    the full install's onnxruntime run gives for SENTENCES)."""
    from paddle_elmo.deploy import export_inference
    from paddle_elmo.inference import InferenceEmbedder
    out = str(tmp_path_factory.mktemp('serve') / 'elmo_inference')
    export_inference('bundled', out)
    return out, InferenceEmbedder(out, backend='onnxruntime').encode(SENTENCES)


def run_child(python, model_dir, out, env):
    os.makedirs(out, exist_ok=True)
    proc = subprocess.run([python, '-c', CHILD, model_dir, str(out), json.dumps(SENTENCES)], capture_output=True,
                          text=True, timeout=600, env=env)
    err = os.path.join(out, 'embed.err')
    assert proc.returncode == 0, proc.stderr[-3000:] + (open(err).read()[-3000:] if os.path.exists(err) else '')
    return proc


def assert_same_layers(out, expected):
    """The child's encode.npz and embed.hdf5 hold `expected` (the full install's numbers; the same
    runtime on the same file: float rounding only)."""
    with np.load(os.path.join(out, 'encode.npz')) as f:
        got = [f[f'arr_{i}'] for i in range(len(expected))]
    with h5py.File(os.path.join(out, 'embed.hdf5'), 'r') as f:
        written = [f[str(i)][...] for i in range(len(expected))]
    for g, w, e in zip(got, written, expected):
        assert g.shape == w.shape == e.shape == (3, e.shape[1], 256)
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(w, e, rtol=1e-5, atol=1e-5)


def test_an_export_serves_with_paddle_unimportable(bundled_export, tmp_path):
    # The quick form of the venv test below: the same code path, Paddle's import made to fail.
    model_dir, expected = bundled_export
    env = {k: v for k, v in os.environ.items() if k != 'PYTHONPATH'}
    run_child(sys.executable, model_dir, tmp_path, dict(env, PYTHONPATH=ROOT, BLOCKED_PACKAGES='paddle'))
    assert_same_layers(tmp_path, expected)


def serve_requirements():
    """The core install's and the [serve] extra's requirements, as pyproject.toml states them."""
    with open(os.path.join(ROOT, 'pyproject.toml'), 'rb') as f:
        project = tomllib.load(f)['project']
    return project['dependencies'] + project['optional-dependencies']['serve']


def pip(*args, timeout=900):
    """This environment's pip (`--python DIR/bin/python` installs into another) -> its CompletedProcess."""
    return subprocess.run([sys.executable, '-m', 'pip', *args], capture_output=True, text=True, timeout=timeout,
                          env={k: v for k, v in os.environ.items() if k != 'PYTHONPATH'})


@pytest.fixture(scope='session')
def serve_venv(tmp_path_factory, checkout_wheel):
    """A fresh virtual environment with the core and [serve] requirements and this checkout's wheel
    installed (--no-deps), no Paddle: built once per session. This environment's pip installs into
    it (`pip --python`), so the new one needs no pip of its own (creating it with pip took ~6 s).
    This is why the tests that use it take a while (less when pip's cache holds the wheels); skipped,
    naming why, when pip cannot reach a package index (CI=true fails instead: CI has the registries)."""
    probe = pip('download', '--no-deps', '--dest', str(tmp_path_factory.mktemp('probe')), 'tqdm', timeout=300)
    if probe.returncode != 0:
        message = f'pip cannot reach a package index: {probe.stderr.strip().splitlines()[-1:]}'
        if os.environ.get('CI') == 'true':
            pytest.fail(f'{message}; CI=true requires it')
        pytest.skip(message)
    venv = tmp_path_factory.mktemp('serve_venv')
    subprocess.run([sys.executable, '-m', 'venv', '--without-pip', str(venv)], check=True, timeout=300)
    python = str(venv / 'bin' / 'python')
    for args in (['install', '-q', *serve_requirements()], ['install', '-q', '--no-deps', str(checkout_wheel)]):
        proc = pip('--python', python, *args)
        assert proc.returncode == 0, f'pip {" ".join(args)}:\n{proc.stderr[-3000:]}'
    return venv


@pytest.mark.venv
def test_an_export_serves_in_a_venv_without_paddle(serve_venv, bundled_export, tmp_path):
    model_dir, expected = bundled_export
    python = str(serve_venv / 'bin' / 'python')
    absent = subprocess.run([python, '-c', 'import importlib.util as u; print([m for m in ("paddle", "gensim", '
                             '"sklearn", "onnx", "paddle2onnx") if u.find_spec(m)])'], capture_output=True, text=True,
                            timeout=120, cwd=str(tmp_path))
    assert absent.stdout.strip() == '[]', absent.stdout + absent.stderr  # the install is what it claims
    env = {k: v for k, v in os.environ.items() if k != 'PYTHONPATH'}
    run_child(python, model_dir, tmp_path / 'api', env)  # InferenceEmbedder and cli.main, as installed
    assert_same_layers(tmp_path / 'api', expected)
    # the installed command itself
    out = tmp_path / 'command.hdf5'
    proc = subprocess.run([str(serve_venv / 'bin' / 'paddle-elmo'), 'embed', str(tmp_path / 'api' / 'input.txt'),
                           str(out), '--inference_model', model_dir, '--inference_backend', 'onnxruntime'],
                          capture_output=True, text=True, timeout=600, env=env, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f'wrote {len(SENTENCES)} sentences' in proc.stdout
    with h5py.File(out, 'r') as f:
        for i, e in enumerate(expected):
            np.testing.assert_allclose(f[str(i)][...], e, rtol=1e-5, atol=1e-5)
