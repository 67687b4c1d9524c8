"""Raw text to tokens: the one place a string becomes tokens (whitespace, moses, jieba or chars).

The embedders, Elmo, the classifiers' data, build-vocab and predict all go through `get_tokenizer`.
A model records the tokenizer of its training text (config.ModelConfig.tokenizer);
`model_tokenizer` picks the one to use with it.
"""
import functools
import logging
import re

from paddle_elmo.fileio import BOM, InputError, require_package
from paddle_elmo.logs import warn_once, warned

log = logging.getLogger(__name__)


TOKENIZERS = ('whitespace', 'moses', 'jieba', 'chars')
# The language each tokenizer is made for (whitespace: any text already split into tokens).
TOKENIZER_LANGUAGES = {'moses': 'English', 'jieba': 'Chinese', 'chars': 'Chinese'}


JIEBA_VERSION = '0.42.1'  # the [zh] extra's (pyproject.toml); zh-corpus was segmented with it


SACREMOSES_VERSION = '0.2.0'  # a core dependency (pyproject.toml): the bundled English model's tokenizer


# The CJK ideographs, as ranges of a character class: extension A, unified, compatibility, and
# extensions B to H with the compatibility supplement (languages.py tells Chinese text by them).
IDEOGRAPHS = '\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U000323af'
# The characters that `chars` makes tokens of their own (not U+3000, the ideographic space).
_CJK = ('\u2010-\u2027'  # the general punctuation Chinese text uses: — ‘ ’ “ ” …
        '\u2e80-\u2fdf'  # radicals
        '\u3001-\u303f'  # CJK symbols and punctuation: 、。《》「」【】
        '\uff00-\uffef'  # halfwidth and fullwidth forms: ，！？：；（）
        + IDEOGRAPHS)


_CHAR_TOKEN = re.compile(f'[{_CJK}]|[^\\s{_CJK}]+')


def whitespace_tokens(text):
    """Split on whitespace, as TF-Hub ELMo's `default` signature splits its untokenized strings."""
    return text.split()


def char_tokens(text):
    """Every CJK character is a token of its own; runs of other non-whitespace characters (Latin
    words, numbers, ASCII punctuation) stay whole; whitespace separates tokens and is dropped:
    'iPhone很好用！' -> ['iPhone', '很', '好', '用', '！']. CJK characters are the ideographs
    (U+3400-4DBF, U+4E00-9FFF, U+F900-FAFF, U+20000-323AF), the radicals (U+2E80-2FDF), CJK
    symbols and punctuation (U+3001-303F: 、。《》), the fullwidth forms (U+FF00-FFEF: ，！？)
    and the dashes, quotation marks and ellipsis of General Punctuation (U+2010-2027: — “ ” …)."""
    return _CHAR_TOKEN.findall(text)


def _jieba_tokenizer():
    """jieba's accurate mode (`jieba.lcut(text)`, HMM on for unknown words), without the whitespace
    tokens it returns; imported on first use, its dictionary-loading messages silenced. It is the
    process's jieba: words added with jieba.add_word / load_userdict take part.

    Text already segmented this way comes out unchanged (tests/test_tokenizers.py): jieba cuts
    whitespace-separated chunks apart anyway, but its HMM makes words of runs of single characters
    that, alone, it cuts into characters again (`字段` in context, `字 段` alone: a dictionary word
    whose own score loses to its characters'). So a chunk of a text with whitespace that jieba would
    cut into single characters only, and that its dictionary lists as a word, stays whole. Text
    without whitespace is cut exactly as `jieba.lcut` cuts it."""
    jieba = require_package('jieba', 'zh')  # the extra pins jieba JIEBA_VERSION
    jieba.setLogLevel(logging.WARNING)  # else 'Building prefix dict ...' on stderr at the first cut

    def dictionary_word(chunk):
        return jieba.get_FREQ(chunk, 0) > 0

    def jieba_tokens(text):
        chunks = text.split()
        if len(chunks) == 1 and chunks[0] == text:
            return jieba.lcut(text)
        tokens = []
        for chunk in chunks:
            cut = jieba.lcut(chunk)
            single_characters = len(cut) > 1 and all(len(piece) == 1 for piece in cut)
            tokens += [chunk] if single_characters and dictionary_word(chunk) else cut
        return tokens
    return jieba_tokens


# Where lm-corpus's (1B Word style) tokenization departs from sacremoses's English Moses rules.
# Each is a pattern whose match sacremoses must keep as one token (its `protected_patterns`):
_CORPUS_WHOLE_TOKENS = (
    r'\b\d+(?:[.,]\d+)*(?:[/:]\d+(?:[.,]\d+)*)+\b',  # numbers joined by / or : (1/2, 1985/86, 30:37)
    r'\b[^\W\d_]+&[^\W\d_]+\b',  # letters joined by & (R&B, AT&T)
    # an apostrophe inside a name is no clitic, and the name keeps its possessive (O'Toole,
    # d'état, rock'n'roll, D'Amato's; but don 't, it 's)
    r"\b[^\W\d_]+(?:'(?!(?:s|t|re|ve|ll|d|m)\b)[^\W\d_]+)+(?:'s)?\b",
    r"\b[^\W_]+(?:-[^\W_]+)+'[^\W\d_]+\b",  # a hyphenated word keeps its clitic (Jay-Z's)
    r'(?<= )[!?]{2,}(?= )',  # runs of ! and ? (!!!, ?!), spaced out first in moses_tokens
    r'\w*_\w*',  # underscores join (Wikipedia's codice_1, formula_2; ____ whole); Moses splits them off
)
# A clitic already split off stays one token, so that text tokenized this way comes out unchanged
# (Moses alone makes `isn ' t` of `isn 't`), and so does the Penn Treebank's `n't` (`do n't`, as
# AllenNLP's and spaCy's tokenizers split: Moses would make `n 't`). Each stands in as a word of its
# own while Moses runs; not a protected pattern: sacremoses protects every occurrence of a protected
# string, `'s` inside `It's` too.
_SPLIT_CLITIC = re.compile(r"(?<!\S)(?:n't|'(?:s|t|re|ve|ll|d|m))(?!\w)", re.IGNORECASE)
# Words whose period lm-corpus keeps mid-sentence (every word so kept in train.txt more than once,
# initials aside), in any case, as its sentence splitter read them (`No.`, `no.`, `NO.`); Moses's
# English list holds some, in one case each, and `No` and `pp` only before a number.
_CORPUS_ABBREVIATIONS = (
    'al', 'approx', 'aug', 'bros', 'ca', 'capt', 'cf', 'co', 'col', 'corp', 'dec', 'def', 'dept', 'dr', 'ed',
    'est', 'etc', 'feb', 'fig', 'figs', 'ft', 'gen', 'gov', 'hon', 'inc', 'jan', 'jr', 'lt', 'ltd', 'mar',
    'messrs', 'mlle', 'mme', 'mr', 'mrs', 'ms', 'mt', 'no', 'nos', 'nov', 'oct', 'op', 'pp', 'prof', 'rep',
    'rev', 'sen', 'sept', 'sgt', 'sr', 'st', 'univ', 'vol', 'vols', 'vs')
_PAGE = 'p'  # `p. 138`: the one lower-case single letter the corpus keeps with its period (not `c .`, `v .`)
# The corpus maps curly quotes to straight ones; Moses would make tokens of them as they are.
_STRAIGHT_QUOTES = str.maketrans({'\u2018': "'", '\u2019': "'", '\u201c': '"', '\u201d': '"'})
_MARK_RUN = re.compile(r'[!?]{2,}')  # spaced out, then protected whole
_FINAL_ABBREVIATION = re.compile(r'^([^\W\d_]+)\.$')
_WORD_PERIOD = _FINAL_ABBREVIATION  # a word and its period


def _moses_tokenizer():
    """English text as lm-corpus and 1B Word are tokenized (Moses style): sacremoses's English
    MosesTokenizer with the corpus's departures (_CORPUS_WHOLE_TOKENS, _CORPUS_ABBREVIATIONS,
    straight quotes, clitics already split kept, `_corpus_possessives`, `_corpus_ending`); no XML
    escapes (escape=False: `'s`, not `&apos;s`) and no aggressive dash splits (`well-known` stays).
    Its English rules split `n't` as 1B Word does (`isn 't`; PTB's would be `is n't`):
    "It's raining, isn't it?" -> It 's raining , isn 't it ?.

    Text already tokenized this way comes out unchanged, or almost (tests/test_tokenizers.py), and
    so do the Penn Treebank's `n't` (`do n't`) and Moses's XML escapes, read as their characters
    (`AT&amp;T` -> `AT&T`, one token). sacremoses is imported on first use."""
    try:
        from sacremoses import MosesTokenizer
    except ImportError:
        raise InputError(f'the moses tokenizer needs the sacremoses package: pip install sacremoses=='
                         f'{SACREMOSES_VERSION}') from None
    moses, abbreviations, unescape = _english_moses(MosesTokenizer)

    def moses_tokens(text):
        text = _MARK_RUN.sub(lambda m: f' {m.group()} ', unescape(text).translate(_STRAIGHT_QUOTES))
        clitics, stand_in = _SPLIT_CLITIC.findall(text), 'clitic'
        while stand_in in text:
            stand_in += 'x'
        text = _SPLIT_CLITIC.sub(f' {stand_in} ', text)
        tokens = moses.tokenize(text, escape=False, aggressive_dash_splits=False,
                                protected_patterns=_CORPUS_WHOLE_TOKENS)
        if clitics:
            clitics = iter(clitics)
            tokens = [next(clitics) if token == stand_in else token for token in tokens]
        return _corpus_ending(_corpus_periods(_corpus_possessives(tokens), abbreviations))
    return moses_tokens


@functools.lru_cache(maxsize=None)
def _english_moses(tokenizer_class):
    """sacremoses's English MosesTokenizer with the corpus's abbreviations, built once per process:
    building it reads its prefix lists, and get_tokenizer runs at every encode call. Only
    the build is cached: the import above runs each time, so a missing sacremoses stays an error.
    -> (the tokenizer, the words whose period it keeps (a frozenset), `unescape`: text -> text
    with the XML escapes Moses writes by default (sacremoses's escape=True, tokenizer.perl without
    -no-escape; read from the tokenizer's own table) as the characters the corpus holds:
    `AT&amp;T` -> `AT&T`)."""
    moses = tokenizer_class(lang='en')
    corpus = {variant for word in _CORPUS_ABBREVIATIONS
              for variant in (word, word.upper(), word.capitalize())} | {_PAGE}
    moses.NONBREAKING_PREFIXES = moses.NONBREAKING_PREFIXES + sorted(corpus - set(moses.NONBREAKING_PREFIXES))
    # The corpus keeps `No.` and `pp.` before any word, not only before a number (Moses's rule).
    moses.NUMERIC_ONLY_PREFIXES = [word for word in moses.NUMERIC_ONLY_PREFIXES if word not in corpus]
    characters = {escaped: pattern.pattern.replace('\\', '') for pattern, escaped in moses.MOSES_ESCAPE_XML_REGEXES}
    escapes = re.compile('|'.join(map(re.escape, characters)))
    unescape = functools.partial(escapes.sub, lambda m: characters[m.group()])
    return moses, frozenset(moses.NONBREAKING_PREFIXES) | corpus, unescape


def _corpus_periods(tokens, abbreviations):
    """Moses keeps a period on a word before a lower-case word, taking it for an abbreviation
    (`movie. the` in lower-cased text); the corpus keeps only known abbreviations' (its lower-case
    words ending in `.` are etc. vs. no. al. p. ...): the others' period is split off."""
    out = []
    for token in tokens:
        word = _WORD_PERIOD.match(token)
        out += [word.group(1), '.'] if word and word.group(1) not in abbreviations else [token]
    return out


def _corpus_possessives(tokens):
    """`'s` after a token that does not end in a letter is two tokens in the corpus: `1930 ' s`,
    `" Adventure " ' s` (Moses: `1930 's`)."""
    if "'s" not in tokens and "'S" not in tokens:
        return tokens
    out = []
    for token in tokens:
        if token in ("'s", "'S") and out and not out[-1][-1].isalpha():
            out += ["'", token[1]]
        else:
            out.append(token)
    return out


def _corpus_ending(tokens):
    """Moses keeps a known abbreviation's period at the end of the text (`Corp.`); the corpus
    splits a sentence's final period from a one-word abbreviation (`U.S.` stays)."""
    final = _FINAL_ABBREVIATION.match(tokens[-1]) if tokens else None
    return tokens[:-1] + [final.group(1), '.'] if final else tokens


def get_tokenizer(name):
    """A tokenizer's name (TOKENIZERS) -> a function: raw text -> list of str tokens (none empty,
    none holding whitespace). whitespace: `whitespace_tokens`; moses: English as 1B Word and
    lm-corpus are tokenized (`_moses_tokenizer`); jieba: Chinese words (`_jieba_tokenizer`);
    chars: `char_tokens`."""
    if name == 'whitespace':
        return whitespace_tokens
    if name == 'moses':
        return _moses_tokenizer()
    if name == 'chars':
        return char_tokens
    if name == 'jieba':
        return _jieba_tokenizer()
    raise InputError(f'unknown tokenizer {name!r}; expected one of {", ".join(TOKENIZERS)}')


def model_tokenizer(recorded, requested=None):
    """The tokenizer to use on raw text for a model whose training text `recorded` segmented
    (ModelConfig.tokenizer): `requested` when given, with a warning if it is another, else
    `recorded` -> its name (checked)."""
    name = requested or recorded
    get_tokenizer(name)
    if name != recorded:
        log.warning('tokenizer %r differs from %r, the tokenizer the model was trained with (its options.json); '
                    'its inputs will not be segmented as its training text was', name, recorded)
    return name


def tokenizer_line(name, requested=None):
    """The one line a command that splits raw lines says about it: which tokenizer (`name`, the
    model's unless `requested`), and how to give text already split into tokens."""
    whose = '--tokenizer' if requested else "the model's"
    if name == 'whitespace':
        return (f'tokenizer: whitespace ({whose}): each line is its tokens separated by spaces; raw text needs '
                '--tokenizer moses (English) or jieba (Chinese)')
    return (f'tokenizer: {name} ({whose}): lines are split as its training text was; text already in tokens '
            'separated by spaces: --tokenizer whitespace keeps them as they are')


def as_token_lists(sentences, tokenizer='whitespace', about=None):
    """A batch of sentences -> list of token lists, each a list of str.

    A sentence is a raw string (split by the named `tokenizer`, see get_tokenizer, after a leading
    byte-order mark; '' gives no tokens) or any iterable of str tokens. The batch itself must be a
    list (or tuple, array...) of sentences: a bare string is a TypeError, since it is ambiguous (one
    sentence or many?), and so is anything else that is not a sentence (an int, bytes, a token that
    is not a str). `about`: what the text is given to (languages.warning_subject: a model), the
    subject of the warning of unsegmented Chinese split by whitespace (logs.warn_once).
    """
    if isinstance(sentences, (str, bytes)) or not hasattr(sentences, '__iter__'):
        raise TypeError(f'expected a list of sentences (each a string or a list of tokens), got '
                        f'{_describe(sentences)}; for one sentence pass [sentence]')
    split = get_tokenizer(tokenizer)
    batch = []
    for i, sentence in enumerate(sentences):
        if isinstance(sentence, str):
            batch.append(split(sentence.removeprefix(BOM)))  # a line read with its file's byte-order mark
            if tokenizer == 'whitespace':
                _warn_if_unsegmented(batch[-1], about)
            continue
        if isinstance(sentence, bytes) or not hasattr(sentence, '__iter__'):
            raise TypeError(f'sentence {i} is {_describe(sentence)}; expected a string or a list of '
                            f'str tokens')
        tokens = list(sentence)
        for token in tokens:
            if not isinstance(token, str):
                raise TypeError(f'sentence {i} holds {_describe(token)}; expected str tokens')
        batch.append(tokens)
    return batch


# A run of this many CJK ideographs in one whitespace token is a phrase, not a word: raw Chinese
# (words are 1-3 characters; segmented text such as zh-corpus has hardly any token this long).
_UNSEGMENTED = re.compile('[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]{6}')
UNSEGMENTED_WARNING = 'unsegmented Chinese'  # its logs.warn_once kind


def _warn_if_unsegmented(tokens, about):
    """Warns once per `about` (the model the text is given to) when whitespace splitting left
    unsegmented Chinese in a token."""
    if warned(UNSEGMENTED_WARNING, about):
        return
    token = next((t for t in tokens if _UNSEGMENTED.search(t)), None)
    if token is not None:
        warn_once(log, UNSEGMENTED_WARNING, about, "the whitespace tokenizer left unsegmented Chinese as one token (%r): pass "
                  "tokenizer='jieba' (Chinese words, as zh-corpus is segmented) or tokenizer='chars'", token[:20])


def _describe(value):
    if isinstance(value, str):
        return f'a string ({value[:40]!r})'
    return f'a value of type {type(value).__name__} ({repr(value)[:40]})'
