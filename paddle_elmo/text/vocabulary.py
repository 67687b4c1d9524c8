"""Vocabularies: reading one (`Vocabulary`, bilm-tf's layout with or without <S> </S> <UNK>),
counting a corpus's words and building one, most frequent first (the sampled softmax relies on
that order).
"""
import collections
import functools
import logging
import os

import numpy as np

from paddle_elmo.text.corpus import iter_corpus_sentences
from paddle_elmo.fileio import InputError, read_text, write_text_atomic
from paddle_elmo.text.token_ids import BOS_TOKEN, EOS_TOKEN, tokens_to_char_ids

log = logging.getLogger(__name__)


UNK_TOKEN = '<UNK>'


SPECIAL_TOKENS = (BOS_TOKEN, EOS_TOKEN, UNK_TOKEN)  # bilm-tf order: ids 0, 1, 2 when added


def read_vocabulary_file(path):
    """The tokens of a vocabulary file, one per line; ValueError naming path:line for an empty
    line, a token with whitespace or a duplicate."""
    if not os.path.isfile(path):
        raise FileNotFoundError(f'{path}: vocabulary file not found')
    lines = read_text(path).split('\n')
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

    @functools.cached_property
    def char_ids(self):
        """int64 [size, max_chars]: made on first use (LM batches read it; predicting and embedding,
        which build a Vocabulary at every start, do not, and are spared making it)."""
        return tokens_to_char_ids(self.tokens, self.max_chars)

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


def count_words(file_pattern, progress=True, tokenizer='whitespace', segmented=None):
    """Counter of the tokens over all files of a glob (streamed; progress bar by bytes).

    tokenizer: how a line becomes tokens (get_tokenizer; a corpus for pretraining is already
    segmented: whitespace). segmented: an open text file that receives every sentence counted, its
    tokens joined by single spaces, one per line (a raw corpus segmented for run_pretrain.py).
    """
    counts = collections.Counter()
    for words in iter_corpus_sentences(file_pattern, 'counting words', progress, tokenizer):
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
