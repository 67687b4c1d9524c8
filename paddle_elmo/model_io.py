"""Every model file, in and out: its names, keys and datasets are defined, written and read here.

A checkpoint of ours is a prefix `DIR/N`:
- `DIR/options.json`: the model in bilm-tf's options format (ModelConfig.to_options) plus the
  training keys bilm-tf's `bin/train_elmo.py` writes there (config.BILM_TF_TRAINING_KEYS and
  `n_tokens_vocab`); `DIR/recipe.json`: the rest of our Recipe. Checkpoints written before
  recipe.json existed kept our recipe keys in options.json (`lr`, `preset`, `optimizer`, ...):
  `read_run_configs` reads both layouts.
- `DIR/N.pdparams`: a LanguageModel's state (`bilm.*`, `softmax.W` [vocab, P], `softmax.b`
  [vocab, 1]) or a BiLM's own.
- `DIR/N.pdopt` (run_pretrain.py's): the optimizer's state plus TRAIN_STATE: the step, the number
  of processes, the training seconds and, per rank, the data stream's position, the sampler's RNG,
  the carried LSTM states and Paddle's RNG (`rank_state` / `restore_rank_state`).
An export (bilm-tf / AllenNLP's layout, `export_weights`) is `options.json` (the model only) and
`weights.hdf5`: the biLM's datasets (`hdf5_layout`), and optionally the softmax as `softmax/W`
[vocab, P] and `softmax/b` [vocab] (bilm-tf's and AllenNLP's readers ignore them; perplexity and
prediction need them). Everything that loads a model goes through `read_checkpoint` or
`load_hdf5_weights`, which check keys, shapes, the vocabulary and the options.

A model with word input (token_input word or word+char) has an input vocabulary: `DIR/vocab.txt`
beside options.json, in a checkpoint and an export (line i is row i of the word embedding,
`<S>`, `</S>`, `<UNK>` first); for bilm-tf files the user passes it (`vocab_file`). Its size is
options.json's `n_tokens_vocab`, as bilm-tf writes it.
"""
import dataclasses
import json
import os
import sys

import numpy as np

from paddle_elmo.runtime import paddle

from paddle_elmo.bilm import BiLM
from paddle_elmo.config import BILM_TF_TRAINING_KEYS, PRESETS, RECIPE_FIELDS, ModelConfig, Recipe, split_fields
from paddle_elmo.dataset import SPECIAL_TOKENS, Vocabulary, read_vocabulary_file, write_vocabulary
from paddle_elmo.fileio import InputError, atomic_path, write_json_atomic
from paddle_elmo.lm import LanguageModel

OPTIONS_FILE, RECIPE_FILE, WEIGHTS_FILE, VOCAB_FILE = 'options.json', 'recipe.json', 'weights.hdf5', 'vocab.txt'
HDF5_EMBEDDING = 'embedding'  # bilm-tf's token-mode embedding [n_tokens_vocab, projection_dim]
HDF5_WORD_EMBEDDING = 'word_embedding'  # word+char's [n_tokens_vocab, word_dim] (ours only)
PARAMS_SUFFIX, OPTIMIZER_SUFFIX = '.pdparams', '.pdopt'
BILM_PREFIX = 'bilm.'  # LanguageModel.bilm's entries of a checkpoint's state
SOFTMAX_W, SOFTMAX_B = 'softmax.W', 'softmax.b'  # LanguageModel.softmax's
HDF5_SOFTMAX_W, HDF5_SOFTMAX_B = 'softmax/W', 'softmax/b'
TRAIN_STATE = 'train_state'  # the .pdopt entry beside the optimizer's own
RECIPE_VERSION = 1


# --------------------------------------------------------------------------------------------
# Configs: options.json and recipe.json
# --------------------------------------------------------------------------------------------

def read_json(path, what):
    try:
        with open(path, encoding='utf-8') as f:
            value = json.load(f)
    except FileNotFoundError:
        raise FileNotFoundError(f'{path}: {what} not found') from None
    except json.JSONDecodeError as e:
        raise InputError(f'{path}: not valid JSON (line {e.lineno}: {e.msg})') from None
    if not isinstance(value, dict):
        raise InputError(f'{path}: expected a JSON object, got {type(value).__name__}')
    return value


def read_model_config(options_file):
    """A bilm-tf / AllenNLP options.json (or ours) -> ModelConfig, checked."""
    return ModelConfig.from_options(read_json(options_file, 'options file'), options_file)


def write_run_configs(directory, model, recipe, vocab):
    """DIR/options.json (the model and bilm-tf's training keys, its names), DIR/recipe.json and,
    for word input, DIR/vocab.txt (the Vocabulary `vocab`, its ids as lines)."""
    options = model.to_options()
    for field, key in BILM_TF_TRAINING_KEYS.items():
        options[key] = getattr(recipe, field)
    options['n_tokens_vocab'] = vocab.size
    rest = {k: v for k, v in dataclasses.asdict(recipe).items() if k not in BILM_TF_TRAINING_KEYS}
    if model.has_words:
        write_input_vocabulary(vocab, directory)
    write_json_atomic(options, os.path.join(directory, OPTIONS_FILE))
    write_json_atomic({'version': RECIPE_VERSION, **rest}, os.path.join(directory, RECIPE_FILE))


def write_input_vocabulary(vocab, directory):
    """DIR/vocab.txt: the model's input vocabulary, line i = id i (specials included)."""
    write_vocabulary(vocab.tokens, os.path.join(directory, VOCAB_FILE))


def read_input_vocabulary(config, model_dir, vocab_file=None, rows=None, source='the model'):
    """The input Vocabulary of a word or word+char model (None for a char model).

    It is `model_dir`/vocab.txt (a checkpoint's or an export's) or `vocab_file` (bilm-tf files);
    given both, they must hold the same tokens. Line i is row i of the word embedding, so the
    file must hold `<S>`, `</S>` and `<UNK>` (bilm-tf's layout) and, with `rows` (the embedding's
    rows, from the weights), exactly that many lines. Each mismatch is one line naming the files.
    """
    if not config.has_words:
        return None
    own = os.path.join(model_dir or '.', VOCAB_FILE) if model_dir is not None else None
    own = own if own and os.path.isfile(own) else None
    if own is None and vocab_file is None:
        raise InputError(f'{source} reads words ({config.token_input} input) and has no {VOCAB_FILE} beside its '
                         f'options.json: give its vocabulary (--vocab_file / vocab_file=; line i = embedding row i)')
    path = own or vocab_file
    tokens = read_vocabulary_file(path)
    if own and vocab_file and os.path.abspath(vocab_file) != os.path.abspath(own) \
            and Vocabulary(vocab_file, config.max_characters_per_token).tokens != tokens:
        raise InputError(f'{vocab_file} is not the vocabulary of {source} ({own}): their tokens differ')
    missing = [t for t in SPECIAL_TOKENS if t not in tokens]
    if missing:
        raise InputError(f'{path}: the input vocabulary of a word model must hold {", ".join(SPECIAL_TOKENS)} (line i '
                         f'is embedding row i); missing {", ".join(missing)}')
    if rows is not None and rows != len(tokens):
        raise InputError(f'{path} has {len(tokens)} tokens but the word embedding of {source} has {rows} rows: not '
                         f'the vocabulary it was trained with')
    return Vocabulary.from_tokens(tokens, config.max_characters_per_token, path)


# Our recipe keys as checkpoints before recipe.json kept them in options.json.
_LEGACY_RECIPE_KEYS = {'lr': 'lr', 'preset': 'preset', 'optimizer': 'optimizer', 'warmup_steps': 'warmup_steps',
                       'seed': 'seed', 'reset_state_at_sentence_start': 'reset_state_at_sentence_start',
                       'n_gpus': 'world_size'}


def read_run_configs(directory):
    """A checkpoint directory -> (ModelConfig, Recipe): options.json and recipe.json, or the older
    layout with our recipe keys inside options.json. A setting neither file holds takes the value
    of the run's preset (the default recipe, `original`, when none is recorded)."""
    options_file = os.path.join(directory, OPTIONS_FILE)
    options = read_json(options_file, 'options file')
    model = ModelConfig.from_options(options, options_file)
    recipe_file = os.path.join(directory, RECIPE_FILE)
    values = {field: options[key] for field, key in BILM_TF_TRAINING_KEYS.items() if key in options}
    if os.path.exists(recipe_file):
        stored = read_json(recipe_file, 'recipe')
        values.update({k: v for k, v in stored.items() if k in RECIPE_FIELDS})
    else:  # written before recipe.json: our keys sat in options.json ('lr' before 'learning_rate')
        values.update({field: options[key] for key, field in _LEGACY_RECIPE_KEYS.items() if key in options})
    preset = values.get('preset') or 'original'
    if preset not in PRESETS:
        raise InputError(f'{recipe_file}: unknown preset {preset!r} (known: {", ".join(PRESETS)})')
    _, preset_recipe = split_fields(PRESETS[preset])
    return model, Recipe(**{**preset_recipe, **values, 'preset': preset})


# --------------------------------------------------------------------------------------------
# hdf5 weights (bilm-tf / AllenNLP)
# --------------------------------------------------------------------------------------------

def model_options_file(params_file=None, options_file=None, weight_file=None, vocab_file=None):
    """The options.json of a model given as load_bilm takes it (a checkpoint prefix, bilm-tf files,
    or none: the bundled model) -> its path."""
    if params_file is not None:
        return checkpoint_paths(params_file)[0]
    if options_file is not None:
        return options_file
    return bundled_model_files()[0]


def own_vocabulary_file(params_file=None, options_file=None):
    """The vocab.txt beside a model's options.json (model_options_file), or None."""
    path = os.path.join(os.path.dirname(model_options_file(params_file, options_file)) or '.', VOCAB_FILE)
    return path if os.path.isfile(path) else None


def hdf5_layout(bilm):
    """(dataset name, parameter, file->ours, ours->file) for every parameter of `bilm`: bilm-tf's
    names; a word model's embedding is bilm-tf's `embedding` (no padding row), word+char's
    `word_embedding` beside the char CNN, whose `CNN_proj/W_proj` then has the word rows first."""
    same = lambda a: a
    layout = []
    if bilm.config.has_words:
        name = HDF5_EMBEDDING if bilm.config.token_input == 'word' else HDF5_WORD_EMBEDDING
        layout.append((name, bilm.word_embedding, same, same))
    if bilm.config.has_chars:
        layout += _char_layout(bilm.char_encoder)
    for direction, stack in enumerate((bilm.forward_stack, bilm.backward_stack)):
        for k, layer in enumerate(stack.layers):
            prefix = f'RNN_{direction}/RNN/MultiRNNCell/Cell{k}/LSTMCell'
            layout += [(f'{prefix}/W_0', layer.W, same, same),
                       (f'{prefix}/B', layer.B, same, same),
                       (f'{prefix}/W_P_0', layer.W_P, same, same)]
    return layout


def _char_layout(enc):
    same = lambda a: a
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
    with _open_hdf5(weight_file) as fin, paddle.no_grad():
        for name, param, from_file, to_file in hdf5_layout(bilm):
            if not (name == HDF5_EMBEDDING and embedding_weight_file):
                _set_from_dataset(param, fin, name, weight_file, from_file, to_file)
    return load_embedding_weight_file(bilm, embedding_weight_file)


def load_embedding_weight_file(bilm, embedding_weight_file):
    """A word model's embedding from bilm-tf's `embedding_weight_file` (dataset `embedding`, no
    padding row), when one is given -> bilm. Any other model keeps its own token representation."""
    if embedding_weight_file and bilm.config.token_input == 'word':
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
                             f'prediction and the softmax dump need the softmax (export_weights.py writes it from '
                             f'a checkpoint of ours)')
        return f[HDF5_SOFTMAX_W][...].astype(np.float32), f[HDF5_SOFTMAX_B][...].reshape(-1).astype(np.float32)


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
    if bilm.config.has_words:
        options['n_tokens_vocab'] = bilm.vocab.size
    return options


def export_weights(bilm, output_dir, softmax=None):
    """Write output_dir/options.json and output_dir/weights.hdf5, loadable by AllenNLP and bilm-tf
    (char and word models; word+char by this toolkit), and output_dir/vocab.txt for word input;
    softmax = (W [vocab, P], b [vocab]) adds softmax/W and softmax/b."""
    os.makedirs(output_dir, exist_ok=True)
    if bilm.config.has_words:
        write_input_vocabulary(bilm.vocab, output_dir)
    save_hdf5_weights(bilm, os.path.join(output_dir, WEIGHTS_FILE), softmax)
    write_json_atomic(model_options(bilm), os.path.join(output_dir, OPTIONS_FILE))


def softmax_of(state):
    """A LanguageModel checkpoint's softmax in the export layout -> (W [vocab, P], b [vocab]), or None."""
    if SOFTMAX_W not in state:
        return None
    return state[SOFTMAX_W].numpy(), state[SOFTMAX_B].numpy().reshape(-1)


# --------------------------------------------------------------------------------------------
# Checkpoints of ours
# --------------------------------------------------------------------------------------------

def checkpoint_paths(prefix):
    """'DIR/N' -> (DIR/options.json, DIR/N.pdparams)."""
    return os.path.join(os.path.dirname(prefix) or '.', OPTIONS_FILE), f'{prefix}{PARAMS_SUFFIX}'


def checkpoint_dir(prefix):
    return os.path.dirname(prefix) or '.'


def read_options_of(prefix):
    """The ModelConfig of checkpoint 'DIR/N', with an error that says what a checkpoint needs."""
    options_file, _ = checkpoint_paths(prefix)
    if not os.path.exists(options_file):
        raise FileNotFoundError(f'{options_file}: not found; checkpoint {prefix} needs the options.json '
                                f'that run_pretrain.py writes beside it')
    return read_model_config(options_file)


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
    """Checkpoint 'DIR/N' -> (ModelConfig, state dict), checked before anything is built from it.

    The state is a LanguageModel's ('bilm.*', 'softmax.*') or a BiLM's own. With `vocab_size`, the
    softmax must have that many rows (the vocabulary the model was trained with).
    """
    config = read_options_of(prefix)
    ckpt = checkpoint_paths(prefix)[1]
    state = read_paddle_file(ckpt)
    has_softmax = SOFTMAX_W in state
    if require_softmax and not has_softmax:
        raise InputError(f'{ckpt}: no softmax ({SOFTMAX_W}) in this checkpoint; perplexity, prediction and '
                         f'resuming need it')
    if has_softmax:
        check_softmax_rows(tuple(state[SOFTMAX_W].shape), vocab_size, ckpt)
    return config, state


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
    if any(k.startswith(BILM_PREFIX) for k in state):
        return {k[len(BILM_PREFIX):]: v for k, v in state.items() if k.startswith(BILM_PREFIX)}
    return state


def load_bilm_checkpoint(prefix, stateful=False, vocab_file=None):
    """A checkpoint prefix ('DIR/N') -> (BiLM, the checkpoint's whole state dict); a word model's
    vocabulary is DIR/vocab.txt (`vocab_file`, when given, must hold the same tokens)."""
    config, state = read_checkpoint(prefix)
    vocab = read_input_vocabulary(config, checkpoint_dir(prefix), vocab_file, _embedding_rows(state), prefix)
    bilm = BiLM(config, stateful=stateful, vocab=vocab)
    load_state_checked(bilm, bilm_state(state), prefix)
    return bilm, state


def _embedding_rows(state):
    for key in ('word_embedding', BILM_PREFIX + 'word_embedding'):
        if key in state:
            return state[key].shape[0]
    return None


# ---- training checkpoints (run_pretrain.py) --------------------------------------------------

def rank_state(stream, model):
    """What one rank needs, beyond the weights, to continue exactly: its data position, sampler,
    carried LSTM states and Paddle's RNG."""
    return {'stream': stream.state_dict(), 'sampler': model.sampler.state(),
            'lstm_states': model.bilm.get_states(), 'paddle_rng': paddle.get_rng_state()}


def restore_rank_state(state, stream, model):
    stream.load_state_dict(state['stream'])
    model.sampler.set_state(state['sampler'])
    model.bilm.set_states(state['lstm_states'])
    paddle.set_rng_state(state['paddle_rng'])


def train_state(step, world_size, train_seconds, ranks):
    """TRAIN_STATE of a .pdopt: ranks is every rank's rank_state, in rank order."""
    return {'step': step, 'world_size': world_size, 'ranks': ranks, 'train_seconds': train_seconds}


def save_training_checkpoint(prefix, model, optimizer, state):
    """prefix.pdparams (model) and prefix.pdopt (optimizer state + TRAIN_STATE), atomically.

    Each file is written under a temporary name and renamed; .pdopt is renamed first, so a
    .pdparams that exists always has its .pdopt, and a kill mid-save leaves older checkpoints intact.
    """
    opt_state = dict(optimizer.state_dict())
    opt_state[TRAIN_STATE] = state
    # The inner block exits first: .pdopt is renamed before .pdparams.
    with atomic_path(f'{prefix}{PARAMS_SUFFIX}') as params_tmp, \
            atomic_path(f'{prefix}{OPTIMIZER_SUFFIX}') as opt_tmp:
        paddle.save(opt_state, opt_tmp)
        paddle.save(model.state_dict(), params_tmp)


def saved_step(prefix):
    """The step run_pretrain.py saved 'DIR/N' (or 'DIR/final') at, from its .pdopt's TRAIN_STATE;
    None if there is no .pdopt or it holds no TRAIN_STATE."""
    opt_path = f'{prefix}{OPTIMIZER_SUFFIX}'
    if not os.path.exists(opt_path):
        return None
    state = read_paddle_file(opt_path, 'optimizer state').get(TRAIN_STATE)
    return None if state is None else int(state['step'])


def load_training_checkpoint(prefix, model, optimizer, world_size):
    """Restore model and optimizer from 'DIR/N' -> its TRAIN_STATE (checked to come from
    `world_size` processes)."""
    opt_path = f'{prefix}{OPTIMIZER_SUFFIX}'
    if not os.path.exists(opt_path):
        raise InputError(f'{opt_path} not found: --init_from_ckpt needs both {PARAMS_SUFFIX} and {OPTIMIZER_SUFFIX}')
    _, state = read_checkpoint(prefix, model.vocab_size, require_softmax=True)
    load_state_checked(model, state, prefix)
    opt_state = read_paddle_file(opt_path, 'optimizer state')
    if TRAIN_STATE not in opt_state:
        raise InputError(f'{opt_path}: no {TRAIN_STATE}; not an optimizer file written by run_pretrain.py')
    state = opt_state.pop(TRAIN_STATE)
    optimizer.set_state_dict(opt_state)
    if state['world_size'] != world_size:
        raise InputError(f'{opt_path} was saved by {state["world_size"]} processes; resume with '
                         f'the same number (got {world_size})')
    return state


# --------------------------------------------------------------------------------------------
# Loading a model from any of them
# --------------------------------------------------------------------------------------------

BUNDLED_MODEL_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'pretrained')


def bundled_model_files():
    """-> (options_file, weight_file) of the model that ships in pretrained/ (its card: README.md)."""
    files = tuple(os.path.join(BUNDLED_MODEL_DIR, name) for name in (OPTIONS_FILE, WEIGHTS_FILE))
    for path in files:
        if not os.path.isfile(path):
            raise FileNotFoundError(f'{path}: the bundled model is missing from this checkout; give a model '
                                    f'(a checkpoint prefix, or options + weight files)')
    return files


def weights_files(init_from_weights=None, options_file=None, weight_file=None):
    """The (options.json, weights.hdf5) a run starts from: DIR's, the bundled model's ('bundled'),
    or the pair given -> absolute paths, both checked to exist."""
    if init_from_weights == 'bundled':
        options_file, weight_file = bundled_model_files()
    elif init_from_weights:
        options_file, weight_file = (os.path.join(init_from_weights, n) for n in (OPTIONS_FILE, WEIGHTS_FILE))
    for path, what in ((options_file, 'options file'), (weight_file, 'weights file')):
        if not os.path.isfile(path):
            raise FileNotFoundError(f'{path}: {what} not found' + (f' (--init_from_weights DIR needs DIR/{OPTIONS_FILE} '
                                    f'and DIR/{WEIGHTS_FILE})' if init_from_weights else ''))
    return os.path.abspath(options_file), os.path.abspath(weight_file)


def load_weights_into(model, weight_file):
    """Fill a LanguageModel from weights.hdf5: the biLM, and the softmax when the file has one with
    as many rows as the model's vocabulary -> a line saying where the softmax came from."""
    load_hdf5_weights(model.bilm, weight_file)
    softmax = read_hdf5_softmax(weight_file, required=False)
    if softmax is None:
        return f'softmax: new ({weight_file} has none)'
    W, b = softmax
    if W.shape != tuple(model.softmax.W.shape):
        return (f'softmax: new ({weight_file} has one of {W.shape[0]} rows, the vocabulary {model.vocab_size} '
                f'tokens)')
    with paddle.no_grad():
        model.softmax.W.set_value(W)
        model.softmax.b.set_value(b.reshape(-1, 1))
    return f'softmax: from {weight_file} ({W.shape[0]} rows, the vocabulary\'s size)'


def load_bilm(params_file=None, options_file=None, weight_file=None, stateful=False, vocab_file=None,
              embedding_weight_file=None):
    """A BiLM from a checkpoint prefix ('DIR/N'), from bilm-tf options + hdf5 weights, or, given
    none of them, the bundled model in pretrained/ (saying so on stderr).

    A word or word+char model needs its input vocabulary: vocab.txt beside its options.json, or
    `vocab_file` (bilm-tf files; given beside vocab.txt, it must hold the same tokens). A word
    model's `embedding` may come from `embedding_weight_file` (bilm-tf's inference layout).
    """
    if params_file is None and options_file is None and weight_file is None:
        options_file, weight_file = bundled_model_files()
        print(f'no model given: using the bundled model in {BUNDLED_MODEL_DIR} '
              f'(its card: {os.path.join(BUNDLED_MODEL_DIR, "README.md")})', file=sys.stderr, flush=True)
    if params_file is not None:
        if options_file is not None or weight_file is not None:
            raise InputError('give either params_file (a checkpoint prefix) or options_file + weight_file')
        return load_embedding_weight_file(load_bilm_checkpoint(params_file, stateful, vocab_file)[0],
                                          embedding_weight_file)
    if options_file is None or weight_file is None:
        raise InputError('give params_file (a checkpoint prefix like checkpoints/10000), '
                         'both options_file and weight_file, or neither (the bundled model)')
    config = read_model_config(options_file)
    embedding_source = embedding_weight_file if config.token_input == 'word' and embedding_weight_file else weight_file
    vocab = read_input_vocabulary(config, os.path.dirname(options_file), vocab_file,
                                  _hdf5_embedding_rows(config, weight_file, embedding_weight_file), embedding_source)
    return load_hdf5_weights(BiLM(config, stateful=stateful, vocab=vocab), weight_file, embedding_weight_file)


def _hdf5_embedding_rows(config, weight_file, embedding_weight_file=None):
    if config.token_input == 'word':
        return hdf5_rows(embedding_weight_file or weight_file, HDF5_EMBEDDING)
    return hdf5_rows(weight_file, HDF5_WORD_EMBEDDING) if config.has_words else None


def load_language_model(vocab_size, params_file=None, options_file=None, weight_file=None, vocab_file=None):
    """A LanguageModel from our checkpoint prefix, or from hdf5 weights that hold softmax/W and softmax/b.

    The softmax must have `vocab_size` rows (the vocabulary it was trained with); vocab_file: the
    input vocabulary of a word model's bilm-tf files (see load_bilm).
    """
    if params_file is not None:
        config, state = read_checkpoint(params_file, vocab_size, require_softmax=True)
        vocab = read_input_vocabulary(config, checkpoint_dir(params_file), vocab_file, _embedding_rows(state),
                                      params_file)
        return load_state_checked(LanguageModel(config, vocab_size, vocab=vocab), state, params_file)
    bilm = load_bilm(options_file=options_file, weight_file=weight_file, stateful=True, vocab_file=vocab_file)
    W, b = read_hdf5_softmax(weight_file)
    check_softmax_rows(W.shape, vocab_size, weight_file)
    model = LanguageModel(bilm.config, vocab_size, vocab=bilm.vocab)
    model.bilm = bilm
    with paddle.no_grad():
        model.softmax.W.set_value(W)
        model.softmax.b.set_value(b.reshape(-1, 1))
    return model
