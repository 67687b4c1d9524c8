"""A new model's first weights beyond bilm-tf's initialisation, each chosen by the recipe: the softmax
bias from the unigram prior of the training targets (`init_softmax_bias`, --softmax_bias_init
unigram) and the rows of the word embedding from word vectors (`init_word_embedding`,
--word_vectors). Each returns a line saying what it did, for the run's log.
"""
import math

import numpy as np

import paddle

from paddle_elmo.text.word_vectors import embedding_rows, read_word_vectors
from paddle_elmo.train.sampled_softmax import PRIOR_MAX_TOKENS, unigram_log_prior


def init_softmax_bias(softmax, vocab, train_data_path, progress=True):
    """softmax.b <- the unigram log prior of the training targets -> a line saying what it is worth."""
    prior = unigram_log_prior(vocab, train_data_path, progress=progress)
    with paddle.no_grad():
        softmax.b.set_value(prior[:, None])
    perplexity = math.exp(-(np.exp(prior.astype(np.float64)) * prior).sum())
    return (f'softmax bias: log unigram shares of the training targets (at most the first {PRIOR_MAX_TOKENS:,} '
            f'tokens): perplexity {perplexity:,.0f} from the first step, where a zero bias gives {vocab.size:,}')


def init_word_embedding(bilm, path):
    """Rows of bilm.word_embedding from the vectors in `path` for the words it covers (the rest keep
    bilm-tf's initialisation) -> a line saying how many."""
    kv = read_word_vectors(path)
    rows, covered = embedding_rows(kv, bilm.vocab.tokens, bilm.word_embedding.shape[1], path)
    with paddle.no_grad():
        table = bilm.word_embedding.numpy()
        table[covered] = rows[covered]
        bilm.word_embedding.set_value(table)
    return (f'word embedding: {int(covered.sum()):,} of the vocabulary\'s {len(covered):,} tokens '
            f'({covered.mean():.1%}) from {path}, the rest initialised as bilm-tf does')
