"""The CPU kernels' cache (kernel_build.py): a build that is up to date loads with no subprocess
(Paddle's `load` starts a second Python at every call, ~1.4 s), and a changed source, compiler or
set of flags still goes through Paddle's build."""
import os
import subprocess
import sys

import pytest

from conftest import require_compiler
from paddle_elmo.model import kernel_build, kernels


def test_built_kernels_load_in_a_new_process_with_no_subprocess():
    require_compiler()
    assert kernels.kernel() is not None  # built (and stamped) here if no earlier process did
    code = '\n'.join([
        'import subprocess, paddle',  # importing Paddle runs a few commands of its own: not counted
        'started = []',
        'spawn = subprocess.Popen.__init__',
        'subprocess.Popen.__init__ = lambda self, *a, **k: started.append(a or k) or spawn(self, *a, **k)',
        'from paddle_elmo.model import kernels',
        'ops = kernels.kernel()',
        'print(ops is not None and hasattr(ops, "elmo_lstm_forward"), started)',
    ])
    proc = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ['True', '[]'], proc.stdout
    assert 'custom operator' not in proc.stderr  # Paddle's loader's chatter stays out of the user's output


@pytest.fixture
def fake_paddle_build(tmp_path, monkeypatch):
    """A cache directory of its own and Paddle's two steps faked: `load` (build and load) records its
    calls; loading a stamped build returns 'stamped' -> (the source to build, the list of load calls)."""
    from paddle.utils.cpp_extension import extension_utils
    monkeypatch.setenv('PADDLE_ELMO_CACHE', str(tmp_path / 'cache'))
    source = tmp_path / 'kernels.cc'
    source.write_text('// kernels\n')
    compiled = []

    def compile_(source, build_dir, flags):
        compiled.append(flags)
        os.makedirs(os.path.join(build_dir, kernel_build.NAME), exist_ok=True)  # where Paddle builds the library
        return 'compiled'
    monkeypatch.setattr(kernel_build, '_compile', compile_)
    monkeypatch.setattr(extension_utils, '_import_module_from_library', lambda *args: 'stamped')
    return source, compiled


def test_a_changed_source_compiler_or_flags_goes_through_paddle_s_build_again(fake_paddle_build, tmp_path,
                                                                            monkeypatch):
    source, compiled = fake_paddle_build
    build = lambda: kernel_build.build(str(source))
    assert build() == 'compiled' and len(compiled) == 1  # nothing built yet
    assert build() == 'stamped' and len(compiled) == 1  # up to date: no build step
    source.write_text('// kernels, edited\n')
    assert build() == 'compiled' and build() == 'stamped' and len(compiled) == 2
    # another compiler under the same name (an upgrade in place: another size or time)
    compiler = tmp_path / 'bin' / 'g++'
    compiler.parent.mkdir()
    compiler.write_text('#!/bin/sh\n')
    compiler.chmod(0o755)
    monkeypatch.setenv('CXX', str(compiler))
    assert build() == 'compiled' and build() == 'stamped'
    compiler.write_text('#!/bin/sh\n# upgraded\n')
    assert build() == 'compiled' and len(compiled) == 4
    flags = kernel_build._runtime_flags
    monkeypatch.setattr(kernel_build, '_runtime_flags', lambda cflags: flags(cflags + ['-DSOMETHING']))
    assert build() == 'compiled' and '-DSOMETHING' in compiled[-1]['extra_cxx_cflags']
    assert build() == 'stamped' and len(compiled) == 5
