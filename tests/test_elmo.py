"""The biLM: parity with the reference fixture, statefulness, padding, weights in and out."""
import json
import os
import subprocess

import h5py
import numpy as np
import paddle
import pytest

from conftest import tiny_config
from helpers import TOL, command_line, fixture_embedder, reference_top, run_reference_protocol
from paddle_elmo.text.token_ids import CharMapper, token_to_char_ids
from paddle_elmo import ELMoEmbedder, export_weights, resolve_model


def test_stateful_run_matches_reference_top_layer(fixture_dir, fixture_sentences):
    embedder = fixture_embedder(fixture_dir, stateful=True)
    outputs = run_reference_protocol(embedder, fixture_sentences)
    for i, batch in enumerate(outputs):
        for g in range(3):
            ref = reference_top(fixture_dir, g, i)
            assert batch[g].shape == (3,) + ref.shape
            np.testing.assert_allclose(batch[g][2], ref, atol=TOL, rtol=0)


def test_stateless_run_differs_from_stateful_reference_after_first_batch(fixture_dir, fixture_sentences):
    # Guards the stateful test: if state were not carried, both modes would agree everywhere.
    embedder = fixture_embedder(fixture_dir, stateful=False)
    outputs = run_reference_protocol(embedder, fixture_sentences)
    np.testing.assert_allclose(outputs[0][0][2], reference_top(fixture_dir, 0, 0), atol=TOL, rtol=0)
    assert np.abs(outputs[1][0][2] - reference_top(fixture_dir, 0, 1)).max() > 1e-3


def test_token_representations_match_reference(fixture_dir):
    embedder = fixture_embedder(fixture_dir)
    with open(os.path.join(fixture_dir, 'vocab_test.txt'), encoding='utf-8') as f:
        vocab = [line.rstrip('\n') for line in f if line.rstrip('\n')]
    with h5py.File(os.path.join(fixture_dir, 'elmo_token_embeddings.hdf5'), 'r') as f:
        ref = f['embedding'][...]
    ids = paddle.to_tensor(CharMapper().tokens(vocab)[None])
    with paddle.no_grad():
        got = embedder.bilm.token_embedding(ids)[0].numpy()
    np.testing.assert_allclose(got, ref, atol=TOL, rtol=0)
    # Layer 0 of a sentence is [x; x] of the same representations, whatever the context.
    emb = embedder.embed_sentence(vocab[:5])
    np.testing.assert_allclose(emb[0], np.concatenate([ref[:5], ref[:5]], -1), atol=TOL, rtol=0)


@pytest.mark.parametrize('cache', [0, 50000])
def test_stateless_embedding_is_independent_of_batch_order_and_history(fixture_dir, fixture_sentences, cache):
    sentences = [s for group in fixture_sentences for s in group]
    embedder = fixture_embedder(fixture_dir, token_cache_size=cache)
    alone = [embedder.embed_sentence(s) for s in sentences]
    rng = np.random.RandomState(0)
    perm = rng.permutation(len(sentences))
    shuffled = embedder.encode([sentences[i] for i in perm], batch_size=7)
    batched = embedder.embed_batch(sentences)  # one big padded batch
    for k, i in enumerate(perm):
        # Equal up to BLAS summation order, which depends on the batch shape (observed 1.2e-6 on
        # values up to 3, i.e. ~10 float32 ulps). A real leak between rows (state, padding) moves
        # values by > 1e-3.
        np.testing.assert_allclose(shuffled[k], alone[i], atol=3e-6, rtol=0)
        np.testing.assert_allclose(batched[i], alone[i], atol=3e-6, rtol=0)
    again = embedder.embed_sentence(sentences[0])
    np.testing.assert_array_equal(again, alone[0])


def test_padding_never_changes_a_result(tiny_bilm):
    tiny_bilm.eval()
    mapper = CharMapper()
    short, long = ['a', 'b', 'c'], ['x'] * 9
    ids, lengths = mapper.batch([short, long])
    alone, _ = mapper.batch([short])
    extra = np.concatenate([alone, np.zeros((1, 6, 50), np.int64)], axis=1)  # explicit padding
    with paddle.no_grad():
        both = tiny_bilm(paddle.to_tensor(ids))
        one = tiny_bilm(paddle.to_tensor(alone))
        padded = tiny_bilm(paddle.to_tensor(extra))
    for a, b, c in zip(both['activations'], one['activations'], padded['activations']):
        np.testing.assert_allclose(a.numpy()[0, :5], b.numpy()[0], atol=1e-6)
        np.testing.assert_allclose(c.numpy()[0, :5], b.numpy()[0], atol=1e-6)
        assert np.all(a.numpy()[0, 5:] == 0) and np.all(c.numpy()[0, 5:] == 0)
    assert both['mask'].numpy().tolist()[0] == [True] * 5 + [False] * 6


def test_backward_stack_reads_each_row_reversed_within_its_length(tiny_bilm):
    # The backward output at position t of a sentence equals the forward stack's output at the
    # mirrored position when both stacks share weights and the sentence is a palindrome.
    tiny_bilm.eval()
    tiny_bilm.backward_stack.set_state_dict(tiny_bilm.forward_stack.state_dict())
    ids, _ = CharMapper().batch([['a', 'b', 'a'], ['q'] * 7])
    ids[0, 4] = ids[0, 0]  # make row 0 a palindrome: <S> a b a <S>
    with paddle.no_grad():
        top = tiny_bilm(paddle.to_tensor(ids))['activations'][-1].numpy()
    p = tiny_bilm.projection_dim
    np.testing.assert_allclose(top[0, :5, p:], top[0, :5, :p][::-1], atol=1e-6)


def test_stateful_smaller_batch_keeps_other_rows_and_reset_restarts(tiny_bilm):
    tiny_bilm.eval()
    embedder = ELMoEmbedder(bilm=tiny_bilm, stateful=True)
    a = [['one', 'two'], ['three'], ['four', 'five', 'six']]
    c = [['seven'], ['eight', 'nine'], ['ten']]
    embedder.embed_batch(a)
    embedder.embed_batch([['only', 'row', 'zero']])
    with_b = embedder.embed_batch(c)
    embedder.reset_states()
    embedder.embed_batch(a)
    without_b = embedder.embed_batch(c)
    np.testing.assert_allclose(with_b[1], without_b[1], atol=1e-6)
    np.testing.assert_allclose(with_b[2], without_b[2], atol=1e-6)
    assert np.abs(with_b[0][1:] - without_b[0][1:]).max() > 1e-4
    embedder.reset_states()
    fresh = ELMoEmbedder(bilm=tiny_bilm, stateful=False).embed_batch(c)
    embedder = ELMoEmbedder(bilm=tiny_bilm, stateful=True)
    np.testing.assert_allclose(embedder.embed_batch(c)[0], fresh[0], atol=1e-6)
    # A larger batch than before adds zero-initialised rows.
    bigger = embedder.embed_batch(c + [['new', 'row']])
    np.testing.assert_allclose(bigger[3], ELMoEmbedder(bilm=tiny_bilm).embed_sentence(['new', 'row']),
                               atol=1e-6)


def test_export_then_load_reproduces_embeddings_and_datasets(fixture_dir, fixture_sentences, tmp_path):
    bilm = resolve_model(os.path.join(fixture_dir, 'options.json'),
                         os.path.join(fixture_dir, 'lm_weights.hdf5')).load()
    export_weights(bilm, str(tmp_path))
    with h5py.File(os.path.join(fixture_dir, 'lm_weights.hdf5'), 'r') as orig, \
            h5py.File(tmp_path / 'weights.hdf5', 'r') as new:
        names = []
        orig.visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset) else None)
        assert len(names) == 33
        for name in names:
            assert new[name].shape == orig[name].shape, name
            np.testing.assert_array_equal(new[name][...], orig[name][...], err_msg=name)
    with open(tmp_path / 'options.json') as f:
        assert json.load(f)['char_cnn']['n_characters'] == 262
    sentences = fixture_sentences[0]
    before = fixture_embedder(fixture_dir).encode(sentences)
    after = ELMoEmbedder(options_file=str(tmp_path / 'options.json'),
                         weight_file=str(tmp_path / 'weights.hdf5')).encode(sentences)
    for x, y in zip(before, after):
        np.testing.assert_array_equal(x, y)


def test_checkpoint_prefix_loads_and_export_cli_writes_loadable_files(tiny_bilm, tmp_path):
    ckpt = tmp_path / 'ckpt'
    ckpt.mkdir()
    with open(ckpt / 'options.json', 'w') as f:
        json.dump(tiny_bilm.config.to_options(), f)
    paddle.save({f'bilm.{k}': v for k, v in tiny_bilm.state_dict().items()}, str(ckpt / '7.pdparams'))
    sentence = ['Checkpoints', 'load', '.']
    expected = ELMoEmbedder(bilm=tiny_bilm).embed_sentence(sentence)
    np.testing.assert_array_equal(ELMoEmbedder(str(ckpt / '7')).embed_sentence(sentence), expected)
    out = tmp_path / 'export'
    subprocess.run(command_line('export-weights', '--init_from_ckpt', ckpt / '7', '--output_dir', out), check=True,
                   capture_output=True)
    exported = ELMoEmbedder(options_file=str(out / 'options.json'), weight_file=str(out / 'weights.hdf5'))
    np.testing.assert_array_equal(exported.embed_sentence(sentence), expected)


def test_weights_that_do_not_match_options_fail_naming_dataset_and_shapes(fixture_dir, tmp_path):
    with open(os.path.join(fixture_dir, 'options.json')) as f:
        options = json.load(f)
    options['lstm']['projection_dim'] = 32
    bad = tmp_path / 'options.json'
    bad.write_text(json.dumps(options))
    with pytest.raises(ValueError, match=r'dataset "CNN_proj/W_proj" has shape \(124, 16\), '
                                         r'options imply \(124, 32\)'):
        resolve_model(str(bad), os.path.join(fixture_dir, 'lm_weights.hdf5')).load()
    (tmp_path / 'in.txt').write_text('a sentence\n')
    proc = subprocess.run(command_line('embed', tmp_path / 'in.txt', tmp_path / 'o.h5', '--options_file', bad,
                                       '--weight_file', os.path.join(fixture_dir, 'lm_weights.hdf5')),
                          capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1].startswith('error: ') and 'CNN_proj/W_proj' in proc.stderr
    assert 'Traceback' not in proc.stderr


def test_long_tokens_are_cut_like_the_reference_and_chinese_is_utf8_bytes():
    long = 'x' * 60
    ids = token_to_char_ids(long)
    assert ids.shape == (50,) and ids[0] == 259 and ids[49] == 260  # BOW, 48 bytes, EOW (shifted)
    np.testing.assert_array_equal(ids, token_to_char_ids('x' * 48))
    chinese = token_to_char_ids('中文')
    np.testing.assert_array_equal(chinese[1:7] - 1, list('中文'.encode('utf-8')))
    assert chinese[7] == 260 and chinese[8] == 261
    np.testing.assert_array_equal(token_to_char_ids('<S>')[:4], [259, 257, 260, 261])
    # A multi-byte char split at the cut keeps its raw bytes, as the reference does.
    assert token_to_char_ids('é' * 30)[48] == 'é'.encode('utf-8')[1] + 1


def test_inputs_edge_cases(tiny_bilm):
    embedder = ELMoEmbedder(bilm=tiny_bilm)
    out = embedder.encode([['a', 'b'], [], ['中文', '词']])
    assert [o.shape for o in out] == [(3, 2, 16), (3, 0, 16), (3, 2, 16)]
    # A string sentence is split on whitespace (TF-Hub ELMo's default signature); '' is empty.
    mixed = embedder.encode([['ok'], ' not  tokens\t', '', '   '])
    assert [o.shape for o in mixed] == [(3, 1, 16), (3, 2, 16), (3, 0, 16), (3, 0, 16)]
    np.testing.assert_allclose(mixed[1], embedder.embed_sentence(['not', 'tokens']), atol=3e-6, rtol=0)
    assert embedder.embed_sentence('').shape == (3, 0, 16)
    # A bare string is not a batch (one sentence or many?), and what is not a sentence stays an error.
    with pytest.raises(TypeError, match=r"got a string \('The whole text'\); for one sentence pass \[sentence\]"):
        embedder.encode('The whole text')
    with pytest.raises(TypeError, match=r'got a value of type int \(5\)'):
        embedder.encode(5)
    with pytest.raises(TypeError, match=r'sentence 1 is a value of type int \(7\); expected a string or a list'):
        embedder.encode([['ok'], 7])
    with pytest.raises(TypeError, match=r'sentence 0 is a value of type bytes'):
        embedder.hub_outputs([b'raw bytes'])
    with pytest.raises(TypeError, match=r'sentence 0 holds a value of type NoneType \(None\); expected str tokens'):
        embedder.embed_batch([['a', None]])
    assert embedder.encode([]) == []
    long_sentence = ['word%d' % (i % 50) for i in range(5000)]
    assert embedder.embed_sentence(long_sentence).shape == (3, 5000, 16)


def test_char_cnn_weights_start_as_bilm_tf_s():
    """relu: uniform +-0.05 (bilm-tf's training.py, after Kim et al. 2015); tanh: normal(sqrt(1/fan_in))."""
    from paddle_elmo import BiLM
    paddle.seed(0)
    for activation in ('relu', 'tanh'):
        config = tiny_config(cnn_filters=[[1, 64], [3, 256]], activation=activation)
        weights = [w.numpy() for w in BiLM(config).char_encoder.conv_weights]
        for (width, _), w in zip(config.cnn_filters, weights):
            if activation == 'relu':
                assert np.abs(w).max() <= 0.05 and np.std(w) == pytest.approx(0.05 / np.sqrt(3), rel=0.05)
            else:
                assert np.std(w) == pytest.approx(np.sqrt(1.0 / (width * 4)), rel=0.05)
