"""Build a vocabulary file (most frequent first) from corpus files, segmented or raw.

    paddle-elmo build-vocab --train_data_path 'data/1-billion-word/training-tokenized-shuffled/*' \
        --output_file data/1-billion-word/vocab-15w.txt --max_vocab_size 150000
    # raw Chinese text: segment it with jieba, and keep the segmented corpus for paddle-elmo pretrain
    paddle-elmo build-vocab --train_data_path raw.txt --tokenizer jieba --output_file vocab.txt \
        --output_corpus train.txt

The file starts with <S>, </S>, <UNK> (unless --no_special_tokens), then the words by descending
count, ties broken by the word itself, so the same corpus always gives the same file. It also
reports how many tokens are longer than the char CNN reads (max_characters_per_token - 2 UTF-8
bytes): the biLM sees only their beginning.
"""
import contextlib

from paddle_elmo.cli.arguments import (Switch, add_tokenizer, count_or_zero, file_or_stdin, file_or_stdout, parser,
                                       positive_int)
from paddle_elmo.cli.runner import results_stream, run
from paddle_elmo.text import vocabulary
from paddle_elmo.text.corpus import check_corpus
from paddle_elmo.fileio import InputError, atomic_path, input_path, output_path


def build_parser():
    p = parser(__doc__.split('\n')[0])
    p.add_argument('--train_data_path', required=True, type=file_or_stdin,
                   help="glob of corpus files (UTF-8; else Latin-1 for moses or whitespace), one sentence per line "
                        "(quote it: 'dir/*'); empty lines are skipped and reported; - reads standard input")
    p.add_argument('--output_file', required=True, type=file_or_stdout,
                   help='the vocabulary file to write (what the other commands read as --vocab_file); - writes it '
                   'to standard output (the report then goes to stderr)')
    add_tokenizer(p, default='whitespace', why=', for a corpus already tokenized')
    p.add_argument('--output_corpus', type=file_or_stdout,
                   help='also write the corpus as counted here: one sentence per line, tokens separated by '
                        'spaces, empty lines left out: what paddle-elmo pretrain reads (give it --tokenizer too, '
                        'which the model then records); - writes it to standard output')
    p.add_argument('--min_count', type=positive_int, default=1,
                   help='drop words seen fewer than this many times (1, not word2vec\'s 5: a biLM reads a rare word '
                   'through its characters, and --max_vocab_size is the usual cap)')
    p.add_argument('--max_vocab_size', type=count_or_zero, default=0,
                   help='keep at most this many words (the most frequent) after --min_count; the three special '
                        'tokens come on top (0: no limit)')
    p.add_argument('--special_tokens', action=Switch, default=True,
                   help='write <S>, </S>, <UNK> first (without them, Vocabulary adds them when loading)')
    p.add_argument('--max_characters_per_token', type=positive_int, default=50,
                   help="the model's setting (characters counted in UTF-8 bytes, boundary marks included), for the "
                        'report of tokens its char CNN cuts (longer than this minus 2 bytes)')
    return p


def main(argv=None):
    a = build_parser().parse_args(argv)
    if a.max_characters_per_token < 3:
        raise InputError(f'--max_characters_per_token must be >= 3, got {a.max_characters_per_token}')
    with input_path(a.train_data_path) as train_data_path:  # standard input: a copy, which errors name <stdin>
        check_corpus(train_data_path, '--train_data_path', a.tokenizer)
        with contextlib.ExitStack() as files:
            segmented = None
            if a.output_corpus:
                corpus = files.enter_context(output_path(a.output_corpus, '--output_corpus', '.txt', text=True))
                tmp = files.enter_context(atomic_path(corpus))  # renamed once the corpus is read
                segmented = files.enter_context(open(tmp, 'w', encoding='utf-8', newline='\n'))
            counts = vocabulary.count_words(train_data_path, tokenizer=a.tokenizer, segmented=segmented)
    tokens = vocabulary.build_vocabulary(counts, a.min_count, a.max_vocab_size or None,
                                         special_tokens=a.special_tokens)
    with output_path(a.output_file, '--output_file', '.txt', text=True) as output:
        vocabulary.write_vocabulary(tokens, output)
    n_total = sum(counts.values())
    n_covered = sum(counts.get(t, 0) for t in tokens)
    shown_on = results_stream(a.output_file, a.output_corpus)
    if a.output_corpus:
        print(f'wrote the segmented corpus ({n_total} tokens, {a.tokenizer}) to {a.output_corpus}', file=shown_on)
    print(f'wrote {len(tokens)} tokens to {a.output_file} ({len(counts)} distinct words, '
          f'{n_total} tokens in the corpus, {100 * (1 - n_covered / max(n_total, 1)):.2f}% of them '
          f'out of vocabulary)', file=shown_on)
    print(vocabulary.long_tokens_report(counts, a.max_characters_per_token), file=shown_on)


if __name__ == '__main__':
    run(main)
