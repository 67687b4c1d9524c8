"""Process-wide setup, in one place: what importing the package sets, the device, Paddle at full
speed on the CPU it runs on (MKL's AVX-512 or AVX2 path on AMD processors, every core), glibc's malloc,
and train/eval mode without Paddle's global switch.

    import paddle                       # every module of ours imports Paddle plainly, in any order
    summary = configure(threads=None)   # the scripts call it (use_device, which logs summary); so do
                                        # ELMoEmbedder and Elmo on CPU (at DEBUG only, as torch uses all cores)

At import (`paddle_elmo/__init__.py` imports this module, so it runs first for any `paddle_elmo.*`
import, whatever the user or a script imports next) it does three things, each before Paddle can
read it and each only where the user left it alone -- and nothing else:
- `GLOG_minloglevel=2` unless set: Paddle's C++ info logs off (read once, when Paddle is imported),
  so that a user's error is the one line on stderr;
- it notes the user's OMP_NUM_THREADS (Paddle's import sets an unset one to 1, see user_threads);
- when Paddle is not imported yet, it filters the one warning Paddle's import gives about ccache
  (its C++-extension tools are imported with it; our one extension is built once and cached,
  kernels.py, so the notice only misleads). The filter matches that message only.
This module itself imports no Paddle at import: `paddle-elmo --help` and build-vocab stay fast.

Two of Paddle's CPU defaults cost most of the speed on the machines our users have:
- Paddle's CPU wheels link an old MKL (`paddle/libs/libmklml_intel.so`) that chooses its code path
  by processor vendor: on AMD it runs a generic path, with much slower matmuls than its AVX2 path
  on the same processor. This MKL honours `MKL_DEBUG_CPU_TYPE`: 5 runs its AVX2 path, 7 its AVX-512
  path (Skylake server's, faster again on an AMD EPYC with AVX-512). It reads the variable once, at
  its first product: setting it before the first Paddle operation is enough, so it is
  configure()'s, not the import's, and no import order matters.
- Paddle runs its CPU kernels on one thread unless told otherwise (its import sets an unset
  OMP_NUM_THREADS to 1).

configure() changes, process-wide and only where the user has not chosen:
- `MKL_DEBUG_CPU_TYPE`, when the processor is AMD and the variable is unset (set it yourself, to
  any value, and it is left alone): 7 with AVX-512 (F, CD, BW, DQ and VL: the instructions MKL's
  AVX-512 path runs), else 5 with AVX2 and FMA;
- Paddle's CPU threads: `threads`, else the user's OMP_NUM_THREADS, else the cores this process
  may use, divided among the ranks `paddle.distributed.launch` started on this machine.
If MKL had already chosen its slow path (a Paddle product ran before configure()), it warns once
and names the fix (a Python warning, pointing at the caller's line: the calling code's order is
what to change).

A future Paddle with a newer MKL will ignore MKL_DEBUG_CPU_TYPE. The fallbacks: a preloaded
one-line library that makes MKL's `mkl_serv_intel_cpu_true` return 1 (`LD_PRELOAD`, the known
workaround for MKL 2020+), or, for inference, Paddle's static graph with oneDNN kernels
(`FLAGS_use_mkldnn`), whose code path depends on the instruction set, not the vendor.
"""
import contextlib
import functools
import logging
import os
import sys
import warnings

log = logging.getLogger(__name__)

# MKL_DEBUG_CPU_TYPE's values for the code paths asked for on AMD; also the paths MKL reports then.
AVX2_PATH = '5'
AVX512_PATH = '7'  # the AVX-512 path of Intel's Skylake server processors
AVX2_FLAGS = frozenset({'avx2', 'fma'})  # what the AVX2 path runs
AVX512_FLAGS = frozenset({'avx512f', 'avx512cd', 'avx512bw', 'avx512dq', 'avx512vl'})  # and the AVX-512 one
MKL_PATHS = {None: 'no bundled MKL', '0': 'generic path', AVX2_PATH: 'AVX2 path', AVX512_PATH: 'AVX-512 path'}
# The instruction-set flags each path executes (the generic one runs anywhere).
MKL_PATH_NEEDS = {'0': frozenset(), AVX2_PATH: AVX2_FLAGS, AVX512_PATH: AVX2_FLAGS | AVX512_FLAGS}


def _startup_environment(name):
    """name's value in the environment this process started with (Linux), or None."""
    try:
        with open('/proc/self/environ', 'rb') as f:
            entries = f.read().split(b'\0')
    except OSError:
        return None
    prefix = name.encode() + b'='
    return next((e[len(prefix):].decode(errors='replace') for e in entries if e.startswith(prefix)), None)


# Paddle's import sets an unset OMP_NUM_THREADS to '1'. Read before Paddle is imported (this module
# is imported with the package, before any of ours imports Paddle), os.environ holds the user's
# value; if Paddle was imported earlier (by the user's code), the value the process started with
# is the best witness of the user's choice.
_USER_OMP_NUM_THREADS = ((os.environ.get('OMP_NUM_THREADS') if 'paddle' not in sys.modules
                          else _startup_environment('OMP_NUM_THREADS')) or '').strip()

os.environ.setdefault('GLOG_minloglevel', '2')
if 'paddle' not in sys.modules:  # the notice comes with Paddle's first import only
    warnings.filterwarnings('ignore', message='No ccache found', category=UserWarning)


_warned_slow_mkl = False
_mkl_asked = None  # the MKL_DEBUG_CPU_TYPE ask_mkl_for_fast_path set (None: it set none, the user may have)


def user_threads():
    """The user's OMP_NUM_THREADS (as it was before Paddle's import) when a positive integer, else None."""
    return int(_USER_OMP_NUM_THREADS) if _USER_OMP_NUM_THREADS.isdigit() and int(_USER_OMP_NUM_THREADS) > 0 else None


def available_cores():
    """Cores this process may run on, shared among the ranks paddle.distributed.launch started here."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else os.cpu_count() or 1
    return max(1, cores // int(os.environ.get('PADDLE_LOCAL_SIZE') or 1))


def default_threads():
    return user_threads() or available_cores()


@functools.lru_cache(maxsize=None)  # read once: every ELMoEmbedder and Elmo asks
def processor(cpuinfo='/proc/cpuinfo'):
    """-> (vendor id, set of instruction-set flags) of the first processor; ('', set()) if unknown."""
    vendor, flags = '', set()
    try:
        with open(cpuinfo) as f:
            for line in f:
                key, _, value = line.partition(':')
                key = key.strip()
                if key == 'vendor_id' and not vendor:
                    vendor = value.strip()
                elif key == 'flags' and not flags:
                    flags = set(value.split())
                if vendor and flags:
                    break
    except OSError:
        pass
    return vendor, flags


def runs_mkl_path(path, cpu=None):
    """Whether this processor runs MKL's code `path` (an MKL_DEBUG_CPU_TYPE value we ask for or
    measure): it has the flags MKL_PATH_NEEDS lists. cpu: processor()'s (vendor, flags)."""
    return path in MKL_PATH_NEEDS and MKL_PATH_NEEDS[path] <= (cpu or processor())[1]


def mkl_path_name(path):
    """A code path mkl_code_path reports, in words (for the log and the warnings)."""
    return MKL_PATHS.get(path, f'code path {path}')


def mkl_path_to_ask(cpu=None):
    """The MKL_DEBUG_CPU_TYPE of MKL's fastest path this processor runs, where MKL would run its
    generic path: on AMD, AVX512_PATH, else AVX2_PATH (runs_mkl_path); None elsewhere (on Intel
    MKL picks its path itself). cpu: processor()'s (vendor, flags)."""
    cpu = cpu or processor()
    if cpu[0] != 'AuthenticAMD':
        return None
    return next((path for path in (AVX512_PATH, AVX2_PATH) if runs_mkl_path(path, cpu)), None)


def mkl_code_path():
    """The code path Paddle's bundled MKL runs (MKL_PATHS' keys), or None without that MKL.

    Asking fixes MKL's choice, as its first product would: call it after MKL_DEBUG_CPU_TYPE is set.
    """
    import ctypes
    import paddle
    path = os.path.join(os.path.dirname(paddle.__file__), 'libs', 'libmklml_intel.so')
    if not os.path.exists(path):
        return None
    try:
        return str(ctypes.CDLL(path).mkl_serv_cpu_detect())
    except (OSError, AttributeError):
        return None


def ask_mkl_for_fast_path():
    """Set MKL_DEBUG_CPU_TYPE to mkl_path_to_ask() on an AMD processor unless the user set the
    variable. -> how MKL was asked, for the log ('' where MKL needs no asking)."""
    global _mkl_asked
    path = mkl_path_to_ask()
    if path is None:
        return ''
    if 'MKL_DEBUG_CPU_TYPE' not in os.environ:
        os.environ['MKL_DEBUG_CPU_TYPE'] = _mkl_asked = path
    if _mkl_asked is not None:
        return f' (MKL_DEBUG_CPU_TYPE={_mkl_asked} set for this AMD processor)'
    return f' (MKL_DEBUG_CPU_TYPE={os.environ["MKL_DEBUG_CPU_TYPE"]!r} from the environment)'


def configure(threads=None):
    """Put Paddle's CPU work on MKL's fast path and on `threads` threads (see the module docstring).

    threads: None for the default (the user's OMP_NUM_THREADS, else the available cores).
    -> one line saying what runs, for a script's log.
    """
    import paddle
    global _warned_slow_mkl
    asked = ask_mkl_for_fast_path()
    n = threads or default_threads()
    paddle.base.core.set_num_threads(n)
    path = mkl_code_path()
    if _mkl_asked is not None and path not in (None, _mkl_asked) and not _warned_slow_mkl:
        _warned_slow_mkl = True
        warnings.warn(f"Paddle's MKL chose its {mkl_path_name(path)} before ELMo could ask for its "
                      f"{mkl_path_name(_mkl_asked)} (a Paddle matmul ran first): matmuls run up to ~3x slower on "
                      f"this AMD processor. Set MKL_DEBUG_CPU_TYPE={_mkl_asked} in the environment, or create the "
                      "embedder before other Paddle work.", stacklevel=3)
    source = 'cpu_threads' if threads else 'OMP_NUM_THREADS' if user_threads() else 'the available cores'
    return f'CPU: {n} thread{"s" * (n > 1)} ({source}); MKL: {mkl_path_name(path)}{asked}'


def configure_if_on_cpu(threads=None):
    """configure() when Paddle's current device is the CPU (ELMoEmbedder and Elmo call it; what runs
    is logged at DEBUG)."""
    import paddle
    if paddle.get_device() == 'cpu':
        log.debug('%s', configure(threads))


# --------------------------------------------------------------------------------------------
# Device and memory (the scripts)
# --------------------------------------------------------------------------------------------

def keep_freed_memory(mmap_threshold_mb=256, trim_threshold_mb=512):
    """Ask glibc's malloc to keep freed blocks for reuse instead of returning them to the OS.

    Paddle allocates a fresh tensor for every op on CPU. With glibc's default (dynamic) thresholds
    the MB-sized buffers of each LSTM step go back to the OS and return as new pages, which makes
    CPU embedding and training markedly slower. Blocks up to `mmap_threshold_mb` are kept instead.
    Process-wide and idempotent; returns False where malloc is not glibc's (macOS, Windows, musl).
    """
    import ctypes
    try:
        libc = ctypes.CDLL('libc.so.6')
        m_trim_threshold, m_mmap_threshold = -1, -3  # glibc's mallopt parameter numbers
        return bool(libc.mallopt(m_mmap_threshold, mmap_threshold_mb << 20) == 1 and
                    libc.mallopt(m_trim_threshold, trim_threshold_mb << 20) == 1)
    except (OSError, AttributeError):
        return False


def set_device(device):
    """paddle.set_device(device) ('cpu', 'gpu' or 'gpu:N'), with a device this Paddle build or this
    machine lacks an InputError naming it (Paddle's own error is a long ValueError traceback)."""
    import paddle
    from paddle_elmo.fileio import InputError
    if device.startswith('gpu'):
        if not paddle.device.is_compiled_with_cuda():
            raise InputError(f'--device {device}: this Paddle ({paddle.__version__}) is a CPU-only build; install '
                             'paddlepaddle-gpu for a GPU, or use --device cpu')
        if paddle.device.cuda.device_count() == 0:
            raise InputError(f'--device {device}: no GPU is visible to this process (CUDA_VISIBLE_DEVICES?); '
                             'use --device cpu')
    paddle.set_device(device)


def cuda_device_name(number):
    """AllenNLP's CUDA device number (ElmoEmbedder's `cuda_device`, allennlp elmo's --cuda-device)
    -> Paddle's device: -1 'cpu', N >= 0 'gpu:N'; anything else an InputError naming it."""
    from paddle_elmo.fileio import InputError
    if isinstance(number, bool) or not hasattr(number, '__index__') or number < -1:
        raise InputError(f'cuda_device {number!r}: expected a CUDA device number, -1 for the CPU or N >= 0 for gpu:N')
    return 'cpu' if number == -1 else f'gpu:{int(number)}'


def use_device(device, reuse_memory=True, cpu_threads=None):
    """For the scripts: paddle.set_device(device); on CPU, also `configure(cpu_threads)` (MKL's fast
    path, the available cores unless the user chose; logs which at INFO) and, with reuse_memory,
    keep_freed_memory()."""
    set_device(device)
    if device == 'cpu':
        log.info('%s', configure(cpu_threads))
        if reuse_memory:
            keep_freed_memory()


# --------------------------------------------------------------------------------------------
# Train / eval mode without the global switch
# --------------------------------------------------------------------------------------------

def set_mode(layer, training):
    """Put `layer` and its sublayers in training or eval mode without Layer.train()/eval(), which
    also switch the dygraph tracer's process-wide mode under a caller's other layers."""
    for sub in layer.sublayers(include_self=True):
        sub.training = training
    return layer


@contextlib.contextmanager
def inference_mode(bilm, stateful):
    """Run `bilm` without dropout, without gradients and with the given stateful flag; restore its
    modes and flag afterwards, so a biLM the caller passed in (perhaps one being trained) comes back
    as it was."""
    import paddle
    modes = [(layer, layer.training) for layer in bilm.sublayers(include_self=True)]
    was_stateful = bilm.stateful
    set_mode(bilm, False)
    bilm.stateful = stateful
    try:
        with paddle.no_grad():
            yield bilm
    finally:
        bilm.stateful = was_stateful
        for layer, training in modes:
            layer.training = training
