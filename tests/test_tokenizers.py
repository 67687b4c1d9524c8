"""English raw text as the model's corpus was tokenized (the moses tokenizer), the tokenizer a model
records applied by every raw-string entry point (encode, embed_sentences, Elmo, embed, predict,
finetune), the warning of a word model that sees mostly unknown words, and pretraining's
--tokenizer on a corpus already in its tokens (issue 42)."""
import itertools
import json
import logging
import os

import numpy as np
import paddle
import pytest

from conftest import SHARED, require, tiny_config
from helpers import assert_same_weights, load, pretrain_args, pretrain_here, run, run_here, train_here

# The commands' runs below in this process (helpers.run_here, train_here): how they split text is the test;
# test_run_embed_splits_raw_lines_by_the_recorded_tokenizer_unless_told runs embed in a process of its own.
from paddle_elmo.fileio import InputError
from paddle_elmo.text.tokenizers import get_tokenizer

HELDOUT = os.path.join(SHARED, 'data', 'lm-corpus', 'heldout.txt')
RAINING = "It's raining, isn't it?"
RAINING_TOKENS = ['It', "'s", 'raining', ',', 'isn', "'t", 'it', '?']


@pytest.fixture(scope='module')
def moses():
    return get_tokenizer('moses')


# ---- the moses tokenizer -------------------------------------------------------------------------

@pytest.mark.parametrize('text, tokens', [
    (RAINING, RAINING_TOKENS),
    ("Don't go; we can't.", ['Don', "'t", 'go', ';', 'we', 'can', "'t", '.']),  # 1B Word's `don 't`, not `do n't`
    ('Mr. Smith paid $1,000.5 in the U.S. for a 35-hour, well-known show of the 1930s!',
     ['Mr.', 'Smith', 'paid', '$', '1,000.5', 'in', 'the', 'U.S.', 'for', 'a', '35-hour', ',', 'well-known', 'show',
      'of', 'the', '1930s', '!']),
    ('He said \u201cfine\u201d and \u2018left\u2019 (quickly).',  # curly quotes become the corpus's straight ones
     ['He', 'said', '"', 'fine', '"', 'and', "'", 'left', "'", '(', 'quickly', ')', '.']),
    ("O'Toole's rock'n'roll at 5 o'clock scored 7/10, 1985/86 at 10:30 & R&B!!!",
     ["O'Toole's", "rock'n'roll", 'at', '5', "o'clock", 'scored', '7/10', ',', '1985/86', 'at', '10:30', '&',
      'R&B', '!!!']),
    ('Smith et al. sold Acme Inc. to Jay-Z\'s Widget Corp.',  # the corpus's abbreviations; a final period splits
     ['Smith', 'et', 'al.', 'sold', 'Acme', 'Inc.', 'to', "Jay-Z's", 'Widget', 'Corp', '.']),
    ('', []),
])
def test_moses_splits_raw_english_as_the_pretraining_corpus_is_tokenized(moses, text, tokens):
    assert moses(text) == tokens


def test_moses_writes_no_xml_entities_and_leaves_tokenized_text_as_it_is(moses):
    assert moses('Tom & Jerry <3 "quotes" it\'s') == ['Tom', '&', 'Jerry', '<', '3', '"', 'quotes', '"', 'it', "'s"]
    assert moses(' '.join(RAINING_TOKENS)) == RAINING_TOKENS
    # n't is not this corpus's split but the Penn Treebank's (AllenNLP's, spaCy's): kept as given
    assert moses("It 's raining , isn 't it ? Do n't , ca N'T") == RAINING_TOKENS + ['Do', "n't", ',', 'ca', "N'T"]


@pytest.mark.parametrize('tokenized, tokens', [
    ("I do n't know .", ['I', 'do', "n't", 'know', '.']),  # the issue's: Moses alone made `n 't`
    # Moses's XML escapes (sacremoses's default, escape=True) read as the characters the corpus holds
    ('AT&amp;T &amp; Tom &lt; 3 , &quot; quoted &quot; &#91; x &#93; &#124; it &apos;s', [
        'AT&T', '&', 'Tom', '<', '3', ',', '"', 'quoted', '"', '[', 'x', ']', '|', 'it', "'s"]),
    ('&amp;amp;', ['&', 'amp', ';']),  # one level of escapes: `&amp;amp;` is the text `&amp;`
    # the corpus's abbreviations in any case, `No.` and `p.` before words too; not `c .` (circa)
    ('No. 151 , no. Does it , ETC. The p. 5 c . 400 Mt. Wilson', [
        'No.', '151', ',', 'no.', 'Does', 'it', ',', 'ETC.', 'The', 'p.', '5', 'c', '.', '400', 'Mt.', 'Wilson']),
    ("D'Amato's codice_2 formula_1-axis ____", ["D'Amato's", 'codice_2', 'formula_1-axis', '____']),
])
def test_moses_leaves_tokens_as_given(moses, tokenized, tokens):
    assert moses(tokenized) == tokens
    assert moses(' '.join(tokens)) == tokens  # and its own output comes back unchanged


def changed_lines(tokenize, path):
    """Held-out lines of a corpus (tokens joined by spaces) whose tokens `tokenize` changes -> (changed, lines)."""
    with open(require(path), encoding='utf-8') as f:
        lines = [line.split() for line in f]
    return sum(tokenize(' '.join(tokens)) != tokens for tokens in lines), len(lines)


def test_tokenizing_the_bundled_models_held_out_corpus_again_changes_at_most_1_percent_of_lines(moses):
    """The model card's figure (1 line of 14,130 when written; 29 before issue 52)."""
    changed, lines = changed_lines(moses, HELDOUT)
    assert lines == 14130 and changed <= lines // 100


def test_jieba_leaves_jieba_segmented_text_as_it_is_and_cuts_raw_text_as_jieba_does():
    import jieba
    split = get_tokenizer('jieba')
    # a dictionary word jieba's HMM made in context, which alone it would cut into characters
    assert jieba.lcut('字段') == ['字', '段'] and split('字段 名称') == ['字段', '名称']
    assert split('我是') == jieba.lcut('我是') == ['我', '是']  # no whitespace: exactly jieba's cut
    assert split('我 是') == ['我', '是']  # 我是 is no dictionary word: a chunk stays whole only when it is
    changed, lines = changed_lines(split, os.path.join(SHARED, 'data', 'zh-open', 'heldout.txt'))
    assert lines == 7945 and changed <= lines // 100  # 0 when written; 194 before issue 52
    with open(os.path.join(SHARED, 'data', 'zh-open', 'heldout.txt'), encoding='utf-8') as f:
        raw = [''.join(line.split()) for line in itertools.islice(f, 300)]
    assert all(split(text) == jieba.lcut(text) for text in raw)


def test_detokenized_held_out_sentences_come_back_as_their_token_lists(moses):
    from sacremoses import MosesDetokenizer  # the core install's (moses, the bundled model's tokenizer)
    detokenize = MosesDetokenizer('en').detokenize
    with open(require(HELDOUT), encoding='utf-8') as f:
        lines = [line.split() for line in itertools.islice(f, 100)]
    raw = [detokenize(tokens) for tokens in lines]
    assert sum(raw_line != ' '.join(tokens) for raw_line, tokens in zip(raw, lines)) > 50  # real raw text
    assert sum(moses(r) == tokens for r, tokens in zip(raw, lines)) >= 97
    assert sum(moses(' '.join(tokens)) == tokens for tokens in lines) == 100  # tokenized lines stay as they are


def test_moses_without_sacremoses_is_a_one_line_error_naming_the_package(monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, 'sacremoses', None)
    with pytest.raises(InputError, match=r'the moses tokenizer needs the sacremoses package: pip install '
                                         r'sacremoses==0\.2\.0'):
        get_tokenizer('moses')


# ---- the tokenizer a model records, at every raw-string entry point -----------------------------

VOCAB = ['<S>', '</S>', '<UNK>'] + RAINING_TOKENS + ['She', 'paid', 'the', 'bank', '.']


def word_model(directory, tokenizer, token_input='word'):
    """A tiny word model recording `tokenizer`, exported (options.json, weights.hdf5, vocab.txt) ->
    (options_file, weight_file)."""
    from paddle_elmo import BiLM, export_weights
    from paddle_elmo.text.vocabulary import Vocabulary
    paddle.seed(0)
    config = tiny_config(token_input=token_input, tokenizer=tokenizer,
                         word_dim=5 if token_input == 'word+char' else 0)
    export_weights(BiLM(config, vocab=Vocabulary.from_tokens(VOCAB)), str(directory))
    return str(directory / 'options.json'), str(directory / 'weights.hdf5')


@pytest.fixture(scope='module')
def models(tmp_path_factory):
    d = tmp_path_factory.mktemp('tokenizer-models')
    return {name: word_model(d / name, name) for name in ('moses', 'whitespace')}


def test_the_bundled_english_model_records_moses_and_finds_every_token_of_raw_text():
    from paddle_elmo import ELMoEmbedder
    embedder = ELMoEmbedder()
    assert embedder.tokenizer == 'moses'
    vocab = embedder.bilm.vocab
    assert [vocab.word_to_id(t) != vocab.unk for t in RAINING_TOKENS] == [True] * 8
    (layers,) = embedder.encode([RAINING])
    np.testing.assert_array_equal(layers, embedder.encode([RAINING_TOKENS])[0])


def test_encode_embed_sentences_and_elmo_split_raw_text_by_the_recorded_tokenizer(models):
    from paddle_elmo import ELMoEmbedder, Elmo, resolve_model
    for name, n_tokens in (('moses', 8), ('whitespace', 4)):
        embedder = ELMoEmbedder(*models[name])
        assert embedder.tokenizer == name
        (layers,) = embedder.encode([RAINING])
        (streamed,) = list(embedder.embed_sentences([RAINING]))
        assert layers.shape[1] == streamed.shape[1] == n_tokens
        elmo = Elmo(resolve_model(models[name][0], models[name][1]).load())
        assert elmo.batch_to_inputs([RAINING])['lengths'].tolist() == [n_tokens + 2]
    # the user's choice beats the record
    assert ELMoEmbedder(*models['whitespace'], tokenizer='moses').encode([RAINING])[0].shape[1] == 8


def test_run_embed_splits_raw_lines_by_the_recorded_tokenizer_unless_told(models, tmp_path):
    import h5py
    (tmp_path / 'in.txt').write_text(f'{RAINING}\nShe paid the bank.\n', encoding='utf-8')
    for extra, lengths in (([], [8, 5]), (['--tokenizer', 'whitespace'], [4, 4])):
        proc = run('embed', [str(tmp_path / 'in.txt'), str(tmp_path / 'out.hdf5'), '--options_file',
                                    models['moses'][0], '--weight_file', models['moses'][1], '--output_format',
                                    'top', *extra])
        assert proc.returncode == 0, proc.stderr[-3000:]
        with h5py.File(tmp_path / 'out.hdf5', 'r') as f:
            assert [f[str(i)].shape[0] for i in range(2)] == lengths
    assert "tokenizer 'whitespace' differs from 'moses'" in proc.stderr


def test_predict_splits_the_prefix_by_the_recorded_tokenizer(tmp_path, capfd):
    from paddle_elmo.train.lm import LanguageModel
    from paddle_elmo.use.predict import Predictor
    from paddle_elmo.text.vocabulary import Vocabulary
    paddle.seed(2)
    model = LanguageModel(tiny_config(tokenizer='moses'), len(VOCAB))
    vocab = Vocabulary.from_tokens(VOCAB)
    predictor = Predictor(model, vocab)
    assert predictor.context_tokens(RAINING, 'forward') == ['<S>'] + RAINING_TOKENS
    assert predictor.top(RAINING, 3) == predictor.top(RAINING_TOKENS, 3)
    assert Predictor(model, vocab, 'whitespace').context_tokens(RAINING, 'forward') == ['<S>'] + RAINING.split()
    # the command: a checkpoint recording moses, the prefix given raw
    (tmp_path / 'ck').mkdir()
    (tmp_path / 'ck' / 'options.json').write_text(json.dumps(model.bilm.config.to_options()))
    paddle.save(model.state_dict(), str(tmp_path / 'ck' / 'final.pdparams'))
    (tmp_path / 'vocab.txt').write_text('\n'.join(VOCAB) + '\n')
    proc = run_here('predict', ['--vocab_file', str(tmp_path / 'vocab.txt'), '--init_from_ckpt',
                                str(tmp_path / 'ck' / 'final'), '--prefix', RAINING, '--top_k', '3',
                                '--output_json', str(tmp_path / 'p.json')], capfd)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (entry,) = json.loads((tmp_path / 'p.json').read_text())['predictions']
    expected = predictor.top(RAINING_TOKENS, 3)
    assert [t['word'] for t in entry['top']] == [w for w, _ in expected]
    assert [t['prob'] for t in entry['top']] == pytest.approx([p for _, p in expected], abs=1e-6)


def test_finetune_splits_raw_reviews_by_the_recorded_tokenizer(models, tmp_path, capfd):
    pos = [RAINING, 'She paid the bank.', "Isn't it raining?", 'The bank paid her.'] * 3
    neg = ['It rained, she paid.', "The bank isn't it.", 'Paid, paid!', "She's the bank?"] * 3
    (tmp_path / 'a.pos').write_text('\n'.join(pos) + '\n', encoding='utf-8')
    (tmp_path / 'a.neg').write_text('\n'.join(neg) + '\n', encoding='utf-8')
    out = tmp_path / 'r.json'
    proc = train_here('run_finetune.py', ['--data_dir', str(tmp_path), '--pos_file', 'a.pos', '--neg_file', 'a.neg',
                                          '--options_file', models['moses'][0], '--weight_file', models['moses'][1],
                                          '--folds', '2', '--epochs', '1', '--quiet', '--output_json', str(out)], capfd)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result['data']['tokenizer'] == 'moses' and result['data']['sentences'] == 24
    assert [v['lines'] for v in result['data']['sources'].values()] == [12, 12]
    assert 'not in the model\'s vocabulary' not in proc.stderr  # moses gives this model's words
    assert '--tokenization' not in proc.stdout + json.dumps(result['args'])


# ---- the warning of a word model that sees mostly unknown words -----------------------------------

def test_mostly_unknown_tokens_warn_once_naming_the_tokenizer_and_how_to_change_it(models, unwarned, caplog):
    from paddle_elmo import ELMoEmbedder
    embedder = ELMoEmbedder(*models['moses'], tokenizer='whitespace')  # `It's` `raining,` ... are unknown
    known = ELMoEmbedder(*models['moses'])
    with caplog.at_level(logging.WARNING, logger='paddle_elmo.use.languages'):
        # 3 of 10 tokens unknown is 30%: the threshold
        known.encode([RAINING_TOKENS[:7] + ['x', 'y', 'z']])
        messages = [r.getMessage() for r in caplog.records if r.name == 'paddle_elmo.use.languages']
        assert messages and messages[0].startswith("3 of 10 tokens (30%) are not in the model's vocabulary")
        assert "by the 'moses' tokenizer; name another with tokenizer= (Python) or --tokenizer" in messages[0]
        embedder.encode([RAINING])  # once per process: no second warning
        assert len([r for r in caplog.records if r.name == 'paddle_elmo.use.languages']) == 1


def test_fewer_than_30_percent_unknown_tokens_do_not_warn_and_char_models_never(unwarned, caplog):
    from paddle_elmo.use.languages import warn_if_mostly_unknown
    from paddle_elmo.text.vocabulary import Vocabulary
    vocab = Vocabulary.from_tokens(VOCAB)
    with caplog.at_level(logging.WARNING, logger='paddle_elmo.use.languages'):
        warn_if_mostly_unknown(vocab, [RAINING_TOKENS[:5] + ['x', 'y']], 'moses')  # 2 of 7: 29%
        warn_if_mostly_unknown(None, [['x', 'y']], 'whitespace')  # a char model reads any token
        warn_if_mostly_unknown(vocab, [[]], 'moses')
        assert not caplog.records
        warn_if_mostly_unknown(vocab, [['x', 'y', 'z'], RAINING_TOKENS[:5]], 'whitespace')  # 3 of 8
        assert len(caplog.records) == 1 and "by the 'whitespace' tokenizer" in caplog.records[0].getMessage()


# ---- pretraining: the corpus in the tokens of the tokenizer it records ---------------------------

def test_pretraining_on_a_tokenized_corpus_records_its_tokenizer_and_reads_it_split_on_spaces(corpus, tmp_path, capfd):
    from paddle_elmo.text.corpus import count_tokens
    proc = pretrain_here(pretrain_args(corpus, tmp_path / 'ck', '--max_steps', '4', '--tokenizer', 'moses'), capfd)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads((tmp_path / 'ck' / 'options.json').read_text())['tokenizer'] == 'moses'
    options = json.loads((tmp_path / 'ck' / 'options.json').read_text())
    assert options['n_train_tokens'] == count_tokens(str(corpus / 'train.*.txt'), progress=False)['n_tokens']
    assert 'build-vocab --tokenizer' not in proc.stderr  # its lines are moses tokens already


def test_a_raw_corpus_given_to_pretraining_is_named_with_the_way_to_tokenize_it(tmp_path):
    from paddle_elmo.text.corpus import warn_if_untokenized
    with open(require(HELDOUT), encoding='utf-8') as f:
        lines = [line for line in itertools.islice(f, 200)]
    (tmp_path / 'tokenized.txt').write_text(''.join(lines), encoding='utf-8')
    from sacremoses import MosesDetokenizer  # the core install's (moses, the bundled model's tokenizer)
    detokenize = MosesDetokenizer('en').detokenize
    (tmp_path / 'raw.txt').write_text(''.join(detokenize(line.split()) + '\n' for line in lines), encoding='utf-8')
    assert warn_if_untokenized(str(tmp_path / 'tokenized.txt'), 'moses') < 0.02
    assert warn_if_untokenized(str(tmp_path / 'raw.txt'), 'whitespace') == 0.0  # nothing to check
    with _log_capture() as records:
        assert warn_if_untokenized(str(tmp_path / 'raw.txt'), 'moses') > 0.5
    (message,) = records
    assert message.startswith(f'{tmp_path / "raw.txt"}: ') and message.endswith(
        'training reads the corpus split on spaces; make its tokens once with build-vocab --tokenizer moses '
        '--output_corpus FILE')


class _log_capture:
    """The messages paddle_elmo.text.corpus logs inside the block (a list)."""

    def __enter__(self):
        self.records = []
        self.handler = logging.Handler()
        self.handler.emit = lambda record: self.records.append(record.getMessage())
        logging.getLogger('paddle_elmo.text.corpus').addHandler(self.handler)
        return self.records

    def __exit__(self, *exc):
        logging.getLogger('paddle_elmo.text.corpus').removeHandler(self.handler)


def test_a_checkpoint_written_before_issue_42_resumes_reading_its_corpus_as_before(corpus, tmp_path, capfd):
    """A run started with --tokenizer jieba on a pre-segmented corpus (as zh-corpus's) resumes with
    the same data reading and still records jieba: its recipe.json has no field of this change."""
    segmented = tmp_path / 'zh'
    segmented.mkdir()
    rng = np.random.RandomState(0)
    words = ['我们', '喜欢', '这', '本', '书', '。', '他', '打', '篮球', '，', '她', '会', '花钱']
    for name in ('train.0.txt', 'train.1.txt'):
        (segmented / name).write_text(''.join(' '.join(rng.choice(words, 6)) + '\n' for _ in range(40)),
                                      encoding='utf-8')
    (segmented / 'vocab.txt').write_text('\n'.join(['<S>', '</S>', '<UNK>'] + words) + '\n', encoding='utf-8')
    whole = pretrain_here(pretrain_args(segmented, tmp_path / 'whole', '--max_steps', '8', '--save_freq', '4',
                                        '--tokenizer', 'jieba'), capfd)
    assert whole.returncode == 0, whole.stderr[-3000:]
    resumed = pretrain_here(['--init_from_ckpt', str(tmp_path / 'whole' / '4'), '--save_dir', str(tmp_path / 'resumed')],
                            capfd)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert_same_weights(load(tmp_path / 'whole' / 'final.pdparams'), load(tmp_path / 'resumed' / 'final.pdparams'))
    for run_dir in ('whole', 'resumed'):
        options = json.loads((tmp_path / run_dir / 'options.json').read_text())
        assert options['tokenizer'] == 'jieba' and options['n_train_tokens'] == 2 * 40 * 6  # split on spaces
    assert 'build-vocab --tokenizer' not in whole.stderr + resumed.stderr
