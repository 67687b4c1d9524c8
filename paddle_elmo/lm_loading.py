"""A LanguageModel (biLM + softmax) from files: our checkpoint, or hdf5 weights with the softmax
(perplexity and prediction), and released weights loaded into a new run's model.
"""
import paddle

from paddle_elmo.checkpoints import state_embedding_rows, check_softmax_rows, checkpoint_dir, load_state_checked, read_checkpoint
from paddle_elmo.hdf5_weights import load_hdf5_weights, read_hdf5_softmax
from paddle_elmo.lm import LanguageModel
from paddle_elmo.model_io import bundled_model_files, load_bilm
from paddle_elmo.run_configs import read_input_vocabulary


def load_weights_into(model, weight_file):
    """Fill a LanguageModel from weights.hdf5: the biLM, and the softmax when the file has one with
    as many rows as the model's vocabulary -> (whether the softmax came from the file, a line saying
    where it came from)."""
    load_hdf5_weights(model.bilm, weight_file)
    softmax = read_hdf5_softmax(weight_file, required=False)
    if softmax is None:
        return False, f'softmax: new ({weight_file} has none)'
    W, b = softmax
    if W.shape != tuple(model.softmax.W.shape):
        return False, (f'softmax: new ({weight_file} has one of {W.shape[0]} rows, the vocabulary '
                       f'{model.vocab_size} tokens)')
    with paddle.no_grad():
        model.softmax.W.set_value(W)
        model.softmax.b.set_value(b.reshape(-1, 1))
    return True, f'softmax: from {weight_file} ({W.shape[0]} rows, the vocabulary\'s size)'


def load_language_model(vocab_size, params_file=None, options_file=None, weight_file=None, vocab_file=None):
    """A LanguageModel from our checkpoint prefix, or from hdf5 weights that hold softmax/W and softmax/b.

    The softmax must have `vocab_size` rows (the vocabulary it was trained with); vocab_file: the
    input vocabulary of a word model's bilm-tf files (see load_bilm).
    """
    if params_file is not None:
        config, state = read_checkpoint(params_file, vocab_size, require_softmax=True)
        vocab = read_input_vocabulary(config, checkpoint_dir(params_file), vocab_file, state_embedding_rows(state),
                                      params_file)
        return load_state_checked(LanguageModel(config, vocab_size, vocab=vocab), state, params_file)
    bilm = load_bilm(options_file=options_file, weight_file=weight_file, stateful=True, vocab_file=vocab_file)
    weight_file = weight_file or bundled_model_files()[1]  # none given: load_bilm took the bundled model
    W, b = read_hdf5_softmax(weight_file)
    check_softmax_rows(W.shape, vocab_size, weight_file)
    return LanguageModel(bilm.config, vocab_size, bilm=bilm, softmax=(W, b))  # no throwaway random biLM or softmax
