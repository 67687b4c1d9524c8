"""Text to ids: the tokenizers (raw text to tokens), ELMo character ids of tokens and sentences,
and the biLM pretraining data (Vocabulary, token counts, vocabulary building, LMStream training
batches, eval batches).

Characters follow the reference ELMo (allenai/bilm-tf, AllenNLP's ELMoCharacterMapper): a token is
its UTF-8 bytes cut to `max_chars - 2`, wrapped as [BOW, bytes..., EOW, PAD, ...] to exactly
`max_chars` ids, then every id is shifted by +1 so that 0 means "no token" (padding).
"""
import array
import collections
import itertools
import json
import logging
import os
import re

import numpy as np

from paddle_elmo.fileio import InputError, decode_utf8, iter_lines, list_files, write_text_atomic

log = logging.getLogger(__name__)

BOS_CHAR = 256  # <S>
EOS_CHAR = 257  # </S>
BOW_CHAR = 258  # beginning of word
EOW_CHAR = 259  # end of word
PAD_CHAR = 260  # padding inside a token
N_CHARACTERS = 262  # 256 bytes + 5 specials + the padding id 0 made by the shift
BOS_TOKEN, EOS_TOKEN = '<S>', '</S>'


def _boundary_char_ids(char, max_chars):
    ids = np.full(max_chars, PAD_CHAR, dtype=np.int64)
    ids[:3] = (BOW_CHAR, char, EOW_CHAR)
    return ids + 1


def token_to_char_ids(token, max_chars=50):
    """One token -> int64 array [max_chars] of shifted char ids (never contains 0)."""
    if token == BOS_TOKEN:
        return _boundary_char_ids(BOS_CHAR, max_chars)
    if token == EOS_TOKEN:
        return _boundary_char_ids(EOS_CHAR, max_chars)
    encoded = token.encode('utf-8', 'ignore')[:max_chars - 2]
    ids = np.full(max_chars, PAD_CHAR, dtype=np.int64)
    ids[0] = BOW_CHAR
    ids[1:1 + len(encoded)] = np.frombuffer(encoded, dtype=np.uint8)
    ids[1 + len(encoded)] = EOW_CHAR
    return ids + 1


# ---- raw text -> tokens ----------------------------------------------------------------------
# The one place a raw string becomes tokens: the embedders, Elmo, the classifiers' data,
# build_vocab.py and run_predict.py all go through get_tokenizer. A model records the tokenizer of
# its training text (config.ModelConfig.tokenizer); model_tokenizer picks the one to use with it.

TOKENIZERS = ('whitespace', 'jieba', 'chars')
JIEBA_VERSION = '0.42.1'  # the [zh] extra's (pyproject.toml); zh-corpus was segmented with it

# The characters that `chars` makes tokens of their own (not U+3000, the ideographic space).
_CJK = ('\u2010-\u2027'  # the general punctuation Chinese text uses: — ‘ ’ “ ” …
        '\u2e80-\u2fdf'  # radicals
        '\u3001-\u303f'  # CJK symbols and punctuation: 、。《》「」【】
        '\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff'  # ideographs: extension A, unified, compatibility
        '\uff00-\uffef'  # halfwidth and fullwidth forms: ，！？：；（）
        '\U00020000-\U000323af')  # ideographs: extensions B to H, compatibility supplement
_CHAR_TOKEN = re.compile(f'[{_CJK}]|[^\\s{_CJK}]+')


def whitespace_tokens(text):
    """Split on whitespace, as TF-Hub ELMo's `default` signature splits its untokenized strings."""
    return text.split()


def char_tokens(text):
    """Every CJK character is a token of its own; runs of other non-whitespace characters (Latin
    words, numbers, ASCII punctuation) stay whole; whitespace separates tokens and is dropped:
    'iPhone很好用！' -> ['iPhone', '很', '好', '用', '！']. CJK characters are the ideographs
    (U+3400-4DBF, U+4E00-9FFF, U+F900-FAFF, U+20000-323AF), the radicals (U+2E80-2FDF), CJK
    symbols and punctuation (U+3001-303F: 、。《》), the fullwidth forms (U+FF00-FFEF: ，！？)
    and the dashes, quotation marks and ellipsis of General Punctuation (U+2010-2027: — “ ” …)."""
    return _CHAR_TOKEN.findall(text)


def _jieba_tokenizer():
    """jieba's accurate mode (`jieba.lcut(text)`, HMM on for unknown words), without the whitespace
    tokens it returns; imported on first use, its dictionary-loading messages silenced. It is the
    process's jieba: words added with jieba.add_word / load_userdict take part."""
    try:
        import jieba
    except ImportError:
        raise InputError(f'the jieba tokenizer needs the jieba package: pip install jieba=={JIEBA_VERSION}') from None
    jieba.setLogLevel(logging.WARNING)  # else 'Building prefix dict ...' on stderr at the first cut

    def jieba_tokens(text):
        return [token for token in jieba.lcut(text) if not token.isspace()]
    return jieba_tokens


def get_tokenizer(name):
    """A tokenizer's name (TOKENIZERS) -> a function: raw text -> list of str tokens (none empty,
    none holding whitespace). whitespace: `whitespace_tokens`; jieba: Chinese words
    (`_jieba_tokenizer`); chars: `char_tokens`."""
    if name == 'whitespace':
        return whitespace_tokens
    if name == 'chars':
        return char_tokens
    if name == 'jieba':
        return _jieba_tokenizer()
    raise InputError(f'unknown tokenizer {name!r}; expected one of {", ".join(TOKENIZERS)}')


def model_tokenizer(recorded, requested=None):
    """The tokenizer to use on raw text for a model whose training text `recorded` segmented
    (ModelConfig.tokenizer): `requested` when given, with a warning if it is another, else
    `recorded` -> its name (checked)."""
    name = requested or recorded
    get_tokenizer(name)
    if name != recorded:
        log.warning('tokenizer %r differs from %r, the tokenizer the model was trained with (its options.json); '
                    'its inputs will not be segmented as its training text was', name, recorded)
    return name


def as_token_lists(sentences, tokenizer='whitespace'):
    """A batch of sentences -> list of token lists, each a list of str.

    A sentence is a raw string (split by the named `tokenizer`, see get_tokenizer; '' gives no
    tokens) or any iterable of str tokens. The batch itself must be a list (or tuple, array...) of
    sentences: a bare string is a TypeError, since it is ambiguous (one sentence or many?), and so
    is anything else that is not a sentence (an int, bytes, a token that is not a str).
    """
    if isinstance(sentences, (str, bytes)) or not hasattr(sentences, '__iter__'):
        raise TypeError(f'expected a list of sentences (each a string or a list of tokens), got '
                        f'{_describe(sentences)}; for one sentence pass [sentence]')
    split = get_tokenizer(tokenizer)
    batch = []
    for i, sentence in enumerate(sentences):
        if isinstance(sentence, str):
            batch.append(split(sentence))
            continue
        if isinstance(sentence, bytes) or not hasattr(sentence, '__iter__'):
            raise TypeError(f'sentence {i} is {_describe(sentence)}; expected a string or a list of '
                            f'str tokens')
        tokens = list(sentence)
        for token in tokens:
            if not isinstance(token, str):
                raise TypeError(f'sentence {i} holds {_describe(token)}; expected str tokens')
        batch.append(tokens)
    return batch


def _describe(value):
    if isinstance(value, str):
        return f'a string ({value[:40]!r})'
    return f'a value of type {type(value).__name__} ({repr(value)[:40]})'


class CharMapper:
    """Token -> char ids with a cache, so repeated words are encoded once."""

    def __init__(self, max_chars=50, max_cache=1_000_000):
        self.max_chars = max_chars
        self.max_cache = max_cache
        self._cache = {}

    def token(self, token):
        ids = self._cache.get(token)
        if ids is None:
            ids = token_to_char_ids(token, self.max_chars)
            if len(self._cache) >= self.max_cache:
                self._cache.clear()  # a bound, not an LRU: refilling is cheap
            self._cache[token] = ids
        return ids

    def tokens(self, tokens):
        """list of tokens -> int64 [len(tokens), max_chars]."""
        if not tokens:
            return np.zeros((0, self.max_chars), dtype=np.int64)
        return np.stack([self.token(t) for t in tokens])

    def batch(self, sentences, add_boundaries=True):
        """Sentences (strings, split on whitespace, or token lists) -> (char ids
        [batch, time, max_chars] int64, lengths [batch] int64).

        With `add_boundaries` every sentence becomes `<S> w1 .. wn </S>` (length n + 2); rows are
        padded with all-zero tokens to the longest sentence.
        """
        sentences = as_token_lists(sentences)
        extra = 2 if add_boundaries else 0
        lengths = np.array([len(s) + extra for s in sentences], dtype=np.int64)
        ids = np.zeros((len(sentences), int(lengths.max(initial=0)), self.max_chars), dtype=np.int64)
        for row, sentence in enumerate(sentences):
            tokens = [BOS_TOKEN, *sentence, EOS_TOKEN] if add_boundaries else list(sentence)
            ids[row, :len(tokens)] = self.tokens(tokens)
        return ids, lengths


def batch_to_char_ids(sentences, max_chars=50):
    """Convenience: sentences -> (char ids [batch, time + 2, max_chars], lengths [batch])."""
    return CharMapper(max_chars).batch(sentences)


class InputMapper:
    """Tokens -> what a biLM reads: char ids for a model with chars (CharMapper), word ids for a
    model with words: its input vocabulary's id + 1, <UNK>'s for an unknown word, 0 for padding
    (bilm-tf's TokenBatcher).

    config: the model's ModelConfig (token_input, max_characters_per_token); vocab: its
    Vocabulary (word and word+char models). `InputMapper.of(bilm)` for a BiLM.
    """

    def __init__(self, config, vocab=None, max_cache=1_000_000):
        self.chars = CharMapper(config.max_characters_per_token, max_cache) if config.has_chars else None
        self.vocab = vocab if config.has_words else None
        if config.has_words and vocab is None:
            raise ValueError(f'a {config.token_input} model needs its input vocabulary')

    @classmethod
    def of(cls, bilm, max_cache=1_000_000):
        return cls(bilm.config, bilm.vocab, max_cache)

    def tokens(self, tokens):
        """list of n tokens -> (char ids int64 [n, max_chars] or None, word ids int64 [n] or None)."""
        return (None if self.chars is None else self.chars.tokens(tokens),
                None if self.vocab is None else self.vocab.encode(tokens) + 1)

    def batch(self, sentences, add_boundaries=True):
        """Sentences (strings or token lists) -> (char ids [batch, time, max_chars] or None, word ids
        [batch, time] or None, lengths [batch]), `<S>` and `</S>` added (as CharMapper.batch)."""
        sentences = as_token_lists(sentences)
        if add_boundaries:
            sentences = [[BOS_TOKEN, *s, EOS_TOKEN] for s in sentences]
        lengths = np.array([len(s) for s in sentences], dtype=np.int64)
        char_ids = None if self.chars is None else self.chars.batch(sentences, add_boundaries=False)[0]
        word_ids = None
        if self.vocab is not None:
            word_ids = np.zeros((len(sentences), int(lengths.max(initial=0))), dtype=np.int64)
            for row, sentence in enumerate(sentences):
                word_ids[row, :len(sentence)] = self.vocab.encode(sentence) + 1
        return char_ids, word_ids, lengths


# ----------------------------------------------------------------------------------------------
# Pretraining data: vocabulary, corpus files, token counts and the biLM batch stream.
#
# A corpus is one or more UTF-8 files (a glob), one sentence per line, tokens separated by
# whitespace (`str.split()` everywhere, so counting, vocabulary building and batching agree).
# Lines that are empty or only whitespace are not sentences: they are skipped and reported.


UNK_TOKEN = '<UNK>'
SPECIAL_TOKENS = (BOS_TOKEN, EOS_TOKEN, UNK_TOKEN)  # bilm-tf order: ids 0, 1, 2 when added


def tokens_to_char_ids(tokens, max_chars=50):
    """list of n tokens -> int64 [n, max_chars]; row i equals token_to_char_ids(tokens[i]).

    Vectorised (one scatter of all UTF-8 bytes) because a per-token loop takes seconds for the
    800k-word 1B Word vocabulary (BENCHMARKS.md, "Measured choices").
    """
    n = len(tokens)
    encoded = [t.encode('utf-8', 'ignore')[:max_chars - 2] for t in tokens]
    lengths = np.fromiter(map(len, encoded), dtype=np.int64, count=n)
    ids = np.full((n, max_chars), PAD_CHAR, dtype=np.int64)
    ids[:, 0] = BOW_CHAR
    starts = np.cumsum(lengths) - lengths
    rows = np.repeat(np.arange(n), lengths)
    cols = np.arange(int(lengths.sum())) - np.repeat(starts, lengths) + 1
    ids[rows, cols] = np.frombuffer(b''.join(encoded), dtype=np.uint8)
    ids[np.arange(n), lengths + 1] = EOW_CHAR
    ids += 1
    for special in (BOS_TOKEN, EOS_TOKEN):
        rows = [i for i, t in enumerate(tokens) if t == special]
        ids[rows] = token_to_char_ids(special, max_chars)
    return ids


def read_vocabulary_file(path):
    """The tokens of a vocabulary file, one per line; ValueError naming path:line for an empty
    line, a token with whitespace or a duplicate."""
    if not os.path.isfile(path):
        raise FileNotFoundError(f'{path}: vocabulary file not found')
    with open(path, 'rb') as f:
        data = f.read()
    text = decode_utf8(data, path)
    lines = text.split('\n')
    if lines[-1] == '':
        lines.pop()  # the newline that ends the last line
    tokens = [line.strip() for line in lines]
    if not tokens:
        raise InputError(f'{path}: empty vocabulary file; expected one token per line')
    # Fast C-level checks first; the line-by-line search only runs to name a bad line.
    if ' '.join(tokens).split() != tokens or len(set(tokens)) != len(tokens):
        first_line = {}
        for line_no, token in enumerate(tokens, 1):
            if not token:
                raise InputError(f'{path}:{line_no}: empty line; expected one token per line')
            if token.split() != [token]:
                raise InputError(f'{path}:{line_no}: {token!r} contains whitespace; expected one '
                                 f'token per line')
            first = first_line.setdefault(token, line_no)
            if first != line_no:
                raise InputError(f'{path}:{line_no}: duplicate token {token!r} (first on line {first})')
    return tokens


class Vocabulary:
    """Token vocabulary of a biLM: ids, the three specials, and every token's char ids.

    The file has one token per line, most frequent first. bilm-tf files start with `<S>`, `</S>`,
    `<UNK>`; plain files (without them) also load: the specials missing from the file are put
    first, in that order, and the file's tokens follow in file order (so a plain file gets ids
    0, 1, 2 for the specials). Specials that the file has keep their place.

    Attributes:
        tokens: list[str], id -> token.  size: len(tokens).  bos, eos, unk: ids of the specials.
        char_ids: int64 [size, max_chars], shifted char ids of every token (token_to_char_ids).
    """

    def __init__(self, path, max_chars=50, tokens=None):
        """tokens: the file's lines, when already read (from_tokens)."""
        self.path = path
        self.max_chars = max_chars
        file_tokens = read_vocabulary_file(path) if tokens is None else list(tokens)
        present = set(SPECIAL_TOKENS).intersection(file_tokens)
        self.tokens = [t for t in SPECIAL_TOKENS if t not in present] + file_tokens
        self._ids = {t: i for i, t in enumerate(self.tokens)}
        self.bos, self.eos, self.unk = (self._ids[t] for t in SPECIAL_TOKENS)
        self.size = len(self.tokens)
        self.char_ids = tokens_to_char_ids(self.tokens, max_chars)

    @classmethod
    def from_tokens(cls, tokens, max_chars=50, name='<tokens>'):
        """A Vocabulary of a token list, as if it were a file's lines."""
        return cls(name, max_chars, tokens)

    def __len__(self):
        return self.size

    def word_to_id(self, word):
        """Id of `word`, the <UNK> id when it is not in the vocabulary."""
        return self._ids.get(word, self.unk)

    def encode(self, words):
        """list of words -> int64 ids [len(words)] (no <S>/</S> added)."""
        if isinstance(words, str):
            raise TypeError(f'expected a list of words, got a string ({words[:40]!r}); use .split()')
        get, unk = self._ids.get, self.unk
        return np.array([get(w, unk) for w in words], dtype=np.int64)


# ---- corpus files ------------------------------------------------------------------------------

def _is_blank(text):
    return not text or text.isspace()


def _warn_skipped(path, n_skipped):
    if n_skipped:
        log.warning('%s: skipped %d empty line(s) (not sentences)', path, n_skipped)


def _iter_file_sentences(path, progress_bar=None, split=whitespace_tokens):
    """Yield the sentences (token lists, made by `split`) of one file in order; empty lines skipped
    and reported."""
    n_skipped = 0
    for _, n_bytes, text in iter_lines(path):
        if progress_bar is not None:
            progress_bar.update(n_bytes)
        if _is_blank(text):
            n_skipped += 1
            continue
        yield split(text)
    _warn_skipped(path, n_skipped)


def _progress(total_bytes, desc, enabled):
    from tqdm import tqdm
    return tqdm(total=total_bytes, unit='B', unit_scale=True, desc=desc, disable=not enabled,
                mininterval=1.0)


# ---- token counts (cached) ---------------------------------------------------------------------

COUNTS_CACHE_NAME = '.elmo-token-counts.json'
DEFAULT_CACHE_DIR = os.path.join(os.path.expanduser('~'), '.cache', 'elmo-paddle')


def _dir_is_writable(directory):
    # Mode bits too: as root os.access says yes even for a directory meant to be read-only
    # (../shared is r-x), and the cache must not land there.
    try:
        mode = os.stat(directory).st_mode
    except OSError:
        return False
    return bool(mode & 0o222) and os.access(directory, os.W_OK)


def _counts_cache_path(data_dir, cache_dir):
    if _dir_is_writable(data_dir):
        return os.path.join(data_dir, COUNTS_CACHE_NAME)
    return os.path.join(cache_dir or DEFAULT_CACHE_DIR, 'token-counts.json')


def _read_json(path):
    try:
        with open(path, encoding='utf-8') as f:
            return json.load(f)
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as e:
        log.warning('%s: unreadable token-count cache, counting again (%s)', path, e)
        return {}


def _count_file(path, bar):
    n_tokens = n_sentences = 0
    for words in _iter_file_sentences(path, bar):
        n_tokens += len(words)
        n_sentences += 1
    return n_tokens, n_sentences


def count_tokens(file_pattern, cache_dir=None, progress=True):
    """-> dict(n_tokens=..., n_sentences=..., n_files=...) over the files of a glob.

    n_tokens counts whitespace tokens (no <S>/</S>; 768,648,884 for 1B Word's training files) and
    n_sentences the non-empty lines. Each file is counted once and cached in a JSON file keyed by
    its absolute path, size and mtime: next to the data, or, when the data directory is
    read-only, in `cache_dir` (default ~/.cache/elmo-paddle).
    """
    files = list_files(file_pattern)
    caches, todo = {}, []
    total = dict(n_tokens=0, n_sentences=0, n_files=len(files))
    for path in files:
        key = os.path.abspath(path)
        stat = os.stat(key)
        cache_path = _counts_cache_path(os.path.dirname(key), cache_dir)
        entry = caches.setdefault(cache_path, _read_json(cache_path)).get(key)
        if entry and entry.get('size') == stat.st_size and entry.get('mtime_ns') == stat.st_mtime_ns:
            total['n_tokens'] += entry['n_tokens']
            total['n_sentences'] += entry['n_sentences']
        else:
            todo.append((key, stat, cache_path))
    changed = set()
    with _progress(sum(s.st_size for _, s, _ in todo), 'counting tokens', progress and todo) as bar:
        for key, stat, cache_path in todo:
            n_tokens, n_sentences = _count_file(key, bar)
            caches[cache_path][key] = dict(size=stat.st_size, mtime_ns=stat.st_mtime_ns,
                                           n_tokens=n_tokens, n_sentences=n_sentences)
            total['n_tokens'] += n_tokens
            total['n_sentences'] += n_sentences
            changed.add(cache_path)
    for cache_path in changed:
        _save_counts_cache(cache_path, caches[cache_path])
    return total


def _save_counts_cache(cache_path, entries):
    try:
        os.makedirs(os.path.dirname(cache_path), exist_ok=True)
        write_text_atomic(cache_path, json.dumps(entries, indent=1, sort_keys=True))
    except OSError as e:  # the counts are right; only the next call will be slower
        log.warning('%s: could not write the token-count cache (%s)', cache_path, e)


# ---- building a vocabulary ---------------------------------------------------------------------

def count_words(file_pattern, progress=True, tokenizer='whitespace', segmented=None):
    """Counter of the tokens over all files of a glob (streamed; progress bar by bytes).

    tokenizer: how a line becomes tokens (get_tokenizer; a corpus for pretraining is already
    segmented: whitespace). segmented: an open text file that receives every sentence counted, its
    tokens joined by single spaces, one per line (a raw corpus segmented for run_pretrain.py).
    """
    files = list_files(file_pattern)
    split = get_tokenizer(tokenizer)
    counts = collections.Counter()
    with _progress(sum(os.path.getsize(p) for p in files), 'counting words', progress) as bar:
        for path in files:
            for words in _iter_file_sentences(path, bar, split):
                counts.update(words)
                if segmented is not None:
                    segmented.write(' '.join(words) + '\n')
    return counts


def long_tokens_report(counts, max_chars=50, n_examples=5):
    """One line on the tokens the char CNN cuts, those longer than max_chars - 2 UTF-8 bytes (50 ->
    48 bytes, 16 CJK characters): how many of the tokens counted in `counts` (a Counter), their
    share, and the most frequent few."""
    limit = max_chars - 2
    cut = sorted((t for t in counts if len(t.encode('utf-8')) > limit), key=lambda t: (-counts[t], t))
    n_cut, n_total = sum(counts[t] for t in cut), sum(counts.values())
    examples = ', '.join(f'{t} ({counts[t]})' for t in cut[:n_examples])
    return (f'{n_cut} tokens ({100 * n_cut / max(n_total, 1):.3f}% of {n_total}, {len(cut)} distinct) are longer than '
            f'{limit} UTF-8 bytes, which the char CNN cuts (max_characters_per_token {max_chars})'
            + (f'; most frequent: {examples}' if cut else ''))


def build_vocabulary(counts, min_count=1, max_vocab_size=None, special_tokens=True):
    """Word counts -> vocabulary tokens: `<S>`, `</S>`, `<UNK>` (unless `special_tokens` is False),
    then the words by descending count, ties by token string; words under `min_count` dropped,
    then at most `max_vocab_size` words kept (the specials are not counted in it)."""
    if min_count < 1:
        raise InputError(f'min_count must be >= 1, got {min_count}')
    if max_vocab_size is not None and max_vocab_size < 1:
        raise InputError(f'max_vocab_size must be >= 1, got {max_vocab_size}')
    specials = list(SPECIAL_TOKENS) if special_tokens else []
    for token in specials:
        if counts.get(token):
            log.warning('the corpus holds the special token %s %d times; it keeps its fixed id',
                        token, counts[token])
    words = [w for w, c in counts.items() if c >= min_count and w not in specials]
    words.sort(key=lambda w: (-counts[w], w))
    return specials + words[:max_vocab_size]


def write_vocabulary(tokens, path):
    """One token per line, written atomically."""
    write_text_atomic(path, ''.join(f'{t}\n' for t in tokens))


# ---- the shared sentence sequence ---------------------------------------------------------------

class SentenceSource:
    """The endless sentence sequence of one rank, as token lists, read in bounded chunks.

    Pass p shuffles the files with seed + p (unless `shuffle` is False: sorted order). With at
    least `world_size` files, file i of that order belongs to rank i % world_size; with fewer,
    every rank reads every file and keeps line i (0-based, empty lines included) when
    i % world_size == rank. A file is read `chunk_lines` lines at a time and each chunk is
    shuffled (seeded by pass, file and chunk), so memory stays bounded for any file size.
    Sentences are never shuffled across chunks: corpora should come pre-shuffled (1B Word is).
    """

    def __init__(self, file_pattern, seed=0, rank=0, world_size=1, shuffle=True,
                 chunk_lines=100_000):
        if not isinstance(seed, int) or seed < 0:
            raise InputError(f'seed must be an integer >= 0, got {seed!r}')
        if world_size < 1 or not 0 <= rank < world_size:
            raise InputError(f'need 0 <= rank < world_size, got rank {rank}, world_size {world_size}')
        if chunk_lines < 1:
            raise InputError(f'chunk_lines must be >= 1, got {chunk_lines}')
        self.file_pattern = file_pattern
        self.files = list_files(file_pattern)
        self.seed, self.rank, self.world_size = seed, rank, world_size
        self.shuffle, self.chunk_lines = shuffle, chunk_lines
        self.split_lines = len(self.files) < world_size
        self._pass_cache = (None, None)
        self._set_position(dict(pass_index=0, file_index=0, chunk_byte=0, chunk_line=0,
                                chunk_pos=0, skipped=0, pass_sentences=0, reported=[]))

    # position: which chunk is being read (pass, file, first byte and line) and how far
    def _set_position(self, pos):
        self.pass_index = pos['pass_index']
        self._file_index = pos['file_index']
        self._chunk_byte, self._chunk_line = pos['chunk_byte'], pos['chunk_line']
        self._chunk_pos = pos['chunk_pos']
        self._skipped = pos['skipped']  # empty lines in the finished chunks of this file
        self._pass_sentences = pos['pass_sentences']
        self._reported = set(pos['reported'])
        self._chunk = None  # loaded on demand: (sentences in order, next byte, next line, eof, skipped)

    def state_dict(self):
        return dict(pass_index=self.pass_index, file_index=self._file_index,
                    chunk_byte=self._chunk_byte, chunk_line=self._chunk_line,
                    chunk_pos=self._chunk_pos, skipped=self._skipped,
                    pass_sentences=self._pass_sentences, reported=sorted(self._reported),
                    files=[os.path.basename(p) for p in self.files], seed=self.seed,
                    rank=self.rank, world_size=self.world_size, shuffle=self.shuffle,
                    chunk_lines=self.chunk_lines)

    def load_state_dict(self, state):
        mine = self.state_dict()
        for key in ('files', 'seed', 'rank', 'world_size', 'shuffle', 'chunk_lines'):
            if state.get(key) != mine[key]:
                raise InputError(f'stream state does not fit {self.file_pattern}: it was saved with '
                                 f'{key}={state.get(key)!r}, this stream has {mine[key]!r}')
        self._set_position(state)

    def pass_files(self, pass_index):
        """The files this rank reads in pass `pass_index`, in reading order."""
        if self._pass_cache[0] != pass_index:
            order = np.arange(len(self.files))
            if self.shuffle:
                order = np.random.default_rng(self.seed + pass_index).permutation(order)
            if not self.split_lines:
                order = order[self.rank::self.world_size]
            self._pass_cache = (pass_index, [self.files[i] for i in order])
        return self._pass_cache[1]

    def next_sentence(self):
        """The next sentence of the sequence, as a list of tokens (never empty)."""
        while True:
            if self._chunk is None:
                self._chunk = self._read_chunk()
            sentences = self._chunk[0]
            if self._chunk_pos < len(sentences):
                self._chunk_pos += 1
                self._pass_sentences += 1
                return sentences[self._chunk_pos - 1].split()
            self._next_chunk()

    def _read_chunk(self):
        path = self.pass_files(self.pass_index)[self._file_index]
        lines, n_skipped, end_byte, end_line = [], 0, self._chunk_byte, self._chunk_line
        rows = iter_lines(path, self._chunk_byte, self._chunk_line)
        for line_no, n_bytes, text in itertools.islice(rows, self.chunk_lines):
            end_byte, end_line = end_byte + n_bytes, line_no + 1
            if self.split_lines and line_no % self.world_size != self.rank:
                continue
            if _is_blank(text):
                n_skipped += 1
            else:
                lines.append(text)
        rows.close()
        eof = end_byte >= os.path.getsize(path)
        if self.shuffle:
            rng = np.random.default_rng([self.seed + self.pass_index, self.files.index(path),
                                         self._chunk_line])
            lines = [lines[i] for i in rng.permutation(len(lines))]
        return lines, end_byte, end_line, eof, n_skipped

    def _next_chunk(self):
        _, end_byte, end_line, eof, n_skipped = self._chunk
        self._skipped += n_skipped
        self._chunk, self._chunk_pos = None, 0
        if not eof:
            self._chunk_byte, self._chunk_line = end_byte, end_line
            return
        files = self.pass_files(self.pass_index)
        path = files[self._file_index]
        if path not in self._reported:
            _warn_skipped(path, self._skipped)
            self._reported.add(path)
        self._file_index, self._chunk_byte, self._chunk_line, self._skipped = self._file_index + 1, 0, 0, 0
        if self._file_index == len(files):
            if not self._pass_sentences:
                raise InputError(f'{self.file_pattern}: no sentences for rank {self.rank} of '
                                 f'{self.world_size} in pass {self.pass_index} (files: '
                                 f'{", ".join(files)})')
            self.pass_index, self._file_index, self._pass_sentences = self.pass_index + 1, 0, 0


# ---- batches -------------------------------------------------------------------------------------

class _RowSentence:
    """A sentence in a batch row: ids of `<S> w1 .. wn </S>` and of its reverse, how far the row
    has read it, and where its out-of-vocabulary words are (their char ids come from the words
    themselves). The ids are int64 `array.array`s: slicing and appending them stays in C and
    numpy takes the result without a copy, which halves the cost of a batch against lists."""
    __slots__ = ('words', 'ids', 'reverse_ids', 'oov', 'n_pairs', 'pos')

    def __init__(self, words, vocab, pos=0):
        ids = [vocab.bos, *map(vocab._ids.get, words, itertools.repeat(-1)), vocab.eos]
        self.oov = ()
        if -1 in ids:
            self.oov = [(i, words[i - 1]) for i, x in enumerate(ids) if x < 0]
            ids = [vocab.unk if x < 0 else x for x in ids]
        self.ids = array.array('q', ids)
        self.reverse_ids = array.array('q', self.ids)
        self.reverse_ids.reverse()
        self.n_pairs = len(ids) - 1  # n + 1 for n words: the final token is never an input
        self.words, self.pos = words, pos


class _RowBatcher:
    """Fills [batch, unroll] windows from per-row sentence streams, as bilm-tf's _get_batch.

    Row r keeps its sentence across batches; when only the final token is left (`</S>`
    forward, `<S>` backward) it takes the next sentence of the shared sequence. The backward
    direction reads each row's same sentence reversed, so both directions stay aligned.
    """

    def __init__(self, vocab, batch_size, unroll_steps):
        if batch_size < 1 or unroll_steps < 1:
            raise InputError(f'batch_size and unroll_steps must be >= 1, got {batch_size}, '
                             f'{unroll_steps}')
        self.vocab, self.batch_size, self.unroll_steps = vocab, batch_size, unroll_steps
        self.rows = [None] * batch_size

    def state_dict(self):
        """Each row's unfinished sentence as [tokens, next input position], or None."""
        return [None if s is None or s.pos >= s.n_pairs else [s.words, s.pos] for s in self.rows]

    def load_state_dict(self, rows):
        if len(rows) != self.batch_size:
            raise InputError(f'stream state has {len(rows)} rows, this stream has batch_size '
                             f'{self.batch_size}')
        self.rows = [None if r is None else _RowSentence(r[0], self.vocab, r[1]) for r in rows]

    def next_batch(self, next_sentence):
        """-> (batch dict, weights float32 [batch, unroll]); `next_sentence()` returns a token
        list, or None when the data is exhausted (rows then stop, with weight 0 after)."""
        B, T = self.batch_size, self.unroll_steps
        # Flat B * T ids, row after row.
        tok, nxt, rtok, rnxt = (array.array('q') for _ in range(4))
        lengths, oov_forward, oov_backward = [], [], []
        starts = np.zeros(B, dtype=bool)
        for r in range(B):
            t = 0
            while t < T:
                s = self.rows[r]
                if s is None or s.pos >= s.n_pairs:
                    words = next_sentence()
                    if words is None:
                        self.rows[r] = None
                        break
                    s = self.rows[r] = _RowSentence(words, self.vocab)
                p = s.pos
                starts[r] |= t == 0 and p == 0
                k = min(s.n_pairs - p, T - t)
                tok += s.ids[p:p + k]
                nxt += s.ids[p + 1:p + k + 1]
                rtok += s.reverse_ids[p:p + k]
                rnxt += s.reverse_ids[p + 1:p + k + 1]
                for i, word in s.oov:
                    j = s.n_pairs - i  # its position in the reversed sentence
                    if p <= i < p + k:
                        oov_forward.append((r * T + t + i - p, word))
                    if p <= j < p + k:
                        oov_backward.append((r * T + t + j - p, word))
                s.pos = p + k
                t += k
            if t < T:
                padding = array.array('q', bytes(8 * (T - t)))
                tok += padding
                nxt += padding
                rtok += padding
                rnxt += padding
            lengths.append(t)
        weights = (np.arange(T) < np.array(lengths)[:, None]).astype(np.float32)
        batch = {}
        for name, ids, oov in (('', tok, oov_forward), ('_reverse', rtok, oov_backward)):
            ids = np.frombuffer(ids, dtype=np.int64)
            batch['token_ids' + name] = ids.reshape(B, T)
            batch['char_ids' + name] = self._char_ids(ids, oov, weights).reshape(B, T, -1)
            # The biLM's word input: id + 1, 0 where the row has run out (bilm-tf's TokenBatcher layout).
            batch['word_ids' + name] = np.where(weights > 0, ids.reshape(B, T) + 1, 0)
        batch['next_token_ids'] = np.frombuffer(nxt, dtype=np.int64).reshape(B, T)
        batch['next_token_ids_reverse'] = np.frombuffer(rnxt, dtype=np.int64).reshape(B, T)
        batch['sentence_start'] = starts
        return batch, weights

    def _char_ids(self, flat_ids, oov, weights):
        """[B * T] ids -> [B * T, max_chars]; OOV words get their own chars, padding zeros."""
        chars = self.vocab.char_ids.take(flat_ids, axis=0)
        if oov:
            where, words = zip(*oov)
            chars[list(where)] = tokens_to_char_ids(words, self.vocab.max_chars)
        if not weights.all():
            chars[weights.reshape(-1) == 0] = 0
        return chars


class LMStream:
    """Endless biLM training batches from a corpus glob (bilm-tf batching, resumable).

    Each batch is a dict of numpy arrays (B = batch_size, T = unroll_steps, C = vocab.max_chars):
        token_ids [B, T] int64            inputs w_k of each row's window
        word_ids [B, T] int64             the same + 1, 0 where a row has run out (word input)
        char_ids [B, T, C] int64          their shifted char ids (OOV words keep their chars)
        next_token_ids [B, T] int64       targets w_{k+1}
        token_ids_reverse, word_ids_reverse, char_ids_reverse, next_token_ids_reverse: the same for the backward
                                          direction, which reads every sentence reversed.
        sentence_start [B] bool           the row's window begins with a new sentence
    Every sentence is `<S> w1 .. wn </S>` and gives n + 1 (input, target) pairs per direction;
    `</S>` is never a forward input and `<S>` never a backward one. `state_dict()` after a batch
    and `load_state_dict()` on a new stream continue with exactly the batches that would have
    come next. All state lives on the object: one iteration at a time.
    """

    def __init__(self, file_pattern, vocab, batch_size, unroll_steps, seed=0, rank=0, world_size=1,
                 shuffle=True, chunk_lines=100_000):
        self.source = SentenceSource(file_pattern, seed, rank, world_size, shuffle, chunk_lines)
        self._batcher = _RowBatcher(vocab, batch_size, unroll_steps)

    def __iter__(self):
        while True:
            yield self._batcher.next_batch(self.source.next_sentence)[0]

    def state_dict(self):
        """JSON-serialisable position: pass, file, chunk, position in it, and the rows."""
        return dict(version=1, source=self.source.state_dict(), rows=self._batcher.state_dict(),
                    unroll_steps=self._batcher.unroll_steps)

    def load_state_dict(self, state):
        if state.get('version') != 1:
            raise InputError(f'unknown stream state version {state.get("version")!r}')
        if state['unroll_steps'] != self._batcher.unroll_steps:
            raise InputError(f'stream state was saved with unroll_steps {state["unroll_steps"]}, '
                             f'this stream has {self._batcher.unroll_steps}')
        self.source.load_state_dict(state['source'])
        self._batcher.load_state_dict(state['rows'])


# The layout of every held-out figure (run_eval.py's defaults, run_pretrain.py's evaluation): the
# first N targets of a file depend on how its sentences are laid out in rows.
EVAL_BATCH_SIZE, EVAL_UNROLL_STEPS = 64, 20


def target_statistics(file_pattern, vocab):
    """What the targets of a corpus glob stand for -> dict(n_targets, n_characters, n_unknown).

    n_targets: every word and every sentence end, as iter_eval_batches predicts them.
    n_characters: the text's characters without the spaces between tokens, plus one per sentence
    for its line break (the sentence end), so a per-character figure does not depend on how the
    text was segmented into words. n_unknown: targets outside `vocab` (predicted as <UNK>, which a
    per-token perplexity counts as if the word had been predicted).
    """
    n_targets = n_characters = n_unknown = 0
    for path in list_files(file_pattern):
        for _, _, text in iter_lines(path):
            if _is_blank(text):
                continue
            words = whitespace_tokens(text)
            n_targets += len(words) + 1
            n_characters += sum(len(w) for w in words) + 1
            n_unknown += sum(vocab.word_to_id(w) == vocab.unk for w in words)
    return dict(n_targets=n_targets, n_characters=n_characters, n_unknown=n_unknown)


def iter_eval_batches(file_pattern, vocab, batch_size, unroll_steps):
    """One deterministic pass over a corpus glob (files sorted, no shuffle) in LMStream batches.

    Each batch also has 'weights' float32 [B, T]: 1.0 where there is a real target and 0.0 where
    a row has run out of data (ids and char ids are 0 there), so summing the weighted loss
    counts every target token of the data exactly once. Stops when every row is exhausted.
    """
    files = list_files(file_pattern)
    sentences = itertools.chain.from_iterable(_iter_file_sentences(p) for p in files)
    batcher = _RowBatcher(vocab, batch_size, unroll_steps)
    while True:
        batch, weights = batcher.next_batch(lambda: next(sentences, None))
        if not weights.any():
            return
        batch['weights'] = weights
        yield batch
