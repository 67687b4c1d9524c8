"""ELMo's token features for the classifier: the scalar-mixed biLM layers of a batch (`ElmoFeatures`,
from an ActivationCache when the biLM is frozen), the same beside word2vec vectors (`ConcatFeatures`),
and `model_builder`, which makes a fresh classifier per fold.

Token features travel packed: `(tokens [n_tokens, dim], lengths [batch])`, the batch's real tokens
one sentence after another, as head.BowHead reads them.
"""
import numpy as np

import paddle
import paddle.nn as nn

from paddle_elmo.classify.head import SentenceClassifier, pack
from paddle_elmo.classify.word2vec_features import Word2VecFeatures
from paddle_elmo.text.token_ids import InputMapper
from paddle_elmo.use.downstream import Elmo


class ElmoFeatures(nn.Layer):
    """Sentence indices -> (scalar mix of the biLM layers [tokens, 2P] packed sentence after sentence,
    lengths [batch]): a features module of head.SentenceClassifier.

    With a cache (frozen biLM) the layers come from it; otherwise the biLM runs on the sentences'
    char ids. Elmo's own dropout should be 0: the shared head applies the dropout.
    """

    def __init__(self, elmo, sentences, cache=None, bilm_lr=None):
        super().__init__()
        if cache is not None and elmo.requires_grad:
            raise ValueError('a trainable biLM cannot read its layers from a cache')
        self.elmo, self.sentences, self.cache, self.bilm_lr = elmo, sentences, cache, bilm_lr
        self.mapper = InputMapper.of(elmo.bilm)
        self.dim = 2 * elmo.bilm.projection_dim

    def forward(self, indices):
        if self.cache is not None:
            layers, lengths = self.cache.batch(indices)
            # The packed batch is one [1, tokens] row to the mix: a layer norm's statistics over all
            # the batch's real tokens are the same as over a padded batch's unmasked positions.
            mask = paddle.ones([1, int(lengths.sum())], dtype='bool')
            mixed = self.elmo.mix_layers([x.unsqueeze(0) for x in layers], mask)['elmo_representations'][0]
            return mixed[0], lengths
        # A frozen biLM applies no dropout even in train mode: Elmo.bilm_layers sees to that.
        out = self.elmo(self.mapper.batch([self.sentences[i] for i in indices]))
        return pack(out['elmo_representations'][0], out['mask'])

    def penalty(self):
        return self.elmo.l2_penalty()

    def lr_groups(self):
        return [(list(self.elmo.bilm.parameters()), self.bilm_lr)] if self.elmo.requires_grad else []

    def layer_weights(self):
        mix = self.elmo.scalar_mixes[0]
        return {'weights': [float(w) for w in mix.normalized_weights().numpy()], 'gamma': float(mix.gamma.numpy()[0])}


class ConcatFeatures(nn.Layer):
    """ELMo and word2vec token features side by side, [tokens, 2P + dim]: the paper's way of using
    ELMo, concatenated with a context-free word vector before the task model."""

    def __init__(self, elmo_features, word_features):
        super().__init__()
        self.elmo_features, self.word_features = elmo_features, word_features
        self.dim = elmo_features.dim + word_features.dim

    def forward(self, indices):
        elmo, lengths = self.elmo_features(indices)
        words, word_lengths = self.word_features(indices)
        if not np.array_equal(lengths, word_lengths):  # word2vec's oov='skip' would drop tokens
            raise ValueError('ELMo and word2vec features must cover the same tokens (word2vec oov mode "unk")')
        return paddle.concat([elmo, words], axis=-1), lengths

    def penalty(self):
        return self.elmo_features.penalty()

    def lr_groups(self):
        return self.elmo_features.lr_groups()

    def layer_weights(self):
        return self.elmo_features.layer_weights()


def model_builder(bilm, sentences, *, trainable=False, bilm_lr=2e-5, layer_norm=False, l2_coef=1e-3,
                  hidden_dim=256, dropout=0.2, cache=None, feature_norm='batchnorm', word_table=None,
                  only_layer=None):
    """-> build_model(fold) making a fresh classifier; a trainable biLM is reset to its loaded weights first.

    word_table: (table, token ids) of word2vec_features.lookup_table, to concatenate word2vec vectors
    to the ELMo features of each token. only_layer: None (the scalar mix) or one layer (Elmo's)."""
    initial = {name: p.numpy().copy() for name, p in bilm.named_parameters()} if trainable else None

    def build_model(fold):
        if initial is not None:
            with paddle.no_grad():
                for name, p in bilm.named_parameters():
                    p.set_value(initial[name])
        elmo = Elmo(bilm, requires_grad=trainable, do_layer_norm=layer_norm, dropout=0.0, l2_coef=l2_coef,
                    only_layer=only_layer)
        features = ElmoFeatures(elmo, sentences, cache, bilm_lr)
        if word_table is not None:
            features = ConcatFeatures(features, Word2VecFeatures(*word_table))
        return SentenceClassifier(features, hidden_dim, dropout, feature_norm=feature_norm)

    return build_model
