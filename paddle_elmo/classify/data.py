"""The labelled sentences the classifiers read and their cross-validation folds.

- `read_polarity` reads a directory with one positive and one negative file (one sentence per line,
  UTF-8, else Latin-1 for Latin-script text: text.encodings) and splits each line with a tokenizer
  (tokenizers.get_tokenizer: the model's, e.g. moses, which splits `it's` -> `it 's` as the
  pretraining corpus does); `load_data` does so for a command, says how each file was read and cuts
  sentences to --max_seq_len;
- `make_folds` gives stratified k-fold cross-validation with a dev split carved from each training
  fold (early stopping), or one stratified split for smoke runs.
"""
import logging
import os
from dataclasses import dataclass
from typing import Optional

import numpy as np

from paddle_elmo.fileio import InputError, require_package
from paddle_elmo.text.encodings import read_text_file
from paddle_elmo.text.tokenizers import get_tokenizer

log = logging.getLogger(__name__)

SINGLE_SPLIT_TEST_FRACTION = 0.1  # --folds 1: the test share (a 10-fold fold's size)
BOUNDARY_TOKENS = 2  # ELMo's <S> and </S>, which --max_seq_len counts


@dataclass
class Dataset:
    sentences: list  # token lists
    labels: np.ndarray  # int64 [n]: 1 for the positive file, 0 for the negative one
    sources: dict  # file path -> {'lines': sentences, 'encoding': 'utf-8' | 'windows-1252', 'empty_lines': [numbers]}
    tokenizer: str = 'whitespace'  # the one that split the lines (tokenizers.TOKENIZERS)
    cut: Optional[dict] = None  # --max_seq_len: {'max_seq_len', 'sentences', 'tokens'} cut (load_data)


def read_sentences(path, tokenizer='whitespace'):
    """A one-sentence-per-line file -> (token lists, {'lines': sentences read, 'encoding': 'utf-8' |
    'windows-1252', 'empty_lines': the 1-based numbers of the lines skipped}).

    Each line is split by the named `tokenizer` (tokenizers.get_tokenizer). The file is decoded as
    text.encodings decides for that tokenizer: UTF-8, else Latin-1 for Latin-script text (the original
    rt-polarity release is Latin-1), while a file of Chinese text (jieba, chars) that is not UTF-8 is an
    InputError naming the line. Empty lines are not sentences: they are skipped, and listed.
    """
    if not os.path.isfile(path):
        raise FileNotFoundError(f'{path}: data file not found')
    split = get_tokenizer(tokenizer)
    text, encoding = read_text_file(path, tokenizer)
    lines = text.split('\n')
    if lines and lines[-1] == '':
        lines.pop()  # the file's final newline
    sentences, empty = [], []
    for number, line in enumerate(lines, 1):
        tokens = split(line)
        if tokens:
            sentences.append(tokens)
        else:
            empty.append(number)
    if not sentences:
        raise InputError(f'{path}: no sentences')
    return sentences, {'lines': len(sentences), 'encoding': encoding, 'empty_lines': empty}


def read_polarity(data_dir, pos_file='rt-polarity.pos', neg_file='rt-polarity.neg', tokenizer='whitespace'):
    """Read data_dir/pos_file (label 1) and data_dir/neg_file (label 0) into a Dataset: lines split
    by `tokenizer` (read_sentences)."""
    if not os.path.isdir(data_dir):
        raise FileNotFoundError(f'{data_dir}: --data_dir is not a directory')
    sentences, labels, sources = [], [], {}
    for name, label in ((pos_file, 1), (neg_file, 0)):
        path = os.path.join(data_dir, name)
        part, sources[path] = read_sentences(path, tokenizer)
        sentences += part
        labels += [label] * len(part)
    return Dataset(sentences, np.array(labels, dtype=np.int64), sources, tokenizer)


def load_data(data_dir, pos_file='rt-polarity.pos', neg_file='rt-polarity.neg', tokenizer='whitespace',
              max_seq_len=None):
    """Read the dataset (read_polarity's arguments: the protocol's flags of the same names), its lines
    split by `tokenizer`, and say how each file was decoded and which empty lines were skipped (INFO;
    WARNING when a file had empty lines, as corpus files). With max_seq_len, sentences keep their
    first max_seq_len - 2 tokens (ELMo adds <S> and </S>; word2vec_base.py keeps the same tokens, so
    that both scripts classify the same text), and the cut is reported (WARNING when tokens were left
    out) and kept in `data.cut`."""
    data = read_polarity(data_dir, pos_file, neg_file, tokenizer)
    for path, info in data.sources.items():
        empty = info['empty_lines']
        skipped = (f'; skipped {len(empty)} empty line(s): {", ".join(map(str, empty[:10]))}'
                   f'{", ..." if len(empty) > 10 else ""}' if empty else '')
        log.log(logging.WARNING if empty else logging.INFO, 'read %s: %d sentences (%s) split by %s%s', path,
                info['lines'], info['encoding'], tokenizer, skipped)
    if max_seq_len:
        limit = max_seq_len - BOUNDARY_TOKENS
        excess = [len(s) - limit for s in data.sentences if len(s) > limit]
        n_tokens = sum(map(len, data.sentences))
        data.sentences = [s[:limit] for s in data.sentences]
        data.cut = {'max_seq_len': max_seq_len, 'sentences': len(excess), 'tokens': sum(excess)}
        log.log(logging.WARNING if excess else logging.INFO, '--max_seq_len %d: cut %d of %d sentences to %d tokens '
                '(%d of %d tokens left out)', max_seq_len, len(excess), len(data.sentences), limit, sum(excess),
                n_tokens)
    return data


@dataclass
class Fold:
    train: np.ndarray  # sorted sentence indices
    dev: np.ndarray
    test: np.ndarray


def make_folds(labels, n_folds=10, seed=1, dev_fraction=0.1):
    """Stratified folds: each sentence is in exactly one test set; dev is carved from the rest.

    n_folds == 1: one stratified split with SINGLE_SPLIT_TEST_FRACTION of the data as test.
    The same (labels, n_folds, seed, dev_fraction) always give the same folds.
    """
    model_selection = require_package('sklearn.model_selection', 'classify')
    labels = np.asarray(labels)
    if n_folds < 1:
        raise InputError(f'--folds must be >= 1, got {n_folds}')
    if not 0 < dev_fraction < 1:
        raise InputError(f'--dev_fraction must be between 0 and 1, got {dev_fraction}')
    smallest = int(np.bincount(labels).min()) if len(labels) else 0
    needed = max(n_folds, 2)
    if smallest < needed:
        raise InputError(f'--folds {n_folds} needs at least {needed} sentences per class; the '
                         f'smallest class has {smallest}')
    everything = np.arange(len(labels))
    if n_folds == 1:
        try:
            rest, test = model_selection.train_test_split(everything, test_size=SINGLE_SPLIT_TEST_FRACTION,
                                                          stratify=labels, random_state=seed)
        except ValueError as e:
            raise InputError(f'--folds 1: cannot split {len(labels)} sentences into a stratified '
                             f'{SINGLE_SPLIT_TEST_FRACTION:.0%} test set ({e})') from None
        outer = [(rest, test)]
    else:
        outer = model_selection.StratifiedKFold(n_folds, shuffle=True, random_state=seed).split(everything, labels)
    folds = []
    for k, (rest, test) in enumerate(outer):
        try:
            train, dev = model_selection.train_test_split(rest, test_size=dev_fraction, stratify=labels[rest],
                                                           random_state=seed + k)
        except ValueError as e:
            raise InputError(f'--dev_fraction {dev_fraction}: cannot carve a stratified dev split '
                             f'from {len(rest)} training sentences ({e})') from None
        folds.append(Fold(np.sort(train), np.sort(dev), np.sort(test)))
    return folds
