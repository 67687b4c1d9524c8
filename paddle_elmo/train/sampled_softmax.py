"""The softmax over the vocabulary and its sampled form, as bilm-tf trains it: TensorFlow's
`sampled_softmax_loss` with the log-uniform candidate sampler (`LogUniformSampler`), unique
candidates shared by the batch, logits corrected by the log expected count, accidental hits
removed; the full softmax for evaluation. A step reads and updates only the rows it needs
(`TableRows`).
"""
import math

import numpy as np

import paddle
import paddle.nn as nn

from paddle_elmo.model import kernels
from paddle_elmo.model.kernels import take_rows
from paddle_elmo.text.corpus import iter_corpus_sentences


NOT_DRAWN = np.iinfo(np.int32).max


class LogUniformSampler:
    """Unique candidates from P(k) = log((k + 2) / (k + 1)) / log(V + 1) over frequency-ranked ids.

    Like TensorFlow's log_uniform_candidate_sampler(unique=True): draws until `n` distinct ids are
    found and reports each id's expected count 1 - (1 - P(k))^n_draws. When n >= V every id is
    taken with expected count 1, so the sampled loss becomes the exact full softmax.
    """

    def __init__(self, vocab_size, n, seed=0):
        self.vocab_size, self.n = vocab_size, n
        self.rng = np.random.default_rng(seed)
        self._log_range = math.log(vocab_size + 1)
        self._first = None  # sample's scratch: each id's first position among a call's draws
        self._log1p_neg_p = None  # expected_count's log(1 - P(k)) of every id, made by its first call

    def probability(self, ids):
        ids = np.asarray(ids, dtype=np.float64)
        return (np.log(ids + 2) - np.log(ids + 1)) / self._log_range

    def _draw(self, size):
        x = self.rng.random(size)
        x *= self._log_range
        np.exp(x, out=x)
        ids = x.astype(np.int64)
        ids -= 1
        return ids.clip(0, self.vocab_size - 1, out=ids)

    def sample(self):
        """-> (n distinct candidate ids int64, number of draws it took; None when all ids are taken).

        Draws in rounds of 2n + 1024 until n distinct ids are found; each round's new ids are found
        among its own draws only (a vocabulary-sized scratch of first positions, reset afterwards
        at the drawn ids), not again among all the draws so far."""
        if self.n >= self.vocab_size:
            return np.arange(self.vocab_size, dtype=np.int64), None
        if self._first is None:  # NOT_DRAWN: not drawn yet this call
            self._first = np.full(self.vocab_size, NOT_DRAWN, dtype=np.int32)
        first, rounds, new_ids, new_pos, found, offset = self._first, [], [], [], 0, 0
        try:
            while found < self.n:
                draws = self._draw(2 * self.n + 1024)
                rounds.append(draws)
                pos = np.arange(offset, offset + len(draws), dtype=np.int32)
                np.minimum.at(first, draws, pos)  # an id drawn in an earlier round keeps its position
                new = np.flatnonzero(first[draws] == pos)
                new_ids.append(draws[new])
                new_pos.append(pos[new])  # their positions among all the call's draws
                found += len(new)
                offset += len(draws)
        finally:
            for draws in rounds:
                first[draws] = NOT_DRAWN
        return np.concatenate(new_ids)[:self.n], int(np.concatenate(new_pos)[self.n - 1]) + 1

    def expected_count(self, ids, n_draws):
        if n_draws is None:
            return np.ones(len(ids), dtype=np.float64)
        if self._log1p_neg_p is None:  # elementwise: the same bits as made for `ids` alone
            self._log1p_neg_p = np.log1p(-self.probability(np.arange(self.vocab_size)))
        counts = np.expm1(n_draws * self._log1p_neg_p[ids])
        return np.negative(counts, out=counts)

    def state(self):
        return self.rng.bit_generator.state

    def set_state(self, state):
        self.rng.bit_generator.state = state


class TableRows:
    """The rows of one or more tables (parameters [vocab, ...] indexed alike) that a training step
    reads: ids (sorted unique int64 numpy [n]) and `values`, copies of those rows [n, ...] that are
    leaf tensors of their own, so their gradients are dense [n, ...] and can be all-reduced across
    ranks (Paddle's sparse SelectedRows gradients cannot). The step hands them to the optimizer,
    which updates those rows of the tables only, as bilm-tf's sparse IndexedSlices updates do (the
    softmax's W and b; the word embedding of word input). Rows are copied with kernels.take_rows
    (`kernels`: the model's).

    copy=False when the step's only reader reads the rows from the tables in place (the
    sampled-softmax kernel): `values` are then uninitialised [n, ...] tensors that only receive
    the rows' gradients, and `copied` is False."""

    def __init__(self, tables, ids, kernels, copy=True):
        with paddle.no_grad():
            if copy:
                index = paddle.to_tensor(ids)
                self.values = [take_rows(table, index, kernels) for table in tables]
            else:
                self.values = [paddle.empty([len(ids), *table.shape[1:]], dtype=table.dtype) for table in tables]
        for value in self.values:
            value.stop_gradient = False
        self.tables, self.ids, self.kernels, self.copied = tables, ids, kernels, copy
        self._row_of = None  # each table row's row in `values`, made by the first positions()

    def positions(self, ids):
        """ids (numpy, all among self.ids; others get row 0) -> their rows in `values` (int64 numpy).

        A lookup in a table over the vocabulary rather than a binary search in self.ids: a step asks
        for thousands of candidates' rows, in draw order."""
        if self._row_of is None:
            self._row_of = np.zeros(self.tables[0].shape[0], dtype=np.int64)
            self._row_of[self.ids] = np.arange(len(self.ids))
        return self._row_of[ids]


class Softmax(nn.Layer):
    """W [vocab, projection_dim] and b [vocab, 1] over the vocabulary, shared by both directions.

    A training step works on the rows it needs only (`select_rows` -> TableRows); evaluation on
    all of them (`full_losses`).
    """

    def __init__(self, vocab_size, dim, kernels, weights=None):
        """weights: None for a new softmax (W random, b zero), or (W [vocab, dim], b [vocab]) arrays it
        starts from (a trained one: no random draw of a table that they would replace)."""
        super().__init__()
        self.vocab_size, self.kernels = vocab_size, kernels
        start = nn.initializer.Normal(0.0, 1.0 / math.sqrt(dim)) if weights is None else nn.initializer.Constant(0.0)
        self.W = self.create_parameter([vocab_size, dim], default_initializer=start)
        self.b = self.create_parameter([vocab_size, 1], is_bias=True,
                                       default_initializer=nn.initializer.Constant(0.0))
        if weights is not None:
            with paddle.no_grad():
                self.W.set_value(np.asarray(weights[0], dtype=np.float32))
                self.b.set_value(np.asarray(weights[1], dtype=np.float32).reshape(-1, 1))

    def select_rows(self, ids):
        """ids: sorted unique int64 numpy array of the rows a step reads -> TableRows of W and b, not
        copied where the sampled-softmax kernel runs (it reads the rows from W and b in place)."""
        return TableRows([self.W, self.b], ids, self.kernels, copy=self.kernels.for_tensor(self.W) is None)

    def sampled_loss(self, rows, h, targets, candidates, log_q_true, log_q_cand):
        """Mean sampled-softmax loss over tokens.

        rows: the softmax's TableRows of this step (they hold every target and candidate); h: [n, dim];
        targets: int64 numpy [n]; candidates: distinct int64 numpy [n_candidates] (shared by the
        batch); log_q_*: log expected counts (numpy) subtracted from the logits.
        An accidental hit (a row's target among the candidates) is not a negative: as its logit
        equals the true logit, the row simply takes that candidate column as its label and drops
        its separate true column.
        """
        w, b = rows.values
        true_pos, cand_pos = rows.positions(targets), rows.positions(candidates)
        # labels from the rows, one to one with the ids: a lookup over the step's rows, not the vocabulary
        tables = None if rows.copied else (self.W, self.b, rows.ids)
        return kernels.sampled_softmax(h, w, b, true_pos, cand_pos, log_q_true, log_q_cand,
                                       candidate_labels(true_pos, cand_pos), self.kernels, tables).mean()

    def full_losses(self, h, targets, max_logits=2 ** 25):
        """Per-token full-softmax losses [n]; h: [n, dim], targets: int64 numpy [n].

        The [rows, vocab] logits are made a block of rows at a time (at most `max_logits` floats, 128
        MB) and go through the fused cross-entropy kernel with every word as a candidate: one pass
        over the logits instead of the five elementwise ops of a logsumexp.
        """
        rows = max(1, max_logits // self.vocab_size)
        bias = self.b.squeeze(-1)
        losses = []
        for start in range(0, h.shape[0], rows):
            part, t = h[start:start + rows], targets[start:start + rows]
            logits = paddle.matmul(part, self.W, transpose_y=True)  # [rows, vocab]
            losses.append(kernels.sampled_softmax_losses(paddle.zeros([part.shape[0]]), logits, bias, t + 1,
                                                         self.kernels))
        return paddle.concat(losses) if len(losses) > 1 else losses[0]


# Enough tokens to rank a 100k vocabulary's frequent words; the rest get the smoothed floor. A
# cap, so that 1B Word (768M tokens) is not read whole before its first step.
PRIOR_MAX_TOKENS = 20_000_000


def unigram_log_prior(vocab, file_pattern, max_tokens=PRIOR_MAX_TOKENS, progress=True):
    """Each vocabulary row's log share of the training targets, counted over the first `max_tokens`
    tokens of the files -> float32 numpy [vocab.size], add-one smoothed.

    A softmax whose bias starts here predicts the unigram distribution from its first step, instead
    of spending its first few hundred Adam steps (each moves a bias by at most about the learning
    rate) learning that `the` is 10^5 times more likely than a rare word. Targets are counted as
    the stream makes them: every word once per direction, `</S>` (forward) and `<S>` (backward)
    once per sentence, words outside the vocabulary as `<UNK>`.
    """
    counts, chunk, n_sentences = np.zeros(vocab.size, dtype=np.int64), [], 0
    for words in _first_sentences(file_pattern, max_tokens, progress):
        chunk.append(vocab.encode(words))
        n_sentences += 1
        if len(chunk) == 65536:  # bounded memory, whatever the corpus
            counts += np.bincount(np.concatenate(chunk), minlength=vocab.size)
            chunk = []
    if chunk:
        counts += np.bincount(np.concatenate(chunk), minlength=vocab.size)
    counts = 2 * counts  # each word is a target once per direction
    counts[vocab.bos] += n_sentences
    counts[vocab.eos] += n_sentences
    smoothed = counts + 1.0
    return np.log(smoothed / smoothed.sum()).astype(np.float32)


def _first_sentences(file_pattern, max_tokens, progress):
    """The sentences (token lists) of the files in order, until `max_tokens` tokens are read."""
    n_tokens = 0
    for words in iter_corpus_sentences(file_pattern, 'counting targets', progress):
        yield words
        n_tokens += len(words)
        if n_tokens >= max_tokens:
            return


def candidate_labels(targets, candidates):
    """For each target: 1 + its column among the distinct candidates, or 0 (the true column) when
    it is not among them."""
    column = np.zeros(max(int(candidates.max(initial=0)), int(targets.max(initial=0))) + 1, dtype=np.int64)
    column[candidates] = np.arange(1, len(candidates) + 1)  # an O(n) lookup: no sort of the candidates
    return column[targets]


def sorted_union(arrays, size):
    """The distinct values of int arrays of values in [0, size), sorted (np.unique of their
    concatenation, by marking instead of sorting)."""
    seen = np.zeros(size, dtype=bool)
    for a in arrays:
        seen[a] = True
    return np.flatnonzero(seen)
