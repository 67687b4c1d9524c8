"""Build a vocabulary file (most frequent first) from whitespace-tokenized corpus files.

    python build_vocab.py --train_data_path 'data/1-billion-word/training-tokenized-shuffled/*' \
        --vocab_file data/1-billion-word/vocab-15w.txt --max_vocab_size 150000

The file starts with <S>, </S>, <UNK> (unless --no_special_tokens), then the words by descending
count, ties broken by the word itself, so the same corpus always gives the same file.
"""
import args as cli
import dataset


def main():
    p = cli.parser(__doc__.split('\n')[0])
    p.add_argument('--train_data_path', required=True,
                   help="glob of UTF-8 corpus files, one sentence per line (quote it: 'dir/*')")
    p.add_argument('--vocab_file', required=True, help='vocabulary file to write')
    p.add_argument('--min_count', type=int, default=1, help='drop words seen fewer times')
    p.add_argument('--max_vocab_size', type=int, default=None,
                   help='keep at most this many words after --min_count (the three special '
                        'tokens come on top)')
    p.add_argument('--no_special_tokens', action='store_true',
                   help='do not write <S>, </S>, <UNK> first (Vocabulary adds them when loading)')
    a = p.parse_args()
    if a.min_count < 1:
        raise cli.InputError(f'--min_count must be >= 1, got {a.min_count}')
    if a.max_vocab_size is not None and a.max_vocab_size < 1:
        raise cli.InputError(f'--max_vocab_size must be >= 1, got {a.max_vocab_size}')
    counts = dataset.count_words(a.train_data_path)
    tokens = dataset.build_vocabulary(counts, a.min_count, a.max_vocab_size,
                                      special_tokens=not a.no_special_tokens)
    dataset.write_vocabulary(tokens, a.vocab_file)
    n_total = sum(counts.values())
    n_covered = sum(counts.get(t, 0) for t in tokens)
    print(f'wrote {len(tokens)} tokens to {a.vocab_file} ({len(counts)} distinct words, '
          f'{n_total} tokens in the corpus, {100 * (1 - n_covered / max(n_total, 1)):.2f}% of them '
          f'out of vocabulary)')


if __name__ == '__main__':
    cli.run(main)
