"""A pretraining run owns its directory: what a run's files are, whether a new run may start in a
directory (`check_run_directory`: never over another run's files unless told to remove them
first), the lock a run holds on it while it runs (`RunLock`; both taken by `claimed`), and the directory a run without
--save_dir gets (`new_run_directory`).

A run's files are the ones pretrain writes: options.json, recipe.json, vocab.txt (word input) or
char.dic / word.dic (a run from an ELMoForManyLangs model), N.pdparams / N.pdopt and final.*,
train_log.csv, train_curve.png and launch_logs/, beside the hidden lock file.
"""
import contextlib
import datetime
import fcntl
import json
import logging
import os
import shutil
import socket
import sys
import time

from paddle_elmo.fileio import InputError, make_directory
from paddle_elmo.files.efml_model import is_efml_directory
from paddle_elmo.files.checkpoint_names import (OPTIMIZER_SUFFIX, PARAMS_SUFFIX, checkpoint_dir, checkpoint_names,
                                              step_order)
from paddle_elmo.files.run_configs import OPTIONS_FILE, RECIPE_FILE, VOCAB_FILE, WEIGHTS_FILE
from paddle_elmo.text.dictionary_ids import CHAR_DIC, WORD_DIC

log = logging.getLogger(__name__)

LOCK_FILE = '.paddle-elmo.lock'  # hidden, so that listings and globs of a run's files skip it
LOG_FILES = ('train_log.csv', 'train_curve.png', 'launch_logs')
INPUT_TABLES = (VOCAB_FILE, CHAR_DIC, WORD_DIC)  # a word model's vocabulary, an ELMoForManyLangs model's dictionaries
RUN_NAMES = {OPTIONS_FILE, RECIPE_FILE, *INPUT_TABLES, *LOG_FILES}
DEFAULT_PARENT = 'checkpoints'  # a run without --save_dir gets DEFAULT_PARENT/<date-time>


def run_files(directory):
    """The files of a run in `directory` (names, sorted; the lock file not counted) -> list."""
    if not os.path.isdir(directory):
        return []
    return sorted(name for name in os.listdir(directory) if is_run_file(name))


def is_run_file(name):
    return name in RUN_NAMES or name.endswith((PARAMS_SUFFIX, OPTIMIZER_SUFFIX))


def holds_a_run(directory):
    """Whether `directory` holds a run's configs, checkpoints or log (launch_logs, an input table or a curve
    alone are no run: a launcher writes the first, a user may keep a vocabulary there)."""
    return any(name not in (*INPUT_TABLES, *LOG_FILES[1:]) for name in run_files(directory))


def later_checkpoints(directory, prefix):
    """The checkpoints of `directory` saved after checkpoint `prefix` (DIR/N) -> their names, in order."""
    own = step_order(os.path.basename(prefix))
    return [name for name in checkpoint_names(directory) if step_order(name) > own]


def resumes_here(save_dir, resumed):
    """Whether the run resuming checkpoint `resumed` (DIR/N, or None) writes in its own run's directory."""
    return resumed is not None and os.path.isdir(save_dir) and os.path.samefile(checkpoint_dir(resumed), save_dir)


def check_run_directory(save_dir, resumed=None, overwrite=False, inputs=()):
    """Before any work: InputError (one line naming what is there and the ways on) unless a run may write in
    `save_dir`. Nothing is changed.

    # Parameters
    save_dir: the run's directory (it may not exist yet).
    resumed: the checkpoint prefix DIR/N the run resumes, or None for a new run. A resume writes on in its
        own run's directory, whose later checkpoints it would replace: it must be that run's latest.
    overwrite: --overwrite_save_dir: a new run may take a directory holding another run, whose files
        `remove_run_files` removes first (never a model's options.json + weights.hdf5 that is no run).
    inputs: [(flag, path)] the run reads: none may be a file the run writes or removes in `save_dir`.
    """
    check_inputs_outside(save_dir, inputs)
    if resumes_here(save_dir, resumed):
        later = later_checkpoints(save_dir, resumed)
        if later:
            raise InputError(f'--init_from_ckpt {resumed}: {save_dir} holds later checkpoints of this run '
                             f'({", ".join(later[-3:])}), which resuming here would replace; resume the latest '
                             f'(--init_from_ckpt {save_dir}) or give another --save_dir to branch from it')
        return
    if os.path.isfile(os.path.join(save_dir, WEIGHTS_FILE)) and not os.path.isfile(os.path.join(save_dir, RECIPE_FILE)):
        raise InputError(f'--save_dir {save_dir}: holds a model ({OPTIONS_FILE} + {WEIGHTS_FILE}), not a run of '
                         f'pretrain; give another --save_dir')
    if os.path.isdir(save_dir) and is_efml_directory(save_dir):
        raise InputError(f'--save_dir {save_dir}: holds an ELMoForManyLangs model, not a run of pretrain; give '
                         f'another --save_dir')
    if overwrite or not holds_a_run(save_dir):
        return
    found = run_files(save_dir)
    shown = ', '.join(found[:4]) + (f' and {len(found) - 4} more' if len(found) > 4 else '')
    raise InputError(f'--save_dir {save_dir}: holds another run ({shown}); resume it with --init_from_ckpt '
                     f'{save_dir}, give another --save_dir, or add --overwrite_save_dir to remove its files first')


def check_inputs_outside(save_dir, inputs):
    """InputError when a file the run reads (`inputs`: [(flag, path)]) is one the run writes in `save_dir`
    (its options.json, a checkpoint, ...): a run never writes over its own input. The vocabulary may stay
    beside its run as vocab.txt (README's layout: the run's own copy holds the same tokens, which
    run_configs.write_input_vocabulary leaves as they are)."""
    if not os.path.isdir(save_dir):
        return
    for flag, path in inputs:
        name = os.path.basename(path or '')
        if path and os.path.isfile(path) and is_run_file(name) and (flag, name) != ('--vocab_file', VOCAB_FILE) \
                and os.path.samefile(os.path.dirname(os.path.abspath(path)), save_dir):
            raise InputError(f'{flag} {path}: is in --save_dir {save_dir} under a name the run writes; move it or '
                             f'give another --save_dir')


def remove_run_files(save_dir, inputs=()):
    """--overwrite_save_dir: the old run's files removed (the lock held), so none mixes with the new run's;
    never one of the new run's `inputs` ([(flag, path)]: its vocab.txt kept beside it)."""
    kept = {os.path.realpath(path) for _, path in inputs if path}
    found = [name for name in run_files(save_dir) if os.path.realpath(os.path.join(save_dir, name)) not in kept]
    for name in found:
        path = os.path.join(save_dir, name)
        shutil.rmtree(path) if os.path.isdir(path) else os.remove(path)
    if found:
        log.warning('--overwrite_save_dir: removed the %d files of the run in %s', len(found), save_dir)


def new_run_directory(parent=DEFAULT_PARENT):
    """A directory of its own for a run without --save_dir: PARENT/<date-time>, -2, -3, ... when taken
    (not made here) -> its path."""
    stamp = datetime.datetime.now().strftime('%Y-%m-%d_%H-%M-%S')
    path, n = os.path.join(parent, stamp), 1
    while os.path.exists(path):
        n += 1
        path = os.path.join(parent, f'{stamp}-{n}')
    return path


@contextlib.contextmanager
def claimed(save_dir, resumed=None, overwrite=False, inputs=()):
    """A run's hold on `save_dir` for the block: refused at once, nothing changed (check_claim); then
    locked (RunLock), checked again under the lock (another run may have ended since) and, with `overwrite`,
    another run's files removed. The arguments are check_run_directory's."""
    check_claim(save_dir, resumed, overwrite, inputs)
    with RunLock(save_dir):
        check_run_directory(save_dir, resumed, overwrite, inputs)
        if overwrite and not resumes_here(save_dir, resumed):
            remove_run_files(save_dir, inputs)
        yield


def check_claim(save_dir, resumed=None, overwrite=False, inputs=()):
    """InputError, nothing changed, when a run may not take `save_dir`: another process runs in it
    (check_not_running) or it holds what the run may not write over (check_run_directory, whose arguments
    these are). A command asks it before its slow start too (Paddle's import), and claimed again."""
    check_not_running(save_dir)  # first: a running run's directory is that run's, whatever it holds
    check_run_directory(save_dir, resumed, overwrite, inputs)


def check_not_running(directory):
    """InputError naming the holder when a process holds `directory`'s lock (a probe: nothing is made)."""
    try:
        f = open(os.path.join(directory, LOCK_FILE), encoding='utf-8')
    except OSError:  # no lock file: no run has locked it
        return
    with f:
        holder = locked_by(f)
    if holder is not None:
        raise in_use(directory, holder)


def locked_by(f):
    """Try to lock the open lock file `f` -> None when this process got the lock (it holds it while `f` is
    open), else the record of the process that holds it."""
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return None
    except BlockingIOError:
        f.seek(0)
        return f.read().strip()


def in_use(directory, holder):
    return InputError(f'--save_dir {directory}: in use by another run ({describe_holder(holder)}); wait for it to '
                      f'end or give another --save_dir')


class RunLock:
    """An exclusive lock on a run directory for a run's lifetime (flock on its LOCK_FILE: the OS releases
    it when the process ends, however it ends, so a killed run never blocks the next). The file records
    its holder (pid, host, command, start), which a refused process names.

        with RunLock(save_dir):   # InputError at once when another process holds it
            ...
    The directory is made if missing, and removed again when the run leaves nothing else in it.
    """

    def __init__(self, directory):
        self.directory = directory
        self.path = os.path.join(directory, LOCK_FILE)
        self._file = self._made = None

    def __enter__(self):
        self._made = not os.path.isdir(self.directory)
        make_directory(self.directory, '--save_dir')
        f = open(self.path, 'a+', encoding='utf-8')
        holder = locked_by(f)
        if holder is not None:
            f.close()
            raise in_use(self.directory, holder)
        f.seek(0)
        f.truncate()
        f.write(json.dumps({'pid': os.getpid(), 'host': socket.gethostname(), 'started': time.strftime('%Y-%m-%d '
                            '%H:%M:%S'), 'command': ' '.join(sys.argv)[:300]}) + '\n')
        f.flush()
        self._file = f
        return self

    def __exit__(self, *exc):
        if self._made and not run_files(self.directory):  # a run that failed before writing anything
            os.remove(self.path)
            os.rmdir(self.directory)
        self._file.close()  # releases the lock
        return False


def describe_holder(text):
    """The lock file's record -> 'pid 123 on HOST since 2026-11-28 10:00:00: paddle-elmo pretrain ...'."""
    try:
        holder = json.loads(text)
        command = holder['command'] if len(holder['command']) <= 100 else holder['command'][:97] + '...'
        return f'pid {holder["pid"]} on {holder["host"]} since {holder["started"]}: {command}'
    except (ValueError, KeyError, TypeError):
        return 'a process that left no record'
