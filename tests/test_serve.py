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

import numpy as np
import pytest

from conftest import ROOT
from helpers import BLOCK_PACKAGES, SENTENCES, assert_served_without_paddle, run_child


@pytest.fixture(scope='module')
def expected(bundled_export):
    """What this (full) install's onnxruntime run of the bundled export gives for SENTENCES."""
    from paddle_elmo.export.inference import InferenceEmbedder
    return InferenceEmbedder(bundled_export, backend='onnxruntime').encode(SENTENCES)


def test_an_export_serves_with_paddle_unimportable(bundled_export, expected, tmp_path):
    # The quick form of test_installs' [serve] venv: the same code path, Paddle's import made to fail.
    env = {k: v for k, v in os.environ.items() if k != 'PYTHONPATH'}
    child = run_child(sys.executable, bundled_export, tmp_path, dict(env, PYTHONPATH=ROOT, BLOCKED_PACKAGES='paddle'))
    assert_served_without_paddle(tmp_path, bundled_export, child, expected)


def test_with_paddle_the_default_backend_is_paddle_and_says_so(bundled_export, caplog):
    from paddle_elmo.export.inference import InferenceEmbedder
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
    from paddle_elmo.export.inference import InferenceEmbedder
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


# Run in a child: choose_backend on the directory argv[1], with $BLOCKED_PACKAGES unimportable -> the
# backend on stdout, its one line on stderr.
CHOOSE = BLOCK_PACKAGES + '''
import logging
from paddle_elmo.export.inference import choose_backend
logging.basicConfig(level=logging.INFO, format='%(message)s')
print(choose_backend(sys.argv[1]))
'''


@pytest.mark.parametrize('blocked, backend, why', [
    ('', 'onnxruntime', 'on its int8 model.onnx (the export is int8;'),
    ('paddle', 'onnxruntime', 'on its int8 model.onnx (the export is int8;'),
    ('onnxruntime', 'paddle', 'on its inference.json (float32: its int8 model.onnx is skipped, onnxruntime cannot '
                              'be imported;')])
def test_an_int8_export_runs_on_onnxruntime_by_default_and_says_so(blocked, backend, why, tmp_path):
    # The choice reads the directory and the install, not the models: an export's files, empty, and its
    # export.json saying int8 (test_export runs a real int8 export this way). Where Paddle can be imported
    # too, the int8 model is the one the export was made for; without onnxruntime, the line says it is skipped.
    model_dir = tmp_path / 'int8'
    model_dir.mkdir()
    for name in ('inference.json', 'inference.pdiparams', 'model.onnx'):
        (model_dir / name).write_bytes(b'')
    (model_dir / 'export.json').write_text(json.dumps({'precision': 'int8: dynamic, per-token', 'verified': {}}))
    env = dict(os.environ, PYTHONPATH=ROOT, BLOCKED_PACKAGES=blocked)
    proc = subprocess.run([sys.executable, '-c', CHOOSE, str(model_dir)], capture_output=True, text=True, env=env,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split() == [backend]
    assert [line for line in proc.stderr.splitlines() if 'run by' in line] == [
        f'{model_dir}: run by {backend} {why} --inference_backend or backend= chooses)']


def test_an_int8_export_runs_on_the_backend_named(tmp_path, caplog):
    from paddle_elmo.export.inference import choose_backend
    (tmp_path / 'export.json').write_text(json.dumps({'precision': 'int8: dynamic'}))
    with caplog.at_level(logging.INFO, logger='paddle_elmo'):
        assert choose_backend(str(tmp_path), 'paddle') == 'paddle'
    assert not caplog.records  # asked for: nothing to explain
