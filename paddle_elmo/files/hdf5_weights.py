"""bilm-tf / AllenNLP's `weights.hdf5`, in and out: the one table of dataset names (`hdf5_layout`).

An export is `options.json` (the model only) and `weights.hdf5`: the biLM's datasets, and optionally
the softmax as `softmax/W` [vocab, P] and `softmax/b` [vocab] (bilm-tf's and AllenNLP's readers
ignore them; perplexity and prediction need them). A word model's token-mode `embedding` may live in
its own file (bilm-tf's inference layout, `embedding_weight_file`). Paddle is imported where a BiLM is
filled, so that a model's files resolve without it (model_io.resolve_model).
"""
import os

import numpy as np

from paddle_elmo.fileio import InputError, atomic_path, make_directory, write_json_atomic
from paddle_elmo.files.run_configs import OPTIONS_FILE, WEIGHTS_FILE, write_input_vocabulary
from paddle_elmo.model.token_modes import CHAR_ENCODER, HDF5_EMBEDDING, HDF5_WORD_EMBEDDING, WORD_EMBEDDING


HDF5_SOFTMAX_W, HDF5_SOFTMAX_B = 'softmax/W', 'softmax/b'


def hdf5_layout(bilm):
    """(dataset name, parameter, file->ours, ours->file) for every parameter of `bilm`: bilm-tf's
    names; the token layers its mode holds (config.input_mode.parts, PART_LAYOUTS), then the LSTMs.
    A word model's embedding is bilm-tf's `embedding` (no padding row), word+char's
    `word_embedding` beside the char CNN, whose `CNN_proj/W_proj` then has the word rows first."""
    same = lambda a: a
    parts = bilm.config.input_mode.parts
    layout = [entry for part in PART_LAYOUTS if part in parts for entry in PART_LAYOUTS[part](bilm)]
    for direction, stack in enumerate((bilm.forward_stack, bilm.backward_stack)):
        for k, layer in enumerate(stack.layers):
            prefix = f'RNN_{direction}/RNN/MultiRNNCell/Cell{k}/LSTMCell'
            layout += [(f'{prefix}/W_0', layer.W, same, same),
                       (f'{prefix}/B', layer.B, same, same),
                       (f'{prefix}/W_P_0', layer.W_P, same, same)]
    return layout


def _word_embedding_layout(bilm):
    same = lambda a: a
    return [(bilm.config.input_mode.word_embedding, bilm.word_embedding, same, same)]


def _char_layout(bilm):
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
    return layout


# Each token layer a mode may hold (token_modes.TokenMode.parts) -> its datasets, in this order.
PART_LAYOUTS = {WORD_EMBEDDING: _word_embedding_layout, CHAR_ENCODER: _char_layout}


def _file_shape(param, to_file):
    return tuple(to_file(np.zeros(param.shape, dtype=np.float32)).shape)


def _open_hdf5(weight_file):
    import h5py
    if not os.path.exists(weight_file):
        raise FileNotFoundError(f'{weight_file}: weights file not found')
    try:
        return h5py.File(weight_file, 'r')
    except OSError as e:
        raise InputError(f'{weight_file}: cannot read as hdf5, truncated or not an hdf5 file ({e})') from None


def load_hdf5_weights(bilm, weight_file, embedding_weight_file=None):
    """Fill `bilm` from a bilm-tf / AllenNLP weights.hdf5; shape mismatches name the dataset.

    embedding_weight_file: a word model's `embedding` from this file instead (bilm-tf's
    `embedding_weight_file`: an hdf5 holding dataset `embedding`)."""
    import paddle
    with _open_hdf5(weight_file) as fin, paddle.no_grad():
        for name, param, from_file, to_file in hdf5_layout(bilm):
            if not (name == HDF5_EMBEDDING and embedding_weight_file):
                _set_from_dataset(param, fin, name, weight_file, from_file, to_file)
    return load_embedding_weight_file(bilm, embedding_weight_file)


def load_embedding_weight_file(bilm, embedding_weight_file):
    """A word model's embedding from bilm-tf's `embedding_weight_file` (dataset `embedding`, no
    padding row), when one is given -> bilm. Any other model keeps its own token representation."""
    if embedding_weight_file and bilm.config.input_mode.embedding_file == 'embedding':
        import paddle
        same = lambda a: a
        with _open_hdf5(embedding_weight_file) as f, paddle.no_grad():
            _set_from_dataset(bilm.word_embedding, f, HDF5_EMBEDDING, embedding_weight_file, same, same)
    return bilm


def _set_from_dataset(param, fin, name, source, from_file, to_file):
    if name not in fin:
        raise InputError(f'{source}: dataset "{name}" is missing (options ask for it)')
    array = fin[name][...]
    expected = _file_shape(param, to_file)
    if tuple(array.shape) != expected:
        what = 'the vocabulary implies' if name in (HDF5_EMBEDDING, HDF5_WORD_EMBEDDING) else 'options imply'
        raise InputError(f'{source}: dataset "{name}" has shape {tuple(array.shape)}, {what} {expected}')
    param.set_value(from_file(array.astype(np.float32)))


def hdf5_rows(weight_file, name):
    """Rows of dataset `name` of an hdf5 file, or None when it has none."""
    with _open_hdf5(weight_file) as f:
        return f[name].shape[0] if name in f else None


def read_hdf5_softmax(weight_file, required=True):
    """-> (W [vocab, P], b [vocab]) float32 from weights.hdf5's softmax/W and softmax/b; when the
    file has none, an InputError, or None if not `required`."""
    with _open_hdf5(weight_file) as f:
        if HDF5_SOFTMAX_W not in f or HDF5_SOFTMAX_B not in f:
            if not required:
                return None
            raise InputError(f'{weight_file}: no {HDF5_SOFTMAX_W} and {HDF5_SOFTMAX_B} datasets; perplexity, '
                             f'prediction and the softmax dump need the softmax (paddle-elmo export-weights writes it from '
                             f'a checkpoint of ours)')
        return f[HDF5_SOFTMAX_W][...].astype(np.float32), f[HDF5_SOFTMAX_B][...].reshape(-1).astype(np.float32)


def read_token_embeddings(path, tokens, dim):
    """An hdf5 of dump_token_embeddings (dataset `embedding` [len(tokens), dim]) -> {token: row}."""
    import h5py
    if not os.path.isfile(path):
        raise FileNotFoundError(f'{path}: embedding_weight_file not found')
    with h5py.File(path, 'r') as f:
        if HDF5_EMBEDDING not in f:
            raise InputError(f'{path}: no dataset "{HDF5_EMBEDDING}" (expected dump_token_embeddings\' output)')
        table = f[HDF5_EMBEDDING][...].astype(np.float32)
    if table.shape != (len(tokens), dim):
        raise InputError(f'{path}: "{HDF5_EMBEDDING}" has shape {table.shape}, expected ({len(tokens)}, {dim}): one '
                         f'row of the model\'s projection_dim per token of the vocabulary')
    return dict(zip(tokens, table))


def save_hdf5_weights(bilm, weight_file, softmax=None):
    """Write `bilm` (and optionally softmax = (W [vocab, P], b [vocab])) as weights.hdf5, atomically."""
    import h5py
    with atomic_path(weight_file) as tmp, h5py.File(tmp, 'w') as fout:
        for name, param, _, to_file in hdf5_layout(bilm):
            fout.create_dataset(name, data=to_file(param.numpy()))
        if softmax is not None:
            fout.create_dataset(HDF5_SOFTMAX_W, data=softmax[0])
            fout.create_dataset(HDF5_SOFTMAX_B, data=softmax[1])


def model_options(bilm):
    """The options.json of `bilm` as an export writes it: ModelConfig.to_options, plus for word
    input `n_tokens_vocab`, the input vocabulary's size (as bilm-tf writes it)."""
    options = bilm.config.to_options()
    if bilm.vocab is not None:  # the input vocabulary of a mode with a word embedding
        options['n_tokens_vocab'] = bilm.vocab.size
    return options


def export_weights(bilm, output_dir, softmax=None):
    """Write output_dir/options.json and output_dir/weights.hdf5, loadable by AllenNLP and bilm-tf
    (char and word models; word+char by this toolkit), and output_dir/vocab.txt for word input;
    softmax = (W [vocab, P], b [vocab]) adds softmax/W and softmax/b."""
    make_directory(output_dir, 'output directory')
    if bilm.vocab is not None:
        write_input_vocabulary(bilm.vocab, output_dir)
    save_hdf5_weights(bilm, os.path.join(output_dir, WEIGHTS_FILE), softmax)
    write_json_atomic(model_options(bilm), os.path.join(output_dir, OPTIONS_FILE))
