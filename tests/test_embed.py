"""Embedding a file into hdf5 (as `allennlp elmo`) and the TF-Hub-style outputs."""
import json
import os
import subprocess
import sys

import h5py
import numpy as np
import pytest

from conftest import ROOT
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
    from paddle_elmo.sentence_embedder import embed_file
    embed_file(embedder, str(src), str(tmp_path / 'o.hdf5'), batch_size=3, progress=False, chunk_batches=2)
    with h5py.File(tmp_path / 'o.hdf5', 'r') as f:
        assert [f[str(i)].shape[1] for i in range(37)] == [len(l.split()) for l in lines]


def test_invalid_utf8_names_the_line_and_leaves_no_output(embedder, tmp_path):
    src = tmp_path / 'bad.txt'
    src.write_bytes(b'fine line\nbad \xff byte\n')
    with pytest.raises(ValueError, match=r'bad.txt:2: not valid UTF-8'):
        embedder.embed_file(str(src), str(tmp_path / 'o.hdf5'), progress=False)
    assert [p.name for p in tmp_path.iterdir()] == ['bad.txt']  # no output, no temp file
    with pytest.raises(ValueError, match='output_format'):
        embedder.embed_file(str(src), str(tmp_path / 'o.hdf5'), output_format='mean')


def test_run_embed_cli_on_the_fixture(fixture_dir, tmp_path):
    src = tmp_path / 'in.txt'
    src.write_text('Hello world .\nSecond sentence\n')
    cmd = [sys.executable, os.path.join(ROOT, 'run_embed.py'), str(src), str(tmp_path / 'o.hdf5'),
           '--options_file', os.path.join(fixture_dir, 'options.json'),
           '--weight_file', os.path.join(fixture_dir, 'lm_weights.hdf5'), '--output_format', 'top']
    env = dict(os.environ, OMP_NUM_THREADS='1')  # Paddle's import warns on stderr when it is > 1
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    with h5py.File(tmp_path / 'o.hdf5', 'r') as f:
        assert f['0'].shape == (3, 32) and f['1'].shape == (2, 32)
    proc = subprocess.run(cmd[:6], capture_output=True, text=True, env=env)  # options without weights
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
    from paddle_elmo.token_ids import CharMapper
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
