"""Embedding a file into hdf5 (as `allennlp elmo`) and the TF-Hub-style outputs."""
import json
import os

import h5py
import numpy as np
import pytest

from helpers import run_script
from paddle_elmo import ELMoEmbedder


@pytest.fixture
def embedder(tiny_bilm):
    return ELMoEmbedder(bilm=tiny_bilm, batch_size=2)


def test_embed_file_writes_one_dataset_per_line_in_every_format(embedder, tmp_path):
    lines = ['the first line .', 'second', '', '中文 也 可以', 'the first line .']
    src = tmp_path / 'in.txt'
    src.write_text('\n'.join(lines) + '\n', encoding='utf-8')
    expected = embedder.encode([l.split() for l in lines])
    for fmt, select in (('all', lambda e: e), ('top', lambda e: e[-1]), ('average', lambda e: e.mean(0))):
        out = tmp_path / f'{fmt}.hdf5'
        assert embedder.embed_file(str(src), str(out), output_format=fmt, progress=False) == len(lines)
        with h5py.File(out, 'r') as f:
            assert sorted(k for k in f if k != 'sentence_to_index') == sorted(str(i) for i in range(len(lines)))
            for i, e in enumerate(expected):
                np.testing.assert_allclose(f[str(i)][...], select(e), atol=1e-6)
            index = json.loads(f['sentence_to_index'][0])
        assert index['second'] == '1' and index[''] == '2' and index['the first line .'] == '4'
    assert not [p for p in tmp_path.iterdir() if '.tmp' in p.name]


def test_embed_file_streams_in_chunks_and_keeps_line_order(embedder, tmp_path):
    lines = [' '.join(['w%d' % (i % 7)] * (1 + i % 5)) for i in range(37)]
    src = tmp_path / 'in.txt'
    src.write_text('\n'.join(lines) + '\n')
    from paddle_elmo.use.sentence_embedder import embed_file
    embed_file(embedder, str(src), str(tmp_path / 'o.hdf5'), batch_size=3, progress=False, chunk_batches=2)
    with h5py.File(tmp_path / 'o.hdf5', 'r') as f:
        assert [f[str(i)].shape[1] for i in range(37)] == [len(l.split()) for l in lines]


def test_text_a_chinese_tokenizer_cannot_read_names_the_line_and_leaves_no_output(tiny_bilm, tmp_path):
    src = tmp_path / 'bad.txt'
    src.write_bytes(b'fine line\nbad \xff byte\n')  # not UTF-8: Latin-1 only for Latin-script tokenizers
    embedder = ELMoEmbedder(bilm=tiny_bilm, batch_size=2, tokenizer='chars')
    with pytest.raises(ValueError, match=r'bad.txt:2: not valid UTF-8 .*; --tokenizer chars reads UTF-8 only'):
        embedder.embed_file(str(src), str(tmp_path / 'o.hdf5'), progress=False)
    assert [p.name for p in tmp_path.iterdir()] == ['bad.txt']  # no output, no temp file
    with pytest.raises(ValueError, match='output_format'):
        embedder.embed_file(str(src), str(tmp_path / 'o.hdf5'), output_format='mean')


def test_the_embed_command_on_the_fixture(fixture_dir, tmp_path):
    src = tmp_path / 'in.txt'
    src.write_text('Hello world .\nSecond sentence\n')
    options = [src, tmp_path / 'o.hdf5', '--options_file', os.path.join(fixture_dir, 'options.json')]
    proc = run_script('embed', *options, '--weight_file', os.path.join(fixture_dir, 'lm_weights.hdf5'),
                      '--output_format', 'top')
    assert proc.returncode == 0, proc.stderr[-2000:]
    with h5py.File(tmp_path / 'o.hdf5', 'r') as f:
        assert f['0'].shape == (3, 32) and f['1'].shape == (2, 32)
        assert json.loads(f['1'].attrs['tokens']) == ['Second', 'sentence']
    # one line says how lines become tokens, and how to keep tokens as given
    assert "tokenizer: whitespace (the model's): each line is its tokens separated by spaces" in proc.stderr
    proc = run_script('embed', *options)  # options without weights
    assert proc.returncode == 2 and proc.stderr.strip().splitlines() == [
        'error: --options_file and --weight_file go together']


def test_hub_outputs_mean_only_over_real_tokens(embedder):
    sentences = [['a', 'b', 'c'], ['d']]
    hub = embedder.hub_outputs(sentences, mix_weights=[0.0, 1.0, 2.0], gamma=2.0)
    embs = embedder.encode(sentences)
    w = np.exp([0.0, 1.0, 2.0]) / np.exp([0.0, 1.0, 2.0]).sum()
    assert hub['sequence_len'].tolist() == [3, 1]
    assert hub['word_emb'].shape == (2, 3, 8) and hub['lstm_outputs1'].shape == (2, 3, 16)
    np.testing.assert_allclose(hub['word_emb'][1, 0], embs[1][0, 0, :8], atol=1e-6)
    np.testing.assert_allclose(hub['lstm_outputs2'][0], embs[0][2], atol=1e-6)
    elmo_d = 2.0 * np.tensordot(w, embs[1], axes=1)  # [1, 16]
    np.testing.assert_allclose(hub['elmo'][1, 0], elmo_d[0], atol=1e-5)
    assert np.all(hub['elmo'][1, 1:] == 0)
    np.testing.assert_allclose(hub['default'][1], elmo_d[0], atol=1e-5)  # padding not averaged in


def test_raw_strings_are_split_on_whitespace_as_tf_hub_s_default_signature(embedder):
    texts = ['the  cat sat', 'dogs\tran', '', '中文 也 行']
    tokens = [t.split() for t in texts]
    hub, hub_tokens = embedder.hub_outputs(texts), embedder.hub_outputs(tokens)
    for key in ('word_emb', 'lstm_outputs1', 'lstm_outputs2', 'elmo', 'default', 'sequence_len'):
        np.testing.assert_array_equal(hub[key], hub_tokens[key], err_msg=key)
    assert hub['sequence_len'].tolist() == [3, 2, 0, 3] and hub['elmo'].shape == (4, 3, 16)
    np.testing.assert_allclose(hub['default'][1], hub['elmo'][1, :2].mean(axis=0), atol=1e-6)  # real tokens only
    assert np.all(hub['default'][2] == 0)  # the empty sentence: nothing to average
    for got, want in zip(embedder.encode(texts), embedder.encode(tokens)):
        np.testing.assert_array_equal(got, want)
    assert [e.shape[1] for e in embedder.embed_batch(texts)] == [3, 2, 0, 3]
    assert sorted(i for i, _ in embedder.iter_embeddings(texts)) == [0, 1, 2, 3]
    empty = embedder.hub_outputs([''])
    assert empty['elmo'].shape == (1, 0, 16) and empty['sequence_len'].tolist() == [0]


def test_raw_strings_in_elmo_and_the_tokenizer_choice(tiny_bilm):
    import paddle
    from paddle_elmo.text.token_ids import CharMapper
    from paddle_elmo import Elmo
    elmo = Elmo(tiny_bilm, dropout=0.0)
    ids = elmo.batch_to_ids(['The cat', ['A', 'dog', 'barked'], ''])
    np.testing.assert_array_equal(ids.numpy(), CharMapper().batch([['The', 'cat'], ['A', 'dog', 'barked'], []])[0])
    out = elmo(ids)
    assert out['elmo_representations'][0].shape == [3, 3, 16]
    assert out['mask'].numpy().sum(axis=1).tolist() == [2, 3, 0]
    # Another tokenizer splits the raw strings of both (dataset.get_tokenizer: one token per CJK character).
    assert elmo.batch_to_ids(['中文']).shape == [1, 3, 50]
    assert Elmo(tiny_bilm, tokenizer='chars').batch_to_ids(['中文']).shape == [1, 4, 50]
    assert ELMoEmbedder(bilm=tiny_bilm, tokenizer='chars').embed_sentence('中文').shape == (3, 2, 16)
    assert isinstance(ids, paddle.Tensor)


# ---- the tokens embedded: tokenize() and the tokens stored beside each sentence ---------------------

RAW = ["It's raining, isn't it?", "I do n't know .", 'AT&amp;T &amp; Tom', ['Given', 'as', 'is', "n't", 'it'], '']


@pytest.fixture
def moses_embedder():
    """A tiny biLM whose options record the moses tokenizer (as the bundled model's do)."""
    import paddle
    from conftest import tiny_config
    from paddle_elmo import BiLM
    paddle.seed(0)
    return ELMoEmbedder(bilm=BiLM(tiny_config(tokenizer='moses')), batch_size=2)


def assert_rows_are_the_tokens(embedder, layers, tokens):
    """Layer 0 holds each token's context-free representation, twice ([x; x]): row j is tokens[j]'s."""
    from paddle_elmo.use.embedder import token_embeddings
    assert layers.shape[-2] == len(tokens)
    if tokens:
        half = token_embeddings(embedder.bilm, tokens)
        np.testing.assert_allclose(layers[0], np.concatenate([half, half], axis=-1), atol=1e-5)


def test_tokenize_gives_the_tokens_encode_embeds_row_by_row(moses_embedder):
    tokens = moses_embedder.tokenize(RAW)
    assert tokens == [['It', "'s", 'raining', ',', 'isn', "'t", 'it', '?'], ['I', 'do', "n't", 'know', '.'],
                      ['AT&T', '&', 'Tom'], ['Given', 'as', 'is', "n't", 'it'], []]
    for layers, sentence in zip(moses_embedder.encode(RAW), tokens):
        assert_rows_are_the_tokens(moses_embedder, layers, sentence)
    for got, want in zip(moses_embedder.encode(RAW), moses_embedder.encode(tokens)):
        np.testing.assert_array_equal(got, want)
    assert ELMoEmbedder(bilm=moses_embedder.bilm, tokenizer='whitespace').tokenize(RAW)[1] == RAW[1].split()
    with pytest.raises(TypeError, match='for one sentence pass'):
        moses_embedder.tokenize(RAW[0])


def test_embed_file_stores_each_sentence_s_tokens_beside_its_rows(moses_embedder, tmp_path):
    lines = [s for s in RAW if isinstance(s, str)]
    src = tmp_path / 'in.txt'
    src.write_text('\n'.join(lines + ['它 很 好']) + '\n', encoding='utf-8')
    expected = moses_embedder.tokenize(lines + ['它 很 好'])
    for fmt in ('all', 'top'):
        out = tmp_path / f'{fmt}.hdf5'
        moses_embedder.embed_file(str(src), str(out), output_format=fmt, progress=False)
        with h5py.File(out, 'r') as f:
            assert sorted(f) == sorted(['sentence_to_index'] + [str(i) for i in range(len(expected))])  # as allennlp's
            stored = [json.loads(f[str(i)].attrs['tokens']) for i in range(len(expected))]
            assert stored == expected
            assert [f[str(i)].shape[-2] for i in range(len(expected))] == [len(t) for t in expected]
            if fmt == 'all':
                for i, tokens in enumerate(stored):
                    assert_rows_are_the_tokens(moses_embedder, f[str(i)][...], tokens)
    src.write_text('\n'.join(lines[:2]) + '\n', encoding='utf-8')  # keys: no empty line
    moses_embedder.embed_file(str(src), str(tmp_path / 'keys.hdf5'), use_sentence_keys=True, progress=False,
                              output_format='top')
    with h5py.File(tmp_path / 'keys.hdf5', 'r') as f:
        assert json.loads(f[lines[0]].attrs['tokens']) == expected[0]
    moses_embedder.embed_file(str(src), str(tmp_path / 'forget.hdf5'), forget_sentences=True, progress=False)
    with h5py.File(tmp_path / 'forget.hdf5', 'r') as f:  # --forget-sentences: the file holds no text
        assert 'sentence_to_index' not in f and not any(f[k].attrs.keys() for k in f)
