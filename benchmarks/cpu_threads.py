"""The CPU thread count of a benchmark and of the workers it starts: fixed through the environment
before Paddle is imported, and through runtime.configure in this process."""
import os

THREAD_ENV = ('OMP_NUM_THREADS', 'MKL_NUM_THREADS', 'OPENBLAS_NUM_THREADS')


def thread_env(threads):
    """Environment variables that fix the CPU thread count; must be set before paddle is imported."""
    return {name: str(threads) for name in THREAD_ENV}


def set_threads(threads):
    """Use `threads` CPU threads in this process and MKL's fast path, as the scripts do (runtime.configure:
    MKL_DEBUG_CPU_TYPE=7 or 5 on AMD unless set; MKL_DEBUG_CPU_TYPE=0 in the environment measures the
    slow path); the environment too, for BLAS libraries that read it at load time and for child
    processes. -> runtime.configure's one-line summary."""
    os.environ.update(thread_env(threads))
    from paddle_elmo import runtime
    return runtime.configure(threads)
