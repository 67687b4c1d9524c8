"""A user's mistake is refused at once: every command that runs on Paddle checks its flags, its files, its
model's options and its output's place before it imports Paddle (seconds of CPU at every start), so a bad
input costs a fraction of a second and its one line (exit 2). Each case runs in a process of its own,
which says at its exit whether Paddle was imported; nothing is written."""
import subprocess
import sys

import pytest

from conftest import ROOT, one_line_error
from helpers import ENV

GOOD = 'the cat sat on the mat\n'

# the command's flags (paths relative to the case's directory, made by inputs()) -> a part of its error line
CASES = {
    'embed, its input missing': (['embed', 'missing.txt', 'out.hdf5'], 'missing.txt: input file not found'),
    'eval, an empty held-out file': (['eval', '--dev_data_path', 'empty.txt'],
                                     '--dev_data_path empty.txt: no sentence (an empty file'),
    'predict, its prefix file missing': (['predict', '--prefix_file', 'missing.txt'],
                                         '--prefix_file missing.txt: file not found'),
    'dump, its vocabulary missing': (['dump', '--output_dir', 'out', '--vocab_file', 'missing.txt'],
                                     'missing.txt: vocabulary file not found'),
    'export-weights of a model that is no checkpoint': (['export-weights', '--model', 'bundled', '--output_dir', 'out'],
                                                        'already the bilm-tf format'),
    'export-inference, --verify_file without --quantize': (['export-inference', '--output_dir', 'out',
                                                            '--verify_file', 'in.txt'],
                                                           '--verify_file: the sentences an int8 model is checked on'),
    'pretrain, an empty corpus': (['pretrain', '--train_data_path', 'empty.txt', '--vocab_file', 'vocab.txt',
                                   '--save_dir', 'out'], 'empty.txt: no sentence (an empty file'),
    'pretrain into a model\'s directory': (['pretrain', '--train_data_path', 'in.txt', '--vocab_file', 'vocab.txt',
                                            '--save_dir', 'model'], '--save_dir model: holds a model'),
    'finetune, a polarity file missing': (['finetune', '--data_dir', 'rt'], 'rt-polarity.pos: data file not found'),
    'word2vec, a polarity file missing': (['word2vec', '--data_dir', 'rt', '--train_data_path', 'in.txt'],
                                          'rt-polarity.pos: data file not found'),
}

# The child: the command, then (at its exit, on stdout, which a failed command leaves empty) whether Paddle
# was imported.
CHILD = ('import atexit, sys\n'
         'atexit.register(lambda: print("paddle imported" if "paddle" in sys.modules else "no paddle"))\n'
         'from paddle_elmo.cli import main\n'
         'main(sys.argv[1:])\n')


def inputs(d):
    (d / 'in.txt').write_text(GOOD)
    (d / 'empty.txt').write_text('')
    (d / 'vocab.txt').write_text('<S>\n</S>\n<UNK>\nthe\ncat\n')
    (d / 'rt').mkdir()
    (d / 'rt' / 'rt-polarity.neg').write_text(GOOD)
    (d / 'model').mkdir()
    for name in ('options.json', 'weights.hdf5'):
        (d / 'model' / name).write_text('{}')


@pytest.mark.parametrize('case', list(CASES))
def test_a_bad_input_is_refused_in_one_line_before_paddle_is_imported(case, tmp_path):
    argv, message = CASES[case]
    inputs(tmp_path)
    proc = subprocess.run([sys.executable, '-c', CHILD, *argv], capture_output=True, text=True, cwd=tmp_path,
                          env=dict(ENV, PYTHONPATH=ROOT), timeout=120)
    assert message in one_line_error(proc)
    assert proc.stdout == 'no paddle\n', proc.stdout
    assert not (tmp_path / 'out').exists() and not (tmp_path / 'out.hdf5').exists()


def test_the_child_tells_a_command_that_imported_paddle(tmp_path):
    """The check itself: a command that gets as far as its model's weights has imported Paddle, and says so."""
    inputs(tmp_path)
    proc = subprocess.run([sys.executable, '-c', CHILD, 'embed', 'in.txt', 'out.hdf5', '--model', 'bundled'],
                          capture_output=True, text=True, cwd=tmp_path, env=dict(ENV, PYTHONPATH=ROOT), timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.splitlines()[-1] == 'paddle imported'
