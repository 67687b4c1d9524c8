"""Model files in and out: bilm-tf / AllenNLP `options.json` + `weights.hdf5`, and our checkpoints.

A checkpoint of ours is a prefix `DIR/N`: `DIR/options.json` (bilm-tf options plus the training
recipe) and `DIR/N.pdparams` (a LanguageModel's state: `bilm.*` and `softmax.*`, or a BiLM's own),
beside `DIR/N.pdopt` when written by run_pretrain.py. `read_checkpoint` is the one place that reads
and checks one; everything that loads a model goes through it or `load_hdf5_weights`.
"""
import copy
import os
import sys

import numpy as np
import paddle

from bilm import BiLM, load_options
from dataset import N_CHARACTERS
from fileio import InputError, atomic_path, write_json_atomic


def hdf5_layout(bilm):
    """(dataset name, parameter, file->ours, ours->file) for every parameter of `bilm`."""
    same = lambda a: a
    enc = bilm.char_encoder
    layout = [('char_embed', enc.char_embed.weight,
               lambda a: np.concatenate([np.zeros((1, a.shape[1]), a.dtype), a]),  # prepend padding row
               lambda a: a[1:])]
    for i, (width, weight, bias) in enumerate(zip(enc.widths, enc.conv_weights, enc.conv_biases)):
        file_shape = (1, width, enc.char_dim, weight.shape[1])
        layout.append((f'CNN/W_cnn_{i}', weight, lambda a: a.reshape(a.shape[1] * a.shape[2], a.shape[3]),
                       lambda a, s=file_shape: a.reshape(s)))
        layout.append((f'CNN/b_cnn_{i}', bias, same, same))
    for k, highway in enumerate(enc.highways):
        for part in ('carry', 'transform'):
            linear = getattr(highway, part)
            layout += [(f'CNN_high_{k}/W_{part}', linear.weight, same, same),
                       (f'CNN_high_{k}/b_{part}', linear.bias, same, same)]
    layout += [('CNN_proj/W_proj', enc.projection.weight, same, same),
               ('CNN_proj/b_proj', enc.projection.bias, same, same)]
    for direction, stack in enumerate((bilm.forward_stack, bilm.backward_stack)):
        for k, layer in enumerate(stack.layers):
            prefix = f'RNN_{direction}/RNN/MultiRNNCell/Cell{k}/LSTMCell'
            layout += [(f'{prefix}/W_0', layer.W, same, same),
                       (f'{prefix}/B', layer.B, same, same),
                       (f'{prefix}/W_P_0', layer.W_P, same, same)]
    return layout


def _file_shape(param, to_file):
    return tuple(to_file(np.zeros(param.shape, dtype=np.float32)).shape)


def load_hdf5_weights(bilm, weight_file):
    """Fill `bilm` from a bilm-tf / AllenNLP weights.hdf5; shape mismatches name the dataset."""
    import h5py
    if not os.path.exists(weight_file):
        raise FileNotFoundError(f'{weight_file}: weights file not found')
    try:
        fin = h5py.File(weight_file, 'r')
    except OSError as e:
        raise InputError(f'{weight_file}: cannot read as hdf5, truncated or not an hdf5 file ({e})') from None
    with fin, paddle.no_grad():
        for name, param, from_file, to_file in hdf5_layout(bilm):
            if name not in fin:
                raise InputError(f'{weight_file}: dataset "{name}" is missing (options ask for it)')
            array = fin[name][...]
            expected = _file_shape(param, to_file)
            if tuple(array.shape) != expected:
                raise InputError(f'{weight_file}: dataset "{name}" has shape {tuple(array.shape)}, '
                                 f'options imply {expected}')
            param.set_value(from_file(array.astype(np.float32)))
    return bilm


def save_hdf5_weights(bilm, weight_file, extra=None):
    """Write `bilm` (and optional extra {name: array}, e.g. a softmax) as weights.hdf5, atomically."""
    import h5py
    with atomic_path(weight_file) as tmp, h5py.File(tmp, 'w') as fout:
        for name, param, _, to_file in hdf5_layout(bilm):
            fout.create_dataset(name, data=to_file(param.numpy()))
        for name, array in (extra or {}).items():
            fout.create_dataset(name, data=array)


def checkpoint_paths(prefix):
    """'DIR/N' -> (DIR/options.json, DIR/N.pdparams)."""
    return os.path.join(os.path.dirname(prefix) or '.', 'options.json'), f'{prefix}.pdparams'


def read_options_of(prefix):
    """The options.json of checkpoint 'DIR/N', with an error that says what a checkpoint needs."""
    options_file, _ = checkpoint_paths(prefix)
    if not os.path.exists(options_file):
        raise FileNotFoundError(f'{options_file}: not found; checkpoint {prefix} needs the options.json '
                                f'that run_pretrain.py writes beside it')
    return load_options(options_file)


def read_paddle_file(path, what='checkpoint'):
    """paddle.load with one-line errors for a missing, truncated or foreign file."""
    if not os.path.exists(path):
        raise FileNotFoundError(f'{path}: {what} not found')
    try:
        state = paddle.load(path)
    except Exception as e:  # Paddle raises a variety of types for a damaged pickle
        raise InputError(f'{path}: cannot read this {what} (truncated or corrupt? {type(e).__name__}: '
                         f'{str(e)[:200]})') from None
    if not isinstance(state, dict):
        raise InputError(f'{path}: not a {what} of ours (a dict of tensors), got {type(state).__name__}')
    return state


def read_checkpoint(prefix, vocab_size=None, require_softmax=False):
    """Checkpoint 'DIR/N' -> (options, state dict), checked before anything is built from it.

    The state is a LanguageModel's ('bilm.*', 'softmax.*') or a BiLM's own. With `vocab_size`, the
    softmax must have that many rows (the vocabulary the model was trained with).
    """
    options = read_options_of(prefix)
    ckpt = checkpoint_paths(prefix)[1]
    state = read_paddle_file(ckpt)
    has_softmax = 'softmax.W' in state
    if require_softmax and not has_softmax:
        raise InputError(f'{ckpt}: no softmax (softmax.W) in this checkpoint; perplexity and resuming need it')
    if has_softmax:
        check_softmax_rows(tuple(state['softmax.W'].shape), vocab_size, ckpt)
    return options, state


def check_softmax_rows(shape, vocab_size, source):
    if vocab_size is not None and shape[0] != vocab_size:
        raise InputError(f'{source}: the softmax has {shape[0]} rows but the vocabulary has {vocab_size} '
                         f'tokens (use the vocabulary the model was trained with)')


def load_state_checked(layer, state, prefix):
    """layer.set_state_dict(state), `state` read from checkpoint 'DIR/N', after checking that keys
    and shapes match exactly.

    Paddle alone would skip a missing or misshapen parameter with a warning and keep its random
    initial value; here any difference is an InputError naming the file and the first few keys.
    """
    options_file, source = checkpoint_paths(prefix)
    expected = layer.state_dict()
    missing = [k for k in expected if k not in state]
    unexpected = [k for k in state if k not in expected]
    if missing or unexpected:
        parts = ([f'missing {missing[:3]}'] if missing else []) + (
            [f'unexpected {unexpected[:3]}'] if unexpected else [])
        raise InputError(f'{source}: parameters do not match the model of {options_file}: ' + ', '.join(parts))
    for key, value in expected.items():
        if tuple(state[key].shape) != tuple(value.shape):
            raise InputError(f'{source}: parameter "{key}" has shape {tuple(state[key].shape)}, '
                             f'{options_file} implies {tuple(value.shape)}')
    layer.set_state_dict(state)
    return layer


def bilm_state(state):
    """The BiLM's own entries of a LanguageModel's state (or the state itself if it is a BiLM's)."""
    if any(k.startswith('bilm.') for k in state):
        return {k[len('bilm.'):]: v for k, v in state.items() if k.startswith('bilm.')}
    return state


def load_checkpoint(params_file, stateful=False):
    """A checkpoint prefix ('DIR/N') -> (BiLM, the checkpoint's whole state dict)."""
    options, state = read_checkpoint(params_file)
    bilm = BiLM(options, stateful=stateful)
    load_state_checked(bilm, bilm_state(state), params_file)
    return bilm, state


BUNDLED_MODEL_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'pretrained')


def bundled_model_files():
    """-> (options_file, weight_file) of the model that ships in pretrained/ (its card: README.md)."""
    files = tuple(os.path.join(BUNDLED_MODEL_DIR, name) for name in ('options.json', 'weights.hdf5'))
    for path in files:
        if not os.path.isfile(path):
            raise FileNotFoundError(f'{path}: the bundled model is missing from this checkout; give a model '
                                    f'(a checkpoint prefix, or options + weight files)')
    return files


def load_bilm(params_file=None, options_file=None, weight_file=None, stateful=False):
    """A BiLM from a checkpoint prefix ('DIR/N'), from bilm-tf options + hdf5 weights, or, given
    none of them, the bundled model in pretrained/ (saying so on stderr)."""
    if params_file is None and options_file is None and weight_file is None:
        options_file, weight_file = bundled_model_files()
        print(f'no model given: using the bundled model in {BUNDLED_MODEL_DIR} '
              f'(its card: {os.path.join(BUNDLED_MODEL_DIR, "README.md")})', file=sys.stderr, flush=True)
    if params_file is not None:
        if options_file is not None or weight_file is not None:
            raise InputError('give either params_file (a checkpoint prefix) or options_file + weight_file')
        return load_checkpoint(params_file, stateful)[0]
    if options_file is None or weight_file is None:
        raise InputError('give params_file (a checkpoint prefix like checkpoints/10000), '
                         'both options_file and weight_file, or neither (the bundled model)')
    return load_hdf5_weights(BiLM(load_options(options_file), stateful=stateful), weight_file)


def export_weights(bilm, output_dir, extra=None):
    """Write output_dir/options.json and output_dir/weights.hdf5, loadable by AllenNLP and bilm-tf."""
    os.makedirs(output_dir, exist_ok=True)
    options = copy.deepcopy(bilm.options)
    options['char_cnn']['n_characters'] = N_CHARACTERS  # prediction-time value, as bilm-tf expects
    write_json_atomic(options, os.path.join(output_dir, 'options.json'))
    save_hdf5_weights(bilm, os.path.join(output_dir, 'weights.hdf5'), extra)
