"""The classifier's head, shared by both commands: token features -> dropout -> mean per sentence
-> (batch norm) -> MLP -> logits [batch, 2] (`BowHead`), and `SentenceClassifier`, a features module
under that head.

A features module is an `nn.Layer` whose `forward(indices)` takes sentence indices (numpy int
array) into the dataset and returns (tokens [tokens, dim] float32, lengths int64 numpy [batch]):
the batch's token features packed sentence after sentence, without padding (`pack` makes that from a
padded [batch, time, dim] + mask), so that the features, the dropout, the mean and their backward
cost what the real tokens cost, not a padded batch of long-tailed reviews. It may also define
`penalty()` (a loss term), `lr_groups()` (a list of (parameters, learning rate) that train at their
own rate), `layer_weights()` (JSON-able, for the output) and `dim` (its feature size).
"""
import warnings

import numpy as np

import paddle
import paddle.nn as nn
import paddle.nn.functional as F

from paddle_elmo.classify.choices import FEATURE_NORMS
from paddle_elmo.fileio import InputError

# Paddle's BatchNorm1D warns on every training call that it tracks running statistics (as intended).
_BATCHNORM_NOTICE = 'When training, we now always track global mean and variance'


def pack(x, mask):
    """Padded x [batch, time, dim] + mask [batch, time] bool -> (tokens [tokens, dim] in row order,
    lengths int64 numpy [batch]). Gradients flow back to x's real positions."""
    lengths = mask.astype('int64').sum(axis=1).numpy()
    return paddle.gather_nd(x, paddle.nonzero(mask)), lengths


def sentence_means(tokens, lengths):
    """tokens [tokens, dim] packed sentence after sentence, lengths [batch] -> [batch, dim], the
    mean of each sentence's rows; a sentence without tokens gives 0.

    One matmul with an averaging matrix [batch, tokens] (1 / length where a token belongs to the row):
    at these sizes it is cheaper than a scatter and its backward is a matmul too."""
    lengths = np.asarray(lengths, dtype=np.int64)
    averaging = np.zeros((len(lengths), int(lengths.sum())), dtype=np.float32)
    rows = np.repeat(np.arange(len(lengths)), lengths)
    averaging[rows, np.arange(len(rows))] = 1.0 / lengths[rows]
    return paddle.matmul(paddle.to_tensor(averaging), tokens)


class BowHead(nn.Layer):
    """tokens [tokens, dim] + lengths [batch] (packed, see `pack`) -> dropout -> mean per sentence
    [batch, dim] -> (batch norm) -> MLP -> logits [batch, classes].

    feature_norm 'batchnorm' standardizes each dimension of the mean (batch statistics in training,
    running ones at test time): the dimensions of biLM layers differ in scale by orders of
    magnitude, and an MLP at Adam's default step size then leans on the few largest.
    hidden_dim 0 makes the MLP a single linear layer (logistic regression on the mean).
    """

    def __init__(self, input_dim, hidden_dim=256, dropout=0.2, n_classes=2, feature_norm='batchnorm'):
        super().__init__()
        if feature_norm not in FEATURE_NORMS:
            raise InputError(f'feature_norm must be one of {FEATURE_NORMS}, got {feature_norm!r}')
        self.dropout = nn.Dropout(dropout)
        self.norm = nn.BatchNorm1D(input_dim) if feature_norm == 'batchnorm' else None
        self.hidden = nn.Linear(input_dim, hidden_dim) if hidden_dim else None
        self.output = nn.Linear(hidden_dim or input_dim, n_classes)

    def forward(self, tokens, lengths):
        x = sentence_means(self.dropout(tokens), lengths)
        if self.norm is not None:
            with warnings.catch_warnings():
                warnings.filterwarnings('ignore', message=_BATCHNORM_NOTICE)
                x = self.norm(x)
        if self.hidden is not None:
            x = self.dropout(F.relu(self.hidden(x)))
        return self.output(x)


class SentenceClassifier(nn.Layer):
    """Sentence indices -> logits [batch, 2]: a features module, then the shared BowHead."""

    def __init__(self, features, hidden_dim=256, dropout=0.2, n_classes=2, feature_norm='batchnorm'):
        super().__init__()
        self.features = features
        self.head = BowHead(features.dim, hidden_dim, dropout, n_classes, feature_norm)

    def forward(self, indices):
        return self.head(*self.features(indices))

    def penalty(self):
        return self.features.penalty() if hasattr(self.features, 'penalty') else None

    def layer_weights(self):
        return self.features.layer_weights() if hasattr(self.features, 'layer_weights') else None
