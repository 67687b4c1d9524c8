"""The benchmarks' peak memory is the measured process's own: a worker started by a benchmark that
had used much more memory (bench_embed measures the memory bandwidth over arrays of 4x the last-level
cache before it starts its workers) reports its own peak, not the benchmark's."""
import json
import os
import subprocess
import sys

from conftest import ROOT

BENCHMARKS = os.path.join(ROOT, 'benchmarks')

# A parent that touches 400 MB, frees it, then runs a worker that reports machine.peak_rss_mb().
PARENT = """
import json, sys
import numpy as np
import machine, worker_runs
big = np.full(100 << 20, 1.0, dtype=np.float32)  # 400 MB, written: resident
del big
worker = "import json, machine; print(json.dumps({'peak': machine.peak_rss_mb()}))"
print(json.dumps({'parent': machine.peak_rss_mb(), 'worker': worker_runs.run_worker(['-c', worker])['peak']}))
"""


def test_a_worker_reports_its_own_peak_not_the_peak_of_the_benchmark_that_started_it():
    env = {**os.environ, 'PYTHONPATH': os.pathsep.join([BENCHMARKS, ROOT])}
    out = subprocess.run([sys.executable, '-c', PARENT], capture_output=True, text=True, env=env, cwd=BENCHMARKS,
                         check=True).stdout
    peaks = json.loads(out.strip().splitlines()[-1])
    assert peaks['parent'] > 400
    assert peaks['worker'] < peaks['parent'] - 300  # ru_maxrss would have given the parent's peak
