"""A run's two config files and a word model's vocabulary, beside its weights:

- `options.json`: the model in bilm-tf's options format (ModelConfig.to_options) plus the training
  keys bilm-tf's `bin/train_elmo.py` writes there (recipe.BILM_TF_TRAINING_KEYS and `n_tokens_vocab`);
- `recipe.json`: the rest of our Recipe. Checkpoints written before recipe.json existed kept our
  recipe keys in options.json (`lr`, `preset`, `optimizer`, ...): `read_run_configs` reads both;
- `vocab.txt` (word and word+char input): line i is row i of the word embedding, `<S>`, `</S>`,
  `<UNK>` first; for bilm-tf files the user passes it. Its size is options.json's `n_tokens_vocab`.
"""
import dataclasses
import json
import os

from paddle_elmo.model.recipe import BILM_TF_TRAINING_KEYS, PRESETS, RECIPE_FIELDS, Recipe, split_fields
from paddle_elmo.model.config import ModelConfig
from paddle_elmo.fileio import InputError, read_text, write_json_atomic
from paddle_elmo.text.dictionary_ids import Lexicon
from paddle_elmo.text.vocabulary import SPECIAL_TOKENS, Vocabulary, read_vocabulary_file, write_vocabulary


OPTIONS_FILE, RECIPE_FILE, WEIGHTS_FILE, VOCAB_FILE = 'options.json', 'recipe.json', 'weights.hdf5', 'vocab.txt'


RECIPE_VERSION = 1


def read_json(path, what):
    try:
        value = json.loads(read_text(path))  # a byte-order mark (an options.json saved by Notepad) ignored
    except FileNotFoundError:
        raise FileNotFoundError(f'{path}: {what} not found') from None
    except json.JSONDecodeError as e:
        raise InputError(f'{path}: not valid JSON (line {e.lineno}: {e.msg})') from None
    if not isinstance(value, dict):
        raise InputError(f'{path}: expected a JSON object, got {type(value).__name__}')
    return value


def read_model_config(options_file):
    """A bilm-tf / AllenNLP options.json (or ours) -> ModelConfig, checked."""
    return ModelConfig.from_options(read_json(options_file, 'options file'), options_file)


def write_run_configs(directory, model, recipe, vocab, input_vocab=None):
    """DIR/options.json (the model and bilm-tf's training keys, its names; n_tokens_vocab is the
    training Vocabulary `vocab`'s size), DIR/recipe.json and the model's input vocabulary as
    write_input_vocabulary writes it: `input_vocab` (an ELMoForManyLangs model's Lexicon: char.dic,
    word.dic), by default `vocab` for word input (vocab.txt, its ids as lines)."""
    options = model.to_options()
    for field, key in BILM_TF_TRAINING_KEYS.items():
        options[key] = getattr(recipe, field)
    options['n_tokens_vocab'] = vocab.size
    rest = {k: v for k, v in dataclasses.asdict(recipe).items() if k not in BILM_TF_TRAINING_KEYS}
    input_vocab = vocab if input_vocab is None and model.has_words else input_vocab
    if input_vocab is not None:
        write_input_vocabulary(input_vocab, directory)
    write_json_atomic(options, os.path.join(directory, OPTIONS_FILE))
    write_json_atomic({'version': RECIPE_VERSION, **rest}, os.path.join(directory, RECIPE_FILE))


def write_input_vocabulary(vocab, directory):
    """DIR/vocab.txt: the model's input vocabulary, line i = id i (specials included); an
    ELMoForManyLangs model's dictionaries (a Lexicon) as DIR/char.dic and DIR/word.dic. A vocab.txt there
    that holds those tokens already (the --vocab_file itself, kept beside its run) is left as it is; one
    that is the run's own --vocab_file but lacks the specials is refused, never rewritten."""
    if isinstance(vocab, Lexicon):
        vocab.write(directory)
        return
    path = os.path.join(directory, VOCAB_FILE)
    if os.path.isfile(path) and read_vocabulary_file(path) == vocab.tokens:
        return
    if os.path.isfile(path) and os.path.samefile(path, vocab.path):
        raise InputError(f'--vocab_file {vocab.path}: the run writes its input vocabulary there with '
                         f'{", ".join(SPECIAL_TOKENS)} first, which this file lacks; keep it outside --save_dir')
    write_vocabulary(vocab.tokens, path)


def read_input_vocabulary(config, model_dir, vocab_file=None, rows=None, source='the model'):
    """The input Vocabulary of a word or word+char model (None for a char model).

    It is `model_dir`/vocab.txt (a checkpoint's or an export's) or `vocab_file` (bilm-tf files);
    given both, they must hold the same tokens. Line i is row i of the word embedding, so the
    file must hold `<S>`, `</S>` and `<UNK>` (bilm-tf's layout) and, with `rows` (the embedding's
    rows, from the weights), exactly that many lines. Each mismatch is one line naming the files.
    A dict- mode's (an ELMoForManyLangs model's, exported) are its char.dic and word.dic instead.
    """
    if config.input_mode.chars_from_vocab:
        return Lexicon.read(model_dir or '.', config.max_characters_per_token, config.has_words)
    if not config.has_words:
        return None
    own = os.path.join(model_dir or '.', VOCAB_FILE) if model_dir is not None else None
    own = own if own and os.path.isfile(own) else None
    if own is None and vocab_file is None:
        raise InputError(f'{source} reads words ({config.token_input} input) and has no {VOCAB_FILE} beside its '
                         f'options.json: give its vocabulary (--vocab_file / vocab_file=; line i = embedding row i)')
    path = own or vocab_file
    tokens = read_vocabulary_file(path)
    if own and vocab_file and os.path.abspath(vocab_file) != os.path.abspath(own) \
            and Vocabulary(vocab_file, config.max_characters_per_token).tokens != tokens:
        raise InputError(f'{vocab_file} is not the vocabulary of {source} ({own}): their tokens differ')
    missing = [t for t in SPECIAL_TOKENS if t not in tokens]
    if missing:
        raise InputError(f'{path}: the input vocabulary of a word model must hold {", ".join(SPECIAL_TOKENS)} (line i '
                         f'is embedding row i); missing {", ".join(missing)}')
    if rows is not None and rows != len(tokens):
        raise InputError(f'{path} has {len(tokens)} tokens but the word embedding of {source} has {rows} rows: not '
                         f'the vocabulary it was trained with')
    return Vocabulary.from_tokens(tokens, config.max_characters_per_token, path)


# Our recipe keys as checkpoints before recipe.json kept them in options.json.
_LEGACY_RECIPE_KEYS = {'lr': 'lr', 'preset': 'preset', 'optimizer': 'optimizer', 'warmup_steps': 'warmup_steps',
                       'seed': 'seed', 'reset_state_at_sentence_start': 'reset_state_at_sentence_start',
                       'n_gpus': 'world_size'}


def read_run_configs(directory):
    """A checkpoint directory -> (ModelConfig, Recipe): options.json and recipe.json, or the older
    layout with our recipe keys inside options.json. A setting neither file holds takes the value
    of the run's preset (the default recipe, `original`, when none is recorded)."""
    options_file = os.path.join(directory, OPTIONS_FILE)
    options = read_json(options_file, 'options file')
    model = ModelConfig.from_options(options, options_file)
    recipe_file = os.path.join(directory, RECIPE_FILE)
    values = {field: options[key] for field, key in BILM_TF_TRAINING_KEYS.items() if key in options}
    if os.path.exists(recipe_file):
        stored = read_json(recipe_file, 'recipe')
        values.update({k: v for k, v in stored.items() if k in RECIPE_FIELDS})
        if 'dropout_masks' not in stored:  # written before the field: by the kernel's code if it knew lr_decay,
            # which came just before the kernel (927a91d, bd5d261); before that, Paddle's dropout
            values['dropout_masks'] = 'kernel' if 'lr_decay' in stored else 'paddle'
    else:  # written before recipe.json: our keys sat in options.json ('lr' before 'learning_rate')
        values.update({field: options[key] for key, field in _LEGACY_RECIPE_KEYS.items() if key in options})
        values['dropout_masks'] = 'paddle'  # that code had no dropout kernel
    # A run written before from_weights_lr_scale existed ran at the full rate: it resumes so; one
    # written before softmax_bias_init started from a zero bias, whatever its preset says today.
    values.setdefault('from_weights_lr_scale', 1.0)
    values.setdefault('softmax_bias_init', 'zero')
    preset = values.get('preset') or 'original'
    if preset not in PRESETS:
        raise InputError(f'{recipe_file}: unknown preset {preset!r} (known: {", ".join(PRESETS)})')
    _, preset_recipe = split_fields(PRESETS[preset])
    return model, Recipe(**{**preset_recipe, **values, 'preset': preset})
