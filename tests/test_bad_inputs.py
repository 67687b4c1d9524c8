"""Hostile input through the commands (a front-door script or `python -m paddle_elmo SUBCOMMAND`), one
process each: a bad input fails with one line (exit 2) that names the file, line or flag, and leaves
no output behind; a valid but odd one completes (in this process). tests/test_hostile_inputs.py holds the table of every
subcommand (in one process)."""
import os

import numpy as np
import pytest

from conftest import one_line_error
from helpers import TINY_MODEL, pretrain_here, run

GOOD = 'the cat sat on the mat\na dog ran in the park\n'


def write(path, data):
    path.parent.mkdir(parents=True, exist_ok=True)
    (path.write_bytes if isinstance(data, bytes) else path.write_text)(data)
    return str(path)


GOOD_VOCAB = '<S>\n</S>\n<UNK>\nthe\ncat\nsat\non\nmat\na\ndog\n'


def pretrain(tmp_path, train=GOOD, vocab=GOOD_VOCAB, *extra):
    files = [write(tmp_path / 'train.txt', train)] if train is not None else []
    return ['--train_data_path', files[0] if files else str(tmp_path / 'nothing-*.txt'),
            '--vocab_file', write(tmp_path / 'vocab.txt', vocab), '--save_dir', str(tmp_path / 'out'),
            '--max_steps', '2', '--log_freq', '1'] + TINY_MODEL + list(extra)


def polarity(tmp_path, skip=None):
    for name in ('rt-polarity.pos', 'rt-polarity.neg'):
        if name != skip:
            write(tmp_path / 'rt' / name, GOOD * 10)
    return ['--data_dir', str(tmp_path / 'rt'), '--folds', '2', '--epochs', '1',
            '--output_json', str(tmp_path / 'out' / 'r.json')]


def word2vec_file(tmp_path, truncate=False):
    from gensim.models import KeyedVectors
    kv = KeyedVectors(vector_size=8)
    kv.add_vectors(['the', 'cat', 'dog'], np.ones((3, 8), np.float32))
    path = tmp_path / 'w2v.bin'
    kv.save_word2vec_format(str(path), binary=True)
    if truncate:
        path.write_bytes(path.read_bytes()[:-20])
    return str(path)


GBK = '很好用\n'.encode('utf-8') + '质量不错\n'.encode('gbk')  # line 2 is not UTF-8


def gbk_reviews(tmp_path):
    write(tmp_path / 'rt' / 'rt-polarity.pos', GBK)
    write(tmp_path / 'rt' / 'rt-polarity.neg', '太差了\n' * 2)
    return ['--data_dir', str(tmp_path / 'rt'), '--tokenizer', 'jieba', '--folds', '2',
            '--output_json', str(tmp_path / 'out' / 'r.json'), '--word_vectors', word2vec_file(tmp_path)]


def raw_corpus(tmp_path, data):
    (tmp_path / 'out').mkdir()
    return ['--train_data_path', write(tmp_path / 'raw.txt', data), '--tokenizer', 'jieba', '--output_file',
            str(tmp_path / 'out' / 'vocab.txt'), '--output_corpus', str(tmp_path / 'out' / 'train.txt')]


BAD = {  # name: (command: helpers.command_line's, args(tmp_path), the message's expected part)
    'empty training file': ('run_pretrain.py', lambda t: pretrain(t, ''), 'train.txt: no sentence (an empty file; '
                            'expected one sentence per line)'),
    'training file of blank lines': ('run_pretrain.py', lambda t: pretrain(t, '\n \n'), 'train.txt: no sentence (its 2 '
                                     'lines are blank'),
    'NUL byte': ('run_pretrain.py', lambda t: pretrain(t, b'fine line\nbad\x00line\n'), 'train.txt:2: NUL byte'),
    'invalid UTF-8 for a Chinese tokenizer': ('run_pretrain.py',
                                              lambda t: pretrain(t, b'fine line\nbad \xff line\n', GOOD_VOCAB,
                                                                 '--tokenizer', 'chars'),
                                              'train.txt:2: not valid UTF-8 (invalid start byte at byte 4 of the '
                                              'line); --tokenizer chars reads UTF-8 only'),
    'duplicate in the vocabulary': ('run_pretrain.py', lambda t: pretrain(t, GOOD, 'the\ncat\nthe\n'),
                                    "vocab.txt:3: duplicate token 'the' (first on line 1)"),
    '--cpu_threads 0': ('run_pretrain.py', lambda t: pretrain(t, GOOD, '<S>\n', '--cpu_threads', '0'),
                        "argument --cpu_threads: expected a positive integer, got '0'"),
    'negative --lr': ('run_pretrain.py', lambda t: pretrain(t, GOOD, '<S>\n', '--lr', '-1'),
                     "argument --lr: expected a number > 0, got '-1'"),
    'non-numeric --lr': ('run_pretrain.py', lambda t: pretrain(t, GOOD, '<S>\n', '--lr', 'fast'),
                         "argument --lr: expected a number > 0, got 'fast'"),
    'rt-polarity without its .neg file': ('word2vec_base.py',
                                          lambda t: polarity(t, 'rt-polarity.neg') + ['--word_vectors',
                                                                                      word2vec_file(t)],
                                          'rt-polarity.neg'),
    'word2vec without --data_dir, not saving vectors': ('word2vec_base.py',
                                                        lambda t: ['--train_data_path', write(t / 'c.txt', GOOD)],
                                                        '--data_dir is required, unless the job is to train and '
                                                        'save vectors only'),
    'truncated word2vec file': ('word2vec_base.py',
                                lambda t: polarity(t) + ['--word_vectors', word2vec_file(t, True)],
                                'w2v.bin: cannot read as a binary word2vec file'),
    # --word_vectors is checked before anything is counted, read or trained, by each of its commands
    'pretrain --word_vectors missing': ('run_pretrain.py',
                                        lambda t: pretrain(t, GOOD, '<S>\n', '--token_input', 'word', '--word_vectors',
                                                           str(t / 'missing.bin')),
                                        'missing.bin: --word_vectors file not found'),
    'finetune --word_vectors missing': ('run_finetune.py',
                                        lambda t: polarity(t) + ['--word_vectors', str(t / 'missing.bin'),
                                                                 '--options_file', str(t / 'o'), '--weight_file',
                                                                 str(t / 'w')],
                                        'missing.bin: --word_vectors file not found'),
    'word2vec --word_vectors missing': ('word2vec_base.py',
                                        lambda t: polarity(t) + ['--word_vectors', str(t / 'missing.bin')],
                                        'missing.bin: --word_vectors file not found'),
    'finetune without the .pos file': ('run_finetune.py',
                                       lambda t: polarity(t, 'rt-polarity.pos') + ['--options_file', str(t / 'o'),
                                                                                   '--weight_file', str(t / 'w')],
                                       'rt-polarity.pos'),
    'reviews not in UTF-8 with --tokenizer jieba': ('word2vec_base.py', gbk_reviews,
                                                    'rt-polarity.pos:2: not valid UTF-8 (invalid continuation byte at '
                                                    'byte 0 of the line); --tokenizer jieba reads UTF-8 only'),
    'raw corpus not in UTF-8': ('build-vocab', lambda t: raw_corpus(t, GBK), 'raw.txt:2: not valid UTF-8'),
    'hdf5 output where its directory cannot be made': ('embed',
                                                       lambda t: [write(t / 'in.txt', GOOD),
                                                                  os.path.join(write(t / 'a-file', 'x'), 'sub', 'o.hdf5'),
                                                                  '--options_file', str(t / 'o')],
                                                       'o.hdf5: its directory'),
}


@pytest.mark.parametrize('name', list(BAD))
def test_a_bad_input_fails_with_one_line_and_leaves_no_output(name, tmp_path, fixture_dir):
    command, make_args, message = BAD[name]
    args = make_args(tmp_path)
    if command == 'embed':  # a real model, so that only the output path is wrong
        args += ['--weight_file', os.path.join(fixture_dir, 'lm_weights.hdf5')]
        args[args.index('--options_file') + 1] = os.path.join(fixture_dir, 'options.json')
    if command == 'run_finetune.py':  # a real options.json (read before the data, for its tokenizer)
        args[args.index('--options_file') + 1] = os.path.join(fixture_dir, 'options.json')
    assert message in one_line_error(run(command, args, cwd=tmp_path, timeout=300))
    out = tmp_path / 'out'
    assert not out.exists() or not any(out.rglob('*')), sorted(out.rglob('*'))


ODD = {  # valid but odd: the run completes (in this process: what is tested is the run, not its process's exit)
    'one-line corpus': lambda t: pretrain(t, 'just one line\n'),
    'a line of 100,000 tokens': lambda t: pretrain(t, ' '.join(['the', 'cat'] * 50000) + '\n'),
    'a token of 10,000 bytes': lambda t: pretrain(t, 'the ' + 'x' * 10000 + ' cat\n'),
    'a vocabulary of three words, no specials': lambda t: pretrain(t, GOOD, 'the\ncat\ndog\n'),
    'more negatives than words': lambda t: pretrain(t, GOOD, 'the\ncat\n', '--n_negative_samples', '100'),
}


@pytest.mark.parametrize('name', list(ODD))
def test_a_valid_but_odd_input_completes(name, tmp_path, capfd):
    proc = pretrain_here(ODD[name](tmp_path), capfd, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (tmp_path / 'out' / 'final.pdparams').exists()


# ---- answers that say why: a language the model does not read, a model name misspelt ------------------

ZH = ['这本书很好看，我很喜欢', '这个手机的电池很耐用']


def warnings_of(caplog):
    return [r.getMessage() for r in caplog.records if r.name == 'paddle_elmo.use.languages']


def test_chinese_into_the_english_model_is_named_a_language_mismatch_not_a_tokenizer_s(unwarned, caplog):
    import logging
    from paddle_elmo import ELMoEmbedder
    with caplog.at_level(logging.WARNING, logger='paddle_elmo'):
        ELMoEmbedder().encode(ZH)
    [message] = warnings_of(caplog)
    assert message.startswith("these sentences are Chinese (Han script) but the model 'bundled' is English (Latin "
                              "script): 21 of 21 tokens (100%) are not in its vocabulary; use a ")
    assert message.endswith('; no tokenizer makes up for it') and 'tokenizer=' not in message


def test_the_language_mismatch_points_at_the_table_s_models_of_the_text_s_language(unwarned, caplog, monkeypatch):
    """English into a Chinese word model names the English models; Chinese into an English one names a
    Chinese model of the table when it has one (its tokenizer: jieba or chars), else how to make one."""
    import dataclasses
    import logging
    from paddle_elmo.files import model_names
    from paddle_elmo.use.languages import warn_if_mostly_unknown
    from paddle_elmo.logs import forget_warnings
    from paddle_elmo.text.vocabulary import Vocabulary
    chinese = Vocabulary.from_tokens(['这', '本', '书', '很', '好看', '我', '喜欢', '手机'], name='zh/vocab.txt')
    english = Vocabulary.from_tokens(['the', 'cat', 'sat', 'on', 'mat'], name='en/vocab.txt')
    with caplog.at_level(logging.WARNING, logger='paddle_elmo'):
        warn_if_mostly_unknown(chinese, [['It', "'s", 'raining', ',', 'isn', "'t", 'it', '?']], 'jieba')
    [message] = warnings_of(caplog)
    assert message.startswith('these sentences are English (Latin script) but the model is Chinese (Han script): '
                              '8 of 8 tokens (100%) are not in its vocabulary; use a model of English text: bundled, '
                              "small, medium, original, original-5.5b, efml-en (--model bundled in a command, "
                              "ELMoEmbedder('bundled') in Python)")
    zh_row = dataclasses.replace(model_names.MODELS['bundled'], name='zh-test', tokenizer='jieba')
    monkeypatch.setattr(model_names, 'MODELS', {**model_names.MODELS, 'zh-test': zh_row})
    for rows, advice in (({'zh-test'}, "use a model of Chinese text: zh-test (--model zh-test in a command"),
                         (set(), 'use a model trained on Chinese text (paddle-elmo pretrain makes one from a corpus')):
        monkeypatch.setattr(model_names, 'MODELS', {k: v for k, v in model_names.MODELS.items()
                                                    if v.tokenizer == 'moses' or k in rows})
        forget_warnings()
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger='paddle_elmo'):
            warn_if_mostly_unknown(english, [list('这本书很好看'), ['the']], 'moses')
        [message] = warnings_of(caplog)
        assert message.startswith('these sentences are Chinese (Han script) but the model is English (Latin script)')
        assert advice in message, message


def test_a_char_model_hears_of_the_language_its_tokenizer_is_for(unwarned, caplog):
    """A char model (no vocabulary: AllenNLP's) reads any token; Chinese split by moses, the English
    tokenizer its files are used with, is still named; English is not, nor is text whitespace split."""
    import logging
    from paddle_elmo.use.languages import warn_if_mostly_unknown
    with caplog.at_level(logging.WARNING, logger='paddle_elmo'):
        warn_if_mostly_unknown(None, [['It', "'s", 'raining']], 'moses')
        warn_if_mostly_unknown(None, [list('这本书很好看')], 'whitespace')
        assert warnings_of(caplog) == []
        warn_if_mostly_unknown(None, [list('这本书很好看')], 'moses')
    [message] = warnings_of(caplog)
    assert message.startswith('these sentences are Chinese (Han script) but the model is English (its tokenizer is '
                              'moses); use a ')


@pytest.mark.parametrize('name, suggestion', [('smal', ' (did you mean small?)'), ('bundeld', ' (did you mean bundled or bundled-zh?)'),
                                              ('orignal', ' (did you mean original or original-5.5b?)'),
                                              ('Medium', ' (did you mean medium?)'), ('xyz', '')])
def test_a_misspelt_model_name_gets_the_closest_names(name, suggestion, tmp_path):
    from paddle_elmo.fileio import InputError
    from paddle_elmo.cli.pretrain import weights_model
    from paddle_elmo.files.model_io import resolve_model
    from paddle_elmo.files.model_names import model_files
    with pytest.raises(InputError) as e:
        resolve_model(name)
    assert str(e.value).startswith(f'{name}: not a model{suggestion}; expected a model name (bundled, ')
    with pytest.raises(InputError) as e:
        model_files(name)
    assert str(e.value).startswith(f'{name}: not a model name{suggestion}; expected one of bundled, ')
    with pytest.raises(FileNotFoundError) as e:
        weights_model(name, None, None)  # --init_from_weights NAME
    assert str(e.value).endswith(f'or a model name{suggestion})')
    (tmp_path / name).mkdir()  # a directory of the user's is no misspelt name
    with pytest.raises(InputError) as e:
        resolve_model(str(tmp_path / name))
    assert 'did you mean' not in str(e.value)
