"""run_pretrain.py --init_from_weights: a new run that starts from options.json + weights.hdf5 (an export
of ours, the official files, the bundled model): the biLM from the file, the softmax from it when its
rows fit the vocabulary, a fresh optimizer, and the source recorded in recipe.json."""
import json

import numpy as np
import pytest

from conftest import ROOT, one_line_error
from helpers import load, pretrain_args, run

TINY = ['--batch_size', '2', '--unroll_steps', '3', '--n_negative_samples', '4', '--log_freq', '1', '--seed', '3']


@pytest.fixture(scope='module')
def export(corpus, tmp_path_factory):
    """A tiny model trained a few steps, exported with its softmax."""
    d = tmp_path_factory.mktemp('adapt')
    trained = run('run_pretrain.py', pretrain_args(corpus, d / 'ck', '--max_steps', '3'))
    assert trained.returncode == 0, trained.stderr[-2000:]
    exported = run('export_weights.py', ['--init_from_ckpt', str(d / 'ck' / 'final'), '--output_dir', str(d / 'exp')])
    assert exported.returncode == 0, exported.stderr
    return d / 'exp'


def adapt(corpus, save_dir, *extra, vocab=None):
    return run('run_pretrain.py', ['--train_data_path', str(corpus / 'train.*.txt'), '--vocab_file',
                                   str(vocab or corpus / 'vocab.txt'), '--save_dir', str(save_dir)] + TINY +
               list(extra))


def test_the_run_starts_from_the_files_weights_and_softmax_and_records_them(corpus, export, tmp_path):
    from paddle_elmo import load_bilm
    # A learning rate far below float32's resolution: after one step the weights are still the file's.
    proc = adapt(corpus, tmp_path, '--init_from_weights', str(export), '--max_steps', '1', '--lr', '1e-30')
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert f'biLM: from {export / "weights.hdf5"}; softmax: from' in proc.stderr  # the log
    state = load(tmp_path / 'final.pdparams')
    exported = load_bilm(options_file=str(export / 'options.json'), weight_file=str(export / 'weights.hdf5'))
    for name, value in exported.state_dict().items():
        np.testing.assert_array_equal(state[f'bilm.{name}'], value.numpy(), err_msg=name)
    import h5py
    with h5py.File(export / 'weights.hdf5', 'r') as f:
        np.testing.assert_array_equal(state['softmax.W'], f['softmax/W'][...])
    recipe = json.loads((tmp_path / 'recipe.json').read_text())
    assert recipe['init_weight_file'] == str(export / 'weights.hdf5')
    assert recipe['init_options_file'] == str(export / 'options.json')


def test_a_vocabulary_that_does_not_fit_the_files_softmax_gets_a_new_one(corpus, export, tmp_path):
    (tmp_path / 'vocab.txt').write_text((corpus / 'vocab.txt').read_text() + 'zebra\n')
    proc = adapt(corpus, tmp_path / 'out', '--init_from_weights', str(export), '--max_steps', '1',
                 vocab=tmp_path / 'vocab.txt')
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert 'softmax: new (' in proc.stderr and 'has one of 26 rows, the vocabulary 27 tokens)' in proc.stderr


def test_the_bundled_model_adapts_with_a_new_softmax(corpus, tmp_path):
    proc = adapt(corpus, tmp_path, '--init_from_weights', 'bundled', '--preset', 'budget', '--max_steps', '2')
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert f'{ROOT}/paddle_elmo/pretrained/weights.hdf5 has none)' in proc.stderr and 'preset budget, adam' in proc.stderr


@pytest.mark.parametrize('flags, message', [
    (['--cell_dim', '99'], 'defines the model being adapted, and these flags differ from it: --cell_dim 99 '
                           '(weights: 16)'),
    (['--init_options_file', 'x.json'], 'give either --init_from_weights or --init_options_file with '
                                         '--init_weight_file, not both'),
    (['--init_from_ckpt', 'ck/1'], 'give --init_from_ckpt (resume a run) or --init_from_weights'),
])
def test_bad_combinations_are_one_line_errors(corpus, export, tmp_path, flags, message):
    line = one_line_error(adapt(corpus, tmp_path, '--init_from_weights', str(export), *flags))
    assert message in line


def test_a_directory_without_the_files_names_what_it_needs(corpus, tmp_path):
    line = one_line_error(adapt(corpus, tmp_path / 'out', '--init_from_weights', str(tmp_path)))
    assert line == (f'error: {tmp_path / "options.json"}: options file not found (--init_from_weights DIR needs '
                    f'DIR/options.json and DIR/weights.hdf5)')


def test_freeze_bilm_trains_the_softmax_alone(corpus, export, tmp_path):
    (tmp_path / 'vocab.txt').write_text((corpus / 'vocab.txt').read_text() + 'zebra\n')  # a new softmax
    proc = adapt(corpus, tmp_path / 'out', '--init_from_weights', str(export), '--max_steps', '3', '--freeze_bilm',
                 '--lr', '0.5', vocab=tmp_path / 'vocab.txt')
    assert proc.returncode == 0, proc.stderr[-2000:]
    from paddle_elmo import load_bilm
    state = load(tmp_path / 'out' / 'final.pdparams')
    exported = load_bilm(options_file=str(export / 'options.json'), weight_file=str(export / 'weights.hdf5'))
    for name, value in exported.state_dict().items():
        np.testing.assert_array_equal(state[f'bilm.{name}'], value.numpy(), err_msg=name)
    assert json.loads((tmp_path / 'out' / 'recipe.json').read_text())['freeze_bilm'] is True
    assert '--lr 0.5' not in proc.stderr and 'lr 0.5' in proc.stderr
