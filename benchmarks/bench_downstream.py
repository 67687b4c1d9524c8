"""Downstream learning curve: classifier accuracy against pretraining tokens, ELMo vs word2vec.

    python benchmarks/bench_downstream.py --run_dir ../runs/long --steps 0 700 1400 2800 ...
    python benchmarks/bench_downstream.py --run_dir ../runs/long --steps 2800 --methods concat  # ELMo (+) word2vec
    python benchmarks/bench_downstream.py --run_dir ../runs/long --plot_only  # redraw from the rows there
    python benchmarks/bench_downstream.py --run_dir ../runs/zh-word --steps 9000 --methods elmo word2vec concat \
        --dataset zh-sentiment --word2vec_file ../runs/zh/w2v/zh-corpus-sg300.bin   # raw Chinese reviews

The data (--dataset): rt-polarity (English sentences, lm-corpus for the word2vec rows) or
zh-sentiment's online_shopping reviews (raw Chinese: the ELMo rows split them with the tokenizer
the biLM records, the word2vec rows with jieba, zh-corpus's segmenter; zh-corpus for word2vec).

For each checkpoint step S of a run_pretrain.py run (S = 0 is the random initialisation of the
same options and seed, written here), up to three rows (--methods) on the same 10 folds with the
same seed:
- elmo: frozen ELMo + BoW (run_finetune.py) from checkpoint S;
- word2vec: skip-gram trained on as many tokens of the same corpus as the biLM had seen at S
  (word2vec_base.py --train_max_tokens), + BoW;
- concat: ELMo (+) word2vec (run_finetune.py --word_vectors with that row's vectors),
  and its paired comparison with word2vec alone over the folds (mean difference, standard error,
  and the two-sided p of the corrected resampled t-test, the plain paired t-test and Wilcoxon's test:
  paired_folds.paired; the corrected test is the headline, as the folds share most of their training data).
With --word2vec_file the word2vec and concat rows use those vectors at every step instead (a biLM
whose word input started from whole-corpus vectors has seen them from step 0): the word2vec row is
computed once and stands beside every step.
Rows are appended to OUT/results.jsonl as they finish (an interrupted run keeps its rows and
skips them when started again); OUT/curve.csv and curve.png are rewritten after each row.
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
import paired_folds
import places
from paddle_elmo.fileio import atomic_path, write_csv_atomic

METHODS = ('elmo', 'word2vec', 'concat')
# name -> the classifier's data flags, the corpus the word2vec rows train on, word2vec_base's tokenizer
DATASETS = {
    'rt-polarity': dict(flags=['--data_dir', places.RT_POLARITY], corpus=os.path.join(places.LM_CORPUS, 'train.txt'),
                        tokenizer='whitespace'),
    'zh-sentiment': dict(flags=['--data_dir', places.ZH_SENTIMENT, '--pos_file', 'online_shopping.pos',
                                '--neg_file', 'online_shopping.neg'],
                         corpus=os.path.join(places.ZH_CORPUS, 'train.txt'), tokenizer='jieba'),
}
FIELDS = ['method', 'step', 'tokens', 'heldout_ppl', 'accuracy_mean', 'accuracy_std', 'paired_diff_vs_word2vec',
          'corrected_se', 'corrected_t_p', 'plain_t_p', 'wilcoxon_p', 'seconds']


def tokens_at(run_dir, step):
    """Training tokens seen at `step`: step x batch x unroll x ranks, as train_log.csv counts them."""
    if step == 0:
        return 0
    from paddle_elmo.files.run_configs import read_run_configs
    _, recipe = read_run_configs(run_dir)
    return step * recipe.batch_size * recipe.unroll_steps * recipe.world_size


def heldout_perplexities(run_dir):
    """{step: held-out perplexity}: from train_log.csv, and from RUN_DIR/heldout/STEP.json files that
    `run_eval.py --init_from_ckpt RUN_DIR/STEP --eval_max_tokens 51200 --output_json ...` wrote (the
    run's own layout of its evaluations)."""
    import csv
    import glob
    found = {}
    path = os.path.join(run_dir, 'train_log.csv')
    if os.path.exists(path):
        with open(path, newline='', encoding='utf-8') as f:
            found = {int(r['step']): float(r['dev_perplexity']) for r in csv.DictReader(f) if r.get('dev_perplexity')}
    for path in glob.glob(os.path.join(run_dir, 'heldout', '*.json')):
        step = os.path.splitext(os.path.basename(path))[0]
        if step.isdigit():
            with open(path, encoding='utf-8') as f:
                found.setdefault(int(step), json.load(f)['perplexity'])
    return found


def checkpoint_at(run_dir, step):
    """RUN_DIR/STEP, or RUN_DIR/final when the run ended at STEP (run_pretrain.py saves the last step
    only as `final`, e.g. when --max_steps stopped it there)."""
    from paddle_elmo.files.checkpoint_names import PARAMS_SUFFIX
    from paddle_elmo.files.checkpoints import saved_step
    prefix = os.path.join(run_dir, str(step))
    if os.path.exists(prefix + PARAMS_SUFFIX):
        return prefix
    final = os.path.join(run_dir, 'final')
    if os.path.exists(final + PARAMS_SUFFIX) and saved_step(final) == step:
        return final
    sys.exit(f'error: no checkpoint of step {step} in {run_dir}: neither {prefix}{PARAMS_SUFFIX} nor a '
             f'final{PARAMS_SUFFIX} saved at that step (its .pdopt says which step it is)')


def random_init_checkpoint(run_dir, out_dir, seed):
    """OUT/init/0: the run's options and the weights it starts from: its seed's, then its
    --weight_file's and --word_vectors' as paddle-elmo pretrain loads them."""
    from paddle_elmo.text.vocabulary import Vocabulary
    from paddle_elmo.train.lm import LanguageModel
    from paddle_elmo.train.lm_loading import load_weights_into
    from paddle_elmo.files.model_io import resolve_model
    from paddle_elmo.files.run_configs import read_run_configs, write_run_configs
    from paddle_elmo.train.initial_weights import init_word_embedding
    import paddle
    config, recipe = read_run_configs(run_dir)
    directory = os.path.join(out_dir, 'init')
    os.makedirs(directory, exist_ok=True)
    vocab = Vocabulary(recipe.vocab_file, config.max_characters_per_token)
    write_run_configs(directory, config, recipe, vocab)
    paddle.seed(seed)  # as run_pretrain.py seeds before building the model, then starts it from files
    model = LanguageModel(config, vocab.size, vocab=vocab if config.has_words else None)
    if recipe.init_weight_file:
        weights = resolve_model(recipe.init_options_file, recipe.init_weight_file)
        print(f'step 0: {load_weights_into(model, weights)[1]}', flush=True)
    if recipe.word_vectors:
        print(f'step 0: {init_word_embedding(model.bilm, recipe.word_vectors)}', flush=True)
    with atomic_path(os.path.join(directory, '0.pdparams')) as tmp:
        paddle.save(model.state_dict(), tmp)
    return os.path.join(directory, '0')


def run_protocol(script, extra, out_json, threads, dataset='rt-polarity', classifier_flags=()):
    data = DATASETS[dataset]
    data_flags = data['flags'] + (['--tokenizer', data['tokenizer']] if script == 'word2vec_base.py' else [])
    cmd = [sys.executable, os.path.join(places.ROOT, script), *data_flags, '--folds', '10', '--seed', '1',
           '--output_json', out_json, '--quiet', *classifier_flags] + extra
    print(' '.join(cmd), flush=True)
    env = {**os.environ, **cpu_threads.thread_env(threads)}
    start = time.time()
    proc = subprocess.run(cmd, env=env, cwd=places.ROOT, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f'error: {script} failed:\n{proc.stderr[-3000:]}')
    with open(out_json, encoding='utf-8') as f:
        summary = json.load(f)
    summary['wall_seconds'] = round(time.time() - start, 1)  # the script's whole run, incl. training vectors
    return summary


def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument('--run_dir', required=True, help='a run_pretrain.py --save_dir with STEP.pdparams checkpoints')
    p.add_argument('--steps', type=int, nargs='+', help='checkpoint steps (0: random init)')
    p.add_argument('--methods', nargs='+', choices=METHODS, default=['elmo', 'word2vec'],
                   help='rows to compute per step (concat: ELMo (+) word2vec; it trains the word2vec row\'s '
                   'vectors if they are not there yet)')
    p.add_argument('--out_dir', help='default: RUN_DIR/downstream (RUN_DIR/downstream-DATASET for another --dataset)')
    p.add_argument('--word2vec_file', help='word2vec vectors for the word2vec and concat rows at every step (default: '
                   'trained on as many tokens as the biLM had seen)')
    p.add_argument('--dataset', choices=sorted(DATASETS), default='rt-polarity',
                   help='the classification data (and the corpus the word2vec rows train on)')
    p.add_argument('--classifier_flags', default='',
                   help='more protocol flags for every row, e.g. "--run_folds 1 2 3 4 5 --batch_size 128 '
                   '--max_seq_len 128" (the same folds, fewer of them, fewer and shorter batches: for a large dataset)')
    p.add_argument('--threads', type=int, default=2)
    p.add_argument('--seed', type=int, default=1, help='the pretraining run\'s --seed (for step 0)')
    p.add_argument('--test_train_ratio', type=float, default=paired_folds.PROTOCOL_TEST_TRAIN_RATIO,
                   help='n_test / n_train of one fold for the corrected t-test of rows that do not record it '
                   '(rows record it since issue 36; default: the protocol\'s 10 folds with a 0.1 dev split, '
                   '1 / (9 x 0.9))')
    p.add_argument('--plot_only', action='store_true',
                   help='compute nothing: rewrite OUT/curve.csv and curve.png from OUT/results.jsonl')
    a = p.parse_args()
    if not a.steps and not a.plot_only:
        p.error('give --steps STEP [STEP ...] (or --plot_only to redraw the curve from the rows already computed)')
    out_dir = a.out_dir or os.path.join(a.run_dir, 'downstream' + ('' if a.dataset == 'rt-polarity' else
                                                                   f'-{a.dataset}'))
    results_path = os.path.join(out_dir, 'results.jsonl')
    done = []
    if os.path.exists(results_path):
        with open(results_path, encoding='utf-8') as f:
            done = [json.loads(line) for line in f if line.strip()]
    if a.plot_only:
        if not done:
            sys.exit(f'error: --plot_only: no rows in {results_path}')
        write_curve(done, out_dir, heldout_perplexities(a.run_dir), a.dataset, a.test_train_ratio)
        return
    # A row is skipped (or its word2vec row reused) by method and step alone: rows of another dataset
    # or protocol in the same file would be taken for this run's. (Rows before --dataset were rt-polarity's.)
    other = [r for r in done if (r.get('dataset', 'rt-polarity'), r.get('classifier_flags', '')) !=
             (a.dataset, a.classifier_flags)]
    if other:
        sys.exit(f'error: {results_path} holds rows of --dataset {other[0].get("dataset", "rt-polarity")} '
                 f'--classifier_flags "{other[0].get("classifier_flags", "")}"; give another --out_dir')
    os.makedirs(out_dir, exist_ok=True)
    cpu_threads.set_threads(a.threads)
    machine.print_machine_info()
    print(f'float32 matmul rate: {matmul_rates.measure_matmul_gflops():.1f} GFLOP/s', flush=True)
    have = {(r['method'], r['step']) for r in done}
    corpus = DATASETS[a.dataset]['corpus']
    flags = shlex.split(a.classifier_flags)
    for step in a.steps:
        tokens = tokens_at(a.run_dir, step)
        ckpt = random_init_checkpoint(a.run_dir, out_dir, a.seed) if step == 0 else checkpoint_at(a.run_dir, step)
        vectors = a.word2vec_file or os.path.join(out_dir, f'w2v-{tokens}.bin')
        rows = {}
        want_vectors = tokens > 0 and ('word2vec' in a.methods or 'concat' in a.methods)
        fixed = [r for r in done if r['method'] == 'word2vec' and a.word2vec_file and r.get('vectors') == vectors]
        if want_vectors and ('word2vec', step) not in have and fixed:  # the same vectors: the same row
            rows['word2vec'] = {k: fixed[0][k] for k in ('accuracy_mean', 'accuracy_std', 'fold_accuracies')}
            rows['word2vec']['wall_seconds'] = 0.0
        elif a.word2vec_file and 'word2vec' in a.methods and tokens > 0 and ('word2vec', step) not in have:
            rows['word2vec'] = run_protocol('word2vec_base.py', ['--word_vectors', vectors],
                                            os.path.join(out_dir, f'word2vec-{step}.json'), a.threads, a.dataset, flags)
        elif want_vectors and not a.word2vec_file and ('word2vec', step) not in have:
            rows['word2vec'] = run_protocol('word2vec_base.py', [
                '--train_data_path', corpus, '--train_max_tokens', str(tokens), '--output_word_vectors', vectors,
                '--cpu_threads', str(a.threads)], os.path.join(out_dir, f'word2vec-{step}.json'), a.threads, a.dataset,
                flags)
        if 'elmo' in a.methods and ('elmo', step) not in have:
            rows['elmo'] = run_protocol('run_finetune.py', ['--init_from_ckpt', ckpt],
                                        os.path.join(out_dir, f'elmo-{step}.json'), a.threads, a.dataset, flags)
        if 'concat' in a.methods and ('elmo+word2vec', step) not in have and tokens > 0:
            rows['elmo+word2vec'] = run_protocol('run_finetune.py', ['--init_from_ckpt', ckpt, '--word_vectors',
                                                                    vectors],
                                                 os.path.join(out_dir, f'concat-{step}.json'), a.threads, a.dataset, flags)
        for method, summary in rows.items():
            row = {'method': method, 'step': step, 'tokens': tokens, 'accuracy_mean': summary['accuracy_mean'],
                   'accuracy_std': summary['accuracy_std'], 'fold_accuracies': summary['fold_accuracies'],
                   'seconds': summary['wall_seconds'], 'threads': a.threads, 'commit': machine.git_commit(),
                   'vectors': vectors if method != 'elmo' else None, 'dataset': a.dataset,
                   'classifier_flags': a.classifier_flags,
                   'test_train_ratio': paired_folds.recorded_test_train_ratio(summary),
                   'date': time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}
            done.append(row)
            with open(results_path, 'a', encoding='utf-8') as f:
                f.write(json.dumps(row) + '\n')
        write_curve(done, out_dir, heldout_perplexities(a.run_dir), a.dataset, a.test_train_ratio)


def _rounded(value, digits):
    return None if value is None else round(value, digits)


def vs_word2vec(row, w2v, test_train_ratio):
    """The curve's paired columns of one row against the word2vec row of its step.

    # Parameters

    row, w2v : `dict`
        Rows of results.jsonl (w2v: None when the step has no word2vec row).
    test_train_ratio : `float`
        n_test / n_train of one fold, for rows that do not record it.

    # Returns

    `dict`
        paired_diff_vs_word2vec, corrected_se (the corrected test's), corrected_t_p (the headline), plain_t_p, wilcoxon_p:
        None for the word2vec row itself and where there is nothing to compare with.
    """
    if row['method'] == 'word2vec' or w2v is None:
        return dict.fromkeys(('paired_diff_vs_word2vec', 'corrected_se', 'corrected_t_p', 'plain_t_p', 'wilcoxon_p'))
    c = paired_folds.paired(row['fold_accuracies'], w2v['fold_accuracies'],
                      paired_folds.comparison_test_train_ratio((row, w2v), test_train_ratio))
    return {'paired_diff_vs_word2vec': _rounded(c.mean, 4), 'corrected_se': _rounded(c.corrected_se, 4),
            'corrected_t_p': _rounded(c.corrected_p, 4), 'plain_t_p': _rounded(c.plain_p, 4),
            'wilcoxon_p': _rounded(c.wilcoxon_p, 4)}


def write_curve(rows, out_dir, perplexities, dataset, test_train_ratio=paired_folds.PROTOCOL_TEST_TRAIN_RATIO):
    by_key = {(r['method'], r['step']): r for r in rows}
    table = []
    for r in sorted(rows, key=lambda r: (r['step'], r['method'])):
        ppl = perplexities.get(r['step']) if r['method'] != 'word2vec' else None
        table.append({'method': r['method'], 'step': r['step'], 'tokens': r['tokens'],
                      'heldout_ppl': None if ppl is None else round(ppl, 1),
                      'accuracy_mean': round(r['accuracy_mean'], 4), 'accuracy_std': round(r['accuracy_std'], 4),
                      **vs_word2vec(r, by_key.get(('word2vec', r['step'])), test_train_ratio),
                      'seconds': r.get('seconds')})
    write_csv_atomic(os.path.join(out_dir, 'curve.csv'), FIELDS, table)
    markdown_tables.print_table(table)
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4))
    for method in ('elmo', 'word2vec', 'elmo+word2vec'):
        points = sorted((r['tokens'], r['accuracy_mean'], r['accuracy_std']) for r in rows if r['method'] == method)
        if points:
            xs, ys, errs = zip(*points)
            ax.errorbar([x / 1e6 for x in xs], ys, yerr=errs, marker='o', capsize=3, label=method)
    ax.set_xlabel('pretraining tokens (millions)')
    ax.set_ylabel(f'{dataset} accuracy (10-fold mean)')
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    with atomic_path(os.path.join(out_dir, 'curve.png')) as tmp:
        fig.savefig(tmp, dpi=100)
    plt.close(fig)


if __name__ == '__main__':
    main()
