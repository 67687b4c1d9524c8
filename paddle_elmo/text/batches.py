"""The language model's batches: bilm-tf's `[batch, unroll_steps]` windows of a corpus for both
directions (`LMStream`, resumable, split among ranks) and the held-out evaluation batches.
"""
import array
import functools
import itertools
import os

import numpy as np

from paddle_elmo.text.corpus import is_blank, iter_file_sentences, warn_skipped
from paddle_elmo.fileio import InputError, list_files
from paddle_elmo.text.encodings import iter_text_lines
from paddle_elmo.text.token_ids import tokens_to_char_ids
from paddle_elmo.text.tokenizers import whitespace_tokens


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
        rows = iter_text_lines(path, 'whitespace', self._chunk_byte, self._chunk_line)
        for line_no, n_bytes, text in itertools.islice(rows, self.chunk_lines):
            end_byte, end_line = end_byte + n_bytes, line_no + 1
            if self.split_lines and line_no % self.world_size != self.rank:
                continue
            if is_blank(text):
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
            warn_skipped(path, self._skipped)
            self._reported.add(path)
        self._file_index, self._chunk_byte, self._chunk_line, self._skipped = self._file_index + 1, 0, 0, 0
        if self._file_index == len(files):
            if not self._pass_sentences:
                raise InputError(f'{self.file_pattern}: no sentences for rank {self.rank} of '
                                 f'{self.world_size} in pass {self.pass_index} (files: '
                                 f'{", ".join(files)})')
            self.pass_index, self._file_index, self._pass_sentences = self.pass_index + 1, 0, 0


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


class _ModelInput:
    """The ids the biLM reads at the batch's positions, from their vocabulary ids (and the words of
    the positions outside the vocabulary) -> (char ids [n, max_chars], word ids [n]), 0 at padding.

    mapper None: the vocabulary's own ids (ELMo's byte ids of its tokens, `vocab.char_ids`; word id =
    vocabulary id + 1, bilm-tf's token mode). Else the model's token_ids.InputMapper (InputMapper.of(bilm),
    what embedding maps tokens through), for a mode whose ids come from its own dictionaries (an
    ELMoForManyLangs model's char.dic / word.dic): its ids of every vocabulary token, made on first use.
    The vocabulary stays the softmax's: the targets are its ids either way.
    """

    def __init__(self, vocab, mapper=None):
        self.vocab, self.mapper = vocab, mapper

    @functools.cached_property
    def _tables(self):
        """(char ids [size, max_chars], word ids [size] or None: vocabulary id + 1) of every vocabulary token."""
        if self.mapper is None:
            return self.vocab.char_ids, None
        return self.mapper.tokens(self.vocab.tokens)

    def _of_words(self, words):
        if self.mapper is None:
            return tokens_to_char_ids(words, self.vocab.max_chars), None
        return self.mapper.tokens(words)

    def ids(self, flat_ids, oov, weights):
        """flat_ids: [n] vocabulary ids; oov: [(position, word)] of the words outside the vocabulary
        (they keep their own ids); weights: [n] 0 at padding."""
        char_table, word_table = self._tables
        chars = char_table.take(flat_ids, axis=0)
        words = flat_ids + 1 if word_table is None else word_table.take(flat_ids)
        if oov:
            where, tokens = zip(*oov)
            own_chars, own_words = self._of_words(list(tokens))
            chars[list(where)] = own_chars
            if word_table is not None:
                words[list(where)] = own_words
        padding = weights.reshape(-1) == 0
        if padding.any():
            chars[padding] = 0
            words[padding] = 0
        return chars, words


class _RowBatcher:
    """Fills [batch, unroll] windows from per-row sentence streams, as bilm-tf's _get_batch.

    Row r keeps its sentence across batches; when only the final token is left (`</S>`
    forward, `<S>` backward) it takes the next sentence of the shared sequence. The backward
    direction reads each row's same sentence reversed, so both directions stay aligned.
    """

    def __init__(self, vocab, batch_size, unroll_steps, mapper=None):
        if batch_size < 1 or unroll_steps < 1:
            raise InputError(f'batch_size and unroll_steps must be >= 1, got {batch_size}, '
                             f'{unroll_steps}')
        self.vocab, self.batch_size, self.unroll_steps = vocab, batch_size, unroll_steps
        self.rows = [None] * batch_size
        self.model_input = _ModelInput(vocab, mapper)

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
            char_ids, word_ids = self.model_input.ids(ids, oov, weights)
            batch['char_ids' + name] = char_ids.reshape(B, T, -1)
            batch['word_ids' + name] = word_ids.reshape(B, T)
        batch['next_token_ids'] = np.frombuffer(nxt, dtype=np.int64).reshape(B, T)
        batch['next_token_ids_reverse'] = np.frombuffer(rnxt, dtype=np.int64).reshape(B, T)
        batch['sentence_start'] = starts
        return batch, weights


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

    mapper: the model's InputMapper when its input ids are not the vocabulary's own (an
    ELMoForManyLangs model's: `LanguageModel.input_mapper`); word_ids and char_ids are then its ids of
    the same tokens (None: as above). token_ids and the targets are the vocabulary's ids either way.
    """

    def __init__(self, file_pattern, vocab, batch_size, unroll_steps, seed=0, rank=0, world_size=1,
                 shuffle=True, chunk_lines=100_000, mapper=None):
        self.source = SentenceSource(file_pattern, seed, rank, world_size, shuffle, chunk_lines)
        self._batcher = _RowBatcher(vocab, batch_size, unroll_steps, mapper)

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
        for _, _, text in iter_text_lines(path):
            if is_blank(text):
                continue
            words = whitespace_tokens(text)
            n_targets += len(words) + 1
            n_characters += sum(len(w) for w in words) + 1
            n_unknown += sum(vocab.word_to_id(w) == vocab.unk for w in words)
    return dict(n_targets=n_targets, n_characters=n_characters, n_unknown=n_unknown)


def iter_eval_batches(file_pattern, vocab, batch_size, unroll_steps, mapper=None):
    """One deterministic pass over a corpus glob (files sorted, no shuffle) in LMStream batches.

    Each batch also has 'weights' float32 [B, T]: 1.0 where there is a real target and 0.0 where
    a row has run out of data (ids and char ids are 0 there), so summing the weighted loss
    counts every target token of the data exactly once. Stops when every row is exhausted.
    mapper: LMStream's.
    """
    files = list_files(file_pattern)
    sentences = itertools.chain.from_iterable(iter_file_sentences(p) for p in files)
    batcher = _RowBatcher(vocab, batch_size, unroll_steps, mapper)
    while True:
        batch, weights = batcher.next_batch(lambda: next(sentences, None))
        if not weights.any():
            return
        batch['weights'] = weights
        yield batch
