"""lm_1b's other modes: next/previous-word prediction and sampling (`paddle-elmo predict`, predict.Predictor),
and the vocabulary dumps (`paddle-elmo dump`, dump_embeddings, dump_token_embeddings)."""
import json
import math
import os

import h5py
import numpy as np
import paddle
import pytest

from conftest import one_line_error, tiny_config
from paddle_elmo.fileio import InputError
from helpers import run, run_here

VOCAB = ['<S>', '</S>', '<UNK>', 'a', 'b', 'c', 'd']
SENTENCE = 'a b zz c'  # zz is outside the vocabulary: read by its chars, a <UNK> target


@pytest.fixture(scope='module')
def files(tmp_path_factory):
    """A tiny LanguageModel (random, with a softmax far from uniform) as a checkpoint of ours (ck/final),
    exported with its softmax (hdf5/) and without it (nosoftmax/); its vocabulary; a one-sentence
    held-out file."""
    from paddle_elmo.train.lm import LanguageModel
    from paddle_elmo.files.hdf5_weights import export_weights
    d = tmp_path_factory.mktemp('predict')
    paddle.seed(1)
    model = LanguageModel(tiny_config(), len(VOCAB))
    with paddle.no_grad():
        model.softmax.W.set_value(paddle.randn(model.softmax.W.shape) * 2)
        model.softmax.b.set_value(paddle.randn(model.softmax.b.shape))
    (d / 'ck').mkdir()
    (d / 'ck' / 'options.json').write_text(json.dumps(tiny_config().to_options()))
    paddle.save(model.state_dict(), str(d / 'ck' / 'final.pdparams'))
    export_weights(model.bilm, str(d / 'hdf5'), (model.softmax.W.numpy(), model.softmax.b.numpy().reshape(-1)))
    export_weights(model.bilm, str(d / 'nosoftmax'))
    (d / 'vocab.txt').write_text('\n'.join(VOCAB) + '\n')
    (d / 'dev.txt').write_text(SENTENCE + '\n')
    return d


@pytest.fixture(scope='module')
def predictor(files):
    from paddle_elmo.text.vocabulary import Vocabulary
    from paddle_elmo.train.lm_loading import load_language_model
    from paddle_elmo.use.predict import Predictor
    return Predictor(load_language_model(len(VOCAB), str(files / 'ck' / 'final')), Vocabulary(str(files / 'vocab.txt')))


def eval_losses(predictor, files):
    """run_eval.py's machinery on the one-sentence file, one row with room for the whole sentence:
    per-token (forward, backward) losses of its n + 1 targets, and lm.evaluate's figures."""
    from paddle_elmo.text.batches import iter_eval_batches
    from paddle_elmo.train.lm import evaluate
    batches = lambda: iter_eval_batches(str(files / 'dev.txt'), predictor.vocab, 1, 20)
    batch = next(batches())
    n = int(batch['weights'].sum())
    predictor.model.bilm.reset_states()  # the LM is stateful: evaluation starts from zeros
    forward, backward = predictor.model.token_losses(batch)
    predictor.model.bilm.reset_states()
    return forward[0:n], backward[0:n], evaluate(predictor.model, batches())


def test_log_probs_are_run_eval_s_per_token_losses_in_both_directions(predictor, files):
    forward, backward, figures = eval_losses(predictor, files)
    words, vocab = SENTENCE.split(), predictor.vocab
    # Forward: after <S> w1 .. w(i), the target w(i+1), the last one </S>; the empty prefix is <S> alone.
    mine_forward = [-predictor.log_probs(words[:i])[vocab.word_to_id(w)] for i, w in enumerate(words + ['</S>'])]
    # Backward: after </S> wn .. w(i+1) (the suffix w(i+1) .. wn), the target w(i), the last one <S>.
    targets = ['<S>'] + words
    mine_backward = [-predictor.log_probs(' '.join(words[i:]), 'backward')[vocab.word_to_id(targets[i])]
                     for i in range(len(words), -1, -1)]
    # Float32 logits in both, summed in different orders (the eval kernel vs a float64 log-softmax).
    np.testing.assert_allclose(mine_forward, forward, atol=2e-5, rtol=0)
    np.testing.assert_allclose(mine_backward, backward, atol=2e-5, rtol=0)
    assert np.mean(mine_forward) == pytest.approx(figures['forward_loss'], abs=2e-5)
    assert np.mean(mine_backward) == pytest.approx(figures['backward_loss'], abs=2e-5)
    assert figures['n_tokens'] == len(words) + 1
    assert np.exp(predictor.log_probs('a b')).sum() == pytest.approx(1.0, abs=1e-9)


def test_top_words_and_the_empty_prefix(predictor):
    log_p = predictor.log_probs('a b')
    top = predictor.top('a b', k=100)
    assert [w for w, _ in top] == sorted(set(VOCAB) - {'<S>'}, key=lambda w: -log_p[VOCAB.index(w)])
    assert [p for _, p in top] == pytest.approx(np.exp(sorted(np.delete(log_p, 0), reverse=True)).tolist())
    assert '<UNK>' not in [w for w, _ in predictor.top('a b', 100, exclude_unk=True)]
    assert '</S>' not in [w for w, _ in predictor.top('a b', 100, direction='backward')]
    assert len(predictor.top(['a', 'b'], 2)) == 2 and predictor.top(['a', 'b'], 2) == top[:2]
    # The empty prefix is the sentence boundary alone, however it is written.
    np.testing.assert_array_equal(predictor.log_probs(''), predictor.log_probs('   '))
    np.testing.assert_array_equal(predictor.log_probs(''), predictor.log_probs([]))


def test_sampling_is_repeatable_stops_at_the_boundary_and_follows_the_temperature(predictor):
    samples = predictor.sample('a', n=8, max_words=6, seed=5)
    assert samples == predictor.sample('a', n=8, max_words=6, seed=5)
    assert samples != predictor.sample('a', n=8, max_words=6, seed=6)
    assert all(len(s) <= 6 and not {'<S>', '</S>'} & set(s) for s in samples)
    assert all('<UNK>' not in s for s in predictor.sample('a', n=8, max_words=6, seed=5, exclude_unk=True))
    # Near zero temperature, sampling is greedy: each word the top-1 of the words before it.
    for direction in ('forward', 'backward'):
        sampled = predictor.sample('a', n=2, temperature=1e-4, max_words=4, direction=direction)[0]
        context = ['a']
        for word in (sampled if direction == 'forward' else sampled[::-1]):
            assert predictor.top(context, 1, direction)[0][0] == word
            context = context + [word] if direction == 'forward' else [word] + context
        assert predictor.sample_text('a', sampled, direction) == ' '.join(
            ['a'] + sampled if direction == 'forward' else sampled + ['a'])
    # A model sure that the sentence ends: every sample stops at once.
    softmax = predictor.model.softmax
    saved = softmax.b.numpy()
    try:
        with paddle.no_grad():
            softmax.b.set_value(np.where(np.arange(len(VOCAB))[:, None] == 1, 50.0, saved).astype(np.float32))
        assert predictor.sample('a b', n=3, seed=0) == [[], [], []]
    finally:
        with paddle.no_grad():
            softmax.b.set_value(saved)


def paddle_log_softmax(predictor):
    """Predictor._log_softmax as it was before issue 52 (Paddle's float64 log_softmax, ~1 s a row of 35k
    words on CPU): the reference the numpy normalisation must equal."""
    import paddle.nn.functional as F
    softmax = predictor.model.softmax

    def log_softmax(h, temperature=1.0):
        with paddle.no_grad():
            logits = paddle.matmul(h, softmax.W, transpose_y=True) + softmax.b.squeeze(-1)
            return F.log_softmax(logits.astype('float64') / temperature, axis=-1).numpy()
    return log_softmax


def test_the_bundled_model_predicts_and_samples_as_with_paddle_s_log_softmax(monkeypatch):
    """The numpy normalisation changes no probability (float64: 1e-12) and no sample, over 35k words."""
    from paddle_elmo.train.lm_loading import load_language_model
    from paddle_elmo.files.model_io import resolve_model
    from paddle_elmo.use.predict import Predictor
    from paddle_elmo.text.vocabulary import Vocabulary
    vocab = Vocabulary(resolve_model('bundled').own_vocabulary_file)
    bundled = Predictor(load_language_model(vocab.size), vocab)
    prefix = 'The stock market'
    got = {direction: bundled.log_probs(prefix, direction) for direction in ('forward', 'backward')}
    top, samples = bundled.top(prefix, 5), bundled.sample(prefix, n=2, max_words=3, seed=4, temperature=0.7)
    monkeypatch.setattr(bundled, '_log_softmax', paddle_log_softmax(bundled))
    for direction, log_p in got.items():
        np.testing.assert_allclose(np.exp(log_p), np.exp(bundled.log_probs(prefix, direction)), rtol=1e-9, atol=1e-15)
    assert [w for w, _ in top] == [w for w, _ in bundled.top(prefix, 5)]
    assert samples == bundled.sample(prefix, n=2, max_words=3, seed=4, temperature=0.7)


def test_the_bundled_model_loads_its_files_weights_into_the_one_bilm_it_builds(monkeypatch):
    """load_language_model from weights builds one biLM, the one the file fills, and starts the softmax
    from the file's arrays: no throwaway biLM or random softmax (predict's start is embed's, plus
    the softmax's read), and nothing of them left in the model."""
    from paddle_elmo.model import bilm as bilm_module
    from paddle_elmo.files.hdf5_weights import read_hdf5_softmax
    from paddle_elmo.train.lm_loading import load_language_model
    from paddle_elmo.files.model_io import resolve_model
    from paddle_elmo.text.vocabulary import Vocabulary
    bundled = resolve_model()
    weight_file = bundled.weight_file
    vocab = Vocabulary(os.path.join(os.path.dirname(bundled.options_file), 'vocab.txt'))
    built, build = [], bilm_module.BiLM.__init__
    monkeypatch.setattr(bilm_module.BiLM, '__init__', lambda self, *a, **k: built.append(1) or build(self, *a, **k))
    model = load_language_model(vocab.size)
    assert len(built) == 1 and model.bilm.stateful
    W, b = read_hdf5_softmax(weight_file)
    np.testing.assert_array_equal(model.softmax.W.numpy(), W)
    np.testing.assert_array_equal(model.softmax.b.numpy().reshape(-1), b)
    loaded = bundled.load().state_dict()
    assert model.bilm.state_dict().keys() == loaded.keys()
    for name, value in model.bilm.state_dict().items():
        np.testing.assert_array_equal(value.numpy(), loaded[name].numpy(), err_msg=name)


def test_bad_arguments_of_the_api(predictor, files):
    from paddle_elmo.text.vocabulary import Vocabulary
    from paddle_elmo.train.lm_loading import load_language_model
    from paddle_elmo.use.predict import Predictor
    with pytest.raises(InputError, match='direction must be "forward" or "backward", got \'sideways\''):
        predictor.top('a', 3, direction='sideways')
    with pytest.raises(InputError, match='temperature must be > 0'):
        predictor.sample('a', temperature=0)
    with pytest.raises(InputError, match='top_k must be >= 1'):
        predictor.top('a', 0)
    with pytest.raises(TypeError, match='sentence 0 holds a value of type int'):
        predictor.log_probs(['a', 3])
    (files / 'other.txt').write_text('\n'.join(VOCAB + ['e']) + '\n')
    with pytest.raises(InputError, match='the vocabulary has 8 tokens but the softmax has 7 rows'):
        Predictor(predictor.model, Vocabulary(str(files / 'other.txt')))
    with pytest.raises(InputError, match='no softmax/W and softmax/b'):
        load_language_model(len(VOCAB), str(files / 'nosoftmax'))


def test_run_predict_from_a_checkpoint_and_from_exported_weights(predictor, files, tmp_path):
    out = tmp_path / 'p.json'
    proc = run('predict', ['--vocab_file', str(files / 'vocab.txt'), '--init_from_ckpt',
                                  str(files / 'ck' / 'final'), '--prefix', 'a b', '--prefix', '', '--top_k', '3',
                                  '--sample', '2', '--sample_max_tokens', '5', '--seed', '4',
                                  '--output_json', str(out)])
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(out.read_text())
    assert [(p['prefix'], p['direction']) for p in result['predictions']] == [('a b', 'forward'), ('', 'forward')]
    for entry in result['predictions']:
        expected = predictor.top(entry['prefix'], 3)
        assert [t['word'] for t in entry['top']] == [w for w, _ in expected]
        assert [t['prob'] for t in entry['top']] == pytest.approx([p for _, p in expected], abs=1e-6)
    first = result['predictions'][0]['top'][0]
    assert f'forward: a b ___\n  {first["prob"]:.4f}  {first["word"]}\n' in proc.stdout
    expected = [predictor.sample_text(p, s) for p in ('a b', '') for s in predictor.sample(p, 2, 1.0, 5, 4)]
    assert [s['text'] for s in result['samples']] == expected
    assert [s['prefix'] for s in result['samples']] == ['a b', 'a b', '', '']
    # The exported hdf5 (softmax/W, softmax/b), backward, prefixes from a file: -log(prob) is the eval loss.
    (tmp_path / 'prefixes.txt').write_text('b zz c\n')
    proc = run('predict', ['--vocab_file', str(files / 'vocab.txt'), '--options_file',
                                  str(files / 'hdf5' / 'options.json'), '--weight_file', str(files / 'hdf5' / 'weights.hdf5'),
                                  '--prefix_file', str(tmp_path / 'prefixes.txt'), '--direction', 'backward',
                                  '--top_k', '10', '--output_json', str(out)])
    assert proc.returncode == 0, proc.stderr[-2000:]
    (entry,) = json.loads(out.read_text())['predictions']
    assert entry['prefix'] == 'b zz c' and entry['direction'] == 'backward' and len(entry['top']) == 6
    probs = [t['prob'] for t in entry['top']]
    assert probs == sorted(probs, reverse=True)
    _, backward, _ = eval_losses(predictor, files)
    prob_a = next(t['prob'] for t in entry['top'] if t['word'] == 'a')
    assert -math.log(prob_a) == pytest.approx(backward[3], abs=2e-5)  # a, before "b zz c"


def test_predict_eval_and_dump_read_the_vocabulary_the_model_records(predictor, files, tmp_path, capfd):
    # The commands run in this process (helpers.run_here): what is checked is the vocabulary each one
    # reads; their scripts run in processes of their own in the tests above and below.
    import shutil
    ck = tmp_path / 'ck'
    shutil.copytree(files / 'ck', ck)
    (ck / 'recipe.json').write_text(json.dumps({'version': 1, 'vocab_file': str(files / 'vocab.txt')}))
    model = ['--init_from_ckpt', str(ck / 'final')]
    proc = run_here('predict', model + ['--prefix', 'a b', '--top_k', '3', '--output_json',
                                               str(tmp_path / 'p.json')], capfd)
    assert proc.returncode == 0, proc.stderr[-2000:]
    top = json.loads((tmp_path / 'p.json').read_text())['predictions'][0]['top']
    assert [t['word'] for t in top] == [w for w, _ in predictor.top('a b', 3)]
    proc = run_here('run_eval.py', model + ['--dev_data_path', str(files / 'dev.txt')], capfd)
    assert proc.returncode == 0 and 'tokens: 5' in proc.stdout, proc.stderr[-2000:]
    proc = run_here('dump', model + ['--output_dir', str(tmp_path / 'dump'), '--embeddings', 'softmax'], capfd)
    assert proc.returncode == 0 and (tmp_path / 'dump' / 'vocab.txt').read_text().split() == VOCAB, proc.stderr
    # An export with a vocab.txt beside its options.json: that one.
    shutil.copytree(files / 'hdf5', tmp_path / 'export')
    shutil.copy(files / 'vocab.txt', tmp_path / 'export' / 'vocab.txt')
    export = ['--options_file', str(tmp_path / 'export' / 'options.json'), '--weight_file',
              str(tmp_path / 'export' / 'weights.hdf5')]
    proc = run_here('run_eval.py', export + ['--dev_data_path', str(files / 'dev.txt')], capfd)
    assert proc.returncode == 0 and 'tokens: 5' in proc.stdout, proc.stderr[-2000:]
    # Nothing recorded: one line naming the flag and what was looked at.
    (ck / 'recipe.json').write_text(json.dumps({'version': 1}))
    line = one_line_error(run_here('predict', model + ['--prefix', 'a'], capfd))
    assert line == (f'error: no vocabulary: give --vocab_file (the one the model was trained with); '
                    f'{ck / "recipe.json"} records none; no vocab.txt beside {ck / "options.json"}')
    (ck / 'recipe.json').unlink()
    line = one_line_error(run_here('run_eval.py', model + ['--dev_data_path', str(files / 'dev.txt')], capfd))
    assert 'error: no vocabulary: give --vocab_file' in line and f'{ck / "recipe.json"} is absent' in line
    line = one_line_error(run_here('run_eval.py', ['--options_file', str(files / 'hdf5' / 'options.json'),
                                                   '--weight_file', str(files / 'hdf5' / 'weights.hdf5'),
                                                   '--dev_data_path', str(files / 'dev.txt')], capfd))
    assert line.endswith(f'no vocab.txt beside {files / "hdf5" / "options.json"}')


@pytest.mark.parametrize('case', ['unknown direction', 'no prefix', 'weights without a softmax',
                                  'a checkpoint without a softmax', 'a vocabulary that does not match'])
def test_run_predict_bad_input_is_one_line(case, files, tmp_path):
    model = ['--init_from_ckpt', str(files / 'ck' / 'final')]
    vocab = str(files / 'vocab.txt')
    args, message = {
        'unknown direction': (model + ['--prefix', 'a', '--direction', 'sideways'],
                              "argument --direction: invalid choice: 'sideways'"),
        'no prefix': (model, 'no prefix: give --prefix TEXT (repeatable) or --prefix_file FILE'),
        'weights without a softmax': (['--options_file', str(files / 'nosoftmax' / 'options.json'), '--weight_file',
                                       str(files / 'nosoftmax' / 'weights.hdf5'), '--prefix', 'a'],
                                      'weights.hdf5: no softmax/W and softmax/b datasets'),
        'a checkpoint without a softmax': (None, 'no softmax (softmax.W) in this checkpoint'),
        'a vocabulary that does not match': (model + ['--prefix', 'a'],
                                             'the softmax has 7 rows but the vocabulary has 8 tokens'),
    }[case]
    if case == 'a checkpoint without a softmax':
        state = paddle.load(str(files / 'ck' / 'final.pdparams'))
        (tmp_path / 'options.json').write_text(json.dumps(tiny_config().to_options()))
        paddle.save({k: v for k, v in state.items() if not k.startswith('softmax.')}, str(tmp_path / 'bilm.pdparams'))
        args = ['--init_from_ckpt', str(tmp_path / 'bilm'), '--prefix', 'a']
    if case == 'a vocabulary that does not match':
        vocab = str(tmp_path / 'other.txt')
        (tmp_path / 'other.txt').write_text('\n'.join(VOCAB + ['e']) + '\n')
    line = one_line_error(run('predict', ['--vocab_file', vocab, '--output_json', str(tmp_path / 'o.json')]
                              + args, cwd=tmp_path, timeout=300))
    assert message in line
    assert not (tmp_path / 'o.json').exists()


@pytest.mark.filterwarnings("ignore:Paddle's MKL chose its generic code path")  # earlier tests ran products
def test_run_dump_writes_lm_1b_s_files_and_bilm_tf_s_hdf5(files, tmp_path):
    from paddle_elmo import ELMoEmbedder
    plain = tmp_path / 'plain.txt'  # no specials: the softmax rows are <S> </S> <UNK> + the file
    plain.write_text('\n'.join(VOCAB[3:]) + '\n')
    proc = run('dump', ['--vocab_file', str(plain), '--init_from_ckpt', str(files / 'ck' / 'final'),
                               '--output_dir', str(tmp_path / 'dump'), '--output_file', str(tmp_path / 'tokens.hdf5')])
    assert proc.returncode == 0, proc.stderr[-2000:]
    dump = tmp_path / 'dump'
    assert sorted(p.name for p in dump.iterdir()) == ['embeddings_char_cnn.npy', 'embeddings_softmax.npy',
                                                      'softmax_bias.npy', 'vocab.txt']
    assert (dump / 'vocab.txt').read_text().split() == VOCAB
    state = paddle.load(str(files / 'ck' / 'final.pdparams'))
    np.testing.assert_array_equal(np.load(dump / 'embeddings_softmax.npy'), state['softmax.W'].numpy())
    np.testing.assert_array_equal(np.load(dump / 'softmax_bias.npy'), state['softmax.b'].numpy().reshape(-1))
    # The char-CNN rows are what ELMoEmbedder's layer 0 gives those words in any sentence.
    char_cnn = np.load(dump / 'embeddings_char_cnn.npy')
    assert char_cnn.shape == (len(VOCAB), 8) and char_cnn.dtype == np.float32
    layer0 = ELMoEmbedder(str(files / 'ck' / 'final')).embed_sentence(VOCAB)[0, :, :8]
    np.testing.assert_allclose(char_cnn, layer0, atol=1e-5, rtol=0)
    with h5py.File(tmp_path / 'tokens.hdf5', 'r') as f:  # bilm-tf's rows: the file's lines as they are
        np.testing.assert_allclose(f['embedding'][...], char_cnn[3:], atol=1e-6, rtol=0)
    assert not [p for p in tmp_path.rglob('*') if '.tmp' in p.name]
    # Without a softmax: the softmax dump is a one-line error; the char-CNN dump alone works.
    nosoftmax = ['--options_file', str(files / 'nosoftmax' / 'options.json'), '--weight_file',
                 str(files / 'nosoftmax' / 'weights.hdf5')]
    line = one_line_error(run('dump', ['--vocab_file', str(plain), '--output_dir', str(tmp_path / 'x')]
                              + nosoftmax))
    assert 'no softmax/W and softmax/b datasets' in line and not (tmp_path / 'x').exists()


def test_char_cnn_dump_without_a_softmax_and_token_embeddings_of_specials(files, tmp_path):
    from paddle_elmo import resolve_model, token_embeddings
    from paddle_elmo.use.predict import dump_embeddings
    bilm = resolve_model(str(files / 'nosoftmax')).load()
    written = dump_embeddings(str(tmp_path / 'd'), VOCAB, bilm, batch_size=3)
    assert [os.path.basename(p) for p in written] == ['embeddings_char_cnn.npy', 'vocab.txt']
    np.testing.assert_allclose(np.load(tmp_path / 'd' / 'embeddings_char_cnn.npy'),
                               token_embeddings(bilm, VOCAB), atol=1e-6, rtol=0)
    # <S> and </S> are the sentence boundaries: layer 0 of the positions the biLM adds around a sentence.
    from paddle_elmo.text.token_ids import CharMapper
    ids, _ = CharMapper().batch([['a']])
    with paddle.no_grad():
        x = bilm(paddle.to_tensor(ids))['activations'][0].numpy()[0, :, :8]
    np.testing.assert_allclose(token_embeddings(bilm, ['<S>', 'a', '</S>']), x, atol=1e-6, rtol=0)


def test_dump_token_embeddings_of_the_fixture_vocabulary_matches_the_reference(fixture_dir, tmp_path):
    from paddle_elmo import dump_token_embeddings, resolve_model
    out = tmp_path / 'tokens.hdf5'
    model = resolve_model(os.path.join(fixture_dir, 'options.json'), os.path.join(fixture_dir, 'lm_weights.hdf5'))
    n = dump_token_embeddings(os.path.join(fixture_dir, 'vocab_test.txt'), model, str(out), batch_size=100)
    with h5py.File(os.path.join(fixture_dir, 'elmo_token_embeddings.hdf5'), 'r') as f:
        ref = f['embedding'][...]
    with h5py.File(out, 'r') as f:
        got = f['embedding'][...]
    assert n == 458 and got.shape == ref.shape == (458, 16) and got.dtype == np.float32
    # bilm-tf's float32 outputs; 1e-5 as the other parity tests (tests/test_elmo.py, TOL).
    np.testing.assert_allclose(got, ref, atol=1e-5, rtol=0)
    (tmp_path / 'a-file').write_text('not a directory')  # (a missing directory is made when the file is written)
    with pytest.raises(InputError, match='its directory .*a-file is a file'):
        dump_token_embeddings(os.path.join(fixture_dir, 'vocab_test.txt'), model, str(tmp_path / 'a-file' / 'o.hdf5'))
