"""ELMoForManyLangs (EFML) model directories as released: read as they are, without torch.

A directory holds `config.json` (EFML's run arguments; its `config_path` names the model
configuration: a file in the directory, or one of EFML's default configurations by name, which the
released English model relies on: DEFAULT_CONFIGS), `char.dic`, `word.dic` (when word_dim > 0), and
the torch state dicts `token_embedder.pkl` and `encoder.pkl` (torch_pickle.py reads both
serializations). `read_efml_directory` gives the model's options (our options.json layout, token mode
`dict-char` or `dict-word+char` of token_modes.py) and an `EfmlWeights`, which model_io.LoadedModel
asks for the input vocabulary (a dictionary_ids.Lexicon) and to fill a BiLM.

The weights map onto our BiLM as AllenNLP's hdf5 reader maps bilm-tf's onto its ElmoLstm, which
EFML's encoder is: torch's Linear weights [out, in] are transposed; the LSTM's gate blocks (i, f, g,
o) become bilm-tf's (i, j, f, o) and the forget bias our run adds is taken off; the highway's gate
g (y = g x + (1 - g) f(A x)) is our carry t = 1 - g, so its half of the weights is negated.
"""
import copy
import functools
import os
from dataclasses import dataclass

import numpy as np

from paddle_elmo.fileio import InputError
from paddle_elmo.files.run_configs import read_json
from paddle_elmo.files.torch_pickle import read_state_dict
from paddle_elmo.text.dictionary_ids import CHAR_DIC, WORD_DIC, Lexicon

RUN_FILE = 'config.json'
TOKEN_EMBEDDER_FILE, ENCODER_FILE = 'token_embedder.pkl', 'encoder.pkl'

_RELEASED = {  # EFML's elmoformanylangs/configs/*.json (commit b3de5f1): both hold these values
    'encoder': {'name': 'elmo', 'projection_dim': 512, 'cell_clip': 3, 'proj_clip': 3, 'dim': 4096, 'n_layers': 2},
    'token_embedder': {'name': 'cnn', 'activation': 'relu',
                       'filters': [[1, 32], [2, 32], [3, 64], [4, 128], [5, 256], [6, 512], [7, 1024]],
                       'n_highway': 2, 'word_dim': 100, 'char_dim': 50, 'max_characters_per_token': 50},
    'classifier': {'name': 'sampled_softmax', 'n_samples': 8192},
    'dropout': 0.1,
}
DEFAULT_CONFIGS = {'cnn_50_100_512_4096_sample.json': _RELEASED, 'cnn_0_100_512_4096_sample.json': _RELEASED}


def is_efml_directory(path):
    """A directory in EFML's released layout (its run arguments and both state dicts)."""
    return all(os.path.isfile(os.path.join(path, name)) for name in (RUN_FILE, TOKEN_EMBEDDER_FILE, ENCODER_FILE))


def read_model_configuration(directory):
    """EFML's model configuration of a directory -> (config dict, where it came from): `config_path`
    of config.json, in the directory (as given, else its file name there), else one of EFML's
    default configurations by its file name, as EFML looks for it."""
    run_file = os.path.join(directory, RUN_FILE)
    run = read_json(run_file, 'ELMoForManyLangs run arguments')
    given = run.get('config_path') if isinstance(run, dict) else None
    if not isinstance(given, str) or not given:
        raise InputError(f'{run_file}: no "config_path" (the model configuration an ELMoForManyLangs model names)')
    name = os.path.basename(given.replace('\\', '/'))
    for candidate in (os.path.join(directory, given), os.path.join(directory, name)):
        if os.path.isfile(candidate):
            return read_json(candidate, 'ELMoForManyLangs model configuration'), candidate
    if name in DEFAULT_CONFIGS:
        return copy.deepcopy(DEFAULT_CONFIGS[name]), f'{name} (ELMoForManyLangs\' default configuration)'
    raise InputError(f'{run_file}: config_path {given!r} is neither in {directory} nor one of ELMoForManyLangs\' '
                     f'default configurations ({", ".join(DEFAULT_CONFIGS)})')


def model_options(efml, source):
    """EFML's model configuration -> our options.json dict (token mode dict-word+char, or dict-char
    without words); InputError naming `source` for what we do not run (EFML's LSTM token embedder or
    encoder, a model without chars)."""
    try:
        encoder, embedder = efml['encoder'], efml['token_embedder']
        if str(encoder.get('name', '')).lower() != 'elmo' or str(embedder.get('name', '')).lower() != 'cnn':
            raise InputError(f'{source}: encoder {encoder.get("name")!r} / token_embedder {embedder.get("name")!r}: '
                             f'only ELMoForManyLangs\' elmo encoder over its cnn token embedder (its released models) '
                             f'is read')
        if not embedder.get('char_dim'):
            raise InputError(f'{source}: char_dim 0 (a word-only model) is not read; ELMoForManyLangs\' released '
                             f'models have characters')
        word_dim = int(embedder.get('word_dim') or 0)
        options = {
            'lstm': {'projection_dim': encoder['projection_dim'], 'dim': encoder['dim'], 'n_layers': encoder['n_layers'],
                     'cell_clip': encoder.get('cell_clip'), 'proj_clip': encoder.get('proj_clip'),
                     'use_skip_connections': True},  # EFML's ElmobiLm adds each layer's input from layer 1 on
            'char_cnn': {'embedding': {'dim': embedder['char_dim']}, 'filters': embedder['filters'],
                         'n_highway': embedder['n_highway'], 'activation': embedder.get('activation', 'relu'),
                         'max_characters_per_token': embedder['max_characters_per_token']},
            'dropout': efml.get('dropout', 0.0),
            'token_input': 'dict-word+char' if word_dim else 'dict-char',
        }
    except (KeyError, TypeError, AttributeError) as e:
        raise InputError(f'{source}: not an ELMoForManyLangs model configuration (missing or bad {e})') from None
    if word_dim:
        options['word_embedding'] = {'dim': word_dim}
    return options


@dataclass(frozen=True)
class EfmlWeights:
    """An EFML directory's dictionaries and state dicts, read when a model is loaded (model_io).

    directory: the model directory; has_words: word_dim > 0 (word.dic is read); max_chars: its
    max_characters_per_token."""
    directory: str
    has_words: bool
    max_chars: int

    def files(self):
        names = (RUN_FILE, CHAR_DIC, *((WORD_DIC,) if self.has_words else ()), TOKEN_EMBEDDER_FILE, ENCODER_FILE)
        return {'efml_directory': self.directory, 'efml_files': ', '.join(names)}

    @functools.cached_property
    def lexicon(self):
        """The model's dictionaries -> dictionary_ids.Lexicon (what BiLM takes as `vocab`), read once."""
        return Lexicon.read(self.directory, self.max_chars, self.has_words)

    def fill(self, bilm):
        """Set every parameter of `bilm` (built for this model) from the two state dicts; InputError
        naming the file and the entry for a missing one or another shape."""
        for state_file, targets in ((TOKEN_EMBEDDER_FILE, token_embedder_targets(bilm)),
                                    (ENCODER_FILE, encoder_targets(bilm))):
            path = os.path.join(self.directory, state_file)
            _set_all(read_state_dict(path), targets, path)
        return bilm


def token_embedder_targets(bilm):
    """{EFML token-embedder entry: [(our parameter, EFML array -> ours), ...]} for `bilm`."""
    enc = bilm.char_encoder
    same = lambda a: a
    targets = {'char_emb_layer.embedding.weight': [(enc.char_embed.weight, _padding_row_first)],
               'projection.weight': [(enc.projection.weight, np.transpose)],
               'projection.bias': [(enc.projection.bias, same)]}
    if bilm.config.has_words:
        targets['word_emb_layer.embedding.weight'] = [(bilm.word_embedding, same)]
    for i, (weight, bias) in enumerate(zip(enc.conv_weights, enc.conv_biases)):
        # torch's Conv1d [n, char_dim, width] -> our window product [width * char_dim, n] (position-major)
        targets[f'convolutions.{i}.weight'] = [(weight, lambda a: a.transpose(2, 1, 0).reshape(-1, a.shape[0]))]
        targets[f'convolutions.{i}.bias'] = [(bias, same)]
    dim = bilm.config.n_filters
    for k, highway in enumerate(enc.highways):
        # EFML's rows [0, dim) are the nonlinear part, [dim, 2 dim) the gate g; our carry is 1 - g
        targets[f'highways._layers.{k}.weight'] = [(highway.transform.weight, lambda a: a[:dim].T),
                                                   (highway.carry.weight, lambda a: -a[dim:].T)]
        targets[f'highways._layers.{k}.bias'] = [(highway.transform.bias, lambda a: a[:dim]),
                                                 (highway.carry.bias, lambda a: -a[dim:])]
    return targets


def encoder_targets(bilm):
    """{EFML encoder entries: [(our parameter, EFML arrays -> ours)]}: each LSTM's W [input + P, 4 D]
    from input_linearity and state_linearity together (a pair of entries)."""
    targets = {}
    for direction, stack in (('forward', bilm.forward_stack), ('backward', bilm.backward_stack)):
        for k, layer in enumerate(stack.layers):
            prefix = f'{direction}_layer_{k}'
            targets[(f'{prefix}.input_linearity.weight', f'{prefix}.state_linearity.weight')] = [
                (layer.W, lambda w_in, w_state: _gates_to_bilm_tf(np.concatenate([w_in, w_state], axis=1).T))]
            targets[f'{prefix}.state_linearity.bias'] = [(layer.B, _lstm_bias)]
            targets[f'{prefix}.state_projection.weight'] = [(layer.W_P, np.transpose)]
    return targets


def _padding_row_first(a):
    """EFML's char embedding [chars, char_dim] -> ours, whose row 0 is the "no token" row."""
    return np.concatenate([np.zeros((1, a.shape[1]), a.dtype), a])


def _gates_to_bilm_tf(w):
    """Columns in gate blocks i, f, g, o (AllenNLP's order) -> bilm-tf's i, j (= g), f, o."""
    i, f, g, o = np.split(w, 4, axis=-1)
    return np.concatenate([i, g, f, o], axis=-1)


def _lstm_bias(b):
    """EFML's bias (i, f, g, o) -> our B (i, j, f, o) without the forget bias of 1 our run adds."""
    i, f, g, o = np.split(b, 4)
    return np.concatenate([i, g, f - 1.0, o])


def _set_all(state, targets, path):
    """Set each target from its state dict entries; every entry of the file must be used."""
    import paddle  # here, where a BiLM is filled: a directory is recognised and read without Paddle
    used = set()
    with paddle.no_grad():
        for names, pairs in targets.items():
            names = names if isinstance(names, tuple) else (names,)
            missing = [n for n in names if n not in state]
            if missing:
                raise InputError(f'{path}: no entry {missing[0]!r} (the model configuration asks for it)')
            used.update(names)
            for target, to_ours in pairs:
                value = to_ours(*(state[n] for n in names)).astype(np.float32)
                if tuple(value.shape) != tuple(target.shape):
                    raise InputError(f'{path}: {", ".join(names)} has shape {tuple(state[names[0]].shape)}, which '
                                     f'does not fit the model configuration (our parameter {tuple(target.shape)}, '
                                     f'made {tuple(value.shape)})')
                target.set_value(value)
    extra = sorted(set(state) - used)
    if extra:
        raise InputError(f'{path}: entries the model configuration has no place for: {", ".join(extra[:5])}')


def read_efml_directory(directory):
    """An EFML model directory -> (options dict in our layout, the configuration's source, EfmlWeights)."""
    efml, source = read_model_configuration(directory)
    options = model_options(efml, source)
    for name in (CHAR_DIC, *((WORD_DIC,) if 'word_embedding' in options else ())):
        if not os.path.isfile(os.path.join(directory, name)):
            raise InputError(f'{os.path.join(directory, name)}: missing (the model configuration {source} needs it)')
    weights = EfmlWeights(directory, 'word_embedding' in options, int(options['char_cnn']['max_characters_per_token']))
    return options, source, weights
