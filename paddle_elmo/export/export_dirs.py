"""An export's directory, written atomically: check_output_dir says before any work whether the
export can be written there (fileio's rule for every output directory, and an export's own); the
export is written into a hidden directory beside it (temp_dir_beside), which replace_dir renames
into place when complete, so an interrupted or failed export leaves nothing under the name.
"""
import os
import shutil
import tempfile

from paddle_elmo.export.export_format import EXPORTED_FILES
from paddle_elmo.fileio import InputError, check_output_directory, make_directory, temp_beside, umask
from paddle_elmo.files.run_configs import VOCAB_FILE


def check_output_dir(output_dir):
    """Raise (one line) unless an export can be written to output_dir: where we can write
    (fileio.check_output_directory: a new directory's missing parents are made when it is written),
    new, empty or a previous export (replaced as a whole). -> its parent directory."""
    check_output_directory(output_dir, 'output directory')
    if os.path.isdir(output_dir):
        others = sorted(set(os.listdir(output_dir)) - set(EXPORTED_FILES) - {VOCAB_FILE})
        if others:
            raise InputError(f'{output_dir}: holds files that are not an export ({", ".join(others[:3])}); '
                             f'give a new or empty directory')
    return os.path.dirname(os.path.abspath(output_dir))


def temp_dir_beside(output_dir, parent, suffix):
    """A new hidden directory in `parent` (made, with its parents, if missing) -> its path."""
    make_directory(parent, 'output directory')
    try:
        path = temp_beside(parent, os.path.basename(os.path.abspath(output_dir)), suffix, make=tempfile.mkdtemp)
    except OSError as e:
        raise InputError(f'{output_dir}: cannot write in {parent} ({e.strerror})') from None
    # mkdtemp makes it private (0700); an export is as readable as any file the user writes
    os.chmod(path, 0o777 & ~umask())
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
