"""What the embedding frees and reuses as it goes, so that its peak memory holds one group's buffers,
not two: in inference every group of steps of every LSTM layer writes its input-to-gate products
([group tokens, 4D]) into one buffer, and a group's cells ([group tokens, D]) are released before the
next group's products are made."""
import weakref

import numpy as np
import paddle

from paddle_elmo.model import kernels, lstm
from paddle_elmo.model.config import ModelConfig


def grouped_case():
    """A two-layer stack whose inference runs several groups of one step per layer, and its inputs
    -> (stack, x [4, 5, 4], batch_sizes, states)."""
    paddle.seed(0)
    stack = lstm.LstmStack(ModelConfig(projection_dim=4, cell_dim=8, num_layers=2, dropout=0.0))
    stack.GATE_BUFFER_MB = 0  # groups of one step
    lengths = [5, 3, 3, 1]
    x = paddle.to_tensor(np.random.RandomState(0).uniform(-1, 1, (4, 5, 4)).astype(np.float32))
    batch_sizes = (np.array(lengths)[None, :] > np.arange(5)[:, None]).sum(axis=1)
    states = [(paddle.zeros([4, 4]), paddle.zeros([4, 8])) for _ in stack.layers]
    return stack, x, batch_sizes, states


def test_a_groups_cells_are_freed_before_the_next_groups_products(monkeypatch):
    stack, x, batch_sizes, states = grouped_case()
    held, alive_at_product, recurrences = [], [], []
    real_matmul, real_recurrence = paddle.matmul, kernels.recurrence

    def matmul(*args, **kwargs):  # the input-to-gate product of the next group
        alive_at_product.append(sum(ref() is not None for ref in held))
        return real_matmul(*args, **kwargs)

    def recurrence(gates, *args, **kwargs):
        h_all, c_all = real_recurrence(gates, *args, **kwargs)
        held[:] = [weakref.ref(c_all)]
        recurrences.append(1)
        return h_all, c_all

    monkeypatch.setattr(paddle, 'matmul', matmul)
    monkeypatch.setattr(kernels, 'recurrence', recurrence)
    with paddle.no_grad():
        stack(x, batch_sizes, states)
    assert len(recurrences) > 2 * len(stack.layers)  # several groups in each layer
    assert alive_at_product and max(alive_at_product) == 0


def test_inference_writes_every_groups_gate_products_into_one_buffer(monkeypatch):
    """One [group tokens, 4D] allocation per forward, not one per group and layer (the largest
    buffers of the embedding), and the same outputs as fresh products."""
    stack, x, batch_sizes, states = grouped_case()
    with monkeypatch.context() as fresh:  # the reference: a new tensor for every group's products
        fresh.setattr(lstm, 'gate_products', lambda x, w_input, buffer=None: paddle.matmul(x, w_input))
        with paddle.no_grad():
            reference = [o.numpy() for o in stack(x, batch_sizes, states)[0]]
    addresses, real_recurrence = [], kernels.recurrence

    def recurrence(gates, *args, **kwargs):
        addresses.append(gates.data_ptr())
        return real_recurrence(gates, *args, **kwargs)

    monkeypatch.setattr(kernels, 'recurrence', recurrence)
    with paddle.no_grad():
        grouped = [o.numpy() for o in stack(x, batch_sizes, states)[0]]
    assert len(addresses) > 2 * len(stack.layers) and len(set(addresses)) == 1
    for a, b in zip(reference, grouped):
        np.testing.assert_array_equal(a, b)
