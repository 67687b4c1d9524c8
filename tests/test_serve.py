"""Serving an ONNX export where Paddle is not installed: InferenceEmbedder(DIR) and `paddle-elmo embed
--inference_model DIR` need numpy, h5py, onnxruntime and the package's text code only (the core
install and the [serve] extra), choose onnxruntime by themselves there (inference.choose_backend),
and give the numbers the full install gives on the same export. Here Paddle's import is made to
fail; test_installs runs the same child in a fresh [serve] venv."""
import json
import logging
import os
import subprocess
import sys
import textwrap

import h5py
import numpy as np
import pytest

from conftest import ROOT
from helpers import BLOCK_PACKAGES

SENTENCES = ['The bank of the river .', 'She paid the bank on friday .', 'x', 'antidisestablishmentarianism']

# Run in a child: embeds SENTENCES with InferenceEmbedder, no backend named (-> OUT/encode.npz, and
# OUT/child.json: the backend it chose, the error of an explicit backend='paddle'), then runs the
# embed command without --inference_backend (-> OUT/embed.hdf5, its stderr in OUT/embed.err). With
# BLOCKED_PACKAGES=paddle, importing Paddle fails, as where it is not installed.
CHILD = BLOCK_PACKAGES + textwrap.dedent('''
    import json
    import numpy as np
    from paddle_elmo.inference import InferenceEmbedder
    model_dir, out, sentences = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    embedder = InferenceEmbedder(model_dir)
    np.savez(os.path.join(out, 'encode.npz'), *embedder.encode(sentences))
    assert not [m for m in sys.modules if m == 'paddle' or m.startswith('paddle.')]
    try:
        InferenceEmbedder(model_dir, backend='paddle')
        explicit = None
    except ImportError as e:
        explicit = [type(e).__name__, str(e)]
    with open(os.path.join(out, 'child.json'), 'w') as f:
        json.dump({'backend': embedder.backend, 'explicit_paddle': explicit}, f)
    with open(os.path.join(out, 'input.txt'), 'w') as f:
        f.write(''.join(s + chr(10) for s in sentences))
    from paddle_elmo.cli import main
    sys.stderr = open(os.path.join(out, 'embed.err'), 'w')
    main(['embed', os.path.join(out, 'input.txt'), os.path.join(out, 'embed.hdf5'), '--inference_model', model_dir])
''')


@pytest.fixture(scope='module')
def expected(bundled_export):
    """What this (full) install's onnxruntime run of the bundled export gives for SENTENCES."""
    from paddle_elmo.inference import InferenceEmbedder
    return InferenceEmbedder(bundled_export, backend='onnxruntime').encode(SENTENCES)


def run_child(python, model_dir, out, env):
    """CHILD in `python` on the export `model_dir`, its files in `out` -> what it wrote to child.json."""
    os.makedirs(out, exist_ok=True)
    proc = subprocess.run([python, '-c', CHILD, model_dir, str(out), json.dumps(SENTENCES)], capture_output=True,
                          text=True, timeout=600, env=env)
    err = os.path.join(out, 'embed.err')
    assert proc.returncode == 0, proc.stderr[-3000:] + (open(err).read()[-3000:] if os.path.exists(err) else '')
    with open(os.path.join(out, 'child.json')) as f:
        return json.load(f)


def assert_served_without_paddle(out, model_dir, child, expected):
    """The child chose onnxruntime by itself, said so in one line, refused an explicit backend='paddle'
    naming the extra, and its encode.npz and embed.hdf5 hold `expected` (the full install's numbers;
    the same runtime on the same file: float rounding only)."""
    assert child['backend'] == 'onnxruntime'
    kind, message = child['explicit_paddle']
    assert kind == 'MissingPackageError' and message.startswith('paddle.inference cannot be imported')
    assert 'pip install "paddle-elmo[cpu]"' in message
    with open(os.path.join(out, 'embed.err')) as f:
        chosen = [line for line in f if 'run by' in line]
    assert chosen == [f'{model_dir}: run by onnxruntime on its model.onnx (Paddle cannot be imported; '
                      '--inference_backend or backend= chooses)\n']
    with np.load(os.path.join(out, 'encode.npz')) as f:
        got = [f[f'arr_{i}'] for i in range(len(expected))]
    with h5py.File(os.path.join(out, 'embed.hdf5'), 'r') as f:
        written = [f[str(i)][...] for i in range(len(expected))]
    for g, w, e in zip(got, written, expected):
        assert g.shape == w.shape == e.shape == (3, e.shape[1], 256)
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(w, e, rtol=1e-5, atol=1e-5)


def test_an_export_serves_with_paddle_unimportable(bundled_export, expected, tmp_path):
    # The quick form of test_installs' [serve] venv: the same code path, Paddle's import made to fail.
    env = {k: v for k, v in os.environ.items() if k != 'PYTHONPATH'}
    child = run_child(sys.executable, bundled_export, tmp_path, dict(env, PYTHONPATH=ROOT, BLOCKED_PACKAGES='paddle'))
    assert_served_without_paddle(tmp_path, bundled_export, child, expected)


def test_with_paddle_the_default_backend_is_paddle_and_says_so(bundled_export, caplog):
    from paddle_elmo.inference import InferenceEmbedder
    with caplog.at_level(logging.INFO, logger='paddle_elmo'):
        assert InferenceEmbedder(bundled_export).backend == 'paddle'
    assert [r.getMessage() for r in caplog.records if 'run by' in r.getMessage()] == [
        f'{bundled_export}: run by paddle on its inference.json (Paddle can be imported; --inference_backend or '
        'backend= chooses)']
    caplog.clear()
    with caplog.at_level(logging.INFO, logger='paddle_elmo'):
        assert InferenceEmbedder(bundled_export, backend='onnxruntime').backend == 'onnxruntime'
    assert not [r for r in caplog.records if 'run by' in r.getMessage()]  # asked for: nothing to explain


def test_an_onnx_only_export_runs_on_onnxruntime_by_default(bundled_export, expected, tmp_path, caplog):
    from paddle_elmo.inference import InferenceEmbedder
    onnx_only = tmp_path / 'onnx_only'
    onnx_only.mkdir()
    for name in os.listdir(bundled_export):
        if not name.startswith('inference.'):
            os.symlink(os.path.join(bundled_export, name), onnx_only / name)
    with caplog.at_level(logging.INFO, logger='paddle_elmo'):
        embedder = InferenceEmbedder(str(onnx_only))
    assert embedder.backend == 'onnxruntime' and 'the directory holds no inference.json' in caplog.text
    for got, e in zip(embedder.encode(SENTENCES), expected):
        np.testing.assert_allclose(got, e, rtol=1e-5, atol=1e-5)
    with pytest.raises(FileNotFoundError, match=r'inference\.json: not found; .* not an export for paddle'):
        InferenceEmbedder(str(onnx_only), backend='paddle')  # an explicit choice is kept, and fails clearly
