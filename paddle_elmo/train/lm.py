"""The biLM training objective: the biLM under a softmax over the vocabulary (`LanguageModel`), one
training step (`train_step`) and the full-softmax perplexity (`evaluate`).

Training uses sampled softmax as bilm-tf does (sampled_softmax.py); evaluation uses the full
softmax, computed in vocabulary chunks so that an 800k vocabulary fits in memory. The update rules
are optimizers.py's.
"""
import math

import numpy as np

import paddle
import paddle.nn as nn

from paddle_elmo.model import kernels
from paddle_elmo.runtime import set_mode
from paddle_elmo.model.bilm import BiLM
from paddle_elmo.fileio import InputError
from paddle_elmo.train.sampled_softmax import LogUniformSampler, Softmax, TableRows, sorted_union
from paddle_elmo.text.token_ids import InputMapper, TokenInput


DIRECTIONS = (('char_ids', 'next_token_ids'), ('char_ids_reverse', 'next_token_ids_reverse'))
# Each TokenInput field's keys in LMStream's batches: (forward, backward).
INPUT_KEYS = {'char_ids': ('char_ids', 'char_ids_reverse'), 'word_ids': ('word_ids', 'word_ids_reverse')}
WORD_IDS = INPUT_KEYS['word_ids']


class LanguageModel(nn.Layer):
    """BiLM + a softmax shared by both directions, with dropout before it.

    Batches are the dicts made by batches.LMStream (numpy arrays): 'char_ids', 'word_ids',
    'next_token_ids' and their '_reverse' twins, each [batch, unroll(, max_chars)]. In training mode
    the loss is the sampled softmax; in eval mode it is the full softmax (`token_losses` gives it
    per token). The biLM is stateful: each row's state carries over to the next batch, with
    gradients cut at the boundary. vocab: the biLM's input vocabulary: the training Vocabulary for word
    input (word and word+char models read it, as bilm-tf's token mode), an ELMoForManyLangs model's
    dictionaries (a dictionary_ids.Lexicon) for the dict- modes. bilm: a loaded stateful BiLM of `config`
    to use instead of a new one; softmax: (W [vocab_size, P], b [vocab_size]) arrays to start from
    instead of a new softmax (lm_loading.load_language_model gives both: a trained model is built
    without drawing random weights it would overwrite). kernels: the model's (kernels.Kernels: the
    run's dropout masks, start.run_kernels), its new BiLM's too.
    """

    def __init__(self, config, vocab_size, n_negative_samples=8192, seed=0, reset_state_at_sentence_start=False,
                 vocab=None, bilm=None, softmax=None, kernels=kernels.CPU_KERNELS):
        super().__init__()
        self.vocab_size = vocab_size
        self.kernels = kernels
        self.bilm = BiLM(config, stateful=True, vocab=vocab, kernels=kernels) if bilm is None else bilm
        self.softmax = Softmax(vocab_size, config.projection_dim, kernels, weights=softmax)
        self.dropout = float(config.dropout or 0.0)
        self.sampler = LogUniformSampler(vocab_size, n_negative_samples, seed)
        # Not bilm-tf's: a row whose window begins a sentence starts it from a zero state, as an
        # embedder starts every sentence (see run_pretrain.py --reset_state_at_sentence_start).
        self.reset_state_at_sentence_start = reset_state_at_sentence_start

    def forward(self, batch, agree_rows=None):
        """-> dict(loss (mean of the two directions), forward_loss, backward_loss: 0-d tensors; in
        training also table_rows, the TableRows the step read (the softmax's, then the word
        embedding's when it trains), for the optimizer).

        agree_rows: in training, a function that turns this rank's row ids of a table into the
        union over all ranks (so every rank's row gradients line up for the all-reduce).
        """
        if self.training:
            losses, rows = self.sampled_losses(batch, agree_rows)
        else:
            losses, rows = [loss.mean() for loss in self.full_softmax_losses(batch)], None
        out = {'loss': 0.5 * (losses[0] + losses[1]), 'forward_loss': losses[0], 'backward_loss': losses[1]}
        if rows is not None:
            out['table_rows'] = rows
        return out

    def sampled_losses(self, batch, agree_rows=None):
        """Mean sampled-softmax losses [forward, backward], after dropout on the top layer, and the
        TableRows they read: the softmax's, then the word embedding's when it trains."""
        agree_rows = agree_rows or (lambda ids: ids)
        if self.reset_state_at_sentence_start:
            self.bilm.zero_state_rows(batch['sentence_start'])
        word_rows = None
        if self.trained_word_embedding() is not None:
            used = np.unique(np.concatenate([batch[key].reshape(-1) for key in WORD_IDS]))
            word_rows = TableRows([self.bilm.word_embedding], agree_rows(used[used > 0] - 1), self.kernels)
        tops = self.bilm.lm_outputs(*self._inputs(batch), word_rows=word_rows)
        hs = [top.reshape([-1, top.shape[-1]]) for top in tops]
        targets = [batch[key].reshape(-1) for _, key in DIRECTIONS]
        if self.dropout > 0:
            hs = [kernels.dropout(h, self.dropout, self.kernels) for h in hs]
        samples = [self.sampler.sample() for _ in DIRECTIONS]  # one candidate set per direction
        ids = sorted_union(targets + [c for c, _ in samples], self.vocab_size)
        rows = self.softmax.select_rows(agree_rows(ids))
        losses = [self.softmax.sampled_loss(rows, h, t, c, np.log(self.sampler.expected_count(t, n)),
                                            np.log(self.sampler.expected_count(c, n)))
                  for h, t, (c, n) in zip(hs, targets, samples)]
        return losses, [rows] + ([word_rows] if word_rows is not None else [])

    @property
    def input_mapper(self):
        """What its batches map tokens through (batches.LMStream's `mapper`): None when the biLM reads
        the training vocabulary's own ids (ELMo's byte ids; word id = vocabulary id + 1), else
        InputMapper.of(bilm), the one embedding uses: its mode reads ids from the model's own
        dictionaries (an ELMoForManyLangs model's char.dic / word.dic), apart from the softmax's vocabulary."""
        # a bounded cache: the batches keep their own table of the vocabulary's ids, which fills it once
        return InputMapper.of(self.bilm, max_cache=100_000) if self.bilm.config.input_mode.chars_from_vocab else None

    def trained_word_embedding(self):
        """The biLM's word embedding when it trains (word input, not frozen), else None: a table
        whose rows a step updates sparsely, as the softmax's."""
        embedding = getattr(self.bilm, 'word_embedding', None)
        return embedding if embedding is not None and not embedding.stop_gradient else None

    def _inputs(self, batch):
        """A batch's (forward, backward) TokenInput for BiLM.lm_outputs: the ids the model reads
        (config.input_mode.reads), each direction's under its own keys (INPUT_KEYS)."""
        reads = self.bilm.config.input_mode.reads
        return tuple(TokenInput(**{name: batch[INPUT_KEYS[name][d]] for name in reads}) for d in range(2))

    def full_softmax_losses(self, batch):
        """Per-token full-softmax losses, tensors (forward [n], backward [n]), n = batch x unroll."""
        tops = self.bilm.lm_outputs(*self._inputs(batch))
        return [self.softmax.full_losses(top.reshape([-1, top.shape[-1]]), batch[key].reshape(-1).astype(np.int64))
                for top, (_, key) in zip(tops, DIRECTIONS)]

    def token_losses(self, batch):
        """Eval helper: full_softmax_losses as numpy arrays, without gradients."""
        with paddle.no_grad():
            return [loss.numpy() for loss in self.full_softmax_losses(batch)]



def train_step(model, optimizer, batch, agree_rows=None, mark=None):
    """One training step as bilm-tf takes it -> (model output dict, global gradient norm).

    The gradient is that of `total_loss * unroll_steps` (bilm-tf's training.py), not of the mean
    loss: with Adagrad's accumulators starting at 1.0 and the global-norm clip at 10, the plain mean
    makes every early update ~unroll_steps times smaller and the clip never acts. Under several
    ranks the optimizer averages each rank's scaled gradient before clipping, as bilm-tf's towers.
    mark: called with 'forward', 'backward' and 'optimizer' as each phase ends (a profiler's clock).
    """
    mark = mark or (lambda phase: None)
    out = model(batch, agree_rows)
    mark('forward')
    unroll_steps = batch['next_token_ids'].shape[1]
    (out['loss'] * unroll_steps).backward()
    mark('backward')
    norm = optimizer.step(out['table_rows'])
    optimizer.clear_grad()
    mark('optimizer')
    return out, norm


def evaluate(model, batches, max_tokens=None, progress=None):
    """Full-softmax perplexity of `model` over eval batches (batches.iter_eval_batches).

    Every target is weighted by batch['weights'] so each data token counts once. Forward and
    backward perplexities are exp of each direction's mean loss; 'perplexity' is exp of the mean
    of the two losses, the figure bilm-tf reports. The LSTM state starts from zeros and is carried
    across batches; the model's own carried state and train/eval mode are restored afterwards.
    """
    saved, was_training = model.bilm.get_states(), model.training
    model.bilm.reset_states()
    set_mode(model, False)
    totals, n_tokens = np.zeros(2), 0.0
    try:
        for batch in batches:
            weights = batch['weights'].reshape(-1).astype(np.float64)
            losses = model.token_losses(batch)
            totals += [float((loss * weights).sum()) for loss in losses]
            n_tokens += weights.sum()
            if progress is not None:
                progress.update(int(weights.sum()))
            if max_tokens and n_tokens >= max_tokens:
                break
    finally:
        model.bilm.set_states(saved)
        set_mode(model, was_training)
    if n_tokens == 0:
        raise InputError('no tokens to evaluate (is the data empty?)')
    forward, backward = totals / n_tokens
    return {'n_tokens': int(n_tokens), 'forward_loss': forward, 'backward_loss': backward,
            'forward_perplexity': math.exp(forward), 'backward_perplexity': math.exp(backward),
            'perplexity': math.exp(0.5 * (forward + backward))}
