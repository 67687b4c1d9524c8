"""Linear probe: how much of rt-polarity's label each biLM layer (or word2vec) carries.

    python benchmarks/bench_probe.py                                    # the bundled model
    python benchmarks/bench_probe.py --init_from_ckpt ../runs/long/6067 --word2vec w2v.bin

A second protocol beside classifier.py's BoW head, in the style of SentEval: each sentence is the
mean of its token vectors (no training of the features, no dropout, no early stopping), and a
standardized L2 logistic regression (C = 1, not tuned) is fitted on the training and dev sentences
of each of classifier.make_folds' 10 folds (seed 1) and scored on its test sentences, the same test
sentences as run_finetune.py's and word2vec_base.py's rows. Rows: each biLM layer, the equal-weight
average of the layers (what a scalar mix starts from), all layers concatenated, word2vec, and
word2vec concatenated with all layers.
"""
import argparse
import sys

import numpy as np

from paddle_elmo.cli.model_flags import add_model_source, model_source
from paddle_elmo.cli.runner import run
import cpu_threads
import machine
import markdown_tables
import places


def elmo_sentence_means(sentences, model):
    """-> float32 [n_sentences, n_layers, dim]: each layer's mean over the sentence's tokens."""
    from paddle_elmo import ELMoEmbedder
    embedder = ELMoEmbedder(model, reuse_memory=True)
    return np.stack([layers.mean(axis=1) for layers in embedder.encode(sentences)])


def word2vec_sentence_means(sentences, path):
    """-> float32 [n_sentences, dim]: mean of the known tokens' vectors (zeros when none is known)."""
    from paddle_elmo.classify.word2vec_features import lookup_table
    from paddle_elmo.text.word_vectors import load_vectors
    table, ids, _ = lookup_table(sentences, load_vectors(path), oov='skip')
    return np.stack([table[i].mean(axis=0) if len(i) else np.zeros(table.shape[1], np.float32) for i in ids])


def probe(features, labels, folds):
    """Per-fold test accuracy of a standardized logistic regression on `features` [n, dim]."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    accuracies = []
    for fold in folds:
        train = np.concatenate([fold.train, fold.dev])
        model = make_pipeline(StandardScaler(), LogisticRegression(C=1.0, max_iter=5000))
        model.fit(features[train], labels[train])
        accuracies.append(float(model.score(features[fold.test], labels[fold.test])))
    return accuracies


def feature_sets(elmo, word2vec):
    """(name, features [n, dim]) for every row the inputs allow."""
    sets = []
    if elmo is not None:
        sets += [(f'elmo layer {k}', elmo[:, k]) for k in range(elmo.shape[1])]
        sets += [('elmo average of layers', elmo.mean(axis=1)), ('elmo all layers', elmo.reshape(len(elmo), -1))]
    if word2vec is not None:
        sets.append(('word2vec', word2vec))
    if elmo is not None and word2vec is not None:
        sets.append(('word2vec + elmo all layers', np.concatenate([word2vec, elmo.reshape(len(elmo), -1)], axis=1)))
    return sets


def main():
    from paddle_elmo.classify.data import make_folds, read_polarity
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    add_model_source(p, bundled_default=True)
    p.add_argument('--word2vec', help='also probe these word vectors (.bin / .txt), alone and beside ELMo')
    p.add_argument('--no_elmo', action='store_true', help='word2vec only')
    p.add_argument('--data_dir', default=places.RT_POLARITY)
    p.add_argument('--threads', type=int, default=2)
    a = p.parse_args()
    cpu_threads.set_threads(a.threads)
    machine.print_machine_info()
    data = read_polarity(a.data_dir)
    folds = make_folds(data.labels, 10, seed=1)
    elmo = None if a.no_elmo else elmo_sentence_means(data.sentences, model_source(a))
    word2vec = word2vec_sentence_means(data.sentences, a.word2vec) if a.word2vec else None
    rows = []
    for name, features in feature_sets(elmo, word2vec):
        accuracies = probe(features, data.labels, folds)
        rows.append({'features': name, 'dim': features.shape[1], 'accuracy_mean': round(float(np.mean(accuracies)), 4),
                     'accuracy_std': round(float(np.std(accuracies, ddof=1)), 4)})
        print(rows[-1], file=sys.stderr, flush=True)
    markdown_tables.print_table(rows)


if __name__ == '__main__':
    run(main)
