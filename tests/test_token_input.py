"""Word and word + char token input (issue 21): bilm-tf's token mode against the reference
fixture, our exports and checkpoints, --word_vectors, the cached path (dump_token_embeddings +
embedding_weight_file) against the char path, and training that resumes exactly."""
import json
import os

import h5py
import numpy as np
import paddle
import pytest

from conftest import ROOT, one_line_error, tiny_config
from paddle_elmo.text.token_ids import InputMapper
from paddle_elmo.text.vocabulary import Vocabulary
from paddle_elmo import ELMoEmbedder, dump_token_embeddings, export_weights, resolve_model, token_embeddings
from paddle_elmo.fileio import InputError
from helpers import TOL, fixture_embedder, reference_top, run_reference_protocol
from helpers import assert_same_weights, load, pretrain_args, pretrain_here, run_here
from helpers import WORDS, tiny_bilm


# ---- bilm-tf's token mode, against the reference fixture -------------------------------------

def bilm_tf_word_model(fixture_dir, directory, with_embedding=True):
    """bilm-tf's files for a word model, made by hand in its layout: options.json without
    char_cnn, weights.hdf5 with dataset `embedding` [n_tokens_vocab, projection_dim] (row i = line
    i of the vocabulary) and the LSTM datasets. The LSTMs are the fixture's and the embedding is
    bilm-tf's own char-CNN representation of vocab_test.txt (elmo_token_embeddings.hdf5), so the
    word model must give the fixture's reference outputs for sentences made of those words."""
    with open(os.path.join(fixture_dir, 'options.json')) as f:
        options = json.load(f)
    del options['char_cnn']
    options['n_tokens_vocab'] = 458
    (directory / 'options.json').write_text(json.dumps(options))
    with h5py.File(os.path.join(fixture_dir, 'lm_weights.hdf5'), 'r') as src, \
            h5py.File(os.path.join(fixture_dir, 'elmo_token_embeddings.hdf5'), 'r') as emb, \
            h5py.File(directory / 'weights.hdf5', 'w') as out:
        names = []
        src.visititems(lambda name, obj: names.append(name) if isinstance(obj, h5py.Dataset) else None)
        for name in names:
            if name.startswith('RNN_'):
                out.create_dataset(name, data=src[name][...])
        if with_embedding:
            out.create_dataset('embedding', data=emb['embedding'][...])
    return directory / 'options.json', directory / 'weights.hdf5', os.path.join(fixture_dir, 'vocab_test.txt')


def test_a_bilm_tf_word_model_gives_the_reference_layers(fixture_dir, fixture_sentences, tmp_path):
    options, weights, vocab = bilm_tf_word_model(fixture_dir, tmp_path)
    embedder = ELMoEmbedder(resolve_model(str(options), str(weights), vocab_file=vocab), stateful=True)
    assert embedder.bilm.config.token_input == 'word' and embedder.bilm.char_encoder is None
    for i, batch in enumerate(run_reference_protocol(embedder, fixture_sentences)):
        for g in range(3):
            np.testing.assert_allclose(batch[g][2], reference_top(fixture_dir, g, i), atol=TOL, rtol=0)


def test_bilm_tf_inference_layout_reads_the_embedding_from_its_own_file(fixture_dir, fixture_sentences, tmp_path):
    options, weights, vocab = bilm_tf_word_model(fixture_dir, tmp_path, with_embedding=False)
    model = resolve_model(str(options), str(weights), vocab_file=vocab,
                          embedding_weight_file=os.path.join(fixture_dir, 'elmo_token_embeddings.hdf5'))
    embedder = ELMoEmbedder(model, stateful=True)
    first = embedder.embed_batch([fixture_sentences[g][0] for g in range(3)])
    for g in range(3):
        np.testing.assert_allclose(first[g][2], reference_top(fixture_dir, g, 0), atol=TOL, rtol=0)


def test_a_word_model_without_or_with_a_wrong_vocabulary_fails_naming_the_files(fixture_dir, tmp_path):
    options, weights, vocab = bilm_tf_word_model(fixture_dir, tmp_path)
    with pytest.raises(InputError, match='give its vocabulary'):
        resolve_model(str(options), str(weights)).load()
    short = tmp_path / 'short.txt'
    short.write_text('<S>\n</S>\n<UNK>\nthe\n')
    with pytest.raises(InputError, match=r'short.txt has 4 tokens but the word embedding of .*weights.hdf5 has 458'):
        resolve_model(str(options), str(weights), vocab_file=str(short)).load()
    plain = tmp_path / 'plain.txt'
    plain.write_text('the\ncat\n')
    with pytest.raises(InputError, match='must hold <S>, </S>, <UNK>'):
        resolve_model(str(options), str(weights), vocab_file=str(plain)).load()


# ---- the cached path and dump_token_embeddings ------------------------------------------------

def test_the_cached_path_equals_the_char_path_and_skips_the_char_cnn(fixture_dir, fixture_sentences, tmp_path):
    vocab = os.path.join(fixture_dir, 'vocab_test.txt')
    dumped = tmp_path / 'token_embeddings.hdf5'
    dump_token_embeddings(vocab, resolve_model(os.path.join(fixture_dir, 'options.json'),
                                               os.path.join(fixture_dir, 'lm_weights.hdf5')), str(dumped))
    with h5py.File(dumped, 'r') as ours, h5py.File(os.path.join(fixture_dir, 'elmo_token_embeddings.hdf5')) as ref:
        np.testing.assert_allclose(ours['embedding'][...], ref['embedding'][...], atol=TOL, rtol=0)
    cached = fixture_embedder(fixture_dir, vocab_file=vocab, embedding_weight_file=str(dumped), token_cache_size=0)
    seen = []
    cnn = cached.bilm.char_encoder.cnn
    cached.bilm.char_encoder.cnn = lambda ids, *ops: seen.append(ids.shape[0]) or cnn(ids, *ops)
    sentences = [s + ['unseenword'] for s in fixture_sentences[0]]  # one word outside the file: the char CNN
    got = cached.encode(sentences)
    want = fixture_embedder(fixture_dir).encode(sentences)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, atol=1e-6, rtol=0)
    assert sum(seen) == 1  # only 'unseenword' went through the char CNN


@pytest.mark.parametrize('token_input', ['word', 'word+char'])
def test_dump_and_cached_path_equal_the_model_for_word_input(token_input, tmp_path):
    bilm = tiny_bilm(token_input)
    export_weights(bilm, str(tmp_path / 'model'))
    dumped = str(tmp_path / 'dump.hdf5')
    tokens = ['<S>', '</S>'] + WORDS[:6]
    (tmp_path / 'dump_vocab.txt').write_text('\n'.join(tokens) + '\n')
    dump_token_embeddings(str(tmp_path / 'dump_vocab.txt'), str(tmp_path / 'model'), dumped)
    with h5py.File(dumped, 'r') as f:
        np.testing.assert_allclose(f['embedding'][...], token_embeddings(bilm, tokens), atol=1e-6, rtol=0)
    sentences = [WORDS[:4], ['unknownword', 'cat', 'xyzzy'], []]
    direct = ELMoEmbedder(bilm=bilm).encode(sentences)
    model = resolve_model(str(tmp_path / 'model'), vocab_file=str(tmp_path / 'dump_vocab.txt'),
                          embedding_weight_file=dumped)
    cached = ELMoEmbedder(model).encode(sentences) if token_input != 'word' else direct
    for a, b in zip(cached, direct):
        np.testing.assert_allclose(a, b, atol=1e-6, rtol=0)
    # layer 0 is the token representation; an unknown word is <UNK>'s row (with its own chars for word+char)
    unk = token_embeddings(bilm, ['<UNK>', 'unknownword', 'xyzzy'])
    np.testing.assert_allclose(direct[1][0][0, :bilm.projection_dim], unk[1], atol=1e-6, rtol=0)
    if token_input == 'word':
        np.testing.assert_array_equal(unk[1], unk[0])
        np.testing.assert_array_equal(unk[1], unk[2])
    else:
        assert np.abs(unk[1] - unk[2]).max() > 1e-4


def test_word_plus_char_is_the_projection_of_the_word_row_beside_the_highway_output():
    bilm = tiny_bilm('word+char')
    mapper = InputMapper.of(bilm)
    char_ids, word_ids = mapper.tokens(['cat', 'notaword'])
    with paddle.no_grad():
        features = bilm.char_encoder.features(paddle.to_tensor(char_ids)).numpy()
    rows = bilm.word_embedding.numpy()[word_ids - 1]
    assert list(word_ids - 1) == [bilm.vocab.word_to_id('cat'), bilm.vocab.unk]
    proj = bilm.char_encoder.projection
    want = np.concatenate([rows, features], axis=1) @ proj.weight.numpy() + proj.bias.numpy()
    np.testing.assert_allclose(token_embeddings(bilm, ['cat', 'notaword']), want, atol=1e-5, rtol=0)


# ---- files: export, options.json, checkpoints ------------------------------------------------

@pytest.mark.parametrize('token_input', ['word', 'word+char'])
def test_export_writes_bilm_tf_layout_with_the_vocabulary_and_loads_back(token_input, tmp_path):
    bilm = tiny_bilm(token_input)
    export_weights(bilm, str(tmp_path))
    options = json.loads((tmp_path / 'options.json').read_text())
    assert options['n_tokens_vocab'] == bilm.vocab.size
    assert ('char_cnn' in options) == (token_input == 'word+char')
    assert ('word_embedding' in options) == (token_input == 'word+char')
    assert (tmp_path / 'vocab.txt').read_text().split('\n')[:3] == ['<S>', '</S>', '<UNK>']
    with h5py.File(tmp_path / 'weights.hdf5', 'r') as f:
        name = 'embedding' if token_input == 'word' else 'word_embedding'
        np.testing.assert_array_equal(f[name][...], bilm.word_embedding.numpy())  # no padding row
        if token_input == 'word+char':
            assert f['CNN_proj/W_proj'].shape == (5 + bilm.config.n_filters, 8)
    again = resolve_model(str(tmp_path)).load()
    sentences = [WORDS[:5], ['cat', 'unknownword']]
    for a, b in zip(ELMoEmbedder(bilm=again).encode(sentences), ELMoEmbedder(bilm=bilm).encode(sentences)):
        np.testing.assert_array_equal(a, b)


def test_char_options_stay_pure_bilm_tf():
    options = tiny_config().to_options()
    assert 'word_embedding' not in options and 'char_cnn' in options
    from paddle_elmo.model.config import ModelConfig
    assert ModelConfig.from_options(tiny_config(token_input='word').to_options()).token_input == 'word'
    with pytest.raises(InputError, match='--word_dim must be >= 1 with token_input word\\+char'):
        tiny_config(token_input='word+char').checked()
    with pytest.raises(InputError, match='share_embedding_softmax'):
        ModelConfig.from_options({**tiny_config(token_input='word').to_options(), 'share_embedding_softmax': True})


# ---- pretraining: --token_input, --word_vectors, resume ----------------------------------------

def write_vectors(path, dim, words):
    from gensim.models import KeyedVectors
    kv = KeyedVectors(dim)
    kv.add_vectors(words, np.random.RandomState(1).randn(len(words), dim).astype(np.float32))
    kv.save_word2vec_format(str(path))
    return kv


@pytest.mark.parametrize('token_input', ['word', 'word+char'])
def test_word_input_trains_and_resumes_exactly(token_input, corpus, tmp_path, capfd):
    vectors = tmp_path / 'vectors.txt'
    dim = 8 if token_input == 'word' else 6
    write_vectors(vectors, dim, ['the', 'cat', 'sat', 'notinvocab'])
    extra = ['--token_input', token_input, '--word_vectors', str(vectors), '--optimizer', 'adam', '--lr', '0.01',
             '--max_steps', '8'] + (['--word_dim', '6'] if token_input == 'word+char' else [])
    # (The runs in this process, helpers.pretrain_here: what they train and write is the test.)
    whole = pretrain_here(pretrain_args(corpus, tmp_path / 'whole', *extra), capfd)
    assert whole.returncode == 0, whole.stderr[-2000:]
    assert "word embedding: 3 of the vocabulary's 26 tokens (11.5%)" in whole.stderr  # the log
    part = pretrain_here(pretrain_args(corpus, tmp_path / 'part', *extra, '--max_minutes', '10', '--save_freq', '4'),
                         capfd)
    assert part.returncode == 0, part.stderr[-2000:]
    # the run finished: its step 4 resumes into a directory of its own (in place it would replace 'final')
    resumed = pretrain_here(['--init_from_ckpt', str(tmp_path / 'part' / '4'), '--save_dir', str(tmp_path / 'resumed')],
                            capfd)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert_same_weights(load(tmp_path / 'whole' / 'final.pdparams'), load(tmp_path / 'resumed' / 'final.pdparams'))
    assert (tmp_path / 'part' / 'vocab.txt').read_text() == (tmp_path / 'whole' / 'vocab.txt').read_text()
    # evaluation and embedding read the checkpoint's vocabulary (in this process, helpers.run_here: the
    # commands are what is checked, and their scripts run in processes of their own elsewhere)
    ev = run_here('run_eval.py', ['--dev_data_path', str(corpus / 'heldout.txt'), '--vocab_file',
                                  str(corpus / 'vocab.txt'), '--init_from_ckpt', str(tmp_path / 'whole' / 'final')],
                  capfd)
    assert ev.returncode == 0 and 'perplexity' in ev.stdout, ev.stderr[-2000:]
    (tmp_path / 'in.txt').write_text('the cat sat\nunknownword on a mat\n')
    emb = run_here('embed', [str(tmp_path / 'in.txt'), str(tmp_path / 'out.hdf5'),
                                    '--init_from_ckpt', str(tmp_path / 'whole' / 'final')], capfd)
    assert emb.returncode == 0, emb.stderr[-2000:]
    with h5py.File(tmp_path / 'out.hdf5', 'r') as f:
        assert f['1'].shape == (3, 4, 16)


def test_word_vectors_initialise_covered_rows_and_freeze_keeps_them(corpus, tmp_path, monkeypatch, capfd):
    vectors = tmp_path / 'vectors.txt'
    kv = write_vectors(vectors, 8, ['the', 'cat'])
    proc = pretrain_here(pretrain_args(corpus, tmp_path / 'ck', '--token_input', 'word', '--word_vectors', str(vectors),
                                       '--freeze_word_embeddings', '--max_steps', '3'), capfd)
    assert proc.returncode == 0, proc.stderr[-2000:]
    final = load(tmp_path / 'ck' / 'final.pdparams')['bilm.word_embedding']
    vocab = Vocabulary(str(corpus / 'vocab.txt'))
    for word in ('the', 'cat'):
        np.testing.assert_allclose(final[vocab.word_to_id(word)], kv[word], rtol=1e-6)
    # bench_downstream's step 0 (the run before its first step) starts from the same vectors
    monkeypatch.syspath_prepend(os.path.join(ROOT, 'benchmarks'))
    from bench_downstream import checkpoint_at, random_init_checkpoint
    start = load(random_init_checkpoint(str(tmp_path / 'ck'), str(tmp_path / 'down'), 1) + '.pdparams')
    # --max_steps 3 saved step 3 only as `final`: bench_downstream --steps 3 finds it; a step never saved fails
    assert checkpoint_at(str(tmp_path / 'ck'), 3) == str(tmp_path / 'ck' / 'final')
    with pytest.raises(SystemExit, match='no checkpoint of step 2 in'):
        checkpoint_at(str(tmp_path / 'ck'), 2)
    for word in ('the', 'cat'):
        np.testing.assert_allclose(start['bilm.word_embedding'][vocab.word_to_id(word)], kv[word], rtol=1e-6)
    # a dimension that does not fit, and a resumed run with another vocabulary, are one-line errors (the
    # command's, run in this process: helpers.run_here)
    bad = run_here('run_pretrain.py', pretrain_args(corpus, tmp_path / 'bad', '--token_input', 'word', '--word_vectors',
                                                    str(write_vectors(tmp_path / 'v3.txt', 3, ['the']) and
                                                        tmp_path / 'v3.txt'), '--max_steps', '1'), capfd)
    assert 'holds 3-dimensional vectors; the word embedding has 8 columns' in one_line_error(bad)
    other = tmp_path / 'other_vocab.txt'
    other.write_text('<S>\n</S>\n<UNK>\nthe\ncat\n')
    resumed = run_here('run_pretrain.py', ['--init_from_ckpt', str(tmp_path / 'ck' / 'final'), '--vocab_file',
                                           str(other), '--max_steps', '5'], capfd)
    assert f'other_vocab.txt is not the vocabulary of the word embedding in {tmp_path / "ck"}' in one_line_error(resumed)
    chars = run_here('run_pretrain.py', pretrain_args(corpus, tmp_path / 'c', '--word_vectors', str(vectors)), capfd)
    assert '--word_vectors is for a model with word input' in one_line_error(chars)


def test_elmo_reads_word_input_for_downstream_models():
    from paddle_elmo.use.downstream import Elmo
    bilm = tiny_bilm('word')
    elmo = Elmo(bilm, dropout=0.0)
    out = elmo(**elmo.batch_to_inputs(['the cat sat', 'a dog']))
    assert out['elmo_representations'][0].shape == [2, 3, 16]
    assert out['mask'].numpy().sum(axis=1).tolist() == [3, 2]
    with pytest.raises(InputError, match='batch_to_inputs'):
        elmo.batch_to_ids(['the cat'])


def test_a_word_models_embedding_file_and_vocabulary_are_read_and_checked(fixture_dir, tmp_path):
    from paddle_elmo.use.downstream import Elmo
    options, weights, vocab = bilm_tf_word_model(fixture_dir, tmp_path)
    elmo = Elmo(resolve_model(str(options), str(weights), vocab_file=vocab), dropout=0.0)
    assert elmo.bilm.vocab.size == 458
    bilm = tiny_bilm('word')
    export_weights(bilm, str(tmp_path / 'model'))
    wrong = tmp_path / 'wrong.hdf5'
    with h5py.File(wrong, 'w') as f:
        f.create_dataset('embedding', data=np.zeros((5, 8), np.float32))
    with pytest.raises(InputError, match=r'wrong.hdf5 has 5 rows|wrong.hdf5: dataset "embedding" has shape \(5, 8\)'):
        ELMoEmbedder(resolve_model(str(tmp_path / 'model'), embedding_weight_file=str(wrong)))
    right = tmp_path / 'right.hdf5'
    with h5py.File(right, 'w') as f:
        f.create_dataset('embedding', data=np.ones((bilm.vocab.size, 8), np.float32))
    loaded = ELMoEmbedder(resolve_model(str(tmp_path / 'model'), embedding_weight_file=str(right)))
    np.testing.assert_array_equal(loaded.bilm.word_embedding.numpy(), 1.0)


# ---- one description per mode, one value per batch --------------------------------------------

@pytest.mark.parametrize('token_input', ['char', 'word', 'word+char'])
def test_the_mode_table_says_what_each_part_reads_and_writes(token_input):
    from paddle_elmo.model.config import TOKEN_INPUT_MODES
    from paddle_elmo.export.export_format import input_names
    from paddle_elmo.files.hdf5_weights import hdf5_layout
    bilm = tiny_bilm(token_input)
    mode = TOKEN_INPUT_MODES[token_input]
    assert bilm.config.input_mode is mode and input_names(bilm.config) == mode.reads
    assert (bilm.char_encoder is not None, hasattr(bilm, 'word_embedding')) == (mode.chars, mode.words)
    names = [name for name, _, _, _ in hdf5_layout(bilm)]
    assert (names[0] == mode.word_embedding) if mode.word_embedding else not names[0].startswith(('embedding', 'word_'))
    if mode.words:
        assert bilm.word_embedding.shape[1] == bilm.config.word_embedding_dim
    inputs = InputMapper.of(bilm).batch([['the', 'cat'], ['a']])
    assert [name for name in ('char_ids', 'word_ids') if getattr(inputs, name) is not None] == sorted(mode.reads)


@pytest.mark.parametrize('token_input', ['char', 'word', 'word+char'])
def test_a_biLM_and_elmo_take_the_mappers_token_input_whole(token_input):
    from paddle_elmo import Elmo
    bilm = tiny_bilm(token_input)
    inputs = InputMapper.of(bilm).batch([['the', 'cat', 'sat'], ['a']])
    char_ids, word_ids, lengths = inputs
    with paddle.no_grad():
        whole = bilm(inputs)['activations']
        parts = bilm(char_ids, lengths, word_ids=word_ids)['activations']
        for a, b in zip(whole, parts):
            np.testing.assert_array_equal(a.numpy(), b.numpy())
        elmo = Elmo(bilm, dropout=0.0)
        np.testing.assert_array_equal(elmo(inputs)['elmo_representations'][0].numpy(),
                                      elmo(**elmo.batch_to_inputs([['the', 'cat', 'sat'], ['a']]))[
                                          'elmo_representations'][0].numpy())


# ---- a new mode is one component ---------------------------------------------------------------

@pytest.fixture
def summed_mode():
    """A toy 4th mode built from today's ids, registered for the test and removed afterwards -> its
    name: a word row [vocab, projection_dim] plus the char encoder's representation of the token (a
    sum, not word+char's projection of the two side by side). Everything the toolkit does with it
    comes from this class and the one `register` call."""
    from paddle_elmo.model.token_modes import (CHAR_ENCODER, CHAR_IDS, TOKEN_INPUT_MODES, WORD_EMBEDDING, WORD_IDS,
                                               TokenMode, register)

    class Summed(TokenMode):
        name, reads, parts, layer0 = 'word+char-sum', (WORD_IDS, CHAR_IDS), (CHAR_ENCODER, WORD_EMBEDDING), 'sum'
        word_embedding, word_embedding_dim = 'summed_word_embedding', 'projection_dim'

        def embed(self, bilm, ids, ops):
            return ops.word_rows(bilm.word_embedding, ids[WORD_IDS]) + self.char_tokens(bilm, ids[CHAR_IDS], ops)

    register(Summed())
    yield Summed.name
    del TOKEN_INPUT_MODES[Summed.name]


def test_a_fourth_token_mode_registered_in_one_place_embeds_saves_reloads_and_exports(summed_mode, tmp_path):
    from paddle_elmo.export import deploy
    from paddle_elmo.model.bilm import BiLM
    from paddle_elmo.export.inference import InferenceEmbedder
    from helpers import tiny_vocab
    paddle.seed(0)
    bilm = BiLM(tiny_config(token_input=summed_mode), vocab=tiny_vocab())
    sentences = [WORDS[:6], ['the', 'unknownword', 'cat'], ['a']]
    direct = ELMoEmbedder(bilm=bilm, stateful=False).embed_batch(sentences)
    # layer 0 is the word row plus the char encoder's output: the mode's composition, not another's
    char_ids, word_ids = InputMapper.of(bilm).tokens(['cat', 'unknownword'])
    with paddle.no_grad():
        chars = bilm.char_encoder(paddle.to_tensor(char_ids)).numpy()
    want = bilm.word_embedding.numpy()[word_ids - 1] + chars
    np.testing.assert_allclose(token_embeddings(bilm, ['cat', 'unknownword']), want, atol=1e-6, rtol=0)
    np.testing.assert_allclose(direct[1][0][[1, 2], :bilm.projection_dim], want[::-1], atol=1e-6, rtol=0)
    # saved as bilm-tf's files plus the mode's own word embedding dataset, and read back as this mode
    export_weights(bilm, str(tmp_path / 'model'))
    options = json.loads((tmp_path / 'model' / 'options.json').read_text())
    assert options['token_input'] == summed_mode and 'char_cnn' in options
    with h5py.File(tmp_path / 'model' / 'weights.hdf5', 'r') as f:
        assert f['summed_word_embedding'].shape == (tiny_vocab().size, bilm.projection_dim) and 'CNN/W_cnn_0' in f
    loaded = resolve_model(str(tmp_path / 'model')).load()
    assert loaded.config.token_input == summed_mode
    for a, b in zip(ELMoEmbedder(bilm=loaded, stateful=False).embed_batch(sentences), direct):
        np.testing.assert_array_equal(a, b)
    # exported (the static forward, verified against the embedder on the way) and run without the model
    deploy.export_inference(loaded, str(tmp_path / 'export'), formats=('paddle', 'onnx'),
                            verify_sentences=sentences)
    for backend in ('paddle', 'onnxruntime'):
        layers, mask = InferenceEmbedder(str(tmp_path / 'export'), backend=backend).run(
            InputMapper.of(bilm).batch(sentences))
        for row, expected in enumerate(direct):
            np.testing.assert_allclose(layers[row, :, :expected.shape[1]], expected, atol=TOL, rtol=0)
