"""Corpus files: one or more text files (a glob: UTF-8, else Latin-1 for Latin-script text, as
text.encodings decides per file), one sentence per line, tokens separated by whitespace
(`str.split()` everywhere, so counting, vocabulary building and batching agree). Lines that are
empty or only whitespace are not sentences: they are skipped and reported. Token counts are cached,
keyed by each file's size and modification time.
"""
import itertools
import json
import logging
import os

from paddle_elmo.cache import cache_dir as default_cache_dir
from paddle_elmo.fileio import InputError, list_files, write_text_atomic
from paddle_elmo.logs import progress_bar
from paddle_elmo.text.encodings import iter_text_lines, text_encoding
from paddle_elmo.text.tokenizers import get_tokenizer

log = logging.getLogger(__name__)


# The sample corpus installed with the package (our own sentences, demo_data/make_corpus.py): the
# demo trains on it, and export-inference checks an int8 model on it.
DEMO_DATA_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'demo_data')
SAMPLE_TRAIN, SAMPLE_HELDOUT = (os.path.join(DEMO_DATA_DIR, name) for name in ('sample_train.txt', 'sample_heldout.txt'))


def is_blank(text):
    """Whether a corpus line is empty or whitespace only (not a sentence)."""
    return not text or text.isspace()


def warn_skipped(path, n_skipped):
    """Log how many blank lines of `path` were skipped, if any."""
    if n_skipped:
        log.warning('%s: skipped %d empty line(s) (not sentences)', path, n_skipped)


def no_sentence(path, n_lines):
    """The one line for a file of `n_lines` lines without a sentence (none, or all blank)."""
    return f'{path}: no sentence ({f"its {n_lines} lines are blank" if n_lines else "an empty file"}; expected one ' \
        'sentence per line)'


def check_has_sentence(paths, name, tokenizer='whitespace'):
    """InputError naming the input (`name`: as the user gave it: a file, <stdin>, a flag and its glob)
    unless a line of one of the files `paths` is a sentence (not blank): the whole input of a command,
    which would otherwise write an empty result. Reads up to the first sentence only, once each file's
    encoding for text `tokenizer` splits is decided (text.encodings: a file that cannot be read for it
    is an InputError here, before any work)."""
    n_lines = 0
    for path in paths:
        for _, _, text in iter_text_lines(path, tokenizer):
            if not is_blank(text):
                return
            n_lines += 1
    if len(paths) == 1:
        raise InputError(no_sentence(name, n_lines))
    raise InputError(f'{name}: no sentence in its {len(paths)} files (all empty or blank; expected one sentence '
                     'per line)')


def check_corpus(file_pattern, flag, tokenizer='whitespace'):
    """Before any work: a command's corpus glob (given as `flag`) matches files, each can be read as
    text of `tokenizer` (the model's: text.encodings decides every file's encoding here, so that one
    that cannot is refused before any work, and a Latin-1 one is said at the start), and they hold a
    sentence; else one line naming the flag or the file."""
    try:
        files = list_files(file_pattern)
    except FileNotFoundError:
        raise FileNotFoundError(f'{flag} {file_pattern}: no files match this pattern') from None
    for path in files:
        text_encoding(path, tokenizer)
    check_has_sentence(files, f'{flag} {file_pattern}', tokenizer)


def iter_file_sentences(path, progress_bar=None, tokenizer='whitespace'):
    """Yield the sentences (token lists, split by the named `tokenizer`) of one file in order; empty
    lines skipped and reported, and a file without a sentence warned of (one file of a glob may be
    empty; a command left with no sentence at all says so itself)."""
    split = get_tokenizer(tokenizer)
    n_skipped = n_sentences = 0
    for _, n_bytes, text in iter_text_lines(path, tokenizer):
        if progress_bar is not None:
            progress_bar.update(n_bytes)
        if is_blank(text):
            n_skipped += 1
            continue
        n_sentences += 1
        yield split(text)
    if n_sentences:
        warn_skipped(path, n_skipped)
    else:
        log.warning(no_sentence(path, n_skipped))


def iter_corpus_sentences(file_pattern, desc, progress=True, tokenizer='whitespace'):
    """Yield the sentences (token lists, split by the named `tokenizer`) of every file of a glob in
    order, under one progress bar `desc` by bytes over all of them."""
    files = list_files(file_pattern)
    with file_progress(sum(os.path.getsize(p) for p in files), desc, progress) as bar:
        for path in files:
            yield from iter_file_sentences(path, bar, tokenizer)


# A corpus in a tokenizer's tokens comes out of it almost unchanged (lm-corpus through moses,
# zh-corpus through jieba), raw text mostly not.
UNTOKENIZED_SHARE = 0.2


def warn_if_untokenized(file_pattern, tokenizer, n_sentences=200):
    """Warns when at least UNTOKENIZED_SHARE of the first `n_sentences` sentences of the first file
    of `file_pattern` change when `tokenizer` splits them again: raw text, given to pretraining,
    which reads tokens split on spaces. -> the share that changed."""
    if tokenizer == 'whitespace':
        return 0.0
    path = list_files(file_pattern)[0]
    split = get_tokenizer(tokenizer)
    lines = [text for _, _, text in itertools.islice(iter_text_lines(path, tokenizer), n_sentences)
             if not is_blank(text)]
    changed = [text.strip() for text in lines if split(text) != text.split()]
    share = len(changed) / max(len(lines), 1)
    if share >= UNTOKENIZED_SHARE:
        log.warning('%s: %d of its first %d sentences are not %s tokens split by spaces (e.g. %r): training reads '
                    'the corpus split on spaces; make its tokens once with build-vocab --tokenizer %s --output_corpus '
                    'FILE', path, len(changed), len(lines), tokenizer, changed[0][:60], tokenizer)
    return share


def file_progress(total_bytes, desc, enabled):
    """A progress bar in bytes read, when `enabled` (logs.progress_bar: without a bar, a long count's
    progress as INFO lines)."""
    return progress_bar(enabled, log, total=total_bytes, unit='B', unit_scale=True, desc=desc, mininterval=1.0)


COUNTS_CACHE_NAME = 'token-counts.json'  # in the cache directory




def _read_json(path):
    try:
        with open(path, encoding='utf-8') as f:
            return json.load(f)
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as e:
        log.warning('%s: unreadable token-count cache, counting again (%s)', path, e)
        return {}


def _count_file(path, bar):
    n_tokens = n_sentences = 0
    for words in iter_file_sentences(path, bar):
        n_tokens += len(words)
        n_sentences += 1
    return n_tokens, n_sentences


def count_tokens(file_pattern, cache_dir=None, progress=True):
    """-> dict(n_tokens=..., n_sentences=..., n_files=...) over the files of a glob.

    n_tokens counts whitespace tokens (no <S>/</S>; 768,648,884 for 1B Word's training files) and
    n_sentences the non-empty lines. Each file is counted once and cached in
    `cache_dir`/token-counts.json (default: the toolkit's cache directory, cache.py), keyed by its
    absolute path, size and modification time; nothing is written beside the data.
    """
    files = list_files(file_pattern)
    cache_path = os.path.join(cache_dir or default_cache_dir(), COUNTS_CACHE_NAME)
    caches, todo = {}, []
    total = dict(n_tokens=0, n_sentences=0, n_files=len(files))
    for path in files:
        key = os.path.abspath(path)
        stat = os.stat(key)
        entry = caches.setdefault(cache_path, _read_json(cache_path)).get(key)
        if entry and entry.get('size') == stat.st_size and entry.get('mtime_ns') == stat.st_mtime_ns:
            total['n_tokens'] += entry['n_tokens']
            total['n_sentences'] += entry['n_sentences']
            log.debug('%s: token count from the cache %s', key, cache_path)
        else:
            todo.append((key, stat, cache_path))
    changed = set()
    with file_progress(sum(s.st_size for _, s, _ in todo), 'counting tokens', progress and todo) as bar:
        for key, stat, cache_path in todo:
            n_tokens, n_sentences = _count_file(key, bar)
            caches[cache_path][key] = dict(size=stat.st_size, mtime_ns=stat.st_mtime_ns,
                                           n_tokens=n_tokens, n_sentences=n_sentences)
            total['n_tokens'] += n_tokens
            total['n_sentences'] += n_sentences
            changed.add(cache_path)
    for cache_path in changed:
        _save_counts_cache(cache_path, caches[cache_path])
    return total


def _save_counts_cache(cache_path, entries):
    try:
        os.makedirs(os.path.dirname(cache_path), exist_ok=True)
        write_text_atomic(cache_path, json.dumps(entries, indent=1, sort_keys=True))
    except OSError as e:  # the counts are right; only the next call will be slower
        log.warning('%s: could not write the token-count cache (%s)', cache_path, e)
