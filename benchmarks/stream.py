"""The machine's memory bandwidth: STREAM's copy and triad over arrays far larger than the
last-level cache, on the benchmark's threads -> GB/s, the memory side of the roofline floors
(benchmarks/roofline.py; bench_pretrain.py and bench_embed.py print it beside the matmul rate).

    python benchmarks/stream.py                   # 2 threads, arrays of 4x the last-level cache
    python benchmarks/stream.py --threads 1 --array_mb 512

copy   a = b            counted as 2 arrays moved (read b, write a)
triad  a = b + s * c    counted as 3 arrays moved (read b and c, write a)
The counts are STREAM's: the write-allocate read of `a` that a cache without non-temporal stores
also makes is not counted, so a pass that writes runs at these rates, not faster. Each thread runs
its own contiguous slice (NumPy releases the GIL inside a ufunc); the triad goes through blocks of
BLOCK elements so that `s * c` stays in the core's cache (NumPy has no fused multiply-add into a
third array: unblocked, the temporary would be one more array through memory). Best round over
`seconds`, as the matmul rate: the machine's speed, not whatever else is running.
"""
import argparse
import glob
import threading
import time

BLOCK = 1 << 16  # elements: 256 KB of float32, one block of each array well inside a core's L2


def last_level_cache_bytes():
    """Size of the largest CPU cache (Linux sysfs; the last level, shared by the cores), or None."""
    sizes = []
    for path in glob.glob('/sys/devices/system/cpu/cpu0/cache/index*/size'):
        try:
            with open(path) as f:
                text = f.read().strip()
        except OSError:
            continue
        units = {'K': 1 << 10, 'M': 1 << 20, 'G': 1 << 30}
        sizes.append(int(text[:-1]) * units[text[-1]] if text[-1] in units else int(text))
    return max(sizes) if sizes else None


def default_array_mb():
    """Arrays 4x the last-level cache (at least 64 MB): a pass over them cannot be served from it."""
    llc = last_level_cache_bytes() or 0
    return max(64, 4 * llc // (1 << 20))


def _slices(n, threads):
    bounds = [n * i // threads for i in range(threads + 1)]
    return [slice(a, b) for a, b in zip(bounds, bounds[1:])]


def _copy(a, b, part):
    a[part] = b[part]


def _triad(a, b, c, part, scalar=3.0):
    import numpy as np
    tmp = np.empty(min(BLOCK, part.stop - part.start), dtype=a.dtype)
    for start in range(part.start, part.stop, BLOCK):
        end = min(start + BLOCK, part.stop)
        t = tmp[:end - start]
        np.multiply(c[start:end], scalar, out=t)
        np.add(b[start:end], t, out=a[start:end])


def _timed(kernel, args, slices):
    """Seconds of one pass: `kernel(*args, part)` on each slice, one thread per slice, all at once."""
    workers = [threading.Thread(target=kernel, args=(*args, part)) for part in slices]
    start = time.perf_counter()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return time.perf_counter() - start


def measure_stream_gbs(threads=2, array_mb=None, seconds=2.0):
    """Best GB/s (10^9 bytes) of STREAM's copy and triad on float32 arrays of `array_mb` MB each
    (default: default_array_mb()), `threads` threads, repeated for about `seconds` each.

    # Returns

    `dict`
        {'copy': GB/s, 'triad': GB/s, 'array_mb': the size used, 'threads': threads}
    """
    import numpy as np
    array_mb = array_mb or default_array_mb()
    n = array_mb * (1 << 20) // 4
    a, b, c = (np.full(n, v, dtype=np.float32) for v in (0.0, 1.0, 2.0))  # written: the pages are mapped
    slices = _slices(n, max(1, threads))
    out = {'array_mb': array_mb, 'threads': threads}
    for name, kernel, args, arrays in (('copy', _copy, (a, b), 2), ('triad', _triad, (a, b, c), 3)):
        _timed(kernel, args, slices)  # warm-up
        best, start = 0.0, time.perf_counter()
        while True:
            best = max(best, arrays * n * 4 / _timed(kernel, args, slices) / 1e9)
            if time.perf_counter() - start >= seconds:
                break
        out[name] = best
    if not np.all(a[:: max(1, n // 1000)] == np.float32(7.0)):  # 1 + 3 * 2: the triad ran everywhere
        raise RuntimeError('stream triad: wrong result')
    return out


def describe(result):
    """One line for a benchmark's header."""
    return (f"memory bandwidth (STREAM, {result['threads']} threads, {result['array_mb']} MB arrays): "
            f"copy {result['copy']:.1f} GB/s, triad {result['triad']:.1f} GB/s")


def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--threads', type=int, default=2, help='threads (slices of the arrays)')
    p.add_argument('--array_mb', type=int, default=0, help='MB per array (0: 4x the last-level cache, >= 64)')
    p.add_argument('--seconds', type=float, default=2.0, help='repeat each kernel for about this long (best round)')
    a = p.parse_args()
    llc = last_level_cache_bytes()
    print(f'last-level cache: {llc / 2 ** 20:.0f} MB' if llc else 'last-level cache: unknown')
    print(describe(measure_stream_gbs(a.threads, a.array_mb or None, a.seconds)))


if __name__ == '__main__':
    main()
