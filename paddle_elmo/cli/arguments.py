"""The argparse side of every command: its parser (one-line errors, no prefix matching, every flag
also spelt with hyphens, every default shown in --help, --quiet / --verbose), the one style of
switch (Switch), the types sizes, devices and paths are read with (`-`, standard input or output, only
where a flag's type takes it: STDIO_TYPES), and the flags most commands share (--tokenizer, --device and
--cpu_threads).
"""
import argparse
import math
import re
import sys

from paddle_elmo import runtime
from paddle_elmo.cli.glossary import FLAGS, option_strings
from paddle_elmo.cli.outputs_apart import check_outputs_apart
from paddle_elmo.cli.runner import in_command, set_log_level
from paddle_elmo.fileio import STDIO, InputError, check_output_directory, check_output_file
from paddle_elmo.text.tokenizers import TOKENIZERS


# argparse names a flag of several option strings by all of them ("argument --word_vectors/
# --pretrained_word2vec_file: ..."); an error names it as its help does first.
_ALIASES_IN_ERROR = re.compile(r'(argument --\w+)(?:/--[\w-]+)+')


def underscored(args, options):
    """Every flag may be spelt with hyphens: `--batch-size 5`, `--no-cache`, `--cuda-device=0` ->
    `--batch_size 5`, `--no_cache`, `--cuda_device=0` when that is one of `options` (the parser's
    option strings); the rest, and everything after `--`, as given. AllenNLP's and most tools'
    habit works for every flag alike, while --help and the errors show the one spelling, with `_`."""
    out = list(args)
    for i, arg in enumerate(out):
        if arg == '--':
            break
        name, eq, value = arg.partition('=')
        if name.startswith('--') and '-' in name[2:]:
            spelled = '--' + name[2:].replace('-', '_')
            if spelled in options:
                out[i] = spelled + eq + value
    return out


class _OneLineErrors(argparse.ArgumentParser):
    """argparse, with a bad flag reported as one line naming it as --help does (argparse prints the
    whole usage first), no prefix matching (`--top 2` is not `--top_k 2`: a flag is named in full),
    every flag also spelt with hyphens (underscored), the log's level set from --quiet / --verbose
    once they are parsed (set_log_level), and, in a command, its outputs checked apart from its inputs."""

    def __init__(self, **kwargs):
        super().__init__(allow_abbrev=False, **kwargs)

    def error(self, message):
        message = _ALIASES_IN_ERROR.sub(r'\1', message)
        self.exit(2, f'error: {message} (see {self.prog} --help)\n')

    def parse_known_args(self, args=None, namespace=None):
        args = underscored(sys.argv[1:] if args is None else args, self._option_string_actions)
        parsed, rest = super().parse_known_args(args, namespace)
        self._check_stdio(parsed)
        quiet, progress = getattr(parsed, 'quiet', False), getattr(parsed, 'progress', None)
        if quiet and progress:
            self.error('argument --progress: not allowed with argument --quiet')
        set_log_level(quiet, getattr(parsed, 'verbose', False), progress)
        if in_command():  # before any work: no output is one of the inputs (a parser asked elsewhere reads nothing)
            check_outputs_apart(parsed, self)
        return parsed, rest

    def _check_stdio(self, parsed):
        """`-` is standard input or output only for a flag whose type says so (STDIO_TYPES: a file read once
        or copied, a text or JSON written whole), and for one flag each way: anywhere else (a glob a run
        reads again, a directory, a model's files, a binary file written in place) it is refused in one
        line naming the flags of the command that take it."""
        taken = {kind: [] for kind in STDIO_TYPES}
        for action in self._actions:
            values = getattr(parsed, action.dest, None)
            if action.dest in NOT_PATHS or STDIO not in (values if isinstance(values, list) else [values]):
                continue
            name = action.option_strings[0] if action.option_strings else action.dest
            if action.type not in STDIO_TYPES:
                takers = [a.option_strings[0] if a.option_strings else a.dest for a in self._actions
                          if a.type in STDIO_TYPES]
                self.error(f'argument {name}: - (standard input or output) is not taken here; give a path'
                           + (f' (- is taken by {", ".join(takers)})' if takers else ''))
            taken[action.type].append(name)
        for kind, names in taken.items():
            if len(names) > 1:
                self.error(f'argument {names[1]}: - (standard {STDIO_TYPES[kind]}) is taken by {names[0]} already; '
                           'give a path')


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
    """A command's parser (_OneLineErrors), with the flags every command has: --quiet and --verbose
    (the log's level), --progress / --no_progress (its bars; every command that loads a named model
    may draw a download's)."""
    p = _OneLineErrors(description=description, formatter_class=_DefaultsHelp)
    g = p.add_mutually_exclusive_group()
    g.add_argument('--quiet', action='store_true', help=FLAGS['quiet'][0])
    g.add_argument('--verbose', action='store_true', help=FLAGS['verbose'][0])
    p.add_argument('--progress', action=Switch, default=None, help=FLAGS['progress'][0])
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


def _number_within(text, kind, expected, least, most=None, above=False, below=False):
    """`text` read as `kind` (int or float) -> the number, when finite and from `least` to `most` (the
    bounds themselves excluded with `above` / `below`); else argparse's error naming what was
    `expected`, one line as the command parses its flags (exit 2, before any work)."""
    try:
        value = kind(text)
    except ValueError:
        value = None
    if (value is None or not math.isfinite(value) or value < least or (above and value == least)
            or (most is not None and (value > most or (below and value == most)))):
        raise argparse.ArgumentTypeError(f'expected {expected}, got {text!r}')
    return value


def positive_int(text):
    """argparse type of a size or a count that cannot be 0 (a batch, a dimension, epochs, steps)."""
    return _number_within(text, int, 'a positive integer', 1)


def count_or_zero(text):
    """argparse type of a limit whose 0 means none (or a frequency whose 0 means its stated default)."""
    return _number_within(text, int, 'an integer >= 0', 0)


def positive_float(text):
    """argparse type of an amount that must be more than 0 (a learning rate, a temperature, minutes)."""
    return _number_within(text, float, 'a number > 0', 0.0, above=True)


def float_or_zero(text):
    """argparse type of an amount whose 0 means off (a penalty's coefficient, a clip, minutes between
    evaluations)."""
    return _number_within(text, float, 'a number >= 0', 0.0)


def probability(text):
    """argparse type of a dropout probability: from 0 (none) to below 1 (1 would drop everything)."""
    return _number_within(text, float, 'a probability in [0, 1)', 0.0, 1.0, below=True)


def share(text):
    """argparse type of a share of a whole, from 0 to 1 (a final learning rate as a share of --lr)."""
    return _number_within(text, float, 'a number in [0, 1]', 0.0, 1.0)


def fraction(text):
    """argparse type of a part strictly between none and all (a held-out share, a decay per update)."""
    return _number_within(text, float, 'a number in (0, 1)', 0.0, 1.0, above=True, below=True)


def seed_number(text):
    """argparse type of a random seed: what NumPy, Paddle and scikit-learn all take (0 to 2**32 - 1)."""
    return _number_within(text, int, f'an integer from 0 to {2 ** 32 - 1}', 0, 2 ** 32 - 1)


def length_with_boundaries(text):
    """argparse type of --max_seq_len: tokens counting ELMo's <S> and </S>, so at least 3 (a word between)."""
    return _number_within(text, int, 'an integer >= 3 (room for <S>, a word and </S>)', 3)


def _checked_path(check, text):
    """`text`, checked by `check` when a command parses it (runner.in_command): a parser asked outside a
    command (a test, the check of the documents' command lines) leaves the file system alone."""
    try:
        return check(text, None) if in_command() else text
    except InputError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def output_file(text):
    """argparse type of a file a command writes: checked as the command parses it, before any work
    (fileio.check_output_file: not a directory, in an existing directory we can write in)."""
    return _checked_path(check_output_file, text)


def file_or_stdin(text):
    """argparse type of a text file a command reads once, or copies first (fileio.input_path): `-` is
    standard input."""
    return text


def file_or_stdout(text):
    """argparse type of a file a command writes whole (text, JSON, or embed's hdf5: fileio.output_path):
    `-` is standard output (the command's own result lines then go to stderr: runner.results_stream),
    anything else a file checked as output_file checks it."""
    return text if text == STDIO else output_file(text)


# The types of the flags that take `-`, and which standard stream it is for each (_check_stdio).
STDIO_TYPES = {file_or_stdin: 'input', file_or_stdout: 'output'}
# Flags whose value is a text, not a path: `--prefix -` is a prefix.
NOT_PATHS = ('prefix',)


def output_directory(text):
    """argparse type of a directory a command writes (made, with its parents, when written): checked
    as the command parses it, before any work (fileio.check_output_directory)."""
    return _checked_path(check_output_directory, text)


def device_name(text):
    """argparse type of --device: cpu, gpu or gpu:N; allennlp elmo's --cuda-device numbers: -1 is cpu, N >= 0 gpu:N."""
    text = text.strip().lower()
    if text in ('cpu', 'gpu') or text.startswith('gpu:') and text[4:].isdigit():
        return text
    try:
        return runtime.cuda_device_name(int(text))
    except ValueError:  # not a number, or one below -1 (InputError is a ValueError)
        raise argparse.ArgumentTypeError(f'expected cpu, gpu, gpu:N or a CUDA device number (-1: cpu), '
                                         f'got {text!r}') from None


def add_device(p, threads_note=''):
    """--device and --cpu_threads; threads_note: what else no --cpu_threads means in this command."""
    p.add_argument(*option_strings('device'), default='cpu', type=device_name,
                   help='cpu, gpu or gpu:N (needs paddlepaddle-gpu); --cuda_device N is allennlp elmo\'s '
                   '--cuda-device: -1 the CPU, N >= 0 gpu:N')
    p.add_argument('--cpu_threads', type=positive_int,
                   help=f'threads per process on CPU (default: {runtime.default_threads()} here: $OMP_NUM_THREADS if '
                   f'set, else the available cores divided by the ranks launched on this machine{threads_note}). On '
                   'AMD processors MKL_DEBUG_CPU_TYPE is set unless you set it: 7 with AVX-512, else 5 with AVX2 '
                   'and FMA (Paddle\'s MKL then runs its AVX-512 or AVX2 path, ~3x faster than its generic one)')
