"""A frozen biLM's layers for every sentence of a dataset, computed once and kept on disk
(`ActivationCache`), so that every epoch and every fold of finetune reads them instead of running the
biLM again."""
import logging
import os
import shutil
import tempfile

import numpy as np

import paddle

from paddle_elmo.logs import progress_bar
from paddle_elmo.use.embedder import ELMoEmbedder

log = logging.getLogger(__name__)


class ActivationCache:
    """A frozen biLM's layers for every sentence, computed once.

    One float32 memmap [total tokens, n_layers + 1, 2 * projection_dim] in a fresh temporary
    directory (sentence boundaries removed); rows offsets[i]:offsets[i + 1] belong to sentence i.
    On disk rather than in RAM because a large model's layers for a whole dataset may not fit in
    memory; the OS page cache keeps in memory what fits. `close()` deletes the directory.

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
