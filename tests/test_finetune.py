"""Downstream classification: data, folds, the shared head, the ELMo layer cache, both scripts end to end."""
import json
import os

import numpy as np
import paddle
import pytest

from paddle_elmo.fileio import InputError
from conftest import FIXTURE, SHARED, one_line_error, require, tiny_config
from helpers import (LEARN, RT, assert_learned, check_result, head_lines, run_here, run_script, save_checkpoint,
                     train_here, write_separable_polarity)
from paddle_elmo.classify.data import Dataset, make_folds, read_polarity
from paddle_elmo.classify.head import BowHead
from paddle_elmo.classify.training import make_optimizer, predict, train_epoch
from paddle_elmo.text.tokenizers import get_tokenizer

CORPUS = os.path.join(SHARED, 'data', 'lm-corpus', 'train.txt')
# Cache and live paths do the same float32 arithmetic on differently padded batches; 1e-5 allows
# for BLAS summation order while a wrong layer, row or boundary moves logits by far more.
TOL = 1e-5


def fixture_bilm():
    from paddle_elmo import resolve_model
    require(FIXTURE)
    return resolve_model(os.path.join(FIXTURE, 'options.json'),
                         os.path.join(FIXTURE, 'lm_weights.hdf5')).load()


def small_dataset(n_per_class=20):
    require(RT)
    sentences, labels, moses = [], [], get_tokenizer('moses')
    for name, label in (('rt-polarity.pos', 1), ('rt-polarity.neg', 0)):
        lines = head_lines(os.path.join(RT, name), n_per_class)
        sentences += [moses(line) for line in lines]
        labels += [label] * len(lines)
    return Dataset(sentences, np.array(labels, dtype=np.int64), {}, 'moses')


# ---- data ------------------------------------------------------------------------------------

def test_read_polarity_falls_back_to_latin1_per_file_and_reports_it(tmp_path):
    (tmp_path / 'rt-polarity.pos').write_bytes('un film très beau \n'.encode('utf-8'))
    (tmp_path / 'rt-polarity.neg').write_bytes('un caf\xe9 froid\nennuyeux\n'.encode('latin-1'))
    data = read_polarity(str(tmp_path))
    assert data.sentences == [['un', 'film', 'très', 'beau'], ['un', 'café', 'froid'], ['ennuyeux']]
    assert data.labels.tolist() == [1, 0, 0]
    encodings = {os.path.basename(k): v['encoding'] for k, v in data.sources.items()}
    assert encodings == {'rt-polarity.pos': 'utf-8', 'rt-polarity.neg': 'windows-1252'}


def test_empty_lines_are_skipped_and_listed_by_number(tmp_path):
    (tmp_path / 'a.pos').write_text('good\n\nfine\n \t\n', encoding='utf-8')
    (tmp_path / 'a.neg').write_text('bad\n', encoding='utf-8')
    data = read_polarity(str(tmp_path), 'a.pos', 'a.neg')
    assert data.sentences == [['good'], ['fine'], ['bad']] and data.labels.tolist() == [1, 1, 0]
    assert data.sources[str(tmp_path / 'a.pos')] == {'lines': 2, 'encoding': 'utf-8', 'empty_lines': [2, 4]}
    (tmp_path / 'a.neg').write_text('\n', encoding='utf-8')
    with pytest.raises(ValueError, match=r'a\.neg: no sentences'):
        read_polarity(str(tmp_path), 'a.pos', 'a.neg')


def test_reviews_are_split_as_the_pretraining_corpus_by_the_moses_tokenizer(tmp_path):
    # rt-polarity is lower-cased and tokenized but leaves clitics on their word; raw and tokenized
    # reviews both become the corpus's tokens (what split_clitics used to do for the first kind)
    (tmp_path / 'a.pos').write_text("it's a film that doesn't fail, you'll see rock'n'roll at 5 o'clock\n"
                                    "it's a film that doesn't fail , you'll see\n", encoding='utf-8')
    (tmp_path / 'a.neg').write_text('bad.\n', encoding='utf-8')
    data = read_polarity(str(tmp_path), 'a.pos', 'a.neg', tokenizer='moses')
    assert data.sentences[0] == ['it', "'s", 'a', 'film', 'that', 'doesn', "'t", 'fail', ',', 'you', "'ll", 'see',
                                 "rock'n'roll", 'at', '5', "o'clock"]
    assert data.sentences[1] == data.sentences[0][:12] and data.sentences[2] == ['bad', '.']
    assert data.tokenizer == 'moses'


# ---- folds -----------------------------------------------------------------------------------

def test_folds_are_disjoint_cover_the_data_and_are_stratified():
    labels = np.array([1] * 61 + [0] * 42)
    folds = make_folds(labels, n_folds=10, seed=3, dev_fraction=0.1)
    assert len(folds) == 10
    all_tests = np.concatenate([f.test for f in folds])
    assert sorted(all_tests.tolist()) == list(range(len(labels)))  # each sentence tested exactly once
    for f in folds:
        parts = [set(f.train.tolist()), set(f.dev.tolist()), set(f.test.tolist())]
        assert sum(map(len, parts)) == len(labels) and set.union(*parts) == set(range(len(labels)))
        assert len(f.dev) > 0 and abs(labels[f.test].mean() - labels.mean()) < 0.1
    again = make_folds(labels, n_folds=10, seed=3)
    assert all(np.array_equal(a.test, b.test) and np.array_equal(a.dev, b.dev) for a, b in zip(folds, again))
    other = make_folds(labels, n_folds=10, seed=4)
    assert not all(np.array_equal(a.test, b.test) for a, b in zip(folds, other))


def test_single_split_and_too_few_sentences():
    labels = np.array([1] * 50 + [0] * 50)
    (fold,) = make_folds(labels, n_folds=1, seed=1)
    assert len(fold.test) == 10 and len(fold.train) + len(fold.dev) == 90
    assert not set(fold.test) & (set(fold.train) | set(fold.dev))
    with pytest.raises(ValueError, match='--folds 10 needs at least 10 sentences per class'):
        make_folds(np.array([1] * 5 + [0] * 50), n_folds=10)


# ---- head ------------------------------------------------------------------------------------

def test_pack_keeps_the_real_tokens_and_the_head_averages_each_sentence():
    from paddle_elmo.classify.head import pack, sentence_means
    x = np.random.RandomState(0).randn(3, 4, 6).astype(np.float32)
    mask = np.array([[True, True, False, False], [False] * 4, [True] * 4])
    x[0, 2:] = 1e3  # padding must not reach the features
    tokens, lengths = pack(paddle.to_tensor(x), paddle.to_tensor(mask))
    assert lengths.tolist() == [2, 0, 4]
    np.testing.assert_array_equal(tokens.numpy(), np.concatenate([x[0, :2], x[2]]))
    means = sentence_means(tokens, lengths).numpy()
    np.testing.assert_allclose(means, [x[0, :2].mean(0), np.zeros(6), x[2].mean(0)], rtol=1e-6, atol=1e-6)

    paddle.seed(0)
    head = BowHead(input_dim=6, hidden_dim=5, dropout=0.0)
    head.eval()
    together = head(tokens, lengths).numpy()
    alone = head(paddle.to_tensor(x[0, :2]), np.array([2])).numpy()
    np.testing.assert_allclose(together[:1], alone, atol=1e-6)  # a sentence's logits do not depend on its batch


def test_dropout_and_gradients_reach_only_real_tokens():
    from paddle_elmo.classify.head import pack
    x = paddle.to_tensor(np.ones((2, 5, 400), np.float32), stop_gradient=False)
    mask = paddle.to_tensor(np.arange(5)[None] < np.array([[2], [5]]))
    head = BowHead(input_dim=400, hidden_dim=0, dropout=0.5, feature_norm='none')
    head.train()
    tokens, lengths = pack(x, mask)
    dropped = head.dropout(tokens).numpy()
    assert dropped.shape == (7, 400) and 0.4 < (dropped == 0).mean() < 0.6  # i.i.d. per element
    assert set(np.unique(dropped)) == {0.0, 2.0}  # upscale_in_train: kept values / (1 - p)
    head(tokens, lengths).sum().backward()
    grad = x.grad.numpy()
    assert np.all(grad[0, 2:] == 0) and np.abs(grad[1]).sum() > 0


def test_early_stopping_restores_the_best_epochs_batch_norm_statistics_too():
    from paddle_elmo.classify.training import _restore, _trainable_snapshot
    paddle.seed(0)
    head = BowHead(input_dim=6, hidden_dim=5, dropout=0.0, feature_norm='batchnorm')
    x, lengths = paddle.randn([24, 6]), np.full(8, 3)
    head.train()
    head(x, lengths)
    best = _trainable_snapshot(head)
    assert any('_mean' in name for name in best)  # the running statistics are part of it
    head(x * 10 + 5, lengths)  # a later epoch moves parameters' statistics
    head.eval()
    moved = head(x, lengths).numpy()
    _restore(head, best)
    for name, t in head.state_dict().items():
        np.testing.assert_array_equal(t.numpy(), best[name], err_msg=name)
    assert not np.allclose(head(x, lengths).numpy(), moved)


# ---- ELMo features ---------------------------------------------------------------------------

def test_cache_gives_the_same_predictions_as_recomputing_the_bilm():
    from paddle_elmo.classify.elmo_features import model_builder
    from paddle_elmo.classify.layer_cache import ActivationCache
    bilm, data = fixture_bilm(), small_dataset(15)
    cache = ActivationCache(bilm, data.sentences, progress=False)
    try:
        paddle.seed(0)
        model = model_builder(bilm, data.sentences, layer_norm=True, cache=cache)(0)
        with paddle.no_grad():  # non-default mix weights, so every layer's slot matters
            model.features.elmo.scalar_mixes[0].weights_.set_value(np.array([0.3, -0.5, 0.9], np.float32))
        indices = np.arange(len(data.sentences))
        cached = predict(model, indices, 8, data.sentences)
        model.features.cache = None
        live = predict(model, indices, 8, data.sentences)
    finally:
        cache.close()
    assert not os.path.exists(cache.directory)
    np.testing.assert_allclose(cached, live, atol=TOL, rtol=0)
    assert np.abs(cached).max() > 1e-3


def _bilm_params(bilm):
    return {name: p.numpy().copy() for name, p in bilm.named_parameters()}


def _largest_change(before, bilm):
    return max(np.abs(before[k] - v).max() for k, v in _bilm_params(bilm).items())


def _train_steps(bilm, data, steps=2, **kw):
    """A few Adam steps on short sentences (backward through the biLM is slow) -> (build, model)."""
    from paddle_elmo.classify.elmo_features import model_builder
    build = model_builder(bilm, data.sentences, **kw)
    model = build(0)
    optimizer = make_optimizer(model, 1e-3)
    indices = np.argsort([len(s) for s in data.sentences])[:8]  # the shortest sentences, both classes
    for _ in range(steps):
        train_epoch(model, optimizer, indices, data.labels, 8, np.random.default_rng(0), '', progress=False)
    return build, model


def test_frozen_bilm_does_not_change_but_the_scalar_mix_does():
    bilm, data = fixture_bilm(), small_dataset(20)
    before = _bilm_params(bilm)
    _, model = _train_steps(bilm, data)
    assert _largest_change(before, bilm) == 0
    mix = model.features.elmo.scalar_mixes[0]
    assert np.abs(mix.weights_.numpy()).max() > 0 and mix.gamma.numpy()[0] != 1.0


def test_one_layer_alone_is_that_layer_times_gamma_and_only_gamma_trains():
    from paddle_elmo.model.bilm import remove_sentence_boundaries
    from paddle_elmo.use.downstream import Elmo
    bilm, data = fixture_bilm(), small_dataset(20)
    inputs = Elmo(bilm).batch_to_inputs(data.sentences[:4])
    out = Elmo(bilm).bilm_layers(inputs['char_ids'], inputs['lengths'])
    for asked, k in ((0, 0), (1, 1), (2, 2), (-1, 2)):  # -1: the top layer, bilm-tf's use_top_only
        elmo = Elmo(bilm, dropout=0.0, l2_coef=1.0, only_layer=asked)
        with paddle.no_grad():
            elmo.scalar_mixes[0].gamma.set_value(np.array([0.7], np.float32))
            got = elmo(**inputs)['elmo_representations'][0].numpy()
        want, _ = remove_sentence_boundaries(out['activations'][k], out['mask'])
        np.testing.assert_allclose(got, 0.7 * want.numpy(), rtol=1e-6, atol=1e-7)
        assert elmo.scalar_mixes[0].normalized_weights().numpy().tolist() == [float(i == k) for i in range(3)]
        assert float(elmo.l2_penalty()) == 0.0
    with pytest.raises(InputError, match='this biLM has layers 0..2'):
        Elmo(bilm, only_layer=3)
    _, model = _train_steps(bilm, data, only_layer=1)
    mix = model.features.elmo.scalar_mixes[0]
    assert np.all(mix.weights_.numpy() == 0) and mix.gamma.numpy()[0] != 1.0


def test_trainable_bilm_changes_at_its_own_rate_and_each_fold_restarts_from_the_loaded_weights():
    bilm, data = fixture_bilm(), small_dataset(20)
    assert set(data.labels[np.argsort([len(s) for s in data.sentences])[:8]]) == {0, 1}
    before = _bilm_params(bilm)
    build, _ = _train_steps(bilm, data, trainable=True, bilm_lr=1e-3)
    assert _largest_change(before, bilm) > 1e-4
    build(1)  # the next fold's model
    assert _largest_change(before, bilm) == 0
    # A tiny biLM rate barely moves it while the head trains at --lr: the rate groups are honoured.
    _, model = _train_steps(bilm, data, trainable=True, bilm_lr=1e-10)
    assert _largest_change(before, bilm) < 1e-7
    assert np.abs(model.features.elmo.scalar_mixes[0].weights_.numpy()).max() > 1e-4


def test_frozen_bilm_has_no_dropout_when_the_classifier_is_in_train_mode():
    from paddle_elmo import BiLM
    from paddle_elmo.classify.elmo_features import model_builder
    paddle.seed(0)
    bilm = BiLM(tiny_config(dropout=0.5))
    sentences = [['a', 'good', 'film'], ['bad']]
    model = model_builder(bilm, sentences, dropout=0.0)(0)
    model.train()
    first = model(np.array([0, 1])).numpy()
    np.testing.assert_array_equal(first, model(np.array([0, 1])).numpy())


# ---- word2vec features -----------------------------------------------------------------------

def _toy_vectors():
    from gensim.models import KeyedVectors
    kv = KeyedVectors(vector_size=3)
    kv.add_vectors(['the', 'Spielberg', 'film'], np.array([[1, 0, 0], [0, 2, 0], [0, 0, 4]], np.float32))
    return kv


def test_word2vec_lookup_falls_back_on_case_and_handles_oov_as_documented():
    from paddle_elmo.classify.word2vec_features import UNK, Word2VecFeatures, lookup_table
    sentences = [['the', 'spielberg', 'film'], ['zzz', 'film'], ['zzz']]
    table, ids, stats = lookup_table(sentences, _toy_vectors(), oov='unk')
    assert stats['oov_tokens'] == 2 and stats['oov_types'] == 1 and stats['tokens'] == 6
    assert stats['sentences_without_known_tokens'] == 1
    np.testing.assert_array_equal(table[ids[0]], [[1, 0, 0], [0, 2, 0], [0, 0, 4]])  # 'spielberg' -> 'Spielberg'
    assert ids[1][0] == UNK
    features = Word2VecFeatures(table, ids, 'unk')
    with paddle.no_grad():
        features.unk.set_value(np.array([5, 5, 5], np.float32))
    x, lengths = features(np.array([1, 2]))
    np.testing.assert_array_equal(x.numpy(), [[5, 5, 5], [0, 0, 4], [5, 5, 5]])
    assert lengths.tolist() == [2, 1]

    table, ids, stats = lookup_table(sentences, _toy_vectors(), oov='skip')
    features = Word2VecFeatures(table, ids, 'skip')
    assert features.unk is None and len(ids[1]) == 1 and len(ids[2]) == 0
    x, lengths = features(np.array([1, 2]))
    np.testing.assert_array_equal(x.numpy(), [[0, 0, 4]])
    assert lengths.tolist() == [1, 0]


@pytest.mark.parametrize('name', ['v.bin', 'v.bin.gz', 'v.txt'])
def test_saved_vectors_load_back_unchanged(tmp_path, name):
    from paddle_elmo.text.word_vectors import load_vectors, save_vectors
    kv = _toy_vectors()
    save_vectors(kv, str(tmp_path / name))
    loaded = load_vectors(str(tmp_path / name))
    assert list(loaded.index_to_key) == list(kv.index_to_key)
    np.testing.assert_array_equal(loaded.vectors, kv.vectors)
    assert os.listdir(tmp_path) == [name]  # no temp file left behind


@pytest.mark.parametrize('max_vocab', [0, 2])
@pytest.mark.parametrize('name', ['v.bin', 'v.txt', 'v.npz', 'v.kv'])
def test_every_command_reads_every_vector_format_alike(tmp_path, name, max_vocab):
    # pretrain, finetune and word2vec all read --word_vectors through read_word_vectors
    from paddle_elmo.text.word_vectors import read_word_vectors, save_vectors
    kv, path = _toy_vectors(), str(tmp_path / name)
    if name.endswith('.npz'):
        np.savez(path, words=np.array(kv.index_to_key), vectors=kv.vectors)
    elif name.endswith('.kv'):
        kv.save(path)
    else:
        save_vectors(kv, path)
    loaded = read_word_vectors(path, max_vocab)
    n = max_vocab or len(kv)
    assert list(loaded.index_to_key) == list(kv.index_to_key)[:n]
    np.testing.assert_array_equal(loaded.vectors, kv.vectors[:n])


def test_an_unknown_vector_file_ending_names_the_formats(tmp_path):
    from paddle_elmo.fileio import InputError
    from paddle_elmo.text.word_vectors import read_word_vectors
    with pytest.raises(InputError, match=r'v\.vectors: expected a word2vec file .*\.npz'):
        read_word_vectors(str(tmp_path / 'v.vectors'))


# ---- the scripts, end to end -----------------------------------------------------------------
# Each script's process: test_run_finetune_end_to_end_on_a_slice and test_bad_input_is_one_line_error_with_
# exit_code_2; the other runs in this process (helpers.train_here): what they train and write is the test.


def test_run_finetune_end_to_end_on_a_slice(rt_slice, tmp_path):
    require(FIXTURE)
    out = tmp_path / 'results' / 'elmo.json'
    proc = run_script('run_finetune.py', '--data_dir', str(rt_slice), '--options_file',
                      os.path.join(FIXTURE, 'options.json'), '--weight_file', os.path.join(FIXTURE, 'lm_weights.hdf5'),
                      '--folds', '2', '--epochs', '2', '--seed', '1', '--output_json', str(out))
    assert proc.returncode == 0, proc.stderr
    result = check_result(out, 2)
    # the table on stdout; the log on stderr says how each file was decoded, and the epochs
    assert 'accuracy' in proc.stdout and '(utf-8)' in proc.stderr and 'fold 2/2 epoch 2:' in proc.stderr
    assert len(result['layer_weights']) == 2
    assert sum(result['layer_weights'][0]['weights']) == pytest.approx(1.0, abs=1e-5)
    assert result['args']['folds'] == 2 and result['data']['sentences'] == 200


def test_run_finetune_elmo_layer_picks_one_layer_and_rejects_a_layer_the_model_lacks(rt_slice, tmp_path, capfd):
    require(FIXTURE)
    model = ['--options_file', os.path.join(FIXTURE, 'options.json'),
             '--weight_file', os.path.join(FIXTURE, 'lm_weights.hdf5')]
    out = tmp_path / 'top.json'
    proc = train_here('run_finetune.py', ['--data_dir', str(rt_slice), *model, '--elmo_layer', 'top', '--folds', '2',
                                          '--run_folds', '1', '--epochs', '1', '--output_json', str(out), '--quiet'], capfd)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(out.read_text())
    assert result['features']['elmo_layer'] == -1 and result['layer_weights'][0]['weights'] == [0.0, 0.0, 1.0]
    for bad, message in (('3', '--elmo_layer 3: the model has layers 0..2'),  # the command's refusals, here
                         ('first', "expected mix, top or a layer number >= 0, got 'first'")):
        proc = run_here('run_finetune.py', ['--data_dir', str(rt_slice), *model, '--elmo_layer', bad], capfd)
        assert proc.returncode == 2 and message in proc.stderr and 'Traceback' not in proc.stderr, proc.stderr


def test_word2vec_base_end_to_end_trains_saves_and_reuses_vectors(rt_slice, tmp_path, capfd):
    require(CORPUS)
    corpus = tmp_path / 'corpus.txt'
    corpus.write_text(''.join(head_lines(CORPUS, 400)), encoding='utf-8')
    saved, out = tmp_path / 'w2v.bin', tmp_path / 'w2v.json'
    proc = train_here('word2vec_base.py', ['--data_dir', str(rt_slice), '--train_data_path', str(corpus), '--w2v_dim',
                                           '16', '--min_count', '1', '--output_word_vectors', str(saved), '--folds', '1',
                                           '--epochs', '2', '--output_json', str(out), '--quiet'], capfd)
    assert proc.returncode == 0, proc.stderr
    result = check_result(out, 1)
    assert result['layer_weights'] is None and result['features']['dim'] == 16
    assert 0 < result['features']['oov_rate'] < 1
    from paddle_elmo.text.word_vectors import load_vectors
    assert load_vectors(str(saved)).vector_size == 16


def test_bad_input_is_one_line_error_with_exit_code_2(tmp_path):
    (tmp_path / 'rt-polarity.pos').write_text('good\n', encoding='utf-8')
    proc = run_script('word2vec_base.py', '--data_dir', str(tmp_path), '--word_vectors',
                      str(tmp_path / 'missing.bin'))
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1].startswith('error: ') and 'missing.bin' in proc.stderr
    assert 'Traceback' not in proc.stderr


def test_word2vec_can_train_on_a_matched_budget_of_tokens(tmp_path):
    from paddle_elmo.text.word_vectors import CorpusSentences
    (tmp_path / 'a.txt').write_text('one two three\nfour five\n')
    (tmp_path / 'b.txt').write_text('six seven eight nine\n')
    paths = [str(tmp_path / 'a.txt'), str(tmp_path / 'b.txt')]
    assert list(CorpusSentences(paths, max_tokens=7)) == [['one', 'two', 'three'], ['four', 'five'], ['six', 'seven']]
    assert sum(map(len, CorpusSentences(paths))) == 9  # no budget: everything, every pass
    assert sum(map(len, CorpusSentences(paths))) == 9


def test_run_finetune_concatenates_word2vec_to_the_elmo_features(rt_slice, tmp_path, capfd):
    require(FIXTURE)
    from paddle_elmo.text.word_vectors import save_vectors
    vectors = tmp_path / 'v.txt'
    save_vectors(_toy_vectors(), str(vectors))
    out = tmp_path / 'concat.json'
    proc = train_here('run_finetune.py', ['--data_dir', str(rt_slice), '--options_file',
                                          os.path.join(FIXTURE, 'options.json'), '--weight_file',
                                          os.path.join(FIXTURE, 'lm_weights.hdf5'), '--word_vectors', str(vectors),
                                          '--folds', '2', '--epochs', '1', '--output_json', str(out), '--quiet'], capfd)
    assert proc.returncode == 0, proc.stderr
    result = check_result(out, 2)
    assert result['features']['word2vec_dim'] == 3 and result['features']['concat_word2vec'] == str(vectors)


def test_run_folds_runs_the_same_fold_as_the_full_run(rt_slice, tmp_path, capfd):
    from gensim.models import KeyedVectors
    words = sorted({w for name in ('rt-polarity.pos', 'rt-polarity.neg')
                    for w in (rt_slice / name).read_text(encoding='utf-8').split()})
    kv = KeyedVectors(vector_size=8)
    kv.add_vectors(words, np.random.RandomState(0).normal(size=(len(words), 8)).astype(np.float32))
    kv.save_word2vec_format(str(tmp_path / 'v.bin'), binary=True)
    outs = {}
    for name, extra in (('all', []), ('second', ['--run_folds', '2'])):
        outs[name] = tmp_path / f'{name}.json'
        proc = train_here('word2vec_base.py', ['--data_dir', str(rt_slice), '--word_vectors', str(tmp_path / 'v.bin'),
                                               '--folds', '3', '--epochs', '2', '--output_json', str(outs[name]),
                                               '--quiet', *extra], capfd)
        assert proc.returncode == 0, proc.stderr
    full, second = (json.loads(outs[n].read_text()) for n in ('all', 'second'))
    assert full['folds_run'] == [1, 2, 3] and second['folds_run'] == [2]
    assert second['fold_accuracies'] == [full['fold_accuracies'][1]]
    proc = run_here('word2vec_base.py', ['--data_dir', str(rt_slice), '--word_vectors', str(tmp_path / 'v.bin'),
                                         '--folds', '3', '--run_folds', '4'], capfd)
    assert proc.returncode == 2 and 'error: --run_folds: fold 4 is not among the 3 folds (1 to 3)' in proc.stderr


# ---- learning: a classifier that learns nothing fails these ----------------------------------


@pytest.fixture(scope='module')
def tiny_checkpoint(tmp_path_factory):
    """A random tiny char biLM (conftest.tiny_config, seed 0) saved as a checkpoint -> (prefix, BiLM)."""
    from paddle_elmo import BiLM
    paddle.seed(0)
    bilm = BiLM(tiny_config())
    return save_checkpoint(bilm, tmp_path_factory.mktemp('tiny') / 'ckpt'), bilm


@pytest.mark.parametrize('trainable', [False, True], ids=['frozen', 'trainable'])
def test_run_finetune_learns_a_separable_toy_set(tiny_checkpoint, tmp_path, trainable, capfd):
    # test_example_commands checks word2vec and the frozen biLM through the example's commands;
    # here the fine-tuned biLM too (recomputed every batch: one fold of two, ~5 s).
    write_separable_polarity(tmp_path)
    out = tmp_path / 'result.json'
    extra = ['--trainable', '--run_folds', '1'] if trainable else []
    proc = train_here('run_finetune.py', ['--data_dir', str(tmp_path), '--init_from_ckpt', tiny_checkpoint[0],
                                          '--folds', '2', *LEARN, '--output_json', str(out), '--quiet', *extra], capfd)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = check_result(out, 1 if trainable else 2)
    assert result['features']['trainable'] is trainable
    assert_learned(result)


# ---- --inference_model: the frozen cache filled by an export of the same model ----------------


@pytest.fixture(scope='module')
def tiny_exports(tiny_checkpoint, tmp_path_factory):
    """Float32 exports of the tiny checkpoint's model (Paddle program and ONNX, ~2 s) and of another
    tiny model (seed 1, Paddle program only) -> {'same': directory, 'other': directory}."""
    from paddle_elmo import BiLM
    from paddle_elmo.export.deploy import export_inference
    d = tmp_path_factory.mktemp('exports')
    export_inference(tiny_checkpoint[1], str(d / 'same'))
    paddle.seed(1)
    export_inference(BiLM(tiny_config()), str(d / 'other'), formats=('paddle',))
    return {'same': str(d / 'same'), 'other': str(d / 'other')}


def _mix(result):
    return np.array([[fold['gamma'], *fold['weights']] for fold in result['layer_weights']])


def test_run_finetune_with_the_inference_model_of_the_same_model_gives_the_same_folds(tiny_checkpoint, tiny_exports,
                                                                                     tmp_path, capfd):
    write_separable_polarity(tmp_path, n_per_class=50)
    base = ['--data_dir', str(tmp_path), '--init_from_ckpt', tiny_checkpoint[0], '--folds', '2', *LEARN, '--quiet']
    results = {}
    for name, extra in (('model', []), ('export', ['--inference_model', tiny_exports['same'],
                                                   '--inference_backend', 'onnxruntime'])):
        out = tmp_path / f'{name}.json'
        proc = train_here('run_finetune.py', [*base, '--output_json', str(out), *extra], capfd)
        assert proc.returncode == 0, proc.stderr[-3000:]
        results[name] = check_result(out, 2)
    features = results['export']['features']
    assert features['inference_model'] == tiny_exports['same'] and features['precision'] == 'float32'
    assert_learned(results['model'])  # so that equal accuracies are not two constant guesses
    # onnxruntime's layers differ from the model's by float rounding (measured <= 3e-8 here;
    # test_export allows 1e-5): training on them is the same run but for the last bits. The toy
    # set's classes are far apart, so no rounding tips a sentence: the same accuracies and epochs;
    # the learned scalar mix (weights and gamma) within 1e-5 (measured: equal in float32).
    for key in ('fold_accuracies', 'fold_dev_accuracies', 'fold_best_epochs'):
        assert results['export'][key] == results['model'][key], key
    np.testing.assert_allclose(_mix(results['export']), _mix(results['model']), atol=1e-5, rtol=0)


def test_run_finetune_refuses_an_inference_model_of_another_model_or_with_trainable(tiny_checkpoint, tiny_exports,
                                                                                   tmp_path, capfd):
    # The command's refusals, run in this process (helpers.run_here).
    write_separable_polarity(tmp_path, n_per_class=20)
    base = ['--data_dir', str(tmp_path), '--init_from_ckpt', tiny_checkpoint[0], '--folds', '2']
    line = one_line_error(run_here('run_finetune.py', [*base, '--inference_model', tiny_exports['other']], capfd))
    assert line.startswith(f'error: --inference_model {tiny_exports["other"]}:') and \
        line.endswith('not an export of this model'), line
    line = one_line_error(run_here('run_finetune.py', [*base, '--inference_model', tiny_exports['same'],
                                                       '--trainable'], capfd))
    assert '--inference_model' in line and '--trainable' in line, line
