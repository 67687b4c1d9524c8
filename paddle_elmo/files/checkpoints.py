"""Our checkpoints: a prefix `DIR/N` with `DIR/options.json` and `DIR/recipe.json` (run_configs.py).

- `DIR/N.pdparams`: a LanguageModel's state (`bilm.*`, `softmax.W` [vocab, P], `softmax.b`
  [vocab, 1]) or a BiLM's own;
- `DIR/N.pdopt` (pretraining's): the optimizer's state plus TRAIN_STATE: the step, the number of
  processes, the training seconds and, per rank, the data stream's position, the sampler's RNG,
  the carried LSTM states and Paddle's RNG (`rank_state` / `restore_rank_state`).

Everything that reads one goes through `read_state` (with its options.json: `read_checkpoint`), which
checks the softmax against the vocabulary; `load_state_checked` checks keys and shapes. Paddle is
imported where a state is read or written, so that a checkpoint's files are found and its options read
without it (model_io.resolve_model: a command's bad input fails before Paddle's import).
"""
import os

from paddle_elmo.fileio import InputError, atomic_path
from paddle_elmo.files.checkpoint_names import OPTIMIZER_SUFFIX, PARAMS_SUFFIX, checkpoint_paths
from paddle_elmo.files.run_configs import read_model_config


BILM_PREFIX = 'bilm.'  # LanguageModel.bilm's entries of a checkpoint's state


SOFTMAX_W, SOFTMAX_B = 'softmax.W', 'softmax.b'  # LanguageModel.softmax's


TRAIN_STATE = 'train_state'  # the .pdopt entry beside the optimizer's own


def softmax_of(state):
    """A LanguageModel checkpoint's softmax in the export layout -> (W [vocab, P], b [vocab]), or None."""
    if SOFTMAX_W not in state:
        return None
    return state[SOFTMAX_W].numpy(), state[SOFTMAX_B].numpy().reshape(-1)


def checkpoint_options_file(prefix):
    """The options.json of checkpoint 'DIR/N', with an error that says what a checkpoint needs."""
    options_file, _ = checkpoint_paths(prefix)
    if not os.path.exists(options_file):
        raise FileNotFoundError(f'{options_file}: not found; checkpoint {prefix} needs the options.json '
                                f'that paddle-elmo pretrain writes beside it')
    return options_file


def read_paddle_file(path, what='checkpoint'):
    """paddle.load with one-line errors for a missing, truncated or foreign file."""
    if not os.path.exists(path):
        raise FileNotFoundError(f'{path}: {what} not found')
    import paddle
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
    return read_model_config(checkpoint_options_file(prefix)), read_state(prefix, vocab_size, require_softmax)


def read_state(prefix, vocab_size=None, require_softmax=False):
    """Checkpoint 'DIR/N''s state dict, its softmax checked as read_checkpoint's."""
    ckpt = checkpoint_paths(prefix)[1]
    state = read_paddle_file(ckpt)
    has_softmax = SOFTMAX_W in state
    if require_softmax and not has_softmax:
        raise InputError(f'{ckpt}: no softmax ({SOFTMAX_W}) in this checkpoint; perplexity, prediction and '
                         f'resuming need it')
    if has_softmax:
        check_softmax_rows(tuple(state[SOFTMAX_W].shape), vocab_size, ckpt)
    return state


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


def state_embedding_rows(state):
    """The word embedding's rows in a checkpoint's state dict (a BiLM's or a LanguageModel's), or None."""
    for key in ('word_embedding', BILM_PREFIX + 'word_embedding'):
        if key in state:
            return state[key].shape[0]
    return None


def rank_state(stream, model):
    """What one rank needs, beyond the weights, to continue exactly: its data position, sampler,
    carried LSTM states and Paddle's RNG."""
    import paddle
    return {'stream': stream.state_dict(), 'sampler': model.sampler.state(),
            'lstm_states': model.bilm.get_states(), 'paddle_rng': paddle.get_rng_state()}


def restore_rank_state(state, stream, model):
    import paddle
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
    import paddle
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
    state = read_state(prefix, model.vocab_size, require_softmax=True)
    load_state_checked(model, state, prefix)
    opt_state = read_paddle_file(opt_path, 'optimizer state')
    if TRAIN_STATE not in opt_state:
        raise InputError(f'{opt_path}: no {TRAIN_STATE}; not an optimizer file written by paddle-elmo pretrain')
    state = opt_state.pop(TRAIN_STATE)
    optimizer.set_state_dict(opt_state)
    if state['world_size'] != world_size:
        raise InputError(f'{opt_path} was saved by {state["world_size"]} processes; resume with '
                         f'the same number (got {world_size})')
    return state
