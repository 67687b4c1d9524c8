"""Outputs follow the user's umask, as a file made by open() would: a private umask (0o077) keeps
every output private, a group-writable one (0o002) makes them group-writable. Each umask is set in a
child process of its own (it is process-wide)."""
import json
import os
import stat
import subprocess
import sys

import pytest

from conftest import ROOT

# Run in a child with umask argv[1] (octal): a text file written atomically, an export's directory made
# as export-inference makes it, and the umask fileio reads -> JSON of their modes.
WRITE_WITH_UMASK = '''
import json, os, sys
os.umask(int(sys.argv[1], 8))
from paddle_elmo.fileio import umask, write_text_atomic
from paddle_elmo.export.export_dirs import temp_dir_beside
out = sys.argv[2]
write_text_atomic(os.path.join(out, 'new', 'file.txt'), 'x')
directory = temp_dir_beside(os.path.join(out, 'export'), out, '.tmp')
print(json.dumps({'umask': umask(), 'file': os.stat(os.path.join(out, 'new', 'file.txt')).st_mode,
                  'directory': os.stat(directory).st_mode}))
'''


@pytest.mark.parametrize('mask, file_mode, directory_mode', [(0o077, 0o600, 0o700), (0o002, 0o664, 0o775),
                                                             (0o022, 0o644, 0o755)])
def test_outputs_get_the_modes_the_umask_gives(mask, file_mode, directory_mode, tmp_path):
    proc = subprocess.run([sys.executable, '-c', WRITE_WITH_UMASK, oct(mask), str(tmp_path)], capture_output=True,
                          text=True, timeout=120, env=dict(os.environ, PYTHONPATH=ROOT))
    assert proc.returncode == 0, proc.stderr[-3000:]
    modes = json.loads(proc.stdout)
    assert modes['umask'] == mask
    assert stat.S_IMODE(modes['file']) == file_mode
    assert stat.S_IMODE(modes['directory']) == directory_mode


def test_the_umask_is_read_without_changing_it():
    from paddle_elmo.fileio import umask
    before = os.umask(0o027)
    try:
        assert umask() == 0o027
        assert os.umask(0o027) == 0o027  # still what it was
    finally:
        os.umask(before)
