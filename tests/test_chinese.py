"""Raw Chinese text wherever users bring text: the three tokenizers on real reviews and news, the
tokenizer a model records (options.json) and the warning when another is used, the embedders on
raw strings, build-vocab on raw lines, and both classifiers on a slice of zh-sentiment."""
import json
import logging
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from conftest import ROOT, SHARED, require, tiny_config
from helpers import readme_commands, run_script, train_here
from paddle_elmo.text.tokenizers import TOKENIZERS, char_tokens, get_tokenizer
from paddle_elmo.fileio import InputError

ZH_SENTIMENT = os.path.join(SHARED, 'data', 'zh-sentiment')
ZH_HELDOUT = os.path.join(SHARED, 'data', 'zh-corpus', 'heldout.txt')
BUNDLED = os.path.join(ROOT, 'paddle_elmo', 'pretrained')


def reviews(name, n, max_chars=None):
    """The first n reviews of zh-sentiment's online_shopping.`name` (at most max_chars characters each)."""
    path = require(os.path.join(ZH_SENTIMENT, f'online_shopping.{name}'))
    with open(path, encoding='utf-8') as f:
        lines = (line.rstrip('\n') for line in f)
        return [line for line in lines if max_chars is None or len(line) <= max_chars][:n]


def jieba_model(directory):
    """The bundled model with "tokenizer": "jieba" in its options.json -> (options_file, weight_file), its
    other files linked beside them."""
    with open(os.path.join(BUNDLED, 'options.json')) as f:
        options = json.load(f)
    options_file, weight_file = directory / 'options.json', directory / 'weights.hdf5'
    options_file.write_text(json.dumps({**options, 'tokenizer': 'jieba'}))
    for name in ('weights.hdf5', 'vocab.txt'):  # a word model's vocabulary travels beside its weights
        if os.path.exists(os.path.join(BUNDLED, name)):
            os.symlink(os.path.join(BUNDLED, name), directory / name)
    return str(options_file), str(weight_file)


# ---- the tokenizers --------------------------------------------------------------------------

@pytest.mark.parametrize('name', TOKENIZERS)
def test_every_tokenizer_keeps_every_character_of_real_reviews_but_the_whitespace(name):
    split = get_tokenizer(name)
    for review in reviews('pos', 5) + reviews('neg', 5) + ['iPhone很好用！ 真的\t不错\u3000，', '', ' \t ']:
        tokens = split(review)
        kept = ''.join(review.split())
        if name == 'moses':  # it straightens curly quotes, as the English corpus it reproduces has them
            kept = kept.translate(str.maketrans('\u201c\u201d\u2018\u2019', '""\'\''))
        assert ''.join(tokens) == kept, (name, review)
        assert all(token and token.split() == [token] for token in tokens), (name, tokens)
        assert split(review) == tokens  # deterministic


def test_each_tokenizer_splits_chinese_as_documented():
    review = '手机很好用，iPhone 12 的屏幕3.5寸也不小！'
    assert get_tokenizer('whitespace')(review) == ['手机很好用，iPhone', '12', '的屏幕3.5寸也不小！']
    assert char_tokens(review) == ['手', '机', '很', '好', '用', '，', 'iPhone', '12', '的', '屏', '幕', '3.5', '寸',
                                   '也', '不', '小', '！']
    assert char_tokens('iPhone很好用') == ['iPhone', '很', '好', '用']
    assert char_tokens('作者认为“洞察”……') == ['作', '者', '认', '为', '“', '洞', '察', '”', '…', '…']
    jieba_tokens = get_tokenizer('jieba')(review)
    assert jieba_tokens == ['手机', '很', '好', '用', '，', 'iPhone', '12', '的', '屏幕', '3.5', '寸', '也', '不小', '！']


def test_jieba_gives_the_segmentation_of_zh_corpus():
    """zh-corpus was segmented with jieba 0.42.1's accurate mode: joining a held-out line's tokens
    and cutting it again gives them back (a line whose source text had spaces may differ)."""
    split = get_tokenizer('jieba')
    with open(require(ZH_HELDOUT), encoding='utf-8') as f:
        lines = [next(f).split() for _ in range(50)]
    assert sum(split(''.join(tokens)) == tokens for tokens in lines) >= 48


def test_jieba_is_imported_on_first_use_and_quietly():
    code = ('import sys, dataset; assert "jieba" not in sys.modules; '
            'print(dataset.get_tokenizer("jieba")("我们喜欢这本书"))')
    proc = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "['我们', '喜欢', '这', '本书']" and proc.stderr == ''


def test_an_unknown_tokenizer_is_a_one_line_error_listing_the_choices(tmp_path):
    with pytest.raises(InputError, match="unknown tokenizer 'spaces'; expected one of whitespace, moses, jieba, chars"):
        get_tokenizer('spaces')
    from paddle_elmo import ELMoEmbedder
    with pytest.raises(InputError, match="unknown tokenizer 'spaces'"):
        ELMoEmbedder(bilm=_bilm(), tokenizer='spaces')
    proc = run_script('build-vocab', '--train_data_path', tmp_path / 'x', '--output_file', tmp_path / 'v',
                      '--tokenizer', 'spaces')
    assert proc.returncode == 2 and "argument --tokenizer: invalid choice: 'spaces'" in proc.stderr


# ---- the tokenizer a model records -----------------------------------------------------------

def _bilm(tokenizer='whitespace'):
    from paddle_elmo import BiLM
    return BiLM(tiny_config(tokenizer=tokenizer))


def test_the_recorded_tokenizer_round_trips_options_json_and_whitespace_leaves_no_key(tmp_path, fixture_dir):
    from paddle_elmo.model.config import ModelConfig
    from paddle_elmo import export_weights, resolve_model
    options = tiny_config(tokenizer='jieba').to_options()
    assert options['tokenizer'] == 'jieba' and ModelConfig.from_options(options).tokenizer == 'jieba'
    assert 'tokenizer' not in tiny_config().to_options()  # a pure bilm-tf options file
    for tokenizer in ('jieba', 'whitespace'):
        export_weights(_bilm(tokenizer), str(tmp_path / tokenizer))
        written = json.loads((tmp_path / tokenizer / 'options.json').read_text())
        assert written.get('tokenizer', 'whitespace') == tokenizer
        loaded = resolve_model(str(tmp_path / tokenizer)).load()
        assert loaded.config.tokenizer == tokenizer
    bilm_tf = resolve_model(os.path.join(fixture_dir, 'options.json'),
                            os.path.join(fixture_dir, 'lm_weights.hdf5')).load()
    assert bilm_tf.config.tokenizer == 'whitespace'  # no key: bilm-tf's files split on whitespace
    with pytest.raises(InputError, match=r"o\.json: tokenizer \(tokenizer\) must be one of whitespace, moses, "
                                         r"jieba, chars, got 'spaces'"):
        ModelConfig.from_options({**options, 'tokenizer': 'spaces'}, 'o.json')


def test_pretraining_records_the_tokenizer_resuming_keeps_it_and_adapting_may_change_it():
    from paddle_elmo.cli.config_flags import given_settings, pretrain_parser
    from paddle_elmo.train.run_plan import for_resume, for_weights, from_preset
    given = given_settings(pretrain_parser().parse_args(['--tokenizer', 'jieba', '--preset', 'budget']))
    model, recipe = from_preset('budget', {k: v for k, v in given.items() if k != 'preset'})
    assert model.tokenizer == 'jieba' and model.to_options()['tokenizer'] == 'jieba'  # what options.json gets
    with pytest.raises(InputError, match=r'--tokenizer chars \(checkpoint: jieba\)'):
        for_resume(model, recipe, {'tokenizer': 'chars'}, 'ck/options.json')
    assert for_weights(model, {}, 'w')[0].tokenizer == 'jieba'  # the file's
    assert for_weights(model, {'tokenizer': 'chars'}, 'w')[0].tokenizer == 'chars'  # the new corpus's


def test_the_default_is_the_models_tokenizer_and_another_one_warns_naming_both(caplog):
    from paddle_elmo import ELMoEmbedder, Elmo
    with caplog.at_level(logging.WARNING, logger='paddle_elmo'):
        assert ELMoEmbedder(bilm=_bilm('jieba')).tokenizer == 'jieba'
        assert Elmo(_bilm('chars')).tokenizer == 'chars'
        assert ELMoEmbedder(bilm=_bilm(), tokenizer='whitespace').tokenizer == 'whitespace'
        assert not caplog.records
        assert ELMoEmbedder(bilm=_bilm(), tokenizer='jieba').tokenizer == 'jieba'
        assert Elmo(_bilm('jieba'), tokenizer='chars').tokenizer == 'chars'
    assert [r.getMessage().split(',')[0] for r in caplog.records] == [
        "tokenizer 'jieba' differs from 'whitespace'", "tokenizer 'chars' differs from 'jieba'"]
    assert 'the tokenizer the model was trained with' in caplog.records[0].getMessage()


# ---- raw Chinese through the API and `paddle-elmo embed` ---------------------------------------

def test_encode_gives_one_vector_per_jieba_token_of_raw_reviews_with_the_bundled_model():
    from paddle_elmo import ELMoEmbedder
    texts = reviews('pos', 3, max_chars=60) + reviews('neg', 3, max_chars=60)
    tokens = [get_tokenizer('jieba')(t) for t in texts]
    embedder = ELMoEmbedder(tokenizer='jieba')
    embeddings = embedder.encode(texts)
    assert [e.shape for e in embeddings] == [(3, len(t), 256) for t in tokens]
    for got, want in zip(embeddings, embedder.encode(tokens)):
        np.testing.assert_array_equal(got, want)
    chars = ELMoEmbedder(bilm=embedder.bilm, tokenizer='chars')
    assert [e.shape[1] for e in chars.encode(texts)] == [len(char_tokens(t)) for t in texts]


def test_run_embed_splits_raw_lines_with_the_tokenizer_the_model_records(tmp_path):
    import h5py
    options_file, weight_file = jieba_model(tmp_path)
    texts = reviews('neg', 3, max_chars=40)
    (tmp_path / 'in.txt').write_text('\n'.join(texts) + '\n', encoding='utf-8')
    proc = run_script('embed', tmp_path / 'in.txt', tmp_path / 'out.hdf5', '--options_file', options_file,
                      '--weight_file', weight_file, '--output_format', 'top')
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert 'differs' not in proc.stderr
    with h5py.File(tmp_path / 'out.hdf5', 'r') as f:
        assert [f[str(i)].shape for i in range(3)] == [(len(get_tokenizer('jieba')(t)), 256) for t in texts]


# ---- build-vocab on raw lines --------------------------------------------------------------------

def test_build_vocab_segments_raw_lines_writes_the_corpus_it_counted_and_reports_long_tokens(tmp_path):
    from paddle_elmo.text.vocabulary import Vocabulary, count_words
    lines = reviews('pos', 3, max_chars=40) + ['', '全国人民代表大会常务委员会今天开会。']
    (tmp_path / 'raw.txt').write_text('\n'.join(lines) + '\n', encoding='utf-8')
    proc = run_script('build-vocab', '--train_data_path', tmp_path / 'raw.txt', '--tokenizer', 'jieba',
                      '--output_file', tmp_path / 'vocab.txt', '--output_corpus', tmp_path / 'train.txt',
                      '--max_characters_per_token', '20')
    assert proc.returncode == 0, proc.stderr
    split = get_tokenizer('jieba')
    segmented = [split(line) for line in lines if line]
    assert (tmp_path / 'train.txt').read_text(encoding='utf-8') == ''.join(' '.join(t) + '\n' for t in segmented)
    assert 'raw.txt: skipped 1 empty line(s)' in proc.stderr
    # The segmented corpus is what pretraining reads: split on spaces, it gives the counts the vocabulary has.
    counts = count_words(str(tmp_path / 'train.txt'), progress=False)
    assert Vocabulary(str(tmp_path / 'vocab.txt')).tokens[3:] == sorted(counts, key=lambda w: (-counts[w], w))
    n_tokens = sum(map(len, segmented))
    assert f'1 tokens ({100 / n_tokens:.3f}% of {n_tokens}, 1 distinct) are longer than 18 UTF-8 bytes, which ' \
           f'the char CNN cuts (max_characters_per_token 20); most frequent: 全国人民代表大会常务委员会 (1)' in proc.stdout
    assert sorted(os.listdir(tmp_path)) == ['raw.txt', 'train.txt', 'vocab.txt']  # no temp file left


# ---- perplexity per character ----------------------------------------------------------------------

def test_characters_per_target_do_not_depend_on_the_segmentation_but_targets_and_unknowns_do(tmp_path):
    from paddle_elmo.text.batches import target_statistics
    from paddle_elmo.text.vocabulary import Vocabulary
    raw = ['他打篮球。', '她会花钱', '']
    (tmp_path / 'words.txt').write_text('他 打 篮球 。\n她 会 花钱\n\n', encoding='utf-8')
    (tmp_path / 'chars.txt').write_text(''.join(' '.join(char_tokens(r)) + '\n' for r in raw), encoding='utf-8')
    vocab = Vocabulary.from_tokens(['他', '打', '会', '。'])
    words, chars = (target_statistics(str(tmp_path / f'{n}.txt'), vocab) for n in ('words', 'chars'))
    assert words == {'n_targets': 9, 'n_characters': 11, 'n_unknown': 3}  # 篮球 她 花钱 are <UNK>
    assert chars == {'n_targets': 11, 'n_characters': 11, 'n_unknown': 5}  # 篮 球 她 花 钱


# ---- the classifiers on a slice of zh-sentiment --------------------------------------------------

@pytest.fixture
def zh_slice(tmp_path):
    """100 short reviews per class, one long review (a few hundred characters) and an empty line
    (line 3 of the positive file)."""
    pos, neg = reviews('pos', 100, max_chars=30), reviews('neg', 100, max_chars=30)
    long_review = max(reviews('pos', 20), key=len)
    assert len(long_review) > 200
    (tmp_path / 'online_shopping.pos').write_text('\n'.join(pos[:2] + [''] + pos[2:] + [long_review]) + '\n',
                                                   encoding='utf-8')
    (tmp_path / 'online_shopping.neg').write_text('\n'.join(neg) + '\n', encoding='utf-8')
    return ['--data_dir', tmp_path, '--pos_file', 'online_shopping.pos', '--neg_file', 'online_shopping.neg',
            '--folds', '2', '--epochs', '1', '--quiet', '--max_seq_len', '40']


def _check_zh_result(path, proc):
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(path.read_text())
    assert len(result['fold_accuracies']) == 2 and result['data']['sentences'] == 201
    assert result['data']['tokenizer'] == 'jieba'
    pos = [v for k, v in result['data']['sources'].items() if k.endswith('.pos')][0]
    assert pos['empty_lines'] == [3] and 'online_shopping.pos: 101 sentences (utf-8) split by jieba; skipped 1 ' \
                                         'empty line(s): 3' in proc.stderr
    cut = result['data']['cut']
    assert cut['max_seq_len'] == 40 and cut['sentences'] >= 1 and cut['tokens'] > 50
    assert f'--max_seq_len 40: cut {cut["sentences"]} of 201 sentences to 38 tokens' in proc.stderr
    return result


# The two classifiers' runs in this process (helpers.train_here): how they split and classify is the
# test; README's commands below run in processes of their own.
def test_run_finetune_classifies_raw_chinese_reviews_split_by_the_models_tokenizer(zh_slice, tmp_path, capfd):
    options_file, weight_file = jieba_model(tmp_path)
    out = tmp_path / 'elmo.json'
    proc = train_here('run_finetune.py', [*map(str, zh_slice), '--options_file', str(options_file), '--weight_file',
                                          str(weight_file), '--output_json', str(out)], capfd)
    _check_zh_result(out, proc)
    assert 'differs' not in proc.stderr


def test_word2vec_base_classifies_raw_chinese_reviews_with_vectors_trained_on_zh_corpus(zh_slice, tmp_path, capfd):
    corpus = tmp_path / 'corpus.txt'
    with open(require(ZH_HELDOUT), encoding='utf-8') as f:
        corpus.write_text(''.join(next(f) for _ in range(2000)), encoding='utf-8')
    out = tmp_path / 'w2v.json'
    proc = train_here('word2vec_base.py', [*map(str, zh_slice), '--tokenizer', 'jieba', '--train_data_path', str(corpus),
                                           '--w2v_dim', '16', '--min_count', '1', '--output_json', str(out)], capfd)
    result = _check_zh_result(out, proc)
    assert result['features']['oov_rate'] < 0.5  # jieba's words are zh-corpus's words


# ---- the sense demo ----------------------------------------------------------------------------

def test_the_chinese_sense_demo_splits_its_raw_probes_and_names_a_sense_without_training_sentences(tmp_path,
                                                                                                    capsys):
    from paddle_elmo.cli import demo
    options_file, weight_file = jieba_model(tmp_path)
    from paddle_elmo import resolve_model
    model = resolve_model(options_file, weight_file)
    corpus = tmp_path / 'corpus.txt'
    corpus.write_text('公园 里 花 盛开\n他 花 了 很多 钱\n隧道 长 3 公里\n河南省 长 出席 会议\n', encoding='utf-8')
    correct = demo.show_contexts(model, 'tiny', demo.PROBES_ZH, demo.CUES_ZH, str(corpus))
    out = capsys.readouterr().out
    assert len(correct) == 3 and all(0 <= c <= 12 for c in correct)
    for _, sentence, sense in demo.PROBES_ZH:  # every probe is shown with its sense
        assert f'[{sense:>6}] {sentence}' in out
    assert re.search(r'layer 0 \([^)]+, context-free\)', out) and 'layer 2 (LSTM layer 2)' in out
    corpus.write_text('公园 里 花 盛开\n隧道 长 3 公里\n河南省 长 出席 会议\n', encoding='utf-8')
    from paddle_elmo.fileio import InputError  # the command's error boundary prints it as one line, exit 2
    with pytest.raises(InputError, match="^no training sentence has '花' with a cue of its sense 'spend' only$"):
        demo.show_contexts(model, 'tiny', demo.PROBES_ZH, demo.CUES_ZH, str(corpus))


# ---- README's "Chinese" commands -----------------------------------------------------------------

def test_the_readme_chinese_commands_run_as_written_on_a_slice(tmp_path):
    """Each command as README writes it, on slices in place of data/zh-*'s files, with flags that only
    shrink the run appended (a tiny model, 2 steps, 2 folds, 1 epoch)."""
    from helpers import TINY_MODEL
    heldout = require(ZH_HELDOUT)
    with open(heldout, encoding='utf-8') as f:
        (tmp_path / 'corpus.txt').write_text(''.join(next(f) for _ in range(300)), encoding='utf-8')
    (tmp_path / 'sentiment').mkdir()
    for name in ('pos', 'neg'):
        (tmp_path / 'sentiment' / f'online_shopping.{name}').write_text(
            '\n'.join(reviews(name, 40, max_chars=30)) + '\n', encoding='utf-8')
    (tmp_path / 'raw.txt').write_text('\n'.join(reviews('pos', 20)) + '\n', encoding='utf-8')
    stand_ins = {'data/zh-corpus/train.txt': 'corpus.txt', 'data/zh-corpus/heldout.txt': 'corpus.txt',
                 'data/zh-sentiment': 'sentiment'}
    shrink = {'pretrain': TINY_MODEL + ['--max_steps', '2'], 'build-vocab': [], 'eval': [], 'demo': [],
              'finetune': ['--folds', '2', '--epochs', '1', '--quiet'],
              'word2vec': ['--folds', '2', '--epochs', '1', '--quiet', '--w2v_dim', '8', '--min_count', '1']}
    commands = readme_commands('# A Chinese model of your own', os.path.join('docs', 'CHINESE.md'))
    assert [c[1] if c[0] == 'paddle-elmo' else c[0] for c in commands] == [
        'mkdir', 'build-vocab', 'word2vec', 'pretrain', 'eval', 'demo', 'finetune', 'word2vec', 'build-vocab']
    # The senses' cues need the whole corpus, not the slice: its lines that hold a probed word (the
    # demo keeps those whose tokens do), as the demo reads them from the whole 118 MB file.
    from paddle_elmo.cli.demo import CUES_ZH
    with open(require(os.path.join(SHARED, 'data', 'zh-corpus', 'train.txt')), encoding='utf-8') as f:
        (tmp_path / 'senses.txt').write_text(''.join(line for line in f if any(w in line for w in CUES_ZH)),
                                             encoding='utf-8')
    for words in commands:
        words = [stand_ins.get(w, w) for w in words]
        if words[:2] == ['paddle-elmo', 'demo']:
            words[words.index('--train_data_path') + 1] = 'senses.txt'
        if words[0] == 'paddle-elmo':
            proc = run_script(words[1], *words[2:], *shrink[words[1]], cwd=tmp_path)
        else:
            proc = subprocess.run(words, cwd=tmp_path, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, (words, proc.stderr[-3000:])
        assert 'differs' not in proc.stderr, proc.stderr
    options = json.loads((tmp_path / 'zh' / 'options.json').read_text())
    assert options['tokenizer'] == 'jieba' and 'char_cnn' not in options  # the word recipe
    assert (tmp_path / 'zh' / 'w2v-128.bin').exists()
    assert json.loads((tmp_path / 'zh_elmo.json').read_text())['data']['tokenizer'] == 'jieba'
    assert json.loads((tmp_path / 'zh_w2v.json').read_text())['data']['tokenizer'] == 'jieba'
    assert (tmp_path / 'zh' / 'train.txt').read_text(encoding='utf-8').count('\n') == 20
