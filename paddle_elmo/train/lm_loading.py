"""A LanguageModel (biLM + softmax) from a model (model_io.LoadedModel: our checkpoint, or hdf5
weights with the softmax) for perplexity and prediction, and released weights loaded into a new
run's model.
"""
import paddle

from paddle_elmo.fileio import InputError
from paddle_elmo.train.lm import LanguageModel
from paddle_elmo.files.model_io import resolve_model


def load_weights_into(model, weights):
    """Fill a LanguageModel from a model's weights (a model_io.LoadedModel): the biLM, and the
    softmax when the file has one with as many rows as the model's vocabulary -> (whether the
    softmax came from the file, a line saying where it came from)."""
    source = weights.weight_file or weights.params_file or weights.name  # an ELMoForManyLangs directory: its name
    softmax = weights.load_into(model.bilm, softmax=True)
    if softmax is None:
        return False, f'softmax: new ({source} has none)'
    W, b = softmax
    if W.shape != tuple(model.softmax.W.shape):
        return False, (f'softmax: new ({source} has one of {W.shape[0]} rows, the vocabulary '
                       f'{model.vocab_size} tokens)')
    set_softmax(model, W, b)
    return True, f'softmax: from {source} ({W.shape[0]} rows, the vocabulary\'s size)'


def load_language_model(vocab_size, model=None):
    """A LanguageModel of `model` (what model_io.resolve_model takes: a LoadedModel, a name, a
    directory, a checkpoint prefix; None: the bundled model), which must hold its softmax, with
    `vocab_size` rows (the vocabulary it was trained with)."""
    model = resolve_model(model)
    bilm, (W, b) = model.load_with_softmax(stateful=True, vocab_size=vocab_size)
    if W.shape[1] != bilm.projection_dim:
        raise InputError(f'{model.weight_file or model.params_file}: the softmax has {W.shape[1]} columns, the '
                         f'model\'s projection_dim is {bilm.projection_dim}')
    # no throwaway random biLM or softmax: the loaded ones are the model's
    return LanguageModel(bilm.config, vocab_size, vocab=bilm.vocab, bilm=bilm, softmax=(W, b), kernels=bilm.kernels)


def set_softmax(model, W, b):
    """model.softmax <- W [vocab, P], b [vocab] (numpy)."""
    with paddle.no_grad():
        model.softmax.W.set_value(W)
        model.softmax.b.set_value(b.reshape(-1, 1))
