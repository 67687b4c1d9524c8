"""Raw English through the bundled model's tokenizer (moses): how much of its corpus comes back.

    python benchmarks/bench_tokenizer.py                      # round trip on 300 and all held-out sentences
    python benchmarks/bench_tokenizer.py --idempotence        # tokenized text through its tokenizer again
    python benchmarks/bench_tokenizer.py --write_raw_polarity /tmp/rt-raw   # rt-polarity, detokenized

Round trip: each sentence of lm-corpus's heldout.txt (tokenized as 1B Word is) is detokenized with
sacremoses's MosesDetokenizer, the raw text a user would have, and split again by the `moses`
tokenizer; a sentence counts when its tokens equal the original's exactly. The table gives that
share, the same for the whitespace tokenizer (what raw text met before the model recorded moses),
the share of tokens in the bundled vocabulary both ways, and the most frequent differences left
(original tokens -> moses tokens). --write_raw_polarity writes rt-polarity's two files
detokenized the same way (UTF-8), for `paddle-elmo finetune` on raw against tokenized reviews.

Idempotence (--idempotence): each held-out line of a corpus, already in its tokenizer's tokens, is
joined by spaces and tokenized again by that tokenizer (moses: lm-corpus; jieba: zh-open and
zh-corpus, both segmented by jieba 0.42.1); the table gives the share of lines whose tokens
change, and the most frequent changes (original -> again).
"""
import argparse
import collections
import difflib
import itertools
import json
import os
import sys

import machine
import places

HELDOUT = os.path.join(places.LM_CORPUS, 'heldout.txt')
# (tokenizer, corpus name, held-out file in that tokenizer's tokens)
IDEMPOTENCE_CORPORA = (('moses', 'lm-corpus', HELDOUT),
                       ('jieba', 'zh-open', os.path.join(places.SHARED, 'data', 'zh-open', 'heldout.txt')),
                       ('jieba', 'zh-corpus', os.path.join(places.ZH_CORPUS, 'heldout.txt')))
BUNDLED_VOCAB = os.path.join(places.ROOT, 'paddle_elmo', 'pretrained', 'vocab.txt')


def read_token_lines(path, n=None):
    """The first n (None: all) lines of a tokenized file -> list of token lists."""
    with open(path, encoding='utf-8') as f:
        return [line.split() for line in itertools.islice(f, n)]


def differences(original, got):
    """-> the (original tokens, moses tokens) spans where two token lists differ."""
    matcher = difflib.SequenceMatcher(a=original, b=got, autojunk=False)
    return [(' '.join(original[a0:a1]), ' '.join(got[b0:b1]))
            for op, a0, a1, b0, b1 in matcher.get_opcodes() if op != 'equal']


def round_trip(sentences, known):
    """Detokenize each token list, split it by whitespace and by moses -> dict of counts and the
    Counter of differences left by moses. `known`: the bundled vocabulary's tokens (a set)."""
    from sacremoses import MosesDetokenizer
    from paddle_elmo.text.tokenizers import get_tokenizer
    detokenize, moses = MosesDetokenizer('en').detokenize, get_tokenizer('moses')
    row = collections.Counter(sentences=len(sentences))
    left = collections.Counter()
    for tokens in sentences:
        raw = detokenize(tokens)
        for name, got in (('whitespace', raw.split()), ('moses', moses(raw))):
            row[f'{name}_equal'] += got == tokens
            row[f'{name}_tokens'] += len(got)
            row[f'{name}_known'] += sum(t in known for t in got)
        got = moses(raw)
        if got != tokens:
            left.update(differences(tokens, got))
    row['original_tokens'] = sum(map(len, sentences))
    row['original_known'] = sum(t in known for s in sentences for t in s)
    return dict(row), left


def idempotence(tokenizer, path):
    """Every line of `path` (tokens separated by spaces) tokenized again by `tokenizer` -> (lines,
    lines whose tokens changed, Counter of the changes: (original tokens, tokens again))."""
    from paddle_elmo.text.tokenizers import get_tokenizer
    tokenize = get_tokenizer(tokenizer)
    sentences = read_token_lines(path)
    changes, changed = collections.Counter(), 0
    for tokens in sentences:
        again = tokenize(' '.join(tokens))
        if again != tokens:
            changed += 1
            changes.update(differences(tokens, again))
    return len(sentences), changed, changes


def print_idempotence(show):
    """The --idempotence table and each corpus's most frequent changes."""
    print('| tokenizer | held-out lines of | lines | changed by tokenizing again |')
    print('| --- | --- | --- | --- |')
    found = []
    for tokenizer, corpus, path in IDEMPOTENCE_CORPORA:
        lines, changed, changes = idempotence(tokenizer, path)
        print(f'| {tokenizer} | {corpus} | {lines} | {changed} ({100 * changed / lines:.2f}%) |', flush=True)
        found.append((tokenizer, corpus, changes))
    for tokenizer, corpus, changes in found:
        print(f'\n{tokenizer} on {corpus}: {sum(changes.values())} spans changed (original -> again)')
        for (original, got), count in changes.most_common(show):
            print(f'{count:5d}  {original!r} -> {got!r}')


def print_table(rows):
    print('| sentences | equal after moses | equal after whitespace | tokens in vocab: original / moses / '
          'whitespace |')
    print('| --- | --- | --- | --- |')
    for r in rows:
        share = lambda k, n: f'{r[k]} ({100 * r[k] / r[n]:.1f}%)'
        print(f"| {r['sentences']} | {share('moses_equal', 'sentences')} | {share('whitespace_equal', 'sentences')} | "
              f"{100 * r['original_known'] / r['original_tokens']:.1f}% / "
              f"{100 * r['moses_known'] / r['moses_tokens']:.1f}% / "
              f"{100 * r['whitespace_known'] / r['whitespace_tokens']:.1f}% |")


def write_raw_polarity(out_dir):
    """rt-polarity's files detokenized (MosesDetokenizer), as UTF-8, into out_dir."""
    from sacremoses import MosesDetokenizer
    from paddle_elmo.classify.data import read_sentences
    from paddle_elmo.fileio import write_text_atomic
    detokenize = MosesDetokenizer('en').detokenize
    os.makedirs(out_dir, exist_ok=True)
    for name in ('rt-polarity.pos', 'rt-polarity.neg'):
        sentences, info = read_sentences(os.path.join(places.RT_POLARITY, name))
        write_text_atomic(os.path.join(out_dir, name), ''.join(detokenize(s) + '\n' for s in sentences))
        print(f'wrote {os.path.join(out_dir, name)}: {len(sentences)} sentences (read as {info["encoding"]})')


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--sizes', type=int, nargs='+', default=[300, 0],
                   help='round trip on the first N held-out sentences, for each N (0: all 14,130)')
    p.add_argument('--show', type=int, default=25, help='differences listed (most frequent first)')
    p.add_argument('--output_json', help='also write the rows and the differences here')
    p.add_argument('--write_raw_polarity', metavar='DIR', help='only write rt-polarity detokenized into DIR')
    p.add_argument('--idempotence', action='store_true',
                   help='only tokenize held-out lines, already tokenized, again: the share that changes')
    a = p.parse_args(argv)
    if a.write_raw_polarity:
        write_raw_polarity(a.write_raw_polarity)
        return 0
    machine.print_machine_info()
    if a.idempotence:
        print_idempotence(a.show)
        return 0
    with open(BUNDLED_VOCAB, encoding='utf-8') as f:
        known = set(f.read().split())
    rows, left = [], collections.Counter()
    for n in a.sizes:
        row, left = round_trip(read_token_lines(HELDOUT, n or None), known)
        rows.append(row)
    print_table(rows)
    example = "It's raining, isn't it?"
    from paddle_elmo.text.tokenizers import get_tokenizer
    for name in ('whitespace', 'moses'):
        tokens = get_tokenizer(name)(example)
        print(f'{example!r} by {name}: {sum(t in known for t in tokens)} of {len(tokens)} tokens in the bundled '
              f'vocabulary ({" ".join(tokens)})')
    print(f'\ndifferences left by moses on the last row ({sum(left.values())} spans; original -> moses):')
    for (original, got), count in left.most_common(a.show):
        print(f'{count:5d}  {original!r} -> {got!r}')
    if a.output_json:
        with open(a.output_json, 'w', encoding='utf-8') as f:
            json.dump({'rows': rows, 'differences': [[o, g, c] for (o, g), c in left.most_common()]}, f, indent=1)
    return 0


if __name__ == '__main__':
    sys.exit(main())
