"""One checkpoint path (model_io.read_checkpoint): every loader checks keys, shapes, the vocabulary
and the options, and a damaged or mismatched file fails with one line naming it."""
import json
import os

import h5py
import numpy as np
import paddle
import pytest

from conftest import one_line_error, tiny_config
from paddle_elmo.fileio import InputError
from helpers import run, run_here

VOCAB = ['<S>', '</S>', '<UNK>', 'a', 'b', 'c']


@pytest.fixture
def checkpoint(tmp_path):
    """DIR/7: a LanguageModel's state and options.json, plus a vocabulary and a held-out file."""
    from paddle_elmo.train.lm import LanguageModel
    paddle.seed(0)
    model = LanguageModel(tiny_config(), len(VOCAB), 4)
    ck = tmp_path / 'ck'
    ck.mkdir()
    (ck / 'options.json').write_text(json.dumps(tiny_config().to_options()))
    paddle.save(model.state_dict(), str(ck / '7.pdparams'))
    (tmp_path / 'vocab.txt').write_text('\n'.join(VOCAB) + '\n')
    (tmp_path / 'dev.txt').write_text('a b c\nc b\n')
    return ck / '7'


def test_every_loader_reads_the_same_weights(checkpoint):
    from paddle_elmo import ELMoEmbedder, resolve_model
    from paddle_elmo.train.lm_loading import load_language_model
    state = paddle.load(f'{checkpoint}.pdparams')
    bilm = resolve_model(str(checkpoint)).load()
    lm = load_language_model(len(VOCAB), str(checkpoint))
    embedder = ELMoEmbedder(str(checkpoint))
    for name, value in bilm.state_dict().items():
        np.testing.assert_array_equal(value.numpy(), state[f'bilm.{name}'].numpy(), err_msg=name)
        np.testing.assert_array_equal(embedder.bilm.state_dict()[name].numpy(), value.numpy(), err_msg=name)
    np.testing.assert_array_equal(lm.softmax.W.numpy(), state['softmax.W'].numpy())


def test_a_truncated_checkpoint_fails_with_one_line_naming_it(checkpoint, tmp_path):
    from paddle_elmo import resolve_model
    params = f'{checkpoint}.pdparams'
    data = open(params, 'rb').read()
    with open(params, 'wb') as f:
        f.write(data[:len(data) // 2])
    with pytest.raises(InputError, match=r'7\.pdparams: cannot read this checkpoint \(truncated or corrupt'):
        resolve_model(str(checkpoint)).load()
    line = one_line_error(run('run_eval.py', ['--dev_data_path', str(tmp_path / 'dev.txt'), '--vocab_file',
                                              str(tmp_path / 'vocab.txt'), '--init_from_ckpt', str(checkpoint)]))
    assert '7.pdparams: cannot read this checkpoint' in line


def test_a_checkpoint_directory_without_options_json_says_what_it_needs(checkpoint):
    from paddle_elmo import resolve_model
    os.remove(checkpoint.parent / 'options.json')
    with pytest.raises(FileNotFoundError, match=r'options\.json: not found; checkpoint .*7 needs the options\.json'):
        resolve_model(str(checkpoint)).load()


def test_a_vocabulary_that_does_not_match_the_softmax_fails_at_eval_and_at_resume(checkpoint, tmp_path, capfd):
    (tmp_path / 'other.txt').write_text('\n'.join(VOCAB + ['d']) + '\n')
    line = one_line_error(run('run_eval.py', ['--dev_data_path', str(tmp_path / 'dev.txt'), '--vocab_file',
                                              str(tmp_path / 'other.txt'), '--init_from_ckpt', str(checkpoint)]))
    assert 'the softmax has 6 rows but the vocabulary has 7 tokens' in line
    from paddle_elmo.train.lm import LanguageModel
    from paddle_elmo.train.optimizers import make_optimizer
    model = LanguageModel(tiny_config(), len(VOCAB), 4)  # a resumable checkpoint: .pdopt beside it
    paddle.save({**make_optimizer(model, 'adagrad', 0.2, 10.0, 0, 1).state_dict(), 'train_state': {}},
                f'{checkpoint}.pdopt')
    # (resuming's refusals run in this process, helpers.run_here; eval's in a process of its own)
    line = one_line_error(run_here('run_pretrain.py', ['--train_data_path', str(tmp_path / 'dev.txt'), '--vocab_file',
                                                       str(tmp_path / 'other.txt'), '--save_dir', str(tmp_path / 'r'),
                                                       '--init_from_ckpt', str(checkpoint), '--batch_size', '2',
                                                       '--unroll_steps', '3', '--n_negative_samples', '4'], capfd))
    assert '7.pdparams: the softmax has 6 rows but the vocabulary has 7 tokens' in line


def test_model_flags_that_differ_from_the_resumed_checkpoint_are_named(checkpoint, tmp_path, capfd):
    line = one_line_error(run_here('run_pretrain.py', ['--train_data_path', str(tmp_path / 'dev.txt'), '--vocab_file',
                                                       str(tmp_path / 'vocab.txt'), '--save_dir', str(tmp_path / 'r'),
                                                       '--init_from_ckpt', str(checkpoint), '--cell_dim', '32',
                                                       '--projection_dim', '8', '--max_characters_per_token', '20'],
                                   capfd))
    assert 'flags differ from it: --cell_dim 32 (checkpoint: 16); --max_characters_per_token 20 (checkpoint: 50)' \
        in line
    assert '--projection_dim' not in line  # given, but the same as the checkpoint's


def test_missing_unexpected_and_misshapen_parameters_are_errors_not_skips(checkpoint):
    from paddle_elmo import resolve_model
    params = f'{checkpoint}.pdparams'
    state = paddle.load(params)
    name = 'bilm.forward_stack.layers.0.W_P'
    for broken, message in (({k: v for k, v in state.items() if k != name}, r"missing \['forward_stack"),
                            ({**state, 'bilm.extra.weight': state[name]}, r"unexpected \['extra\.weight'\]"),
                            ({**state, name: paddle.zeros([3, 3])}, r'W_P" has shape \(3, 3\)')):
        paddle.save(broken, params)
        with pytest.raises(InputError, match=message):
            resolve_model(str(checkpoint)).load()


def test_an_hdf5_file_without_a_dataset_names_it(fixture_dir, tmp_path):
    from paddle_elmo import resolve_model
    broken = tmp_path / 'w.hdf5'
    with h5py.File(os.path.join(fixture_dir, 'lm_weights.hdf5'), 'r') as src, h5py.File(broken, 'w') as dst:
        for name in src:
            if name != 'CNN_proj':
                src.copy(src[name], dst, name)
    with pytest.raises(InputError, match=r'w\.hdf5: dataset "CNN_proj/W_proj" is missing'):
        resolve_model(os.path.join(fixture_dir, 'options.json'), str(broken)).load()
    (tmp_path / 'junk.hdf5').write_bytes(b'not hdf5 at all')
    with pytest.raises(InputError, match=r'junk\.hdf5: cannot read as hdf5'):
        resolve_model(os.path.join(fixture_dir, 'options.json'), str(tmp_path / 'junk.hdf5')).load()


def test_a_corrupt_optimizer_state_fails_resuming_with_one_line(checkpoint, tmp_path, capfd):
    (checkpoint.parent / '7.pdopt').write_bytes(b'\x80\x04 this is not a pickle')
    line = one_line_error(run_here('run_pretrain.py', ['--train_data_path', str(tmp_path / 'dev.txt'), '--vocab_file',
                                                       str(tmp_path / 'vocab.txt'), '--save_dir', str(tmp_path / 'r'),
                                                       '--init_from_ckpt', str(checkpoint), '--batch_size', '2',
                                                       '--unroll_steps', '3', '--n_negative_samples', '4'], capfd))
    assert '7.pdopt: cannot read this optimizer state (truncated or corrupt' in line
