"""The sampled softmax's forward taken apart inside the pretraining step: ms per step in each call of
its path, to see where profile_pretrain.py's "softmax, forward" row goes.

    python benchmarks/profile_softmax.py                          # small, 128 and 32 rows, 20 steps
    python benchmarks/profile_softmax.py --batch_sizes 32 --steps 5

The step is pretraining_step.py's (as bench_pretrain.py and profile_pretrain.py time it), warmed up,
then --steps steps with timers around the sampled-softmax calls: the candidate sampler and its
expected counts (NumPy), the union of the step's rows and their positions, the step's W and b rows
(gradient holders; copied by the take_rows kernel only where the softmax kernel does not run: it reads
them from W and b in place), the forward kernel (the candidates' W rows copied, the
candidate logits product [positions, P] x [negatives, P]^T and their exps, block by block), and the
totals that hold them (kernels.sampled_softmax; sampled_loss; sampled_losses, the whole forward with
the biLM's). With the kernels off (ELMO_CPU_KERNELS=0) the kernels' rows stay empty. Timers nest, so the rows do not
add up; the step's ms is beside them. Each batch size runs in its own process (the timers replace
library functions there). No floor is divided here, so no share: profile_pretrain.py gives the
part's floors. Replaced the probe benchmarks/results/speed55_evening_2026-11-27/smparts.py.
"""
import argparse
import collections
import json
import time

import cpu_threads
import machine
import markdown_tables
import places
import pretraining_step
import profiling
import worker_runs
from paddle_elmo.cli.runner import run
from paddle_elmo.fileio import InputError

def instrument(seconds):
    """Timers around the sampled-softmax path's calls (process-wide: classes and modules)."""
    from paddle_elmo.model import kernels
    from paddle_elmo.train import lm, sampled_softmax as ss
    ops = kernels.kernel()
    for owner, method, part in (
            (ss.LogUniformSampler, 'sample', 'sampler: sample (NumPy)'),
            (ss.LogUniformSampler, 'expected_count', 'sampler: expected counts (NumPy)'),
            (lm, 'sorted_union', 'union of the step\'s rows (NumPy)'),
            (ss.Softmax, 'select_rows', 'select_rows: the W, b rows (holders, or copies without the kernels)'),
            (ss.TableRows, 'positions', 'positions of targets and candidates (NumPy)'),
            (ss, 'candidate_labels', 'candidate labels (NumPy)'),
            (ops, 'elmo_take_rows', 'row copies (take_rows kernel: the step\'s W, b rows)'),
            (ops, 'elmo_sampled_softmax_forward', 'forward kernel (candidate rows, logits product, exps)'),
            (kernels, 'sampled_softmax', 'sampled_softmax (the forward kernel and its constants)'),
            (ss.Softmax, 'sampled_loss', 'sampled_loss (positions, labels, sampled_softmax)'),
            (lm.LanguageModel, 'sampled_losses', 'the forward (sampled_losses: biLM and softmax)')):
        if owner is None:
            continue
        profiling.time_calls(owner, method, seconds, part)


def worker(name, batch_size, steps, warmup):
    """Time `steps` steps of `name` at `batch_size` rows after `warmup`, part by part -> one JSON line."""
    from paddle_elmo.train.lm import train_step
    model, optimizer, batches, _, _, _ = pretraining_step.build(name, batch_size)
    for _ in range(warmup):
        train_step(model, optimizer, next(batches))
    seconds = collections.defaultdict(float)
    instrument(seconds)
    start = time.perf_counter()
    for _ in range(steps):
        train_step(model, optimizer, next(batches))
    seconds['step'] = time.perf_counter() - start
    print(json.dumps({'ms': {k: 1000 * v / steps for k, v in seconds.items()}}))


def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--configs', default='small', help='comma-separated: ' + ', '.join(pretraining_step.CONFIGS))
    p.add_argument('--batch_sizes', default='',
                   help='comma-separated rows per step; default: each configuration\'s own (small: 128,32)')
    p.add_argument('--steps', type=int, default=20, help='timed steps per batch size')
    p.add_argument('--warmup', type=int, default=3, help='untimed steps first')
    p.add_argument('--threads', type=int, default=2, help='CPU threads')
    p.add_argument('--worker', help=argparse.SUPPRESS)
    a = p.parse_args()
    unknown = [n for n in a.configs.split(',') if n not in pretraining_step.CONFIGS]
    if unknown:
        raise InputError(f'--configs: unknown {", ".join(unknown)}; expected {", ".join(pretraining_step.CONFIGS)}')
    cpu_threads.set_threads(a.threads)
    if a.worker:
        return worker(a.worker, int(a.batch_sizes), a.steps, a.warmup)
    machine.print_machine_info()
    places.corpus_vocabulary(pretraining_step.VOCAB_SIZE)
    rows = []
    for name in a.configs.split(','):
        for batch_size in pretraining_step.batch_sizes(name, a.batch_sizes):
            r = worker_runs.run_worker([__file__, '--worker', name, '--batch_sizes', str(batch_size),
                                        '--steps', str(a.steps), '--warmup', str(a.warmup), '--threads', str(a.threads)],
                                       env=cpu_threads.thread_env(a.threads))
            ms = r['ms']
            rows += [{'config': f'{name}, {batch_size} rows', 'call': part, 'ms/step': t,
                      'of step': f'{t / ms["step"]:.1%}'}
                     for part, t in sorted(ms.items(), key=lambda kv: -kv[1])]
    markdown_tables.print_table(rows)


if __name__ == '__main__':
    run(main)
