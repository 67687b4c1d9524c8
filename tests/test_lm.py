"""The training objective: log-uniform sampler, sampled softmax, chunked full softmax."""
import numpy as np
import paddle
import pytest

from conftest import tiny_options
from lm import LanguageModel, LogUniformSampler, Softmax


def test_sampler_draws_follow_the_log_uniform_distribution():
    sampler = LogUniformSampler(1000, 1, seed=0)
    draws = sampler._draw(400_000)
    expected = sampler.probability(np.arange(1000))
    assert abs(expected.sum() - 1) < 1e-9
    counts = np.bincount(draws, minlength=1000)
    # Head ids individually, the tail in bins: relative error well inside 5 sigma.
    for k in range(10):
        assert abs(counts[k] / 400_000 - expected[k]) < 5 * np.sqrt(expected[k] / 400_000)
    assert abs(counts[500:].sum() / 400_000 - expected[500:].sum()) < 0.005


def test_unique_sampling_and_expected_counts_match_simulation():
    sampler = LogUniformSampler(200, 20, seed=1)
    hits = np.zeros(200)
    n_runs = 3000
    expected = np.zeros(200)
    for _ in range(n_runs):
        ids, draws = sampler.sample()
        assert len(ids) == 20 and len(set(ids.tolist())) == 20
        hits[ids] += 1
        expected += sampler.expected_count(np.arange(200), draws)
    # TF's expected count 1 - (1 - p)^draws predicts how often an id is in the sample.
    np.testing.assert_allclose(hits / n_runs, expected / n_runs, atol=0.04)


def test_sampled_loss_equals_full_softmax_loss_when_every_class_is_sampled():
    paddle.seed(3)
    softmax = Softmax(37, 8)
    h = paddle.randn([11, 8])
    targets = paddle.to_tensor(np.random.RandomState(0).randint(0, 37, 11))
    full = float(softmax.full_losses(h, targets, chunk=10).mean())
    sampled = float(softmax.sampled_loss(h, targets, LogUniformSampler(37, 37)))
    logits = (h @ softmax.W.T + softmax.b.squeeze(-1)).numpy()
    direct = np.mean(np.log(np.exp(logits).sum(1)) - logits[np.arange(11), targets.numpy()])
    assert full == pytest.approx(direct, abs=1e-5)
    assert sampled == pytest.approx(full, abs=1e-5)


def test_accidental_hits_are_removed_and_logits_corrected():
    paddle.seed(4)
    softmax = Softmax(50, 4)
    h = paddle.randn([6, 4])
    targets = paddle.to_tensor(np.array([0, 1, 2, 3, 4, 5]))
    sampler = LogUniformSampler(50, 10, seed=5)
    state = sampler.state()
    got = float(softmax.sampled_loss(h, targets, sampler))
    sampler.set_state(state)
    ids, draws = sampler.sample()
    W, b = softmax.W.numpy(), softmax.b.numpy()[:, 0]
    hn, t = h.numpy(), targets.numpy()
    log_q = lambda k: np.log(sampler.expected_count(k, draws))
    true = (hn * W[t]).sum(1) + b[t] - log_q(t)
    cand = hn @ W[ids].T + b[ids] - log_q(ids)[None, :]
    cand[t[:, None] == ids[None, :]] = -np.inf  # a target among the candidates is not a negative
    logits = np.concatenate([true[:, None], cand], 1)
    want = np.mean(np.log(np.exp(logits).sum(1)) - true)
    assert got == pytest.approx(want, abs=1e-5)


def test_softmax_gradients_are_sparse_rows():
    softmax = Softmax(1000, 4)
    h = paddle.randn([3, 4])
    loss = softmax.sampled_loss(h, paddle.to_tensor(np.array([1, 2, 3])), LogUniformSampler(1000, 5, seed=0))
    loss.backward()
    assert softmax.W.grad.shape[0] < 1000  # only the touched rows, as bilm-tf's IndexedSlices


def test_language_model_trains_and_carries_state():
    paddle.seed(0)
    model = LanguageModel(tiny_options(), 30, n_negative_samples=30)
    rng = np.random.RandomState(0)
    batch = {k: rng.randint(1, 262, (2, 4, 50)) for k in ('char_ids', 'char_ids_reverse')}
    batch.update({k: rng.randint(0, 30, (2, 4)) for k in ('next_token_ids', 'next_token_ids_reverse')})
    opt = paddle.optimizer.Adagrad(0.2, parameters=model.parameters(), initial_accumulator_value=1.0)
    model.train()
    first = float(model(batch)['loss'])
    for _ in range(30):
        model.bilm.reset_states()
        out = model(batch)
        out['loss'].backward()
        opt.step()
        opt.clear_grad()
    assert float(out['loss']) < first - 0.5
    assert model.bilm.get_states() is not None  # state carried for the next batch
