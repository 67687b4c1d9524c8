"""Text files as users have them (paddle_elmo/text/encodings.py): UTF-8, else, for text a Latin-script
tokenizer splits (moses, whitespace), the whole file read as Latin-1 (Windows-1252) and said in one
WARNING line naming the file; for Chinese tokenizers (jieba, chars) refused in one line naming the file,
the line and the byte. rt-polarity as download_data.sh leaves it (Latin-1, as published: made here by
encoding the shared UTF-8 copy back) runs through the four classifier commands with their defaults."""
import json
import logging
import os

import numpy as np
import pytest

from conftest import ROOT, RT, require
from helpers import check_result, run_here, run_script
from paddle_elmo.fileio import InputError
from paddle_elmo.text.encodings import LATIN_1, iter_text_lines, read_text_file, text_encoding
from paddle_elmo.classify.data import read_polarity, read_sentences

FILES = ('rt-polarity.pos', 'rt-polarity.neg')
# The published files' encoding: the shared copy's – — … ‘ (from 0x96 0x97 0x85 0x91) are not in
# ISO-8859-1, so only Windows-1252 gives back the bytes the Cornell archive holds.
PUBLISHED = 'cp1252'


def shared_lines(name):
    require(RT)
    with open(os.path.join(RT, name), encoding='utf-8') as f:
        return f.read().splitlines(keepends=True)


def write_polarity(directory, encoding, lines_of=shared_lines):
    """rt-polarity.pos / .neg in `directory`, each `lines_of(name)` encoded in `encoding` -> directory."""
    directory.mkdir(exist_ok=True)
    for name in FILES:
        (directory / name).write_bytes(''.join(lines_of(name)).encode(encoding))
    return directory


def accented_slice(name, n=60):
    """The first `n` (None: all) lines of a shared rt-polarity file that hold a character outside ASCII
    (é, –, …)."""
    return [line for line in shared_lines(name) if not line.isascii()][:n]


def latin_warnings(records):
    return [r.getMessage() for r in records if 'read as Latin-1' in r.getMessage()]


# ---- the rule ---------------------------------------------------------------------------------------

def test_the_published_rt_polarity_reads_as_its_utf8_copy_with_one_warning_per_file(tmp_path, caplog):
    published = write_polarity(tmp_path / 'published', PUBLISHED)
    assert b'\xe9' in (published / 'rt-polarity.pos').read_bytes()  # café, as the archive holds it
    assert b'\x97' in (published / 'rt-polarity.pos').read_bytes()  # an em dash, Windows-1252's
    with caplog.at_level(logging.WARNING, logger='paddle_elmo'):
        for _ in range(2):  # said once per file, however often it is read
            for name in FILES:
                text, encoding = read_text_file(str(published / name), 'moses')
                assert encoding == LATIN_1 and text == ''.join(shared_lines(name))
    pos, neg = (str(published / name) for name in FILES)
    assert latin_warnings(caplog.records) == [
        f'{pos}: not UTF-8 (byte 0xf3 on line 44); read as Latin-1 (Windows-1252)',
        f'{neg}: not UTF-8 (byte 0x97 on line 27); read as Latin-1 (Windows-1252)']


def test_the_moses_tokens_of_the_published_files_are_those_of_the_utf8_copy(tmp_path):
    def every_accented_line(name):
        return accented_slice(name, None)
    published = read_polarity(str(write_polarity(tmp_path / 'published', PUBLISHED, every_accented_line)),
                              tokenizer='moses')
    utf8 = read_polarity(str(write_polarity(tmp_path / 'utf8', 'utf-8', every_accented_line)), tokenizer='moses')
    assert published.sentences == utf8.sentences and published.labels.tolist() == utf8.labels.tolist()
    assert ['absorbing', 'character', 'study', 'by', 'andré', 'turpin', '.'] in published.sentences
    assert {info['encoding'] for info in published.sources.values()} == {LATIN_1}
    assert {info['encoding'] for info in utf8.sources.values()} == {'utf-8'}


def test_a_utf8_file_gives_no_warning(tmp_path, caplog):
    utf8 = write_polarity(tmp_path / 'utf8', 'utf-8')
    with caplog.at_level(logging.WARNING, logger='paddle_elmo'):
        read_polarity(str(utf8), tokenizer='whitespace')
        assert text_encoding(str(utf8 / 'rt-polarity.pos'), 'chars') == 'utf-8'
    assert latin_warnings(caplog.records) == []


@pytest.mark.parametrize('tokenizer', ['jieba', 'chars'])
def test_chinese_tokenizers_refuse_a_file_that_is_not_utf8_naming_line_and_byte(tmp_path, tokenizer):
    published = write_polarity(tmp_path / 'published', PUBLISHED)
    path = str(published / 'rt-polarity.pos')
    with pytest.raises(InputError) as refused:
        read_sentences(path, tokenizer)
    assert str(refused.value) == (f'{path}:44: not valid UTF-8 (invalid continuation byte at byte 47 of the line); '
                                  f'--tokenizer {tokenizer} reads UTF-8 only (convert the file, e.g. with iconv)')
    assert shared_lines('rt-polarity.pos')[43].encode(PUBLISHED)[47:48] == 'ó'.encode(PUBLISHED)  # ladrón


def test_bytes_0x80_to_0x9f_are_windows_1252_punctuation_and_none_fails(tmp_path):
    (tmp_path / 'w.txt').write_bytes(b'a \x96 b \x97 c\x85 \x91d\x92 \x80 \x81\x8d\x8f\x90\x9d \xff\n')
    text, encoding = read_text_file(str(tmp_path / 'w.txt'))
    assert (text, encoding) == ('a \u2013 b \u2014 c\u2026 \u2018d\u2019 \u20ac \x81\x8d\x8f\x90\x9d \xff\n', LATIN_1)


def test_a_stream_resumed_at_a_byte_offset_decodes_as_one_from_the_start(tmp_path, caplog):
    """The decision is the whole file's: `caf\\xc3\\xa9` before the first invalid byte is Latin-1's
    `cafÃ©` (not UTF-8's `café`), from the start or from any offset."""
    raw = [b'caf\xc3\xa9 one\n', b'plain two\n', b'caf\xe9 three\n', b'caf\xc3\xa9 four\n']
    (tmp_path / 'c.txt').write_bytes(b''.join(raw))
    path = str(tmp_path / 'c.txt')
    whole = list(iter_text_lines(path))
    assert [text for _, _, text in whole] == ['cafÃ© one\n', 'plain two\n', 'café three\n', 'cafÃ© four\n']
    offset = 0
    for start_line, line in enumerate(raw):
        assert list(iter_text_lines(path, 'whitespace', offset, start_line)) == whole[start_line:]
        offset += len(line)
    from paddle_elmo.text.batches import SentenceSource
    source = SentenceSource(path, shuffle=False, chunk_lines=1)
    first = [source.next_sentence() for _ in range(2)]
    resumed = SentenceSource(path, shuffle=False, chunk_lines=1)
    resumed.load_state_dict(source.state_dict())
    assert first + [resumed.next_sentence() for _ in range(2)] == [text.split() for _, _, text in whole]


def test_standard_input_read_as_latin_1_is_named_as_such(tmp_path, monkeypatch, caplog):
    import io
    import sys
    from paddle_elmo.fileio import input_path
    monkeypatch.setattr(sys, 'stdin', io.TextIOWrapper(io.BytesIO('un café\n'.encode('latin-1'))))
    with caplog.at_level(logging.WARNING, logger='paddle_elmo'), input_path('-') as path:
        assert [text for _, _, text in iter_text_lines(path)] == ['un café\n']
    assert latin_warnings(caplog.records) == ['<stdin>: not UTF-8 (byte 0xe9 on line 1); read as Latin-1 '
                                              '(Windows-1252)']


def test_every_reader_of_sentences_follows_the_rule(tmp_path, caplog):
    """A corpus (build-vocab, pretrain, eval, word2vec), a file to embed, export checks: Latin-1 for
    Latin-script text, refused for Chinese tokenizers; a vocabulary or options.json (the model's own
    files, which travel with it) stays UTF-8 only."""
    from paddle_elmo.export.export_checks import check_sentences
    from paddle_elmo.text.corpus import check_corpus, count_tokens
    from paddle_elmo.text.vocabulary import Vocabulary, count_words
    from paddle_elmo.text.word_vectors import CorpusSentences
    path = str(tmp_path / 'corpus.txt')
    (tmp_path / 'corpus.txt').write_bytes('un café noir\nun thé\n'.encode('latin-1') * 100)
    check_corpus(path, '--train_data_path', 'whitespace')
    assert count_words(path, progress=False)['café'] == 100
    assert count_tokens(path, cache_dir=str(tmp_path / 'cache'), progress=False)['n_tokens'] == 500
    assert list(CorpusSentences([path]))[:2] == [['un', 'café', 'noir'], ['un', 'thé']]
    assert check_sentences(path, 'moses')[:2] == ['un café noir', 'un thé']
    for tokenizer in ('jieba', 'chars'):
        with pytest.raises(InputError, match=f'corpus.txt:1: not valid UTF-8 .*--tokenizer {tokenizer} reads'):
            check_corpus(path, '--train_data_path', tokenizer)
        with pytest.raises(InputError, match='corpus.txt:1: not valid UTF-8'):
            check_sentences(path, tokenizer)
    assert len(latin_warnings(caplog.records)) == 1
    (tmp_path / 'shards').mkdir()  # every file of a glob is decided before any work, not only the first
    (tmp_path / 'shards' / 'a.txt').write_text('一 个 句子\n', encoding='utf-8')
    (tmp_path / 'shards' / 'b.txt').write_bytes('一 个 句子\n'.encode('gbk'))
    with pytest.raises(InputError, match='b.txt:1: not valid UTF-8 .*--tokenizer jieba reads UTF-8 only'):
        check_corpus(str(tmp_path / 'shards' / '*.txt'), '--train_data_path', 'jieba')
    (tmp_path / 'vocab.txt').write_bytes('café\n'.encode('latin-1'))
    with pytest.raises(InputError, match='vocab.txt:1: not valid UTF-8'):
        Vocabulary(str(tmp_path / 'vocab.txt'))


# ---- the commands, on rt-polarity as download_data.sh leaves it ----------------------------------------

@pytest.fixture
def published_slice(tmp_path):
    """rt-polarity as `download_data.sh --only polarity` leaves it, from an archive as the Cornell one
    (rt-polaritydata/rt-polarity.pos, .neg in Windows-1252) of 60 lines of each file, every one with a
    character outside ASCII -> its sentence-polarity-dataset-v1 directory. A directory per test: the
    warning is given once per file in a process, and run_here runs the commands in this one."""
    import subprocess
    import tarfile
    inside = write_polarity(tmp_path / 'rt-polaritydata', PUBLISHED, accented_slice)
    (tmp_path / 'archives').mkdir()
    with tarfile.open(tmp_path / 'archives' / 'rt-polaritydata.tar.gz', 'w:gz') as tar:
        tar.add(inside, 'rt-polaritydata')
    proc = subprocess.run(['bash', os.path.join(ROOT, 'download_data.sh'), '--data_dir', str(tmp_path / 'data'),
                           '--from', str(tmp_path / 'archives'), '--only', 'polarity'], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    left = tmp_path / 'data' / 'sentence-polarity-dataset-v1'
    assert all((left / name).read_bytes() == (inside / name).read_bytes() for name in FILES)  # as published
    return left


@pytest.fixture(scope='module')
def vectors_of_the_slice(tmp_path_factory):
    """A word2vec .bin holding every moses token of the slice's UTF-8 copy (random vectors)."""
    from gensim.models import KeyedVectors
    utf8 = write_polarity(tmp_path_factory.mktemp('utf8'), 'utf-8', accented_slice)
    words = sorted({w for s in read_polarity(str(utf8), tokenizer='moses').sentences for w in s})
    kv = KeyedVectors(vector_size=8)
    kv.add_vectors(words, np.random.RandomState(0).normal(size=(len(words), 8)).astype(np.float32))
    path = str(utf8 / 'vectors.bin')
    kv.save_word2vec_format(path, binary=True)
    return path


SHORT = ['--folds', '2', '--epochs', '1']


def assert_read_as_latin_1(stderr, directory):
    """The command said, once for each file, that it read it as Latin-1, and read all its lines."""
    for name in FILES:
        warned = [line for line in stderr.splitlines() if f'{directory / name}: not UTF-8 (byte 0x' in line]
        assert len(warned) == 1 and 'read as Latin-1 (Windows-1252)' in warned[0], stderr
        assert f'read {directory / name}: 60 sentences ({LATIN_1}) split by moses' in stderr, stderr


@pytest.mark.parametrize('command', ['finetune', 'run_finetune.py'])
def test_finetune_with_its_defaults_reads_the_published_files(published_slice, tmp_path, capfd, command):
    """The bundled model and its moses tokenizer, as `paddle-elmo finetune --data_dir DIR` runs."""
    out = tmp_path / 'elmo.json'
    args = ['--data_dir', str(published_slice), *SHORT, '--output_json', str(out)]
    proc = (run_here(command, args, capfd) if command == 'finetune' else run_script(command, *args))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert_read_as_latin_1(proc.stderr, published_slice)
    assert check_result(out, 2)['data']['sentences'] == 120


@pytest.mark.parametrize('command', ['word2vec', 'word2vec_base.py'])
def test_word2vec_with_its_defaults_finds_every_accented_word(published_slice, vectors_of_the_slice, tmp_path, capfd,
                                                              command):
    """Vectors of the UTF-8 copy's tokens cover every token read from the published files: none of
    `andré`, `–`, `…` came out garbled."""
    out = tmp_path / 'w2v.json'
    args = ['--data_dir', str(published_slice), '--word_vectors', vectors_of_the_slice, *SHORT, '--output_json',
            str(out)]
    proc = (run_here(command, args, capfd) if command == 'word2vec' else run_script(command, *args))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert_read_as_latin_1(proc.stderr, published_slice)
    assert json.loads(out.read_text())['features']['oov_rate'] == 0


@pytest.mark.parametrize('tokenizer', ['jieba', 'chars'])
def test_word2vec_with_a_chinese_tokenizer_refuses_the_published_files(published_slice, vectors_of_the_slice,
                                                                       tmp_path, capfd, tokenizer):
    proc = run_here('word2vec', ['--data_dir', str(published_slice), '--word_vectors', vectors_of_the_slice,
                                 '--tokenizer', tokenizer, *SHORT, '--output_json', str(tmp_path / 'w.json')], capfd)
    assert proc.returncode == 2 and 'Traceback' not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1].startswith(
        f'error: {published_slice / "rt-polarity.pos"}:1: not valid UTF-8 (')
    assert f'--tokenizer {tokenizer} reads UTF-8 only' in proc.stderr
    assert not (tmp_path / 'w.json').exists()


def test_pretrain_and_eval_read_a_latin_1_corpus_saying_so_once(tmp_path, capfd):
    from helpers import TINY_MODEL, main_exit
    corpus = tmp_path / 'corpus.txt'
    corpus.write_bytes('un café noir\nun thé – chaud\n'.encode(PUBLISHED) * 20)  # –: 0x96
    (tmp_path / 'vocab.txt').write_text('<S>\n</S>\n<UNK>\nun\ncafé\nnoir\nthé\n–\nchaud\n', encoding='utf-8')
    assert main_exit(['pretrain', '--train_data_path', str(corpus), '--vocab_file', str(tmp_path / 'vocab.txt'),
                      '--save_dir', str(tmp_path / 'run'), '--max_steps', '1', '--quiet'] + TINY_MODEL) == 0
    assert main_exit(['eval', '--dev_data_path', str(corpus), '--init_from_ckpt', str(tmp_path / 'run' / 'final'),
                      '--output_json', str(tmp_path / 'eval.json'), '--quiet']) == 0
    warned = [line for line in capfd.readouterr().err.splitlines() if 'read as Latin-1' in line]
    assert warned == [f'warning: {corpus}: not UTF-8 (byte 0xe9 on line 1); read as Latin-1 (Windows-1252)']
    # once in the process, which ran both
    assert json.loads((tmp_path / 'eval.json').read_text())['n_unknown'] == 0  # every word, – too, in the vocabulary
