"""Every measured figure README.md and BENCHMARKS.md quote, checked against the raw file it comes from
(`make check-docs`).

Each row of FIGURES (README's) and BENCHMARKS_FIGURES is a sentence of its document with its figures as
placeholders, the raw file(s) they come from (in benchmarks/results/, the package's own files, or
../shared/measurements for a machine whose raw files the repository does not copy) and how each figure
is read from them, rounded as the document rounds it: the row fails when the document and its file
disagree, whichever changed. `benchmarks/results/readme_2026-11-27/run.sh` made the raw files of the figures that had
none. A figure-like number in a document's text that no row covers fails too, unless its NOT_MEASURED
list names it (a version, a setting, a property of a published file): a new figure comes with its file.
"""
import csv
import dataclasses
import functools
import json
import os
import re
import sys
from dataclasses import dataclass
from typing import Callable

import pytest

from conftest import ROOT
import doc_figures_benchmarks
from helpers import benchmark_module

RESULTS = os.path.join(ROOT, 'benchmarks', 'results')


# ---- reading raw files ----------------------------------------------------------------------------

def raw(path):
    return os.path.join(RESULTS, path)


def json_file(path):
    with open(raw(path), encoding='utf-8') as f:
        return json.load(f)


def jsonl_row(path, **match):
    """The one row of a .jsonl file whose keys have the given values."""
    with open(raw(path), encoding='utf-8') as f:
        rows = [row for row in map(json.loads, filter(str.strip, f)) if all(row.get(k) == v for k, v in match.items())]
    assert len(rows) == 1, f'{path}: {len(rows)} rows match {match}'
    return rows[0]


def jsonl_rows(path, **match):
    with open(raw(path), encoding='utf-8') as f:
        return [row for row in map(json.loads, filter(str.strip, f)) if all(row.get(k) == v for k, v in match.items())]


def csv_rows(path):
    with open(raw(path), encoding='utf-8') as f:
        return list(csv.DictReader(f))


@functools.lru_cache(maxsize=None)
def paired_test():
    """benchmarks/paired_folds.paired: the corrected paired test every p of the documents comes from."""
    return benchmark_module('paired_folds').paired


def compare(a, b):
    """Row a against row b (each with its fold_accuracies, the same folds) -> paired_folds.paired's
    comparison: mean difference, corrected standard error, folds better, corrected p."""
    return paired_test()(a['fold_accuracies'], b['fold_accuracies'])


def points(x):
    return 100 * x


MODEL_FILES = 'paddle_elmo/{}/: options.json + weights.hdf5 + vocab.txt'


def model_size(directory):
    """{'mb': size in MB (10^6 bytes)} of a packaged model's files (MODEL_FILES)."""
    return {'mb': sum(os.path.getsize(os.path.join(ROOT, 'paddle_elmo', directory, name))
                      for name in ('options.json', 'weights.hdf5', 'vocab.txt')) / 1e6}


def p_text(p):
    """A p-value as README writes it: two significant digits (0.10, 0.095), one below 0.01 (0.002,
    0.0003), '< 0.0001' below that."""
    return '< 0.0001' if p < 1e-4 else f'{p:.1g}' if p < 0.01 else f'{p:#.2g}'


# ---- the figures ----------------------------------------------------------------------------------

@dataclass
class Figure:
    name: str
    text: str                    # README's words, its figures as str.format fields (whitespace as one space)
    source: str                  # the raw file(s) and where in them
    values: Callable[[], dict]   # the fields, read from the source
    document: str = 'README.md'  # the document that quotes it


def predict_top():
    top = json_file('readme_2026-11-27/predict_bundled.json')['predictions'][0]['top']
    return {f'w{i}': t['word'] for i, t in enumerate(top[:3])} | {f'p{i}': t['prob'] for i, t in enumerate(top[:3])}


def bundled_rows():
    """rt-polarity on the shipped weights (the model cards' run of 2026-11-29); its tokens: its two training runs."""
    d = 'bundled_further_2026-11-26/'
    elmo, w2v, concat = (json_file(f'cards_2026-11-29/rt_{f}.json') for f in ('elmo', 'word2vec', 'concat'))
    vs_w2v, concat_vs = compare(elmo, w2v), compare(concat, w2v)
    tokens = (int(csv_rows('bundled_2026-11-25/train_log.csv')[-1]['tokens'])
              + int(csv_rows(d + 'train_log.csv')[-1]['tokens']))
    return {'elmo': elmo['accuracy_mean'], 'w2v': w2v['accuracy_mean'], 'p': p_text(vs_w2v.corrected_p),
            'concat_diff': points(concat_vs.mean), 'concat_p': p_text(concat_vs.corrected_p), 'tokens': tokens / 1e6}


def bundled_finetuning():
    d = 'bundled_2026-11-25/'
    trainable = json_file(d + 'trainable-step10355.json')
    frozen, w2v = json_file(d + 'elmo-step10355.json'), json_file(d + 'word2vec128.json')
    over_frozen, vs_w2v = compare(trainable, frozen), compare(trainable, w2v)
    step = next(r for r in csv_rows(d + 'train_log.csv') if r['step'] == '10355')
    minutes = [s / 60 for s in trainable['fold_seconds']]
    return {'tokens': int(step['tokens']) / 1e6, 'gain': points(over_frozen.mean), 'gain_se': points(over_frozen.corrected_se),
            'better': over_frozen.better, 'gain_p': p_text(over_frozen.corrected_p), 'below': -points(vs_w2v.mean),
            'below_se': points(vs_w2v.corrected_se), 'below_p': p_text(vs_w2v.corrected_p),
            'min_minutes': min(minutes), 'max_minutes': max(minutes)}


def one_epoch_char():
    path = 'long_run_2026-11-23/downstream_results.jsonl'
    elmo, w2v, concat = (jsonl_row(path, method=m, step=18415) for m in ('elmo', 'word2vec', 'elmo+word2vec'))
    c = compare(concat, w2v)
    return {'tokens': elmo['tokens'] / 1e6, 'minutes': float(csv_rows('long_run_2026-11-23/long_run_train_log.csv')[-1]['train_minutes']),
            'elmo': elmo['accuracy_mean'], 'w2v': w2v['accuracy_mean'], 'diff': points(c.mean),
            'se': points(c.corrected_se), 'p': p_text(c.corrected_p)}


def word300():
    path, run = 'word_3h_2026-11-25/downstream_word_3h_2026-11-25.jsonl', 'budget-word300-w2v-frozen-3h'
    mixes = sorted(jsonl_rows(path, run=run, method='elmo', elmo_layer='mix'), key=lambda r: r['tokens'])
    w2v, concat = jsonl_row(path, run=run, method='word2vec'), jsonl_row(path, run=run, method='concat')
    last, accuracies = mixes[-1], [r['accuracy_mean'] for r in mixes]
    below, concat_vs = compare(w2v, last), compare(concat, w2v)
    return {'low': min(accuracies), 'high': max(accuracies), 'first_tokens': mixes[0]['tokens'] / 1e6,
            'last_tokens': last['tokens'] / 1e6, 'least_below': points(w2v['accuracy_mean'] - max(accuracies)),
            'most_below': points(w2v['accuracy_mean'] - min(accuracies)), 'last_p': p_text(below.corrected_p),
            'concat_diff': points(concat_vs.mean), 'concat_p': p_text(concat_vs.corrected_p)}


def bundled_zh():
    d = 'bundled_zh_2026-11-27/'
    elmo, w2v, concat = (json_file(d + f) for f in ('elmo.json', 'word2vec.json', 'concat.json'))
    e, c = compare(elmo, w2v), compare(concat, w2v)
    return {'elmo': elmo['accuracy_mean'], 'w2v': w2v['accuracy_mean'], 'elmo_diff': points(e.mean),
            'elmo_p': p_text(e.corrected_p), 'concat': concat['accuracy_mean'], 'concat_diff': points(c.mean),
            'concat_better': c.better, 'concat_p': p_text(c.corrected_p)}


def zh_news():
    path = 'zh_2026-11-24/downstream_zh_sentiment_2026-11-25.jsonl'
    w2v, elmo, concat = (jsonl_row(path, method=m, step=17990) for m in ('word2vec', 'elmo', 'elmo+word2vec'))
    layer0 = jsonl_row('zh_2026-11-24/downstream_zh_concat_layer0_2026-11-25.jsonl', method='elmo+word2vec')
    e, c, l0 = compare(elmo, w2v), compare(concat, w2v), compare(layer0, w2v)
    return {'w2v': w2v['accuracy_mean'], 'elmo': elmo['accuracy_mean'], 'elmo_worse': 10 - e.better,
            'elmo_p': p_text(e.corrected_p), 'concat': concat['accuracy_mean'], 'concat_diff': points(c.mean),
            'concat_se': points(c.corrected_se), 'concat_better': c.better, 'concat_p': p_text(c.corrected_p),
            'layer0_diff': points(l0.mean), 'layer0_p': p_text(l0.corrected_p)}


def int8_check(name):
    check = json_file(f'readme_2026-11-27/{name}')['verified']['onnxruntime int8']
    return check['min_cosine'], check['min_cosine_per_layer']


def int8_checks():
    (own, own_layers), (rt, rt_layers) = (int8_check(n) for n in ('int8_bundled_heldout_sample.json',
                                                                  'int8_bundled_rt_polarity_1000.json'))
    return {'own': own, 'own1': own_layers[1], 'own2': own_layers[2], 'rt1': rt_layers[1], 'rt2': rt_layers[2]}


def int8_speed():
    d = json_file('export_int8_2026-11-25/export_int8_2026-11-25.json')  # the AMD EPYC VM with AVX2
    row = {r['runtime']: r for r in d['speed'] if r['model'] == 'original'}
    agreement = next(a for a in d['agreement'] if a['model'] == 'original')
    avx512 = json_file('speed55_paths_2026-11-27/export_int8.json')  # the AMD EPYC VM with AVX-512, MKL's AVX-512 path
    row512 = {r['runtime']: r for r in avx512['speed'] if r['model'] == 'original'}
    return {'speedup': row['onnx int8']['x library'], 'speedup512': row512['onnx int8']['x library'],
            'cosine': min(agreement[f'layer {k} cos min'] for k in range(3)),
            'int8_mb': row['onnx int8']['model.onnx MB'], 'float_mb': row['onnx float32']['model.onnx MB']}


def int8_downstream():
    int8, float32 = (json_file(f'int8_downstream_2026-11-25/{n}.json') for n in ('int8', 'float32'))
    return {'int8': int8['accuracy_mean'], 'float32': float32['accuracy_mean'],
            'p': p_text(compare(int8, float32).corrected_p)}


def unigram_prior():
    """The budget preset's softmax bias from the unigram prior, and the recipe for the most per token,
    against the preset before (a zero bias), two seeds at 1,500 steps, one at 6,000."""
    path = 'recipe45_2026-11-26/results.jsonl'

    def ppl(*labels):
        return sum(jsonl_row(path, label=label)['dev_perplexity'] for label in labels) / len(labels)
    before, before_6k = ppl('r0-base', 'r19-base-seed2'), ppl('r0-6k-base')
    return {'prior': 100 * (1 - ppl('r27-base-unigram', 'r28-base-unigram-seed2') / before),
            'prior_6k': 100 * (1 - ppl('r29-6k-base-unigram') / before_6k),
            'recipe': 100 * (1 - ppl('r26-unigram', 'r26-unigram-seed2') / before),
            'recipe_6k': 100 * (1 - ppl('r26-6k') / before_6k)}


def word_per_token():
    word = csv_rows('word_input_2026-11-24/quality_budget_word_w2v_60min_curve.csv')[1]  # the 30-minute evaluation
    char = csv_rows('long_run_2026-11-23/long_run_train_log.csv')[-1]  # the one-epoch char run's end
    return {'word': float(word['dev_perplexity']), 'word_tokens': int(word['tokens']) / 1e6,
            'char': float(char['dev_perplexity']), 'char_tokens': int(char['tokens']) / 1e6}


def budget_hour():
    last = csv_rows('quality_fastpath_2026-11-24/quality_budget_60min_fastpath_curve.csv')[-1]
    return {'ppl': float(last['dev_perplexity']), 'tokens': int(last['tokens']) / 1e6}


def install_sizes():
    sizes = json_file('readme_2026-11-27/install_sizes.json')['site_packages_mb']
    return {'venv': sizes['a new venv (pip, setuptools)'], 'core': sizes['core'], 'serve': sizes['serve'],
            'cpu': sizes['cpu']}


def unknown_share():
    from paddle_elmo.use.languages import UNKNOWN_WARNING_SHARE
    return {'share': 100 * UNKNOWN_WARNING_SHARE}


def int8_threshold():
    from paddle_elmo.export.export_checks import INT8_MIN_COSINE
    return {'cosine': INT8_MIN_COSINE}


SIZES = 'readme_2026-11-27/install_sizes.json: site_packages_mb (benchmarks/install_sizes.py)'
FIGURES = [
    Figure('install sizes: a new venv', 'each includes the {venv} MB of pip and setuptools', SIZES, install_sizes),
    Figure('install sizes: the core', '| numpy, h5py, tqdm, sacremoses, pooch | {core:,} MB |', SIZES, install_sizes),
    Figure('install sizes: [serve]', '| onnxruntime | {serve:,} MB |', SIZES, install_sizes),
    Figure('install sizes: [cpu]', 'and `[onnx]` | {cpu:,} MB |', SIZES, install_sizes),
    Figure('install sizes: serving', '(numpy, h5py, onnxruntime: {serve:,} MB against {cpu:,} MB for `[cpu]`)', SIZES,
           install_sizes),
    Figure('predict on the bundled model', 'the next word: {w0} {p0:.2f}, {w1} {p1:.2f}, {w2} {p2:.2f}, ...',
           'readme_2026-11-27/predict_bundled.json: predictions[0].top', predict_top),
    Figure('the bundled model\'s size', '(`paddle_elmo/pretrained/`, {mb:.1f} MB,', MODEL_FILES.format('pretrained'),
           lambda: model_size('pretrained')),
    Figure('the bundled model\'s size in the model table', 'ours, English word + char with its softmax, {mb:.1f} MB',
           MODEL_FILES.format('pretrained'), lambda: model_size('pretrained')),
    Figure('bundled-zh\'s size', '`bundled-zh` (`paddle_elmo/pretrained_zh/`, {mb:.1f} MB)',
           MODEL_FILES.format('pretrained_zh'), lambda: model_size('pretrained_zh')),
    Figure('bundled-zh\'s size in the model table', 'software documentation), {mb:.1f} MB',
           MODEL_FILES.format('pretrained_zh'), lambda: model_size('pretrained_zh')),
    Figure('the bundled model, frozen, on rt-polarity', 'on {tokens:.0f}M tokens of an English corpus on one CPU '
           'thread. It embeds any sentence without pretraining first, but it is far less trained than AllenNLP\'s '
           'models: frozen, on rt-polarity, it scores {elmo:.3f} where its own table\'s word2vec vectors score {w2v:.3f}',
           'cards_2026-11-29/rt_{elmo,word2vec}.json: accuracy_mean; tokens: the last rows of '
           'bundled_2026-11-25/train_log.csv and bundled_further_2026-11-26/train_log.csv', bundled_rows),
    Figure('the bundled model\'s rows', 'The bundled word + char model (128-d table, {tokens:.0f}M tokens): frozen '
           '{elmo:.3f} against its table\'s word2vec vectors\' {w2v:.3f} (p {p}), ELMo ⊕ word2vec not significantly above '
           'word2vec ({concat_diff:+.1f}, p {concat_p})',
           'cards_2026-11-29/rt_{elmo,word2vec,concat}.json: fold_accuracies', bundled_rows),
    Figure('fine-tuning the bundled model', 'checkpoint at step 10,355 ({tokens:.0f}M tokens; not re-run on the '
           'shipped model), gains {gain:+.1f} ± {gain_se:.1f} points over frozen ({better} of 10 folds, p {gain_p}) '
           'and stays below word2vec (-{below:.1f} ± {below_se:.1f}, p {below_p}), at {min_minutes:.0f}-'
           '{max_minutes:.0f} CPU-minutes per fold',
           'bundled_2026-11-25/{trainable-step10355,elmo-step10355,word2vec128}.json: fold_accuracies, fold_seconds; '
           'tokens: train_log.csv at step 10355', bundled_finetuning),
    Figure('one epoch of the char model', 'one epoch of {tokens:.1f}M tokens ({minutes:.0f} minutes) gives frozen '
           'features scoring {elmo:.3f}; word2vec on the same tokens scores {w2v:.3f}. ELMo ⊕ word2vec adds '
           '{diff:+.1f} ± {se:.1f} points to word2vec, within the fold noise (p {p})',
           'long_run_2026-11-23/downstream_results.jsonl: the rows at step 18415; minutes: long_run_2026-11-23/long_run_train_log.csv, last train_minutes',
           one_epoch_char),
    Figure('the 300-d word model', 'a 300-d word model\'s frozen features score {low:.3f}-{high:.3f} between '
           '{first_tokens:.0f}M and {last_tokens:.0f}M tokens, {least_below:.1f}-{most_below:.1f} points below '
           'word2vec (p {last_p} at {last_tokens:.0f}M); ELMo ⊕ word2vec gains {concat_diff:+.1f} points (p {concat_p})',
           'word_3h_2026-11-25/downstream_word_3h_2026-11-25.jsonl: run budget-word300-w2v-frozen-3h, the elmo_layer "mix" rows, '
           'word2vec and concat', word300),
    Figure('bundled-zh on online_shopping', 'its frozen features + BoW give {elmo:.3f} against {w2v:.3f} for word2vec '
           'trained on the same text ({elmo_diff:+.1f} points, p {elmo_p}), and ELMo ⊕ word2vec {concat:.3f} '
           '({concat_diff:+.1f}, all {concat_better} folds, p {concat_p};',
           'bundled_zh_2026-11-27/{elmo,word2vec,concat}.json: fold_accuracies', bundled_zh),
    Figure('int8 on the bundled model', 'The bundled model passes at {own:.4f} on its sample ({own1:.4f} / '
           '{own2:.4f} per LSTM layer; {rt1:.4f} / {rt2:.4f} on 1,000 rt-polarity sentences)',
           'readme_2026-11-27/int8_bundled_{heldout_sample,rt_polarity_1000}.json: verified["onnxruntime int8"]',
           int8_checks),
    Figure('int8 speed on the original size', '{speedup:.2f}x (AVX2) and {speedup512:.2f}x (AVX-512, where '
           '`ELMoEmbedder` runs MKL\'s AVX-512 path) as fast as `ELMoEmbedder` on CPU, worst-token cosine {cosine:.4f}, {int8_mb:.0f} MB instead of {float_mb:.0f} MB',
           'export_int8_2026-11-25/export_int8_2026-11-25.json and speed55_paths_2026-11-27/export_int8.json: speed (model original: x '
           'library, model.onnx MB), agreement (layer k cos min)',
           int8_speed),
    Figure('int8 downstream', 'frozen ELMo + BoW: {int8:.4f} against {float32:.4f} with float32 on the same 10 folds, '
           'p {p};', 'int8_downstream_2026-11-25/{int8,float32}.json: fold_accuracies', int8_downstream),
    Figure('the unknown-token warning\'s threshold (a setting)', 'A word model whose call sees {share:.0f}% or more '
           'unknown tokens', 'paddle_elmo/use/languages.py: UNKNOWN_WARNING_SHARE', unknown_share),
    Figure('int8\'s cosine threshold (a setting)', 'the worst token of every layer at cosine >= {cosine}',
           'paddle_elmo/export/export_checks.py: INT8_MIN_COSINE', int8_threshold),
    Figure('ELMoForManyLangs\' second call', 'on that fixture its second call moves a vector by up to {second:.2f}.',
           'efml_2026-11-28/stateless.json: efml_second_vs_first_call_max_abs', lambda: efml_figures()),
    Figure('ELMoForManyLangs\' models here: one vector whatever the batch', 'across {batchings} batchings of the '
           'fixture\'s sentences they stay within {apart:.1e} of each other',
           'efml_2026-11-28/stateless.json: batchings, stateless_max_abs_apart_across_batchings', lambda: efml_figures()),
]


def efml_figures():
    measured = json_file('efml_2026-11-28/stateless.json')
    return {'second': measured['efml_second_vs_first_call_max_abs'], 'batchings': measured['batchings'],
            'apart': measured['stateless_max_abs_apart_across_batchings']}


# Numbers in README's text that are no measurement of ours: versions, settings in commands, properties
# of published files (AllenNLP's models, the word2vec download), each with the words around it. (docs/'
# pages and the model cards: tests/test_card_figures.py.)
NOT_MEASURED = [
    '1802.05365', 'Python 3.11', 'PaddlePaddle 3.3', 'Python 3.10', 'jieba 0.42.1',
    'original (5.5B)', 'trained on 5.5B tokens', '`original-5.5b`', '13.6M parameters', '28.0M parameters', '93.6M parameters',
    '(word2vec, 3.6 GB)', 'Adagrad 0.2', 'Adam 4e-3',
    'CC BY 4.0',
    # sizes of corpora (BENCHMARKS.md, "What the data is, in tokens")
    '12M jieba tokens',
]

# BENCHMARKS.md's rows and phrases (tests/doc_figures_benchmarks.py), read with this module's readers.
BENCHMARKS_FIGURES = doc_figures_benchmarks.rows(sys.modules[__name__])
BENCHMARKS_NOT_MEASURED = doc_figures_benchmarks.NOT_MEASURED

FIGURE_LIKE = re.compile(r'(?<![\w.])(?:\d[\d,]*\.\d+|\d+(?:\.\d+)?%|\d+(?:\.\d+)?x\b|[\d,]+ (?:MB|GB)\b|'
                         r'\d+(?:\.\d+)?M (?:tokens|parameters)|\d+(?:-\d+)? (?:s|minutes|CPU-minutes)\b)')


def flat(text):
    """Markdown as one line: bold marks dropped, every run of whitespace one space."""
    return re.sub(r'\s+', ' ', text.replace('**', ''))


def readme():
    with open(os.path.join(ROOT, 'README.md'), encoding='utf-8') as f:
        return f.read()


def document_text(name):
    if name == 'README.md':
        return readme()
    with open(os.path.join(ROOT, name), encoding='utf-8') as f:
        return f.read()


def prose(text):
    """README without its flag table (generated from glossary.py) and its code, but for the comments of
    code lines (`# the next word: is 0.17, ...`), which quote figures too."""
    text = re.sub(r'<!-- flags:start -->.*?<!-- flags:end -->', '', text, flags=re.S)
    kept, in_code = [], False
    for line in text.splitlines():
        if line.lstrip().startswith('```'):
            in_code = not in_code
        elif not in_code:
            kept.append(line)
        elif '#' in line:
            kept.append(line[line.index('#'):])
    return '\n'.join(kept)


def all_figures():
    return FIGURES + BENCHMARKS_FIGURES


def documents():
    """Each checked document: (its rows, its phrases that are no measurement)."""
    return {'README.md': (FIGURES, NOT_MEASURED), 'BENCHMARKS.md': (BENCHMARKS_FIGURES, BENCHMARKS_NOT_MEASURED)}


@pytest.mark.parametrize('figure', all_figures(), ids=[f'{f.document}: {f.name}' for f in all_figures()])
def test_readme_quotes_the_figure_its_raw_file_holds(figure):
    expected = figure.text.format(**figure.values())
    assert expected in flat(document_text(figure.document)), (
        f'{figure.document} should say "{expected}" ({figure.name}; from {figure.source}); '
        f'correct {figure.document}, or the raw file if the figure was measured again')


@pytest.mark.parametrize('name', documents())
def test_every_figure_like_number_in_readme_is_a_checked_figure_or_named_as_no_measurement(name):
    figures, not_measured = documents()[name]
    text = flat(prose(document_text(name)))
    covered = [m.span() for f in figures for m in re.finditer(re.escape(f.text.format(**f.values())), text)]
    covered += [m.span() for phrase in not_measured for m in re.finditer(re.escape(phrase), text)]
    loose = [f'"{text[max(0, m.start() - 40):m.end() + 10]}"' for m in FIGURE_LIKE.finditer(text)
             if not any(start <= m.start() and m.end() <= end for start, end in covered)]
    assert not loose, (f'figures in {name} with no raw file checked here: ' + '; '.join(loose) +
                       ' (add a row with its file in benchmarks/results/, or to its NOT_MEASURED if no measurement)')


@pytest.mark.parametrize('name', documents())
def test_each_not_measured_phrase_is_still_in_readme(name):
    text = flat(prose(document_text(name)))
    assert not [p for p in documents()[name][1] if p not in text]


def test_the_checks_catch_a_changed_figure(monkeypatch):
    """A README whose figure differs from its file by one rounding step fails the row."""
    [figure] = [f for f in FIGURES if f.name == 'predict on the bundled model']
    changed = figure.values() | {'p0': figure.values()['p0'] + 0.01}
    monkeypatch.setattr(f'{__name__}.readme', lambda: 'x ' + figure.text.format(**changed) + ' y')
    test_readme_quotes_the_figure_its_raw_file_holds(dataclasses.replace(figure, values=lambda: changed))  # README's
    with pytest.raises(AssertionError, match='predict_bundled.json'):
        test_readme_quotes_the_figure_its_raw_file_holds(figure)


def test_the_bundled_model_still_predicts_what_the_raw_file_holds():
    """The raw file is the shipped model's answer: the model gives it again (to 1e-4; the figures
    README rounds to 0.01)."""
    from paddle_elmo.train.lm_loading import load_language_model
    from paddle_elmo.files.model_io import resolve_model
    from paddle_elmo.use.predict import Predictor
    from paddle_elmo.text.vocabulary import Vocabulary
    recorded = json_file('readme_2026-11-27/predict_bundled.json')['predictions'][0]
    vocab = Vocabulary(os.path.join(os.path.dirname(resolve_model().options_file), 'vocab.txt'))
    top = Predictor(load_language_model(vocab.size), vocab).top(recorded['prefix'], len(recorded['top']))
    assert [w for w, _ in top] == [t['word'] for t in recorded['top']]
    assert all(abs(p - t['prob']) < 1e-4 for (_, p), t in zip(top, recorded['top']))
