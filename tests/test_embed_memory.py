"""What the embedding frees and reuses as it goes, so that its peak memory holds one block's buffers,
not a layer's: on the CPU the recurrence kernel makes the input-to-gate products ([rows, 4D], the
largest buffers) one block of steps at a time and keeps no cells; where Paddle's ops run the
recurrence (GPUs, no compiler), every group of steps of every LSTM layer writes its products into
one buffer, and a group's cells ([group tokens, D]) are released before the next group's products
are made; embed_file writes each batch as it comes."""
import json
import os
import subprocess
import sys
import textwrap
import weakref
from types import SimpleNamespace

import h5py
import numpy as np
import paddle
import pytest

from paddle_elmo.model import kernels, lstm
from paddle_elmo.model.config import ModelConfig
from paddle_elmo.use.sentence_embedder import SentenceEmbedder, embed_file


def grouped_case():
    """A two-layer stack on Paddle's ops whose inference runs several groups of one step per layer,
    and its inputs -> (stack, x [4, 5, 4], batch_sizes, states)."""
    paddle.seed(0)
    stack = lstm.LstmStack(ModelConfig(projection_dim=4, cell_dim=8, num_layers=2, dropout=0.0), kernels.PADDLE_OPS)
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


# A stack whose layer's gate products would be 320 MB at once ([10,240 tokens, 4 x 2048]), run in
# inference in a fresh process with glibc keeping freed memory as the embedders have it; prints the
# growth of the peak resident memory over the forward (VmHWM reset first), in MB.
STREAMED_PEAK = textwrap.dedent('''
    import numpy as np, paddle
    from paddle_elmo.model import kernels, lstm
    from paddle_elmo.model.config import ModelConfig
    from paddle_elmo.runtime import keep_freed_memory
    keep_freed_memory()
    paddle.seed(0)
    stack = lstm.LstmStack(ModelConfig(projection_dim=16, cell_dim=2048, num_layers=1, dropout=0.0),
                           kernels.CPU_KERNELS)
    stack.GATE_BLOCK_MB = BLOCK_MB
    def run(rows, steps):
        x = paddle.to_tensor(np.random.RandomState(0).uniform(-1, 1, (rows, steps, 16)).astype(np.float32))
        states = [(paddle.zeros([rows, 16]), paddle.zeros([rows, 2048]))]
        with paddle.no_grad():
            return stack(x, np.full(steps, rows), states)
    run(64, 2)  # MKL's and the kernel's first-call allocations
    def status(field):
        return next(int(line.split()[1]) for line in open('/proc/self/status') if line.startswith(field + ':'))
    with open('/proc/self/clear_refs', 'w') as f:
        f.write('5')  # VmHWM := VmRSS
    before = status('VmRSS')
    run(64, 160)
    print((status('VmHWM') - before) / 1024)
''')


def test_streamed_inference_holds_one_block_of_gate_products_not_the_layers():
    """The kernel makes a block's products (GATE_BLOCK_MB) just before it runs its steps: the
    forward's peak grows by a few blocks' worth, not by the layer's 320 MB (nor by the 192 MB
    group and 48 MB of cells that the grouped path held)."""
    if kernels.kernel() is None or not os.path.exists('/proc/self/clear_refs'):
        pytest.skip('the CPU kernels are not built here, or no /proc (Linux) to read the peak from')
    block_mb = 16
    out = subprocess.run([sys.executable, '-c', f'BLOCK_MB = {block_mb}\n' + STREAMED_PEAK], capture_output=True,
                         text=True, check=True)
    growth_mb = float(out.stdout.split()[-1])
    assert growth_mb < 6 * block_mb, out.stdout  # the grouped path's growth was ~240 MB


def test_streamed_inference_matches_the_kernels_grouped_recurrence():
    """The same values as the training kernel's (kernels.layer_recurrence: a group's input products
    made at once, under autograd here), to float32 rounding: blocks of steps change only which rows
    one product takes, and MKL's per-row results can depend on that in the last bit."""
    if kernels.kernel() is None:
        pytest.skip('the CPU kernels are not built here')
    paddle.seed(0)
    config = ModelConfig(projection_dim=8, cell_dim=32, num_layers=2, dropout=0.0, cell_clip=2.0, proj_clip=1.0,
                         use_skip_connections=True)
    stack = lstm.LstmStack(config, kernels.CPU_KERNELS)
    stack.GATE_BLOCK_MB = 0  # a block per step
    lengths = np.array([9, 7, 7, 3, 1])
    x = paddle.to_tensor(np.random.RandomState(0).uniform(-1, 1, (5, 10, 8)).astype(np.float32))
    batch_sizes = (lengths[None, :] > np.arange(10)[:, None]).sum(axis=1)
    rng = np.random.RandomState(1)
    states = [(paddle.to_tensor(rng.normal(size=(6, 8)).astype(np.float32)),
               paddle.to_tensor(rng.normal(size=(6, 32)).astype(np.float32))) for _ in stack.layers]
    with paddle.no_grad():
        streamed = stack(x, batch_sizes, states)
    grouped = stack(x, batch_sizes, states)  # the weights track gradients: the grouped kernel path
    for got, ref in zip(flat(streamed), flat(grouped)):
        np.testing.assert_allclose(got, ref, rtol=0, atol=1e-6)


def flat(result):
    """A stack's (outputs, finals) -> its arrays: the layers' outputs, then each final h and c."""
    outputs, finals = result
    return [o.numpy() for o in outputs] + [t.numpy() for state in finals for t in state]


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
