"""Two-class sentence classification with a bag-of-vectors head: the protocol both sides share.

run_finetune.py (ELMo features) and word2vec_base.py (word2vec features) differ only in the
features module they plug into `SentenceClassifier`; everything else lives here, so the two
numbers they print are comparable:

- data: `read_polarity` reads a directory with one positive and one negative file (one sentence
  per line, UTF-8, else Latin-1 for Latin-script text: text.encodings) and splits each line with
  a tokenizer (tokenizers.get_tokenizer: the model's, e.g. moses, which splits `it's` -> `it 's` as
  the pretraining corpus does);
- folds: `make_folds` gives stratified k-fold cross-validation with a dev split carved from each
  training fold (early stopping), or one stratified split for smoke runs;
- model: token features [tokens, dim] -> dropout -> mean per sentence -> MLP -> logits [batch, 2];
- training: Adam, cross-entropy (+ the features' penalty), early stopping on dev accuracy with the
  best epoch's weights restored, then test accuracy;
- results: a table and a JSON file with the same keys from both scripts.

A features module is an `nn.Layer` whose `forward(indices)` takes sentence indices (numpy int
array) into the dataset and returns (tokens [tokens, dim] float32, lengths int64 numpy [batch]):
the batch's token features packed sentence after sentence, without padding (`pack` makes that from a
padded [batch, time, dim] + mask). Packed, the features, the dropout, the mean and their backward
cost what the real tokens cost: a padded batch of long-tailed reviews is 4-5x larger. It may also
define `penalty()` (a loss term), `lr_groups()` (a list of (parameters, learning rate) that train
at their own rate), `layer_weights()` (JSON-able, for the output) and `dim` (its feature size).
"""
import logging
import os
import random
import time
import warnings
from dataclasses import dataclass
from typing import Optional

import numpy as np

import paddle
import paddle.nn as nn
import paddle.nn.functional as F

from paddle_elmo.runtime import set_mode
from paddle_elmo.text.tokenizers import get_tokenizer
from paddle_elmo.fileio import InputError, require_package
from paddle_elmo.text.encodings import read_text_file
from paddle_elmo.use.head_options import FEATURE_NORMS
from paddle_elmo.logs import show_progress

log = logging.getLogger(__name__)

SINGLE_SPLIT_TEST_FRACTION = 0.1  # --folds 1: the test share (a 10-fold fold's size)
BOUNDARY_TOKENS = 2  # ELMo's <S> and </S>, which --max_seq_len counts


# --------------------------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------------------------

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


# --------------------------------------------------------------------------------------------
# Folds
# --------------------------------------------------------------------------------------------

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


# --------------------------------------------------------------------------------------------
# Model
# --------------------------------------------------------------------------------------------

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


def make_optimizer(model, lr, weight_decay=0.0):
    """Adam over the trainable parameters; those in features.lr_groups() get their own rate.
    weight_decay: L2 regularisation coefficient, as Paddle's Adam(weight_decay=float)."""
    special = model.features.lr_groups() if hasattr(model.features, 'lr_groups') else []
    taken = {id(p) for params, _ in special for p in params}
    groups = [{'params': [p for p in model.parameters() if not p.stop_gradient and id(p) not in taken]}]
    for params, group_lr in special:
        # Paddle reads a group's learning_rate as a scale of the optimizer's rate.
        groups.append({'params': [p for p in params if not p.stop_gradient], 'learning_rate': group_lr / lr})
    return paddle.optimizer.Adam(learning_rate=lr, parameters=[g for g in groups if g['params']],
                                 weight_decay=weight_decay or None)


# --------------------------------------------------------------------------------------------
# Training and evaluation
# --------------------------------------------------------------------------------------------

@dataclass
class TrainConfig:
    lr: float = 1e-3
    batch_size: int = 32
    epochs: int = 20
    patience: int = 3
    seed: int = 1
    progress: bool = True  # tqdm bars (on a terminal) and the per-epoch and per-fold lines (logged at INFO)
    weight_decay: float = 0.0
    logging_step: int = 0  # log the running loss every this many batches (0: per epoch only)


def set_seed(seed):
    random.seed(seed)
    np.random.seed(seed % 2 ** 32)
    paddle.seed(seed)


def predict(model, indices, batch_size, sentences=None):
    """Logits float32 [len(indices), classes] in the order of `indices` (eval mode, no gradients).

    With `sentences`, batches are formed from length-sorted indices: little padding, same results.
    """
    indices = np.asarray(indices)
    order = np.argsort([len(sentences[i]) for i in indices], kind='stable') if sentences else \
        np.arange(len(indices))
    set_mode(model, False)
    parts = []
    with paddle.no_grad():
        for start in range(0, len(order), batch_size):
            parts.append(model(indices[order[start:start + batch_size]]).numpy())
    logits = np.concatenate(parts) if parts else np.zeros((0, 2), np.float32)
    out = np.empty_like(logits)
    out[order] = logits
    return out


def evaluate(model, indices, labels, batch_size, sentences=None):
    """-> (accuracy, mean cross-entropy) of `model` on the sentences `indices`."""
    logits = predict(model, indices, batch_size, sentences)
    gold = labels[np.asarray(indices)]
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    loss = float(-log_probs[np.arange(len(gold)), gold].mean())
    return float((logits.argmax(axis=1) == gold).mean()), loss


def _trainable_snapshot(model):
    """Everything training changes: the trainable parameters and the batch-norm running
    statistics (Paddle keeps those as stop_gradient parameters); not the frozen biLM."""
    names = {name for name, p in model.named_parameters() if not p.stop_gradient}
    for prefix, layer in model.named_sublayers(include_self=True):
        if isinstance(layer, nn.BatchNorm1D):
            names.update(f'{prefix}.{stat}'.lstrip('.') for stat in ('_mean', '_variance'))
    return {name: t.numpy().copy() for name, t in model.state_dict().items() if name in names}


def _restore(model, snapshot):
    with paddle.no_grad():
        for name, t in model.state_dict().items():
            if name in snapshot:
                t.set_value(snapshot[name])


def train_epoch(model, optimizer, indices, labels, batch_size, rng, desc, progress=True, logging_step=0):
    """One pass over `indices` in a random order -> mean training loss."""
    from tqdm import tqdm
    set_mode(model, True)
    order = rng.permutation(indices)
    total, batches = 0.0, 0
    bar = tqdm(range(0, len(order), batch_size), desc=desc, unit='batch', leave=False,
               disable=not show_progress(progress, log))
    for start in bar:
        idx = order[start:start + batch_size]
        loss = F.cross_entropy(model(idx), paddle.to_tensor(labels[idx]))
        penalty = model.penalty()
        if penalty is not None:
            loss = loss + penalty
        loss.backward()
        optimizer.step()
        optimizer.clear_grad()
        total += float(loss)
        batches += 1
        bar.set_postfix(loss=f'{total / batches:.4f}', refresh=False)
        if logging_step and batches % logging_step == 0:
            log.info('%s step %d, loss %.4f', desc, batches, total / batches)
    return total / max(batches, 1)


def train_fold(model, data, fold, cfg, name='fold'):
    """Train on fold.train, early-stop on fold.dev accuracy, restore the best epoch's weights.

    Returns {'dev_accuracy', 'best_epoch', 'epochs_run'}.
    """
    optimizer = make_optimizer(model, cfg.lr, cfg.weight_decay)
    rng = np.random.default_rng(cfg.seed)
    best_accuracy, best_epoch, snapshot = -1.0, 0, None
    epoch = 0
    for epoch in range(1, cfg.epochs + 1):
        train_loss = train_epoch(model, optimizer, fold.train, data.labels, cfg.batch_size, rng,
                                 f'{name} epoch {epoch}/{cfg.epochs}', cfg.progress, cfg.logging_step)
        dev_accuracy, dev_loss = evaluate(model, fold.dev, data.labels, cfg.batch_size, data.sentences)
        improved = dev_accuracy > best_accuracy
        if improved:
            best_accuracy, best_epoch, snapshot = dev_accuracy, epoch, _trainable_snapshot(model)
        if cfg.progress:
            log.info('%s epoch %d: train loss %.4f, dev loss %.4f, dev accuracy %.4f%s', name, epoch, train_loss,
                     dev_loss, dev_accuracy, ' *' if improved else '')
        if epoch - best_epoch >= cfg.patience:
            break
    if snapshot is not None:
        _restore(model, snapshot)
    return {'dev_accuracy': best_accuracy, 'best_epoch': best_epoch, 'epochs_run': epoch}


def cross_validate(data, folds, build_model, cfg, run_folds=None):
    """For each fold (or only those numbered in run_folds, 1-based): build_model(k) (after seeding
    with cfg.seed + k), train, test. A fold's result does not depend on which others run.

    Returns a list of per-fold dicts: fold (1-based), test_accuracy, dev_accuracy, best_epoch,
    epochs_run, seconds, layer_weights.
    """
    results = []
    for k, fold in enumerate(folds):
        if run_folds and k + 1 not in run_folds:
            continue
        start = time.time()
        set_seed(cfg.seed + k)  # each fold's initialisation and order do not depend on earlier folds
        model = build_model(k)
        fold_cfg = TrainConfig(**{**cfg.__dict__, 'seed': cfg.seed + k})
        result = train_fold(model, data, fold, fold_cfg, name=f'fold {k + 1}/{len(folds)}')
        result['test_accuracy'], _ = evaluate(model, fold.test, data.labels, cfg.batch_size, data.sentences)
        result['layer_weights'] = model.layer_weights()
        result['seconds'] = time.time() - start
        result['fold'] = k + 1
        if cfg.progress:
            log.info('fold %d/%d: test accuracy %.4f (best epoch %d, %.1f s)', k + 1, len(folds),
                     result['test_accuracy'], result['best_epoch'], result['seconds'])
        results.append(result)
    return results


# --------------------------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------------------------

def summarize(results, args, data, features_info=None):
    """The output JSON: the same keys from both commands. accuracy_std is the sample std (ddof=1).
    args: the settings to record ({flag: value})."""
    accuracies = [r['test_accuracy'] for r in results]
    return {
        'accuracy_mean': float(np.mean(accuracies)),
        'accuracy_std': float(np.std(accuracies, ddof=1)) if len(accuracies) > 1 else 0.0,
        'fold_accuracies': accuracies,
        'folds_run': [r['fold'] for r in results],
        'layer_weights': [r['layer_weights'] for r in results] if results[0]['layer_weights'] is not None else None,
        'args': dict(args),
        'fold_dev_accuracies': [r['dev_accuracy'] for r in results],
        'fold_best_epochs': [r['best_epoch'] for r in results],
        'fold_seconds': [r['seconds'] for r in results],
        'data': {'sources': data.sources, 'sentences': len(data.sentences), 'tokenizer': data.tokenizer, 'cut': data.cut},
        'features': features_info or {},
    }


def format_table(summary):
    lines = [f'{"fold":>4}  {"dev acc":>7}  {"test acc":>8}  {"best epoch":>10}  {"seconds":>8}']
    for k, dev, test, epoch, seconds in zip(summary['folds_run'], summary['fold_dev_accuracies'],
                                            summary['fold_accuracies'], summary['fold_best_epochs'],
                                            summary['fold_seconds']):
        lines.append(f'{k:>4}  {dev:>7.4f}  {test:>8.4f}  {epoch:>10}  {seconds:>8.1f}')
    n = len(summary['fold_accuracies'])
    lines.append(f'accuracy {summary["accuracy_mean"]:.4f} ± {summary["accuracy_std"]:.4f} '
                 f'({n} fold{"s" if n > 1 else ""}, mean ± sample std)')
    return '\n'.join(lines)
