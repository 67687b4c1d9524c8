"""word2vec + bag-of-vectors sentence classification: the baseline for run_finetune.py.

Same head, folds, protocol and output JSON as run_finetune.py (both use classifier.py); only the
token features differ: frozen word2vec vectors instead of a scalar mix of biLM layers.

    # skip-gram vectors trained on the biLM's pretraining corpus (the fair comparison), saved for reuse
    python word2vec_base.py --data_dir ../shared/data/rt-polarity \
        --train_word2vec_on '../shared/data/lm-corpus/train.txt' --save_word2vec w2v/lm-corpus-sg300.bin \
        --workers 2 --seed 1 --output_json results/w2v_bow.json
    # saved vectors, or the GoogleNews 300-d vectors (.bin or .bin.gz)
    python word2vec_base.py --data_dir ../shared/data/rt-polarity --pretrained_word2vec_file w2v/lm-corpus-sg300.bin
    python word2vec_base.py --data_dir ../shared/data/rt-polarity \
        --pretrained_word2vec_file GoogleNews-vectors-negative300.bin.gz --max_vocab 1000000
    # vectors only (no --data_dir): e.g. 128-d rows for a word-input biLM's --word_vectors
    python word2vec_base.py --train_word2vec_on ../shared/data/zh-corpus/train.txt --w2v_dim 128 \
        --save_word2vec zh/w2v-128.bin

Raw Chinese reviews: --tokenizer jieba (zh-corpus's segmentation, so its vectors fit) or chars.
Token lookup: the token itself, else its lower-case, Capitalised or UPPER-case form (rt-polarity
is lower-cased; the corpus and GoogleNews are not). Tokens still not found (--oov): 'unk' (default)
share one learned vector, initialised at zero and trained with the classifier; 'skip' leaves them
out of the mean (a sentence without any known token then averages to zero). The OOV counts are
printed and written to the JSON. The word vectors stay frozen, as the frozen biLM does.
"""
import logging
import os
import time

from paddle_elmo.cli import flags as cli
from paddle_elmo.cli.protocol import (add_protocol_args, check_protocol_args, load_data, report, runs_on_this_rank,
                                      train_config)
from paddle_elmo.classifier import SentenceClassifier, cross_validate, make_folds
from paddle_elmo.runtime import use_device
from paddle_elmo.word_vectors import (OOV_MODES, Word2VecFeatures, corpus_paths, is_binary, load_vectors, lookup_table,
                          save_vectors, train_word2vec)

log = logging.getLogger(__name__)

# --------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------

def add_word2vec_args(p):
    w = p.add_argument_group('word2vec (give --pretrained_word2vec_file or --train_word2vec_on)')
    src = w.add_mutually_exclusive_group(required=True)
    src.add_argument('--pretrained_word2vec_file', help='word2vec vectors: binary .bin / .bin.gz (e.g. GoogleNews '
                     '300-d) or text .txt / .vec')
    src.add_argument('--train_word2vec_on', help="train skip-gram vectors on these files (a glob, one sentence per "
                     "line, tokens separated by spaces, e.g. the biLM's pretraining corpus; build_vocab.py "
                     "--segmented_output segments raw text)")
    w.add_argument('--max_vocab', type=int, default=0, help='read only the first (most frequent) N vectors of '
                   '--pretrained_word2vec_file to bound memory (GoogleNews: 3M x 300 floats = 3.6 GB); 0: all')
    w.add_argument('--save_word2vec', help='with --train_word2vec_on: save the vectors here (.bin) for reuse '
                   'with --pretrained_word2vec_file')
    w.add_argument('--oov', default='unk', choices=OOV_MODES,
                   help='tokens without a vector: unk = one learned vector; skip = left out of the mean')
    w.add_argument('--w2v_dim', type=int, default=300, help='training: vector size')
    w.add_argument('--w2v_window', type=int, default=5, help='training: max distance of context words')
    w.add_argument('--w2v_min_count', type=int, default=5, help='training: ignore rarer words')
    w.add_argument('--w2v_negative', type=int, default=5, help='training: negative samples per pair')
    w.add_argument('--w2v_sample', type=float, default=1e-3, help='training: frequent-word downsampling threshold')
    w.add_argument('--w2v_epochs', type=int, default=5, help='training: passes over the corpus')
    w.add_argument('--w2v_max_tokens', type=int, help='training: only the first N tokens of the corpus (e.g. as '
                   'many as a biLM checkpoint has seen; default: all)')
    w.add_argument('--workers', type=int, default=1, help='training: threads (1 is reproducible for a --seed)')


def check_word2vec_args(a):
    if a.save_word2vec and not a.train_word2vec_on:
        raise cli.InputError('--save_word2vec goes with --train_word2vec_on')
    if a.max_vocab and a.train_word2vec_on:
        raise cli.InputError('--max_vocab applies to --pretrained_word2vec_file (use --w2v_min_count when training)')
    if a.max_vocab < 0:
        raise cli.InputError(f'--max_vocab must be >= 0, got {a.max_vocab}')
    if a.save_word2vec:
        is_binary(a.save_word2vec)
        directory = os.path.dirname(os.path.abspath(a.save_word2vec))
        if not os.path.isdir(directory):
            raise FileNotFoundError(f'{a.save_word2vec}: --save_word2vec directory {directory} does not exist')
    if a.pretrained_word2vec_file:
        is_binary(a.pretrained_word2vec_file)
        if not os.path.isfile(a.pretrained_word2vec_file):
            raise FileNotFoundError(f'{a.pretrained_word2vec_file}: --pretrained_word2vec_file not found')
    for name in ('w2v_dim', 'w2v_window', 'w2v_min_count', 'w2v_epochs', 'workers'):
        if getattr(a, name) < 1:
            raise cli.InputError(f'--{name} must be >= 1, got {getattr(a, name)}')
    if a.w2v_max_tokens is not None and (a.w2v_max_tokens < 1 or not a.train_word2vec_on):
        raise cli.InputError(f'--w2v_max_tokens must be >= 1 and goes with --train_word2vec_on, got {a.w2v_max_tokens}')
    if a.w2v_negative < 1:
        raise cli.InputError(f'--w2v_negative must be >= 1, got {a.w2v_negative}')


def vectors_from_args(a, info):
    """Train (and save) or load the vectors the options name; record what was done in `info`."""
    if a.pretrained_word2vec_file:
        kv = load_vectors(a.pretrained_word2vec_file, a.max_vocab)
        info['vectors'] = a.pretrained_word2vec_file
        return kv
    paths = corpus_paths(a.train_word2vec_on)
    start = time.time()
    kv = train_word2vec(paths, a.w2v_dim, a.w2v_window, a.w2v_min_count, a.w2v_negative, a.w2v_sample,
                        a.w2v_epochs, a.workers, a.seed, progress=not a.quiet, max_tokens=a.w2v_max_tokens)
    info.update(vectors=f'trained on {a.train_word2vec_on}', corpus_files=paths, max_tokens=a.w2v_max_tokens,
                train_seconds=time.time() - start)
    log.info('trained word2vec on %d file(s): %d words x %d in %.0f s', len(paths), len(kv), kv.vector_size,
             info['train_seconds'])
    if a.save_word2vec:
        save_vectors(kv, a.save_word2vec)
        print(f'saved the vectors to {a.save_word2vec}')  # a file written: a result (stdout)
    return kv


def main():
    p = cli.parser(__doc__.split('\n')[0])
    cli.add_tokenizer(p, model_default=False, group=add_protocol_args(p, data_required=False))
    add_word2vec_args(p)
    cli.add_device(p)
    a = p.parse_args()
    check_protocol_args(a)
    check_word2vec_args(a)
    if not runs_on_this_rank('word2vec_base.py'):
        return 0
    use_device(a.device, cpu_threads=a.cpu_threads)
    if a.data_dir is None:  # the vectors are the job (a word-input biLM's --word_vectors)
        if not (a.train_word2vec_on and a.save_word2vec):
            raise cli.InputError('--data_dir is required, unless the job is to train and save vectors only '
                                 '(--train_word2vec_on FILES --save_word2vec FILE)')
        vectors_from_args(a, {})
        return 0
    data = load_data(a, a.tokenizer)  # before the (long) training, so a bad --data_dir fails at once
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
    report(results, a, data, info)


if __name__ == '__main__':
    cli.run(main)
