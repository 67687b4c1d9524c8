"""The one error boundary, every subcommand: a hostile input (a missing, binary, corrupt or empty
file, a wrong model, a device this Paddle lacks, a size of 0 or a negative count, a flag that no
longer exists or is abbreviated, an output path that is a directory or where nothing can be written, a
package not installed) ends with exactly one line on stderr, `error: ...` (naming the argument or
file where the table says what it must name), exit code 2, no traceback and nothing written. The
commands run in this process (paddle_elmo.cli.main with an argv), except a missing package, which
needs a fresh interpreter. tests/test_bad_inputs.py runs the checkout's scripts on more inputs, one
process each, and checks the message's words; the inputs that are odd but fine (a byte-order mark,
standard input and output) are at the end."""
import io
import json
import logging
import os
import subprocess
import sys

import h5py
import numpy as np

import pytest

from conftest import ROOT
from helpers import ENV, TINY_MODEL, main_exit
from paddle_elmo.fileio import InputError

GOOD = 'the cat sat on the mat\na dog ran in the park\n'
WORDS = ['<S>', '</S>', '<UNK>', 'the', 'cat', 'sat', 'on', 'mat', 'a', 'dog', 'ran', 'in', 'park']


@pytest.fixture(scope='module')
def files(tmp_path_factory):
    """The inputs the table names, made once: a tiny checkpoint and its bilm-tf files, good text, text
    that is not UTF-8, a corrupt hdf5, an options file that is not JSON, rt-polarity stand-ins."""
    d = tmp_path_factory.mktemp('hostile')
    (d / 'good.txt').write_text(GOOD * 5)
    (d / 'vocab.txt').write_text('\n'.join(WORDS) + '\n')
    (d / 'latin1.txt').write_bytes('the caf\xe9 sat\n'.encode('latin-1'))
    (d / 'nul.txt').write_bytes(b'the cat\nsat\x00on\n')
    (d / 'garbage.hdf5').write_bytes(b'not an hdf5 file\n' * 100)
    
    (d / 'broken.json').write_text('{"lstm": {"dim": 16,')
    (d / 'a-file').write_text('not a directory\n')
    (d / 'dup.txt').write_text('a dog\nthe cat\na dog\n')
    (d / 'empty.txt').write_text('')
    (d / 'blank.txt').write_text('\n  \n\t\n')
    (d / 'empty-glob').mkdir()
    (d / 'empty-glob' / 'a.txt').write_text('')
    (d / 'empty-glob' / 'b.txt').write_text('\n')
    (d / 'rt-empty-pos').mkdir()
    (d / 'rt-empty-pos' / 'rt-polarity.pos').write_text('\n\n')
    (d / 'rt-empty-pos' / 'rt-polarity.neg').write_text(GOOD * 10)
    for name in ('rt-polarity.pos', 'rt-polarity.neg'):
        (d / 'rt' / name).parent.mkdir(exist_ok=True)
        (d / 'rt' / name).write_text(GOOD * 10)
    (d / 'rt-nopos').mkdir()
    (d / 'rt-nopos' / 'rt-polarity.neg').write_text(GOOD * 10)
    (d / 'ckpt-no-options').mkdir()
    (d / 'empty-dir').mkdir()
    (d / 'ckpt-no-options' / '1.pdparams').write_bytes(b'')
    (d / 'ckpt-garbage').mkdir()
    (d / 'ckpt-garbage' / '1.pdparams').write_bytes(b'not a checkpoint\n' * 30)
    code = main_exit(['pretrain', '--train_data_path', str(d / 'good.txt'), '--vocab_file', str(d / 'vocab.txt'),
                      '--save_dir', str(d / 'ckpt'), '--max_steps', '1', '--quiet'] + TINY_MODEL)
    assert code == 0
    assert main_exit(['export-weights', '--init_from_ckpt', str(d / 'ckpt' / 'final'), '--output_dir',
                      str(d / 'bilm-tf')]) == 0
    (d / 'ckpt-garbage' / 'options.json').write_text((d / 'ckpt' / 'options.json').read_text())
    (d / 'ckpt-truncated').mkdir()  # a copy cut short
    (d / 'ckpt-truncated' / 'options.json').write_text((d / 'ckpt' / 'options.json').read_text())
    whole = (d / 'ckpt' / 'final.pdparams').read_bytes()
    (d / 'ckpt-truncated' / '1.pdparams').write_bytes(whole[:len(whole) // 2])
    return d


CKPT, OPTS, WEIGHTS = '{d}/ckpt/final', '{d}/bilm-tf/options.json', '{d}/bilm-tf/weights.hdf5'
MODEL = ['--init_from_ckpt', CKPT]
BAD_MODELS = {  # what a model flag may wrongly name, for every command that loads one
    'no such checkpoint': ['--init_from_ckpt', '{d}/nowhere/5'],
    'a checkpoint without options.json': ['--init_from_ckpt', '{d}/ckpt-no-options/1'],
    'options.json that is not JSON': ['--options_file', '{d}/broken.json', '--weight_file', WEIGHTS],
    'weights.hdf5 that is not hdf5': ['--options_file', OPTS, '--weight_file', '{d}/garbage.hdf5'],
    'a truncated checkpoint': ['--init_from_ckpt', '{d}/ckpt-truncated/1'],
    '--model no such name': ['--model', 'nosuchname'],
    '--model a directory without a model': ['--model', '{d}/empty-dir'],
    '--model with --init_from_ckpt': ['--model', CKPT, '--init_from_ckpt', CKPT],
}


def corpus_with_no_sentence(flag, out, *others):
    """The cases of a corpus flag (`flag`, a glob) that names files without a sentence: an empty file,
    and a glob of an empty and a blank file; `others`: the rest of the command's argv, `out` its output."""
    return {f'{flag} an empty file': ([flag, '{d}/empty.txt', *others], out,
                                      f'{flag} {{d}}/empty.txt: no sentence (an empty file'),
            f'{flag} a glob of empty and blank files': ([flag, '{d}/empty-glob/*', *others], out,
                                                        f'{flag} {{d}}/empty-glob/*: no sentence in its 2 files')}


# command -> {case: (argv after the command, the output path that must not appear: {o}, or one relative to
# the test's directory; eval, finetune, word2vec and predict get --output_json out.json, pretrain --save_dir out)
# [, what the error line must say]}. {d}: the shared inputs (files), {t}: the test's own directory (which the
# command must leave empty: nothing written, not even a temporary file).
TABLE = {
    'pretrain': {
        'glob matches nothing': (['--train_data_path', '{d}/none-*.txt', '--vocab_file', '{d}/vocab.txt'], 'out'),
        'vocabulary missing': (['--train_data_path', '{d}/good.txt', '--vocab_file', '{d}/none.txt'], 'out'),
        'corpus not UTF-8 for a Chinese tokenizer': (['--train_data_path', '{d}/latin1.txt', '--vocab_file',
                                                      '{d}/vocab.txt', '--tokenizer', 'chars'], 'out',
                                                     'latin1.txt:1: not valid UTF-8'),
        'corpus with a NUL byte': (['--train_data_path', '{d}/nul.txt', '--vocab_file', '{d}/vocab.txt'], 'out'),
        '--device gpu': (['--train_data_path', '{d}/good.txt', '--vocab_file', '{d}/vocab.txt', '--device', 'gpu'],
                         'out'),
        '--batch_size 0': (['--train_data_path', '{d}/good.txt', '--batch_size', '0'], 'out'),
        'resume from no checkpoint': (['--init_from_ckpt', '{d}/nowhere/5'], 'out'),
        'start from weights that are not hdf5': (['--train_data_path', '{d}/good.txt', '--vocab_file',
                                                  '{d}/vocab.txt', '--options_file', OPTS, '--weight_file',
                                                  '{d}/garbage.hdf5'], 'out'),
        'the old --init_options_file': (['--init_options_file', OPTS], 'out'),
        '--max_steps -1': (['--train_data_path', '{d}/good.txt', '--max_steps', '-1'], 'out',
                           "argument --max_steps: expected a positive integer, got '-1'"),
        '--save_freq 0': (['--train_data_path', '{d}/good.txt', '--save_freq', '0'], 'out',
                          "argument --save_freq: expected a positive integer, got '0'"),
        '--epochs 0': (['--train_data_path', '{d}/good.txt', '--epochs', '0'], 'out', 'argument --epochs'),
        '--max_minutes 0': (['--train_data_path', '{d}/good.txt', '--max_minutes', '0'], 'out',
                            "argument --max_minutes: expected a number > 0, got '0'"),
        'an abbreviated flag': (['--train_data_path', '{d}/good.txt', '--max_step', '2'], 'out',
                                'unrecognized arguments: --max_step 2'),
        **corpus_with_no_sentence('--train_data_path', 'out', '--vocab_file', '{d}/vocab.txt'),
        'empty held-out file': (['--train_data_path', '{d}/good.txt', '--vocab_file', '{d}/vocab.txt',
                                 '--dev_data_path', '{d}/blank.txt'], 'out',
                                '--dev_data_path {d}/blank.txt: no sentence (its 3 lines are blank'),
        '--save_dir is a file': (['--train_data_path', '{d}/good.txt', '--save_dir', '{d}/a-file'], 'out',
                                 'argument --save_dir: {d}/a-file: is a file; expected a directory'),
        '--save_dir under a file': (['--train_data_path', '{d}/good.txt', '--save_dir', '{d}/a-file/run'], 'out',
                                    'argument --save_dir: {d}/a-file/run: cannot be made: {d}/a-file is a file'),
        '--save_dir where nothing can be written': (['--train_data_path', '{d}/good.txt', '--save_dir', '/sys/run'],
                                                    'out', 'argument --save_dir: /sys/run: cannot write in /sys'),
        '--init_from_weights misspelt': (['--train_data_path', '{d}/good.txt', '--vocab_file', '{d}/vocab.txt',
                                          '--init_from_weights', 'smal'], 'out', 'did you mean small?'),
    },
    'eval': {
        'glob matches nothing': (['--dev_data_path', '{d}/none-*', *MODEL], 'out.json'),
        'held-out text with a NUL byte': (['--dev_data_path', '{d}/nul.txt', *MODEL], 'out.json',
                                          'nul.txt:2: NUL byte'),
        '--device gpu': (['--dev_data_path', '{d}/good.txt', *MODEL, '--device', 'gpu'], 'out.json'),
        '--batch_size 0': (['--dev_data_path', '{d}/good.txt', *MODEL, '--batch_size', '0'], 'out.json'),
        '--unroll_steps -3': (['--dev_data_path', '{d}/good.txt', *MODEL, '--unroll_steps', '-3'], 'out.json'),
        'empty held-out file': (['--dev_data_path', '{d}/empty.txt', *MODEL], 'out.json',
                                '--dev_data_path {d}/empty.txt: no sentence'),
        '--output_json is a directory': (['--dev_data_path', '{d}/good.txt', *MODEL, '--output_json', '{t}'],
                                         'out.json', 'argument --output_json: {t}: is a directory'),
        '--output_json where its directory cannot be made': (['--dev_data_path', '{d}/good.txt', *MODEL,
                                                              '--output_json', '{d}/a-file/x/e.json'], 'out.json',
                                                             'argument --output_json: {d}/a-file/x/e.json: its directory '
                                                             '{d}/a-file/x cannot be made: {d}/a-file is a file'),
        '--model misspelt': (['--dev_data_path', '{d}/good.txt', '--model', 'orignal'], 'out.json',
                             'orignal: not a model (did you mean original or original-5.5b?)'),
        **{model: (['--dev_data_path', '{d}/good.txt', '--vocab_file', '{d}/vocab.txt', *flags], 'out.json')
           for model, flags in BAD_MODELS.items()},
    },
    'finetune': {
        'no such --data_dir': (['--data_dir', '{d}/none', *MODEL], 'out.json'),
        'a --data_dir without its .pos file': (['--data_dir', '{d}/rt-nopos', *MODEL], 'out.json'),
        '--device gpu': (['--data_dir', '{d}/rt', *MODEL, '--device', 'gpu'], 'out.json'),
        '--batch_size 0': (['--data_dir', '{d}/rt', *MODEL, '--batch_size', '0'], 'out.json'),
        '--folds 0': (['--data_dir', '{d}/rt', *MODEL, '--folds', '0'], 'out.json'),
        '--word_vectors missing': (['--data_dir', '{d}/rt', *MODEL, '--word_vectors', '{d}/none.bin'], 'out.json'),
        '--epochs 0': (['--data_dir', '{d}/rt', *MODEL, '--epochs', '0'], 'out.json', 'argument --epochs'),
        'a .pos file of blank lines': (['--data_dir', '{d}/rt-empty-pos', *MODEL], 'out.json', 'rt-polarity.pos: no '
                                       'sentences'),
        '--output_json where nothing can be written': (['--data_dir', '{d}/rt', *MODEL, '--output_json', '/sys/r.json'],
                                                       'out.json', 'argument --output_json: /sys/r.json: cannot write'),
        **{model: (['--data_dir', '{d}/rt', *flags], 'out.json') for model, flags in BAD_MODELS.items()},
    },
    'word2vec': {
        '--word_vectors missing': (['--data_dir', '{d}/rt', '--word_vectors', '{d}/none.bin'], 'out.json'),
        '--word_vectors not word2vec': (['--data_dir', '{d}/rt', '--word_vectors', '{d}/garbage.hdf5'], 'out.json'),
        'no such --data_dir': (['--data_dir', '{d}/none', '--train_data_path', '{d}/good.txt'], 'out.json'),
        '--w2v_dim 0': (['--data_dir', '{d}/rt', '--train_data_path', '{d}/good.txt', '--w2v_dim', '0'], 'out.json'),
        '--device gpu': (['--data_dir', '{d}/rt', '--train_data_path', '{d}/good.txt', '--device', 'gpu'],
                         'out.json'),
        'the old --max_vocab_size': (['--data_dir', '{d}/rt', '--word_vectors', '{d}/none.bin', '--max_vocab_size',
                                      '10'], 'out.json'),
        'corpus glob matches nothing': (['--train_data_path', '{d}/none-*', '--output_word_vectors', '{d}/o/v.bin'],
                                        'o/v.bin'),
        'empty corpus': (['--train_data_path', '{d}/empty.txt', '--output_word_vectors', '{t}/v.bin'], 'v.bin',
                         '--train_data_path {d}/empty.txt: no sentence'),
        '--output_word_vectors is a directory': (['--train_data_path', '{d}/good.txt', '--output_word_vectors', '{t}'],
                                                 'v.bin', 'argument --output_word_vectors: {t}: is a directory'),
        '--w2v_epochs -1': (['--data_dir', '{d}/rt', '--train_data_path', '{d}/good.txt', '--w2v_epochs', '-1'],
                            'out.json', 'argument --w2v_epochs'),
    },
    'embed': {
        'input missing': (['{d}/none.txt', '{o}', *MODEL], '{o}'),
        'input not UTF-8 for a Chinese tokenizer': (['{d}/latin1.txt', '{o}', *MODEL, '--tokenizer', 'chars'], '{o}',
                                                    'latin1.txt:1: not valid UTF-8'),
        '--device gpu': (['{d}/good.txt', '{o}', *MODEL, '--device', 'gpu'], '{o}'),
        '--cuda-device 0 (a GPU)': (['{d}/good.txt', '{o}', *MODEL, '--cuda-device', '0'], '{o}'),
        '--batch-size 0': (['{d}/good.txt', '{o}', *MODEL, '--batch-size', '0'], '{o}'),
        '--top --output_format all': (['{d}/good.txt', '{o}', *MODEL, '--top', '--output_format', 'all'], '{o}'),
        '--use-sentence-keys with a repeated sentence': (['{d}/dup.txt', '{o}', *MODEL, '--use-sentence-keys'], '{o}'),
        'no such --inference_model': (['{d}/good.txt', '{o}', '--inference_model', '{d}/none'], '{o}'),
        'output_file is a directory': (['{d}/good.txt', '{t}', *MODEL], '{o}', 'argument output_file: {t}: is a '
                                       'directory; expected a file name'),
        'output_file under a file': (['{d}/good.txt', '{d}/a-file/out.hdf5', *MODEL], '{o}',
                                     'argument output_file: {d}/a-file/out.hdf5: its directory {d}/a-file is a file, '
                                     'not a directory'),
        'output_file where nothing can be written': (['{d}/good.txt', '/sys/out.hdf5', *MODEL], '{o}',
                                                     'argument output_file: /sys/out.hdf5: cannot write in /sys'),
        'an empty input file': (['{d}/empty.txt', '{o}', *MODEL], '{o}', '{d}/empty.txt: no sentence (an empty file'),
        'an input of blank lines': (['{d}/blank.txt', '{o}', *MODEL], '{o}', '{d}/blank.txt: no sentence (its 3 '
                                    'lines are blank'),
        'an input that is a directory': (['{d}/empty-dir', '{o}', *MODEL], '{o}', '{d}/empty-dir: a directory'),
        '--batch-size -3': (['{d}/good.txt', '{o}', *MODEL, '--batch-size', '-3'], '{o}',
                            "argument --batch_size: expected a positive integer, got '-3'"),
        'an abbreviated flag': (['{d}/good.txt', '{o}', *MODEL, '--batch', '4'], '{o}',
                                'unrecognized arguments: --batch 4'),
        '--model misspelt': (['{d}/good.txt', '{o}', '--model', 'bundld'], '{o}', 'bundld: not a model (did you mean '
                             'bundled or bundled-zh?)'),
        **{model: (['{d}/good.txt', '{o}', *flags], '{o}') for model, flags in BAD_MODELS.items()},
    },
    'predict': {
        'no prefix': ([*MODEL], 'out.json'),
        '--prefix_file missing': ([*MODEL, '--prefix_file', '{d}/none.txt'], 'out.json'),
        '--prefix_file not UTF-8 for a Chinese tokenizer': ([*MODEL, '--prefix_file', '{d}/latin1.txt', '--tokenizer',
                                                             'chars'], 'out.json', 'latin1.txt:1: not valid UTF-8'),
        '--device gpu': ([*MODEL, '--prefix', 'the', '--device', 'gpu'], 'out.json'),
        '--top_k 0 --sample 0': ([*MODEL, '--prefix', 'the', '--top_k', '0'], 'out.json'),
        '--sample_max_tokens 0': ([*MODEL, '--prefix', 'the', '--sample', '1', '--sample_max_tokens', '0'],
                                  'out.json'),
        '--top 2 (--top_k abbreviated)': ([*MODEL, '--prefix', 'the', '--top', '2'], 'out.json',
                                         'unrecognized arguments: --top 2'),
        '--sample -1': ([*MODEL, '--prefix', 'the', '--sample', '-1'], 'out.json', 'argument --sample'),
        'an empty --prefix_file, no --prefix': ([*MODEL, '--prefix_file', '{d}/empty.txt'], 'out.json',
                                                '--prefix_file {d}/empty.txt: an empty file'),
        '--output_json under a file': ([*MODEL, '--prefix', 'the', '--output_json', '{d}/a-file/p.json'], 'out.json',
                                       'argument --output_json: {d}/a-file/p.json: its directory {d}/a-file is a file'),
        **{model: (['--prefix', 'the', '--vocab_file', '{d}/vocab.txt', *flags], 'out.json')
           for model, flags in BAD_MODELS.items()},
    },
    'dump': {
        'nothing to write': ([*MODEL], 'out'),
        '--vocab_file missing': ([*MODEL, '--vocab_file', '{d}/none.txt', '--output_dir', '{o}'], '{o}'),
        '--device gpu': ([*MODEL, '--output_dir', '{o}', '--device', 'gpu'], '{o}'),
        'hdf5 where its directory cannot be made': ([*MODEL, '--output_file', '{d}/a-file/x/t.hdf5'], '{o}',
                                                    'cannot be made: {d}/a-file is a file'),
        'an unknown embedding': ([*MODEL, '--output_dir', '{o}', '--embeddings', 'lstm'], '{o}'),
        '--output_file is a directory': ([*MODEL, '--output_file', '{t}'], '{o}',
                                         'argument --output_file: {t}: is a directory'),
        '--output_dir is a file': ([*MODEL, '--output_dir', '{d}/a-file'], '{o}',
                                   'argument --output_dir: {d}/a-file: is a file; expected a directory'),
        '--output_dir where nothing can be written': ([*MODEL, '--output_dir', '/sys/dump'], '{o}',
                                                      'argument --output_dir: /sys/dump: cannot write in /sys'),
        **{model: (['--vocab_file', '{d}/vocab.txt', '--output_dir', '{o}', *flags], '{o}')
           for model, flags in BAD_MODELS.items()},
    },
    'export-weights': {
        'no such checkpoint': (['--init_from_ckpt', '{d}/nowhere/5', '--output_dir', '{o}'], '{o}'),
        'a checkpoint without options.json': (['--init_from_ckpt', '{d}/ckpt-no-options/1', '--output_dir', '{o}'],
                                              '{o}'),
        'a .pdparams that is not one': (['--init_from_ckpt', '{d}/ckpt-garbage/1', '--output_dir', '{o}'], '{o}'),
        'no --output_dir': ([*MODEL], 'out'),
        '--output_dir is a file': ([*MODEL, '--output_dir', '{d}/a-file'], 'out'),
        '--output_dir under a file': ([*MODEL, '--output_dir', '{d}/a-file/x'], 'out',
                                      'argument --output_dir: {d}/a-file/x: cannot be made: {d}/a-file is a file'),
        '--output_dir where nothing can be written': ([*MODEL, '--output_dir', '/sys/x'], 'out', 'cannot write in /sys'),
        'bilm-tf files are not a checkpoint': (['--options_file', OPTS, '--output_dir', '{o}'], '{o}'),
        '--model bilm-tf files, not a checkpoint': (['--model', '{d}/bilm-tf', '--output_dir', '{o}'], '{o}'),
        '--model no such name': (['--model', 'nosuchname', '--output_dir', '{o}'], '{o}'),
        '--model a directory without a model': (['--model', '{d}/empty-dir', '--output_dir', '{o}'], '{o}'),
        '--model with --init_from_ckpt': (['--model', CKPT, '--init_from_ckpt', CKPT, '--output_dir', '{o}'], '{o}'),
    },
    'export-inference': {
        '--formats tflite': ([*MODEL, '--output_dir', '{o}', '--formats', 'tflite'], '{o}'),
        '--output_dir is a file': ([*MODEL, '--output_dir', '{d}/a-file'], 'out'),
        '--output_dir under a file': ([*MODEL, '--output_dir', '{d}/a-file/export'], 'out', 'cannot be made'),
        '--output_dir where nothing can be written': ([*MODEL, '--output_dir', '/sys/export'], 'out',
                                                      'argument --output_dir: /sys/export: cannot write in /sys'),
        'a .pdparams that is not one': (['--init_from_ckpt', '{d}/ckpt-garbage/1', '--output_dir', '{o}'], '{o}'),
        '--quantize int8 without onnx': ([*MODEL, '--output_dir', '{o}', '--formats', 'paddle', '--quantize', 'int8'],
                                         '{o}'),
        **{model: (['--output_dir', '{o}', *flags], '{o}') for model, flags in BAD_MODELS.items()},
    },
    'build-vocab': {
        'glob matches nothing': (['--train_data_path', '{d}/none-*', '--output_file', '{o}'], '{o}'),
        'corpus not UTF-8 for a Chinese tokenizer': (['--train_data_path', '{d}/latin1.txt', '--output_file', '{o}',
                                                      '--tokenizer', 'chars'], '{o}', 'latin1.txt:1: not valid UTF-8'),
        'corpus with a NUL byte': (['--train_data_path', '{d}/nul.txt', '--output_file', '{o}'], '{o}'),
        '--min_count 0': (['--train_data_path', '{d}/good.txt', '--output_file', '{o}', '--min_count', '0'], '{o}'),
        '--max_vocab_size -1': (['--train_data_path', '{d}/good.txt', '--output_file', '{o}', '--max_vocab_size',
                                 '-1'], '{o}'),
        '--output_file under a file': (['--train_data_path', '{d}/good.txt', '--output_file', '{d}/a-file/v.txt'],
                                       '{o}', 'its directory {d}/a-file is a file'),
        '--max_characters_per_token 2': (['--train_data_path', '{d}/good.txt', '--output_file', '{o}',
                                          '--max_characters_per_token', '2'], '{o}'),
        **corpus_with_no_sentence('--train_data_path', '{o}', '--output_file', '{o}'),
        '--output_file is a directory': (['--train_data_path', '{d}/good.txt', '--output_file', '{t}'], '{o}',
                                         'argument --output_file: {t}: is a directory'),
        '--output_corpus where nothing can be written': (['--train_data_path', '{d}/good.txt', '--output_file', '{o}',
                                                          '--output_corpus', '/sys/c.txt'], '{o}',
                                                         'argument --output_corpus: /sys/c.txt: cannot write in /sys'),
    },
    'demo': {
        '--zh without a model': (['--zh', '--output_dir', '{o}'], '{o}'),
        'a model without --zh': (['--init_from_ckpt', CKPT, '--output_dir', '{o}'], '{o}'),
        '--zh with no such checkpoint': (['--zh', '--init_from_ckpt', '{d}/nowhere/5', '--train_data_path',
                                          '{d}/good.txt'], 'out'),
        '--zh with text that is not UTF-8': (['--zh', '--init_from_ckpt', CKPT, '--train_data_path',
                                              '{d}/latin1.txt'], 'out'),
        '--zh with a missing text': (['--zh', '--init_from_ckpt', CKPT, '--train_data_path', '{d}/none.txt'], 'out'),
        '--output_dir is a file': (['--output_dir', '{d}/a-file'], 'out'),
        '--output_dir where nothing can be written': (['--output_dir', '/sys/demo'], 'out',
                                                      'argument --output_dir: /sys/demo: cannot write in /sys'),
        '--zh with no such model name': (['--zh', '--model', 'nosuchname', '--train_data_path', '{d}/good.txt'],
                                         'out'),
        '--model with --init_from_ckpt': (['--zh', '--model', CKPT, '--init_from_ckpt', CKPT, '--train_data_path',
                                           '{d}/good.txt'], 'out'),
    },
}
CASES = [(command, case) for command, cases in TABLE.items() for case in cases]


def test_every_subcommand_meets_at_least_six_hostile_inputs():
    from paddle_elmo.cli import COMMANDS
    assert set(TABLE) == set(COMMANDS)
    assert {command: len(cases) for command, cases in TABLE.items() if len(cases) < 6} == {}


def assert_one_line_error(code, err):
    """Exit 2 and stderr exactly one line, 'error: ...', no traceback -> that line."""
    assert code == 2, err[-3000:]
    assert 'Traceback' not in err, err[-3000:]
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith('error: '), err[-3000:]
    return lines[0]


@pytest.mark.parametrize('command, case', CASES, ids=[f'{c}: {k}' for c, k in CASES])
def test_a_hostile_input_is_one_line_exit_2_and_no_output(files, tmp_path, capsys, command, case):
    argv, output, *said = TABLE[command][case]
    fill = {'d': str(files), 'o': str(tmp_path / 'out'), 't': str(tmp_path)}
    argv = [arg.format(**fill) for arg in argv]
    output = output.format(**fill)
    output = output if os.path.isabs(output) else str(tmp_path / output)
    if command in ('eval', 'finetune', 'word2vec', 'predict'):  # they write only with it
        argv += ['--output_json', str(tmp_path / 'out.json')]
    if command == 'pretrain':
        argv += ['--save_dir', str(tmp_path / 'out'), '--max_steps', '1'] + TINY_MODEL
    capsys.readouterr()
    code = main_exit([command, *argv, '--quiet'])
    line = assert_one_line_error(code, capsys.readouterr().err)
    for words in said:
        assert words.format(**fill) in line
    assert not os.path.exists(output), f'{output} was left behind'
    assert sorted(os.listdir(tmp_path)) == [], 'something was written'


def test_the_table_has_each_kind_of_hostile_input_issue_52_names():
    """Output paths (a directory where a file is expected, a place nothing can be written in), counts
    that cannot be, empty inputs, abbreviated flags and misspelt model names, in every command that has them."""
    kinds = {'is a directory': ['embed', 'eval', 'word2vec', 'dump', 'build-vocab'],
             'nothing can be written': ['pretrain', 'finetune', 'embed', 'dump', 'export-weights', 'export-inference',
                                        'build-vocab', 'demo'],
             'empty': ['pretrain', 'eval', 'embed', 'word2vec', 'build-vocab', 'predict'],
             'abbreviated': ['pretrain', 'embed', 'predict'], 'misspelt': ['pretrain', 'eval', 'embed'],
             '--max_steps -1': ['pretrain'], '--save_freq 0': ['pretrain'], '--max_minutes 0': ['pretrain']}
    for kind, commands in kinds.items():
        for command in commands:
            assert any(kind in case and len(entry) == 3 for case, entry in TABLE[command].items()), (command, kind)


# A package an extra installs, missing: a fresh interpreter in which importing it fails (once the inputs are
# checked: embed names its model, so that no warning that the bundled one is used comes first).
MISSING = {
    'paddle': (['embed', 'in.txt', 'out.hdf5', '--model', 'bundled'],
               'pip install "paddle-elmo[cpu]" (or paddlepaddle-gpu for a GPU)'),
    'gensim': (['word2vec', '--data_dir', 'rt', '--word_vectors', 'w.bin'], 'pip install "paddle-elmo[classify]"'),
    'jieba': (['build-vocab', '--train_data_path', 'in.txt', '--output_file', 'v.txt', '--tokenizer', 'jieba'],
              'pip install "paddle-elmo[zh]"'),
}


@pytest.mark.parametrize('package', list(MISSING))
def test_a_missing_package_names_the_extra_that_installs_it(tmp_path, package):
    argv, advice = MISSING[package]
    (tmp_path / 'in.txt').write_text(GOOD)
    (tmp_path / 'rt').mkdir()
    for name in ('rt-polarity.pos', 'rt-polarity.neg'):
        (tmp_path / 'rt' / name).write_text(GOOD * 10)
    (tmp_path / 'w.bin').write_text('2 2\nthe 1 0\ncat 0 1\n')
    hide = (f'import sys; sys.modules[{package!r}] = None; from paddle_elmo.cli import main; '
            f'sys.exit(main({argv + ["--quiet"]!r}))')
    proc = subprocess.run([sys.executable, '-c', hide], capture_output=True, text=True, cwd=tmp_path,
                          env=dict(ENV, PYTHONPATH=ROOT), timeout=300)
    line = assert_one_line_error(proc.returncode, proc.stderr)
    assert line.startswith(f'error: {package}') and ' cannot be imported (' in line and line.endswith(advice)
    assert not (tmp_path / 'out.hdf5').exists() and not (tmp_path / 'v.txt').exists()


def test_an_unexpected_error_keeps_its_traceback(monkeypatch, capsys):
    """A bug is not a user's mistake: the boundary lets it through, traceback and all."""
    from paddle_elmo.cli.runner import run

    def broken():
        raise ZeroDivisionError('a bug')

    with pytest.raises(ZeroDivisionError):
        run(broken)

    def missing_module_of_ours():
        raise ModuleNotFoundError("No module named 'paddle_elmo.nothing'", name='paddle_elmo.nothing')

    with pytest.raises(ModuleNotFoundError):
        run(missing_module_of_ours)


# ---- odd but fine: a byte-order mark, standard input and output, an empty file among others -----------

BOM = '\ufeff'


def test_a_byte_order_mark_is_no_text_in_any_file_a_command_reads(tmp_path):
    """Notepad's and Excel's UTF-8 files begin with U+FEFF: every reader drops it, so that the first
    token is `the`, not `\\ufeffthe` (another word, another sentence key)."""
    from paddle_elmo.classify.data import read_sentences
    from paddle_elmo.text.corpus import check_has_sentence
    from paddle_elmo.fileio import iter_lines, read_text
    from paddle_elmo.files.run_configs import read_json
    from paddle_elmo.text.tokenizers import as_token_lists
    from paddle_elmo.text.vocabulary import Vocabulary, count_words
    for name, text in (('corpus.txt', GOOD), ('vocab.txt', '\n'.join(WORDS) + '\n'), ('options.json', '{"a": 1}\n')):
        (tmp_path / name).write_text(text, encoding='utf-8')
        (tmp_path / f'bom-{name}').write_text(BOM + text, encoding='utf-8')
    bom, plain = str(tmp_path / 'bom-corpus.txt'), str(tmp_path / 'corpus.txt')
    assert [line for _, _, line in iter_lines(bom)] == [line for _, _, line in iter_lines(plain)]
    assert [n for _, n, _ in iter_lines(bom)][0] == len('the cat sat on the mat\n') + 3  # the bytes still count
    assert read_text(bom) == read_text(plain) == GOOD
    assert count_words(bom, progress=False) == count_words(plain, progress=False)
    assert read_sentences(bom, 'moses') == read_sentences(plain, 'moses')
    assert Vocabulary(str(tmp_path / 'bom-vocab.txt')).tokens == Vocabulary(str(tmp_path / 'vocab.txt')).tokens
    assert read_json(str(tmp_path / 'bom-options.json'), 'options file') == {'a': 1}
    for tokenizer in ('whitespace', 'moses', 'chars'):  # a string read with its file's mark, in Python
        assert as_token_lists([BOM + 'Hello world.'], tokenizer) == as_token_lists(['Hello world.'], tokenizer)
    (tmp_path / 'only-bom.txt').write_text(BOM + '\n', encoding='utf-8')
    with pytest.raises(InputError, match='only-bom.txt: no sentence'):
        check_has_sentence([str(tmp_path / 'only-bom.txt')], str(tmp_path / 'only-bom.txt'))


def embedded(path):
    """An embed hdf5 -> ({key: array}, sentence_to_index)."""
    with h5py.File(path, 'r') as f:
        return {k: f[k][...] for k in f if k != 'sentence_to_index'}, json.loads(f['sentence_to_index'][0])


def test_embed_of_a_file_with_a_byte_order_mark_writes_what_the_file_without_one_does(files, tmp_path):
    (tmp_path / 'bom.txt').write_text(BOM + GOOD, encoding='utf-8')
    (tmp_path / 'plain.txt').write_text(GOOD, encoding='utf-8')
    for name in ('bom', 'plain'):
        source = tmp_path / f'{name}.txt'
        assert main_exit(['embed', str(source), str(tmp_path / f'{name}.hdf5'), '--init_from_ckpt',
                          str(files / 'ckpt' / 'final'), '--quiet']) == 0
    (bom, bom_index), (plain, plain_index) = embedded(tmp_path / 'bom.hdf5'), embedded(tmp_path / 'plain.hdf5')
    assert bom_index == plain_index and list(bom_index)[0] == 'the cat sat on the mat'
    assert bom.keys() == plain.keys() and all(np.array_equal(bom[k], plain[k]) for k in bom)


def test_embed_reads_standard_input_and_writes_the_hdf5_to_standard_output(files, tmp_path, monkeypatch, capsys):
    """`-` as allennlp elmo takes it (input_file: standard input), and as output_file the hdf5 on stdout:
    written to a temporary file first (hdf5 seeks), then copied, then removed."""
    import tempfile
    model = ['--init_from_ckpt', str(files / 'ckpt' / 'final'), '--quiet']
    assert main_exit(['embed', str(files / 'good.txt'), str(tmp_path / 'file.hdf5'), *model]) == 0
    stdout = io.TextIOWrapper(io.BytesIO())
    monkeypatch.setattr(sys, 'stdin', io.TextIOWrapper(io.BytesIO((BOM + GOOD * 5).encode())))
    monkeypatch.setattr(sys, 'stdout', stdout)
    before = set(os.listdir(tempfile.gettempdir()))
    capsys.readouterr()
    assert main_exit(['embed', '-', '-', *model]) == 0
    assert capsys.readouterr().err == ''  # --quiet: the result line is the log's (stdout holds the hdf5)
    stdout.flush()
    (tmp_path / 'stdout.hdf5').write_bytes(stdout.buffer.getvalue())
    (got, got_index), (expected, expected_index) = embedded(tmp_path / 'stdout.hdf5'), embedded(tmp_path / 'file.hdf5')
    assert got_index == expected_index and got.keys() == expected.keys()
    assert all(np.array_equal(got[k], expected[k]) for k in got)
    assert not {p for p in set(os.listdir(tempfile.gettempdir())) - before if p.startswith('paddle-elmo-std')}


def test_standard_input_and_output_through_real_pipes(files, tmp_path):
    """The same in a process of its own, reading a pipe and writing one; a line of standard input that a
    Chinese tokenizer cannot read is named as <stdin> (text.encodings: Latin-1 is read for Latin-script
    tokenizers only)."""
    command = [sys.executable, '-m', 'paddle_elmo', 'embed', '-', '-', '--init_from_ckpt', str(files / 'ckpt' / 'final')]
    proc = subprocess.run(command, input=GOOD.encode(), capture_output=True, env=ENV, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.startswith(b'\x89HDF') and 'wrote 2 sentences to standard output' in proc.stderr.decode()
    (tmp_path / 'o.hdf5').write_bytes(proc.stdout)
    assert list(embedded(tmp_path / 'o.hdf5')[1]) == GOOD.splitlines()
    proc = subprocess.run(command + ['--tokenizer', 'chars'], input=b'fine\nnot \xff UTF-8\n', capture_output=True,
                          env=ENV, cwd=tmp_path, timeout=300)
    assert proc.returncode == 2 and proc.stdout == b''
    assert proc.stderr.decode().strip().splitlines()[-1] == ('error: <stdin>:2: not valid UTF-8 (invalid start byte at '
                                                             'byte 4 of the line); --tokenizer chars reads UTF-8 only '
                                                             '(convert the file, e.g. with iconv)')


def test_standard_output_that_is_a_terminal_gets_no_hdf5(files, tmp_path, monkeypatch, capsys):
    class Terminal(io.TextIOWrapper):
        def isatty(self):
            return True

    monkeypatch.setattr(sys, 'stdout', Terminal(io.BytesIO()))
    capsys.readouterr()
    code = main_exit(['embed', str(files / 'good.txt'), '-', '--init_from_ckpt', str(files / 'ckpt' / 'final'),
                      '--quiet'])
    line = assert_one_line_error(code, capsys.readouterr().err)
    assert line == 'error: output_file -: standard output is a terminal; redirect it (> out.hdf5, | ...) or give a file'
    assert sys.stdout.buffer.getvalue() == b''


def test_an_empty_file_among_a_glob_s_files_is_a_warning_naming_it(tmp_path, caplog):
    from paddle_elmo.text.vocabulary import count_words
    (tmp_path / 'a.txt').write_text(GOOD)
    (tmp_path / 'b.txt').write_text('')
    (tmp_path / 'c.txt').write_text('\n\n')
    with caplog.at_level(logging.WARNING, logger='paddle_elmo'):
        counts = count_words(str(tmp_path / '*.txt'), progress=False)
    assert counts['the'] == 3
    assert [r.getMessage() for r in caplog.records] == [
        f'{tmp_path / "b.txt"}: no sentence (an empty file; expected one sentence per line)',
        f'{tmp_path / "c.txt"}: no sentence (its 2 lines are blank; expected one sentence per line)']


def test_an_output_s_missing_directories_are_made_when_it_is_written_and_not_before(files, tmp_path):
    """The one rule: an output's missing directories are made when it is written, and not at all when
    the command fails; the check before any work makes nothing."""
    from paddle_elmo.export.export_dirs import check_output_dir, temp_dir_beside
    from paddle_elmo.fileio import check_output_directory, check_output_file
    deep = tmp_path / 'a' / 'b' / 'c'
    assert check_output_directory(str(deep), '--output_dir') == str(deep)
    assert check_output_file(str(deep / 'r.json'), '--output_json') == str(deep / 'r.json')
    assert check_output_dir(str(deep)) == str(deep.parent)
    assert os.listdir(tmp_path) == []
    made = temp_dir_beside(str(deep), str(deep.parent), '.tmp')  # an export, when it is written
    assert os.path.dirname(made) == str(deep.parent) and os.path.basename(made).startswith('.c.')
    os.rmdir(made)
    assert main_exit(['export-weights', '--init_from_ckpt', str(files / 'ckpt' / 'final'), '--output_dir',
                      str(tmp_path / 'x' / 'y'), '--quiet']) == 0
    assert sorted(os.listdir(tmp_path / 'x' / 'y')) == ['options.json', 'weights.hdf5']
    assert main_exit(['build-vocab', '--train_data_path', str(files / 'good.txt'), '--output_file',
                      str(tmp_path / 'v' / 'w' / 'vocab.txt'), '--quiet']) == 0
    assert (tmp_path / 'v' / 'w' / 'vocab.txt').read_text().split()[:4] == ['<S>', '</S>', '<UNK>', 'the']
    # a failure while writing (a key used twice, found on line 3) leaves no directory behind
    code = main_exit(['embed', str(files / 'dup.txt'), str(tmp_path / 'e' / 'f' / 'o.hdf5'), '--init_from_ckpt',
                      str(files / 'ckpt' / 'final'), '--use_sentence_keys', '--quiet'])
    assert code == 2 and not (tmp_path / 'e').exists()
