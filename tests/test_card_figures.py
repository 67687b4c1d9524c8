"""Every measured figure of the model cards (paddle_elmo/pretrained*/README.md) and of docs/' pages, checked
against the raw file it comes from, as tests/test_doc_figures.py checks README's (`make check-docs`).

The rows, the rules and the reading helpers are test_doc_figures' (a Figure is a sentence with its figures
as placeholders, its raw file and how each figure is read from it; a figure-like number no row covers
fails unless NOT_MEASURED names it). Each card also says how its figures were made: the command
(`benchmarks/results/cards_2026-11-29/run.sh`), the commit and the sha256 of the weights.hdf5 it was run
on, which must be the shipped file's: new weights fail here until their figures are measured again.
"""
import glob
import importlib
import os
import re

import pytest

from conftest import ROOT
from helpers import sha256

# The reading helpers, Figure and the rules of README's figures (not restructured while BENCHMARKS' rows
# are being added there): imported as a module, so that its tests are not collected twice.
figures = importlib.import_module('test_doc_figures')
Figure, json_file, csv_rows, compare, points, p_text = (figures.Figure, figures.json_file, figures.csv_rows,
                                                        figures.compare, figures.points, figures.p_text)

CARDS = 'cards_2026-11-29/'  # the cards' evaluations on the shipped weights, with run.sh and a README
ZH_CARD = os.path.join('paddle_elmo', 'pretrained_zh', 'README.md')
EN_CARD = os.path.join('paddle_elmo', 'pretrained', 'README.md')


def package_file(*parts):
    return os.path.join(ROOT, 'paddle_elmo', *parts)


def weight_counts(directory):
    """Values of the shipped weights.hdf5 in millions: all, the word table, the softmax."""
    import h5py
    sizes = {}
    with h5py.File(package_file(directory, 'weights.hdf5'), 'r') as f:
        f.visititems(lambda name, item: sizes.__setitem__(name, item.size) if isinstance(item, h5py.Dataset) else None)
    softmax = sum(n for name, n in sizes.items() if name.startswith('softmax/'))
    return {'total': sum(sizes.values()) / 1e6, 'table': sizes['word_embedding'] / 1e6, 'softmax': softmax / 1e6}


def corpus_tokens(log):
    """The training corpus's tokens, as a run's log states them ('(N training tokens x E epochs)')."""
    with open(figures.raw(log), encoding='utf-8', errors='replace') as f:
        return int(re.search(r'\(([\d,]+) training tokens', f.read()).group(1).replace(',', ''))


def evaluation(name):
    """An `eval --output_json` of the cards' run -> its figures."""
    e = json_file(CARDS + name)
    return {'ppl': e['perplexity'], 'fwd': e['forward_perplexity'], 'bwd': e['backward_perplexity'],
            'targets': e['n_tokens'], 'bpc': e.get('bits_per_character'), 'chars': e.get('n_characters'),
            'unk': 100 * e.get('unknown_rate', 0)}


def int8_check(name):
    check = json_file(CARDS + name)['verified']['onnxruntime int8']
    layers = check['min_cosine_per_layer']
    return {'worst': check['min_cosine'], 'l0': layers[0], 'l1': layers[1], 'l2': layers[2],
            'mean': check['mean_cosine'], 'sentences': check['sentences']}


def coverage(model):
    shares = json_file(CARDS + 'vocab_coverage.json')[model]
    return {name: 100 * row['share'] for name, row in shares.items()}


def against(a, b, prefix):
    """Row a against row b -> {prefix_diff, _se, _lo, _hi, _better, _p}: points, the corrected test."""
    c = compare(a, b)
    diff = points(c.mean)
    return {f'{prefix}_diff': diff, f'{prefix}_se': points(c.corrected_se), f'{prefix}_better': c.better,
            f'{prefix}_lo': diff - points(c.half_width_95), f'{prefix}_hi': diff + points(c.half_width_95),
            f'{prefix}_p': p_text(c.corrected_p)}


# ---- bundled-zh -------------------------------------------------------------------------------------

ZH_RUN = 'bundled_zh_2026-11-27/'


def zh_files():
    size = figures.model_size('pretrained_zh')['mb']
    return {'mb': size, 'weights_mb': os.path.getsize(package_file('pretrained_zh', 'weights.hdf5')) / 1e6}


def zh_training():
    rows = csv_rows(ZH_RUN + 'train_log.csv')
    last, speeds = rows[-1], sorted(int(r['tokens_per_s']) for r in rows)
    tokens = int(last['tokens'])
    return {'tokens': tokens / 1e6, 'epochs': tokens / corpus_tokens(ZH_RUN + 'run1.log'),
            'minutes': float(last['train_minutes']), 'speed': round(speeds[len(speeds) // 2], -1)}


def zh_during_training():
    """The held-out perplexity logged during training: after 30 and 60 minutes, and at the end."""
    evaluated = [r for r in csv_rows(ZH_RUN + 'train_log.csv') if r['dev_perplexity']]
    p30, p60, end = evaluated[0], evaluated[1], evaluated[-1]
    return {'p30': float(p30['dev_perplexity']), 't30': int(p30['tokens']) / 1e6, 'p60': float(p60['dev_perplexity']),
            't60': int(p60['tokens']) / 1e6, 'end': float(end['dev_perplexity'])}


def zh_downstream():
    elmo, concat, w2v = (json_file(ZH_RUN + f) for f in ('elmo.json', 'concat.json', 'word2vec.json'))
    return {'elmo': elmo['accuracy_mean'], 'elmo_sd': elmo['accuracy_std'], 'concat': concat['accuracy_mean'],
            'concat_sd': concat['accuracy_std'], 'w2v': w2v['accuracy_mean'], 'w2v_sd': w2v['accuracy_std'],
            **against(elmo, w2v, 'e'), **against(concat, w2v, 'c'), 'news_w2v': figures.zh_news()['w2v']}


ZH_FIGURES = [
    Figure('its files\' size', '{mb:.1f} MB together (`weights.hdf5` {weights_mb:.1f} MB)',
           'paddle_elmo/pretrained_zh/: options.json + weights.hdf5 + vocab.txt', zh_files),
    Figure('its parameters', '{total:.2f}M parameters in the file, {table:.2f}M of them the frozen table and '
           '{softmax:.2f}M the softmax', 'paddle_elmo/pretrained_zh/weights.hdf5: the datasets\' sizes',
           lambda: weight_counts('pretrained_zh')),
    Figure('its vocabulary\'s coverage', 'plus `<S>`, `</S>`, `<UNK>`: {train:.2f}% of its tokens, {heldout:.2f}% of '
           '`heldout.txt`\'s', CARDS + 'vocab_coverage.json: bundled-zh',
           lambda: {'train': coverage('bundled-zh')['zh-open train.txt'],
                    'heldout': coverage('bundled-zh')['zh-open heldout.txt']}),
    Figure('its training', '{tokens:.2f}M tokens (16,000 steps x 64 x 20, {epochs:.2f} epochs) in one run of '
           '{minutes:.0f} training minutes', ZH_RUN + 'train_log.csv (the last row) and run1.log (the corpus\'s '
           'tokens)', zh_training),
    Figure('its training speed', 'beside other jobs pinned to the other core (a median of {speed:,.0f} tokens/s '
           'over its log lines)', ZH_RUN + 'train_log.csv: tokens_per_s', zh_training),
    Figure('its held-out perplexity', 'on the whole of zh-open `heldout.txt` ({targets:,} targets: 163,199 tokens and '
           'the sentence ends), the shipped (float16) softmax, full softmax over the 30k vocabulary: {ppl:.1f} '
           '(forward {fwd:.2f}, backward {bwd:.2f}), {bpc:.3f} bits per character ({chars:,} characters;',
           CARDS + 'eval_bundled_zh_all.json', lambda: evaluation('eval_bundled_zh_all.json')),
    Figure('its <UNK> targets', '`<UNK>` is {unk:.2f}% of the targets', CARDS + 'eval_bundled_zh_all.json',
           lambda: evaluation('eval_bundled_zh_all.json')),
    Figure('its perplexity during training', 'During training (first 51,200 targets, float32 softmax): {p30:.1f} after '
           '30 minutes ({t30:.1f}M tokens), {p60:.1f} after 60 ({t60:.1f}M), {end:.1f} at the end',
           ZH_RUN + 'train_log.csv: dev_perplexity', zh_during_training),
    Figure('online_shopping, the rows', 'frozen ELMo + BoW {elmo:.3f} ± {elmo_sd:.3f} (mean ± std over folds); '
           'ELMo ⊕ the table\'s word2vec vectors {concat:.3f} ± {concat_sd:.3f}; those vectors (word2vec trained on '
           'zh-open) alone + BoW (`paddle-elmo word2vec --tokenizer jieba`) {w2v:.3f} ± {w2v_sd:.3f}',
           ZH_RUN + '{elmo,concat,word2vec}.json: accuracy_mean, accuracy_std', zh_downstream),
    Figure('online_shopping, against word2vec', 'Against word2vec: frozen ELMo {e_diff:+.2f} ± {e_se:.2f} points '
           '({e_better} of 10 folds better, corrected p {e_p}, interval {e_lo:+.2f} to {e_hi:+.2f}); ELMo ⊕ word2vec '
           '{c_diff:+.2f} ± {c_se:.2f} ({c_better} of 10, corrected p {c_p}, interval {c_lo:+.2f} to {c_hi:+.2f})',
           ZH_RUN + '{elmo,concat,word2vec}.json: fold_accuracies', zh_downstream),
    Figure('int8', 'worst per-token cosine with the float32 library {worst:.4f} over the {sentences} sentences (per '
           'layer {l0:.4f}, {l1:.4f}, {l2:.4f}; mean {mean:.4f})', CARDS + 'int8_bundled_zh.json: verified',
           lambda: int8_check('int8_bundled_zh.json')),
    Figure('how much it saw', 'and {tokens:.0f}M tokens is little', ZH_RUN + 'train_log.csv', zh_training),
    Figure('where it falls short', 'Its frozen features are above word2vec trained on the same text ({e_diff:+.1f} '
           'points, not significant at 10 folds), and beside word2vec they add {c_diff:.0f} points; word2vec trained '
           'on text closer to the task (the 300-d zh-corpus news vectors: {news_w2v:.3f} on the same folds',
           ZH_RUN + '{elmo,concat,word2vec}.json; downstream_zh_sentiment_2026-11-25.jsonl', zh_downstream),
]

# Numbers of the card that are no measurement of ours: versions, settings, the corpus's make-up (its
# README and stats), licences.
ZH_NOT_MEASURED = [
    'Apache License 2.0', 'jieba 0.42.1', 'dropout 0.1', '(11.96M tokens, 564,389 sentences)', '1.5% of the documents',
    '| 8.74M |', '| 0.58M |', '| 1.76M |', '| 0.89M |', 'CC BY 4.0', 'licenses/by/4.0/', '(branch 3.14)',
]


# ---- bundled (English) ------------------------------------------------------------------------------

EN_FIRST, EN_FURTHER = 'bundled_2026-11-25/', 'bundled_further_2026-11-26/'


def idempotence(path):
    """tokenizer_2026-11-27's table: the moses row on lm-corpus -> (lines changed, lines)."""
    with open(figures.raw(path), encoding='utf-8') as f:
        m = re.search(r'\| moses \| lm-corpus \| (\d+) \| (\d+) ', f.read())
    return int(m.group(2)), int(m.group(1))


def en_tokenizer():
    changed, lines = idempotence('tokenizer_2026-11-27/idempotence.txt')
    return {'changed': changed, 'lines': lines, 'share': 100 * changed / lines,
            'before': idempotence('tokenizer_2026-11-27/idempotence_before.txt')[0]}


def en_coverage():
    shares = coverage('bundled')
    return {'train': shares['lm-corpus train.txt'], 'rt': shares['rt-polarity (moses)'],
            'rarest': 100 - shares['lm-corpus train.txt']}


def en_training():
    first, further = csv_rows(EN_FIRST + 'train_log.csv')[-1], csv_rows(EN_FURTHER + 'train_log.csv')[-1]
    t1, t2 = int(first['tokens']), int(further['tokens'])
    return {'total': (t1 + t2) / 1e6, 'epochs': (t1 + t2) / corpus_tokens(EN_FURTHER + 'log.txt'), 't1': t1 / 1e6,
            's1': int(first['step']), 'm1': float(first['train_minutes']), 't2': t2 / 1e6, 's2': int(further['step']),
            'm2': float(further['train_minutes'])}


def en_perplexity():
    first, whole = evaluation('eval_bundled_51200.json'), evaluation('eval_bundled_all.json')
    before, before_all = (json_file(f'bundled_softmax_2026-11-26/eval_heldout_{n}.json') for n in ('51200', 'all'))
    return {**first, 'targets_all': whole['targets'], 'ppl_all': whole['ppl'], 'bpc_all': whole['bpc'],
            'before': before['perplexity'], 'before_all': before_all['perplexity']}


def en_downstream():
    """rt-polarity on the shipped weights (the cards' run), and the release before against this one, the
    two measured the same day (2026-11-26)."""
    elmo, concat, w2v, int8 = (json_file(CARDS + f'rt_{n}.json') for n in ('elmo', 'concat', 'word2vec', 'int8'))
    old = {n: json_file(EN_FURTHER + f'{n}.json') for n in ('elmo-final', 'elmo-bundled-current', 'concat-final',
                                                            'concat-bundled-current')}
    return {'elmo': elmo['accuracy_mean'], 'elmo_sd': elmo['accuracy_std'], 'concat': concat['accuracy_mean'],
            'w2v': w2v['accuracy_mean'], 'int8': int8['accuracy_mean'], 'short': 100 * (0.75 - elmo['accuracy_mean']),
            'old_elmo': old['elmo-final']['accuracy_mean'], 'elmo_before': old['elmo-bundled-current']['accuracy_mean'],
            'old_concat': old['concat-final']['accuracy_mean'],
            'concat_before': old['concat-bundled-current']['accuracy_mean'],
            **against(old['elmo-final'], old['elmo-bundled-current'], 'e'),
            **against(old['concat-final'], old['concat-bundled-current'], 'c'),
            **against(elmo, w2v, 'ew'), **against(concat, w2v, 'cw'), **against(int8, elmo, 'i')}


def en_earlier():
    d = EN_FIRST
    trainable, frozen, w2v = (json_file(d + f) for f in ('trainable-step10355.json', 'elmo-step10355.json',
                                                         'word2vec128.json'))
    log = {r['step']: r for r in csv_rows(d + 'train_log.csv') if r['dev_perplexity']}
    doubled = against(json_file(d + 'elmo-step21084.json'), frozen, 'd')
    return {'trainable': trainable['accuracy_mean'], 'frozen': frozen['accuracy_mean'], 'w2v': w2v['accuracy_mean'],
            'half': int(log['10355']['tokens']) / 1e6, 'full': int(log['21084']['tokens']) / 1e6,
            'ppl_half': float(log['10355']['dev_perplexity']), 'ppl_full': float(log['21084']['dev_perplexity']),
            **doubled, **figures.bundled_finetuning()}


def en_further():
    return {**en_perplexity(), **en_downstream(), 'total': en_training()['total']}


EN_FIGURES = [
    Figure('its files\' size', '`softmax/b`) float16; `vocab.txt`, the table\'s and the softmax\'s rows (line i = row i); '
           '{mb:.1f} MB together', 'paddle_elmo/pretrained/: options.json + weights.hdf5 + vocab.txt',
           lambda: figures.model_size('pretrained')),
    Figure('its tokenizer, again on its own tokens', 'changes {changed} of {lines:,} ({share:.2f}%) ({before} before '
           '2026-11-27', 'tokenizer_2026-11-27/idempotence.txt and idempotence_before.txt: the moses row', en_tokenizer),
    Figure('its vocabulary\'s coverage', '`<S>`, `</S>`, `<UNK>`: {train:.2f}% of its tokens, {rt:.1f}% of '
           'rt-polarity\'s', CARDS + 'vocab_coverage.json: bundled', en_coverage),
    Figure('the rarest tokens', '`<UNK>` stands for the rarest {rarest:.0f}% of tokens here',
           CARDS + 'vocab_coverage.json: bundled', en_coverage),
    Figure('its training', '{total:.2f}M tokens in all ({epochs:.1f} epochs): {t1:.2f}M ({s1:,} steps, {m1:.0f} '
           'training minutes in two runs', EN_FIRST + 'train_log.csv and ' + EN_FURTHER + 'train_log.csv (the last '
           'rows), ' + EN_FURTHER + 'log.txt (the corpus\'s tokens)', en_training),
    Figure('its training further', 'then {t2:.2f}M ({s2:,} steps, {m2:.0f} minutes', EN_FURTHER + 'train_log.csv',
           en_training),
    Figure('its held-out perplexity', '{ppl:.1f} (forward {fwd:.2f}, backward {bwd:.2f}) on the first {targets:,} '
           'target tokens of lm-corpus `heldout.txt`; on the whole of it ({targets_all:,} targets) {ppl_all:.1f}, '
           '{bpc_all:.3f} bits per character', CARDS + 'eval_bundled_{51200,all}.json', en_perplexity),
    Figure('the release before\'s perplexity', 'The release before: {before:.1f} and {before_all:.1f}.',
           'bundled_softmax_2026-11-26/eval_heldout_{51200,all}.json', en_perplexity),
    Figure('rt-polarity, frozen', 'frozen ELMo {elmo:.3f} ± {elmo_sd:.3f} (mean ± std over folds); ELMo ⊕ the '
           'table\'s word2vec vectors {concat:.3f}; those vectors alone + BoW {w2v:.3f} (frozen ELMo {ew_diff:+.1f} ± '
           '{ew_se:.1f}, p {ew_p}; ELMo ⊕ word2vec {cw_diff:+.1f} ± {cw_se:.1f}, p {cw_p})',
           CARDS + 'rt_{elmo,concat,word2vec}.json', en_downstream),
    Figure('rt-polarity, the int8 export', 'frozen {int8:.3f} against float32\'s {elmo:.3f} ({i_diff:+.2f} ± '
           '{i_se:.2f} points, corrected 95% interval {i_lo:+.2f} to {i_hi:+.2f}, p {i_p})',
           CARDS + 'rt_{int8,elmo}.json', en_downstream),
    Figure('rt-polarity, against the release before', 'frozen ELMo {old_elmo:.3f} against {elmo_before:.3f} '
           '({e_diff:+.2f} ± {e_se:.2f} points, corrected p {e_p}), ELMo ⊕ word2vec {old_concat:.3f} against '
           '{concat_before:.3f} ({c_diff:+.2f} ± {c_se:.2f}, p {c_p})',
           EN_FURTHER + '{elmo-final,elmo-bundled-current,concat-final,concat-bundled-current}.json', en_downstream),
    Figure('fine-tuned, earlier', '{trainable:.3f} against {frozen:.3f} frozen ({gain:+.1f} ± {gain_se:.1f} points, '
           '{better} of 10 folds better, corrected p {gain_p}) and {w2v:.3f} for word2vec (-{below:.1f} ± {below_se:.1f}, '
           'p {below_p}), at {min_minutes:.0f}-{max_minutes:.0f} minutes per fold',
           EN_FIRST + '{trainable-step10355,elmo-step10355,word2vec128}.json', en_earlier),
    Figure('doubling its training, earlier', 'Doubling its training from {half:.2f}M to {full:.0f}M tokens lowered the '
           'held-out perplexity from {ppl_half:.1f} to {ppl_full:.1f} and moved frozen rt-polarity by {d_diff:+.2f} ± '
           '{d_se:.2f} points (p {d_p})', EN_FIRST + 'train_log.csv and elmo-step{10355,21084}.json', en_earlier),
    Figure('training it further', 'training it further to {total:.1f}M tokens lowered the perplexity from {before:.1f} '
           'to {ppl:.1f} and moved it by {e_diff:+.2f} ± {e_se:.2f} (p {e_p})',
           'bundled_softmax_2026-11-26, ' + CARDS + 'eval_bundled_51200.json, ' + EN_FURTHER + 'elmo-*.json',
           en_further),
    Figure('where it falls short', 'frozen it is {short:.1f} points short of 0.75 ({elmo:.3f}), and beside word2vec '
           'it is not significantly above word2vec alone ({cw_diff:+.1f}, p {cw_p})', CARDS + 'rt_{elmo,concat,word2vec}.json',
           en_downstream),
    Figure('how much it saw', 'its contextual layers would need far more than {total:.0f}M tokens to add to them',
           EN_FIRST + 'train_log.csv and ' + EN_FURTHER + 'train_log.csv', en_training),
    Figure('the previous bundled model', 'one epoch of the same corpus) scored {elmo:.3f}',
           'downstream_results.jsonl: the rows at step 18415', figures.one_epoch_char),
]

EN_NOT_MEASURED = [
    'Apache License 2.0', 'dropout 0.1', '(`--from_weights_lr_scale 0.5`)', 'frozen ELMo >= 0.75 on rt-polarity', 'within 25 MB',
    'CC BY-SA 3.0', 'Dataset v1.0', 'Distribution 1.0', '| 42% |', '| 44% |', '| 11% |', '| 4% |',
]


# ---- docs/: the pages README's reference parts moved to ---------------------------------------------

DOC_FIGURES = {
    os.path.join('docs', 'PRETRAINING.md'): [
        Figure('the unigram prior', 'which gives {prior:.1f}% lower held-out perplexity after 1,500 steps ({prior_6k:.1f}% '
               'after 6,000)', 'recipe45_2026-11-26/results.jsonl', figures.unigram_prior),
        Figure('the recipe per token', '{recipe:.0f}% lower than the preset before the prior at 1,500 steps '
               '({recipe_6k:.0f}% at 6,000)', 'recipe45_2026-11-26/results.jsonl', figures.unigram_prior),
        Figure('an hour of the budget preset', 'reaches a held-out perplexity of about {ppl:.0f} on a {tokens:.1f}M-token '
               'English corpus', 'quality_budget_60min_fastpath_curve.csv: the last row', figures.budget_hour),
        Figure('word input per token', 'held-out perplexity {word:.1f} after {word_tokens:.1f}M tokens, where the char '
               'model needs its whole epoch of {char_tokens:.1f}M tokens for {char:.1f}',
               'quality_budget_word_w2v_60min_curve.csv and long_run_train_log.csv', figures.word_per_token),
    ],
    os.path.join('docs', 'CHINESE.md'): [
        Figure('the zh-corpus word model on online_shopping', 'word2vec + BoW scores {w2v:.3f}, frozen ELMo + BoW '
               '{elmo:.3f} (worse on every fold, p {elmo_p}) and ELMo ⊕ word2vec {concat:.3f}, {concat_diff:+.1f} ± '
               '{concat_se:.1f} points over word2vec and better on all {concat_better} folds (p {concat_p}). Its word '
               'layer alone beside word2vec gives {layer0_diff:+.1f} (p {layer0_p})',
               'downstream_zh_sentiment_2026-11-25.jsonl and downstream_zh_concat_layer0_2026-11-25.jsonl',
               figures.zh_news),
    ],
}
DOC_NOT_MEASURED = {
    os.path.join('docs', 'PRETRAINING.md'): ['the first 20M tokens', '--lr 0.008', '--adam_beta2 0.99',
                                             '(default 0.1;'],
    os.path.join('docs', 'CHINESE.md'): ['over 18.7M tokens of news'],
    os.path.join('docs', 'DEPLOYING.md'): ['paddle2onnx 2.1.0'],
}

# every document whose figures are checked here -> (its rows, its numbers that are no measurement)
DOCUMENTS = {ZH_CARD: (ZH_FIGURES, ZH_NOT_MEASURED), EN_CARD: (EN_FIGURES, EN_NOT_MEASURED),
             **{os.path.join('docs', f): (DOC_FIGURES.get(os.path.join('docs', f), []),
                                          DOC_NOT_MEASURED.get(os.path.join('docs', f), []))
                for f in sorted(os.listdir(os.path.join(ROOT, 'docs'))) if f.endswith('.md') and f != 'PYPI.md'}}
ROWS = [(doc, figure) for doc, (rows, _) in DOCUMENTS.items() for figure in rows]


def text_of(doc):
    with open(os.path.join(ROOT, doc), encoding='utf-8') as f:
        return f.read()


@pytest.mark.parametrize('doc, figure', ROWS, ids=[f'{os.path.basename(os.path.dirname(d))}/{os.path.basename(d)}: '
                                                    f'{f.name}' for d, f in ROWS])
def test_the_document_quotes_the_figure_its_raw_file_holds(doc, figure):
    expected = figure.text.format(**figure.values())
    assert expected in figures.flat(text_of(doc)), (
        f'{doc} should say "{expected}" ({figure.name}; from {figure.source}); correct the document, or the raw '
        'file if the figure was measured again')


@pytest.mark.parametrize('doc', sorted(DOCUMENTS))
def test_every_figure_like_number_is_a_checked_figure_or_named_as_no_measurement(doc):
    rows, not_measured = DOCUMENTS[doc]
    text = figures.flat(figures.prose(text_of(doc)))
    covered = [m.span() for f in rows for m in re.finditer(re.escape(f.text.format(**f.values())), text)]
    covered += [m.span() for phrase in not_measured for m in re.finditer(re.escape(phrase), text)]
    covered += [m.span() for m in re.finditer(re.escape(how_made_line(doc) or '\0'), text)]
    loose = [f'"{text[max(0, m.start() - 40):m.end() + 10]}"' for m in figures.FIGURE_LIKE.finditer(text)
             if not any(start <= m.start() and m.end() <= end for start, end in covered)]
    assert not loose, (f'figures in {doc} with no raw file checked here: ' + '; '.join(loose) +
                       ' (add a row with its file in benchmarks/results/, or a NOT_MEASURED phrase)')


@pytest.mark.parametrize('doc', sorted(DOCUMENTS))
def test_each_not_measured_phrase_is_still_in_its_document(doc):
    text = figures.flat(figures.prose(text_of(doc)))
    assert not [p for p in DOCUMENTS[doc][1] if p not in text]


def test_every_model_card_and_docs_page_is_checked():
    cards = {os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, 'paddle_elmo', 'pretrained*', 'README.md'))}
    assert cards == {ZH_CARD, EN_CARD} and cards <= set(DOCUMENTS)
    assert {os.path.join('docs', 'PRETRAINING.md'), os.path.join('docs', 'CHINESE.md')} <= set(DOCUMENTS)


# ---- how the cards' figures were made -------------------------------------------------------------------

def recorded_weights():
    """The cards' run: {package directory: sha256 of the weights.hdf5 it evaluated}, and its commit."""
    with open(figures.raw(CARDS + 'weights.sha256'), encoding='utf-8') as f:
        hashes = {path.split('/')[1]: digest for digest, path in (line.split() for line in f if line.strip())}
    with open(figures.raw(CARDS + 'commit.txt'), encoding='utf-8') as f:
        return hashes, f.read().strip()


def how_made_line(doc):
    """The sentence a card gives its figures' provenance in (None for docs/ pages)."""
    directory = {ZH_CARD: 'pretrained_zh', EN_CARD: 'pretrained'}.get(doc)
    if directory is None:
        return None
    hashes, commit = recorded_weights()
    return (f'`bash benchmarks/results/cards_2026-11-29/run.sh` at commit {commit[:7]} on the shipped `weights.hdf5` '
            f'(sha256 `{hashes[directory]}`)')


@pytest.mark.parametrize('doc, directory', [(ZH_CARD, 'pretrained_zh'), (EN_CARD, 'pretrained')])
def test_each_card_names_the_command_commit_and_weights_its_figures_come_from(doc, directory):
    """The card's line names the run, its commit and the weights' sha256 the run recorded, and those are the
    weights that ship: changed weights fail here until the card's figures are measured again."""
    hashes, _ = recorded_weights()
    assert hashes[directory] == sha256(package_file(directory, 'weights.hdf5')), (
        f'paddle_elmo/{directory}/weights.hdf5 is not the file its card\'s figures were measured on: run '
        'benchmarks/results/cards_2026-11-29/run.sh (or a new dated run) and update the card')
    assert how_made_line(doc) in figures.flat(text_of(doc))
