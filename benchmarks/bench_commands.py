"""Small commands as a user runs them: wall seconds of `paddle-elmo --help`, `embed` of one sentence,
`predict --top_k 5` and `predict --sample 3`, each a new process (the median of --repeats runs).

    python benchmarks/bench_commands.py                 # 5 runs each; run it on an idle machine
    python benchmarks/bench_commands.py --repeats 9 --output_json commands.json

Every command runs on the bundled model with the same sentence, one warm-up run first (the CPU
kernels' build, the file cache) not counted; "CPU s" is the process's user + system time. Beside the table: `predict --top_k 5` minus `embed`
(the same imports and model load, then one softmax: issue 52's target <= 0.5 s), and the seconds
per sampled word: `--sample 3` minus `--top_k 5`, divided by the sampling steps (each step samples
one word for each of the 3 continuations at once; steps = the longest continuation, + 1 when it
ended at the sentence boundary; target < 0.2 s).
"""
import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import common

SENTENCE = 'The stock market'
SAMPLE_SEED = 0


def command_prefix():
    """The installed `paddle-elmo` beside this Python, else `python -m paddle_elmo`."""
    script = os.path.join(os.path.dirname(sys.executable), 'paddle-elmo')
    if os.path.exists(script):
        return [script]
    return [shutil.which('paddle-elmo')] if shutil.which('paddle-elmo') else [sys.executable, '-m', 'paddle_elmo']


def commands(work):
    """name -> argument list (after `paddle-elmo`), each writing inside `work`."""
    sentence_file = os.path.join(work, 'one.txt')
    with open(sentence_file, 'w', encoding='utf-8') as f:
        f.write(SENTENCE + '\n')
    return {
        '--help': ['--help'],
        'embed (one sentence)': ['embed', sentence_file, os.path.join(work, 'one.hdf5')],
        'predict --top_k 5': ['predict', '--prefix', SENTENCE, '--top_k', '5'],
        'predict --sample 3': ['predict', '--prefix', SENTENCE, '--top_k', '0', '--sample', '3', '--seed',
                               str(SAMPLE_SEED), '--output_json', os.path.join(work, 'samples.json')],
    }


def timed_run(argv):
    """One run of argv in a new process -> (wall seconds, CPU seconds: user + system of the process
    and its threads, which moves less than the wall time when other jobs share the cores); a
    failure stops the benchmark."""
    before, start = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    proc = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall, after = time.perf_counter() - start, resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        sys.exit(f'{" ".join(argv)} failed (exit {proc.returncode}): {proc.stderr.strip()[-500:]}')
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def sampling_steps(samples_json, max_tokens=30):
    """The sampling loop's steps in the --sample run: its longest continuation's words, + 1 when
    that continuation ended at the sentence boundary (a step whose word is </S>)."""
    with open(samples_json, encoding='utf-8') as f:
        texts = [s['text'] for s in json.load(f)['samples']]
    longest = max(len(t.split()) for t in texts) - len(SENTENCE.split())
    return longest + (longest < max_tokens)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--repeats', type=int, default=5, help='runs per command (the median is reported)')
    p.add_argument('--output_json', help='also write the times here')
    a = p.parse_args(argv)
    common.print_machine_info()
    prefix = command_prefix()
    print(f'command: {" ".join(prefix)}; OMP_NUM_THREADS={os.environ.get("OMP_NUM_THREADS", "unset")}', flush=True)
    with tempfile.TemporaryDirectory() as work:
        runs = commands(work)
        times, cpu = {}, {}
        for name, args in runs.items():
            timed_run(prefix + args)  # warm-up: not counted
            times[name], cpu[name] = zip(*[timed_run(prefix + args) for _ in range(a.repeats)])
            print(f'  {name}: wall {" ".join(f"{t:.2f}" for t in times[name])}, CPU '
                  f'{" ".join(f"{t:.2f}" for t in cpu[name])}', flush=True)
        steps = sampling_steps(os.path.join(work, 'samples.json'))
    median = {name: statistics.median(t) for name, t in times.items()}
    print('\n| command (bundled model, a new process each) | median s | min s | max s | median CPU s |')
    print('| --- | --- | --- | --- | --- |')
    for name, t in times.items():
        print(f'| paddle-elmo {name} | {median[name]:.2f} | {min(t):.2f} | {max(t):.2f} | '
              f'{statistics.median(cpu[name]):.2f} |')
    over_embed = median['predict --top_k 5'] - median['embed (one sentence)']
    per_word = (median['predict --sample 3'] - median['predict --top_k 5']) / steps
    print(f'\npredict --top_k 5 - embed: {over_embed:+.2f} s (target <= 0.5 s)')
    print(f'per sampled word: {per_word:.3f} s over {steps} steps of 3 continuations (target < 0.2 s)')
    if a.output_json:
        with open(a.output_json, 'w', encoding='utf-8') as f:
            json.dump({'machine': common.machine_info(), 'repeats': a.repeats, 'seconds': times, 'cpu_seconds': cpu,
                       'median': median, 'predict_minus_embed': over_embed, 'sampling_steps': steps,
                       'seconds_per_sampled_word': per_word}, f, indent=1)
    return 0


if __name__ == '__main__':
    sys.exit(main())
