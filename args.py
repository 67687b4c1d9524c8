"""Command-line options shared by the scripts, and the one way they report user errors."""
import argparse
import os
import sys

import warnings

import cpu  # noqa: F401  (before Paddle's import: it reads the user's OMP_NUM_THREADS, which Paddle overwrites)
from fileio import InputError

# Paddle's import prints a ccache notice and C++ info logs on stderr; a user's error must be the
# one line there. Set before anything imports paddle: the scripts import this module first (it is
# theirs; importing the library sets nothing process-wide).
os.environ.setdefault('GLOG_minloglevel', '2')
warnings.filterwarnings('ignore', message='No ccache found')


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


def add_model_source(p, bundled_default=False):
    """Where the biLM comes from: our checkpoint prefix, or bilm-tf/AllenNLP files; with
    bundled_default, neither means the model bundled in pretrained/."""
    title = 'model (a checkpoint of ours, or bilm-tf / AllenNLP files'
    g = p.add_argument_group(title + ('; neither: the bundled model in pretrained/)' if bundled_default else ')'))
    g.add_argument('--init_from_ckpt', help='checkpoint prefix without suffix, e.g. checkpoints/10000 '
                   '(the directory holds options.json)')
    g.add_argument('--options_file', help='bilm-tf / AllenNLP options.json')
    g.add_argument('--weight_file', help='bilm-tf / AllenNLP weights.hdf5')
    p.set_defaults(_model_source_required=not bundled_default)


def model_source(args):
    """-> dict(params_file=..., options_file=..., weight_file=...) after checking the combination."""
    ckpt, opts, weights = args.init_from_ckpt, args.options_file, args.weight_file
    if ckpt and (opts or weights):
        raise InputError('give either --init_from_ckpt or --options_file with --weight_file, not both')
    if (opts is None) != (weights is None):
        raise InputError('--options_file and --weight_file go together')
    if not ckpt and not opts and args._model_source_required:
        raise InputError('no model: give --init_from_ckpt DIR/N or --options_file and --weight_file')
    return dict(params_file=ckpt, options_file=opts, weight_file=weights)


def _positive_int(text):
    if not text.strip().isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f'expected a positive integer, got {text!r}')
    return int(text)


def add_device(p):
    p.add_argument('--device', default='cpu', choices=['cpu', 'gpu'],
                   help='cpu, or gpu (needs paddlepaddle-gpu)')
    p.add_argument('--cpu_threads', type=_positive_int,
                   help=f'threads per process on CPU (default here: {cpu.default_threads()}: $OMP_NUM_THREADS if set, '
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


# Each preset is a full model + optimisation recipe; an explicit flag overrides one value of it.
PRESETS = {
    # Peters et al. (2018) / bilm-tf's 1B Word model and recipe.
    'original': dict(projection_dim=512, cell_dim=4096, num_layers=2, cell_clip=3.0, proj_clip=3.0,
                     use_skip_connections=True, char_embed_dim=16, cnn_filters='original', num_highways=2,
                     dropout=0.1, n_negative_samples=8192, batch_size=128, unroll_steps=20, lr=0.2,
                     max_grad_norm=10.0, optimizer='adagrad', warmup_steps=0,
                     reset_state_at_sentence_start=False),
    # AllenNLP's elmo_2x1024_128_2048cnn_1xhighway, trained with bilm-tf's recipe.
    'small': dict(projection_dim=128, cell_dim=1024, num_layers=2, cell_clip=3.0, proj_clip=3.0,
                  use_skip_connections=True, char_embed_dim=16, cnn_filters='original', num_highways=1,
                  dropout=0.1, n_negative_samples=8192, batch_size=128, unroll_steps=20, lr=0.2,
                  max_grad_norm=10.0, optimizer='adagrad', warmup_steps=0,
                  reset_state_at_sentence_start=False),
    # The most held-out perplexity per hour of a 2-core CPU (BENCHMARKS.md, "Screens"): the small
    # model with a narrower char CNN and LSTM and fewer negatives (more tokens/s), Adam with
    # warm-up, and rows that begin a sentence start from a zero state.
    'budget': dict(projection_dim=128, cell_dim=256, num_layers=2, cell_clip=3.0, proj_clip=3.0,
                   use_skip_connections=True, char_embed_dim=16,
                   cnn_filters=[[1, 32], [2, 32], [3, 64], [4, 128], [5, 128]], num_highways=1,
                   dropout=0.1, n_negative_samples=1024, batch_size=64, unroll_steps=20, lr=0.004,
                   max_grad_norm=10.0, optimizer='adam', warmup_steps=100,
                   reset_state_at_sentence_start=True),
}


def _preset_help(name, text):
    values = ', '.join(f'{preset} {_flag_value(PRESETS[preset][name])}' for preset in PRESETS)
    return f'{text} (default from --preset: {values})'


def _flag_value(value):
    import json
    return json.dumps(value) if isinstance(value, list) else value


def apply_preset(a):
    """Fill every preset-managed flag the user did not give from --preset; -> names given explicitly."""
    from bilm import ORIGINAL_FILTERS
    a.preset = a.preset or 'original'
    explicit = []
    for name, value in PRESETS[a.preset].items():
        if getattr(a, name) is None:
            setattr(a, name, ORIGINAL_FILTERS if value == 'original' else value)
        else:
            explicit.append(name)
    return explicit


def pretrain_parser():
    """run_pretrain.py's options: the original PaddleNLP example's flags plus bilm-tf's knobs.

    Model and optimisation flags default to --preset (original: the paper's model and bilm-tf's
    recipe: Adagrad lr 0.2, global-norm clip 10, dropout 0.1, batch 128 per device, unroll 20,
    LSTM 4096 -> 512, 2 layers, residual); call apply_preset after parsing.
    """
    import json
    p = parser('Pretrain the ELMo biLM with sampled softmax '
               '(one process, or many under python -m paddle.distributed.launch).')
    d = p.add_argument_group('data')
    d.add_argument('--train_data_path', required=True, help="training files, a glob such as 'data/train/*'")
    d.add_argument('--vocab_file', required=True, help='one token per line, most frequent first')
    d.add_argument('--dev_data_path', help='held-out glob: full-softmax perplexity every --eval_freq steps')
    d.add_argument('--n_train_tokens', type=int, help='training tokens per epoch (default: counted once '
                   'from the data and cached next to it)')
    p.add_argument('--preset', choices=list(PRESETS),
                   help='model and optimisation recipe: original (the paper\'s, the default), small '
                   '(AllenNLP\'s 2x1024_128 model), budget (best held-out perplexity in an hour of a 2-core '
                   'CPU); explicit flags override its values. Resuming, the default is the checkpoint\'s')
    m = p.add_argument_group('model')
    m.add_argument('--projection_dim', type=int, help=_preset_help('projection_dim', 'LSTM projection and token dim'))
    m.add_argument('--cell_dim', type=int, help=_preset_help('cell_dim', 'LSTM cells per layer'))
    m.add_argument('--num_layers', type=int, help=_preset_help('num_layers', 'LSTM layers per direction'))
    m.add_argument('--cell_clip', type=float, help=_preset_help('cell_clip', 'clip LSTM cells to +-this (0: off)'))
    m.add_argument('--proj_clip', type=float, help=_preset_help('proj_clip', 'clip projected states to +-this (0: off)'))
    m.add_argument('--use_skip_connections', action=argparse.BooleanOptionalAction,
                   help=_preset_help('use_skip_connections', 'residual connection around LSTM layers after the first'))
    m.add_argument('--char_embed_dim', type=int, help=_preset_help('char_embed_dim', 'char embedding size'))
    m.add_argument('--cnn_filters', type=json.loads,
                   help=_preset_help('cnn_filters', 'JSON list of [width, n_filters] for the char CNN'))
    m.add_argument('--num_highways', type=int, help=_preset_help('num_highways', 'highway layers after the char CNN'))
    m.add_argument('--max_characters_per_token', type=int, help='chars per token, longer tokens are cut '
                   '(default 50, or the checkpoint\'s when resuming)')
    m.add_argument('--dropout', type=float, help=_preset_help('dropout', 'dropout on LSTM inputs and before the softmax'))
    m.add_argument('--n_negative_samples', type=int,
                   help=_preset_help('n_negative_samples', 'sampled-softmax candidates per batch'))
    t = p.add_argument_group('training')
    t.add_argument('--batch_size', type=int, help=_preset_help('batch_size', 'rows per batch per device'))
    t.add_argument('--unroll_steps', type=int, help=_preset_help('unroll_steps', 'tokens per row per batch (BPTT window)'))
    t.add_argument('--epochs', type=int, default=10, help='passes over n_train_tokens')
    t.add_argument('--max_steps', type=int, help='stop after this many steps (overrides --epochs)')
    t.add_argument('--max_minutes', type=float, help='stop after this many minutes of training (evaluation and '
                   'saving not counted), save a checkpoint DIR/STEP that resumes exactly, evaluate, exit 0')
    t.add_argument('--optimizer', choices=['adagrad', 'adam'], help=_preset_help('optimizer', 'adagrad: '
                   'bilm-tf\'s (accumulators from 1.0); adam: with linear warm-up'))
    t.add_argument('--lr', type=float, help=_preset_help('lr', 'learning rate'))
    t.add_argument('--warmup_steps', type=int, help=_preset_help('warmup_steps', 'adam: linear warm-up steps'))
    t.add_argument('--reset_state_at_sentence_start', action=argparse.BooleanOptionalAction,
                   help=_preset_help('reset_state_at_sentence_start', 'not bilm-tf\'s: a row whose window '
                   'begins with a new sentence starts from a zero LSTM state, as embedding does (bilm-tf '
                   'never resets, and its models can fail from a zero state)'))
    t.add_argument('--max_grad_norm', type=float, help=_preset_help('max_grad_norm', 'global gradient-norm clip '
                   '(of the gradient of loss x unroll_steps, as bilm-tf)'))
    t.add_argument('--seed', type=int, default=0, help='seeds data order, init, sampling and dropout')
    t.add_argument('--save_dir', default='checkpoints', help='where options.json and checkpoints go')
    t.add_argument('--init_from_ckpt', help='resume from DIR/N (model, optimizer, step, data position)')
    t.add_argument('--save_freq', type=int, default=10000, help='checkpoint every N steps')
    t.add_argument('--log_freq', type=int, default=100, help='log every N steps')
    t.add_argument('--eval_freq', type=int, default=0, help='with --dev_data_path: evaluate every N '
                   'steps (0: only at the end)')
    t.add_argument('--eval_minutes', type=float, default=0, help='with --dev_data_path: evaluate every this '
                   'many minutes of training (0: off)')
    t.add_argument('--eval_max_tokens', type=int, default=51200, help='target tokens of --dev_data_path used by '
                   'the evaluation during training (run_eval.py does the whole set)')
    add_device(p)
    return p
