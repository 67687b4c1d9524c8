"""Tokens to the ids a biLM reads: ELMo's character ids (as bilm-tf and AllenNLP's ELMoCharacterMapper)
and, for word input, the input vocabulary's ids (`InputMapper`, bilm-tf's TokenBatcher), a batch of
them as one value (`TokenInput`: what BiLM, Elmo and an export's InferenceEmbedder take). Which ids a
model reads is its `config.input_mode` (token_modes.py).

A token's chars are its UTF-8 bytes cut to `max_chars - 2`, wrapped as [BOW, bytes..., EOW, PAD, ...]
to exactly `max_chars` ids, then every id is shifted by +1 so that 0 means "no token" (padding).
"""
import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from paddle_elmo.text.tokenizers import as_token_lists


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


class CharMapper:
    """Token -> char ids with a cache, so repeated words are encoded once. encode: token -> int64
    [max_chars] (token_to_char_ids, ELMo's byte ids, by default; dictionary_ids.Lexicon gives
    ELMoForManyLangs' Unicode ones)."""

    def __init__(self, max_chars=50, max_cache=1_000_000, encode=None):
        self.max_chars = max_chars
        self.max_cache = max_cache
        self._encode = encode or (lambda token: token_to_char_ids(token, max_chars))
        self._cache = {}

    def token(self, token):
        ids = self._cache.get(token)
        if ids is None:
            ids = self._encode(token)
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


@dataclass
class TokenInput:
    """One batch as a biLM reads it, with <S> and </S>: char_ids int64 [batch, time, max_chars]
    (models with chars; 0 = padding token), word_ids int64 [batch, time] (models with words:
    vocabulary id + 1, 0 = padding), lengths int64 [batch] (real tokens per row; padding is at the
    end). Numpy arrays or tensors; the ids a model does not read are None (its
    config.input_mode.reads names the ones it does). InputMapper.batch makes it; BiLM, Elmo,
    InferenceEmbedder.run take it whole, and `char_ids, word_ids, lengths = inputs` unpacks it."""
    char_ids: Any = None
    word_ids: Any = None
    lengths: Any = None

    def __iter__(self):
        return iter((self.char_ids, self.word_ids, self.lengths))

    @classmethod
    def of(cls, char_ids=None, word_ids=None, lengths=None):
        """A TokenInput passed as the first argument (with `lengths` when given), or one made of the
        three: what a forward that takes either says first."""
        if isinstance(char_ids, cls):
            return char_ids if lengths is None else dataclasses.replace(char_ids, lengths=lengths)
        return cls(char_ids, word_ids, lengths)

    def ids(self, names):
        """The ids named (config.input_mode.reads: the export's inputs), in that order."""
        return tuple(getattr(self, name) for name in names)


class InputMapper:
    """Tokens -> what a biLM reads: char ids for a model with chars (CharMapper), word ids for a
    model with words: its input vocabulary's id + 1, <UNK>'s for an unknown word, 0 for padding
    (bilm-tf's TokenBatcher).

    config: the model's ModelConfig (token_input, max_characters_per_token); vocab: its
    Vocabulary (word and word+char models). `InputMapper.of(bilm)` for a BiLM.
    """

    def __init__(self, config, vocab=None, max_cache=1_000_000):
        self.chars = config.input_mode.char_mapper(config, vocab, max_cache) if config.has_chars else None
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
        """Sentences (strings or token lists) -> TokenInput (char ids [batch, time, max_chars] or
        None, word ids [batch, time] or None, lengths [batch]), `<S>` and `</S>` added (as CharMapper.batch)."""
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
        return TokenInput(char_ids, word_ids, lengths)


def tokens_to_char_ids(tokens, max_chars=50):
    """list of n tokens -> int64 [n, max_chars]; row i equals token_to_char_ids(tokens[i]).

    Vectorised (one scatter of all UTF-8 bytes) because a per-token loop is slow for a vocabulary
    the size of 1B Word's (800k words).
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
