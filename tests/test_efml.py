"""ELMoForManyLangs (EFML) model directories as released (files/efml_model.py, text/dictionary_ids.py,
the dict- token modes): the fixture's outputs, made by EFML's own code, are met to 1e-5 of each
layer's scale stateless, and stateful fed EFML's batch order meets its second call; in a process
where torch cannot be imported."""
import json
import os
import shutil
import sys

import h5py
import numpy as np
import pytest

from conftest import ROOT, SHARED, require
from paddle_elmo.fileio import InputError
from paddle_elmo.files.efml_model import DEFAULT_CONFIGS, read_efml_directory
from paddle_elmo.files.model_io import resolve_model
from paddle_elmo.text.dictionary_ids import Lexicon, read_dictionary

EFML = os.path.join(SHARED, 'fixtures', 'efml-tiny')
MODEL = os.path.join(EFML, 'model')
ZIP_COPY = os.path.join(ROOT, 'tests', 'fixtures', 'efml-tiny-zip')
TOLERANCE = 1e-5  # of each layer's largest magnitude: float32 sums in another order (measured ~3e-7)


@pytest.fixture
def no_torch(monkeypatch):
    """torch cannot be imported in this test (None in sys.modules makes `import torch` fail)."""
    monkeypatch.setitem(sys.modules, 'torch', None)


def sentences():
    with open(require(os.path.join(EFML, 'sentences.json')), encoding='utf-8') as f:
        return json.load(f)


def reference(name):
    with h5py.File(require(os.path.join(EFML, name)), 'r') as f:
        return [f[str(i)][...] for i in range(len(f))]


def assert_layers_close(outputs, expected):
    assert len(outputs) == len(expected)
    for i, (got, want) in enumerate(zip(outputs, expected)):
        assert got.shape == want.shape, (i, got.shape, want.shape)
        for k in range(want.shape[0]):
            scale = float(np.abs(want[k]).max())
            assert float(np.abs(got[k] - want[k]).max()) <= TOLERANCE * scale, (i, k)


def efml_batch_order(sents):
    """EFML's sents2elmo order: by length, longest first, ties in input order (one batch here)."""
    return sorted(range(len(sents)), key=lambda i: -len(sents[i]))


def test_embedder_meets_efml_first_call_stateless_without_torch(no_torch):
    from paddle_elmo.use.embedder import ELMoEmbedder
    embedder = ELMoEmbedder(require(MODEL))
    assert_layers_close(embedder.encode(sentences()), reference('reference.hdf5'))
    # stateless: a second call, and each sentence alone, give the same numbers
    assert_layers_close(embedder.encode(sentences()), reference('reference.hdf5'))
    assert_layers_close([embedder.encode([s])[0] for s in sentences()], reference('reference.hdf5'))


def test_stateful_fed_efml_batch_order_meets_its_second_call(no_torch):
    from paddle_elmo.use.embedder import ELMoEmbedder
    sents = sentences()
    order = efml_batch_order(sents)
    embedder = ELMoEmbedder(require(MODEL), stateful=True)
    first = embedder.encode([sents[i] for i in order])
    second = embedder.encode([sents[i] for i in order])
    assert_layers_close([first[order.index(i)] for i in range(len(sents))], reference('reference.hdf5'))
    assert_layers_close([second[order.index(i)] for i in range(len(sents))], reference('reference_second_call.hdf5'))


def test_a_directory_in_the_zip_serialization_gives_the_same_model(tmp_path, no_torch):
    from paddle_elmo.use.embedder import ELMoEmbedder
    directory = tmp_path / 'zipped'
    shutil.copytree(require(MODEL), directory)
    for name in ('token_embedder.pkl', 'encoder.pkl'):
        os.chmod(directory / name, 0o644)
        shutil.copy(os.path.join(ZIP_COPY, name), directory / name)
    assert_layers_close(ELMoEmbedder(str(directory)).encode(sentences()), reference('reference.hdf5'))


def test_resolve_model_reads_the_directory_as_one_model_value():
    model = resolve_model(require(MODEL))
    assert model.config.token_input == 'dict-word+char'
    assert (model.config.projection_dim, model.config.cell_dim, model.config.num_layers) == (8, 16, 2)
    assert model.config.word_dim == 4 and model.config.cnn_filters == [[1, 4], [2, 4], [3, 8]]
    assert model.config.tokenizer == 'whitespace'
    bilm = model.load()
    assert bilm.char_encoder.char_embed.weight.shape == [65, 6]  # char.dic's 64 rows + the "no token" row
    assert bilm.word_embedding.shape == [37, 4]
    assert 'encoder.pkl' in model.files()['efml_files']


def test_char_ids_swap_bow_and_eow_cut_long_words_and_read_the_one_field_line():
    chars = read_dictionary(require(os.path.join(MODEL, 'char.dic')))
    words = read_dictionary(os.path.join(MODEL, 'word.dic'))
    assert chars['\u3000'] == 7  # the line holding only an id: EFML's full-width space
    lexicon = Lexicon(chars, words, max_chars=20)
    ids = lexicon.token_char_ids('cat') - 1
    assert list(ids[:5]) == [chars['<eow>'], chars['c'], chars['a'], chars['t'], chars['<bow>']]
    assert (ids[5:] == chars['<pad>']).all()
    assert list(lexicon.token_char_ids('<S>')[:3] - 1) == [chars['<eow>'], chars['<bos>'], chars['<bow>']]
    long = 'x' * 30
    cut = lexicon.token_char_ids(long) - 1
    assert (cut[1:19] == chars['x']).all() and cut[19] == chars['<bow>']  # cut to 20 - 2 characters
    assert list(lexicon.token_char_ids('ŋ')[:3] - 1) == [chars['<eow>'], chars['<oov>'], chars['<bow>']]
    assert list(lexicon.encode(['cat', '<S>', '</S>', 'zzz'])) == [words['cat'], words['<bos>'], words['<eos>'],
                                                                   words['<oov>']]


def test_a_default_configuration_is_recognised_by_name(tmp_path):
    directory = tmp_path / 'released'
    shutil.copytree(require(MODEL), directory)
    os.chmod(directory / 'config.json', 0o644)
    (directory / 'config.json').write_text(json.dumps({'config_path': '/home/someone/cnn_50_100_512_4096_sample.json'}))
    options, source, _ = read_efml_directory(str(directory))
    assert 'default configuration' in source
    assert options['lstm']['dim'] == 4096 and options['char_cnn']['filters'][-1] == [7, 1024]
    assert options['word_embedding'] == {'dim': 100} and options['token_input'] == 'dict-word+char'
    assert set(DEFAULT_CONFIGS) == {'cnn_50_100_512_4096_sample.json', 'cnn_0_100_512_4096_sample.json'}
    with pytest.raises(InputError, match=r'4096.*does not fit|does not fit'):
        resolve_model(str(directory)).load()  # the tiny weights do not fit the released shape: one line


def test_a_directory_naming_no_configuration_is_one_line(tmp_path):
    directory = tmp_path / 'bad'
    shutil.copytree(require(MODEL), directory)
    os.chmod(directory / 'config.json', 0o644)
    (directory / 'config.json').write_text(json.dumps({'config_path': 'nowhere.json'}))
    with pytest.raises(InputError, match=r'config\.json: config_path .nowhere\.json. is neither'):
        resolve_model(str(directory))


MADE = os.path.join(ROOT, 'tests', 'fixtures', 'efml-made')  # tests/fixtures/make_efml_models.py's, by EFML's code


@pytest.mark.parametrize('name', ['chars-tanh-3layers', 'words-chars-zip'])
def test_models_made_by_efml_code_are_met_stateless_and_stateful(name, no_torch):
    """Other sizes: characters only (tanh, 2 highways, 3 layers, legacy .pkl, three batches in
    EFML's shuffled order) and words + chars in the zip serialization; stateless equals EFML on a
    fresh model, and stateful fed EFML's batches in its order equals both of its calls."""
    from paddle_elmo.use.embedder import ELMoEmbedder
    ref = np.load(os.path.join(MADE, f'{name}.outputs.npz'))
    sents, batch_size = json.loads(str(ref['sentences'])), int(ref['batch_size'])
    directory = os.path.join(MADE, name)
    assert_layers_close(ELMoEmbedder(directory).encode(sents), [ref[f'fresh/{i}'] for i in range(len(sents))])
    order = efml_batch_order(sents)
    batches = [order[start:start + batch_size] for start in range(0, len(order), batch_size)]
    embedder = ELMoEmbedder(directory, stateful=True, batch_size=batch_size)
    for call in range(2):
        for b in ref[f'call{call}/batch_order']:  # one encode per EFML batch: its rows carry state
            assert_layers_close(embedder.encode([sents[i] for i in batches[b]]),
                                [ref[f'call{call}/{i}'] for i in batches[b]])
