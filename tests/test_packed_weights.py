"""The recurrence kernel's packed weights, kept across calls (lstm.LstmLayer.packed_weights), are
never used after the weights change, by whatever path they change (weight_writes): after each
write the model's outputs are exactly those of a fresh model holding the written weights. Kept
packs give exactly the outputs of packing at every call, at most one pair is held per layer, and
it goes with the model. Training does not use them: its losses are those of packing per call."""
import dataclasses
import gc
import weakref

import numpy as np
import paddle
import pytest

from conftest import require_kernels, tiny_config
from paddle_elmo.model import kernels
from paddle_elmo.model.bilm import BiLM
from paddle_elmo.runtime import inference_mode
from paddle_elmo.text.token_ids import CharMapper

SENTENCES = [['The', 'cat', 'sat', '.'], ['A', 'dog', 'barked', 'twice', 'at', 'night'], ['Hi']]


@pytest.fixture(autouse=True)
def needs_kernels():
    require_kernels()  # nothing is packed without them


def char_ids(sentences=SENTENCES):
    return CharMapper().batch(sentences)[0]


def embed(bilm, sentences=SENTENCES):
    """The biLM's layers (numpy) for the sentences, as the embedder runs it (no gradients)."""
    with inference_mode(bilm, False) as model:
        return [a.numpy() for a in model(char_ids(sentences))['activations']]


def fresh_copy(bilm):
    """A new BiLM holding bilm's weights (nothing packed yet)."""
    copy = BiLM(tiny_config())
    copy.set_state_dict({k: v.numpy() for k, v in bilm.state_dict().items()})
    return copy


def assert_same(a, b):
    assert len(a) == len(b) and all(np.array_equal(x, y) for x, y in zip(a, b))


def new_bilm(seed=0):
    paddle.seed(seed)
    return BiLM(tiny_config())


def keep_packs(bilm, keep):
    """The biLM's LSTMs keep their packs (the default) or pack per call: their Kernels' keep_packs."""
    for stack in (bilm.forward_stack, bilm.backward_stack):
        stack.kernels = dataclasses.replace(stack.kernels, keep_packs=keep)


def packs(bilm):
    return [layer._packs for stack in (bilm.forward_stack, bilm.backward_stack) for layer in stack.layers]


def test_kept_packs_give_the_outputs_of_packing_per_call():
    bilm = new_bilm()
    batches = [SENTENCES, SENTENCES[:1], SENTENCES, SENTENCES[1:]]  # first rows 3, 1, 3, 2: repacks
    kept = [embed(bilm, s) for s in batches]
    assert all(p is not None for p in packs(bilm))
    keep_packs(bilm, False)
    assert_same(sum(kept, []), sum((embed(bilm, s) for s in batches), []))
    assert all(p is None for p in packs(bilm))


def test_kept_packs_in_step_groups_give_the_outputs_of_packing_per_call():
    """GATE_BUFFER_MB 0: a kernel call per step or two, each group's first rows fewer."""
    bilm = new_bilm()
    for stack in (bilm.forward_stack, bilm.backward_stack):
        stack.GATE_BUFFER_MB = 0
    kept = embed(bilm) + embed(bilm)
    keep_packs(bilm, False)
    assert_same(kept, embed(bilm) + embed(bilm))


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


def copy_(bilm):
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


WRITES = [set_value, set_value_w_p, set_state_dict, stack_set_state_dict, copy_, in_place_op, load_hdf5]


@pytest.mark.parametrize('write', WRITES, ids=[w.__name__ for w in WRITES])
def test_a_write_repacks_the_weights(write, tmp_path):
    bilm = new_bilm()
    before = embed(bilm)
    assert_same(before, embed(bilm))  # the second call read the kept packs
    write(bilm, tmp_path) if write is load_hdf5 else write(bilm)
    after = embed(bilm)
    assert not all(np.array_equal(x, y) for x, y in zip(before[1:], after[1:]))
    assert_same(after, embed(fresh_copy(bilm)))


@pytest.mark.parametrize('embed_after', ['forward', 'backward'])
def test_a_paddle_optimizer_step_after_an_embedding_is_not_missed(embed_after):
    """The worst orders: an embedding between the forward and the backward (no gradient yet), or
    between the backward and the step, and the gradients then set to None, so that the next
    embedding could take packs kept from before the step."""
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


def test_the_library_optimizer_step_repacks_and_training_losses_are_unchanged():
    """Three steps of the language model with an embedding after each: the losses are those of
    packing per call, and each embedding is the fresh model's."""
    from helpers import fix_candidates, make_case, make_model
    from paddle_elmo.train.lm import train_step
    from paddle_elmo.train.optimizers import Adagrad
    runs = []
    for keep in (True, False):
        model = make_model()
        keep_packs(model.bilm, keep)
        optimizer = Adagrad(model, 0.2, 1.0)
        losses, embeddings = [], []
        for rank in range(3):
            batch, samples = make_case(rank)
            fix_candidates(model, samples)
            losses.append(float(train_step(model, optimizer, batch)[0]['loss']))
            model.clear_gradients(set_to_zero=False)  # no gradient left: packs may be kept
            embeddings.append(embed(model.bilm))
            assert_same(embeddings[-1], embed(fresh_copy(model.bilm)))
        runs.append((losses, embeddings))
    assert runs[0][0] == runs[1][0]
    assert_same(sum(runs[0][1], []), sum(runs[1][1], []))


def test_one_pair_is_kept_per_layer_and_freed_with_the_model():
    bilm = new_bilm()
    held = []
    for sentences in [SENTENCES, SENTENCES[:1], SENTENCES[1:]] * 3:
        embed(bilm, sentences)
        held += [weakref.ref(p[1]) for p in packs(bilm)]
    gc.collect()
    alive = [r for r in held if r() is not None]
    assert len(alive) == len(packs(bilm))  # the last batch's pair per layer only
    del bilm
    gc.collect()
    assert all(r() is None for r in held)


def test_a_pack_for_other_products_is_refused():
    w = paddle.to_tensor(np.ones((8, 64), np.float32))
    packed = kernels.pack_weight(w, 4)
    if packed.numel() == 0:
        pytest.skip('the kernels were built without MKL: nothing is packed')
    gates, bias = paddle.zeros([3, 64]), paddle.zeros([64])
    h0, c0, w_proj = paddle.zeros([3, 8]), paddle.zeros([3, 16]), paddle.ones([16, 8])
    with paddle.no_grad(), pytest.raises(Exception, match='packed weight made for other products'):
        kernels.recurrence(gates, bias, [3], h0, c0, w, w_proj,
                           packed=lambda rows: (packed, kernels.pack_weight(w_proj, rows)))


def test_a_deep_copy_counts_its_own_writes():
    """A deep copy of a model whose weights were watched: its writes count, and reach only it."""
    import copy
    bilm = new_bilm()
    before = embed(bilm)
    twin = copy.deepcopy(bilm)
    assert_same(embed(twin), before)
    set_value(twin)
    assert_same(embed(twin), embed(fresh_copy(twin)))
    assert_same(embed(bilm), before)
