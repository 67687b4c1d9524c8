"""An export's directory, written atomically: check_output_dir says before any work whether the
export can be written there; the export is written into a hidden directory beside it
(temp_dir_beside), which replace_dir renames into place when complete, so an interrupted or failed
export leaves nothing under the name.
"""
import os
import shutil
import tempfile

from paddle_elmo.export_format import EXPORTED_FILES
from paddle_elmo.fileio import InputError
from paddle_elmo.run_configs import VOCAB_FILE


def check_output_dir(output_dir):
    """Raise (one line) unless an export can be written to output_dir: new, empty or a previous
    export (replaced as a whole), in an existing directory where we can create files. -> the parent."""
    parent = os.path.dirname(os.path.abspath(output_dir))
    if not os.path.isdir(parent):
        raise FileNotFoundError(f'{output_dir}: the directory {parent} does not exist')
    if os.path.exists(output_dir):
        if not os.path.isdir(output_dir):
            raise InputError(f'{output_dir}: exists and is not a directory')
        others = sorted(set(os.listdir(output_dir)) - set(EXPORTED_FILES) - {VOCAB_FILE})
        if others:
            raise InputError(f'{output_dir}: holds files that are not an export ({", ".join(others[:3])}); '
                             f'give a new or empty directory')
    temp_dir_beside(output_dir, parent, '.probe')  # permissions, read-only file systems, quotas
    return parent


def temp_dir_beside(output_dir, parent, suffix):
    """A new hidden directory in `parent` (removed at once for suffix '.probe') -> its path."""
    try:
        path = tempfile.mkdtemp(prefix=f'.{os.path.basename(os.path.abspath(output_dir))}.', suffix=suffix,
                                dir=parent)
    except OSError as e:
        raise InputError(f'{output_dir}: cannot write in {parent} ({e.strerror})') from None
    if suffix == '.probe':
        os.rmdir(path)
    else:  # mkdtemp makes it private (0700); an export is as readable as any file the user writes
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(path, 0o777 & ~umask)
    return path


def replace_dir(tmp, output_dir):
    """Move the finished export `tmp` to output_dir; a previous export there is removed only after."""
    old = None
    if os.path.exists(output_dir):
        old = tempfile.mkdtemp(prefix=f'.{os.path.basename(os.path.abspath(output_dir))}.old.',
                               dir=os.path.dirname(tmp))
        os.rmdir(old)
        os.rename(output_dir, old)
    os.rename(tmp, output_dir)
    if old:
        shutil.rmtree(old, ignore_errors=True)
