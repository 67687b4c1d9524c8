"""A model keeps nothing derived from its weights across calls that a write could leave stale:
after a write to the weights, by whatever path (set_value, set_state_dict, copy_, an in-place op,
loading weights, Paddle's optimizer or the library's), the model's outputs are exactly those of a
fresh model holding the written weights."""
import copy

import numpy as np
import paddle
import pytest

from conftest import tiny_config
from paddle_elmo.model.bilm import BiLM
from paddle_elmo.runtime import inference_mode
from paddle_elmo.text.token_ids import CharMapper

SENTENCES = [['The', 'cat', 'sat', '.'], ['A', 'dog', 'barked', 'twice', 'at', 'night'], ['Hi']]


def char_ids(sentences=SENTENCES):
    return CharMapper().batch(sentences)[0]


def embed(bilm, sentences=SENTENCES):
    """The biLM's layers (numpy) for the sentences, as the embedder runs it (no gradients)."""
    with inference_mode(bilm, False) as model:
        return [a.numpy() for a in model(char_ids(sentences))['activations']]


def fresh_copy(bilm):
    """A new BiLM holding bilm's weights, never run before."""
    copy_ = BiLM(tiny_config())
    copy_.set_state_dict({k: v.numpy() for k, v in bilm.state_dict().items()})
    return copy_


def assert_same(a, b):
    assert len(a) == len(b) and all(np.array_equal(x, y) for x, y in zip(a, b))


def new_bilm(seed=0):
    paddle.seed(seed)
    return BiLM(tiny_config())


def set_value(bilm):
    layer = bilm.forward_stack.layers[0]
    layer.W.set_value(layer.W.numpy() * 1.5)


def set_value_w_p(bilm):
    layer = bilm.backward_stack.layers[1]
    layer.W_P.set_value(layer.W_P.numpy()[::-1].copy())


def set_state_dict(bilm):
    bilm.set_state_dict({k: v.numpy() for k, v in new_bilm(seed=3).state_dict().items()})


def stack_set_state_dict(bilm):
    bilm.backward_stack.set_state_dict(bilm.forward_stack.state_dict())


def copy_into(bilm):
    layer = bilm.forward_stack.layers[1]
    layer.W.copy_(paddle.to_tensor(layer.W.numpy() * -1.0), False)


def in_place_op(bilm):
    with paddle.no_grad():
        bilm.backward_stack.layers[0].W_P.scale_(0.5)


def load_hdf5(bilm, tmp_path):
    from paddle_elmo import export_weights
    from paddle_elmo.files.hdf5_weights import load_hdf5_weights
    export_weights(new_bilm(seed=4), str(tmp_path))
    load_hdf5_weights(bilm, str(tmp_path / 'weights.hdf5'))


WRITES = [set_value, set_value_w_p, set_state_dict, stack_set_state_dict, copy_into, in_place_op, load_hdf5]


@pytest.mark.parametrize('write', WRITES, ids=[w.__name__ for w in WRITES])
def test_after_a_write_the_outputs_are_a_fresh_model_s(write, tmp_path):
    bilm = new_bilm()
    before = embed(bilm)
    assert_same(before, embed(bilm))
    write(bilm, tmp_path) if write is load_hdf5 else write(bilm)
    after = embed(bilm)
    assert not all(np.array_equal(x, y) for x, y in zip(before[1:], after[1:]))
    assert_same(after, embed(fresh_copy(bilm)))


@pytest.mark.parametrize('embed_after', ['forward', 'backward'])
def test_a_paddle_optimizer_step_after_an_embedding_shows_in_the_next_one(embed_after):
    """An embedding between the forward and the backward (no gradient yet), or between the backward
    and the step, then the gradients set to None: the next embedding is the updated model's."""
    bilm = new_bilm()
    optimizer = paddle.optimizer.SGD(learning_rate=0.5, parameters=bilm.parameters())
    embed(bilm)
    loss = sum((a ** 2).sum() for a in bilm(char_ids())['activations'][1:])
    if embed_after == 'forward':
        embed(bilm)
    loss.backward()
    assert bilm.forward_stack.layers[0].W.grad is not None
    if embed_after == 'backward':
        embed(bilm)
    optimizer.step()
    optimizer.clear_grad(set_to_zero=False)
    assert bilm.forward_stack.layers[0].W.grad is None
    assert_same(embed(bilm), embed(fresh_copy(bilm)))


def test_each_library_optimizer_step_shows_in_the_next_embedding():
    """Three steps of the language model with an embedding after each: each embedding is the fresh
    model's, and the steps changed it."""
    from helpers import fix_candidates, make_case, make_model
    from paddle_elmo.train.lm import train_step
    from paddle_elmo.train.optimizers import Adagrad
    model = make_model()
    optimizer = Adagrad(model, 0.2, 1.0)
    embeddings = [embed(model.bilm)]
    for rank in range(3):
        batch, samples = make_case(rank)
        fix_candidates(model, samples)
        train_step(model, optimizer, batch)
        model.clear_gradients(set_to_zero=False)
        embeddings.append(embed(model.bilm))
        assert_same(embeddings[-1], embed(fresh_copy(model.bilm)))
        assert not np.array_equal(embeddings[-1][-1], embeddings[-2][-1])


def test_a_deep_copy_s_writes_reach_only_it():
    bilm = new_bilm()
    before = embed(bilm)
    twin = copy.deepcopy(bilm)
    assert_same(embed(twin), before)
    set_value(twin)
    assert_same(embed(twin), embed(fresh_copy(twin)))
    assert_same(embed(bilm), before)
