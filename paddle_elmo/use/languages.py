"""Whether a text fits the model it is given to, and why not: the script (the language) a text and a
vocabulary are written in, and the one warning of a text the model cannot read well
(`warn_if_mostly_unknown`): a language mismatch (Chinese into an English model) that names the
models of the text's language (model_names.MODELS), or a tokenization mismatch that names the
tokenizer.
"""
import collections
import logging
import re
import unicodedata

from paddle_elmo.logs import warn_once, warned, warning_held
from paddle_elmo.files.model_names import models_of_language, packaged_model_of
from paddle_elmo.text.tokenizers import IDEOGRAPHS, TOKENIZER_LANGUAGES

log = logging.getLogger(__name__)


# A word model given text tokenized otherwise than its training text sees mostly unknown words
# (`raining,` and `isn't` are not words of a Moses-tokenized corpus); its own text has a few percent.
UNKNOWN_WARNING_SHARE = 0.3
UNKNOWN_WARNING = 'text the model cannot read well'  # its logs.warn_once kind


def warning_subject(vocab, tokenizer):
    """What a warning about a model's input is about (logs.warn_once's subject): a word model's
    vocabulary file (`vocab`), which names the model; for a char model (`vocab` None), which reads
    any token, its `tokenizer`, the one thing of the model the warning reads (its language)."""
    return vocab.path if vocab is not None else f'a char model split by {tokenizer}'


def warn_if_mostly_unknown(vocab, sentences, tokenizer):
    """Warns once per model (warning_subject) when the text does not fit the model, saying why:

    - a language mismatch (`language_mismatch`): at least UNKNOWN_WARNING_SHARE of the tokens of
      `sentences` (token lists: one call's) are not in `vocab`, a word model's input Vocabulary, and
      the text is written in another script than the vocabulary (Chinese into an English model); or,
      for a char model (`vocab` None, which reads any token), the text's script is not the language
      of `tokenizer` (Chinese split by moses, the English tokenizer of AllenNLP's models);
    - else a tokenization mismatch: as many unknown tokens in the vocabulary's own script, made by
      `tokenizer`, the one named."""
    subject = warning_subject(vocab, tokenizer)
    if warned(UNKNOWN_WARNING, subject):
        return
    tokens = [t for s in sentences for t in s]
    if vocab is None or vocab.size == 0:  # a char model (an ELMoForManyLangs one's dictionaries: no words)
        message = _char_model_mismatch(tokens, tokenizer)
    else:
        message = _word_model_mismatch(vocab, tokens, tokenizer)
    if message:
        warn_once(log, UNKNOWN_WARNING, subject, '%s', message)


def unknown_words_expected():
    """A context within which warn_if_mostly_unknown stays silent: for text of our own that is not in
    the model's language (an export's check sentences, English and odd tokens, run by a Chinese
    model); the warning is still given once afterwards to the user's own text."""
    return warning_held(UNKNOWN_WARNING)


def _word_model_mismatch(vocab, tokens, tokenizer):
    n_unknown = sum(vocab.word_to_id(t) == vocab.unk for t in tokens)
    if not tokens or n_unknown < UNKNOWN_WARNING_SHARE * len(tokens):
        return None
    unknown = f'{n_unknown} of {len(tokens)} tokens ({100 * n_unknown / len(tokens):.0f}%) are not in'
    text_script, vocab_script = main_script(tokens[:_SCRIPT_SAMPLE]), vocab_main_script(vocab)
    if text_script and vocab_script and text_script != vocab_script:
        return language_mismatch(text_script, describe_script(vocab_script), _model_name(vocab),
                                 f'{unknown} its vocabulary')
    return (f"{unknown} the model's vocabulary ({vocab.path}): is the text tokenized as its training text was? "
            f"They were made by the {tokenizer!r} tokenizer; name another with tokenizer= (Python) or --tokenizer "
            "(commands)")


def _char_model_mismatch(tokens, tokenizer):
    """A char model's text in a script that is not its tokenizer's language's (None: it is, or no
    language to tell: the whitespace tokenizer). Cheap for text of the model's own script, the usual
    case, at every call (a char model never warns of unknown tokens)."""
    model_language = TOKENIZER_LANGUAGES.get(tokenizer)
    tokens = tokens[:_SCRIPT_SAMPLE]
    if model_language is None:
        return None
    n_han = sum(1 for t in tokens if _HAN.search(t))  # one C search per token, before any per-letter count
    if (n_han == 0) if model_language != 'Chinese' else (2 * n_han >= len(tokens)):
        return None
    text_script = main_script(tokens)
    if text_script is None or SCRIPT_LANGUAGES.get(text_script) == model_language:
        return None
    return language_mismatch(text_script, f'{model_language} (its tokenizer is {tokenizer})', None, None)


# ---- the language of a text and of a vocabulary, told by its script -----------------------------------

_HAN = re.compile(f'[{IDEOGRAPHS}]')
# A script's language, as this project's models are written: English in Latin script, Chinese in Han.
SCRIPT_LANGUAGES = {'Han': 'Chinese', 'Latin': 'English'}
# The tokens a script is told from: a vocabulary's most frequent (first in its file), a call's first.
_SCRIPT_SAMPLE = 5000


def char_script(char):
    """A letter's script: 'Han' for an ideograph, else the first word of its Unicode name ('Latin',
    'Cyrillic', 'Hiragana', ...; fullwidth and halfwidth forms as their script); None for a character
    that is no letter (a digit, punctuation)."""
    if _HAN.match(char):
        return 'Han'
    if not char.isalpha():
        return None
    words = [w for w in unicodedata.name(char, '').split() if w not in ('FULLWIDTH', 'HALFWIDTH')]
    if not words:
        return None
    return 'Han' if words[0] == 'CJK' else words[0].capitalize()


def main_script(tokens):
    """The script of most of the letters of `tokens` (at least half of them), else None."""
    counts = collections.Counter(filter(None, map(char_script, ''.join(tokens))))
    if not counts:
        return None
    script, n = counts.most_common(1)[0]
    return script if 2 * n >= sum(counts.values()) else None


def vocab_main_script(vocab):
    """The script of a Vocabulary's most frequent tokens (main_script), computed once per Vocabulary."""
    if not hasattr(vocab, '_main_script'):
        vocab._main_script = main_script(vocab.tokens[:_SCRIPT_SAMPLE])
    return vocab._main_script


def describe_script(script):
    """'Chinese (Han script)', 'English (Latin script)', or 'Cyrillic-script' for a script no model
    here is written in."""
    return f'{SCRIPT_LANGUAGES[script]} ({script} script)' if script in SCRIPT_LANGUAGES else f'{script}-script'


def language_mismatch(text_script, model_language, model_name=None, detail=None):
    """The one line for text in `text_script` given to a model of `model_language` (as describe_script
    says it; `model_name`: a name of the models' table, else None): both languages, and the models of
    the table for the text's language (model_names.models_of_language), or what to do without one."""
    language = SCRIPT_LANGUAGES.get(text_script)
    names = models_of_language(language) if language else []
    if names:
        advice = (f'use a model of {language} text: {", ".join(names)} (--model {names[0]} in a command, '
                  f"ELMoEmbedder('{names[0]}') in Python)")
    else:
        advice = (f'use a model trained on {language or describe_script(text_script)} text (paddle-elmo pretrain '
                  f'makes one from a corpus{": README, section Chinese" if language == "Chinese" else ""})')
    model = f'the model {model_name!r}' if model_name else 'the model'
    return (f'these sentences are {describe_script(text_script)} but {model} is {model_language}'
            f'{f": {detail}" if detail else ""}; {advice}; no tokenizer makes up for it')


def _model_name(vocab):
    """The name of the packaged model whose vocabulary `vocab` is, else None."""
    return packaged_model_of(vocab.path)
