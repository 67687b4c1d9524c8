"""Where the toolkit keeps what it can recompute (token counts of corpora, the compiled CPU kernels):
a cache directory of its own, never beside a user's data.

    $PADDLE_ELMO_CACHE, else $XDG_CACHE_HOME/paddle-elmo, else ~/.cache/paddle-elmo

Deleting it costs time only: everything in it is rebuilt on the next use.
"""
import contextlib
import os

ENV_VAR = 'PADDLE_ELMO_CACHE'


def cache_dir(*parts):
    """The cache directory (or a path inside it, `parts` joined) -> its absolute path; not created."""
    base = os.environ.get(ENV_VAR) or os.path.join(
        os.environ.get('XDG_CACHE_HOME') or os.path.join(os.path.expanduser('~'), '.cache'), 'paddle-elmo')
    return os.path.abspath(os.path.join(base, *parts))


@contextlib.contextmanager
def no_empty_directories_on_failure(directory):
    """Run the block, which may make `directory` and its missing parents; if it fails, the ones it
    made and left empty are removed again (a failed download leaves the cache as it found it)."""
    missing = []  # deepest first
    path = os.path.abspath(directory)
    while not os.path.exists(path):
        missing.append(path)
        path = os.path.dirname(path)
    try:
        yield
    except BaseException:
        for path in missing:
            try:
                os.rmdir(path)  # only an empty one
            except OSError:
                break  # not empty (or never made): its parents are not empty either
        raise
