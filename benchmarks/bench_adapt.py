"""Domain adaptation: the bundled model pretrained further on rt-polarity's own text.

    python benchmarks/bench_adapt.py                       # 5 and 15 minutes, both conditions
    python benchmarks/bench_adapt.py --minutes 5 15 --conditions fold1 --out_dir ../runs/adapt

Two conditions, on fold 1 of the 10 folds run_finetune.py uses (seed 1):
- fold1: the text is fold 1's training and dev sentences only (its test sentences unseen);
- all: every sentence of rt-polarity, labels unused (transductive: fold 1's test sentences are
  in the text the biLM adapts to).
For each, the vocabulary is the text's words (+ <S> </S> <UNK>) for a char model, the model's own
for a word or word + char model (its input table is tied to it), and:
1. the bundled biLM gets a softmax over that vocabulary, trained with the biLM frozen
   (run_pretrain.py --init_from_weights bundled --freeze_bilm, --softmax_minutes): "before";
2. the whole model then trains from there (--init_from_weights of that export: its softmax, a
   fresh optimizer, the budget recipe at its learning rate x --from_weights_lr_scale, 0.1 by
   default) for each budget of --minutes, resuming between budgets.
Reported: held-out perplexity on fold 1's test sentences (run_eval.py, full softmax) and frozen
ELMo + BoW accuracy on fold 1 (run_finetune.py --run_folds 1), before and after each budget (the
"softmax only" rows copy the bundled model's accuracy: their biLM is the bundled one, frozen). The
budgets are training minutes (run_pretrain.py --max_minutes): run it on an idle machine. Rows are
appended to OUT/results.jsonl; a table is printed at the end.
"""
import argparse
import json
import os
import shlex
import subprocess
import sys

import machine
import markdown_tables
import matmul_rates
import places

CONDITIONS = ('fold1', 'all')


def write_texts(out_dir):
    """OUT/fold1.txt, OUT/all.txt (the adaptation texts), OUT/heldout.txt (fold 1's test sentences)
    and a vocabulary per text, tokenized as run_finetune.py tokenizes them for the bundled model (moses)."""
    from paddle_elmo.classify.data import make_folds, read_polarity
    from paddle_elmo.text.vocabulary import build_vocabulary, write_vocabulary
    import collections
    data = read_polarity(places.RT_POLARITY, tokenizer='moses')
    fold = make_folds(data.labels, 10, seed=1)[0]
    texts = {'fold1': sorted(set(fold.train) | set(fold.dev)), 'all': range(len(data.sentences)),
             'heldout': fold.test}
    for name, indices in texts.items():
        with open(os.path.join(out_dir, f'{name}.txt'), 'w', encoding='utf-8') as f:
            f.writelines(' '.join(data.sentences[i]) + '\n' for i in indices)
        if name != 'heldout':
            counts = collections.Counter(t for i in indices for t in data.sentences[i])
            write_vocabulary(build_vocabulary(counts), os.path.join(out_dir, f'{name}.vocab.txt'))
    return {name: len(indices) for name, indices in texts.items()}


def run(command, argv, log):
    """`paddle-elmo COMMAND ARGV` (the checkout's package: `python -m` in its directory), its output appended to log."""
    cmd = [sys.executable, '-m', 'paddle_elmo', command] + [str(a) for a in argv]
    print(' '.join(cmd), flush=True)
    with open(log, 'a') as f:
        proc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, cwd=places.ROOT)
    if proc.returncode != 0:
        sys.exit(f'error: paddle-elmo {command} failed (exit {proc.returncode}); see {log}')


def last_checkpoint(save_dir):
    steps = [int(p[:-len('.pdparams')]) for p in os.listdir(save_dir) if p.endswith('.pdparams') and p[0].isdigit()]
    return os.path.join(save_dir, str(max(steps)))


def bundled_vocabulary(out_dir, condition):
    """The softmax's vocabulary: the text's words for a char model; a model that reads words keeps
    its own (its input table is tied to it: run_pretrain.py refuses another)."""
    from paddle_elmo.files.model_io import resolve_model
    bundled = resolve_model('bundled')
    if bundled.config.has_words:
        return bundled.own_vocabulary_file
    return os.path.join(out_dir, f'{condition}.vocab.txt')


def perplexity(ckpt, vocab, out_dir, log):
    out = os.path.join(out_dir, 'eval.json')
    run('eval', ['--dev_data_path', os.path.join(out_dir, '..', 'heldout.txt'), '--vocab_file', vocab,
                        '--init_from_ckpt', ckpt, '--output_json', out], log)
    with open(out) as f:
        return json.load(f)['perplexity']


def accuracy(model_flags, out_json, log):
    run('finetune', ['--data_dir', places.RT_POLARITY, '--folds', '10', '--run_folds', '1', '--seed', '1',
                            '--output_json', out_json, '--quiet'] + model_flags, log)
    with open(out_json) as f:
        return json.load(f)['fold_accuracies'][0]


def train_minutes(save_dir):
    import csv
    with open(os.path.join(save_dir, 'train_log.csv'), newline='') as f:
        rows = list(csv.DictReader(f))
    return float(rows[-1]['train_minutes']), int(rows[-1]['tokens'])


def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument('--minutes', type=float, nargs='+', default=[5.0, 15.0], help='adaptation budgets (cumulative)')
    p.add_argument('--softmax_minutes', type=float, default=2.0, help='the softmax alone, biLM frozen ("before")')
    p.add_argument('--conditions', nargs='+', choices=CONDITIONS, default=list(CONDITIONS))
    p.add_argument('--out_dir', default=os.path.join(places.ROOT, '..', 'runs', 'adapt'))
    p.add_argument('--threads', type=int, default=2, help='CPU threads of every step (the budgets are minutes)')
    p.add_argument('--adapt_flags', default='', help='more run_pretrain.py flags for the adaptation runs, e.g. '
                   '"--from_weights_lr_scale off" (the behaviour before issue 38)')
    a = p.parse_args()
    info, gflops = machine.start_run(a.out_dir, a.threads)
    sizes = write_texts(a.out_dir)
    log = os.path.join(a.out_dir, 'log.txt')
    results, rows = os.path.join(a.out_dir, 'results.jsonl'), []

    def record(row):
        row.update(date=info['date'], commit=info['commit'], matmul_gflops_start=round(gflops, 1))
        rows.append(row)
        with open(results, 'a') as f:
            f.write(json.dumps(row) + '\n')
        print(json.dumps(row), flush=True)

    before = accuracy([], os.path.join(a.out_dir, 'bundled.json'), log)  # the bundled model as it ships
    record({'condition': '-', 'stage': 'bundled model', 'minutes': 0, 'heldout_ppl': None, 'fold1_accuracy': before})
    common_flags = ['--preset', 'budget', '--seed', '1', '--epochs', '100000', '--save_freq', '1000000000',
                    '--log_freq', '50']
    for condition in a.conditions:
        d = os.path.join(a.out_dir, condition)
        text, vocab = os.path.join(a.out_dir, f'{condition}.txt'), bundled_vocabulary(a.out_dir, condition)
        data_flags = ['--train_data_path', text, '--vocab_file', vocab]
        softmax_dir, export_dir, adapt_dir = (os.path.join(d, n) for n in ('softmax', 'softmax_export', 'adapted'))
        run('pretrain', ['--init_from_weights', 'bundled', '--freeze_bilm', '--save_dir', softmax_dir,
                                '--max_minutes', a.softmax_minutes] + data_flags + common_flags, log)
        ckpt = last_checkpoint(softmax_dir)
        os.makedirs(d, exist_ok=True)
        # The accuracy is the bundled model's, copied, not measured again: the biLM is frozen here and the
        # classifier reads the biLM alone (the softmax never enters it), so the features are the same.
        record({'condition': condition, 'stage': 'softmax only (biLM as shipped)', 'minutes': 0,
                'tokens': train_minutes(softmax_dir)[1], 'heldout_ppl': perplexity(ckpt, vocab, d, log),
                'fold1_accuracy': before, 'fold1_accuracy_copied': True})
        run('export-weights', ['--init_from_ckpt', ckpt, '--output_dir', export_dir], log)
        done = 0.0
        for budget in a.minutes:
            flags = (['--init_from_weights', export_dir, '--save_dir', adapt_dir] + data_flags + common_flags +
                     shlex.split(a.adapt_flags) if done == 0 else ['--init_from_ckpt', last_checkpoint(adapt_dir)])
            run('pretrain', flags + ['--max_minutes', budget - done], log)
            done = budget
            ckpt = last_checkpoint(adapt_dir)
            minutes, tokens = train_minutes(adapt_dir)
            record({'condition': condition, 'stage': 'adapted', 'minutes': round(minutes, 2), 'tokens': tokens,
                    'heldout_ppl': perplexity(ckpt, vocab, d, log),
                    'fold1_accuracy': accuracy(['--init_from_ckpt', ckpt],
                                               os.path.join(d, f'finetune_{budget:g}min.json'), log)})
    print(f'float32 matmul rate at the end: {matmul_rates.measure_matmul_gflops():.1f} GFLOP/s')
    print(f'texts: {sizes}')
    markdown_tables.print_table([{k: r.get(k) for k in ('condition', 'stage', 'minutes', 'tokens', 'heldout_ppl',
                                               'fold1_accuracy')} for r in rows])


if __name__ == '__main__':
    main()
