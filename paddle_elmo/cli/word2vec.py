"""word2vec + bag-of-vectors sentence classification: the baseline for paddle-elmo finetune.

Same head, folds, protocol and output JSON as run_finetune.py (both use paddle_elmo/classify/); only
the token features differ: frozen word2vec vectors instead of a scalar mix of biLM layers.

    # skip-gram vectors trained on the biLM's pretraining corpus (the fair comparison), saved for reuse
    python word2vec_base.py --data_dir data/sentence-polarity-dataset-v1 \
        --train_data_path 'my-corpus/train.txt' --output_word_vectors w2v/lm-corpus-sg300.bin \
        --cpu_threads 2 --seed 1 --output_json results/w2v_bow.json
    # saved vectors, or the GoogleNews 300-d vectors (.bin or .bin.gz)
    python word2vec_base.py --data_dir data/sentence-polarity-dataset-v1 --word_vectors w2v/lm-corpus-sg300.bin
    python word2vec_base.py --data_dir data/sentence-polarity-dataset-v1 \
        --word_vectors GoogleNews-vectors-negative300.bin.gz --max_vectors 1000000
    # vectors only (no --data_dir): e.g. 128-d rows for a word-input biLM's --word_vectors
    python word2vec_base.py --train_data_path data/zh-corpus/train.txt --w2v_dim 128 \
        --output_word_vectors zh/w2v-128.bin

Reviews are split by --tokenizer: moses by default (English tokenized as lm-corpus and 1B Word are,
as finetune splits them for the bundled model: both classify the same tokens); raw Chinese
reviews: --tokenizer jieba (zh-corpus's segmentation, so its vectors fit) or chars.
Token lookup: the token itself, else its lower-case, Capitalised or UPPER-case form (rt-polarity
is lower-cased; the corpus and GoogleNews are not). Tokens still not found (--oov): 'unk' (default)
share one learned vector, initialised at zero and trained with the classifier; 'skip' leaves them
out of the mean (a sentence without any known token then averages to zero). The OOV counts are
printed and written to the JSON. The word vectors stay frozen, as the frozen biLM does.
"""
import logging
import time

from paddle_elmo.cli.arguments import (add_device, add_tokenizer, count_or_zero, float_or_zero, output_file, parser,
                                       positive_int)
from paddle_elmo.cli.glossary import option_strings
from paddle_elmo.cli.runner import run
from paddle_elmo.cli.protocol import (add_protocol_args, check_protocol_args, data_flags, report, runs_on_this_rank,
                                      settings, train_config)
from paddle_elmo.classify.choices import OOV_MODES
from paddle_elmo.classify.data import load_data, make_folds
from paddle_elmo.text.corpus import check_corpus
from paddle_elmo.fileio import InputError, require_package
from paddle_elmo.runtime import use_device
from paddle_elmo.text.word_vectors import (check_vectors_file, corpus_paths, is_binary, read_word_vectors, save_vectors,
                                           train_word2vec)

log = logging.getLogger(__name__)

# --------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------

def add_word2vec_args(p):
    w = p.add_argument_group('word2vec (give --word_vectors or --train_data_path)')
    src = w.add_mutually_exclusive_group(required=True)
    src.add_argument(*option_strings('word_vectors'),
                     help='a word-vector file to classify with: word2vec binary .bin / .bin.gz (e.g. GoogleNews '
                     '300-d) or text .txt / .vec; --pretrained_word2vec_file is the PaddleNLP example\'s name for it')
    src.add_argument('--train_data_path', help="train skip-gram vectors on these files (a glob, one sentence per "
                     "line, tokens separated by spaces, e.g. the biLM's pretraining corpus; paddle-elmo build-vocab "
                     "--output_corpus segments raw text)")
    w.add_argument('--max_vectors', type=count_or_zero, default=0, help='read only the first (most frequent) N '
                   'vectors of --word_vectors to bound memory (GoogleNews: 3M x 300 floats = 3.6 GB; 0: all). Not '
                   'build-vocab\'s --max_vocab_size: this counts vectors read from a file')
    w.add_argument('--output_word_vectors', type=output_file,
                   help='with --train_data_path: save the vectors here (.bin) for reuse as --word_vectors')
    w.add_argument('--oov', default='unk', choices=OOV_MODES,
                   help='tokens without a vector: unk = one learned vector; skip = left out of the mean')
    w.add_argument('--w2v_dim', type=positive_int, default=300, help='training: vector size (floats)')
    w.add_argument('--w2v_window', type=positive_int, default=5, help='training: max distance of context words (tokens)')
    w.add_argument('--min_count', type=positive_int, default=5,
                   help='training: drop words seen fewer than this many times (5, not build-vocab\'s 1: word2vec\'s '
                   'own default, as a word seen once or twice gets a vector that is mostly noise)')
    w.add_argument('--w2v_negative', type=positive_int, default=5, help='training: negative samples per pair')
    w.add_argument('--w2v_sample', type=float_or_zero, default=1e-3,
                   help='training: frequent-word downsampling threshold (0: none)')
    w.add_argument('--w2v_epochs', type=positive_int, default=5, help='training: passes over the corpus')
    w.add_argument('--train_max_tokens', type=count_or_zero, default=0, help='training: only the first N tokens of the corpus '
                   '(e.g. as many as a biLM checkpoint has seen; 0: all)')


def check_word2vec_args(a):
    if a.output_word_vectors and not a.train_data_path:
        raise InputError('--output_word_vectors goes with --train_data_path')
    if a.max_vectors and a.train_data_path:
        raise InputError('--max_vectors applies to --word_vectors (use --min_count when training)')
    if a.output_word_vectors:
        is_binary(a.output_word_vectors)
    if a.word_vectors:
        check_vectors_file(a.word_vectors)
    if a.train_max_tokens and not a.train_data_path:
        raise InputError('--train_max_tokens goes with --train_data_path')
    if a.train_data_path:
        check_corpus(a.train_data_path, '--train_data_path')
    if a.data_dir is None and not (a.train_data_path and a.output_word_vectors):
        raise InputError('--data_dir is required, unless the job is to train and save vectors only '
                         '(--train_data_path FILES --output_word_vectors FILE)')


def vectors_from_args(a, info):
    """Train (and save) or load the vectors the options name; record what was done in `info`."""
    if a.word_vectors:
        kv = read_word_vectors(a.word_vectors, a.max_vectors)
        info['vectors'] = a.word_vectors
        return kv
    paths = corpus_paths(a.train_data_path)
    start = time.time()
    kv = train_word2vec(paths, a.w2v_dim, a.w2v_window, a.min_count, a.w2v_negative, a.w2v_sample,
                        a.w2v_epochs, a.cpu_threads or 1, a.seed, progress=not a.quiet,
                        max_tokens=a.train_max_tokens or None)
    info.update(vectors=f'trained on {a.train_data_path}', corpus_files=paths, max_tokens=a.train_max_tokens or None,
                train_seconds=time.time() - start)
    log.info('trained word2vec on %d file(s): %d words x %d in %.0f s', len(paths), len(kv), kv.vector_size,
             info['train_seconds'])
    if a.output_word_vectors:
        save_vectors(kv, a.output_word_vectors)
        print(f'saved the vectors to {a.output_word_vectors}')  # a file written: a result (stdout)
    return kv


def build_parser():
    p = parser(__doc__.split('\n')[0])
    add_tokenizer(p, default='moses', group=add_protocol_args(p, data_required=False),
                  why=', the tokens of English corpora such as lm-corpus and of the bundled model, so that its '
                  'vectors and finetune\'s ELMo rows read the same tokens')
    add_word2vec_args(p)
    add_device(p, threads_note='; word2vec training: 1, which is reproducible for a --seed')
    return p


def main(argv=None):
    a = build_parser().parse_args(argv)
    check_protocol_args(a)
    check_word2vec_args(a)
    if not runs_on_this_rank('paddle-elmo word2vec'):
        return 0
    # before the (long) training, and before gensim and Paddle are imported, so a bad --data_dir fails at once
    data = load_data(**data_flags(a), tokenizer=a.tokenizer) if a.data_dir else None
    require_package('gensim', 'classify')  # word2vec itself: before the vectors are read or trained
    use_device(a.device, cpu_threads=a.cpu_threads)
    if data is None:  # the vectors are the job (a word-input biLM's --word_vectors)
        vectors_from_args(a, {})
        return 0
    from paddle_elmo.classify.head import SentenceClassifier  # Paddle's: not the flags'
    from paddle_elmo.classify.training import cross_validate
    from paddle_elmo.classify.word2vec_features import Word2VecFeatures, lookup_table
    folds = make_folds(data.labels, a.folds, a.seed, a.dev_fraction)
    info = {}
    kv = vectors_from_args(a, info)
    table, token_ids, stats = lookup_table(data.sentences, kv, a.oov)
    info.update(stats, vocab_size=len(kv), dim=kv.vector_size, oov_mode=a.oov)
    log.info(f'vectors: {len(kv)} words x {kv.vector_size}; OOV {stats["oov_tokens"]}/{stats["tokens"]} tokens '
             f'({stats["oov_rate"]:.2%}, {stats["oov_types"]} types, handled as {a.oov!r}); '
             f'{stats["sentences_without_known_tokens"]} sentences have no known token')
    del kv  # only the rows the data uses are kept (the table)

    def build_model(fold):
        return SentenceClassifier(Word2VecFeatures(table, token_ids, a.oov), a.hidden_dim, a.dropout,
                                  feature_norm=a.feature_norm)

    results = cross_validate(data, folds, build_model, train_config(a), a.run_folds)
    report(results, settings(a), data, info, a.output_json)


if __name__ == '__main__':
    run(main)
