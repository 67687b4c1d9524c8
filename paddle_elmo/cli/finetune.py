"""ELMo + bag-of-vectors sentence classification (rt-polarity by default), k-fold cross-validated.

    python run_finetune.py --data_dir data/sentence-polarity-dataset-v1      # the bundled model (pretrained/)
    python run_finetune.py --data_dir data/sentence-polarity-dataset-v1 --init_from_ckpt checkpoints/final \
        --seed 1 --output_json results/elmo_bow.json
    python run_finetune.py --data_dir data/sentence-polarity-dataset-v1 --options_file options.json \
        --weight_file weights.hdf5 --folds 1 --epochs 2        # a quick smoke run
    python run_finetune.py --data_dir data/zh-sentiment --pos_file online_shopping.pos \
        --neg_file online_shopping.neg --init_from_ckpt zh/final  # raw Chinese, split by the model's tokenizer

Lines are split into tokens by --tokenizer, by default the one the model records in its
options.json (moses for the bundled model: raw or tokenized English reviews give the same tokens;
whitespace for bilm-tf files). Model: char ids -> biLM -> scalar mix (softmax layer
weights and gamma, optional layer norm, L2 toward equal weights) -> dropout -> masked mean over
real tokens -> MLP -> 2 classes (the head and protocol are paddle_elmo/classify/'s, shared
with word2vec_base.py).

The biLM is frozen by default: its layers are computed once per sentence (stateless, boundaries
removed) into an on-disk float32 cache that every epoch and every fold reuse, so an epoch costs
only the scalar mix and the head. --trainable fine-tunes the biLM at its own --bilm_lr; it is then
recomputed every batch, and each fold starts again from the loaded weights.
--inference_model computes the frozen layers with an export of the same model instead (e.g. its
int8 export under --inference_backend onnxruntime): the accuracy a deployed model's features give.
"""
import argparse
import logging
import os
import time
from collections import Counter

from paddle_elmo.cli.arguments import (Switch, add_device, add_tokenizer, float_or_zero, parser, positive_float,
                                       positive_int)
from paddle_elmo.cli.glossary import option_strings
from paddle_elmo.cli.model_flags import add_inference_model, add_model_source, model_source
from paddle_elmo.cli.runner import run
from paddle_elmo.cli.protocol import (add_protocol_args, check_protocol_args, data_flags, report, runs_on_this_rank,
                                      settings, train_config)
from paddle_elmo.classify.data import load_data, make_folds
from paddle_elmo.text.tokenizers import model_tokenizer
from paddle_elmo.use.languages import warn_if_mostly_unknown
from paddle_elmo.text.vocabulary import long_tokens_report
from paddle_elmo.fileio import InputError, require_package
from paddle_elmo.runtime import use_device
from paddle_elmo.text.word_vectors import check_vectors_file, read_word_vectors

log = logging.getLogger(__name__)

def add_elmo_args(p):
    e = p.add_argument_group('ELMo')
    e.add_argument('--trainable', action=Switch, default=False,
                   help='fine-tune the biLM at --bilm_lr (recomputed every batch); off: frozen (and cached)')
    e.add_argument('--bilm_lr', type=positive_float, default=2e-5,
                   help='Adam learning rate of the biLM with --trainable')
    e.add_argument('--layer_norm', action=Switch, default=False,
                   help='layer-normalise each biLM layer before mixing')
    e.add_argument('--elmo_layer', default='mix', type=_elmo_layer,
                   help='the feature: mix (a learned scalar mix of all layers), top (the top LSTM layer alone, '
                   'bilm-tf\'s use_top_only), or a layer number alone: 0 the token layer (TF-Hub\'s word_emb), '
                   '1, 2 the LSTM layers (lstm_outputs1, lstm_outputs2)')
    e.add_argument('--l2_coef', type=float_or_zero, default=1e-3,
                   help='L2 penalty on the scalar-mix weights (pulls them toward equal weights)')
    e.add_argument('--cache', action=Switch, default=True,
                   help='frozen biLM: compute its layers once and cache them on disk (off: recompute them every batch)')
    e.add_argument('--cache_dir', help='directory for the layer cache (default: the system temp dir); '
                   'the cache is deleted at exit')
    e.add_argument('--bilm_batch_size', type=positive_int, default=64, help='sentences per biLM batch when caching')
    e.add_argument(*option_strings('word_vectors'),
                   help='a word-vector file (word2vec .bin / .txt): concatenate each token\'s vector to its ELMo '
                   'features (the paper\'s use of ELMo); tokens without a vector share one learned vector')


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
    if a.cache_dir and (a.trainable or not a.cache):
        raise InputError('--cache_dir is for the frozen biLM\'s cache; it has no use with '
                         '--trainable or --no_cache')
    if a.word_vectors:
        check_vectors_file(a.word_vectors)
    if a.inference_model and (a.trainable or not a.cache):
        raise InputError('--inference_model fills the frozen biLM\'s cache; it has no use with --trainable or '
                         '--no_cache')
    if a.inference_model and a.device != 'cpu':
        raise InputError('--inference_model runs on the CPU here; use --device cpu')
    if a.cache_dir and not os.path.isdir(a.cache_dir):
        raise FileNotFoundError(f'{a.cache_dir}: --cache_dir is not a directory')


def exported_embedder(a, bilm, sentences, n_check=8):
    """--inference_model's InferenceEmbedder, after checking on the first sentences that it is an
    export of `bilm`: every token's cosine within the int8 tolerance (a float export agrees far closer)."""
    from paddle_elmo.export.export_checks import INT8_MIN_COSINE, token_cosines
    from paddle_elmo.use.embedder import ELMoEmbedder
    from paddle_elmo.export.inference import InferenceEmbedder
    exported = InferenceEmbedder(a.inference_model, backend=a.inference_backend, batch_size=a.bilm_batch_size,
                                 onednn=a.onednn, threads=a.cpu_threads, tokenizer=a.tokenizer)
    check = [s for s in sentences[:n_check] if s]
    got = exported.embed_batch(check)
    expected = ELMoEmbedder(bilm=bilm, stateful=False).embed_batch(check)
    if any(g.shape != e.shape for g, e in zip(got, expected)):
        raise InputError(f'--inference_model {a.inference_model}: its layers have shape {got[0].shape}, the model\'s '
                         f'{expected[0].shape}: not an export of this model')
    worst = float(token_cosines(got, expected).min(initial=1.0))
    if worst < INT8_MIN_COSINE:
        raise InputError(f'--inference_model {a.inference_model}: a token\'s cosine with the model\'s layers is '
                         f'{worst:.3f} (< {INT8_MIN_COSINE}) on the first {len(check)} sentences: not an export '
                         f'of this model')
    log.info('%s (%s, %s) agrees with the model: worst token cosine %.4f on %d sentences', a.inference_model,
             exported.backend, exported.precision, worst, len(check))
    return exported


def build_parser():
    p = parser(__doc__.split('\n')[0])
    add_model_source(p, bundled_default=True)
    add_device(p)
    add_tokenizer(p, group=add_protocol_args(p))
    add_elmo_args(p)
    add_inference_model(p, 'frozen layers from an export of the same model (CPU)',
                        'directory written by export-inference from the model above: its layers fill the '
                        'frozen cache (an int8 export\'s features, for instance); checked against the model on '
                        'the first sentences')
    return p


def main(argv=None):
    a = build_parser().parse_args(argv)
    source = model_source(a)
    check_protocol_args(a)
    check_elmo_args(a)
    if not runs_on_this_rank('paddle-elmo finetune'):
        return 0
    # The text is split by the tokenizer the model records (unless --tokenizer): its options.json is
    # read first, the weights after the data, so that a bad data file fails before they load (and
    # before Paddle is imported).
    tokenizer = model_tokenizer(source.config.tokenizer, a.tokenizer)
    data = load_data(**data_flags(a), tokenizer=tokenizer)
    from paddle_elmo.classify.training import cross_validate  # Paddle's: after the flags and files are checked
    from paddle_elmo.classify.elmo_features import model_builder
    from paddle_elmo.classify.layer_cache import ActivationCache
    from paddle_elmo.classify.word2vec_features import lookup_table
    require_package('sklearn', 'classify')  # the folds: before a model loads
    use_device(a.device, cpu_threads=a.cpu_threads)
    folds = make_folds(data.labels, a.folds, a.seed, a.dev_fraction)
    bilm = source.load()
    warn_if_mostly_unknown(bilm.vocab, data.sentences, tokenizer)
    log.info('%s', long_tokens_report(Counter(t for s in data.sentences for t in s),
                                      bilm.config.max_characters_per_token))
    if a.elmo_layer is not None and a.elmo_layer > bilm.n_layers:
        raise InputError(f'--elmo_layer {a.elmo_layer}: the model has layers 0..{bilm.n_layers} (0: the token '
                         f'layer, 1..{bilm.n_layers}: the LSTM layers)')
    info = {'model': {'name': source.name, **source.files()},
            'elmo_layer': 'mix' if a.elmo_layer is None else a.elmo_layer,
            'projection_dim': bilm.projection_dim, 'n_layers': bilm.n_layers + 1, 'trainable': a.trainable,
            'cached': a.cache and not a.trainable}
    cache = None
    try:
        if info['cached']:
            start = time.time()
            embedder = exported_embedder(a, bilm, data.sentences) if a.inference_model else None
            if embedder is not None:
                info.update(inference_model=a.inference_model, inference_backend=embedder.backend,
                            precision=embedder.precision)
            cache = ActivationCache(bilm, data.sentences, a.cache_dir, a.bilm_batch_size, not a.quiet, embedder)
            info['cache_seconds'] = time.time() - start
            info['cache_bytes'] = cache.nbytes
            log.info('cached %d sentences\' biLM layers (%.0f MiB) in %.1f s', len(data.sentences),
                     cache.nbytes / 2 ** 20, info['cache_seconds'])
        word_table = None
        if a.word_vectors:
            table, token_ids, stats = lookup_table(data.sentences, read_word_vectors(a.word_vectors))
            word_table = (table, token_ids)
            info.update(concat_word2vec=a.word_vectors, word2vec_dim=table.shape[1], word2vec_oov=stats)
        build = model_builder(bilm, data.sentences, trainable=a.trainable, bilm_lr=a.bilm_lr, layer_norm=a.layer_norm,
                              l2_coef=a.l2_coef, hidden_dim=a.hidden_dim, dropout=a.dropout, cache=cache,
                              feature_norm=a.feature_norm, word_table=word_table, only_layer=a.elmo_layer)
        results = cross_validate(data, folds, build, train_config(a), a.run_folds)
    finally:
        if cache is not None:
            cache.close()
    report(results, settings(a), data, info, a.output_json)


if __name__ == '__main__':
    run(main)
