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

Token lookup: the token itself, else its lower-case, Capitalised or UPPER-case form (rt-polarity
is lower-cased; the corpus and GoogleNews are not). Tokens still not found (--oov): 'unk' (default)
share one learned vector, initialised at zero and trained with the classifier; 'skip' leaves them
out of the mean (a sentence without any known token then averages to zero). The OOV counts are
printed and written to the JSON. The word vectors stay frozen, as the frozen biLM does.
"""
import glob
import logging
import os
import sys
import time

import args as cli  # first: it quiets Paddle's import-time noise on stderr
import numpy as np
import paddle
import paddle.nn as nn
import paddle.nn.functional as F

from classifier import (SentenceClassifier, add_protocol_args, check_protocol_args, cross_validate, load_data,
                        make_folds, report, train_config)
from elmo import use_device

OOV_MODES = ('unk', 'skip')
PAD, UNK = 0, 1  # rows of the lookup table; word vectors start at row 2
MAX_GENSIM_SENTENCE = 10000  # gensim cuts longer sentences: longer lines are fed in pieces instead


# --------------------------------------------------------------------------------------------
# Vectors: train, save, load
# --------------------------------------------------------------------------------------------

class CorpusSentences:
    """Token lists from one-sentence-per-line UTF-8 files, re-readable (gensim iterates many times)."""

    def __init__(self, paths):
        self.paths = list(paths)

    def __iter__(self):
        for path in self.paths:
            with open(path, 'rb') as f:
                for number, raw in enumerate(f, 1):
                    try:
                        tokens = raw.decode('utf-8').split()
                    except UnicodeDecodeError as e:
                        raise ValueError(f'{path}:{number}: not valid UTF-8 ({e.reason} at byte {e.start})') from None
                    for start in range(0, len(tokens), MAX_GENSIM_SENTENCE):
                        yield tokens[start:start + MAX_GENSIM_SENTENCE]


def corpus_paths(pattern):
    paths = sorted(glob.glob(pattern))
    if not paths:
        raise FileNotFoundError(f'{pattern}: --train_word2vec_on matches no file')
    return paths


def _configure_gensim_logging(progress):
    """gensim's word2vec progress lines on stderr (only those: its other INFO lines are noise)."""
    logging.getLogger('gensim').setLevel(logging.WARNING)
    log = logging.getLogger('gensim.models.word2vec')
    log.setLevel(logging.INFO if progress else logging.WARNING)
    log.propagate = False  # Paddle configures the root logger; keep one copy of each line
    if not log.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter('%(asctime)s word2vec: %(message)s', '%H:%M:%S'))
        log.addHandler(handler)


def train_word2vec(paths, dim=300, window=5, min_count=5, negative=5, sample=1e-3, epochs=5, workers=1,
                   seed=1, progress=True):
    """Skip-gram with negative sampling (gensim) on the files `paths` -> KeyedVectors.

    Deterministic for a seed with workers=1 (more workers are faster but thread timing changes
    the result slightly). Progress: gensim's log lines every 30 s.
    """
    from gensim.models import Word2Vec
    _configure_gensim_logging(progress)
    corpus = CorpusSentences(paths)
    model = Word2Vec(vector_size=dim, sg=1, window=window, min_count=min_count, negative=negative,
                     sample=sample, epochs=epochs, workers=workers, seed=seed)
    model.build_vocab(corpus, progress_per=200000)
    if not len(model.wv):
        raise ValueError(f'{", ".join(paths)}: no word occurs --w2v_min_count {min_count} times')
    model.train(corpus, total_examples=model.corpus_count, epochs=model.epochs, report_delay=30.0)
    return model.wv


def is_binary(path):
    if path.endswith(('.bin', '.bin.gz')):
        return True
    if path.endswith(('.txt', '.txt.gz', '.vec', '.vec.gz')):
        return False
    raise ValueError(f'{path}: expected a word2vec file ending in .bin or .bin.gz (binary), '
                     f'or .txt / .vec (text)')


def save_vectors(kv, path):
    """Write `kv` in the word2vec format the name asks for (.bin: binary), atomically."""
    binary = is_binary(path)
    # The temp name keeps .gz last: gensim picks compression from the file name.
    tmp = f'{path[:-3]}.tmp.gz' if path.endswith('.gz') else f'{path}.tmp'
    try:
        kv.save_word2vec_format(tmp, binary=binary)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def load_vectors(path, max_vocab=0):
    """A word2vec file (binary .bin/.bin.gz, or text) -> KeyedVectors; max_vocab > 0 keeps the first rows."""
    from gensim.models import KeyedVectors
    binary = is_binary(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f'{path}: word2vec file not found')
    _configure_gensim_logging(progress=False)
    try:
        return KeyedVectors.load_word2vec_format(path, binary=binary, limit=max_vocab or None)
    except (ValueError, EOFError, UnicodeDecodeError, OSError) as e:
        kind = 'binary' if binary else 'text'
        raise ValueError(f'{path}: cannot read as a {kind} word2vec file ({e})') from None


# --------------------------------------------------------------------------------------------
# Sentences -> vectors
# --------------------------------------------------------------------------------------------

def vector_key(token, kv):
    """The key of `token` in `kv`: itself, else lower / Capitalised / UPPER form; None if absent."""
    for candidate in (token, token.lower(), token.capitalize(), token.upper()):
        if candidate in kv.key_to_index:
            return candidate
    return None


def lookup_table(sentences, kv, oov='unk'):
    """-> (table float32 [2 + known words, dim], token ids per sentence (int64 arrays), OOV stats).

    Only the words the sentences use are kept, so the table is small whatever the vocabulary.
    Row PAD and row UNK are zero; with oov='unk' OOV tokens get id UNK, with 'skip' they are left out.
    """
    if oov not in OOV_MODES:
        raise ValueError(f'oov must be one of {OOV_MODES}, got {oov!r}')
    rows, keys, ids = {}, [], []
    n_tokens = n_oov = n_empty = 0
    oov_types = set()
    for sentence in sentences:
        row_ids = []
        for token in sentence:
            key = vector_key(token, kv)
            if key is None:
                n_oov += 1
                oov_types.add(token)
                if oov == 'unk':
                    row_ids.append(UNK)
                continue
            if key not in rows:
                rows[key] = len(keys) + 2
                keys.append(key)
            row_ids.append(rows[key])
        n_tokens += len(sentence)
        n_empty += all(i == UNK for i in row_ids)  # no known token (an empty list counts too)
        ids.append(np.array(row_ids, dtype=np.int64))
    table = np.zeros((len(keys) + 2, kv.vector_size), dtype=np.float32)
    if keys:
        table[2:] = kv[keys]
    stats = {'tokens': n_tokens, 'oov_tokens': n_oov, 'oov_rate': n_oov / max(n_tokens, 1),
             'oov_types': len(oov_types), 'sentences_without_known_tokens': int(n_empty),
             'known_types': len(keys)}
    return table, ids, stats


class Word2VecFeatures(nn.Layer):
    """Sentence indices -> (frozen word vectors [batch, time, dim], mask [batch, time] bool)."""

    def __init__(self, table, token_ids, oov='unk'):
        super().__init__()
        self.register_buffer('table', paddle.to_tensor(table), persistable=False)
        self.token_ids = token_ids
        self.dim = table.shape[1]
        # One learned vector for all OOV tokens; zero at the start, so it begins as "no information".
        self.unk = self.create_parameter([self.dim], default_initializer=nn.initializer.Constant(0.0)) \
            if oov == 'unk' else None

    def forward(self, indices):
        rows = [self.token_ids[i] for i in indices]
        time_steps = max(max((len(r) for r in rows), default=0), 1)
        ids = np.zeros((len(rows), time_steps), dtype=np.int64)
        for b, r in enumerate(rows):
            ids[b, :len(r)] = r
        ids = paddle.to_tensor(ids)
        x = F.embedding(ids, self.table)  # [batch, time, dim]
        if self.unk is not None:
            x = x + (ids == UNK).astype(x.dtype).unsqueeze(-1) * self.unk
        return x, ids != PAD


# --------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------

def add_word2vec_args(p):
    w = p.add_argument_group('word2vec (give --pretrained_word2vec_file or --train_word2vec_on)')
    src = w.add_mutually_exclusive_group(required=True)
    src.add_argument('--pretrained_word2vec_file', help='word2vec vectors: binary .bin / .bin.gz (e.g. GoogleNews '
                     '300-d) or text .txt / .vec')
    src.add_argument('--train_word2vec_on', help="train skip-gram vectors on these files (a glob, one sentence per "
                     "line, e.g. the biLM's pretraining corpus)")
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
    w.add_argument('--workers', type=int, default=1, help='training: threads (1 is reproducible for a --seed)')


def check_word2vec_args(a):
    if a.save_word2vec and not a.train_word2vec_on:
        raise cli.UserError('--save_word2vec goes with --train_word2vec_on')
    if a.max_vocab and a.train_word2vec_on:
        raise cli.UserError('--max_vocab applies to --pretrained_word2vec_file (use --w2v_min_count when training)')
    if a.max_vocab < 0:
        raise cli.UserError(f'--max_vocab must be >= 0, got {a.max_vocab}')
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
            raise cli.UserError(f'--{name} must be >= 1, got {getattr(a, name)}')
    if a.w2v_negative < 1:
        raise cli.UserError(f'--w2v_negative must be >= 1, got {a.w2v_negative}')


def vectors_from_args(a, info):
    """Train (and save) or load the vectors the options name; record what was done in `info`."""
    if a.pretrained_word2vec_file:
        kv = load_vectors(a.pretrained_word2vec_file, a.max_vocab)
        info['vectors'] = a.pretrained_word2vec_file
        return kv
    paths = corpus_paths(a.train_word2vec_on)
    start = time.time()
    kv = train_word2vec(paths, a.w2v_dim, a.w2v_window, a.w2v_min_count, a.w2v_negative, a.w2v_sample,
                        a.w2v_epochs, a.workers, a.seed, progress=not a.quiet)
    info.update(vectors=f'trained on {a.train_word2vec_on}', corpus_files=paths,
                train_seconds=time.time() - start)
    print(f'trained word2vec on {len(paths)} file(s): {len(kv)} words x {kv.vector_size} '
          f'in {info["train_seconds"]:.0f} s', file=sys.stderr)
    if a.save_word2vec:
        save_vectors(kv, a.save_word2vec)
        print(f'saved the vectors to {a.save_word2vec}', file=sys.stderr)
    return kv


def main():
    p = cli.parser(__doc__.split('\n')[0])
    add_protocol_args(p)
    add_word2vec_args(p)
    cli.add_device(p)
    a = p.parse_args()
    check_protocol_args(a)
    check_word2vec_args(a)
    use_device(a.device)
    data = load_data(a)  # before the (long) training, so a bad --data_dir fails at once
    folds = make_folds(data.labels, a.folds, a.seed, a.dev_fraction)
    info = {}
    kv = vectors_from_args(a, info)
    table, token_ids, stats = lookup_table(data.sentences, kv, a.oov)
    info.update(stats, vocab_size=len(kv), dim=kv.vector_size, oov_mode=a.oov)
    print(f'vectors: {len(kv)} words x {kv.vector_size}; OOV {stats["oov_tokens"]}/{stats["tokens"]} tokens '
          f'({stats["oov_rate"]:.2%}, {stats["oov_types"]} types, handled as {a.oov!r}); '
          f'{stats["sentences_without_known_tokens"]} sentences have no known token', file=sys.stderr)
    del kv  # only the rows the data uses are kept (the table)

    def build_model(fold):
        return SentenceClassifier(Word2VecFeatures(table, token_ids, a.oov), a.hidden_dim, a.dropout,
                                  feature_norm=a.feature_norm)

    results = cross_validate(data, folds, build_model, train_config(a))
    report(results, a, data, info)


if __name__ == '__main__':
    cli.run(main)
