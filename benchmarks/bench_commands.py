"""Small commands as a user runs them: wall seconds of `paddle-elmo --help`, `embed` of one sentence,
`predict --top_k 5` and `predict --sample 20`, each a new process (the median of --repeats runs),
with the machine's float32 matmul rate beside them (measured before and after: other work on the
machine shows as a lower rate).

    python benchmarks/bench_commands.py                 # 5 runs each; run it on an idle machine
    python benchmarks/bench_commands.py --repeats 9 --output_json commands.json

Every command runs on the bundled model with the same sentence, one warm-up run first (the CPU
kernels' build, the file cache) not counted; "CPU s" is the process's user + system time. Beside
the table: `predict --top_k 5` minus `embed` (the same imports and model load, then one softmax:
issue 52's target <= 0.5 s), and the seconds per sampling step: `--sample 20` minus `--top_k 5`,
divided by the sampling steps (each step samples one word for each of the 20 continuations at
once; steps = the longest continuation, + 1 when it ended at the sentence boundary; target per
sampled word < 0.2 s, met by a step when the step is under it), and per word (a step over 20).
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

import cpu_threads
import machine
import matmul_rates

SENTENCE = 'The stock market'
SAMPLE_SEED = 0
SAMPLES = 20  # continuations of the --sample run, sampled together (a row each)


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
        f'predict --sample {SAMPLES}': ['predict', '--prefix', SENTENCE, '--top_k', '0', '--sample', str(SAMPLES),
                                      '--seed', str(SAMPLE_SEED), '--output_json', os.path.join(work, 'samples.json')],
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
    machine.print_machine_info()
    # The commands' threads (theirs: OMP_NUM_THREADS, else every core), at which the rate is measured.
    threads = int(os.environ.get('OMP_NUM_THREADS') or 0) or len(os.sched_getaffinity(0))
    print(cpu_threads.set_threads(threads), flush=True)
    gflops = [matmul_rates.measure_matmul_gflops()]
    prefix = command_prefix()
    print(f'command: {" ".join(prefix)}; float32 matmul rate at the start: {gflops[0]:.1f} GFLOP/s', flush=True)
    with tempfile.TemporaryDirectory() as work:
        runs = commands(work)
        times, cpu = {}, {}
        for name, args in runs.items():
            timed_run(prefix + args)  # warm-up: not counted
            times[name], cpu[name] = zip(*[timed_run(prefix + args) for _ in range(a.repeats)])
            print(f'  {name}: wall {" ".join(f"{t:.2f}" for t in times[name])}, CPU '
                  f'{" ".join(f"{t:.2f}" for t in cpu[name])}', flush=True)
        steps = sampling_steps(os.path.join(work, 'samples.json'))
    gflops.append(matmul_rates.measure_matmul_gflops())
    median = {name: statistics.median(t) for name, t in times.items()}
    median_cpu = {name: statistics.median(t) for name, t in cpu.items()}
    # The differences, of the wall medians and of the CPU medians (steadier when other work shares the cores)
    over_embed, over_embed_cpu = (m['predict --top_k 5'] - m['embed (one sentence)'] for m in (median, median_cpu))
    per_step, per_step_cpu = ((m[f'predict --sample {SAMPLES}'] - m['predict --top_k 5']) / steps
                              for m in (median, median_cpu))
    print(f'\n| command (bundled model, a new process each, {threads} thread{"s" * (threads > 1)}) '
          '| median s | min s | max s | median CPU s |')
    print('| --- | --- | --- | --- | --- |')
    for name, t in times.items():
        print(f'| paddle-elmo {name} | {median[name]:.2f} | {min(t):.2f} | {max(t):.2f} | '
              f'{median_cpu[name]:.2f} |')
    print(f'| predict --top_k 5 - embed (target <= 0.5 s) | {over_embed:+.2f} | | | {over_embed_cpu:+.2f} |')
    print(f'| a sampling step: {SAMPLES} words, one per continuation ({steps} steps; target < 0.2 s) | '
          f'{per_step:.3f} | | | {per_step_cpu:.3f} |')
    print(f'| a sampled word (a step / {SAMPLES}) | {per_step / SAMPLES:.4f} | | | {per_step_cpu / SAMPLES:.4f} |')
    print(f'\nfloat32 matmul rate ({threads} thread{"s" * (threads > 1)}): {gflops[0]:.1f} GFLOP/s at the start, '
          f'{gflops[1]:.1f} at the end')
    if a.output_json:
        with open(a.output_json, 'w', encoding='utf-8') as f:
            json.dump({'machine': machine.machine_info(), 'threads': threads, 'matmul_gflops': gflops,
                       'repeats': a.repeats, 'seconds': times, 'cpu_seconds': cpu, 'median': median,
                       'median_cpu': median_cpu, 'predict_minus_embed': over_embed,
                       'predict_minus_embed_cpu': over_embed_cpu, 'samples': SAMPLES, 'sampling_steps': steps,
                       'seconds_per_sampling_step': per_step, 'cpu_seconds_per_sampling_step': per_step_cpu,
                       'seconds_per_sampled_word': per_step / SAMPLES},
                      f, indent=1)
    return 0


if __name__ == '__main__':
    sys.exit(main())
