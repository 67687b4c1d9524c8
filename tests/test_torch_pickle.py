"""Torch state dicts read without torch (files/torch_pickle.py): the legacy serialization of the
released ELMoForManyLangs models and the zip one of torch >= 1.6 give the same arrays, strides and
offsets honoured, and a file asking for anything a state dict does not hold is refused in one line."""
import os
import pickle
import subprocess
import sys
import zipfile

import numpy as np
import pytest

from conftest import ROOT, SHARED, require
from paddle_elmo.fileio import InputError
from paddle_elmo.files.torch_pickle import LEGACY_MAGIC, LEGACY_PROTOCOL, read_state_dict

EFML_MODEL = os.path.join(SHARED, 'fixtures', 'efml-tiny', 'model')
ZIP_COPY = os.path.join(ROOT, 'tests', 'fixtures', 'efml-tiny-zip')  # tools/make_efml_zip_fixture.py's


def _legacy_file(path, payload):
    """A file in the legacy layout around `payload` (the bytes of the state dict's pickle), no storages."""
    with open(path, 'wb') as f:
        for header in (LEGACY_MAGIC, LEGACY_PROTOCOL, {'protocol_version': LEGACY_PROTOCOL, 'little_endian': True}):
            pickle.dump(header, f, protocol=2)
        f.write(payload)
        pickle.dump([], f, protocol=2)


@pytest.mark.parametrize('name', ['token_embedder', 'encoder'])
def test_legacy_state_dicts_read_without_torch(name):
    state = read_state_dict(require(os.path.join(EFML_MODEL, f'{name}.pkl')))
    assert state and all(isinstance(v, np.ndarray) and v.dtype == np.float32 for v in state.values())
    if name == 'token_embedder':
        assert state['char_emb_layer.embedding.weight'].shape == (64, 6)
        assert state['convolutions.2.weight'].shape == (8, 6, 3)
        assert state['highways._layers.0.weight'].shape == (32, 16)
    else:
        assert state['forward_layer_0.input_linearity.weight'].shape == (64, 8)
        assert state['backward_layer_1.state_projection.weight'].shape == (8, 16)
    assert all(np.isfinite(v).all() and np.abs(v).max() > 0 for v in state.values())


@pytest.mark.parametrize('name', ['token_embedder', 'encoder'])
def test_zip_serialization_equals_the_legacy_one(name):
    legacy = read_state_dict(require(os.path.join(EFML_MODEL, f'{name}.pkl')))
    zipped_path = os.path.join(ZIP_COPY, f'{name}.pkl')
    assert zipfile.is_zipfile(zipped_path)
    zipped = read_state_dict(zipped_path)
    assert list(zipped) == list(legacy)
    for key in legacy:
        np.testing.assert_array_equal(zipped[key], legacy[key])


def test_views_of_a_shared_storage_keep_their_strides_and_offsets():
    """The zip copy holds, beside the state dict's tensors, a transposed view and a slice at an
    offset of one storage (tools/make_efml_zip_fixture.py): read back as torch made them."""
    views = read_state_dict(os.path.join(ZIP_COPY, 'views.pt'))
    base = np.arange(24, dtype=np.float32).reshape(4, 6)
    np.testing.assert_array_equal(views['base'], base)
    np.testing.assert_array_equal(views['transposed'], base.T)
    np.testing.assert_array_equal(views['offset_slice'], base[1:3, 2:5])
    np.testing.assert_array_equal(views['longs'], np.arange(5, dtype=np.int64))


def test_a_global_outside_a_state_dict_is_refused_naming_file_and_global(tmp_path):
    path = tmp_path / 'evil.pkl'
    _legacy_file(path, b'\x80\x02cos\nsystem\nq\x00X\x04\x00\x00\x00truet\x85R.')
    with pytest.raises(InputError) as error:
        read_state_dict(path)
    message = str(error.value)
    assert str(path) in message and 'os.system' in message and '\n' not in message


def test_a_refused_global_in_the_zip_form_is_named(tmp_path):
    path = tmp_path / 'evil.pt'
    with zipfile.ZipFile(path, 'w') as archive:
        archive.writestr('evil/data.pkl', b'\x80\x02cbuiltins\neval\nq\x00X\x01\x00\x00\x001\x85R.')
    with pytest.raises(InputError, match=r'evil\.pt: refused global builtins\.eval'):
        read_state_dict(path)


def test_a_file_that_is_no_torch_file_is_one_line(tmp_path):
    path = tmp_path / 'not.pkl'
    path.write_bytes(b'hello world')
    with pytest.raises(InputError, match='not.pkl'):
        read_state_dict(path)
    truncated = tmp_path / 'truncated.pkl'
    truncated.write_bytes(open(require(os.path.join(EFML_MODEL, 'encoder.pkl')), 'rb').read()[:-100])
    with pytest.raises(InputError, match='truncated.pkl'):
        read_state_dict(truncated)


def test_reading_needs_no_torch():
    """The reader and the EFML model load in a process where torch cannot be imported."""
    code = ('import sys; sys.modules["torch"] = None\n'
            'from paddle_elmo.files.torch_pickle import read_state_dict\n'
            f'print(len(read_state_dict({os.path.join(EFML_MODEL, "encoder.pkl")!r})))')
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, cwd=ROOT,
                         env={**os.environ, 'PYTHONPATH': ROOT})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == '16'
