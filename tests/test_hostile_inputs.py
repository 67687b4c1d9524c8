"""The one error boundary, every subcommand: a hostile input (a missing, binary or corrupt file, a
wrong model, a device this Paddle lacks, a size of 0, a flag that no longer exists, a package not
installed) ends with exactly one line on stderr, `error: ...`, exit code 2, no traceback and nothing
at the output path. The commands run in this process (paddle_elmo.cli.main with an argv), except a
missing package, which needs a fresh interpreter. tests/test_bad_inputs.py runs the checkout's
scripts on more inputs, one process each, and checks the message's words."""
import os
import subprocess
import sys

import pytest

from conftest import ROOT
from helpers import ENV, TINY_MODEL, main_exit

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

# command -> {case: (argv after the command, the output path that must not appear: {o}, or one relative to
# the test's directory; eval, finetune, word2vec and predict get --output_json out.json, pretrain --save_dir out)}
TABLE = {
    'pretrain': {
        'glob matches nothing': (['--train_data_path', '{d}/none-*.txt', '--vocab_file', '{d}/vocab.txt'], 'out'),
        'vocabulary missing': (['--train_data_path', '{d}/good.txt', '--vocab_file', '{d}/none.txt'], 'out'),
        'corpus not UTF-8': (['--train_data_path', '{d}/latin1.txt', '--vocab_file', '{d}/vocab.txt'], 'out'),
        'corpus with a NUL byte': (['--train_data_path', '{d}/nul.txt', '--vocab_file', '{d}/vocab.txt'], 'out'),
        '--device gpu': (['--train_data_path', '{d}/good.txt', '--vocab_file', '{d}/vocab.txt', '--device', 'gpu'],
                         'out'),
        '--batch_size 0': (['--train_data_path', '{d}/good.txt', '--batch_size', '0'], 'out'),
        'resume from no checkpoint': (['--init_from_ckpt', '{d}/nowhere/5'], 'out'),
        'start from weights that are not hdf5': (['--train_data_path', '{d}/good.txt', '--vocab_file',
                                                  '{d}/vocab.txt', '--options_file', OPTS, '--weight_file',
                                                  '{d}/garbage.hdf5'], 'out'),
        'the old --init_options_file': (['--init_options_file', OPTS], 'out'),
    },
    'eval': {
        'glob matches nothing': (['--dev_data_path', '{d}/none-*', *MODEL], 'out.json'),
        'held-out text not UTF-8': (['--dev_data_path', '{d}/latin1.txt', *MODEL], 'out.json'),
        '--device gpu': (['--dev_data_path', '{d}/good.txt', *MODEL, '--device', 'gpu'], 'out.json'),
        '--batch_size 0': (['--dev_data_path', '{d}/good.txt', *MODEL, '--batch_size', '0'], 'out.json'),
        '--unroll_steps -3': (['--dev_data_path', '{d}/good.txt', *MODEL, '--unroll_steps', '-3'], 'out.json'),
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
    },
    'embed': {
        'input missing': (['{d}/none.txt', '{o}', *MODEL], '{o}'),
        'input not UTF-8': (['{d}/latin1.txt', '{o}', *MODEL], '{o}'),
        'output directory missing': (['{d}/good.txt', '{o}/missing/out.hdf5', *MODEL], '{o}'),
        '--device gpu': (['{d}/good.txt', '{o}', *MODEL, '--device', 'gpu'], '{o}'),
        '--cuda-device 0 (a GPU)': (['{d}/good.txt', '{o}', *MODEL, '--cuda-device', '0'], '{o}'),
        '--batch-size 0': (['{d}/good.txt', '{o}', *MODEL, '--batch-size', '0'], '{o}'),
        '--top --output_format all': (['{d}/good.txt', '{o}', *MODEL, '--top', '--output_format', 'all'], '{o}'),
        '--use-sentence-keys with a repeated sentence': (['{d}/dup.txt', '{o}', *MODEL, '--use-sentence-keys'], '{o}'),
        'no such --inference_model': (['{d}/good.txt', '{o}', '--inference_model', '{d}/none'], '{o}'),
        **{model: (['{d}/good.txt', '{o}', *flags], '{o}') for model, flags in BAD_MODELS.items()},
    },
    'predict': {
        'no prefix': ([*MODEL], 'out.json'),
        '--prefix_file missing': ([*MODEL, '--prefix_file', '{d}/none.txt'], 'out.json'),
        '--prefix_file not UTF-8': ([*MODEL, '--prefix_file', '{d}/latin1.txt'], 'out.json'),
        '--device gpu': ([*MODEL, '--prefix', 'the', '--device', 'gpu'], 'out.json'),
        '--top_k 0 --sample 0': ([*MODEL, '--prefix', 'the', '--top_k', '0'], 'out.json'),
        '--sample_max_tokens 0': ([*MODEL, '--prefix', 'the', '--sample', '1', '--sample_max_tokens', '0'],
                                  'out.json'),
        **{model: (['--prefix', 'the', '--vocab_file', '{d}/vocab.txt', *flags], 'out.json')
           for model, flags in BAD_MODELS.items()},
    },
    'dump': {
        'nothing to write': ([*MODEL], 'out'),
        '--vocab_file missing': ([*MODEL, '--vocab_file', '{d}/none.txt', '--output_dir', '{o}'], '{o}'),
        '--device gpu': ([*MODEL, '--output_dir', '{o}', '--device', 'gpu'], '{o}'),
        'hdf5 in a missing directory': ([*MODEL, '--output_file', '{o}/missing/t.hdf5'], '{o}'),
        'an unknown embedding': ([*MODEL, '--output_dir', '{o}', '--embeddings', 'lstm'], '{o}'),
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
        'bilm-tf files are not a checkpoint': (['--options_file', OPTS, '--output_dir', '{o}'], '{o}'),
        '--model bilm-tf files, not a checkpoint': (['--model', '{d}/bilm-tf', '--output_dir', '{o}'], '{o}'),
        '--model no such name': (['--model', 'nosuchname', '--output_dir', '{o}'], '{o}'),
        '--model a directory without a model': (['--model', '{d}/empty-dir', '--output_dir', '{o}'], '{o}'),
        '--model with --init_from_ckpt': (['--model', CKPT, '--init_from_ckpt', CKPT, '--output_dir', '{o}'], '{o}'),
    },
    'export-inference': {
        '--formats tflite': ([*MODEL, '--output_dir', '{o}', '--formats', 'tflite'], '{o}'),
        '--output_dir is a file': ([*MODEL, '--output_dir', '{d}/a-file'], 'out'),
        'a .pdparams that is not one': (['--init_from_ckpt', '{d}/ckpt-garbage/1', '--output_dir', '{o}'], '{o}'),
        '--quantize int8 without onnx': ([*MODEL, '--output_dir', '{o}', '--formats', 'paddle', '--quantize', 'int8'],
                                         '{o}'),
        **{model: (['--output_dir', '{o}', *flags], '{o}') for model, flags in BAD_MODELS.items()},
    },
    'build-vocab': {
        'glob matches nothing': (['--train_data_path', '{d}/none-*', '--output_file', '{o}'], '{o}'),
        'corpus not UTF-8': (['--train_data_path', '{d}/latin1.txt', '--output_file', '{o}'], '{o}'),
        'corpus with a NUL byte': (['--train_data_path', '{d}/nul.txt', '--output_file', '{o}'], '{o}'),
        '--min_count 0': (['--train_data_path', '{d}/good.txt', '--output_file', '{o}', '--min_count', '0'], '{o}'),
        '--max_vocab_size -1': (['--train_data_path', '{d}/good.txt', '--output_file', '{o}', '--max_vocab_size',
                                 '-1'], '{o}'),
        'output directory missing': (['--train_data_path', '{d}/good.txt', '--output_file', '{o}/missing/v.txt'],
                                     '{o}'),
        '--max_characters_per_token 2': (['--train_data_path', '{d}/good.txt', '--output_file', '{o}',
                                          '--max_characters_per_token', '2'], '{o}'),
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
    argv, output = TABLE[command][case]
    fill = {'d': str(files), 'o': str(tmp_path / 'out')}
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
    assert 'error: ' in line
    assert not os.path.exists(output), f'{output} was left behind'
    assert not [p for p in tmp_path.iterdir() if p.name.startswith('.')], 'a temporary file was left behind'


# A package an extra installs, missing: a fresh interpreter in which importing it fails.
MISSING = {
    'paddle': (['embed', 'in.txt', 'out.hdf5'], 'pip install "paddle-elmo[cpu]" (or paddlepaddle-gpu for a GPU)'),
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
