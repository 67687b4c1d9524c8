"""Building the C++ kernels (kernels.cc) once per machine: the cache tag that says when a build is
still valid, a file lock so that ranks starting together build once, and the compiler's chatter
kept out of the user's output (file descriptors 1 and 2 redirected) and shown only on failure.

    ops = build(source)   # the loaded module; RuntimeError naming the compiler log on failure

The build lands in the toolkit's cache directory (cache.py: ~/.cache/paddle-elmo/ops/<tag>).
"""
import contextlib
import hashlib
import logging
import os
import platform
import subprocess
import sys
import tempfile

import paddle

from paddle_elmo.cache import cache_dir

log = logging.getLogger(__name__)


def _compiler_version():
    """The first line of `$CXX --version` (Paddle builds with $CXX, else g++)."""
    cxx = os.environ.get('CXX', 'g++')
    try:
        out = subprocess.run([cxx, '--version'], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return f'{cxx}: not found'
    return (out.splitlines() or [''])[0]


def _build_dir(source):
    """CACHE/ops/<tag> (cache.cache_dir): the tag covers what makes a build invalid elsewhere: this
    CPU's instruction-set flags (a -march=native build only runs on its kind of CPU), the Paddle
    version (its headers and ABI), the compiler, the Paddle installation and the source's path."""
    try:
        with open('/proc/cpuinfo', encoding='utf-8') as f:
            flags = next((line for line in f if line.startswith('flags')), '')
    except OSError:
        flags = ''
    # The installation and the source's path because the build records both: a cache shared by two
    # virtual environments, or by two checkouts, was rebuilt by each in turn (~20 s a process).
    key = '\n'.join([platform.machine(), flags, paddle.__version__, _compiler_version(),
                     os.path.dirname(os.path.abspath(paddle.__file__)), os.path.abspath(source)])
    tag = hashlib.sha1(key.encode()).hexdigest()[:12]
    return cache_dir('ops', tag)


@contextlib.contextmanager
def _exclusive(lock_path):
    """Hold an exclusive lock on lock_path (POSIX), so that ranks starting together build once."""
    try:
        import fcntl
    except ImportError:  # Windows: no lock; concurrent first builds are merely wasted work
        yield
        return
    with open(lock_path, 'w') as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def build(source):
    """Compile (or load the cached build of) the C++ ops in `source` -> the loaded module; RuntimeError
    naming the log of the compiler's output when the build fails."""
    build_dir = _build_dir(source)
    os.makedirs(build_dir, exist_ok=True)
    # Distributed ranks start together: one builds, the others wait and load the result.
    with _exclusive(os.path.join(build_dir, 'build.lock')):
        if not os.path.exists(os.path.join(build_dir, 'elmo_kernels', 'version.txt')):
            log.info('building the CPU kernels (once, ~20 s)')
        # Paddle's loader talks on stdout and stderr (its own and its build process's) even when
        # nothing is rebuilt, and stdout may be a script's output: keep it all, show it on failure.
        with tempfile.TemporaryFile() as output, _output_to(output):
            try:
                from paddle.utils.cpp_extension import load
                # Built for the machine that runs it (-march=native: AVX where there is AVX).
                # -fno-trapping-math lets gcc turn the clamps and selects of exp, sigmoid and tanh
                # into vector blends: without it no gate loop vectorises ("control flow in loop"),
                # and the gates cost more than the products. It changes no result: nothing here
                # reads floating-point exception flags.
                ops = load(name='elmo_kernels', sources=[source], build_directory=build_dir, verbose=False,
                           **_runtime_flags(['-O3', '-march=native', '-fno-trapping-math']))
            except Exception as e:
                sys.stdout.flush()
                output.seek(0)
                log_path = os.path.join(build_dir, 'build-error.log')
                with open(log_path, 'wb') as saved:
                    saved.write(output.read())
                first = (str(e).strip().splitlines() or [type(e).__name__])[0][:200]
                raise RuntimeError(f'{first}; the compiler output is in {log_path}') from None
    log.debug('CPU kernels loaded from %s', build_dir)
    return ops


def _runtime_flags(cflags):
    """Compiler and linker flags: OpenMP on Paddle's own Intel runtime when the wheel ships it, and
    its MKL when it ships that.

    MKL's threads stay spinning between products; kernels on the same libiomp5 pool reuse them,
    while GNU OpenMP threads would compete with them for the cores (measured: slower than serial).
    Without libiomp5 the kernels run on one thread (and still vectorise).
    """
    libs = os.path.join(os.path.dirname(paddle.__file__), 'libs')
    if not os.path.exists(os.path.join(libs, 'libiomp5.so')):
        return {'extra_cxx_cflags': cflags + ['-fopenmp-simd']}
    flags = {'extra_cxx_cflags': cflags + ['-fopenmp'],
             'extra_ldflags': ['-L' + libs, '-l:libiomp5.so', '-Wl,-rpath,' + libs]}
    # The MKL Paddle's products run on: the recurrence packs its weights once per call for MKL's
    # packed products (kernels.cc, ELMO_MKL), 1.1-1.8x faster than a plain product at 16-64 rows.
    if os.path.exists(os.path.join(libs, 'libmklml_intel.so')):
        flags['extra_cxx_cflags'].append('-DELMO_MKL')
        flags['extra_ldflags'].append('-l:libmklml_intel.so')
    return flags


@contextlib.contextmanager
def _output_to(file):
    """Send this process's stdout and stderr (file descriptors 1 and 2, so child processes too) to file."""
    sys.stdout.flush(), sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    try:
        os.dup2(file.fileno(), 1), os.dup2(file.fileno(), 2)
        yield
    finally:
        sys.stdout.flush(), sys.stderr.flush()
        os.dup2(saved[0], 1), os.dup2(saved[1], 2)
        os.close(saved[0]), os.close(saved[1])
