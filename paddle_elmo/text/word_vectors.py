"""Word vectors: skip-gram training on a corpus (gensim), word-vector files in and out (word2vec,
gensim, numpy: `read_word_vectors` reads them alike for every command), and the rows of a word
embedding they cover. pretrain initialises a word embedding from them; the classifiers' word2vec
features (classify/word2vec_features) look a dataset's tokens up in them. Imports no Paddle
(pretrain's and the classifiers' flags check a vectors file, and --help answers, in the core install).
"""
import logging
import os
import sys

import numpy as np

from paddle_elmo.fileio import InputError, atomic_path, list_files, require_package
from paddle_elmo.logs import AboveBarsHandler, show_progress_lines
from paddle_elmo.text.encodings import iter_text_lines

MAX_GENSIM_SENTENCE = 10000  # gensim cuts longer sentences: longer lines are fed in pieces instead


class CorpusSentences:
    """Token lists from one-sentence-per-line files (read as text.encodings decides), re-readable
    (gensim iterates many times).

    max_tokens: stop after this many tokens (the last sentence cut short), to train on a budget
    of tokens matched to a biLM's.
    """

    def __init__(self, paths, max_tokens=None):
        self.paths, self.max_tokens = list(paths), max_tokens

    def __iter__(self):
        left = self.max_tokens if self.max_tokens else float('inf')
        for path in self.paths:
            for _, _, text in iter_text_lines(path):
                tokens = text.split()[:left] if left < float('inf') else text.split()
                left -= len(tokens)
                for start in range(0, len(tokens), MAX_GENSIM_SENTENCE):
                    yield tokens[start:start + MAX_GENSIM_SENTENCE]
                if left <= 0:
                    return


def corpus_paths(pattern):
    try:
        return list_files(pattern)
    except FileNotFoundError:
        raise FileNotFoundError(f'{pattern}: --train_data_path matches no file') from None


def _configure_gensim_logging(progress):
    """gensim's word2vec progress lines on stderr (only those: its other INFO lines are noise), when
    `progress` and the paddle_elmo logger shows INFO lines (logs.show_progress_lines: in a log file too)."""
    logging.getLogger('gensim').setLevel(logging.WARNING)
    log = logging.getLogger('gensim.models.word2vec')
    log.setLevel(logging.INFO if show_progress_lines(progress, __name__) else logging.WARNING)
    log.propagate = False  # Paddle configures the root logger; keep one copy of each line
    if not log.handlers:
        handler = AboveBarsHandler(sys.stderr)  # above a bar, as the commands' lines
        handler.setFormatter(logging.Formatter('%(asctime)s word2vec: %(message)s', '%H:%M:%S'))
        log.addHandler(handler)


def train_word2vec(paths, dim=300, window=5, min_count=5, negative=5, sample=1e-3, epochs=5, workers=1,
                   seed=1, progress=True, max_tokens=None):
    """Skip-gram with negative sampling (gensim) on the files `paths` (their first `max_tokens`
    tokens when given) -> KeyedVectors.

    Deterministic for a seed with workers=1 (more workers are faster but thread timing changes
    the result slightly). Progress: gensim's log lines every 30 s.
    """
    Word2Vec = require_package('gensim.models', 'classify').Word2Vec
    _configure_gensim_logging(progress)
    corpus = CorpusSentences(paths, max_tokens)
    model = Word2Vec(vector_size=dim, sg=1, window=window, min_count=min_count, negative=negative,
                     sample=sample, epochs=epochs, workers=workers, seed=seed)
    model.build_vocab(corpus, progress_per=200000)
    if not len(model.wv):
        raise InputError(f'{", ".join(paths)}: no word occurs --min_count {min_count} times')
    model.train(corpus, total_examples=model.corpus_count, epochs=model.epochs, report_delay=30.0)
    return model.wv


# The file endings of each --word_vectors format (VECTOR_FORMATS says them in words).
WORD2VEC_BINARY, WORD2VEC_TEXT = ('.bin', '.bin.gz'), ('.txt', '.txt.gz', '.vec', '.vec.gz')
GENSIM_SAVED, NUMPY_VECTORS = ('.kv', '.model'), ('.npz',)


def is_binary(path):
    if path.endswith(WORD2VEC_BINARY):
        return True
    if path.endswith(WORD2VEC_TEXT):
        return False
    raise InputError(f'{path}: expected a word2vec file ending in .bin or .bin.gz (binary), '
                     f'or .txt / .vec (text)')


def save_vectors(kv, path):
    """Write `kv` in the word2vec format the name asks for (.bin: binary), atomically."""
    binary = is_binary(path)
    with atomic_path(path) as tmp:  # keeps .gz last: gensim picks compression from the file name
        kv.save_word2vec_format(tmp, binary=binary)


def load_vectors(path, max_vocab=0):
    """A word2vec file (binary .bin/.bin.gz, or text) -> KeyedVectors; max_vocab > 0 keeps the first rows."""
    KeyedVectors = require_package('gensim.models', 'classify').KeyedVectors
    binary = is_binary(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f'{path}: word2vec file not found')
    _configure_gensim_logging(progress=False)
    try:
        return KeyedVectors.load_word2vec_format(path, binary=binary, limit=max_vocab or None)
    except (ValueError, EOFError, UnicodeDecodeError, OSError) as e:
        kind = 'binary' if binary else 'text'
        raise InputError(f'{path}: cannot read as a {kind} word2vec file ({e})') from None


VECTOR_FORMATS = ('a word2vec file (.bin / .bin.gz binary, .txt / .vec text), gensim KeyedVectors saved with '
                  '.save() (.kv, .model), or a numpy .npz with arrays "words" [n] and "vectors" [n, dim]')


def read_word_vectors(path, max_vocab=0):
    """Any --word_vectors file (VECTOR_FORMATS) -> KeyedVectors; max_vocab > 0 keeps the first rows.

    One reader for every command: pretrain initialises a word embedding from it, finetune
    concatenates its vectors to ELMo's, word2vec classifies with them."""
    KeyedVectors = require_package('gensim.models', 'classify').KeyedVectors
    check_vectors_file(path)
    if path.endswith(NUMPY_VECTORS):
        with np.load(path, allow_pickle=False) as f:
            if 'words' not in f or 'vectors' not in f:
                raise InputError(f'{path}: a .npz of word vectors needs arrays "words" and "vectors", it has '
                                 f'{", ".join(f.files) or "none"}')
            words, vectors = [str(w) for w in f['words']], np.asarray(f['vectors'], dtype=np.float32)
        if vectors.ndim != 2 or len(words) != len(vectors):
            raise InputError(f'{path}: "vectors" must be [len(words), dim], got {vectors.shape} for {len(words)} words')
    elif path.endswith(GENSIM_SAVED):
        try:
            kv = KeyedVectors.load(path)
        except Exception as e:  # gensim/pickle raise many types for a foreign file
            raise InputError(f'{path}: cannot read as gensim KeyedVectors ({type(e).__name__}: {e})') from None
        if not max_vocab or max_vocab >= len(kv):
            return kv
        words, vectors = kv.index_to_key, kv.vectors
    else:
        return load_vectors(path, max_vocab)
    if max_vocab:
        words, vectors = words[:max_vocab], vectors[:max_vocab]
    kv = KeyedVectors(vectors.shape[1])
    kv.add_vectors(list(words), vectors)
    return kv


def check_vectors_file(path):
    """InputError unless `path`'s ending names one of VECTOR_FORMATS, FileNotFoundError unless it
    exists: a command checks its --word_vectors before it reads or trains anything."""
    if not path.endswith(NUMPY_VECTORS + GENSIM_SAVED + WORD2VEC_BINARY + WORD2VEC_TEXT):
        raise InputError(f'{path}: expected {VECTOR_FORMATS}')
    if not os.path.isfile(path):
        raise FileNotFoundError(f'{path}: --word_vectors file not found')


def embedding_rows(kv, tokens, dim, source):
    """The rows of a word embedding over `tokens` that `kv` covers (the token itself, exactly) ->
    (rows float32 [len(tokens), dim], zero where not covered; covered bool [len(tokens)])."""
    if kv.vector_size != dim:
        raise InputError(f'{source} holds {kv.vector_size}-dimensional vectors; the word embedding has {dim} columns '
                         f'(token_input word: projection_dim; word+char: --word_dim). Train the vectors with that size')
    covered = np.array([t in kv.key_to_index for t in tokens], dtype=bool)
    rows = np.zeros((len(tokens), dim), dtype=np.float32)
    if covered.any():
        rows[covered] = kv[[t for t, c in zip(tokens, covered) if c]]
    return rows, covered
