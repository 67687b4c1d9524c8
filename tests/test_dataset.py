"""Pretraining data: Vocabulary, LMStream batches (bilm-tf semantics), resume, ranks, eval batches,
token counts and vocabulary building."""
import json
import logging
import os
import random
import subprocess

import numpy as np
import pytest

from conftest import FIXTURE, ROOT, SHARED, require
from helpers import command_line
from paddle_elmo.text import corpus as corpus_files, vocabulary
from paddle_elmo.text.corpus import count_tokens
from paddle_elmo.text.batches import LMStream, SentenceSource, iter_eval_batches
from paddle_elmo.text.token_ids import token_to_char_ids, tokens_to_char_ids
from paddle_elmo.text.vocabulary import Vocabulary, build_vocabulary, count_words

COMMON = 'the of and a to in is was it that'.split()


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding='utf-8')
    return str(path)


@pytest.fixture
def corpus(tmp_path):
    """4 files of sentences 's<i> w w ...' (marker word first, 1-12 words), some words OOV.

    Returns (glob, {marker: words}, Vocabulary without the OOV words).
    """
    rng = random.Random(0)
    sentences, i = {}, 0
    for f in range(4):
        lines = []
        for _ in range(9 + 4 * f):
            words = [f's{i}'] + [rng.choice(COMMON) if rng.random() < 0.8 else f'oov{i}x{j}'
                                 for j in range(rng.randint(0, 11))]
            sentences[words[0]] = words
            lines.append(' '.join(words))
            i += 1
        write(tmp_path / 'corpus' / f'part-{f}.txt', '\n'.join(lines) + '\n')
    vocab_path = write(tmp_path / 'vocab.txt', '\n'.join(COMMON + list(sentences)) + '\n')
    return str(tmp_path / 'corpus' / 'part-*.txt'), sentences, Vocabulary(vocab_path)


def take(stream, n):
    it = iter(stream)
    return [next(it) for _ in range(n)]


def rows_of(batches, suffix=''):
    """Per row: the concatenated (input id, target id, char ids) over the batches."""
    ids = np.concatenate([b['token_ids' + suffix] for b in batches], axis=1)
    nxt = np.concatenate([b['next_token_ids' + suffix] for b in batches], axis=1)
    chars = np.concatenate([b['char_ids' + suffix] for b in batches], axis=1)
    return ids, nxt, chars


def dealt_markers(batches, vocab, backward=False):
    """Sentences in the order rows took them: a sentence starts at each <S> input (</S>
    backward); batches in order, rows in order within a batch (as rows are filled). Returns the
    word after each start: the marker forward, the sentence's last word backward."""
    B, T = batches[0]['token_ids'].shape
    ids = rows_of(batches, '_reverse' if backward else '')[0]
    if 'weights' in batches[0]:  # padding ids are 0, which may be the <S> id
        ids = np.where(np.concatenate([b['weights'] for b in batches], axis=1) > 0, ids, -1)
    start = vocab.eos if backward else vocab.bos
    starts = [(k // T, r, k) for r in range(B) for k in np.flatnonzero(ids[r] == start)]
    return [vocab.tokens[ids[r, k + 1]] for _, r, k in sorted(starts) if k + 1 < ids.shape[1]]


# ---- characters and vocabulary -------------------------------------------------------------------

def test_vectorised_char_ids_match_token_to_char_ids():
    tokens = ['', 'a', 'the', 'x' * 48, 'y' * 49, 'z' * 80, '中文分词' * 5, 'naïve', '😀ok', '<S>',
              '</S>', '<UNK>', '<s>']
    for max_chars in (50, 10):
        expected = np.stack([token_to_char_ids(t, max_chars) for t in tokens])
        np.testing.assert_array_equal(tokens_to_char_ids(tokens, max_chars), expected)


def test_bilm_tf_vocabulary_keeps_file_order(tmp_path):
    v = Vocabulary(write(tmp_path / 'v.txt', '<S>\n</S>\n<UNK>\nthe\n,\n.\n'))
    assert v.tokens == ['<S>', '</S>', '<UNK>', 'the', ',', '.'] and v.size == len(v) == 6
    assert (v.bos, v.eos, v.unk) == (0, 1, 2)
    assert v.word_to_id('.') == 5 and v.word_to_id('unseen') == 2
    np.testing.assert_array_equal(v.encode(['the', 'cat', '.']), [3, 2, 5])
    assert v.encode(['the']).dtype == np.int64
    assert v.char_ids.shape == (6, 50) and v.char_ids.dtype == np.int64
    for i, t in enumerate(v.tokens):
        np.testing.assert_array_equal(v.char_ids[i], token_to_char_ids(t))


def test_plain_vocabulary_gets_specials_first(tmp_path):
    v = Vocabulary(write(tmp_path / 'v.txt', 'the\r\ncat\r\n'), max_chars=20)
    assert v.tokens == ['<S>', '</S>', '<UNK>', 'the', 'cat']
    assert (v.bos, v.eos, v.unk) == (0, 1, 2) and v.char_ids.shape == (5, 20)


def test_vocabulary_with_some_specials_keeps_them_in_place(tmp_path):
    v = Vocabulary(write(tmp_path / 'v.txt', 'the\n</S>\ncat\n'))
    assert v.tokens == ['<S>', '<UNK>', 'the', '</S>', 'cat']
    assert (v.bos, v.eos, v.unk) == (0, 3, 1)
    np.testing.assert_array_equal(v.char_ids[3], token_to_char_ids('</S>'))


def test_allennlp_fixture_vocabulary_loads():
    path = os.path.join(require(FIXTURE), 'vocab_test.txt')
    with open(path, encoding='utf-8') as f:
        lines = f.read().split()
    v = Vocabulary(path)
    # Its specials sit mid-file (lines 21, 118, 225) and keep those ids, as in bilm-tf, so ids
    # line up with the 458 rows of elmo_token_embeddings.hdf5.
    assert v.tokens == lines and v.size == 458
    assert (v.bos, v.unk, v.eos) == (20, 117, 224)


@pytest.mark.parametrize('text, message', [
    ('a\nb\nc\nb\n', r"v\.txt:4: duplicate token 'b' \(first on line 2\)"),
    ('a\n\nb\n', 'v.txt:2: empty line'),
    ('a\nb c\n', "v.txt:2: 'b c' contains whitespace"),
    ('', 'v.txt: empty vocabulary file'),
])
def test_bad_vocabulary_line_is_named(tmp_path, text, message):
    with pytest.raises(ValueError, match=message):
        Vocabulary(write(tmp_path / 'v.txt', text))


def test_vocabulary_errors_for_bytes_and_missing_file(tmp_path):
    (tmp_path / 'v.txt').write_bytes(b'a\nb\n\xff\xfe\n')
    with pytest.raises(ValueError, match=r'v\.txt:3: not valid UTF-8'):
        Vocabulary(str(tmp_path / 'v.txt'))
    with pytest.raises(FileNotFoundError, match='nope.txt'):
        Vocabulary(str(tmp_path / 'nope.txt'))
    with pytest.raises(TypeError, match='string'):
        Vocabulary(write(tmp_path / 'w.txt', 'a\n')).encode('a b')


# ---- training batches ----------------------------------------------------------------------------

def test_batch_format(corpus):
    pattern, _, vocab = corpus
    batch = take(LMStream(pattern, vocab, batch_size=3, unroll_steps=5), 1)[0]
    assert sorted(batch) == sorted(['token_ids', 'word_ids', 'char_ids', 'next_token_ids', 'token_ids_reverse',
                                    'word_ids_reverse', 'char_ids_reverse', 'next_token_ids_reverse',
                                    'sentence_start'])
    assert batch.pop('sentence_start').tolist() == [True] * 3
    for name in ('', '_reverse'):  # word input reads the ids + 1 (0 is padding; this batch has none)
        np.testing.assert_array_equal(batch['word_ids' + name], batch['token_ids' + name] + 1)
    for key, value in batch.items():
        assert value.dtype == np.int64
        assert value.shape == ((3, 5, 50) if key.startswith('char') else (3, 5)), key


def test_forward_rows_are_sentences_with_next_token_targets(corpus):
    """Rows continue across batches; targets are the next tokens; `</S>` is never an input;
    char ids are those of the actual words, OOV ones included."""
    pattern, sentences, vocab = corpus
    batches = take(LMStream(pattern, vocab, batch_size=3, unroll_steps=7, chunk_lines=5), 12)
    ids, nxt, chars = rows_of(batches)
    assert not (ids == vocab.eos).any()
    n_checked = 0
    for r in range(3):
        starts = list(np.flatnonzero(ids[r] == vocab.bos)) + [ids.shape[1]]
        assert starts[0] == 0
        for a, b in zip(starts[:-1], starts[1:]):
            if b - a < 2:
                continue  # cut right after <S>: the marker is in a later batch
            words = sentences[vocab.tokens[ids[r, a + 1]]]
            expected = ['<S>', *words, '</S>']
            complete = b < ids.shape[1]
            n = len(words) + 1 if complete else b - a
            assert [vocab.tokens[i] for i in ids[r, a:a + n]] == \
                [t if t in vocab._ids else '<UNK>' for t in expected[:n]]
            assert [vocab.tokens[i] for i in nxt[r, a:a + n]] == \
                [t if t in vocab._ids else '<UNK>' for t in expected[1:n + 1]]
            np.testing.assert_array_equal(chars[r, a:a + n], tokens_to_char_ids(expected[:n]))
            n_checked += complete
    assert n_checked > 10


def test_backward_rows_are_the_same_sentences_reversed(corpus):
    pattern, sentences, vocab = corpus
    batches = take(LMStream(pattern, vocab, batch_size=3, unroll_steps=7, chunk_lines=5), 12)
    ids, nxt, chars = rows_of(batches, '_reverse')
    fwd = rows_of(batches)[0]
    assert not (ids == vocab.bos).any()
    for r in range(3):
        # Same sentence boundaries in both directions: </S> backward where <S> forward.
        np.testing.assert_array_equal(ids[r] == vocab.eos, fwd[r] == vocab.bos)
        starts = list(np.flatnonzero(ids[r] == vocab.eos)) + [ids.shape[1]]
        fwd_starts = np.flatnonzero(fwd[r] == vocab.bos)
        for a, b in zip(starts[:-2], starts[1:-1]):  # complete sentences only
            words = sentences[vocab.tokens[fwd[r, a + 1]]]
            expected = ['</S>', *words[::-1], '<S>']
            assert a in fwd_starts and b - a == len(words) + 1
            assert [vocab.tokens[i] for i in ids[r, a:b]] == \
                [t if t in vocab._ids else '<UNK>' for t in expected[:-1]]
            assert [vocab.tokens[i] for i in nxt[r, a:b]] == \
                [t if t in vocab._ids else '<UNK>' for t in expected[1:]]
            np.testing.assert_array_equal(chars[r, a:b], tokens_to_char_ids(expected[:-1]))


def test_rows_take_sentences_from_one_shared_sequence(corpus):
    """Rows take the next sentence of the shared sequence as they need one (bilm-tf order)."""
    pattern, _, vocab = corpus
    batches = take(LMStream(pattern, vocab, batch_size=4, unroll_steps=6, seed=3, chunk_lines=4), 15)
    source = SentenceSource(pattern, seed=3, chunk_lines=4)
    dealt = [source.next_sentence() for _ in range(60)]
    markers = dealt_markers(batches, vocab)
    assert len(markers) > 40
    assert markers == [words[0] for words in dealt[:len(markers)]]
    last_words = dealt_markers(batches, vocab, backward=True)
    assert last_words == [words[-1] if words[-1] in vocab._ids else '<UNK>'
                          for words in dealt[:len(last_words)]]


def test_every_sentence_once_per_pass_and_reshuffled(corpus):
    pattern, sentences, _ = corpus
    source = SentenceSource(pattern, seed=5, chunk_lines=4)
    passes = [[source.next_sentence() for _ in sentences] for _ in range(3)]
    for p, got in enumerate(passes):
        assert sorted(s[0] for s in got) == sorted(sentences), p
        assert all(s == sentences[s[0]] for s in got)
    assert source.pass_index == 2
    file_orders = {tuple(source.pass_files(p)) for p in range(6)}
    assert len(file_orders) > 1 and all(sorted(f) == source.files for f in file_orders)
    orders = [[s[0] for s in got] for got in passes]
    assert orders[0] != orders[1] != orders[2]
    again = SentenceSource(pattern, seed=5, chunk_lines=4)
    assert [again.next_sentence()[0] for _ in sentences] == orders[0]
    other = SentenceSource(pattern, seed=6, chunk_lines=4)
    assert [other.next_sentence()[0] for _ in sentences] != orders[0]


def test_a_pass_of_batches_counts_every_token(corpus):
    """Over the batches of one pass (B = 1) every sentence appears once: n + 1 inputs each."""
    pattern, sentences, vocab = corpus
    n_pairs = sum(len(w) + 1 for w in sentences.values())
    batches = take(LMStream(pattern, vocab, batch_size=1, unroll_steps=1, seed=2, chunk_lines=6),
                   n_pairs)
    ids = rows_of(batches)[0][0]
    assert (ids == vocab.bos).sum() == len(sentences)
    assert sorted(dealt_markers(batches, vocab)) == sorted(sentences)
    nxt = next(iter(LMStream(pattern, vocab, 1, n_pairs + 1, seed=2, chunk_lines=6)))
    assert nxt['token_ids'][0, -1] == vocab.bos  # the next pass starts right after


def test_unshuffled_stream_reads_files_in_order(corpus, tmp_path):
    pattern, sentences, _ = corpus
    source = SentenceSource(pattern, shuffle=False, chunk_lines=3)
    assert [source.next_sentence()[0] for _ in sentences] == [f's{i}' for i in range(len(sentences))]


@pytest.mark.parametrize('n_files', [4, 1])
def test_two_ranks_read_disjoint_shares_that_cover_the_data(corpus, tmp_path, n_files):
    pattern, sentences, vocab = corpus
    if n_files == 1:  # fewer files than ranks: lines are dealt instead
        lines = [' '.join(w) for w in sentences.values()]
        pattern = write(tmp_path / 'one' / 'all.txt', '\n'.join(lines) + '\n')
    seen = []
    for rank in (0, 1):
        source = SentenceSource(pattern, seed=1, rank=rank, world_size=2, chunk_lines=5)
        got = []
        while True:
            words = source.next_sentence()
            if source.pass_index > 0:
                break
            got.append(words[0])
        seen.append(got)
        assert got, rank
    assert not set(seen[0]) & set(seen[1])
    assert sorted(seen[0] + seen[1]) == sorted(sentences)
    if n_files == 1:
        assert seen[0] != [] and sorted(seen[0], key=lambda m: int(m[1:]))[:2] == ['s0', 's2']
    # The batches of a rank only hold its own sentences.
    batches = take(LMStream(pattern, vocab, 2, 5, seed=1, rank=1, world_size=2, chunk_lines=5), 3)
    assert set(dealt_markers(batches, vocab)) <= set(seen[1])


def test_resume_gives_the_same_next_batches(corpus):
    pattern, _, vocab = corpus
    kw = dict(batch_size=3, unroll_steps=4, seed=7, chunk_lines=5)
    n = 90
    full = LMStream(pattern, vocab, **kw)
    reference = take(full, n)
    assert full.source.pass_index == 2  # the resume points below fall in passes 0, 1 and 2
    for k in (0, 1, 5, 17, 33, 45, 62, 80):
        stream = LMStream(pattern, vocab, **kw)
        it = iter(stream)
        for _ in range(k):
            next(it)
        state = json.loads(json.dumps(stream.state_dict()))
        assert len(json.dumps(state)) < 4000
        resumed = LMStream(pattern, vocab, **kw)
        resumed.load_state_dict(state)
        for i, batch in enumerate(take(resumed, n - k)):
            for key in batch:
                np.testing.assert_array_equal(batch[key], reference[k + i][key], err_msg=f'{k} {i} {key}')


def test_resume_refuses_a_state_of_another_stream(corpus):
    pattern, _, vocab = corpus
    state = LMStream(pattern, vocab, 3, 4, seed=7).state_dict()
    with pytest.raises(ValueError, match='seed=7'):
        LMStream(pattern, vocab, 3, 4, seed=8).load_state_dict(state)
    with pytest.raises(ValueError, match='batch_size 2'):
        LMStream(pattern, vocab, 2, 4, seed=7).load_state_dict(state)
    with pytest.raises(ValueError, match='unroll_steps 4'):
        LMStream(pattern, vocab, 3, 5, seed=7).load_state_dict(state)


def test_empty_lines_are_skipped_and_reported_once_per_file(tmp_path, caplog):
    pattern = write(tmp_path / 'c' / 'a.txt', 'x y\n\n  \t\nz\n')
    vocab = Vocabulary(write(tmp_path / 'v.txt', 'x\ny\nz\n'))
    with caplog.at_level(logging.WARNING, logger='paddle_elmo'):
        batches = take(LMStream(pattern, vocab, 1, 3, chunk_lines=2), 8)  # 4 passes
    assert [r.getMessage() for r in caplog.records] == [f'{pattern}: skipped 2 empty line(s) (not sentences)']
    ids = rows_of(batches)[0]
    assert [vocab.tokens[i] for i in ids[0, :6]] == ['<S>', 'x', 'y', '<S>', 'z', '<S>']


def test_bad_corpus_inputs_are_named(tmp_path):
    vocab = Vocabulary(write(tmp_path / 'v.txt', 'x\n'))
    (tmp_path / 'bad.txt').write_bytes(b'x x\nx \xc3\x28 x\n')  # not UTF-8: for a Chinese model, refused
    with pytest.raises(ValueError, match=r'bad\.txt:2: not valid UTF-8 .*; --tokenizer jieba reads UTF-8 only'):
        corpus_files.check_corpus(str(tmp_path / 'bad.txt'), '--train_data_path', 'jieba')
    (tmp_path / 'nul.txt').write_bytes(b'x x\nx \x00 x\n')
    with pytest.raises(ValueError, match=r'nul\.txt:2: NUL byte'):
        take(LMStream(str(tmp_path / 'nul.txt'), vocab, 2, 3), 1)
    with pytest.raises(ValueError, match=r'nul\.txt:2: NUL byte'):
        count_tokens(str(tmp_path / 'nul.txt'), progress=False)
    with pytest.raises(FileNotFoundError, match='nothing'):
        LMStream(str(tmp_path / 'nothing*'), vocab, 2, 3)
    empty = write(tmp_path / 'e' / 'empty.txt', '\n \n')
    with pytest.raises(ValueError, match='no sentences'):
        take(LMStream(empty, vocab, 2, 3), 1)
    with pytest.raises(ValueError, match='rank'):
        LMStream(empty, vocab, 2, 3, rank=2, world_size=2)


# ---- evaluation batches --------------------------------------------------------------------------

@pytest.mark.parametrize('batch_size, unroll_steps', [(3, 4), (1, 50), (40, 2)])
def test_eval_batches_count_every_target_once(corpus, batch_size, unroll_steps):
    pattern, sentences, vocab = corpus
    batches = list(iter_eval_batches(pattern, vocab, batch_size, unroll_steps))
    weights = np.concatenate([b['weights'] for b in batches], axis=1)
    assert weights.dtype == np.float32 and batches[-1]['weights'].any()
    assert weights.sum() == sum(len(w) + 1 for w in sentences.values())
    for row in weights:  # once a row runs out it stays out
        assert (np.diff(row) <= 0).all()
    ids, nxt, chars = rows_of(batches)
    real = weights > 0
    assert not ids[~real].any() and not nxt[~real].any() and not chars[~real].any()
    assert (chars[real] > 0).all()
    word_ids = np.concatenate([b['word_ids'] for b in batches], axis=1)  # 0 exactly where a row ran out
    np.testing.assert_array_equal(word_ids, np.where(real, ids + 1, 0))
    # Files sorted, no shuffle: the sentences in file order, each once.
    assert dealt_markers(batches, vocab) == [f's{i}' for i in range(len(sentences))]


def test_eval_on_heldout_counts_its_tokens(tmp_path):
    heldout = require(os.path.join(SHARED, 'data', 'lm-corpus', 'heldout.txt'))
    vocab_path = str(tmp_path / 'vocab.txt')
    vocabulary.write_vocabulary(build_vocabulary(count_words(heldout, progress=False),
                                              max_vocab_size=5000), vocab_path)
    vocab = Vocabulary(vocab_path)
    total = sum(b['weights'].sum() for b in iter_eval_batches(heldout, vocab, 128, 20))
    assert total == 348_828 + 14_130  # README: tokens + one </S> target per sentence


# ---- token counts --------------------------------------------------------------------------------

def test_count_tokens_caches_in_the_cache_directory_and_nothing_beside_the_data(tmp_path, monkeypatch):
    monkeypatch.setenv('PADDLE_ELMO_CACHE', str(tmp_path / 'cache'))
    data = tmp_path / 'data'
    write(data / 'a.txt', 'a b c\n\nd e\n')
    write(data / 'b.txt', '中文 分词\n')
    expected = dict(n_tokens=7, n_sentences=3, n_files=2)
    assert count_tokens(str(data / '*.txt'), progress=False) == expected
    assert sorted(os.listdir(data)) == ['a.txt', 'b.txt']  # the user's directory is left as it was
    entries = json.loads((tmp_path / 'cache' / corpus_files.COUNTS_CACHE_NAME).read_text())
    assert sorted(entries) == [str(data / 'a.txt'), str(data / 'b.txt')]
    assert entries[str(data / 'a.txt')]['n_tokens'] == 5

    def no_counting(*a):
        raise AssertionError('counted again although cached')
    monkeypatch.setattr(corpus_files, '_count_file', no_counting)
    assert count_tokens(str(data / '*.txt'), progress=False) == expected
    monkeypatch.undo()
    monkeypatch.setenv('PADDLE_ELMO_CACHE', str(tmp_path / 'cache'))
    write(data / 'b.txt', '中文 分词 又\n')  # size and mtime change
    assert count_tokens(str(data / '*.txt'), progress=False)['n_tokens'] == 8


def test_the_cache_directory_follows_xdg_and_its_own_variable(monkeypatch, tmp_path):
    from paddle_elmo.cache import cache_dir
    monkeypatch.delenv('PADDLE_ELMO_CACHE', raising=False)
    monkeypatch.setenv('XDG_CACHE_HOME', str(tmp_path / 'xdg'))
    assert cache_dir('ops') == str(tmp_path / 'xdg' / 'paddle-elmo' / 'ops')
    monkeypatch.setenv('PADDLE_ELMO_CACHE', str(tmp_path / 'mine'))
    assert cache_dir() == str(tmp_path / 'mine')


def test_count_tokens_of_shared_heldout_matches_its_readme(tmp_path):
    path = require(os.path.join(SHARED, 'data', 'lm-corpus', 'heldout.txt'))
    before = sorted(os.listdir(os.path.dirname(path)))
    counts = count_tokens(path, cache_dir=str(tmp_path), progress=False)
    assert counts == dict(n_tokens=348_828, n_sentences=14_130, n_files=1)
    assert sorted(os.listdir(os.path.dirname(path))) == before  # ../shared stays untouched


# ---- building a vocabulary -----------------------------------------------------------------------

def test_build_vocabulary_order_min_count_and_size(tmp_path):
    pattern = write(tmp_path / 'c.txt', 'b a c\na b\nd b a\n<UNK> e\n')
    counts = count_words(pattern, progress=False)
    assert build_vocabulary(counts) == ['<S>', '</S>', '<UNK>', 'a', 'b', 'c', 'd', 'e']
    assert build_vocabulary(counts, min_count=2) == ['<S>', '</S>', '<UNK>', 'a', 'b']
    assert build_vocabulary(counts, min_count=1, max_vocab_size=3) == ['<S>', '</S>', '<UNK>', 'a', 'b', 'c']
    assert build_vocabulary(counts, special_tokens=False) == ['a', 'b', '<UNK>', 'c', 'd', 'e']
    with pytest.raises(ValueError, match='min_count'):
        build_vocabulary(counts, min_count=0)


def run_build_vocab(*args):
    return subprocess.run(command_line('build-vocab', *args), capture_output=True, text=True, cwd=ROOT)


def test_build_vocab_script_on_chinese(tmp_path):
    write(tmp_path / 'zh' / '1.txt', '我 喜欢 自然 语言 处理\n我 喜欢 你\n')
    write(tmp_path / 'zh' / '2.txt', '自然 语言 很 美\n\n')
    out = tmp_path / 'vocab.txt'
    result = run_build_vocab('--train_data_path', str(tmp_path / 'zh' / '*.txt'), '--output_file',
                             str(out), '--min_count', '2')
    assert result.returncode == 0, result.stderr
    assert out.read_text(encoding='utf-8').split('\n') == ['<S>', '</S>', '<UNK>', '喜欢', '我', '自然',
                                                          '语言', '']
    assert 'wrote 7 tokens' in result.stdout
    vocab = Vocabulary(str(out))
    batch = next(iter(LMStream(str(tmp_path / 'zh' / '*.txt'), vocab, 2, 6, seed=0)))
    words = {vocab.tokens[i] for i in batch['token_ids'].ravel()}
    assert '<UNK>' in words  # 处理, 你, 很, 美 are rare
    np.testing.assert_array_equal(vocab.char_ids[vocab.word_to_id('喜欢')], token_to_char_ids('喜欢'))
    assert list(vocab.char_ids[vocab.word_to_id('喜欢')][1:7] - 1) == list('喜欢'.encode('utf-8'))


def test_build_vocab_script_reports_bad_input(tmp_path):
    result = run_build_vocab('--train_data_path', str(tmp_path / 'none*'), '--output_file',
                             str(tmp_path / 'v.txt'))
    assert result.returncode == 2 and result.stderr.strip().splitlines()[-1].startswith('error: ')
    assert 'none*' in result.stderr and 'Traceback' not in result.stderr
    write(tmp_path / 'c.txt', 'a\n')
    result = run_build_vocab('--train_data_path', str(tmp_path / 'c.txt'), '--output_file',
                             str(tmp_path / 'v.txt'), '--max_vocab_size', '-1')
    assert result.returncode == 2 and '--max_vocab_size' in result.stderr
    assert not (tmp_path / 'v.txt').exists()


def test_sentence_start_marks_the_rows_whose_window_begins_a_sentence(corpus):
    pattern, _, vocab = corpus
    for batch in take(LMStream(pattern, vocab, batch_size=4, unroll_steps=3, chunk_lines=5), 20):
        assert batch['sentence_start'].tolist() == (batch['token_ids'][:, 0] == vocab.bos).tolist()
