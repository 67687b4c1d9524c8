"""Pretraining's flags: one per field of config.ModelConfig and recipe.Recipe, named as the field,
with its help and type from the field (add_config_flags); the ones given (given_settings); and
pretrain's parser (pretrain_parser).
"""
import argparse
import dataclasses
import json
import typing

from paddle_elmo.cli.arguments import (Switch, add_device, count_or_zero, float_or_zero, fraction, output_directory,
                                       parser, positive_float, positive_int, probability, seed_number, share)
from paddle_elmo.cli.glossary import option_strings
from paddle_elmo.model.config import MODEL_FIELDS, TOKEN_INPUTS, ModelConfig
from paddle_elmo.model.recipe import OPTIMIZERS, PRESETS, SOFTMAX_BIAS_INITS, Recipe
from paddle_elmo.text.tokenizers import TOKENIZERS


DATA_FIELDS = ('train_data_path', 'vocab_file', 'dev_data_path', 'n_train_tokens', 'word_vectors')
# --preset has its own help; world_size and dropout_masks are recorded, not chosen; the last two have flags of their own
# beside --init_from_weights (the fields' help says what they record).
NOT_FLAGS = ('preset', 'world_size', 'dropout_masks', 'init_options_file', 'init_weight_file')
CHOICES = {'optimizer': OPTIMIZERS, 'activation': ('relu', 'tanh'), 'token_input': TOKEN_INPUTS,
           'tokenizer': TOKENIZERS, 'softmax_bias_init': SOFTMAX_BIAS_INITS}


def _scale_or_off(text):
    """A factor > 0, 'off' being 1."""
    if text.strip().lower() == 'off':
        return 1.0
    try:
        return positive_float(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f'expected a number > 0 or off, got {text!r}') from None


# Fields whose flag reads more than the field's type: every number as every command reads it (sizes,
# counts, steps, rates, probabilities), so that `--max_steps -1`, `--save_freq 0` or `--dropout 1` is
# refused as it is parsed, naming the flag (tests/test_flags.py holds every numeric flag to a checked type).
FLAG_TYPES = {'from_weights_lr_scale': _scale_or_off, 'seed': seed_number, 'dropout': probability,
              'adam_beta2': fraction, 'lr_final': share,
              **{name: positive_float for name in ('lr', 'max_grad_norm')},
              **{name: float_or_zero for name in ('eval_minutes', 'cell_clip', 'proj_clip')},
              **{name: positive_int for name in ('batch_size', 'unroll_steps', 'epochs', 'save_freq', 'log_freq',
                                                 'n_negative_samples', 'max_steps', 'n_train_tokens', 'projection_dim',
                                                 'cell_dim', 'num_layers', 'char_embed_dim',
                                                 'max_characters_per_token')},
              **{name: count_or_zero for name in ('eval_max_tokens', 'eval_freq', 'warmup_steps', 'lr_decay_steps',
                                                  'word_dim', 'num_highways')}}


def _flag_type(annotation):
    """A config field's type -> argparse keyword arguments."""
    args = [t for t in typing.get_args(annotation) if t is not type(None)]
    base = args[0] if typing.get_origin(annotation) is typing.Union else annotation
    if base is bool:
        return {'action': Switch}
    if typing.get_origin(base) is list:
        return {'type': json.loads}
    return {'type': base}


def _shown(value):
    """A config value as --help shows it: on/off for a switch, JSON for a list."""
    if isinstance(value, bool):
        return 'on' if value else 'off'
    return json.dumps(value) if isinstance(value, list) else str(value)


def _preset_help(name, text):
    values = ', '.join(f'{preset} {_shown(values[name])}' for preset, values in PRESETS.items())
    return f'{text} (default from --preset: {values})'


def add_config_flags(group, config_class, names):
    """One flag per field of `config_class` in `names`, named as the field, default None (so that a
    given flag can be told from a default): the preset or the resumed checkpoint fills the rest."""
    for f in dataclasses.fields(config_class):
        if f.name not in names:
            continue
        text = f.metadata['help']
        if f.name in PRESETS['original']:
            text = _preset_help(f.name, text)
        elif f.default is not dataclasses.MISSING and f.default is not None:
            text += f' (default: {_shown(f.default)})'
        kwargs = {**_flag_type(f.type), **({'type': FLAG_TYPES[f.name]} if f.name in FLAG_TYPES else {})}
        group.add_argument(*option_strings(f.name), choices=CHOICES.get(f.name), help=text, **kwargs)


def given_settings(a):
    """{field: value} of the config flags given on the command line (both configs, field order)."""
    names = [f.name for cls in (ModelConfig, Recipe) for f in dataclasses.fields(cls)
             if f.name == 'preset' or f.name not in NOT_FLAGS]
    return {name: getattr(a, name) for name in names if getattr(a, name, None) is not None}


def pretrain_parser():
    """run_pretrain.py's options: the original PaddleNLP example's flags plus bilm-tf's knobs, one
    per field of config.ModelConfig and recipe.Recipe, all defaulting to the preset (or, resuming,
    to the checkpoint's configs)."""
    p = parser('Pretrain the ELMo biLM with sampled softmax (one process, or many under python -m '
               'paddle.distributed.launch). Resuming (--init_from_ckpt DIR/N), every setting not given '
               'comes from the checkpoint\'s options.json and recipe.json.')
    recipe_fields = [f.name for f in dataclasses.fields(Recipe) if f.name not in NOT_FLAGS]
    add_config_flags(p.add_argument_group('data (resuming: the checkpoint\'s unless given)'), Recipe, DATA_FIELDS)
    p.add_argument('--preset', choices=list(PRESETS),
                   help='model and optimisation recipe: original (the paper\'s, the default), small '
                   '(AllenNLP\'s 2x1024_128 model), budget (best held-out perplexity in an hour of a 2-core '
                   'CPU); explicit flags override its values. Resuming, the default is the checkpoint\'s')
    add_config_flags(p.add_argument_group('model (resuming: must agree with the checkpoint)'), ModelConfig,
                     MODEL_FIELDS)
    t = p.add_argument_group('training')
    add_config_flags(t, Recipe, [n for n in recipe_fields if n not in DATA_FIELDS])
    t.add_argument('--max_minutes', type=positive_float, help='stop this run after this many minutes of training '
                   '(evaluation and saving not counted), save a checkpoint DIR/STEP that resumes exactly, evaluate, '
                   'exit 0 (a budget for this run: resuming does not inherit it)')
    t.add_argument('--save_dir', type=output_directory, help='the run\'s directory: options.json, recipe.json, '
                   'checkpoints and log (made if needed; default: a new checkpoints/DATE_TIME, or the resumed run\'s). '
                   'A run owns it: one holding another run is refused, and a running one is locked')
    t.add_argument('--overwrite_save_dir', action=Switch, default=False, help='a new run may take a --save_dir that holds '
                   'another run: that run\'s files (configs, checkpoints, log) are removed first, so none is mixed '
                   'with the new run\'s')
    t.add_argument('--init_from_ckpt', help='resume from checkpoint DIR/N (also DIR/N.pdparams, or a run directory: '
                   'its latest checkpoint): model, optimizer, step, data position, and every setting not given')
    w = p.add_argument_group('start from pretrained weights (domain adaptation: a new run, a fresh optimizer)')
    w.add_argument('--init_from_weights', help='a directory with options.json + weights.hdf5 (an export of ours, '
                   'the official ELMo files renamed so) or a model name: bundled (pretrained/), bundled-zh '
                   '(pretrained_zh/), small, medium, original, original-5.5b (AllenNLP\'s, downloaded once into the '
                   'cache): the biLM from its '
                   'weights, the softmax from softmax/W and softmax/b when it has them and they have the '
                   'vocabulary\'s size, else new')
    w.add_argument(*option_strings('options_file'), help='or bilm-tf / AllenNLP files to start from: their '
                   'options.json (with --weight_file; the name every command gives these files)')
    w.add_argument(*option_strings('weight_file'), help='with --options_file: their weights.hdf5')
    add_device(p)
    return p
