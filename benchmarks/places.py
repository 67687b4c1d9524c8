"""Where the benchmarks find things: the checkout, ../shared beside it and the corpora there, and
the vocabularies built from those corpora (cached, so that a timed run never builds one)."""
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


SHARED = os.path.abspath(os.path.join(ROOT, '..', 'shared'))


LM_CORPUS = os.path.join(SHARED, 'data', 'lm-corpus')


RT_POLARITY = os.path.join(SHARED, 'data', 'rt-polarity')


ZH_CORPUS = os.path.join(SHARED, 'data', 'zh-corpus')


ZH_SENTIMENT = os.path.join(SHARED, 'data', 'zh-sentiment')


def corpus_vocabulary(size, corpus=LM_CORPUS):
    """The `size` most frequent words of CORPUS/train.txt (segmented: split on whitespace) + <S> </S>
    <UNK>, built once and cached as CACHE/NAME-vocab-SIZE.txt (paddle_elmo.cache) (NAME: the corpus's
    directory name, lm-corpus by default)."""
    from paddle_elmo.text.vocabulary import build_vocabulary, count_words, write_vocabulary
    name = os.path.basename(os.path.normpath(corpus))
    from paddle_elmo.cache import cache_dir
    path = cache_dir(f'{name}-vocab-{size}.txt')
    if not os.path.exists(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        write_vocabulary(build_vocabulary(count_words(os.path.join(corpus, 'train.txt')),
                                          max_vocab_size=size), path)
    return path
