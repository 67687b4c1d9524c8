"""A measurement in a fresh process (so that its peak memory is its own): the parent's side
(run_worker) and the worker's (answer_worker), talking JSON."""
import json
import os
import subprocess
import sys


def answer_worker(spec_json, workers):
    """A benchmark's worker process: run workers[spec['kind']](spec) and print its result as JSON."""
    spec = json.loads(spec_json)
    print(json.dumps(workers[spec['kind']](spec)))
    return 0


def run_worker(argv, env=None, timeout=None, python=None):
    """Run `python argv...` in a fresh process (so its peak memory is its own; this interpreter
    unless `python` names another) and return the JSON object it prints on its last stdout line.
    Raises RuntimeError with the worker's error."""
    proc = subprocess.run([python or sys.executable, *argv], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr.strip().splitlines() or ['(no output)'])[-1]
        raise RuntimeError(f'worker {" ".join(argv[:1])} failed (exit {proc.returncode}): {tail}')
    return json.loads(lines[-1])
