"""How our checkpoints are named, without reading one (no Paddle here): a checkpoint is a prefix `DIR/N`
(or `DIR/final`) of `DIR/N.pdparams` and `DIR/N.pdopt`, with `DIR/options.json` beside them; a run
directory's latest checkpoint; and a checkpoint as a user names it (DIR/N, DIR/N.pdparams or DIR)."""
import logging
import os

from paddle_elmo.fileio import InputError
from paddle_elmo.files.run_configs import OPTIONS_FILE

log = logging.getLogger(__name__)

PARAMS_SUFFIX, OPTIMIZER_SUFFIX = '.pdparams', '.pdopt'


def checkpoint_paths(prefix):
    """'DIR/N' -> (DIR/options.json, DIR/N.pdparams)."""
    return os.path.join(os.path.dirname(prefix) or '.', OPTIONS_FILE), f'{prefix}{PARAMS_SUFFIX}'


def checkpoint_dir(prefix):
    return os.path.dirname(prefix) or '.'


def step_order(name):
    """A checkpoint's place in its run: N for DIR/N, after every N for DIR/final; -1 for another name."""
    return float('inf') if name == 'final' else int(name) if name.isdigit() else -1


def checkpoint_names(directory):
    """The checkpoints of a run directory, by name ('final', 'N'), in the order they were saved."""
    names = [name[:-len(PARAMS_SUFFIX)] for name in os.listdir(directory) if name.endswith(PARAMS_SUFFIX)]
    return sorted((name for name in names if step_order(name) >= 0), key=step_order)


def latest_checkpoint(directory):
    """A run directory's latest checkpoint: DIR/final, else DIR/N of the highest step N -> the prefix, or
    None when it holds none."""
    names = checkpoint_names(directory)
    return os.path.join(directory, names[-1]) if names else None


def checkpoint_prefix(path, flag='--init_from_ckpt'):
    """A checkpoint as a user names it -> its prefix DIR/N: DIR/N, DIR/N.pdparams (the suffix dropped), or a
    run directory (its latest checkpoint, said in one line). InputError naming `flag` when there is none."""
    prefix = path[:-len(PARAMS_SUFFIX)] if path.endswith(PARAMS_SUFFIX) else path
    if os.path.isfile(prefix + PARAMS_SUFFIX):
        return prefix
    if os.path.isdir(path):
        latest = latest_checkpoint(path)
        if latest is None:
            raise InputError(f'{flag} {path}: no checkpoint in this directory (N{PARAMS_SUFFIX} or '
                             f'final{PARAMS_SUFFIX})')
        log.info('%s %s: its latest checkpoint, %s', flag, path, latest)
        return latest
    raise InputError(f'{flag} {path}: {prefix}{PARAMS_SUFFIX} not found (give DIR/N, DIR/N{PARAMS_SUFFIX} or a run '
                     f'directory)')
