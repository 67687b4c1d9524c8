"""What the embedding frees and reuses as it goes, so that its peak memory holds one group's buffers,
not two: in inference every group of steps of every LSTM layer writes its input-to-gate products
([group tokens, 4D]) into one buffer, and a group's cells ([group tokens, D]) are released before the
next group's products are made; embed_file writes each batch as it comes."""
import json
import weakref
from types import SimpleNamespace

import h5py
import numpy as np
import paddle

from paddle_elmo.model import kernels, lstm
from paddle_elmo.model.config import ModelConfig
from paddle_elmo.use.sentence_embedder import SentenceEmbedder, embed_file


def grouped_case():
    """A two-layer stack whose inference runs several groups of one step per layer, and its inputs
    -> (stack, x [4, 5, 4], batch_sizes, states)."""
    paddle.seed(0)
    stack = lstm.LstmStack(ModelConfig(projection_dim=4, cell_dim=8, num_layers=2, dropout=0.0), kernels.CPU_KERNELS)
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


class CountingEmbedder(SentenceEmbedder):
    """Embeddings of ones, counting how many it returned are still alive when a batch is asked for."""
    batch_size, stateful, tokenizer, mapper = 2, False, 'whitespace', SimpleNamespace(vocab=None)

    def __init__(self):
        self.returned, self.alive_at_batch = [], []

    def _embed_token_lists(self, sentences):
        self.alive_at_batch.append(sum(ref() is not None for ref in self.returned))
        out = [np.ones((3, len(s), 4), np.float32) for s in sentences]
        self.returned += [weakref.ref(e) for e in out]
        return out


def test_embed_file_holds_one_batch_of_embeddings_at_a_time(tmp_path):
    lines = ['a b', 'c', 'd e f', 'g', 'h i', 'j k l m', 'n', 'o p']
    (tmp_path / 'in.txt').write_text('\n'.join(lines) + '\n', encoding='utf-8')
    embedder = CountingEmbedder()
    embed_file(embedder, str(tmp_path / 'in.txt'), str(tmp_path / 'out.hdf5'), batch_size=2, progress=False)
    assert len(embedder.alive_at_batch) == 4  # one chunk (16 batches' worth) of 4 batches
    assert max(embedder.alive_at_batch) <= 2  # at most the batch before (the chunk's would be up to 6)
    with h5py.File(tmp_path / 'out.hdf5', 'r') as f:
        assert [f[str(i)].shape[1] for i in range(len(lines))] == [len(line.split()) for line in lines]
        assert json.loads(f['sentence_to_index'][0]) == {line: str(i) for i, line in enumerate(lines)}
