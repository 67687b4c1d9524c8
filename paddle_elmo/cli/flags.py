"""Command-line options shared by the scripts, and the one way they report user errors.

The scripts import this module first: a user's error must be the one line on stderr, so Paddle's
C++ info logs are turned off (GLOG_minloglevel, read when Paddle is imported) before runtime.py
imports Paddle. It is the scripts' setting; importing the library sets nothing process-wide.
"""
import argparse
import dataclasses
import json
import os
import sys
import typing

os.environ.setdefault('GLOG_minloglevel', '2')

from paddle_elmo import runtime  # noqa: E402  (after GLOG_minloglevel, which Paddle reads when runtime first imports it)
from paddle_elmo.config import MODEL_FIELDS, OPTIMIZERS, PRESETS, TOKEN_INPUTS, ModelConfig, Recipe  # noqa: E402
from paddle_elmo.tokenizers import TOKENIZERS
from paddle_elmo.fileio import InputError  # noqa: E402


class _OneLineErrors(argparse.ArgumentParser):
    """argparse, with a bad flag reported as one line (argparse prints the whole usage first)."""

    def error(self, message):
        self.exit(2, f'error: {message} (see {self.prog} --help)\n')


class _DefaultsHelp(argparse.ArgumentDefaultsHelpFormatter):
    """Shows a flag's default, except None (the help says what no value means) and False (a switch)."""

    def _get_help_string(self, action):
        if action.default in (None, False) or '(default' in (action.help or ''):
            return action.help
        return super()._get_help_string(action)


def parser(description):
    return _OneLineErrors(description=description, formatter_class=_DefaultsHelp)


def add_model_source(p, bundled_default=False, vocab_flag=True):
    """Where the biLM comes from: our checkpoint prefix, or bilm-tf/AllenNLP files; with
    bundled_default, neither means the model bundled in pretrained/. vocab_flag: add --vocab_file,
    a word model's input vocabulary (scripts with their own --vocab_file, the softmax's, pass
    False: for a word model the two are one vocabulary, as in bilm-tf)."""
    title = 'model (a checkpoint of ours, or bilm-tf / AllenNLP files'
    g = p.add_argument_group(title + ('; neither: the bundled model in pretrained/)' if bundled_default else ')'))
    g.add_argument('--init_from_ckpt', help='checkpoint prefix without suffix, e.g. checkpoints/10000 '
                   '(the directory holds options.json)')
    g.add_argument('--options_file', help='bilm-tf / AllenNLP options.json')
    g.add_argument('--weight_file', help='bilm-tf / AllenNLP weights.hdf5')
    if vocab_flag:
        g.add_argument('--vocab_file', help='a word or word+char model given as bilm-tf files: its input vocabulary '
                       '(line i = embedding row i); our checkpoints and exports carry theirs (vocab.txt)')
    p.set_defaults(_model_source_required=not bundled_default)


def model_source(args):
    """-> dict(params_file=..., options_file=..., weight_file=..., vocab_file=...) after checking the
    combination."""
    ckpt, opts, weights = args.init_from_ckpt, args.options_file, args.weight_file
    check_files_flags('init_from_ckpt', ckpt, opts, weights)
    if not ckpt and not opts and args._model_source_required:
        raise InputError('no model: give --init_from_ckpt DIR/N or --options_file and --weight_file')
    return dict(params_file=ckpt, options_file=opts, weight_file=weights, vocab_file=getattr(args, 'vocab_file', None))


def check_files_flags(other_flag, other, options_file, weight_file):
    """--options_file and --weight_file go together, and not with --`other_flag` (given as `other`)."""
    if other and (options_file or weight_file):
        raise InputError(f'give either --{other_flag} or --options_file with --weight_file, not both')
    if (options_file is None) != (weight_file is None):
        raise InputError('--options_file and --weight_file go together')


def add_tokenizer(p, model_default=True, group=None):
    """--tokenizer: how raw text becomes tokens (dataset.get_tokenizer). model_default: no value
    means the model's recorded tokenizer (scripts that load a biLM); otherwise whitespace."""
    default = ("default: the one the model records in its options.json, whitespace for bilm-tf files; another "
               "one warns" if model_default else "default: whitespace")
    (group or p).add_argument(
        '--tokenizer', choices=TOKENIZERS, default=None if model_default else 'whitespace',
        help='how raw text becomes tokens: whitespace (split on spaces: text already segmented), jieba (Chinese '
             'words, jieba 0.42.1\'s accurate mode), chars (each CJK character a token, other runs of non-space '
             f'characters whole, e.g. iPhone很好 -> iPhone 很 好) ({default})')


def _positive_int(text):
    if not text.strip().isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f'expected a positive integer, got {text!r}')
    return int(text)


def add_device(p):
    p.add_argument('--device', default='cpu', choices=['cpu', 'gpu'],
                   help='cpu, or gpu (needs paddlepaddle-gpu)')
    p.add_argument('--cpu_threads', type=_positive_int,
                   help=f'threads per process on CPU (default here: {runtime.default_threads()}: $OMP_NUM_THREADS if set, '
                   'else the available cores divided by the ranks launched on this machine). On AMD processors '
                   'MKL_DEBUG_CPU_TYPE=5 is set unless you set it (Paddle\'s MKL then runs its AVX2 path, ~3x faster)')


def run(main):
    """Call main(); a user mistake (InputError, a missing file) becomes one line on stderr and exit
    code 2. Anything else is a bug and keeps its traceback."""
    try:
        sys.exit(main() or 0)
    except (InputError, FileNotFoundError) as e:
        print(f'error: {e}', file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        print('interrupted', file=sys.stderr)
        sys.exit(130)


# ---- pretraining: one flag per config field --------------------------------------------------

DATA_FIELDS = ('train_data_path', 'vocab_file', 'dev_data_path', 'n_train_tokens', 'word_vectors')
# --preset has its own help; the others are recorded, not chosen (run_pretrain.py's --init_from_weights
# and --options_file / --weight_file set the last two).
NOT_FLAGS = ('preset', 'world_size', 'init_options_file', 'init_weight_file')
CHOICES = {'optimizer': OPTIMIZERS, 'activation': ('relu', 'tanh'), 'token_input': TOKEN_INPUTS,
           'tokenizer': TOKENIZERS}


def _scale_or_off(text):
    """A factor, 'off' being 1."""
    if text.strip().lower() == 'off':
        return 1.0
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f'expected a number or off, got {text!r}') from None


# Fields whose flag reads more than the field's type.
FLAG_TYPES = {'from_weights_lr_scale': _scale_or_off}


def _flag_type(annotation):
    """A config field's type -> argparse keyword arguments."""
    args = [t for t in typing.get_args(annotation) if t is not type(None)]
    base = args[0] if typing.get_origin(annotation) is typing.Union else annotation
    if base is bool:
        return {'action': argparse.BooleanOptionalAction}
    if typing.get_origin(base) is list:
        return {'type': json.loads}
    return {'type': base}


def _preset_help(name, text):
    values = ', '.join(f'{preset} {json.dumps(values[name]) if isinstance(values[name], list) else values[name]}'
                       for preset, values in PRESETS.items())
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
        elif f.default is not dataclasses.MISSING and f.default is not None and f.default is not False:
            text += f' (default: {f.default})'
        kwargs = {**_flag_type(f.type), **({'type': FLAG_TYPES[f.name]} if f.name in FLAG_TYPES else {})}
        group.add_argument(f'--{f.name}', choices=CHOICES.get(f.name), help=text, **kwargs)


def given_settings(a):
    """{field: value} of the config flags given on the command line (both configs, field order)."""
    names = [f.name for cls in (ModelConfig, Recipe) for f in dataclasses.fields(cls)]
    return {name: getattr(a, name) for name in names if getattr(a, name, None) is not None}


def pretrain_parser():
    """run_pretrain.py's options: the original PaddleNLP example's flags plus bilm-tf's knobs, one
    per field of config.ModelConfig and config.Recipe, all defaulting to the preset (or, resuming,
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
    t.add_argument('--max_minutes', type=float, help='stop this run after this many minutes of training (evaluation '
                   'and saving not counted), save a checkpoint DIR/STEP that resumes exactly, evaluate, exit 0 '
                   '(a budget for this run: resuming does not inherit it)')
    t.add_argument('--save_dir', help='where options.json, recipe.json and checkpoints go (default: checkpoints, '
                   'or the resumed checkpoint\'s directory)')
    t.add_argument('--init_from_ckpt', help='resume from DIR/N (model, optimizer, step, data position, and every '
                   'setting not given)')
    w = p.add_argument_group('start from pretrained weights (domain adaptation: a new run, a fresh optimizer)')
    w.add_argument('--init_from_weights', help='a directory with options.json + weights.hdf5 (an export of ours, '
                   'the official ELMo files renamed so) or "bundled" (pretrained/): the biLM from its weights, the '
                   'softmax from softmax/W and softmax/b when it has them and they have the vocabulary\'s size, '
                   'else new')
    w.add_argument('--options_file', help='with --weight_file: bilm-tf / AllenNLP files to start from')
    w.add_argument('--weight_file', help='with --options_file')
    add_device(p)
    return p
