"""The ELMo bidirectional language model (Peters et al. 2018).

Computes exactly what allenai/bilm-tf and AllenNLP's `_ElmoBiLm` compute (see
bilm-tf's `bilm/model.py`, AllenNLP's `modules/elmo.py`). `BiLM(config, vocab=...)`: a token representation -- char CNN +
highway + projection (bilm-tf's char input), a word embedding (bilm-tf's token mode), or both
concatenated before the projection (ELMoForManyLangs) -- then separate forward and backward stacks
of LSTMs with a projection, cell/projection clipping and optional residual connections. It
returns L + 1 layers `[batch, time, 2 * projection_dim]` and a mask, in a stateful or a stateless mode. `config` is a `config.ModelConfig`; the token layer lives in
token_layer.py, the LSTMs in lstm.py, the index plans that skip padding in packing.py, the CPU
kernels in kernels.py.

The token representation is the config's token mode's (token_modes.py: BiLM builds the layers its
`parts` name, token_layer.TOKEN_PARTS, and runs its `embed`), on token_layer.EagerOps.
"""
import numpy as np

import paddle
import paddle.nn as nn

from paddle_elmo.model import kernels, layer_math
from paddle_elmo.text.token_ids import TokenInput
from paddle_elmo.model.token_modes import CHAR_IDS, WORD_IDS
from paddle_elmo.model.packing import row_order
from paddle_elmo.model.lstm import LstmStack
from paddle_elmo.model.token_layer import TOKEN_PARTS, EagerOps, ids_numpy


class BiLM(nn.Layer):
    """The ELMo biLM: the token representation, then a forward and a backward LstmStack.

    The token representation follows `config.token_input` (its token_modes.TokenMode): `char_encoder`
    (char CNN + highway + projection), `word_embedding` [vocab, projection_dim] (bilm-tf's token mode: row i is the
    vocabulary's id i, no padding row), or both: the word row [word_dim] and the highway output
    concatenated, then `char_encoder.projection`. Word input reads `word_ids`, int64 [batch, time]
    holding the vocabulary id + 1 and 0 for padding (bilm-tf's TokenBatcher layout); `vocab` (a
    vocabulary.Vocabulary) is the model's input vocabulary, which turns words into those ids.

    Stateful mode (as bilm-tf and AllenNLP): each batch row starts from the final state its row
    reached in the previous batch; rows beyond the batch keep their state; `reset_states()` zeroes
    them. Stateless mode: every row starts from zeros, so a sentence's result does not depend on
    the batch or on earlier calls. `kernels` (kernels.Kernels): what its hot spots run on and where
    its dropout masks come from (the compiled CPU kernels by default).
    """

    def __init__(self, config, stateful=False, vocab=None, kernels=kernels.CPU_KERNELS):
        super().__init__()
        self.config = config.checked()
        self.kernels = kernels
        self.vocab = None  # the word embedding's, when the mode has one
        self.stateful = stateful
        self.projection_dim = config.projection_dim
        self.n_layers = config.num_layers
        self.char_encoder = None
        for part in config.input_mode.parts:  # the token layers of config.token_input (token_modes.py)
            TOKEN_PARTS[part](self, config, vocab)
        self.forward_stack = LstmStack(config, kernels)
        self.backward_stack = LstmStack(config, kernels)
        self._states = None  # [direction][layer] -> (h [rows, P], c [rows, D]), detached

    # ---- state ----------------------------------------------------------------------------
    def reset_states(self):
        self._states = None

    def get_states(self):
        """The carried LSTM states as numpy arrays (None before the first batch), for checkpoints."""
        if self._states is None:
            return None
        return [None if d is None else [(h.numpy(), c.numpy()) for h, c in d] for d in self._states]

    def set_states(self, states):
        """Restore what get_states() returned."""
        self._states = None if states is None else [
            None if d is None else [(paddle.to_tensor(h), paddle.to_tensor(c)) for h, c in d] for d in states]

    def zero_state_rows(self, rows):
        """Carried states of the rows where `rows` (bool numpy [batch]) is true start again from zeros."""
        if self._states is None or not rows.any():
            return
        for direction, stored in enumerate(self._states):
            if stored is None:
                continue
            keep = np.ones(stored[0][0].shape[0], dtype=np.float32)
            keep[:len(rows)][rows] = 0.0
            keep = paddle.to_tensor(keep).unsqueeze(1)
            self._states[direction] = [(h * keep, c * keep) for h, c in stored]

    def _initial_states(self, direction, batch):
        stack = (self.forward_stack, self.backward_stack)[direction]
        zeros = lambda n: [(paddle.zeros([n, stack.projection_dim]), paddle.zeros([n, stack.dim]))
                           for _ in range(self.n_layers)]
        stored = self._states[direction] if self.stateful and self._states else None
        if stored is None:
            return zeros(batch)
        rows = stored[0][0].shape[0]
        if rows >= batch:
            return [(h[:batch], c[:batch]) for h, c in stored]
        return [(paddle.concat([h, zh]), paddle.concat([c, zc]))
                for (h, c), (zh, zc) in zip(stored, zeros(batch - rows))]

    def _store_states(self, direction, finals):
        if not self.stateful:
            return
        finals = [(h.detach(), c.detach()) for h, c in finals]  # gradients stop at batch boundaries
        if self._states is None:
            self._states = [None, None]
        stored = self._states[direction]
        batch = finals[0][0].shape[0]
        if stored is not None and stored[0][0].shape[0] > batch:
            finals = [(paddle.concat([h, sh[batch:]]), paddle.concat([c, sc[batch:]]))
                      for (h, c), (sh, sc) in zip(finals, stored)]
        self._states[direction] = finals

    # ---- forward ----------------------------------------------------------------------------
    def token_embedding(self, char_ids=None, word_ids=None, chunk=1024, word_rows=None):
        """The context-free token representations -> [batch, time, projection_dim], zeros at padding:
        config.input_mode's (token_modes.py), on EagerOps.

        char_ids: int64 [batch, time, max_chars] (tensor or numpy; 0 = padding), for a model with
        chars; word_ids: int64 [batch, time] (vocabulary id + 1, 0 = padding), for one with words;
        chunk: at most this many distinct tokens per char-CNN call. word_rows: in training, the
        TableRows of the word embedding the step reads (lm.py), so the update touches those rows
        only; None reads the whole embedding.
        """
        mode = self.config.input_mode
        given = {CHAR_IDS: char_ids, WORD_IDS: word_ids}
        for name in mode.reads:
            if given[name] is None:
                raise ValueError(f'this biLM ({mode.name} input) reads {name}: make them with '
                                 f'paddle_elmo.text.token_ids.InputMapper.of(bilm)')
        ids = {name: ids_numpy(given[name]) for name in mode.reads}
        first = ids[mode.reads[0]]
        batch, time = first.shape[:2]
        x = mode.embed(self, {name: a.reshape(batch * time, *a.shape[2:]) for name, a in ids.items()},
                       EagerOps(self.kernels, chunk, word_rows))
        present = first > 0 if first.ndim == 2 else (first > 0).any(axis=-1)
        return _zero_padding(x.reshape([batch, time, -1]), present)

    def forward(self, char_ids=None, lengths=None, token_embeddings=None, word_ids=None):
        """Run the biLM on sentences that already hold <S> and </S>.

        char_ids: int64 [batch, time, max_chars] (0 = padding), for a model with chars;
        word_ids: int64 [batch, time] (vocabulary id + 1, 0 = padding), for a model with words;
        or, instead of both, `token_embeddings` [batch, time, projection_dim] precomputed (zeros
        at padding) with `lengths`; or, as the first argument, a TokenInput (InputMapper.batch's).
        lengths: int array [batch] of real tokens per row (padding is at the end); derived from the
            ids when None.
        Returns dict: 'activations', a list of n_layers + 1 tensors [batch, time, 2 * projection_dim]
        (layer 0 is [x; x], then [forward; backward] per layer), and 'mask' [batch, time] bool.
        """
        char_ids, word_ids, lengths = TokenInput.of(char_ids, word_ids, lengths)
        if token_embeddings is None:
            token_embeddings = self.token_embedding(char_ids, word_ids)
        time = token_embeddings.shape[1]
        if lengths is None:
            present = ids_numpy(word_ids if char_ids is None else char_ids) > 0
            lengths = (present if char_ids is None else present.any(axis=-1)).sum(axis=1)
        lengths = np.asarray(lengths, dtype=np.int64)
        forward_out, backward_out = self.contextual(token_embeddings, lengths)
        mask = paddle.to_tensor(np.arange(time)[None, :] < lengths[:, None])
        layers = [paddle.concat([token_embeddings, token_embeddings], axis=-1)]
        layers += [paddle.concat([f, b], axis=-1) for f, b in zip(forward_out, backward_out)]
        return {'activations': layers, 'mask': mask}

    def contextual(self, x, lengths):
        """Both LSTM stacks over x [batch, time, P] with per-row lengths (numpy [batch]).

        Returns (forward outputs, backward outputs): lists per layer of [batch, time, P], in the
        input's order; the backward stack reads each row reversed within its own length.
        """
        batch, time = x.shape[0], x.shape[1]
        # One gather both sorts the rows longest first and (backward) reverses each within its length.
        order, batch_sizes, forward_index, backward_index = row_order(lengths, time)
        flat_x = x.reshape([batch * time, -1])
        outputs = []
        for direction, (stack, index) in enumerate(((self.forward_stack, forward_index),
                                                    (self.backward_stack, backward_index))):
            inputs = paddle.gather(flat_x, paddle.to_tensor(index.reshape(-1))).reshape([batch, time, -1])
            states = self._initial_states(direction, batch)
            order_t = paddle.to_tensor(order)
            states = [(paddle.gather(h, order_t), paddle.gather(c, order_t)) for h, c in states]
            layer_outs, finals = stack(inputs, batch_sizes, states)
            # Undo the gather: scatter rows (and steps) back to where they came from.
            restore = np.empty(batch * time, dtype=np.int64)
            restore[index.reshape(-1)] = np.arange(batch * time)
            restore_t = paddle.to_tensor(restore)
            outputs.append([paddle.gather(o.reshape([batch * time, -1]), restore_t).reshape([batch, time, -1])
                            for o in layer_outs])
            inverse = paddle.to_tensor(np.argsort(order))
            self._store_states(direction, [(paddle.gather(h, inverse), paddle.gather(c, inverse))
                                           for h, c in finals])
        return outputs[0], outputs[1]

    def lm_outputs(self, forward, backward, word_rows=None):
        """Top-layer outputs for language-model training on full windows.

        forward, backward: the two streams' TokenInput (numpy int ids [batch, unroll(, max_chars)],
        the ones the model reads; every row is a full window, lengths are not read); word_rows: the
        word embedding's TableRows of the step. The backward stream is already reversed (a separate
        stream, as in bilm-tf's training), so it is read as is. Both streams hold the same words:
        token_embedding runs the char CNN once per distinct token of the two.
        Returns (forward top [batch, unroll, P], backward top [batch, unroll, P]).
        """
        both = lambda name: None if getattr(forward, name) is None else np.concatenate(
            [getattr(forward, name), getattr(backward, name)])
        batch, time = (forward.char_ids if forward.char_ids is not None else forward.word_ids).shape[:2]
        # One chunk: a training window is small, and splitting it costs more op overhead than it saves.
        x = self.token_embedding(both('char_ids'), both('word_ids'), chunk=2 * batch * time, word_rows=word_rows)
        xs = paddle.unbind(x.reshape([2, batch, time, -1]))  # unbind, not x[d]: slice backward is slow
        batch_sizes = np.full(time, batch)
        tops = []
        for direction, stack in enumerate((self.forward_stack, self.backward_stack)):
            (top,), finals = stack(xs[direction], batch_sizes, self._initial_states(direction, batch), top_only=True)
            self._store_states(direction, finals)
            tops.append(top)
        return tops[0], tops[1]


def _zero_padding(x, present):
    """x [..., dim] with zeros where `present` (bool numpy, x's leading shape) is false; x itself
    when nothing is padding (the common training window)."""
    return x if present.all() else x * paddle.to_tensor(present.astype(np.float32)).unsqueeze(-1)


def remove_sentence_boundaries(tensor, mask):
    """Drop <S> and </S> from [batch, time, ...] outputs: -> ([batch, time - 2, ...], mask).

    Rows are shifted left by one and the position of each row's </S> is zeroed.
    """
    return layer_math.drop_boundaries(tensor, mask.astype('int64').sum(axis=1), tensor.shape[1])
