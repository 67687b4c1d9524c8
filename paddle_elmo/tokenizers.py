"""Raw text to tokens: the one place a string becomes tokens (whitespace, jieba or chars).

The embedders, Elmo, the classifiers' data, build-vocab and predict all go through `get_tokenizer`.
A model records the tokenizer of its training text (config.ModelConfig.tokenizer);
`model_tokenizer` picks the one to use with it.
"""
import logging
import re

from paddle_elmo.fileio import InputError, require_package

log = logging.getLogger(__name__)


TOKENIZERS = ('whitespace', 'jieba', 'chars')


JIEBA_VERSION = '0.42.1'  # the [zh] extra's (pyproject.toml); zh-corpus was segmented with it


# The characters that `chars` makes tokens of their own (not U+3000, the ideographic space).
_CJK = ('\u2010-\u2027'  # the general punctuation Chinese text uses: — ‘ ’ “ ” …
        '\u2e80-\u2fdf'  # radicals
        '\u3001-\u303f'  # CJK symbols and punctuation: 、。《》「」【】
        '\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff'  # ideographs: extension A, unified, compatibility
        '\uff00-\uffef'  # halfwidth and fullwidth forms: ，！？：；（）
        '\U00020000-\U000323af')  # ideographs: extensions B to H, compatibility supplement


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
    process's jieba: words added with jieba.add_word / load_userdict take part."""
    jieba = require_package('jieba', 'zh')  # the extra pins jieba JIEBA_VERSION
    jieba.setLogLevel(logging.WARNING)  # else 'Building prefix dict ...' on stderr at the first cut

    def jieba_tokens(text):
        return [token for token in jieba.lcut(text) if not token.isspace()]
    return jieba_tokens


def get_tokenizer(name):
    """A tokenizer's name (TOKENIZERS) -> a function: raw text -> list of str tokens (none empty,
    none holding whitespace). whitespace: `whitespace_tokens`; jieba: Chinese words
    (`_jieba_tokenizer`); chars: `char_tokens`."""
    if name == 'whitespace':
        return whitespace_tokens
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


def as_token_lists(sentences, tokenizer='whitespace'):
    """A batch of sentences -> list of token lists, each a list of str.

    A sentence is a raw string (split by the named `tokenizer`, see get_tokenizer; '' gives no
    tokens) or any iterable of str tokens. The batch itself must be a list (or tuple, array...) of
    sentences: a bare string is a TypeError, since it is ambiguous (one sentence or many?), and so
    is anything else that is not a sentence (an int, bytes, a token that is not a str).
    """
    if isinstance(sentences, (str, bytes)) or not hasattr(sentences, '__iter__'):
        raise TypeError(f'expected a list of sentences (each a string or a list of tokens), got '
                        f'{_describe(sentences)}; for one sentence pass [sentence]')
    split = get_tokenizer(tokenizer)
    batch = []
    for i, sentence in enumerate(sentences):
        if isinstance(sentence, str):
            batch.append(split(sentence))
            if tokenizer == 'whitespace':
                _warn_if_unsegmented(batch[-1])
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
_warned_unsegmented = False


def _warn_if_unsegmented(tokens):
    """Warns once per process when whitespace splitting left unsegmented Chinese in a token."""
    global _warned_unsegmented
    if _warned_unsegmented:
        return
    token = next((t for t in tokens if _UNSEGMENTED.search(t)), None)
    if token is not None:
        _warned_unsegmented = True
        log.warning("the whitespace tokenizer left unsegmented Chinese as one token (%r): pass tokenizer='jieba' "
                    "(Chinese words, as zh-corpus is segmented) or tokenizer='chars'", token[:20])


def _describe(value):
    if isinstance(value, str):
        return f'a string ({value[:40]!r})'
    return f'a value of type {type(value).__name__} ({repr(value)[:40]})'
