"""Training and evaluating a classifier: Adam (`make_optimizer`), cross-entropy (+ the features'
penalty), early stopping on dev accuracy with the best epoch's weights restored (`train_fold`),
then test accuracy; `cross_validate` runs the folds, each seeded on its own.
"""
import logging
import random
import time
from dataclasses import dataclass

import numpy as np

import paddle
import paddle.nn as nn
import paddle.nn.functional as F

from paddle_elmo.logs import show_progress
from paddle_elmo.runtime import set_mode

log = logging.getLogger(__name__)


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
