"""The argparse side of every command: its parser (one-line errors, every default shown in --help,
--quiet / --verbose), the one style of switch (Switch), the types sizes and devices are read with,
and the flags most commands share (--tokenizer, --device and --cpu_threads).
"""
import argparse

from paddle_elmo import runtime
from paddle_elmo.cli.glossary import option_strings
from paddle_elmo.cli.runner import set_log_level
from paddle_elmo.tokenizers import TOKENIZERS


class _OneLineErrors(argparse.ArgumentParser):
    """argparse, with a bad flag reported as one line (argparse prints the whole usage first), and
    the log's level set from --quiet / --verbose once they are parsed (set_log_level)."""

    def error(self, message):
        self.exit(2, f'error: {message} (see {self.prog} --help)\n')

    def parse_known_args(self, args=None, namespace=None):
        parsed, rest = super().parse_known_args(args, namespace)
        set_log_level(getattr(parsed, 'quiet', False), getattr(parsed, 'verbose', False))
        return parsed, rest


class Switch(argparse.Action):
    """An on/off setting: `--X` turns it on, `--no_X` off (argparse's BooleanOptionalAction, with
    the underscore of every other flag). The one style for every switch of every command."""

    def __init__(self, option_strings, dest, default=None, required=False, help=None, choices=None):
        if choices is not None:
            raise ValueError(f'{option_strings}: a switch has no choices')
        strings = []
        for s in option_strings:
            strings.append(s)
            if s.startswith('--'):
                strings.append(f'--no_{s[2:]}')
        super().__init__(option_strings=strings, dest=dest, nargs=0, default=default, required=required, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, not option_string.startswith('--no_'))

    def format_usage(self):
        return ' | '.join(self.option_strings)


def shown_default(action):
    """How --help shows a flag's default: on/off for a switch, a list's items, '' quoted -> text, or
    None when there is nothing to show (the default is None: the help says what no value means)."""
    default = action.default
    if default is None or default is argparse.SUPPRESS:
        return None
    if isinstance(action, Switch) or (action.nargs == 0 and isinstance(default, bool)):
        return 'on' if default else 'off'
    if isinstance(default, (list, tuple)):
        return ' '.join(map(str, default))
    if default == '':
        return "''"
    return str(default)


class _DefaultsHelp(argparse.HelpFormatter):
    """Shows every flag's default (0 and empty included; on/off for a switch), except None (the help
    says what no value means) and a help text that states its own."""

    def _get_help_string(self, action):
        text = action.help or ''
        shown = shown_default(action)
        if shown is None or '(default' in text:
            return text
        return f'{text} (default: {shown.replace("%", "%%")})'


def parser(description):
    """A command's parser, with the flags every command has: --quiet and --verbose (the log's level)."""
    p = _OneLineErrors(description=description, formatter_class=_DefaultsHelp)
    g = p.add_mutually_exclusive_group()
    g.add_argument('--quiet', action='store_true', help='log warnings and errors only (stderr): no progress lines '
                   'or bars; results still go to stdout')
    g.add_argument('--verbose', action='store_true', help='log debug lines too (stderr): what is loaded from where')
    return p


def add_tokenizer(p, default=None, group=None, why=''):
    """--tokenizer: how raw text becomes tokens (tokenizers.get_tokenizer). default None: the
    model's recorded tokenizer (scripts that load a biLM); else that tokenizer's name, `why` saying why."""
    said = (f'default: {default}{why}' if default else 'default: the one the model records in its options.json '
            '(moses for the bundled model), whitespace for bilm-tf files; another one warns')
    (group or p).add_argument(
        '--tokenizer', choices=TOKENIZERS, default=default,
        help='how raw text becomes tokens: whitespace (split on spaces: text already segmented), moses (English as '
             '1B Word is tokenized: It\'s raining, isn\'t it? -> It \'s raining , isn \'t it ?), jieba (Chinese '
             'words, jieba 0.42.1\'s accurate mode), chars (each CJK character a token, other runs of non-space '
             f'characters whole, e.g. iPhone很好 -> iPhone 很 好) ({said})')


def _int_at_least(text, least, expected):
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or value < least:
        raise argparse.ArgumentTypeError(f'expected {expected}, got {text!r}')
    return value


def positive_int(text):
    """argparse type of a size or a count that cannot be 0 (a batch, a dimension, epochs)."""
    return _int_at_least(text, 1, 'a positive integer')


def count_or_zero(text):
    """argparse type of a limit whose 0 means none (or a frequency whose 0 means its stated default)."""
    return _int_at_least(text, 0, 'an integer >= 0')


def device_name(text):
    """argparse type of --device: cpu, gpu or gpu:N; allennlp's --cuda-device numbers: -1 is cpu, N >= 0 gpu:N."""
    text = text.strip().lower()
    if text in ('cpu', 'gpu') or text.startswith('gpu:') and text[4:].isdigit():
        return text
    try:
        number = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f'expected cpu, gpu, gpu:N or a CUDA device number (-1: cpu), '
                                         f'got {text!r}') from None
    if number < -1:
        raise argparse.ArgumentTypeError(f'expected a CUDA device number >= -1 (-1: cpu), got {text!r}')
    return 'cpu' if number == -1 else f'gpu:{number}'


def add_device(p, threads_note=''):
    """--device and --cpu_threads; threads_note: what else no --cpu_threads means in this command."""
    p.add_argument(*option_strings('device'), default='cpu', type=device_name,
                   help='cpu, gpu or gpu:N (needs paddlepaddle-gpu); --cuda-device N is allennlp elmo\'s spelling: '
                   '-1 the CPU, N >= 0 gpu:N')
    p.add_argument('--cpu_threads', type=positive_int,
                   help=f'threads per process on CPU (default: {runtime.default_threads()} here: $OMP_NUM_THREADS if '
                   f'set, else the available cores divided by the ranks launched on this machine{threads_note}). On '
                   'AMD processors '
                   'MKL_DEBUG_CPU_TYPE=5 is set unless you set it (Paddle\'s MKL then runs its AVX2 path, ~3x faster)')
