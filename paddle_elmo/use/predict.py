"""What the language model itself says: the two modes of tensorflow/models' `lm_1b` release that
perplexity and embeddings do not cover.

- `Predictor`: the forward LM's distribution of the next word after a prefix, or the backward
  LM's distribution of the word before a suffix (top-k, log-probabilities), and sampled
  continuations (lm_1b's `sample` mode).
- `dump_embeddings`: the softmax embeddings and bias and the char-CNN embeddings of every
  vocabulary word, as .npy files (lm_1b's `dump_emb` mode).

Context: as in training and `run_eval.py`, the forward LM reads `<S> w1 .. wn` from a zero state and
predicts w(n+1); the backward LM reads the sentence reversed, `</S> wn .. w1`, and predicts w0. A
context word outside the vocabulary is still read by its characters (the input is the char CNN);
only predicted words come from the vocabulary, so a log-probability here is exactly the per-token
loss `lm.evaluate` counts for that word in that context (tested).
"""
import os

import numpy as np

import paddle

from paddle_elmo.runtime import inference_mode
from paddle_elmo.text.token_ids import BOS_TOKEN, EOS_TOKEN, InputMapper
from paddle_elmo.text.tokenizers import as_token_lists, model_tokenizer
from paddle_elmo.use.embedder import token_embeddings
from paddle_elmo.fileio import InputError, atomic_path, make_directory, write_text_atomic
from paddle_elmo.use.languages import warn_if_mostly_unknown, warning_subject

DIRECTIONS = ('forward', 'backward')
# Logits computed at once, at most (rows x vocabulary floats): 64 MB, whatever the vocabulary.
MAX_LOGITS = 2 ** 24


def check_direction(direction):
    if direction not in DIRECTIONS:
        raise InputError(f'direction must be "forward" or "backward", got {direction!r}')
    return direction


class Predictor:
    """Next-word (forward) and previous-word (backward) distributions of a `lm.LanguageModel`.

    model: a LanguageModel (`lm.load_language_model`), whose softmax rows are `vocab`'s tokens.
    vocab: the `vocabulary.Vocabulary` it was trained with.
    A context is a raw string (split by `tokenizer`, by default the model's, see
    tokenizers.model_tokenizer) or a list of tokens; '' is the sentence boundary alone (forward: the
    first word of a sentence; backward: its last word).
    Which words can be predicted: every vocabulary word, `</S>` (forward: the sentence ends) and
    `<S>` (backward: the sentence starts) included, and `<UNK>` unless `exclude_unk`. The boundary a
    direction reads first (`<S>` forward, `</S>` backward) is never one of its targets in training
    and is left out. Probabilities are the model's over the whole vocabulary, not renormalised
    after leaving words out, so they match `run_eval.py`'s losses.
    """

    def __init__(self, model, vocab, tokenizer=None):
        if model.vocab_size != vocab.size:
            raise InputError(f'{vocab.path}: the vocabulary has {vocab.size} tokens but the softmax has '
                             f'{model.vocab_size} rows (use the vocabulary the model was trained with)')
        self.model, self.vocab = model, vocab
        self.tokenizer = model_tokenizer(model.bilm.config.tokenizer, tokenizer)
        self.mapper = InputMapper.of(model.bilm)

    # ---- the LSTM and the softmax --------------------------------------------------------------
    def _start(self, direction):
        return BOS_TOKEN if direction == 'forward' else EOS_TOKEN

    def _stop(self, direction):
        return self.vocab.eos if direction == 'forward' else self.vocab.bos

    def _excluded(self, direction, exclude_unk):
        ids = [self.vocab.bos if direction == 'forward' else self.vocab.eos]
        return ids + [self.vocab.unk] if exclude_unk else ids

    def context_tokens(self, context, direction):
        """The tokens the `direction` LM reads: `<S> w1 .. wn` or `</S> wn .. w1`."""
        check_direction(direction)
        words = as_token_lists([context], self.tokenizer, about=warning_subject(self.mapper.vocab, self.tokenizer))[0]
        warn_if_mostly_unknown(self.mapper.vocab, [words], self.tokenizer)
        return [self._start(direction)] + (words if direction == 'forward' else words[::-1])

    def _read(self, direction, tokens, states=None):
        """The `direction` stack reads `tokens` (lists of equal length, one per row) from `states`
        (None: zeros) -> (top layer at the last position [rows, P], final states).

        The model's own carried state (LanguageModel is stateful, for evaluation) is not touched.
        """
        bilm = self.model.bilm
        stack = bilm.forward_stack if direction == 'forward' else bilm.backward_stack
        rows, time = len(tokens), len(tokens[0])
        if states is None:
            states = [(paddle.zeros([rows, stack.projection_dim]), paddle.zeros([rows, stack.dim]))
                      for _ in stack.layers]
        char_ids, word_ids = self.mapper.tokens([t for row in tokens for t in row])
        char_ids = None if char_ids is None else char_ids.reshape(rows, time, -1)
        word_ids = None if word_ids is None else word_ids.reshape(rows, time)
        with inference_mode(bilm, bilm.stateful):
            outputs, finals = stack(bilm.token_embedding(char_ids, word_ids), np.full(time, rows), states)
        return outputs[-1][:, -1], finals

    def _log_softmax(self, h, temperature=1.0):
        """h [rows, P] -> float64 numpy [rows, vocab] of log p(word), a block of rows at a time. The
        logits are Paddle's float32 product, as in training; the normalisation is numpy's, in
        float64: Paddle's CPU log_softmax is slow over a vocabulary-long row, numpy's is not."""
        softmax = self.model.softmax
        block = max(1, MAX_LOGITS // self.vocab.size)
        parts = []
        with paddle.no_grad():
            for start in range(0, h.shape[0], block):
                logits = paddle.matmul(h[start:start + block], softmax.W, transpose_y=True) + softmax.b.squeeze(-1)
                parts.append(log_softmax(logits.numpy().astype(np.float64) / temperature))
        return np.concatenate(parts)

    # ---- what users call -----------------------------------------------------------------------
    def log_probs(self, context, direction='forward'):
        """float64 [vocab]: log p(word | context) for every vocabulary word (the model's softmax)."""
        h, _ = self._read(direction, [self.context_tokens(context, direction)])
        return self._log_softmax(h)[0]

    def top(self, context, k=10, direction='forward', exclude_unk=False):
        """The k most likely next (forward) or previous (backward) words -> [(word, prob), ...],
        most likely first."""
        if k < 1:
            raise InputError(f'top_k must be >= 1, got {k}')
        log_p = self.log_probs(context, direction)
        log_p[self._excluded(direction, exclude_unk)] = -np.inf
        k = min(k, int(np.isfinite(log_p).sum()))
        best = np.argpartition(-log_p, k - 1)[:k]
        best = best[np.argsort(-log_p[best], kind='stable')]
        return [(self.vocab.tokens[i], float(np.exp(log_p[i]))) for i in best]

    def sample(self, context, n=1, temperature=1.0, max_words=30, seed=0, direction='forward',
               exclude_unk=False):
        """n continuations sampled word by word from the softmax at `temperature` -> list of n
        word lists (forward: the words after the prefix; backward: the words before the suffix, in
        reading order). A continuation ends at the sentence boundary (`</S>` forward, `<S>`
        backward; not included) or after `max_words`. Each sampled word is fed back and the state
        carried, so a step costs one LSTM step. `seed` makes the result repeatable.
        """
        if n < 1 or max_words < 1:
            raise InputError(f'need n >= 1 and max_words >= 1, got n={n}, max_words={max_words}')
        if not temperature > 0:
            raise InputError(f'temperature must be > 0, got {temperature}')
        rng = np.random.default_rng(seed)
        excluded, stop = self._excluded(direction, exclude_unk), self._stop(direction)
        h, states = self._read(direction, [self.context_tokens(context, direction)])
        h = h.tile([n, 1])
        states = [(s.tile([n, 1]), c.tile([n, 1])) for s, c in states]
        words, done = [[] for _ in range(n)], np.zeros(n, dtype=bool)
        for _ in range(max_words):
            probs = np.exp(self._log_softmax(h, temperature))
            probs[:, excluded] = 0.0
            cumulative = np.cumsum(probs, axis=1)
            # Inverse CDF, as lm_1b samples: the first word whose cumulative mass exceeds u * total.
            u = rng.random(n) * cumulative[:, -1]
            chosen = [min(int(np.searchsorted(row, x, side='right')), self.vocab.size - 1)
                      for row, x in zip(cumulative, u)]
            for row, word_id in enumerate(chosen):
                if not done[row]:
                    if word_id == stop:
                        done[row] = True
                    else:
                        words[row].append(self.vocab.tokens[word_id])
            if done.all():
                break
            h, states = self._read(direction, [[self.vocab.tokens[i]] for i in chosen], states)
        return [w if direction == 'forward' else w[::-1] for w in words]

    def sample_text(self, context, words, direction='forward'):
        """The context and sampled words as one whitespace-joined sentence, in reading order."""
        given = as_token_lists([context], self.tokenizer, about=warning_subject(self.mapper.vocab, self.tokenizer))[0]
        return ' '.join(given + words if direction == 'forward' else words + given)


def log_softmax(logits):
    """float64 numpy [rows, vocab] -> log_softmax over the last axis (max subtracted first, so that
    no exp overflows)."""
    shifted = logits - logits.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def dump_embeddings(output_dir, tokens, bilm=None, softmax=None, batch_size=8192):
    """lm_1b's `dump_emb`, as .npy files in output_dir (created if needed), each written atomically:

    - with `bilm`: `embeddings_char_cnn.npy` float32 [len(tokens), P], `embedder.token_embeddings`
      of each token (char CNN + highway + projection, no LSTM), streamed into the file;
    - with `softmax` (a `sampled_softmax.Softmax`): `embeddings_softmax.npy` float32 [vocab, P] (W) and
      `softmax_bias.npy` float32 [vocab] (b);
    - `vocab.txt`: the token of each row, one per line.
    -> the paths written.
    """
    make_directory(output_dir, 'output directory')
    written = []

    def save(name, shape, fill):
        path = os.path.join(output_dir, name)
        with atomic_path(path) as tmp:
            array = np.lib.format.open_memmap(tmp, mode='w+', dtype=np.float32, shape=shape)
            fill(array)
            array.flush()
            del array  # closes the mapping before the rename
        written.append(path)

    if softmax is not None:
        if softmax.W.shape[0] != len(tokens):
            raise InputError(f'the softmax has {softmax.W.shape[0]} rows but there are {len(tokens)} tokens')
        W, b = softmax.W.numpy(), softmax.b.numpy().reshape(-1)
        save('embeddings_softmax.npy', W.shape, lambda a: np.copyto(a, W))
        save('softmax_bias.npy', b.shape, lambda a: np.copyto(a, b))
    if bilm is not None:
        save('embeddings_char_cnn.npy', (len(tokens), bilm.projection_dim),
             lambda a: token_embeddings(bilm, tokens, out=a, batch_size=batch_size))
    vocab_path = os.path.join(output_dir, 'vocab.txt')
    write_text_atomic(vocab_path, ''.join(t + '\n' for t in tokens))
    return written + [vocab_path]
