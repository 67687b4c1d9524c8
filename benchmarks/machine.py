"""Facts recorded next to every number: the processor, memory, versions, commit, load and the
processes that share the cores (other work explains slow numbers); the process's memory."""
import datetime
import os
import platform
import subprocess

from cpu_threads import set_threads
from matmul_rates import measure_matmul_gflops
from places import ROOT
from process_memory import current_rss_mb, peak_rss_mb  # noqa: F401 (the benchmarks read them here)


def _cpu_model():
    try:
        with open('/proc/cpuinfo') as f:
            for line in f:
                if line.startswith('model name'):
                    return line.split(':', 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or 'unknown'


def _ram_gb():
    try:
        with open('/proc/meminfo') as f:
            return round(int(f.readline().split()[1]) / 2 ** 20, 1)
    except (OSError, ValueError, IndexError):
        return None


def git_commit():
    """The checkout's short commit, with "+uncommitted changes" when tracked files differ from it."""
    try:
        commit = subprocess.run(['git', 'rev-parse', '--short', 'HEAD'], cwd=ROOT, capture_output=True,
                                text=True, check=True).stdout.strip()
        dirty = subprocess.run(['git', 'status', '--porcelain', '--untracked-files=no'], cwd=ROOT,
                               capture_output=True, text=True).stdout.strip()
        return commit + ('+uncommitted changes' if dirty else '')
    except (OSError, subprocess.CalledProcessError):
        return 'unknown'


def load_average():
    """(1, 5, 15)-minute load averages, rounded."""
    return tuple(round(x, 2) for x in os.getloadavg())


def busiest_processes(n=3):
    """The n other processes using the most CPU (lifetime average), as 'pid %cpu command' lines:
    other work on the machine explains slow numbers."""
    try:
        out = subprocess.run(['ps', '-eo', 'pid,pcpu,args', '--sort=-pcpu'], capture_output=True,
                             text=True, check=True).stdout.splitlines()[1:]
    except (OSError, subprocess.CalledProcessError):
        return []
    others = [line.strip() for line in out if line.split()[0] != str(os.getpid())]
    return [line[:110] for line in others[:n]]


def machine_info():
    """Facts to record next to every number."""
    import paddle
    return {
        'date': datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC'),
        'cpu': _cpu_model(),
        'nproc': os.cpu_count(),
        'ram_gb': _ram_gb(),
        'python': platform.python_version(),
        'paddle': paddle.__version__,
        'commit': git_commit(),
        'load_average': load_average(),
        'cpu_kernels': _cpu_kernels(),
        'mkl': _mkl(),
    }


def _mkl():
    """Paddle's MKL code path and how it was chosen (runtime.configure has run: asking fixes the path)."""
    from paddle_elmo import runtime
    path = runtime.mkl_code_path()
    return f"path {path} (MKL_DEBUG_CPU_TYPE={os.environ.get('MKL_DEBUG_CPU_TYPE', 'unset')})"


def _cpu_kernels():
    """'on' when kernels.cc is built and used on CPU, else 'off' (ELMO_CPU_KERNELS=0, no compiler)."""
    from paddle_elmo.model import kernels
    return 'on' if kernels.kernel() is not None else 'off'


def print_machine_info(info=None):
    info = info or machine_info()
    print(f"date {info['date']} | commit {info['commit']} | {info['cpu']}, nproc {info['nproc']}, "
          f"RAM {info['ram_gb']} GB | Python {info['python']}, Paddle {info['paddle']} | "
          f"CPU kernels {info['cpu_kernels']} | MKL {info['mkl']} | load average {info['load_average']}")
    for line in busiest_processes():
        print(f'  busy: {line}')


def start_run(out_dir, threads):
    """A benchmark run's opening: its output directory, its threads, the machine and the float32
    matmul rate at the start (printed) -> (machine_info, GFLOP/s)."""
    os.makedirs(out_dir, exist_ok=True)
    set_threads(threads)
    info = machine_info()
    print_machine_info(info)
    gflops = measure_matmul_gflops()
    print(f'float32 matmul rate at the start: {gflops:.1f} GFLOP/s', flush=True)
    return info, gflops
