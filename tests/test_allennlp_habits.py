"""What AllenNLP's and ELMoForManyLangs' users type works: ElmoEmbedder's positional files,
embed_sentences, a model by name (from_pretrained), and a warning for raw Chinese split on spaces."""
import logging
import os

import numpy as np
import paddle
import pytest

from conftest import FIXTURE, require, tiny_config
from paddle_elmo import BiLM, ELMoEmbedder
from paddle_elmo.fileio import InputError

SENTENCES = [['The', 'cat', 'sat', '.'], ['Hello'], ['A', 'longer', 'sentence', 'than', 'the', 'others', '.']]


@pytest.fixture
def fixture_files():
    require(FIXTURE)
    return os.path.join(FIXTURE, 'options.json'), os.path.join(FIXTURE, 'lm_weights.hdf5')


def test_options_and_weight_files_positionally_as_allennlp_takes_them(fixture_files):
    options_file, weight_file = fixture_files
    positional = ELMoEmbedder(options_file, weight_file).encode(SENTENCES)
    keywords = ELMoEmbedder(options_file=options_file, weight_file=weight_file).encode(SENTENCES)
    for a, b in zip(positional, keywords):
        np.testing.assert_array_equal(a, b)


def test_embed_sentences_yields_in_input_order_from_any_iterable(fixture_files):
    embedder = ELMoEmbedder(*fixture_files, batch_size=2)
    expected = embedder.encode(SENTENCES)
    got = list(embedder.embed_sentences(s for s in SENTENCES))  # a generator, 2 batches
    assert len(got) == len(SENTENCES)
    for a, b in zip(got, expected):
        np.testing.assert_allclose(a, b, atol=1e-6)


@pytest.fixture
def saved_models(tmp_path):
    """One tiny model as a checkpoint directory (final and step 3) and as an export directory."""
    from paddle_elmo import export_weights
    paddle.seed(0)
    bilm = BiLM(tiny_config())
    ckpt = tmp_path / 'ckpt'
    ckpt.mkdir()
    (ckpt / 'options.json').write_text(__import__('json').dumps(bilm.config.to_options()))
    paddle.save(bilm.state_dict(), str(ckpt / 'final.pdparams'))
    paddle.save(bilm.state_dict(), str(ckpt / '3.pdparams'))
    export_weights(bilm, str(tmp_path / 'export'))
    return tmp_path, ELMoEmbedder(bilm=bilm).encode(SENTENCES)


@pytest.mark.parametrize('name', ['ckpt', 'ckpt/final', 'ckpt/3', 'ckpt/3.pdparams', 'export'])
def test_from_pretrained_takes_a_directory_or_a_checkpoint_prefix(saved_models, name):
    root, expected = saved_models
    got = ELMoEmbedder.from_pretrained(str(root / name)).encode(SENTENCES)
    for a, b in zip(got, expected):
        np.testing.assert_allclose(a, b, atol=1e-6)


def test_from_pretrained_bundled_is_the_default_model_and_a_bad_name_is_one_clear_error(tmp_path):
    bundled = ELMoEmbedder.from_pretrained('bundled').encode([['Hello', 'world']])
    np.testing.assert_array_equal(bundled[0], ELMoEmbedder().encode([['Hello', 'world']])[0])
    with pytest.raises(InputError, match=f'{tmp_path}: not a model; expected a model name \\(bundled, '
                       'bundled-zh, small, medium, original, original-5.5b, efml-<language> .*\\), a checkpoint '
                       'prefix DIR/N, .* a directory with options.json'):
        ELMoEmbedder.from_pretrained(str(tmp_path))


def test_raw_chinese_split_on_spaces_warns_once_naming_jieba(caplog):
    from paddle_elmo.logs import forget_warnings
    forget_warnings()
    embedder = ELMoEmbedder(bilm=BiLM(tiny_config()))
    with caplog.at_level(logging.WARNING, logger='paddle_elmo'):
        embedder.encode(['这本书很好看，我很喜欢', 'The cat sat .'])
        embedder.encode(['这个手机的电池很耐用'])
    said = [r.getMessage() for r in caplog.records if 'unsegmented' in r.getMessage()]
    assert len(said) == 1 and "tokenizer='jieba'" in said[0]
    caplog.clear()
    forget_warnings()
    with caplog.at_level(logging.WARNING, logger='paddle_elmo'):
        embedder.encode(['这 本 书 很 好看', ['这本书很好看']])  # segmented text, and tokens the user chose
    assert not [r for r in caplog.records if 'unsegmented' in r.getMessage()]


def test_the_embed_command_takes_allennlp_elmos_flags(fixture_files, tmp_path):
    import subprocess

    import h5py
    from helpers import command_line
    (tmp_path / 'in.txt').write_text('The cat sat .\nHello\n')
    options_file, weight_file = fixture_files
    command = command_line('embed', tmp_path / 'in.txt')  # `allennlp elmo IN OUT --top ...`'s counterpart
    model = ['--options-file', options_file, '--weight-file', weight_file]
    proc = subprocess.run(command + [str(tmp_path / 'top.hdf5'), '--top', '--batch-size', '1', *model],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    with h5py.File(tmp_path / 'top.hdf5', 'r') as f:
        assert f['0'].shape == (4, 32) and f['1'].shape == (1, 32)  # the top layer alone: [tokens, 2P]
    proc = subprocess.run(command + [str(tmp_path / 'x.hdf5'), '--top', '--average', *model], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 2 and proc.stderr.strip() == 'error: --top with --average: give one output format'
    assert not (tmp_path / 'x.hdf5').exists()
