"""`-` as a file: standard input for a file a command reads once (or copies first), standard output for
a text, JSON or hdf5 file it writes whole, and refused in one line (exit 2, as the flags are parsed)
for every other path flag: a glob a run reads again, a directory, a model's files, a binary file
written in place. One mechanism: the flag's type (arguments.STDIO_TYPES), read and written through
fileio.input_path / output_path."""
import argparse
import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT, one_line_error
from paddle_elmo.cli import command_parsers
from paddle_elmo.cli.arguments import NOT_PATHS, STDIO_TYPES

# Where `-` is a standard stream: (command, flag or positional argument) -> 'input' or 'output'.
TAKES_STDIO = {('embed', 'input_file'): 'input', ('embed', 'output_file'): 'output',
               ('predict', 'prefix_file'): 'input', ('predict', 'output_json'): 'output',
               ('eval', 'dev_data_path'): 'input', ('eval', 'output_json'): 'output',
               ('build-vocab', 'train_data_path'): 'input', ('build-vocab', 'output_file'): 'output',
               ('build-vocab', 'output_corpus'): 'output',
               ('finetune', 'output_json'): 'output', ('word2vec', 'output_json'): 'output'}
ENV = dict(os.environ, PYTHONPATH=ROOT, OMP_NUM_THREADS='1')


def paths(parser):
    """The actions of `parser` whose value may name a file or directory: not a switch, a choice, a number
    (a type of its own that is not a path's) or a text (NOT_PATHS)."""
    from paddle_elmo.cli.arguments import output_directory, output_file
    path_types = (None, str, output_file, output_directory, *STDIO_TYPES)
    return [a for a in parser._actions if not isinstance(a, argparse._HelpAction) and a.nargs != 0
            and a.choices is None and a.type in path_types and a.dest not in NOT_PATHS]


def test_every_path_flag_of_every_command_takes_dash_as_a_stream_or_refuses_it_in_one_line(capsys):
    found = {}
    for command, parser in command_parsers().items():
        for action in paths(parser):
            name = action.option_strings[0] if action.option_strings else action.dest
            if action.type in STDIO_TYPES:
                found[(command, action.dest)] = STDIO_TYPES[action.type]
                parser._check_stdio(argparse.Namespace(**{action.dest: '-'}))  # taken
                continue
            with pytest.raises(SystemExit) as e:
                parser._check_stdio(argparse.Namespace(**{action.dest: '-'}))
            assert e.value.code == 2
            err = capsys.readouterr().err
            assert err.startswith(f'error: argument {name}: - (standard input or output) is not taken here; give a '
                                  'path') and err.count('\n') == 1, (command, err)
    assert found == TAKES_STDIO


def test_build_vocab_reads_standard_input_and_writes_the_vocabulary_to_standard_output(tmp_path):
    proc = subprocess.run([sys.executable, '-m', 'paddle_elmo', 'build-vocab', '--train_data_path', '-',
                           '--output_file', '-', '--output_corpus', str(tmp_path / 'corpus.txt')],
                          input='the cat sat\n\nthe dog\n', capture_output=True, text=True, cwd=tmp_path, env=ENV,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout == '<S>\n</S>\n<UNK>\nthe\ncat\ndog\nsat\n'  # the vocabulary alone: the report is on stderr
    assert 'wrote 7 tokens to -' in proc.stderr
    assert (tmp_path / 'corpus.txt').read_text() == 'the cat sat\nthe dog\n'
    assert sorted(os.listdir(tmp_path)) == ['corpus.txt']


def test_a_standard_input_error_names_stdin(tmp_path):
    proc = subprocess.run([sys.executable, '-m', 'paddle_elmo', 'build-vocab', '--train_data_path', '-',
                           '--output_file', str(tmp_path / 'v.txt'), '--tokenizer', 'chars'],  # UTF-8 only
                          input=b'fine\nbad \xff line\n',
                          capture_output=True, cwd=tmp_path, env=ENV, timeout=300)
    proc.stderr = proc.stderr.decode()
    assert one_line_error(proc).startswith('error: <stdin>:2: not valid UTF-8')
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize('argv, error', [
    (['pretrain', '--train_data_path', '-', '--vocab_file', 'v.txt'],
     'argument --train_data_path: - (standard input or output) is not taken here; give a path'),
    (['finetune', '--data_dir', '-'], 'argument --data_dir: - (standard input or output) is not taken here; give a '
                                      'path (- is taken by --output_json)'),
    (['word2vec', '--train_data_path', 'c.txt', '--output_word_vectors', '-'],
     'argument --output_word_vectors: - (standard input or output) is not taken here'),
    (['build-vocab', '--train_data_path', 'c.txt', '--output_file', '-', '--output_corpus', '-'],
     'argument --output_corpus: - (standard output) is taken by --output_file already; give a path'),
    (['embed', '-', 'o.hdf5', '--vocab_file', '-'], 'argument --vocab_file: - (standard input or output) is not '
                                                    'taken here'),
])
def test_dash_where_it_cannot_work_is_one_line_before_any_work(argv, error, tmp_path):
    proc = subprocess.run([sys.executable, '-m', 'paddle_elmo', *argv], capture_output=True, text=True, cwd=tmp_path,
                          env=ENV, timeout=300, input='')
    assert one_line_error(proc).startswith(f'error: {error}')
    assert os.listdir(tmp_path) == [] and proc.stdout == ''


def test_predict_reads_prefixes_from_standard_input_and_writes_its_json_to_standard_output(tmp_path):
    proc = subprocess.run([sys.executable, '-m', 'paddle_elmo', 'predict', '--prefix_file', '-', '--output_json', '-',
                           '--top_k', '3', '--prefix', 'a'], input='the cat\n\n', capture_output=True, text=True,
                          cwd=tmp_path, env=ENV, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout)  # the JSON alone: the lines shown went to stderr
    assert [p['prefix'] for p in result['predictions']] == ['a', 'the cat', '']
    assert all(len(p['top']) == 3 for p in result['predictions'])
    assert 'forward: the cat ___' in proc.stderr and os.listdir(tmp_path) == []
