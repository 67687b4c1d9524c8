"""Serving an ONNX export where Paddle is not installed: InferenceEmbedder(DIR) and `paddle-elmo embed
--inference_model DIR` need numpy, h5py, onnxruntime and the package's text code only (the core
install and the [serve] extra), choose onnxruntime by themselves there (inference.choose_backend),
and give the numbers the full install gives on the same export. Here Paddle's import is made to
fail; test_installs runs the same child in a fresh [serve] venv."""
import logging
import os
import sys

import numpy as np
import pytest

from conftest import ROOT
from helpers import SENTENCES, assert_served_without_paddle, run_child


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
