"""A pretraining run's configs, whichever way it starts: a new run from a preset, a resumed run
(the checkpoint defines the model), or a new run from pretrained weights (the file defines the
model): `for_run` -> (ModelConfig, Recipe).
"""
import copy
import dataclasses
import logging
import os

from paddle_elmo.fileio import InputError
from paddle_elmo.model.config import ModelConfig
from paddle_elmo.model.recipe import PRESETS, Recipe, split_fields


log = logging.getLogger(__name__)


def from_preset(preset, given):
    """A new run: the preset's values, then the settings given explicitly -> (ModelConfig, Recipe)."""
    if preset not in PRESETS:
        raise InputError(f'--preset must be one of {", ".join(PRESETS)}, got {preset!r}')
    model, recipe = split_fields({**copy.deepcopy(PRESETS[preset]), **given, 'preset': preset})
    return ModelConfig(**model).checked(), Recipe(**recipe).checked()


def for_resume(model, recipe, given, source):
    """A resumed run: the checkpoint's configs, with the training settings given explicitly (and,
    with `preset` among them, that preset's training values) -> (ModelConfig, Recipe).

    The checkpoint defines the model: a model setting given that differs from it is an InputError
    naming each such flag, its value and the checkpoint's.
    """
    given = dict(given)
    if 'preset' in given:
        _, preset_recipe = split_fields(PRESETS[given['preset']])
        given = {**preset_recipe, **given}
    given_model, given_recipe = split_fields(given)
    _check_model_flags(model, given_model, f'{source} defines the model being resumed', 'checkpoint',
                       'Drop them, or start a new --save_dir without --init_from_ckpt')
    return model, dataclasses.replace(recipe, **given_recipe).checked()


def for_weights(model, given, source):
    """A new run from pretrained weights (domain adaptation): the file's model, the recipe of
    --preset (default original) and the flags given -> (ModelConfig, Recipe).

    A model setting given that differs from the file's is an InputError naming each such flag;
    dropout is a training setting here (a released options.json often leaves it out): the flag's,
    else the preset's; so is tokenizer, the adaptation corpus's: the flag's, else the file's.
    """
    given = dict(given)
    preset = given.pop('preset', 'original')
    given_model, given_recipe = split_fields(given)
    dropout = given_model.pop('dropout', None)
    tokenizer = given_model.pop('tokenizer', model.tokenizer)  # the new corpus's, which may differ
    _check_model_flags(model, given_model, f'{source} defines the model being adapted', 'weights',
                       'Drop them: the weights fix the model')
    _, recipe = from_preset(preset, given_recipe)  # (checks the preset's name)
    dropout = PRESETS[preset]['dropout'] if dropout is None else dropout
    return dataclasses.replace(model, dropout=dropout, tokenizer=tokenizer).checked(), recipe


def for_run(given, resumed=None, weights=None):
    """A pretraining run's configs, whichever way it starts -> (ModelConfig, Recipe): a new run's
    from `preset` (among `given`, default original) and the settings given; a resumed run's
    (for_resume) or a run from weights (for_weights). The paths the recipe names become absolute,
    so that a resume from another directory reads the same data.

    given: the settings given explicitly, {field: value}; resumed: (ModelConfig, Recipe, source) as
    read from the checkpoint a run resumes, source naming its options.json; weights:
    (ModelConfig, options_file, weight_file, vocabulary_file) of the weights a new run starts from,
    vocabulary_file the vocab.txt beside them or None. InputError for settings that cannot go together.
    """
    given = dict(given)
    check_one_start(resumed is not None, weights is not None)
    if weights is not None:
        model, options_file, weight_file, vocabulary_file = weights
        model, recipe = for_weights(model, given, options_file)
        recipe = dataclasses.replace(recipe, init_options_file=options_file, init_weight_file=weight_file)
        recipe = _with_the_weights_vocabulary(model, recipe, vocabulary_file)
    elif resumed is not None:
        model, recipe, source = resumed
        model, recipe = for_resume(model, recipe, given, source)
    else:
        model, recipe = from_preset(given.pop('preset', 'original'), given)
    for name in ('train_data_path', 'vocab_file'):
        if getattr(recipe, name) is None:
            raise InputError(f'--{name} is required' + (f' ({resumed[2]} was written before recipe.json recorded '
                                                         f'the data)' if resumed is not None else ''))
    if (recipe.word_vectors or recipe.freeze_word_embeddings) and not model.input_mode.words:
        flag = '--word_vectors' if recipe.word_vectors else '--freeze_word_embeddings'
        raise InputError(f'{flag} is for a model with word input (--token_input word or word+char); this one '
                         f'reads chars only')
    if recipe.word_vectors and (resumed or weights) and 'word_vectors' in given:
        raise InputError('--word_vectors initialises a new model; a resumed or adapted run has its weights')
    return model, dataclasses.replace(recipe, **{name: os.path.abspath(getattr(recipe, name)) for name in
                                                 ('train_data_path', 'vocab_file', 'dev_data_path', 'word_vectors')
                                                 if getattr(recipe, name) is not None})


def check_one_start(resumed, from_weights):
    """InputError when a run would both resume a checkpoint and start from weights (bools)."""
    if resumed and from_weights:
        raise InputError('give --init_from_ckpt (resume a run) or --init_from_weights / --options_file '
                         '(start a new one from weights), not both')


def _with_the_weights_vocabulary(model, recipe, vocabulary_file):
    """A word or word + char model's input table is tied to its vocabulary, which is then also the
    softmax's: without --vocab_file, a run from its weights reads the vocab.txt beside them."""
    if recipe.vocab_file is None and model.input_mode.words and vocabulary_file is not None:
        log.info('--vocab_file: %s (the word table\'s vocabulary, beside the weights)', vocabulary_file)
        return dataclasses.replace(recipe, vocab_file=vocabulary_file)
    return recipe


def _check_model_flags(model, given_model, what, theirs, advice):
    differing = [f'--{name} {value} ({theirs}: {getattr(model, name)})'
                 for name, value in given_model.items() if value != getattr(model, name)]
    if differing:
        raise InputError(f'{what}, and these flags differ from it: {"; ".join(differing)}. {advice}')
