"""The model bundled in pretrained/: the default of ELMoEmbedder(), `paddle-elmo embed` and run_finetune.py."""
import json
import logging
import os

import h5py
import numpy as np
import pytest

from paddle_elmo.files import model_io
from conftest import ROOT
from helpers import check_result, run_script  # rt_slice: the fixture in conftest

BUNDLED = os.path.join(ROOT, 'paddle_elmo', 'pretrained')
OPTIONS, WEIGHTS = os.path.join(BUNDLED, 'options.json'), os.path.join(BUNDLED, 'weights.hdf5')
SENTENCES = [['The', 'film', 'is', 'a', 'delight', '.'], ['Dull', 'and', 'far', 'too', 'long', '.']]


def test_bundled_files_are_a_float32_bilm_with_a_float16_softmax_small_enough_to_ship():
    assert os.path.getsize(WEIGHTS) < 34 * 2 ** 20  # the two bundled models together: <= 60 MB in the wheel
    with h5py.File(WEIGHTS, 'r') as f:
        names = []
        f.visit(lambda name: names.append(name) if isinstance(f[name], h5py.Dataset) else None)
        softmax = [n for n in names if n.startswith('softmax')]
        assert sorted(softmax) == ['softmax/W', 'softmax/b'] and f['softmax/W'].shape == (35003, 128)
        assert {f[n].dtype for n in softmax} == {np.dtype('float16')}
        assert {f[n].dtype for n in names if n not in softmax} == {np.dtype('float32')}
    with open(os.path.join(BUNDLED, 'README.md'), encoding='utf-8') as f:
        card = f.read()
    with open(OPTIONS, encoding='utf-8') as f:
        options = json.load(f)
    # The card describes these files: its recipe line names their shape.
    assert f"LSTM {options['lstm']['dim']}" in card and f"projection {options['lstm']['projection_dim']}" in card


def test_embedder_without_a_model_loads_the_bundled_one_and_says_so(caplog):
    from paddle_elmo import ELMoEmbedder
    with caplog.at_level(logging.WARNING, logger='paddle_elmo'):
        default = ELMoEmbedder().encode(SENTENCES)
    said = [r for r in caplog.records if 'bundled model' in r.getMessage()]  # a warning in the log (stderr)
    assert [(r.name, r.levelno) for r in said] == [('paddle_elmo.files.model_io', logging.WARNING)]
    explicit = ELMoEmbedder(options_file=OPTIONS, weight_file=WEIGHTS).encode(SENTENCES)
    for a, b in zip(default, explicit):
        assert a.shape == (3, 6, 256)
        np.testing.assert_array_equal(a, b)


def test_missing_bundle_is_an_error_naming_the_file(monkeypatch, tmp_path):
    from paddle_elmo.files import model_names
    monkeypatch.setattr(model_names, 'PACKAGE_DIR', str(tmp_path))
    (tmp_path / 'pretrained').mkdir()
    with pytest.raises(FileNotFoundError, match=str(tmp_path / 'pretrained' / 'options.json')):
        model_io.resolve_model().load()


def test_run_embed_without_a_model_uses_the_bundled_one(tmp_path):
    src = tmp_path / 'sentences.txt'
    src.write_text('\n'.join(' '.join(s) for s in SENTENCES) + '\n', encoding='utf-8')
    proc = run_script('embed', str(src), str(tmp_path / 'out.hdf5'), '--output_format', 'top')
    assert proc.returncode == 0, proc.stderr
    assert 'bundled model' in proc.stderr
    with h5py.File(tmp_path / 'out.hdf5', 'r') as f:
        assert f['0'].shape == (6, 256)


def test_run_finetune_without_a_model_uses_the_bundled_one(rt_slice, tmp_path):  # noqa: F811
    out = tmp_path / 'elmo.json'
    proc = run_script('run_finetune.py', '--data_dir', str(rt_slice), '--folds', '2', '--epochs', '1',
                      '--output_json', str(out), '--quiet')
    assert proc.returncode == 0, proc.stderr
    assert 'bundled model' in proc.stderr
    features = check_result(out, 2)['features']
    assert features['model'] == {'name': 'bundled', 'options_file': OPTIONS, 'weight_file': WEIGHTS}
    assert features['projection_dim'] == 128


def test_predict_and_eval_without_a_model_use_the_bundled_softmax(tmp_path):
    out = tmp_path / 'p.json'
    proc = run_script('predict', '--prefix', 'the stock market', '--top_k', '5', '--output_json', str(out))
    assert proc.returncode == 0, proc.stderr
    assert 'bundled model' in proc.stderr
    top = json.loads(out.read_text())['predictions'][0]['top']
    assert len(top) == 5 and all(0 < t['prob'] < 1 for t in top)
    assert [t['prob'] for t in top] == sorted((t['prob'] for t in top), reverse=True)
    heldout = tmp_path / 'heldout.txt'
    heldout.write_text('The stock market fell sharply on Monday .\nShe said it was a good film .\n', encoding='utf-8')
    proc = run_script('run_eval.py', '--dev_data_path', str(heldout), '--output_json', str(tmp_path / 'e.json'))
    assert proc.returncode == 0, proc.stderr
    perplexity = json.loads((tmp_path / 'e.json').read_text())['perplexity']
    assert 1 < perplexity < 1000  # a trained softmax: far below the 35,003 of a uniform guess
