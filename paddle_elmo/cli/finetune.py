"""ELMo + bag-of-vectors sentence classification (rt-polarity by default), k-fold cross-validated.

    python run_finetune.py --data_dir ../shared/data/rt-polarity      # the bundled model (pretrained/)
    python run_finetune.py --data_dir ../shared/data/rt-polarity --init_from_ckpt checkpoints/final \
        --seed 1 --output_json results/elmo_bow.json
    python run_finetune.py --data_dir ../shared/data/rt-polarity --options_file options.json \
        --weight_file weights.hdf5 --folds 1 --epochs 2        # a quick smoke run
    python run_finetune.py --data_dir ../shared/data/zh-sentiment --pos_file online_shopping.pos \
        --neg_file online_shopping.neg --init_from_ckpt zh/final  # raw Chinese, split by the model's tokenizer

Lines are split into tokens by --tokenizer, by default the one the model records in its
options.json (whitespace for bilm-tf files). Model: char ids -> biLM -> scalar mix (softmax layer
weights and gamma, optional layer norm, L2 toward equal weights) -> dropout -> masked mean over
real tokens -> MLP -> 2 classes (the head and protocol are classifier.py's, shared with
word2vec_base.py).

The biLM is frozen by default: its layers are computed once per sentence (stateless, boundaries
removed) into an on-disk float32 cache that every epoch and every fold reuse, so an epoch costs
only the scalar mix and the head. --trainable fine-tunes the biLM at its own --bilm_lr; it is then
recomputed every batch, and each fold starts again from the loaded weights.
"""
import argparse
import os
import shutil
import sys
import tempfile
import time
from collections import Counter

import args as cli  # first: it quiets Paddle's import-time noise on stderr
import numpy as np
from runtime import paddle, use_device  # before paddle.nn: Paddle imported quietly
import paddle.nn as nn

from classifier import (SentenceClassifier, add_protocol_args, check_protocol_args, cross_validate, load_data,
                        make_folds, pack, report, runs_on_this_rank, show_bars, train_config)
from dataset import InputMapper, long_tokens_report, model_tokenizer
from downstream import Elmo
from embedder import ELMoEmbedder
from model_io import BUNDLED_MODEL_DIR, load_bilm, model_options_file, read_model_config
from word_vectors import Word2VecFeatures, load_vectors, lookup_table


class ActivationCache:
    """A frozen biLM's layers for every sentence, computed once.

    One float32 memmap [total tokens, n_layers + 1, 2 * projection_dim] in a fresh temporary
    directory (sentence boundaries removed); rows offsets[i]:offsets[i + 1] belong to sentence i.
    On disk rather than in RAM because a 1024-dim model on rt-polarity needs ~3 GB; the OS page
    cache keeps in memory what fits. `close()` deletes the directory.
    """

    def __init__(self, bilm, sentences, directory=None, batch_size=64, progress=True):
        from tqdm import tqdm
        lengths = np.array([len(s) for s in sentences], dtype=np.int64)
        self.offsets = np.concatenate([[0], np.cumsum(lengths)])
        self.n_layers, self.dim = bilm.n_layers + 1, 2 * bilm.projection_dim
        self.directory = tempfile.mkdtemp(prefix='elmo-layer-cache-', dir=directory)
        try:
            self.array = np.memmap(os.path.join(self.directory, 'layers.f32'), dtype=np.float32, mode='w+',
                                   shape=(int(self.offsets[-1]), self.n_layers, self.dim))
            # ELMoEmbedder runs each distinct token through the char CNN once (its token cache).
            embedder = ELMoEmbedder(bilm=bilm, batch_size=batch_size)
            order = np.argsort(lengths, kind='stable')  # similar lengths share a batch: little padding
            chunk = batch_size * 16
            with tqdm(total=len(sentences), desc='caching biLM layers', unit='sent', disable=not show_bars(progress)) as bar:
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
        char_ids, word_ids, lengths = self.mapper.batch([self.sentences[i] for i in indices])
        out = self.elmo(None if char_ids is None else paddle.to_tensor(char_ids), lengths, word_ids)
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


def model_builder(bilm, sentences, trainable=False, bilm_lr=2e-5, layer_norm=False, l2_coef=1e-3,
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


def add_elmo_args(p):
    e = p.add_argument_group('ELMo')
    e.add_argument('--trainable', action='store_true',
                   help='fine-tune the biLM at --bilm_lr (recomputed every batch); default: frozen and cached')
    e.add_argument('--bilm_lr', type=float, default=2e-5, help='Adam learning rate of the biLM with --trainable')
    e.add_argument('--layer_norm', action='store_true', help='layer-normalise each biLM layer before mixing')
    e.add_argument('--elmo_layer', default='mix', type=_elmo_layer,
                   help='the feature: mix (a learned scalar mix of all layers), top (the top LSTM layer alone, '
                   'bilm-tf\'s use_top_only), or a layer number alone: 0 the token layer (TF-Hub\'s word_emb), '
                   '1, 2 the LSTM layers (lstm_outputs1, lstm_outputs2)')
    e.add_argument('--l2_coef', type=float, default=1e-3,
                   help='L2 penalty on the scalar-mix weights (pulls them toward equal weights)')
    e.add_argument('--no_cache', action='store_true',
                   help='frozen biLM: recompute its layers every batch instead of caching them on disk')
    e.add_argument('--cache_dir', help='directory for the layer cache (default: the system temp dir); '
                   'the cache is deleted at exit')
    e.add_argument('--bilm_batch_size', type=int, default=64, help='sentences per biLM batch when caching')
    e.add_argument('--concat_word2vec', help='word2vec file (.bin / .txt): concatenate each token\'s word vector to '
                   'its ELMo features (the paper\'s use of ELMo); tokens without a vector share one learned vector')


def _elmo_layer(value):
    """--elmo_layer: 'mix' -> None, 'top' -> -1, 'K' -> K (checked against the model once it is loaded)."""
    if value in ('mix', 'top'):
        return {'mix': None, 'top': -1}[value]
    try:
        layer = int(value)
    except ValueError:
        layer = -1
    if layer < 0:
        raise argparse.ArgumentTypeError(f'expected mix, top or a layer number >= 0, got {value!r}')
    return layer


def check_elmo_args(a):
    if a.bilm_lr <= 0:
        raise cli.InputError(f'--bilm_lr must be > 0, got {a.bilm_lr}')
    if a.l2_coef < 0:
        raise cli.InputError(f'--l2_coef must be >= 0, got {a.l2_coef}')
    if a.bilm_batch_size < 1:
        raise cli.InputError(f'--bilm_batch_size must be >= 1, got {a.bilm_batch_size}')
    if a.cache_dir and (a.trainable or a.no_cache):
        raise cli.InputError('--cache_dir is for the frozen biLM\'s cache; it has no use with '
                            '--trainable or --no_cache')
    if a.concat_word2vec and not os.path.isfile(a.concat_word2vec):
        raise FileNotFoundError(f'{a.concat_word2vec}: --concat_word2vec file not found')
    if a.cache_dir and not os.path.isdir(a.cache_dir):
        raise FileNotFoundError(f'{a.cache_dir}: --cache_dir is not a directory')


def main():
    p = cli.parser(__doc__.split('\n')[0])
    cli.add_model_source(p, bundled_default=True)
    cli.add_device(p)
    cli.add_tokenizer(p, group=add_protocol_args(p))
    add_elmo_args(p)
    a = p.parse_args()
    source = cli.model_source(a)
    check_protocol_args(a)
    check_elmo_args(a)
    if not runs_on_this_rank('run_finetune.py'):
        return 0
    use_device(a.device, cpu_threads=a.cpu_threads)
    # The text is split by the tokenizer the model records (unless --tokenizer): its options.json is
    # read first, the weights after the data, so that a bad data file fails before they load.
    recorded = read_model_config(model_options_file(**source)).tokenizer
    data = load_data(a, model_tokenizer(recorded, a.tokenizer))
    folds = make_folds(data.labels, a.folds, a.seed, a.dev_fraction)
    bilm = load_bilm(**source)
    print(long_tokens_report(Counter(t for s in data.sentences for t in s), bilm.config.max_characters_per_token),
          file=sys.stderr)
    if a.elmo_layer is not None and a.elmo_layer > bilm.n_layers:
        raise cli.InputError(f'--elmo_layer {a.elmo_layer}: the model has layers 0..{bilm.n_layers} (0: the token '
                             f'layer, 1..{bilm.n_layers}: the LSTM layers)')
    info = {'model': {k: v for k, v in source.items() if v} or {'bundled': BUNDLED_MODEL_DIR},
            'elmo_layer': 'mix' if a.elmo_layer is None else a.elmo_layer,
            'projection_dim': bilm.projection_dim, 'n_layers': bilm.n_layers + 1, 'trainable': a.trainable,
            'cached': not (a.trainable or a.no_cache)}
    cache = None
    try:
        if info['cached']:
            start = time.time()
            cache = ActivationCache(bilm, data.sentences, a.cache_dir, a.bilm_batch_size, not a.quiet)
            info['cache_seconds'] = time.time() - start
            info['cache_bytes'] = cache.nbytes
            print(f'cached {len(data.sentences)} sentences\' biLM layers ({cache.nbytes / 2 ** 20:.0f} MiB) '
                  f'in {info["cache_seconds"]:.1f} s', file=sys.stderr)
        word_table = None
        if a.concat_word2vec:
            table, token_ids, stats = lookup_table(data.sentences, load_vectors(a.concat_word2vec))
            word_table = (table, token_ids)
            info.update(concat_word2vec=a.concat_word2vec, word2vec_dim=table.shape[1], word2vec_oov=stats)
        build = model_builder(bilm, data.sentences, a.trainable, a.bilm_lr, a.layer_norm, a.l2_coef,
                              a.hidden_dim, a.dropout, cache, a.feature_norm, word_table, a.elmo_layer)
        results = cross_validate(data, folds, build, train_config(a), a.run_folds)
    finally:
        if cache is not None:
            cache.close()
    report(results, a, data, info)


if __name__ == '__main__':
    cli.run(main)
