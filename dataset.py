"""Text to ids: ELMo character ids of tokens and sentences.

Characters follow the reference ELMo (allenai/bilm-tf, AllenNLP's ELMoCharacterMapper): a token is
its UTF-8 bytes cut to `max_chars - 2`, wrapped as [BOW, bytes..., EOW, PAD, ...] to exactly
`max_chars` ids, then every id is shifted by +1 so that 0 means "no token" (padding).
"""
import numpy as np

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


def check_sentences(sentences):
    """Raise TypeError unless `sentences` is a list of token lists (a common slip: passing strings)."""
    if isinstance(sentences, str):
        raise TypeError('expected a list of sentences (each a list of tokens), got a string')
    for i, sentence in enumerate(sentences):
        if isinstance(sentence, str):
            raise TypeError(f'sentence {i} is a string ({sentence[:40]!r}); expected a list of tokens, '
                            f'e.g. sentence.split()')
        for token in sentence:
            if not isinstance(token, str):
                raise TypeError(f'sentence {i} holds a {type(token).__name__} ({token!r}); '
                                f'expected str tokens')


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
        """Sentences -> (char ids [batch, time, max_chars] int64, lengths [batch] int64).

        With `add_boundaries` every sentence becomes `<S> w1 .. wn </S>` (length n + 2); rows are
        padded with all-zero tokens to the longest sentence.
        """
        check_sentences(sentences)
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
