"""Time to quality: pretrain from scratch for a budget of minutes or of steps, then held-out perplexity.

    python benchmarks/bench_quality.py --preset budget                      # 60 minutes, 2 threads
    python benchmarks/bench_quality.py --preset small --minutes 20 --label small-20
    python benchmarks/bench_quality.py --preset budget --ranks 2 -- --lr 0.3   # flags after -- go to run_pretrain.py
    python benchmarks/bench_quality.py --steps 1500 --label cosine -- --lr_decay cosine   # recipes at equal steps

The comparable figure, whatever the recipe: lm-corpus `heldout.txt` (or --corpus DIR's), the
vocabulary of the 100k most frequent words of `train.txt` plus <S> </S> <UNK>, full softmax, the first 51,200 targets in
run_eval.py's 64x20 layout; forward, backward and mean (exp of the mean loss, bilm-tf's figure).
The budget counts training time only (run_pretrain.py --max_minutes: evaluation and saving are
not counted). Held-out perplexity is also taken every --eval_minutes, which gives the curve.

Prints the tokens seen, tokens/s and the matmul rate at start and end (this VM's speed drifts), and
writes to --out_dir: the run's checkpoint and logs, curve.csv (minutes, tokens, perplexities) and
curve.png (perplexity vs minutes and vs tokens); appends a summary line to --results (JSON lines).
"""
import argparse
import csv
import json
import os
import subprocess
import sys
import time

import cpu_threads
import machine
import markdown_tables
import matmul_rates
import places
from paddle_elmo.fileio import atomic_path, write_csv_atomic

VOCAB_SIZE, EVAL_TOKENS = 100_000, 51_200
CURVE_FIELDS = ['train_minutes', 'tokens', 'step', 'dev_forward_perplexity', 'dev_backward_perplexity',
                'dev_perplexity']


def pretrain_command(a, vocab, save_dir, extra):
    script = os.path.join(places.ROOT, 'run_pretrain.py')
    launch = [sys.executable]
    if a.ranks > 1:
        launch += ['-m', 'paddle.distributed.launch', '--nproc_per_node', str(a.ranks),
                   '--log_dir', os.path.join(save_dir, 'launch_logs')]
    return launch + [script, '--preset', a.preset, '--train_data_path', os.path.join(a.corpus, 'train.txt'),
                     '--vocab_file', vocab, '--dev_data_path', os.path.join(a.corpus, 'heldout.txt'),
                     '--save_dir', save_dir, *budget_flags(a),
                     '--eval_max_tokens', str(EVAL_TOKENS), '--epochs', '100', '--save_freq', '1000000000',
                     '--log_freq', '50', '--seed', str(a.seed), *extra]


def budget_flags(a):
    """run_pretrain.py's flags for the budget: --steps (a fixed number of updates, held-out perplexity
    every --eval_steps and at the end) or --minutes (of training time, every --eval_minutes)."""
    if a.steps:
        return ['--max_steps', str(a.steps), '--eval_freq', str(a.eval_steps or a.steps)]
    return ['--max_minutes', str(a.minutes), '--eval_minutes', str(a.eval_minutes)]


def read_curve(save_dir):
    """Rows of train_log.csv that carry a held-out figure (the last one is the final evaluation)."""
    with open(os.path.join(save_dir, 'train_log.csv'), newline='') as f:
        rows = list(csv.DictReader(f))
    return [{k: r[k] for k in CURVE_FIELDS} for r in rows if r.get('dev_perplexity')], rows


def write_curve(curve, out_dir, label):
    write_csv_atomic(os.path.join(out_dir, 'curve.csv'), CURVE_FIELDS, curve)
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    for ax, key, xlabel, scale in ((axes[0], 'train_minutes', 'training minutes', 1),
                                   (axes[1], 'tokens', 'training tokens (millions)', 1e6)):
        xs = [float(r[key]) / scale for r in curve]
        for field, name in (('dev_forward_perplexity', 'forward'), ('dev_backward_perplexity', 'backward'),
                            ('dev_perplexity', 'mean')):
            ax.plot(xs, [float(r[field]) for r in curve], marker='o', markersize=3, label=name)
        ax.set_xlabel(xlabel)
        ax.grid(True, which='both', alpha=0.3)
    axes[0].set_ylabel('held-out perplexity (full softmax, 51,200 targets)')
    axes[0].set_yscale('log')
    axes[0].legend()
    fig.suptitle(label)
    fig.tight_layout()
    with atomic_path(os.path.join(out_dir, 'curve.png')) as tmp:
        fig.savefig(tmp, dpi=100)
    plt.close(fig)


def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument('--preset', default='budget', help='run_pretrain.py --preset')
    p.add_argument('--minutes', type=float, default=60.0, help='training budget (wall-clock training minutes)')
    p.add_argument('--eval_minutes', type=float, help='held-out evaluation every this many training minutes '
                   '(default: a quarter of the budget; each takes ~2 minutes at 50 GFLOP/s, not counted)')
    p.add_argument('--steps', type=int, default=0,
                   help='a fixed number of training steps instead of --minutes (0: --minutes): the figure that '
                   'compares recipes apart from the machine\'s speed')
    p.add_argument('--eval_steps', type=int, default=0, help='with --steps: held-out evaluation every this many '
                   'steps (0: at the end only)')
    p.add_argument('--threads', type=int, default=2, help='CPU threads in all (split among the ranks)')
    p.add_argument('--ranks', type=int, default=1, help='processes under paddle.distributed.launch')
    p.add_argument('--seed', type=int, default=1)
    p.add_argument('--corpus', default=places.LM_CORPUS,
                   help='directory with train.txt and heldout.txt, segmented (tokens split by spaces), e.g. '
                   '../shared/data/zh-corpus; the vocabulary is its train.txt\'s 100k most frequent words')
    p.add_argument('--label', help='name of the run (default: the preset and the extra flags)')
    p.add_argument('--out_dir', help='checkpoints and curve (default: ../runs/quality/LABEL)')
    p.add_argument('--results', default=os.path.join(places.ROOT, '..', 'runs', 'quality', 'results.jsonl'),
                   help='summary lines are appended here')
    p.add_argument('extra', nargs='*', help='after --: more run_pretrain.py flags (they override the preset)')
    a = p.parse_args()
    a.eval_minutes = a.eval_minutes or a.minutes / 4
    label = a.label or ' '.join([a.preset, f'ranks={a.ranks}'] + a.extra)
    out_dir = a.out_dir or os.path.join(places.ROOT, '..', 'runs', 'quality',
                                        ''.join(c if c.isalnum() or c in '-_.=' else '_' for c in label))
    if os.path.exists(os.path.join(out_dir, 'train_log.csv')):
        sys.exit(f'error: {out_dir} already holds a run; give another --label or --out_dir')
    os.makedirs(out_dir, exist_ok=True)
    cpu_threads.set_threads(a.threads)
    info = machine.machine_info()
    machine.print_machine_info(info)
    vocab = places.corpus_vocabulary(VOCAB_SIZE, a.corpus)
    gflops_start = matmul_rates.measure_matmul_gflops()
    print(f'float32 matmul rate at the start: {gflops_start:.1f} GFLOP/s ({a.threads} threads)', flush=True)
    env = {**os.environ, **cpu_threads.thread_env(max(1, a.threads // a.ranks)), 'PYTHONUNBUFFERED': '1'}
    cmd = pretrain_command(a, vocab, out_dir, a.extra)
    print(' '.join(cmd), flush=True)
    t0 = time.time()
    with open(os.path.join(out_dir, 'pretrain.log'), 'w') as log:
        code = subprocess.call(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=places.ROOT)
    wall = time.time() - t0
    gflops_end = matmul_rates.measure_matmul_gflops()
    if code != 0:
        sys.exit(f'error: run_pretrain.py failed (exit {code}); see {os.path.join(out_dir, "pretrain.log")}')
    curve, rows = read_curve(out_dir)
    write_curve(curve, out_dir, label)
    last, final = rows[-1], curve[-1]
    minutes, tokens = float(last['train_minutes']), int(last['tokens'])
    summary = {'label': label, 'preset': a.preset, 'extra': a.extra, 'ranks': a.ranks, 'threads': a.threads,
               'budget_minutes': None if a.steps else a.minutes, 'budget_steps': a.steps or None, 'train_minutes': minutes, 'wall_minutes': round(wall / 60, 2),
               'steps': int(last['step']), 'tokens': tokens, 'tokens_per_s': round(tokens / (minutes * 60)),
               'dev_forward_perplexity': float(final['dev_forward_perplexity']),
               'dev_backward_perplexity': float(final['dev_backward_perplexity']),
               'dev_perplexity': float(final['dev_perplexity']),
               'matmul_gflops_start': round(gflops_start, 1), 'matmul_gflops_end': round(gflops_end, 1),
               'out_dir': os.path.abspath(out_dir), **{k: info[k] for k in ('date', 'commit', 'cpu_kernels', 'mkl')}}
    markdown_tables.print_table([{k: summary[k] for k in ('label', 'train_minutes', 'tokens', 'tokens_per_s',
                                                 'dev_forward_perplexity', 'dev_backward_perplexity',
                                                 'dev_perplexity', 'matmul_gflops_start', 'matmul_gflops_end')}])
    os.makedirs(os.path.dirname(os.path.abspath(a.results)), exist_ok=True)
    with open(a.results, 'a') as f:
        f.write(json.dumps(summary) + '\n')
    print(f'curve: {os.path.join(out_dir, "curve.csv")}, {os.path.join(out_dir, "curve.png")}')


if __name__ == '__main__':
    main()
