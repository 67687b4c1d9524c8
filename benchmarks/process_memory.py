"""The process's own memory, in MB: what the benchmarks and their workers report, AllenNLP's worker
included (standard library only, so that any Python running a worker can import it)."""
import resource
import sys


def peak_rss_mb():
    """Peak resident memory of this process so far, in MB (the whole process, Python included).

    On Linux, /proc's VmHWM: the peak of this program's own memory since it started. Not
    ru_maxrss there: a process started by fork and exec keeps, as its ru_maxrss, the peak of the
    parent it came from (the kernel carries the old memory's high-water mark over the exec), so a
    worker run by a benchmark that had measured the memory bandwidth over large arrays would report
    the benchmark's peak, not its own. ru_maxrss elsewhere (macOS has no /proc).
    """
    hwm = _proc_status_mb('VmHWM')
    if hwm is not None:
        return hwm
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2 ** 20 if sys.platform == 'darwin' else peak / 1024  # bytes on macOS, KB on Linux


def current_rss_mb():
    """Resident memory now, in MB (Linux /proc; None elsewhere)."""
    return _proc_status_mb('VmRSS')


def _proc_status_mb(field):
    """A kB field of /proc/self/status (VmRSS, VmHWM), in MB; None where there is no /proc."""
    try:
        with open('/proc/self/status') as f:
            for line in f:
                if line.startswith(field + ':'):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None
