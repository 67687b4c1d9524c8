"""The token features of the downstream classifiers: the frozen biLM's layers cached on disk
(`ActivationCache`), the scalar-mixed ELMo features of a batch (`ElmoFeatures`), frozen word2vec
vectors (`Word2VecFeatures`, word2vec_base.py's), the two side by side (`ConcatFeatures`), and
`model_builder`, which makes a fresh classifier per fold.

Token features travel packed: `(tokens [n_tokens, dim], lengths [batch])`, the batch's real tokens
one sentence after another, as classifier.BowHead reads them.
"""
import logging
import os
import shutil
import tempfile

import numpy as np

import paddle
import paddle.nn as nn
import paddle.nn.functional as F

from paddle_elmo.logs import progress_bar
from paddle_elmo.use.classifier import SentenceClassifier, pack
from paddle_elmo.text.token_ids import InputMapper
from paddle_elmo.use.downstream import Elmo
from paddle_elmo.use.embedder import ELMoEmbedder
from paddle_elmo.text.word_vectors import UNK

log = logging.getLogger(__name__)


class ActivationCache:
    """A frozen biLM's layers for every sentence, computed once.

    One float32 memmap [total tokens, n_layers + 1, 2 * projection_dim] in a fresh temporary
    directory (sentence boundaries removed); rows offsets[i]:offsets[i + 1] belong to sentence i.
    On disk rather than in RAM because a 1024-dim model on rt-polarity needs ~3 GB; the OS page
    cache keeps in memory what fits. `close()` deletes the directory.

    embedder: what computes the layers (default: ELMoEmbedder of `bilm`); e.g. an InferenceEmbedder
    of the same model's export, to train on the features a deployed (int8) model gives.
    """

    def __init__(self, bilm, sentences, directory=None, batch_size=64, progress=True, embedder=None):
        lengths = np.array([len(s) for s in sentences], dtype=np.int64)
        self.offsets = np.concatenate([[0], np.cumsum(lengths)])
        self.n_layers, self.dim = bilm.n_layers + 1, 2 * bilm.projection_dim
        self.directory = tempfile.mkdtemp(prefix='elmo-layer-cache-', dir=directory)
        try:
            self.array = np.memmap(os.path.join(self.directory, 'layers.f32'), dtype=np.float32, mode='w+',
                                   shape=(int(self.offsets[-1]), self.n_layers, self.dim))
            # ELMoEmbedder runs each distinct token through the char CNN once (its token cache).
            embedder = embedder or ELMoEmbedder(bilm=bilm, batch_size=batch_size)
            order = np.argsort(lengths, kind='stable')  # similar lengths share a batch: little padding
            chunk = batch_size * 16
            with progress_bar(progress, log, total=len(sentences), desc='caching biLM layers', unit='sent') as bar:
                for start in range(0, len(order), chunk):
                    idx = order[start:start + chunk]
                    for i, layers in zip(idx, embedder.encode([sentences[i] for i in idx], batch_size)):
                        self.array[self.offsets[i]:self.offsets[i + 1]] = layers.transpose(1, 0, 2)
                    bar.update(len(idx))
            self.array.flush()
        except BaseException:
            self.close()
            raise

    @property
    def nbytes(self):
        return int(self.array.nbytes)

    def batch(self, indices):
        """Sentence indices -> (n_layers tensors [tokens, dim] packed sentence after sentence, lengths [batch])."""
        indices = np.asarray(indices)
        lengths = self.offsets[indices + 1] - self.offsets[indices]
        rows = [self.array[self.offsets[i]:self.offsets[i + 1]] for i in indices]
        packed = np.concatenate(rows) if rows else np.zeros((0, self.n_layers, self.dim), np.float32)
        return [paddle.to_tensor(np.ascontiguousarray(packed[:, k])) for k in range(self.n_layers)], lengths

    def close(self):
        self.array = None
        shutil.rmtree(self.directory, ignore_errors=True)


class ElmoFeatures(nn.Layer):
    """Sentence indices -> (scalar mix of the biLM layers [tokens, 2P] packed sentence after sentence,
    lengths [batch]): classifier.py's features module.

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

    word_table: (table, token ids) of word_vectors.lookup_table, to concatenate word2vec vectors
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


class Word2VecFeatures(nn.Layer):
    """Sentence indices -> (frozen word vectors [tokens, dim] packed sentence after sentence,
    lengths [batch]): classifier.py's features module."""

    def __init__(self, table, token_ids, oov='unk'):
        super().__init__()
        self.register_buffer('table', paddle.to_tensor(table), persistable=False)
        self.token_ids = token_ids
        self.dim = table.shape[1]
        # One learned vector for all OOV tokens; zero at the start, so it begins as "no information".
        self.unk = self.create_parameter([self.dim], default_initializer=nn.initializer.Constant(0.0)) \
            if oov == 'unk' else None

    def forward(self, indices):
        rows = [self.token_ids[i] for i in indices]
        lengths = np.array([len(r) for r in rows], dtype=np.int64)
        ids = paddle.to_tensor(np.concatenate(rows) if rows else np.zeros(0, np.int64))
        x = F.embedding(ids, self.table)  # [tokens, dim]
        if self.unk is not None:
            x = x + (ids == UNK).astype(x.dtype).unsqueeze(-1) * self.unk
        return x, lengths
