"""How the library talks: through `logging` and tqdm bars on stderr, never print.

Every module logs through `logging.getLogger(__name__)`, all under the `paddle_elmo` logger
(`paddle_elmo/__init__.py` gives it a NullHandler, the standard pattern: the application decides
where records go). Levels: DEBUG for what was loaded from where; INFO for progress lines (a
training step, an epoch, the device and threads, a cache built); WARNING for notes that change
what the user gets (no model given: the bundled one; a setting that has no effect; input lines
skipped or cut, a fallback encoding) and for problems worked around; ERROR for a failure that stops
a run. `warnings.warn` is kept for what the calling code should change (a UserWarning it can filter,
pointing at its line): so far the MKL slow path after a Paddle product ran first (runtime.py).

Progress bars follow the same switch: `show_progress(progress, log)` is False when the caller
said progress=False or when the logger is set above INFO (`--quiet` in the commands). An unset
level, the library's default, shows them, as before.
"""
import contextlib
import logging


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


def show_progress(progress=True, logger='paddle_elmo'):
    """Whether a progress bar should show: the caller's `progress` switch and the logger's level.
    logger: a Logger or its name (a module's `log`)."""
    if isinstance(logger, str):
        logger = logging.getLogger(logger)
    return bool(progress) and not level_above_info(logger)


# ---- warnings given once ----------------------------------------------------------------------

_given = set()  # the keys of the warnings warn_once gave, in this process (forget_warnings: none)


def warned(key):
    """Whether warn_once gave the warning `key` (a hot path may skip the work of deciding)."""
    return key in _given


def warn_once(logger, key, message, *args):
    """logger.warning(message, *args) unless warning `key` was given before in this process: a
    note that would repeat on every call says it once."""
    if key not in _given:
        _given.add(key)
        logger.warning(message, *args)


@contextlib.contextmanager
def warning_held(key):
    """Within it, warn_once(..., key, ...) stays silent (for input of our own the warning is not
    about); afterwards it is given as before: once, if it had not been given outside."""
    held = key not in _given
    _given.add(key)
    try:
        yield
    finally:
        if held:
            _given.discard(key)


def forget_warnings():
    """Give each warn_once warning again (a program whose next inputs are another's, a test)."""
    _given.clear()
