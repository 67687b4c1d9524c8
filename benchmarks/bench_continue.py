"""Continuing from released weights (issue 38): held-out perplexity of an export with its softmax,
then after N steps of `run_pretrain.py --init_from_weights EXPORT` (a new run, a fresh optimizer)
under each variant of flags.

    python benchmarks/bench_continue.py --export ../runs/adapt38/export --train_data_path ../runs/adapt38/train.txt \
        --vocab_file ../runs/adapt38/vocab.txt --heldout same=../runs/adapt38/heldout.txt \
        --variant off='--from_weights_lr_scale off' --variant default= --steps 5 50 500

Each variant is one run: trained to the first --steps figure, then resumed (bit-exact) to the next,
so the 50-step weights are the ones a 50-step run would have. After each stage every --heldout file
is evaluated with the full softmax (run_eval.py, the whole file). One thread unless --threads; the
float32 matmul rate is measured at the start and the end. Rows go to OUT/results.jsonl.
"""
import argparse
import json
import os
import shlex
import subprocess
import sys
import time

import cpu_threads
import machine
import markdown_tables
import matmul_rates
import places


def run(script, argv, log, threads):
    cmd = [sys.executable, os.path.join(places.ROOT, script)] + [str(a) for a in argv]
    with open(log, 'a') as f:
        f.write('$ ' + ' '.join(cmd) + '\n')
        f.flush()
        proc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, cwd=places.ROOT,
                              env={**os.environ, **cpu_threads.thread_env(threads)})
    if proc.returncode != 0:
        sys.exit(f'error: {script} failed (exit {proc.returncode}); see {log}')


def perplexity(model_flags, heldout, vocab, out_json, log, threads):
    run('run_eval.py', ['--dev_data_path', heldout, '--vocab_file', vocab, '--cpu_threads', threads,
                        '--output_json', out_json] + model_flags, log, threads)
    with open(out_json) as f:
        return json.load(f)['perplexity']


def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument('--export', required=True, help='options.json + weights.hdf5 with a softmax over --vocab_file')
    p.add_argument('--train_data_path', required=True, help='the text the continuation trains on')
    p.add_argument('--vocab_file', required=True)
    p.add_argument('--heldout', action='append', required=True, help='NAME=FILE, evaluated after each stage')
    p.add_argument('--variant', action='append', required=True,
                   help="NAME=FLAGS: run_pretrain.py flags of one variant (shell-quoted; empty: the defaults)")
    p.add_argument('--steps', type=int, nargs='+', default=[5, 50, 500])
    p.add_argument('--common_flags', default='--seed 1 --save_freq 1000000000 --log_freq 25',
                   help='run_pretrain.py flags of every variant')
    p.add_argument('--threads', type=int, default=1)
    p.add_argument('--out_dir', required=True)
    a = p.parse_args()
    info, gflops = machine.start_run(a.out_dir, a.threads)
    log, results = os.path.join(a.out_dir, 'log.txt'), os.path.join(a.out_dir, 'results.jsonl')
    heldouts = [h.split('=', 1) for h in a.heldout]
    rows = []

    def record(row):
        row.update(date=info['date'], commit=info['commit'], cpu=info['cpu'], threads=a.threads,
                   matmul_gflops_start=round(gflops, 1), load_average=machine.load_average())
        rows.append(row)
        with open(results, 'a') as f:
            f.write(json.dumps(row) + '\n')
        print(json.dumps(row), flush=True)

    export_flags = ['--options_file', os.path.join(a.export, 'options.json'),
                    '--weight_file', os.path.join(a.export, 'weights.hdf5')]
    record({'variant': '-', 'steps': 0, **{f'ppl_{name}': round(perplexity(
        export_flags, path, a.vocab_file, os.path.join(a.out_dir, 'eval.json'), log, a.threads), 2)
        for name, path in heldouts}})
    for variant in a.variant:
        name, flags = variant.split('=', 1)
        save_dir = os.path.join(a.out_dir, name)
        done = 0
        for steps in a.steps:
            t0 = time.time()
            if done == 0:
                argv = (['--init_from_weights', a.export, '--train_data_path', a.train_data_path, '--vocab_file',
                         a.vocab_file, '--save_dir', save_dir, '--cpu_threads', a.threads] +
                        shlex.split(a.common_flags) + shlex.split(flags))
            else:
                argv = ['--init_from_ckpt', os.path.join(save_dir, 'final'), '--cpu_threads', a.threads]
            run('run_pretrain.py', argv + ['--max_steps', steps], log, a.threads)
            seconds = time.time() - t0
            done = steps
            ckpt = ['--init_from_ckpt', os.path.join(save_dir, 'final')]
            record({'variant': name, 'flags': flags, 'steps': steps, 'stage_seconds': round(seconds, 1),
                    **{f'ppl_{h}': round(perplexity(ckpt, path, a.vocab_file, os.path.join(save_dir, 'eval.json'),
                                                    log, a.threads), 2) for h, path in heldouts}})
    print(f'float32 matmul rate at the end: {matmul_rates.measure_matmul_gflops():.1f} GFLOP/s', flush=True)
    markdown_tables.print_table([{k: r.get(k) for k in ['variant', 'steps'] + [f'ppl_{h}' for h, _ in heldouts]}
                        for r in rows])


if __name__ == '__main__':
    main()
