"""Building the C++ kernels (kernels.cc) once per machine: the cache tag that says when a build is
still valid, a file lock so that ranks starting together build once, and the compiler's chatter
kept out of the user's output (file descriptors 1 and 2 redirected) and shown only on failure.

    ops = build(source)   # the loaded module; RuntimeError naming the compiler log on failure

The build lands in the toolkit's cache directory (cache.py: ~/.cache/paddle-elmo/ops/<tag>).
Paddle's `cpp_extension.load` runs `python setup.py build` in a subprocess at every call, built or
not (a second Python that imports Paddle). So once a build has loaded, a stamp beside it
(STAMP: the source's hash, the flags, the compiler's identity, all read without a subprocess) lets
later processes load the library as `load` does after its build step, with no subprocess; a stamp
that differs goes through `load` again, which rebuilds what changed. (`import paddle` itself
still runs a few small commands: ldd, which nvcc, which ccache.)
"""
import contextlib
import hashlib
import json
import logging
import os
import platform
import shutil
import sys
import tempfile

import paddle

from paddle_elmo.cache import cache_dir
from paddle_elmo.fileio import write_json_atomic

log = logging.getLogger(__name__)


# The compiler flags of every build (_runtime_flags explains them and adds OpenMP and MKL's).
CFLAGS = ('-O3', '-march=native', '-fno-trapping-math', '-fno-math-errno')
NAME = 'elmo_kernels'  # the library's name: CACHE/ops/<tag>/elmo_kernels/elmo_kernels.so
STAMP = 'loaded.json'  # beside the library: what the build that loaded was made from (_stamp)


def _compiler_identity():
    """$CXX (Paddle builds with it, else g++) as the file it resolves to, with its size and
    modification time: another compiler on PATH, or one upgraded in place, is another identity.
    Read from the file system: `$CXX --version` would start a process at every import."""
    cxx = os.environ.get('CXX', 'g++')
    path = shutil.which(cxx)
    if path is None:
        return f'{cxx}: not found'
    real = os.path.realpath(path)
    status = os.stat(real)
    return f'{cxx} = {real} ({status.st_size} bytes, modified {status.st_mtime_ns})'


def _build_dir(source):
    """CACHE/ops/<tag> (cache.cache_dir): the tag covers what makes a build invalid elsewhere: this
    CPU's instruction-set flags (a -march=native build only runs on its kind of CPU), the Paddle
    version (its headers and ABI), the compiler, the Paddle installation and the source's path.
    The source's content is the stamp's (_stamp), so that an edited source rebuilds in place."""
    try:
        with open('/proc/cpuinfo', encoding='utf-8') as f:
            flags = next((line for line in f if line.startswith('flags')), '')
    except OSError:
        flags = ''
    # The installation and the source's path because the build records both: a cache shared by two
    # virtual environments, or by two checkouts, was rebuilt by each in turn.
    key = '\n'.join([platform.machine(), flags, paddle.__version__, _compiler_identity(),
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
    flags = _runtime_flags(list(CFLAGS))
    stamp = _stamp(source, flags)
    # Distributed ranks start together: one builds, the others wait and load the result.
    with _exclusive(os.path.join(build_dir, 'build.lock')):
        ops = _load_stamped(build_dir, stamp)
        if ops is None:
            ops = _compile(source, build_dir, flags)
            write_json_atomic(stamp, os.path.join(build_dir, NAME, STAMP))
    log.debug('CPU kernels loaded from %s', build_dir)
    return ops


def _stamp(source, flags):
    """What a build is made from, read without a subprocess: the source's sha256, the compiler and
    linker flags, the compiler's identity (the tag's other parts name the directory)."""
    with open(source, 'rb') as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    return {'source': os.path.abspath(source), 'source_sha256': digest, 'flags': flags,
            'compiler': _compiler_identity()}


def _load_stamped(build_dir, stamp):
    """The library built in build_dir, loaded as `load` loads it after its build step (its ops
    registered with Paddle, their Python API generated), when its stamp equals `stamp` -> the
    module; else None: no stamp yet, another source, flags or compiler, or a Paddle without this
    loader (then `_compile`, through Paddle's `load`, rebuilds what needs it)."""
    library_dir = os.path.join(build_dir, NAME)
    try:
        with open(os.path.join(library_dir, STAMP), encoding='utf-8') as f:
            if json.load(f) != stamp:
                return None
        from paddle.utils.cpp_extension.extension_utils import _import_module_from_library
        with tempfile.TemporaryFile() as output, _output_to(output):  # it logs 'using custom operator only'
            return _import_module_from_library(NAME, library_dir, False)
    except Exception as e:  # a missing or unreadable file, or Paddle's internals changed
        log.debug('the stamped kernels in %s did not load (%s: %s): through paddle\'s load', library_dir,
                  type(e).__name__, e)
        return None


def _compile(source, build_dir, flags):
    """Paddle's `cpp_extension.load`: builds when the build is missing or out of date, then loads."""
    if not os.path.exists(os.path.join(build_dir, NAME, 'version.txt')):
        log.info('building the CPU kernels (once, ~20 s)')
    # Paddle's loader talks on stdout and stderr (its own and its build process's) even when
    # nothing is rebuilt, and stdout may be a script's output: keep it all, show it on failure.
    with tempfile.TemporaryFile() as output, _output_to(output):
        try:
            from paddle.utils.cpp_extension import load
            return load(name=NAME, sources=[source], build_directory=build_dir, verbose=False, **flags)
        except Exception as e:
            sys.stdout.flush()
            output.seek(0)
            log_path = os.path.join(build_dir, 'build-error.log')
            with open(log_path, 'wb') as saved:
                saved.write(output.read())
            first = (str(e).strip().splitlines() or [type(e).__name__])[0][:200]
            raise RuntimeError(f'{first}; the compiler output is in {log_path}') from None


def _runtime_flags(cflags):
    """`load`'s compiler and linker flags: `cflags`, OpenMP on Paddle's own Intel runtime when the
    wheel ships it, and its MKL when it ships that.

    -O3 -march=native: built for the machine that runs it (AVX where there is AVX).
    -fno-trapping-math lets gcc turn the clamps and selects of exp, sigmoid and tanh into vector
    blends: without it no gate loop vectorises ("control flow in loop"), and the gates cost more
    than the products. It changes no result: nothing here reads floating-point exception flags.
    -fno-math-errno: with errno semantics std::sqrt of a negative must call libm's sqrtf to set
    errno, so gcc kept the optimizer's update loops scalar (a sqrtss, a division and a branch per
    element, a much slower optimizer). IEEE's vector sqrt and division give
    the same floats (tests/test_speed_paths.py checks them bit for bit), and nothing here reads errno.

    MKL's threads stay spinning between products; kernels on the same libiomp5 pool reuse them,
    while GNU OpenMP threads would compete with them for the cores (slower than serial).
    Without libiomp5 the kernels run on one thread (and still vectorise).
    """
    libs = _paddle_libs()
    if not os.path.exists(os.path.join(libs, 'libiomp5.so')):
        return {'extra_cxx_cflags': cflags + ['-fopenmp-simd']}
    flags = {'extra_cxx_cflags': cflags + ['-fopenmp'],
             'extra_ldflags': ['-L' + libs, '-l:libiomp5.so', '-Wl,-rpath,' + libs]}
    if mkl_library():
        flags['extra_cxx_cflags'].append('-DELMO_MKL')  # the recurrence's products packed (mkl_library)
        flags['extra_ldflags'].append('-l:libmklml_intel.so')
    return flags


def _paddle_libs():
    """The wheel's own shared libraries (paddle/libs): its Intel OpenMP runtime and MKL, when shipped."""
    return os.path.join(os.path.dirname(paddle.__file__), 'libs')


def mkl_library():
    """The path of the MKL the kernels link (Paddle's libmklml_intel.so, when the wheel ships it
    and the libiomp5 it runs on), else None.

    The MKL Paddle's products run on: with it the recurrence packs its weights once per call for
    MKL's packed products (kernels.cc, ELMO_MKL), faster than a plain product at a step's few rows;
    without it each step's products are Paddle's matmul.
    """
    libs = _paddle_libs()
    path = os.path.join(libs, 'libmklml_intel.so')
    return path if os.path.exists(os.path.join(libs, 'libiomp5.so')) and os.path.exists(path) else None


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
