"""Tokens to ids through dictionaries, as ELMoForManyLangs (EFML) makes them: its `char.dic` and
`word.dic` (`token<TAB>id` lines) read as EFML reads them (`read_dictionary`), and a `Lexicon` of the
two that gives a token's Unicode-character ids and its word id (the token modes `dict-char` and
`dict-word+char` of token_modes.py read them; token_ids.py holds the byte-level ids beside these).

A token's chars, before the +1 shift that makes 0 mean "no token" (as the byte-level ids):
[A, c1, ..., cn, B, PAD, ...] to exactly max_chars ids, where c_k is the id of the k-th Unicode
character (`<oov>`'s when the dictionary lacks it), the token first cut to max_chars - 2 characters,
and A, B are the ids of `<eow>` and `<bow>` in that order: EFML looks up its begin and end marks under
each other's names, and a model it trained learned them so. `<bos>` / `<eos>` (our `<S>` / `</S>`)
are [A, id of <bos> / <eos>, B, PAD, ...]. A word's id is that of the cut token (`<oov>`'s when
absent); `<S>` / `</S>` take the ids of `<bos>` / `<eos>`.
"""
import os

import numpy as np

from paddle_elmo.fileio import InputError, read_text, write_text_atomic
from paddle_elmo.text.token_ids import BOS_TOKEN, EOS_TOKEN, CharMapper

CHAR_DIC, WORD_DIC = 'char.dic', 'word.dic'  # beside an EFML model's weights, and ours exported from one
OOV, PAD, BOS, EOS, BOW, EOW = '<oov>', '<pad>', '<bos>', '<eos>', '<bow>', '<eow>'
ONE_FIELD_TOKEN = '\u3000'  # EFML's reading of a line with one field: its token was a stripped full-width space
BOUNDARIES = {BOS_TOKEN: BOS, EOS_TOKEN: EOS, BOS: BOS, EOS: EOS}


def read_dictionary(path, required=(OOV, PAD)):
    """An EFML .dic file -> {token: id}, read as EFML reads it: each line stripped of surrounding
    whitespace and split on tabs; a line left with one field is U+3000's (a full-width space, which
    the strip removed); a later line of the same token wins. InputError naming path:line for a line
    of more than two fields or an id that is no integer, and naming the file for a missing entry of
    `required` or ids that do not fit in a table of one row per entry."""
    ids = {}
    for line_no, line in enumerate(read_text(path).splitlines(), 1):
        fields = line.strip().split('\t')
        if fields == ['']:
            continue
        if len(fields) == 1:
            fields.insert(0, ONE_FIELD_TOKEN)
        if len(fields) != 2 or not fields[1].strip().lstrip('-').isdigit():
            raise InputError(f'{path}:{line_no}: expected "token<TAB>id", got {line!r}')
        ids[fields[0]] = int(fields[1])
    missing = [token for token in required if token not in ids]
    if missing:
        raise InputError(f'{path}: no entry for {", ".join(missing)} (an ELMoForManyLangs dictionary has them)')
    if min(ids.values()) < 0 or max(ids.values()) >= len(ids):
        raise InputError(f'{path}: ids must lie in [0, {len(ids)}) (one embedding row per entry), got '
                         f'{min(ids.values())}..{max(ids.values())}')
    return ids


class Lexicon:
    """An EFML model's dictionaries as a biLM's input vocabulary: the word side quacks like
    vocabulary.Vocabulary (`size`, `tokens`, `unk`, `encode`) for a model with words; `token_char_ids`
    gives the chars (`char_mapper`: a CharMapper of them).

    chars: {char: id} (char.dic); words: {word: id} (word.dic) or None for a characters-only model;
    max_chars: max_characters_per_token; path: what messages call it (the model directory).
    """

    def __init__(self, chars, words=None, max_chars=50, path='<dictionaries>'):
        self.path, self.max_chars, self.chars, self.words = path, max_chars, chars, words
        for mark in (BOS, EOS, BOW, EOW):
            if mark not in chars:
                raise InputError(f'{path}: char.dic has no entry for {mark}')
        if words is not None:
            for mark in (BOS, EOS):
                if mark not in words:
                    raise InputError(f'{path}: word.dic has no entry for {mark}')
        self.size = len(words) if words is not None else 0
        self.tokens = [''] * self.size  # id -> word ('' for a row no word names: two words on one id)
        for word, i in (words or {}).items():
            self.tokens[i] = word
        self.unk = words[OOV] if words is not None else None
        self.char_rows = len(chars) + 1  # the char embedding's rows: row 0 is "no token"
        self.pad_id = chars[PAD] + 1  # the shifted id of the padding inside a token
        self._begin, self._end, self._oov = chars[EOW] + 1, chars[BOW] + 1, chars[OOV] + 1  # EFML's swap

    def cut(self, token):
        """The token as EFML reads it: a boundary's name, else cut to max_chars - 2 characters."""
        return BOUNDARIES.get(token) or token[:self.max_chars - 2]

    def encode(self, words):
        """list of words -> int64 word ids [len(words)] (<oov>'s for an unknown one)."""
        if isinstance(words, str):
            raise TypeError(f'expected a list of words, got a string ({words[:40]!r}); use .split()')
        get, unk = self.words.get, self.unk
        return np.array([get(self.cut(w), unk) for w in words], dtype=np.int64)

    def word_to_id(self, word):
        return self.words.get(self.cut(word), self.unk)

    def token_char_ids(self, token):
        """One token -> int64 [max_chars] shifted char ids (never 0)."""
        ids = np.full(self.max_chars, self.pad_id, dtype=np.int64)
        cut = self.cut(token)
        if token in BOUNDARIES:
            chars = [self.chars[cut] + 1]
        else:
            chars = [self.chars[c] + 1 if c in self.chars else self._oov for c in cut]
        ids[0], ids[1:1 + len(chars)], ids[1 + len(chars)] = self._begin, chars, self._end
        return ids

    def char_mapper(self, max_cache=1_000_000):
        """A token_ids.CharMapper giving these char ids (its cache, its batches)."""
        return CharMapper(self.max_chars, max_cache, encode=self.token_char_ids)

    @classmethod
    def read(cls, directory, max_chars, has_words):
        """The dictionaries of a model directory: char.dic, and word.dic when the model has words."""
        chars = read_dictionary(os.path.join(directory, CHAR_DIC))
        words = read_dictionary(os.path.join(directory, WORD_DIC), (OOV, PAD, BOS, EOS)) if has_words else None
        return cls(chars, words, max_chars, directory)

    def write(self, directory):
        """DIR/char.dic (and DIR/word.dic with words) as EFML writes them, which `read` gives back."""
        for name, ids in ((CHAR_DIC, self.chars), (WORD_DIC, self.words)):
            if ids is not None:
                lines = ''.join(f'{token}\t{i}\n' for token, i in sorted(ids.items(), key=lambda item: item[1]))
                write_text_atomic(os.path.join(directory, name), lines)
