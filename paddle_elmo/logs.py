"""How the library talks: through `logging` and tqdm bars on stderr, never print.

Every module logs through `logging.getLogger(__name__)`, all under the `paddle_elmo` logger
(`paddle_elmo/__init__.py` gives it a NullHandler, the standard pattern: the application decides
where records go). Levels: DEBUG for what was loaded from where; INFO for progress lines (a
training step, an epoch, the device and threads, a cache built); WARNING for notes that change
what the user gets (no model given: the bundled one; a setting that has no effect; input lines
skipped or cut, a fallback encoding) and for problems worked around; ERROR for a failure that stops
a run. `warnings.warn` is kept for what the calling code should change (a UserWarning it can filter,
pointing at its line): so far the MKL slow path after a Paddle product ran first (runtime.py).

Progress bars: `show_progress(progress, log)` is True when the caller's switch (progress=) is on,
the logger shows INFO lines (an unset level, the library's default, does; `--quiet` does not) and
bars are drawn at all (`bars_on_stderr`): on a terminal or in a notebook, not in a file or a pipe,
where a bar is carriage-return noise; `$PADDLE_ELMO_PROGRESS` (1 or 0) or a command's
--progress / --no_progress decides otherwise. Where no bar is drawn, `progress_bar` tells a long
job's progress as an INFO line a minute instead. A record logged while a bar is drawn belongs above
it: the commands' handler writes through tqdm (cli.runner); an application with handlers of its
own wraps its calls in tqdm's `tqdm.contrib.logging.logging_redirect_tqdm()` for the same.

Warnings given once (`warn_once`) are given once per kind and subject: what they are about (a
model's vocabulary, a file), so each model or file the same mistake concerns gets its own.
"""
import contextlib
import logging
import os
import sys

log = logging.getLogger(__name__)


def level_above_info(logger):
    """Whether `logger` (or the nearest of its parents below the root that has a level) is set
    above INFO. The root logger is not asked: importing Paddle sets it to INFO, and an application
    that never configured logging did not choose either way."""
    while logger is not None and logger is not logging.root:
        if logger.disabled:
            return True
        if logger.level != logging.NOTSET:
            return logger.level > logging.INFO
        logger = logger.parent
    return False


PROGRESS_VARIABLE = 'PADDLE_ELMO_PROGRESS'  # 1: draw bars even in a file or a pipe; 0: never
_SWITCH_VALUES = {'1': True, 'true': True, 'yes': True, 'on': True, '0': False, 'false': False, 'no': False,
                  'off': False}
_command_bars = None  # a command's --progress (True) / --no_progress (False), set by cli.runner; else None


def set_command_bars(on):
    """A command's --progress / --no_progress (None: neither given), for its duration (cli.runner)."""
    global _command_bars
    _command_bars = on


def bars_on_stderr():
    """Whether progress bars are drawn on stderr: as a command's --progress / --no_progress says, else
    as $PADDLE_ELMO_PROGRESS says (1 or 0), else when stderr is a terminal or a notebook's (Jupyter
    draws a bar's carriage returns in place); not in a log file or a pipe."""
    if _command_bars is not None:
        return _command_bars
    value = os.environ.get(PROGRESS_VARIABLE, '').strip().lower()
    if value in _SWITCH_VALUES:
        return _SWITCH_VALUES[value]
    if value:
        warn_once(log, 'progress variable', value, '%s=%r is neither 1 nor 0: progress bars on a terminal only',
                  PROGRESS_VARIABLE, value)
    stream = sys.stderr
    return bool(stream is not None and (_isatty(stream) or type(stream).__module__.startswith('ipykernel')))


def _isatty(stream):
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


def show_progress_lines(progress=True, logger='paddle_elmo'):
    """Whether progress is told at all, as a bar or as INFO lines: the caller's `progress` switch and
    the logger's level. logger: a Logger or its name (a module's `log`)."""
    if isinstance(logger, str):
        logger = logging.getLogger(logger)
    return bool(progress) and not level_above_info(logger)


def show_progress(progress=True, logger='paddle_elmo'):
    """Whether a progress bar should show: progress is told (show_progress_lines) and bars are drawn
    on stderr (bars_on_stderr). logger: a Logger or its name (a module's `log`)."""
    return show_progress_lines(progress, logger) and bars_on_stderr()


# Without a bar (a log file, a pipe), a long job's progress is an INFO line this often; a job shorter
# than that logs none.
PROGRESS_LINE_SECONDS = 60


def progress_bar(progress=True, logger='paddle_elmo', **tqdm_args):
    """A tqdm bar (tqdm_args: total, desc, unit, ...) on stderr where bars are drawn (show_progress);
    else, when `progress` is on and the log shows INFO lines, the same progress as an INFO line of
    `logger` every PROGRESS_LINE_SECONDS (a log file sees a long job move); else a disabled bar."""
    from tqdm import tqdm
    if isinstance(logger, str):
        logger = logging.getLogger(logger)
    if not show_progress_lines(progress, logger):
        return tqdm(disable=True, **tqdm_args)
    if bars_on_stderr():
        return tqdm(**tqdm_args)
    lines = dict(file=_ProgressLines(logger), delay=PROGRESS_LINE_SECONDS, mininterval=PROGRESS_LINE_SECONDS,
                 bar_format='{desc}: {percentage:3.0f}% ({n_fmt}/{total_fmt} {unit}) | {elapsed} elapsed, '
                            '{remaining} left, {rate_fmt}')
    return tqdm(**{**tqdm_args, **lines})  # a bar's own mininterval gives way to the lines'


class _ProgressLines:
    """A file for tqdm that logs each display as an INFO line (its carriage returns dropped), unless
    the count before its ' | ' is the last line's (tqdm displays its last count again when it closes)."""

    def __init__(self, logger):
        self.logger, self.last = logger, ''

    def write(self, text):
        text = text.strip()
        count = text.split(' | ')[0]
        if text and count != self.last:
            self.last = count
            self.logger.info('%s', text)

    def flush(self):
        pass


class AboveBarsHandler(logging.StreamHandler):
    """A StreamHandler whose lines go above the progress bars drawn on its stream: through
    tqdm.write, which clears the bars, writes the line and draws them again below it (a plain
    handler would write onto the bar's line). tqdm is not imported for it: without tqdm imported
    there is no bar, and the line is written as StreamHandler writes it."""

    def emit(self, record):
        if 'tqdm' not in sys.modules:
            super().emit(record)
            return
        try:
            from tqdm import tqdm
            tqdm.write(self.format(record), file=self.stream)
            self.flush()
        except RecursionError:
            raise
        except Exception:
            self.handleError(record)


# ---- warnings given once per subject --------------------------------------------------------------

# (kind, subject) of each warning warn_once gave, oldest first; bounded, so that a process given
# file after file (a server) keeps no more than this many (the oldest may then be given again).
_given = {}
_MAX_GIVEN = 10_000
_held = set()  # kinds warning_held silences


def warned(kind, subject):
    """Whether warn_once gave the warning `kind` about `subject`, or that kind is held (a hot path
    may skip the work of deciding)."""
    return kind in _held or (kind, subject) in _given


def warn_once(logger, kind, subject, message, *args):
    """logger.warning(message, *args) unless the warning `kind` about `subject` was given before in
    this process: a note that would repeat on every call says it once for each thing it concerns.

    # Parameters
    kind: what the warning says, e.g. 'unsegmented Chinese' (a module's constant).
    subject: what it is about, hashable: a model's vocabulary file, a data file, a tokenizer's name.
    """
    if warned(kind, subject):
        return
    _given[kind, subject] = None
    if len(_given) > _MAX_GIVEN:
        del _given[next(iter(_given))]
    logger.warning(message, *args)


@contextlib.contextmanager
def warning_held(kind):
    """Within it, warn_once(..., kind, ...) stays silent whatever its subject (for input of our own
    the warning is not about) and records nothing: afterwards each is given as before, once."""
    held = kind not in _held
    _held.add(kind)
    try:
        yield
    finally:
        if held:
            _held.discard(kind)


def forget_warnings():
    """Give each warn_once warning again (a program whose next inputs are another's, a test)."""
    _given.clear()
