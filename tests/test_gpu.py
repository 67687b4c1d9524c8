"""GPU smoke test (marker `gpu`): runs only where Paddle sees CUDA, and compares with the CPU.

    pytest -m gpu        # on a machine with paddlepaddle-gpu
"""
import numpy as np
import paddle
import pytest

from conftest import tiny_config

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not (paddle.device.is_compiled_with_cuda() and paddle.device.cuda.device_count() > 0),
                       reason='needs paddlepaddle-gpu and a visible CUDA device'),
]


def on(device, fn):
    paddle.set_device(device)
    try:
        return fn()
    finally:
        paddle.set_device('cpu')


def test_the_fixture_embeds_the_same_on_gpu_as_on_cpu(fixture_dir, fixture_sentences):
    import os
    from paddle_elmo import ELMoEmbedder
    files = dict(options_file=os.path.join(fixture_dir, 'options.json'),
                 weight_file=os.path.join(fixture_dir, 'lm_weights.hdf5'))
    sentences = fixture_sentences[0]
    cpu = on('cpu', lambda: ELMoEmbedder(**files).encode(sentences))
    gpu = on('gpu', lambda: ELMoEmbedder(**files).encode(sentences))
    for c, g in zip(cpu, gpu):
        np.testing.assert_allclose(g, c, atol=1e-4)


def test_two_training_steps_on_gpu_match_the_cpu():
    from paddle_elmo.train.lm import LanguageModel, train_step
    from paddle_elmo.train.optimizers import make_optimizer
    rng = np.random.RandomState(0)
    vocab_size, batch, unroll = 50, 3, 4

    def batch_dict():
        b = {}
        for suffix in ('', '_reverse'):
            b['char_ids' + suffix] = rng.randint(1, 262, size=(batch, unroll, 50)).astype(np.int64)
            b['next_token_ids' + suffix] = rng.randint(0, vocab_size, size=(batch, unroll)).astype(np.int64)
        return b

    batches = [batch_dict(), batch_dict()]
    paddle.seed(0)
    start = {k: v.numpy() for k, v in LanguageModel(tiny_config(), vocab_size, 8).state_dict().items()}

    def train():  # the same start on both devices (their random generators differ)
        model = LanguageModel(tiny_config(), vocab_size, 8, seed=0)
        model.set_state_dict(start)
        optimizer = make_optimizer(model, 'adagrad', 0.2, 10.0, 0, 1)
        for b in batches:
            train_step(model, optimizer, b)
        return {k: v.numpy() for k, v in model.state_dict().items()}

    cpu, gpu = on('cpu', train), on('gpu', train)
    for name in cpu:
        np.testing.assert_allclose(gpu[name], cpu[name], atol=1e-4, err_msg=name)
