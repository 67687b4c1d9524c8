"""What a downstream model adds on top of the biLM: `ScalarMix` (softmax-normalised layer weights
times gamma, as bilm-tf's `weight_layers` and AllenNLP's `ScalarMix`) and `Elmo` (char ids in, one or
more mixes of the biLM's layers out, frozen or fine-tuned)."""
import numpy as np

import paddle
import paddle.nn as nn
import paddle.nn.functional as F

from paddle_elmo.runtime import configure_if_on_cpu, set_mode
from paddle_elmo.model.bilm import remove_sentence_boundaries
from paddle_elmo.text.token_ids import InputMapper
from paddle_elmo.model.token_modes import CHAR_IDS
from paddle_elmo.text.tokenizers import as_token_lists, model_tokenizer
from paddle_elmo.fileio import InputError
from paddle_elmo.files.model_io import resolve_model
from paddle_elmo.use.languages import warn_if_mostly_unknown, warning_subject


class ScalarMix(nn.Layer):
    """gamma * sum_k softmax(w)_k * layer_k, optionally layer-normalising each layer first.

    With `do_layer_norm`, each layer is normalised by the mean and variance of its unmasked
    entries over the whole batch (as AllenNLP). `l2_penalty()` is l2_coef * sum(w^2): it pulls the
    weights toward equal, as bilm-tf's `weight_layers(l2_coef=...)`.
    only_layer=k: gamma * layer_k alone, no weights and no penalty (bilm-tf's `use_top_only=True` is
    k = n_layers - 1; TF-Hub's ELMo outputs `word_emb`, `lstm_outputs1`, `lstm_outputs2` are k = 0, 1, 2).
    """

    def __init__(self, n_layers, do_layer_norm=False, l2_coef=0.0, initial_weights=None, trainable=True,
                 initial_gamma=1.0, only_layer=None):
        super().__init__()
        init = np.zeros(n_layers, np.float32) if initial_weights is None else np.asarray(initial_weights, np.float32)
        if init.shape != (n_layers,):
            raise ValueError(f'initial_weights must have {n_layers} values, got {init.shape}')
        if only_layer is not None and not 0 <= only_layer < n_layers:
            raise ValueError(f'only_layer must be in 0..{n_layers - 1} (the layers of this biLM), got {only_layer}')
        self.weights_ = self.create_parameter([n_layers], default_initializer=nn.initializer.Assign(init))
        self.gamma = self.create_parameter([1], default_initializer=nn.initializer.Constant(initial_gamma))
        self.weights_.stop_gradient = not trainable or only_layer is not None
        self.gamma.stop_gradient = not trainable
        self.do_layer_norm, self.l2_coef, self.only_layer = do_layer_norm, l2_coef, only_layer

    def normalized_weights(self):
        if self.only_layer is not None:
            return F.one_hot(paddle.to_tensor(self.only_layer), self.weights_.shape[0])
        return F.softmax(self.weights_)

    def l2_penalty(self):
        if self.only_layer is not None:
            return paddle.zeros([])
        return self.l2_coef * paddle.sum(self.weights_ ** 2)

    def forward(self, layers, mask=None):
        """layers: list of [batch, time, dim]; mask: [batch, time] (needed for layer norm)."""
        if len(layers) != self.weights_.shape[0]:
            raise ValueError(f'ScalarMix built for {self.weights_.shape[0]} layers got {len(layers)}')
        if self.only_layer is not None:
            layers = layers[self.only_layer:self.only_layer + 1]
        if self.do_layer_norm:
            if mask is None:
                raise ValueError('ScalarMix with do_layer_norm needs the mask')
            layers = [_masked_layer_norm(x, mask) for x in layers]
        if self.only_layer is not None:
            return self.gamma * layers[0]
        weights = self.normalized_weights()
        mixed = sum(weights[k] * x for k, x in enumerate(layers))
        return self.gamma * mixed


def _masked_layer_norm(x, mask):
    m = mask.astype(x.dtype).unsqueeze(-1)
    count = m.sum() * x.shape[-1]
    mean = (x * m).sum() / count
    var = (((x - mean) * m) ** 2).sum() / count
    return (x - mean) / paddle.sqrt(var + 1e-12)


class Elmo(nn.Layer):
    """ELMo for downstream models: token ids -> one or more scalar mixes of the biLM layers + mask.

    model: anything model_io.resolve_model takes: a BiLM (used as it is), a LoadedModel, a name, a
    directory, a checkpoint prefix (its biLM is loaded here). The biLM is frozen by default (run without
    gradients, in eval mode); `requires_grad=True` fine-tunes it. Either way the constructor sets
    `stop_gradient` on every parameter of a BiLM passed in, in place (as AllenNLP's Elmo sets
    requires_grad on its biLM's): that biLM becomes this layer's part; pass a fresh one
    (`resolve_model(...).load()`) to keep another as it was. Sentence boundaries are removed from the outputs: pass char ids made with
    `elmo.batch_to_ids(sentences)` or `CharMapper.batch(sentences)` (both add <S> and </S>), or,
    for any token input (char, word, word+char), `elmo(**elmo.batch_to_inputs(sentences))`.

    cpu_threads: on CPU, Paddle's threads, as in `ELMoEmbedder` (None: $OMP_NUM_THREADS if set,
    else the available cores; on AMD processors also MKL's AVX-512 or AVX2 path unless MKL_DEBUG_CPU_TYPE is set).
    tokenizer: how `batch_to_ids` splits raw strings, as in `ELMoEmbedder` (None: the model's).
    only_layer: None (a scalar mix of all layers), or k: layer k alone, times gamma (ScalarMix's;
    -1 is the top layer, bilm-tf's `use_top_only`).
    """

    def __init__(self, model, num_output_representations=1, requires_grad=False, do_layer_norm=False,
                 dropout=0.5, l2_coef=0.0, cpu_threads=None, tokenizer=None, only_layer=None):
        super().__init__()
        configure_if_on_cpu(cpu_threads)
        self.bilm = bilm = resolve_model(model).load()  # a BiLM passed in is that very BiLM
        self.tokenizer = model_tokenizer(bilm.config.tokenizer, tokenizer)
        self.requires_grad = requires_grad
        for p in self.bilm.parameters():
            p.stop_gradient = not requires_grad
        n = bilm.n_layers + 1
        if only_layer is not None and not -n <= only_layer < n:
            raise InputError(f'layer {only_layer} asked for: this biLM has layers 0..{n - 1} (0: the token '
                             f'layer, 1..{n - 1}: the LSTM layers; -1: the top one)')
        only = None if only_layer is None else only_layer % n
        self.scalar_mixes = nn.LayerList([ScalarMix(n, do_layer_norm, l2_coef, only_layer=only)
                                          for _ in range(num_output_representations)])
        self.dropout = nn.Dropout(dropout)

    def batch_to_ids(self, sentences):
        """Sentences (raw strings, split by `self.tokenizer`, or token lists) -> int64 char ids
        [batch, max_tokens + 2, max_chars], `<S>` and `</S>` added, for forward() (AllenNLP's; a
        word model reads word ids: use batch_to_inputs).
        An empty sentence (or '') is `<S> </S>` and gives no representations."""
        if self.bilm.config.input_mode.reads != (CHAR_IDS,):
            raise InputError(f'this biLM reads {self.bilm.config.token_input} input, not char ids alone: use '
                             f'elmo(**elmo.batch_to_inputs(sentences))')
        sentences = as_token_lists(sentences, self.tokenizer, about=warning_subject(self.bilm.vocab, self.tokenizer))
        return paddle.to_tensor(InputMapper.of(self.bilm, max_cache=0).batch(sentences).char_ids)  # the mode's chars

    def batch_to_inputs(self, sentences):
        """Sentences -> dict(char_ids, word_ids, lengths) for forward(): char ids [batch, time,
        max_chars] and word ids [batch, time] as tensors, each None when the biLM does not read it
        (token_ids.InputMapper), `<S>` and `</S>` added."""
        sentences = as_token_lists(sentences, self.tokenizer, about=warning_subject(self.bilm.vocab, self.tokenizer))
        warn_if_mostly_unknown(self.bilm.vocab, sentences, self.tokenizer)
        inputs = InputMapper.of(self.bilm, max_cache=0).batch(sentences)
        as_tensor = lambda ids: None if ids is None else paddle.to_tensor(ids)
        return {'char_ids': as_tensor(inputs.char_ids), 'word_ids': as_tensor(inputs.word_ids), 'lengths': inputs.lengths}

    def _freeze_mode(self):
        """A frozen biLM never uses dropout, even when a parent layer's train() reached it."""
        set_mode(self.bilm, False)

    def train(self, mode=True):
        super().train(mode)
        if not self.requires_grad:
            self._freeze_mode()
        return self

    def bilm_layers(self, char_ids=None, lengths=None, word_ids=None):
        """The biLM's activations and mask, boundaries kept (what a cache would store)."""
        if self.requires_grad:
            return self.bilm(char_ids, lengths, word_ids=word_ids)
        self._freeze_mode()
        with paddle.no_grad():
            return self.bilm(char_ids, lengths, word_ids=word_ids)

    def mix(self, activations, mask):
        """Scalar mixes of precomputed activations (boundaries kept) -> dict of representations."""
        stripped = [remove_sentence_boundaries(a, mask) for a in activations]
        return self.mix_layers([s[0] for s in stripped], stripped[0][1])

    def mix_layers(self, layers, mask):
        """The scalar mixes, then dropout, of layers [batch, time, 2P] whose sentence boundaries
        are already removed (mask [batch, time]) -> dict(elmo_representations=[...], mask=mask).
        Every path to a representation (forward, mix, a cache of layers) ends here."""
        reps = [self.dropout(mix(layers, mask)) for mix in self.scalar_mixes]
        return {'elmo_representations': reps, 'mask': mask}

    def forward(self, char_ids=None, lengths=None, word_ids=None):
        """char_ids [batch, time, max_chars] and/or word_ids [batch, time] (as the biLM reads them,
        <S> and </S> included), or a TokenInput (InputMapper.batch's) as the first argument
        -> dict(elmo_representations=[[batch, time - 2, 2P], ...], mask)."""
        out = self.bilm_layers(char_ids, lengths, word_ids)
        return self.mix(out['activations'], out['mask'])

    def l2_penalty(self):
        return sum(mix.l2_penalty() for mix in self.scalar_mixes)
