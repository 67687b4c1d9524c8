"""What the embedding frees as it goes, so that its peak memory is one group's buffers, not two: an
LSTM layer's input-to-gate products ([group tokens, 4D]) and its cells ([group tokens, D]) of a group
of steps are released before the next group's are made."""
import weakref

import numpy as np
import paddle

from paddle_elmo.model import kernels, lstm
from paddle_elmo.model.config import ModelConfig


def test_a_groups_gate_products_and_cells_are_freed_before_the_next_groups_products(monkeypatch):
    paddle.seed(0)
    stack = lstm.LstmStack(ModelConfig(projection_dim=4, cell_dim=8, num_layers=2, dropout=0.0))
    stack.GATE_BUFFER_MB = 0  # groups of one step: several groups per layer
    held, alive_at_product, recurrences = [], [], []
    real_matmul, real_recurrence = paddle.matmul, kernels.recurrence

    def matmul(*args, **kwargs):  # the input-to-gate product of the next group
        alive_at_product.append(sum(ref() is not None for ref in held))
        return real_matmul(*args, **kwargs)

    def recurrence(gates, *args, **kwargs):
        h_all, c_all = real_recurrence(gates, *args, **kwargs)
        held[:] = [weakref.ref(gates), weakref.ref(c_all)]
        recurrences.append(1)
        return h_all, c_all

    monkeypatch.setattr(paddle, 'matmul', matmul)
    monkeypatch.setattr(kernels, 'recurrence', recurrence)
    lengths = [5, 3, 3, 1]
    x = paddle.to_tensor(np.random.RandomState(0).uniform(-1, 1, (4, 5, 4)).astype(np.float32))
    batch_sizes = (np.array(lengths)[None, :] > np.arange(5)[:, None]).sum(axis=1)
    states = [(paddle.zeros([4, 4]), paddle.zeros([4, 8])) for _ in stack.layers]
    with paddle.no_grad():
        stack(x, batch_sizes, states)
    assert len(recurrences) > 2 * len(stack.layers)  # several groups in each layer
    assert alive_at_product and max(alive_at_product) == 0
