"""The one way a command runs: its error boundary (run) and its log.

A user's error must be the one line on stderr: Paddle's C++ info logs are off because importing the
package sets GLOG_minloglevel before anything of ours imports Paddle (runtime.py), whatever a
script imports first.

Output: results on stdout (print, in the commands); everything else is the log, on stderr: the
`paddle_elmo` logger's records (INFO lines as they are, others after their level's name:
`warning: ...`), each on its own line above the tqdm bars (logs.AboveBarsHandler), and the bars,
drawn on a terminal only unless --progress / --no_progress or $PADDLE_ELMO_PROGRESS says otherwise
(logs.bars_on_stderr). `run()` sets that up for the command's duration, and every command's --quiet
(warnings and errors only, no progress bars) or --verbose (debug lines too) sets the level once
parsed (arguments.parser). Under paddle.distributed.launch only rank 0 logs INFO lines.
"""
import contextlib
import logging
import os
import sys

from paddle_elmo.fileio import STDIO, InputError, RunFailure, missing_package, output_path, write_json_atomic
from paddle_elmo.logs import AboveBarsHandler, set_command_bars


def run(main):
    """Call main() with the command's log set up (command_logging): the one error boundary of every
    command, and the only place the library's errors become exit codes. A user mistake (InputError,
    a missing file, a package of an extra not installed, Paddle among them) becomes one line on
    stderr and exit code 2; a run that cannot go on (RunFailure: a failed save, a non-finite loss, a
    download that failed, NetworkError) one line and exit code 1. Anything else is a bug and keeps
    its traceback."""
    with command_logging():
        try:
            sys.exit(main() or 0)
        except (InputError, FileNotFoundError) as e:
            fail(e)
        except RunFailure as e:  # NetworkError among them
            fail(e, 1)
        except ModuleNotFoundError as e:
            missing = missing_package(e)
            if missing is None:
                raise
            fail(missing)
        except KeyboardInterrupt:
            print('interrupted', file=sys.stderr)
            sys.exit(130)


def results_stream(*outputs):
    """Where a command prints its results: stdout, unless one of its `outputs` (paths, None for those not
    given) is `-`: standard output then holds that file alone, and the result lines go to stderr."""
    return sys.stderr if STDIO in outputs else sys.stdout


def write_json_output(obj, path, flag):
    """Write `obj` as JSON to the file `path` (atomically), or to standard output for `-` (once whole,
    after the work: nothing there if it failed); `flag` names it in an error."""
    with output_path(path, flag, suffix='.json', text=True) as target:
        write_json_atomic(obj, target)


def fail(error, code=2):
    """`error` as the one line on stderr, exit `code` (2: a user's mistake; 1: a runtime failure)."""
    print(f'error: {error}', file=sys.stderr)
    sys.exit(code)


# ---- the log -----------------------------------------------------------------------------------

LOGGER = 'paddle_elmo'  # every module's logger is below it (logging.getLogger(__name__))
_handler = None  # the stderr handler of the command running (command_logging), else None


class _LogFormat(logging.Formatter):
    """INFO records as their message (a progress line reads as before); the others after their
    level's name, as the one-line errors: 'warning: ...', 'error: ...', 'debug: ...'."""

    def format(self, record):
        text = super().format(record)
        return text if record.levelno == logging.INFO else f'{record.levelname.lower()}: {text}'


def rank():
    """This process's global rank under paddle.distributed.launch (0 otherwise): what
    paddle.distributed.get_rank() reads before a parallel run is set up, without importing Paddle."""
    return _launch_number('PADDLE_TRAINER_ID', 0)


def world_size():
    """How many ranks paddle.distributed.launch started (1 otherwise), read as rank() is."""
    return _launch_number('PADDLE_TRAINERS_NUM', 1)


def _launch_number(name, default):
    value = os.environ.get(name, '').strip()
    return int(value) if value.isdigit() else default


def log_level(quiet=False, verbose=False):
    """--verbose: DEBUG; --quiet, or a rank other than 0 (rank 0 alone logs its progress): WARNING; else INFO."""
    if verbose:
        return logging.DEBUG
    return logging.WARNING if quiet or rank() > 0 else logging.INFO


@contextlib.contextmanager
def command_logging():
    """For a command's duration: the paddle_elmo logger's records on stderr in _LogFormat, at INFO
    until the flags are parsed (set_log_level), and not passed on to the root logger (Paddle's
    import gives it a handler of its own format, which would print each line again), each above the
    progress bars. The logger's settings are restored after (a test may run a command in its own process)."""
    global _handler
    logger = logging.getLogger(LOGGER)
    saved = logger.level, logger.propagate
    handler = AboveBarsHandler(sys.stderr)
    handler.setFormatter(_LogFormat())
    logger.addHandler(handler)
    logger.setLevel(log_level())
    logger.propagate = False
    _handler = handler
    try:
        yield
    finally:
        _handler = None
        set_command_bars(None)
        logger.removeHandler(handler)
        logger.setLevel(saved[0])
        logger.propagate = saved[1]


def in_command():
    """Whether a command is running (inside run()): what parsing its flags may touch beyond the flags
    (the log's level, the file system's checks of output paths) it touches then only."""
    return _handler is not None


def set_log_level(quiet=False, verbose=False, progress=None):
    """The level --quiet / --verbose ask for, on a command's log, and the bars --progress /
    --no_progress ask for (None: neither; logs.bars_on_stderr) (none outside run(): parsing flags in
    a program of one's own changes no logging setting)."""
    if _handler is not None:
        logging.getLogger(LOGGER).setLevel(log_level(quiet, verbose))
        set_command_bars(progress)
