"""The training objective: log-uniform sampler, sampled softmax, chunked full softmax."""
import math

import numpy as np
import paddle
import pytest

from conftest import tiny_config
from paddle_elmo.fileio import InputError
from paddle_elmo.model import kernels
from paddle_elmo.train.lm import LanguageModel
from paddle_elmo.train.optimizers import Adagrad
from paddle_elmo.train.sampled_softmax import LogUniformSampler, Softmax, TableRows


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


def sampled(softmax, h, targets, sampler):
    """The training path: pick the rows, then the sampled loss with TF's corrections."""
    cand, draws = sampler.sample()
    rows = softmax.select_rows(np.unique(np.concatenate([targets, cand])))
    log_q = lambda ids: np.log(sampler.expected_count(ids, draws))
    return softmax.sampled_loss(rows, h, targets, cand, log_q(targets), log_q(cand)), cand, draws


@pytest.mark.parametrize('implementation', ['kernels', 'paddle ops'])
def test_sampled_loss_equals_full_softmax_loss_when_every_class_is_sampled(implementation):
    """Both implementations (the GPU runs Paddle's ops); max_logits makes blocks of 10 rows and 1."""
    paddle.seed(3)
    softmax = Softmax(37, 8, kernels.CPU_KERNELS if implementation == 'kernels' else kernels.PADDLE_OPS)
    h = paddle.randn([11, 8])
    targets = np.random.RandomState(0).randint(0, 37, 11)
    full = float(softmax.full_losses(h, targets, max_logits=10 * 40).mean())
    loss, _, _ = sampled(softmax, h, targets, LogUniformSampler(37, 37))
    logits = (h @ softmax.W.T + softmax.b.squeeze(-1)).numpy()
    direct = np.mean(np.log(np.exp(logits).sum(1)) - logits[np.arange(11), targets])
    assert full == pytest.approx(direct, abs=1e-5)
    assert float(loss) == pytest.approx(full, abs=1e-5)


def test_accidental_hits_are_removed_and_logits_corrected():
    paddle.seed(4)
    softmax = Softmax(50, 4, kernels.CPU_KERNELS)
    h = paddle.randn([6, 4])
    t = np.array([0, 1, 2, 3, 4, 5])
    sampler = LogUniformSampler(50, 10, seed=5)
    got, ids, draws = sampled(softmax, h, t, sampler)
    assert np.isin(t, ids).any()  # the head ids are almost surely drawn: hits do occur
    W, b, hn = softmax.W.numpy(), softmax.b.numpy()[:, 0], h.numpy()
    log_q = lambda k: np.log(sampler.expected_count(k, draws))
    true = (hn * W[t]).sum(1) + b[t] - log_q(t)
    cand = hn @ W[ids].T + b[ids] - log_q(ids)[None, :]
    cand[t[:, None] == ids[None, :]] = -np.inf  # a target among the candidates is not a negative
    logits = np.concatenate([true[:, None], cand], 1)
    want = np.mean(np.log(np.exp(logits).sum(1)) - true)
    assert float(got) == pytest.approx(want, abs=1e-5)


def test_softmax_rows_read_in_place_by_the_kernel_give_the_copied_rows_loss_and_gradients():
    """With the kernels the step's W and b rows are not copied (the kernel reads W and b at the rows'
    ids): their values, NaN here, are never read, and the loss and the rows' gradients are those of
    Paddle's ops on copied rows."""
    rng = np.random.RandomState(1)
    W, b = rng.normal(0, 1, (60, 6)), rng.normal(0, 1, (60, 1))
    results = []
    for implementation in (kernels.CPU_KERNELS, kernels.PADDLE_OPS):
        softmax = Softmax(60, 6, implementation, weights=(W, b))
        h = paddle.to_tensor(np.random.RandomState(2).normal(0, 1, (9, 6)).astype(np.float32), stop_gradient=False)
        targets, cand = np.array([3, 7, 7, 50, 12, 0, 33, 41, 12]), np.array([0, 1, 2, 7, 20, 33, 59])
        rows = softmax.select_rows(np.unique(np.concatenate([targets, cand])))
        assert rows.copied == (implementation is kernels.PADDLE_OPS)
        if not rows.copied:
            for value in rows.values:
                value.set_value(np.full(value.shape, np.nan, dtype=np.float32))
        loss = softmax.sampled_loss(rows, h, targets, cand, np.full(9, -1.0), np.linspace(-3, 0, 7))
        loss.backward()
        results.append([float(loss), h.grad.numpy(), rows.values[0].grad.numpy(), rows.values[1].grad.numpy()])
    for name, got, want in zip(['loss', 'd h', 'd W rows', 'd b rows'], *results):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=name)


def test_adagrad_updates_only_the_selected_softmax_rows_with_the_tf_rule():
    paddle.seed(0)
    model = LanguageModel(tiny_config(), 1000, n_negative_samples=5)
    opt = Adagrad(model, lr=0.2, max_grad_norm=1e9, initial_accumulator=1.0)
    before = model.softmax.W.numpy().copy()
    dense_before = model.bilm.forward_stack.layers[0].W_P.numpy().copy()
    model.train()
    out = model(random_batch(np.random.RandomState(0), 1000))
    out['loss'].backward()
    g_rows = out['table_rows'][0].values[0].grad.numpy()
    g_dense = model.bilm.forward_stack.layers[0].W_P.grad.numpy()
    selected = out['table_rows'][0].ids
    opt.step(out['table_rows'])
    opt.clear_grad()
    after = model.softmax.W.numpy()
    changed = np.where((after != before).any(axis=1))[0]
    assert set(changed) <= set(selected) and len(selected) < 1000
    np.testing.assert_allclose(after[selected], before[selected] - 0.2 * g_rows / np.sqrt(1 + g_rows ** 2),
                               rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(model.bilm.forward_stack.layers[0].W_P.numpy(),
                               dense_before - 0.2 * g_dense / np.sqrt(1 + g_dense ** 2), rtol=1e-5, atol=1e-7)


def test_after_clear_grad_a_backward_gives_its_own_step_s_gradients():
    """clear_grad drops the gradients (no zeroing pass): the next backward's must be that step's
    alone, not added to the last step's."""
    paddle.seed(0)
    model = LanguageModel(tiny_config(), 40, n_negative_samples=10)
    opt = Adagrad(model, lr=0.2, max_grad_norm=10.0)
    model.train()
    out = model(random_batch(np.random.RandomState(0), 40))
    out['loss'].backward()
    opt.step(out['table_rows'])
    opt.clear_grad()
    fresh = LanguageModel(tiny_config(), 40, n_negative_samples=10)  # the same weights, no gradient yet
    fresh.set_state_dict(model.state_dict())
    fresh.train()
    fresh.sampler.set_state(model.sampler.state())  # the same candidates
    batch = random_batch(np.random.RandomState(1), 40)
    for m in (model, fresh):
        m.bilm.reset_states()
        m(batch)['loss'].backward()
    mine = dict(fresh.named_parameters())
    for name, p in opt.dense:
        np.testing.assert_array_equal(p.grad.numpy(), mine[name].grad.numpy(), err_msg=name)


def test_gradients_are_clipped_by_their_global_norm():
    paddle.seed(0)
    model = LanguageModel(tiny_config(), 40, n_negative_samples=10)
    opt = Adagrad(model, lr=0.2, max_grad_norm=1e-3)
    model.train()
    out = model(random_batch(np.random.RandomState(1), 40))
    out['loss'].backward()
    parts, norm, scale = opt._gradients(out['table_rows'])
    clipped = scale * float(np.sqrt(sum(float((p * p).sum()) for p in parts)))
    assert norm > 1e-3 and clipped == pytest.approx(1e-3, rel=1e-4)


def random_batch(rng, vocab, batch=2, time=4):
    b = {k: rng.randint(1, 262, (batch, time, 50)) for k in ('char_ids', 'char_ids_reverse')}
    b.update({k: rng.randint(0, vocab, (batch, time)) for k in ('next_token_ids', 'next_token_ids_reverse')})
    return b


def test_language_model_trains_and_carries_state():
    paddle.seed(0)
    model = LanguageModel(tiny_config(), 30, n_negative_samples=30)
    batch = random_batch(np.random.RandomState(0), 30)
    opt = Adagrad(model, lr=0.2, max_grad_norm=10.0)
    model.train()
    first = float(model(batch)['loss'])
    for _ in range(30):
        model.bilm.reset_states()
        out = model(batch)
        out['loss'].backward()
        opt.step(out['table_rows'])
        opt.clear_grad()
    assert float(out['loss']) < first - 0.5
    assert model.bilm.get_states() is not None  # state carried for the next batch


def test_candidate_labels_point_each_accidental_hit_at_its_candidate_column():
    from paddle_elmo.train.sampled_softmax import candidate_labels
    candidates = np.array([7, 3, 11, 0])  # distinct, in draw order (not sorted)
    targets = np.array([3, 5, 0, 11, 12, 7, 3])
    np.testing.assert_array_equal(candidate_labels(targets, candidates), [2, 0, 4, 3, 0, 1, 2])


def test_reset_state_at_sentence_start_runs_those_rows_from_zeros_and_keeps_the_others():
    rng = np.random.RandomState(0)
    first, second = random_batch(rng, 30, batch=3), random_batch(rng, 30, batch=3)
    first['sentence_start'] = np.array([True, True, True])
    second['sentence_start'] = np.array([True, False, True])
    outputs = {}
    for reset in (False, True):
        paddle.seed(0)
        model = LanguageModel(tiny_config(), 30, n_negative_samples=30, reset_state_at_sentence_start=reset)
        model.train()
        model.sampled_losses(first)
        model.sampled_losses(second)
        outputs[reset] = [np.concatenate([h, c], axis=1) for d in model.bilm.get_states() for h, c in d]
        paddle.seed(0)
        fresh = LanguageModel(tiny_config(), 30, n_negative_samples=30)
        fresh.train()
        fresh.sampled_losses({k: v[[0, 2]] for k, v in second.items() if k != 'sentence_start'})  # from zeros
        outputs['fresh'] = [np.concatenate([h, c], axis=1) for d in fresh.bilm.get_states() for h, c in d]
    for with_reset, without, fresh in zip(outputs[True], outputs[False], outputs['fresh']):
        np.testing.assert_allclose(with_reset[[0, 2]], fresh, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(with_reset[1], without[1], rtol=1e-5, atol=1e-6)
        assert not np.allclose(without[0], fresh[0], atol=1e-4)  # without the reset, row 0 differs


def test_sampler_and_labels_match_their_sorting_definitions():
    """The O(n) lookups give exactly np.unique's and argsort's answers: the candidates drawn (and so
    every loss) are the same as with sorting."""
    from paddle_elmo.train.sampled_softmax import candidate_labels, sorted_union
    rng = np.random.default_rng(7)
    for size, n in ((50, 400), (150_000, 17_408), (3, 10)):
        ids = rng.integers(0, size, n)
        _, first = np.unique(ids, return_index=True)
        np.testing.assert_array_equal(sorted_union([ids[:n // 2], ids[n // 2:]], size), np.unique(ids))
        candidates = ids[np.sort(first)]
        targets = rng.integers(0, size, 64)
        order = np.argsort(candidates, kind='stable')
        where = np.searchsorted(candidates, targets, sorter=order).clip(0, len(candidates) - 1)
        expected = np.where(candidates[order[where]] == targets, order[where] + 1, 0)
        np.testing.assert_array_equal(candidate_labels(targets, candidates), expected)


def test_sampler_takes_the_first_distinct_ids_of_its_draws_over_rounds():
    """sample() is np.unique(return_index) over all its draws, in draw order, also when it needs
    several rounds of draws (990 of 1,000 ids: the rarest take many), and reports the draws it took."""
    for vocab_size, n, seed in ((1000, 990, 3), (150_000, 8192, 4)):
        sampler, twin = LogUniformSampler(vocab_size, n, seed), LogUniformSampler(vocab_size, n, seed)
        ids, n_draws = sampler.sample()
        draws = np.empty(0, dtype=np.int64)
        while len(np.unique(draws)) < n:
            draws = np.concatenate([draws, twin._draw(2 * n + 1024)])
        _, first = np.unique(draws, return_index=True)
        first = np.sort(first)[:n]
        np.testing.assert_array_equal(ids, draws[first])
        assert n_draws == first[-1] + 1 and (vocab_size > 1000 or len(draws) > 2 * n + 1024)


def test_sampler_calls_after_the_first_start_clean_and_counts_match_their_formula():
    """sample() keeps a vocabulary-sized scratch between calls and expected_count a table of every
    id's log(1 - P): each later call is still np.unique(return_index) over its own draws (nothing
    left from the call before), and the counts are the formula's bits for the ids asked."""
    sampler, twin = LogUniformSampler(5000, 700, 11), LogUniformSampler(5000, 700, 11)
    for _ in range(4):
        ids, n_draws = sampler.sample()
        draws = np.empty(0, dtype=np.int64)
        while len(np.unique(draws)) < 700:
            draws = np.concatenate([draws, twin._draw(2 * 700 + 1024)])
        _, first = np.unique(draws, return_index=True)
        np.testing.assert_array_equal(ids, draws[np.sort(first)[:700]])
        for asked in (ids, ids[::-3], np.array([0, 4999, 0])):
            formula = -np.expm1(n_draws * np.log1p(-sampler.probability(asked)))
            np.testing.assert_array_equal(sampler.expected_count(asked, n_draws), formula)


def test_table_rows_positions_are_each_id_s_row_in_values():
    """TableRows.positions: the row of `values` that holds each id, for ids in any order and repeated."""
    table = paddle.to_tensor(np.arange(40, dtype=np.float32).reshape(20, 2))
    ids = np.array([2, 5, 6, 11, 19])
    rows = TableRows([table], ids, kernels.PADDLE_OPS)
    asked = np.array([19, 2, 11, 11, 5, 6, 2])
    positions = rows.positions(asked)
    np.testing.assert_array_equal(ids[positions], asked)
    np.testing.assert_array_equal(rows.values[0].numpy()[positions], table.numpy()[asked])


@pytest.mark.parametrize('kind', ['linear', 'cosine'])
def test_the_learning_rate_decays_after_warm_up_to_its_final_share(kind):
    """Adam's rate rises over the warm-up, then falls from lr to lr x final over the decay's steps
    (a line, or a half cosine: half-way at the midpoint either way) and stays there."""
    from paddle_elmo.train.optimizers import Adam, Decay
    paddle.seed(0)
    opt = Adam(LanguageModel(tiny_config(), 40, n_negative_samples=10), lr=0.01, max_grad_norm=10.0,
               warmup_steps=10, decay=Decay(kind, 100, 0.1))
    def rate(update):
        opt.n_updates = update
        t = update  # Adam's bias correction, which the rate carries
        return opt.learning_rate() / (math.sqrt(1 - opt.beta2 ** t) / (1 - opt.beta1 ** t))
    assert rate(5) == pytest.approx(0.005) and rate(10) == pytest.approx(0.01)
    assert rate(60) == pytest.approx(0.01 * (1 - 0.9 * 0.5))
    assert rate(110) == pytest.approx(0.001) and rate(500) == pytest.approx(0.001)
    if kind == 'cosine':
        assert rate(35) == pytest.approx(0.01 * (1 - 0.9 * 0.5 * (1 - math.cos(math.pi * 0.25))))


def test_a_run_decays_over_its_own_steps_unless_told_otherwise():
    from paddle_elmo.model.recipe import Recipe
    from paddle_elmo.train.schedules import lr_decay
    recipe = Recipe(max_steps=1500, warmup_steps=100, lr_decay='cosine').checked()
    assert (lr_decay(recipe).kind, lr_decay(recipe).steps, lr_decay(recipe).final) == ('cosine', 1500, 0.1)
    adam = Recipe(max_steps=1500, optimizer='adam', warmup_steps=100, lr_decay='cosine').checked()
    assert lr_decay(adam).steps == 1400  # Adam's warm-up first; Adagrad has none
    assert lr_decay(Recipe(max_steps=1500, lr_decay='linear', lr_decay_steps=300).checked()).steps == 300
    assert lr_decay(Recipe(max_steps=1500).checked()).factor(1000) == 1.0  # bilm-tf's constant rate
    with pytest.raises(InputError, match='--lr_decay must be one of'):
        Recipe(lr_decay='step').checked()


def test_the_recipes_adam_beta2_reaches_the_optimizer_and_its_second_moments():
    """--adam_beta2 is the decay of v: after one update from zero, v = (1 - beta2) g^2."""
    from paddle_elmo.model.recipe import Recipe
    from paddle_elmo.train.start import optimizer_for
    paddle.seed(0)
    model = LanguageModel(tiny_config(), 40, n_negative_samples=10)
    optimizer = optimizer_for(model, Recipe(optimizer='adam', lr=0.01, adam_beta2=0.9, max_steps=10).checked(), 1)
    name, param = optimizer.dense[0]
    grad = paddle.full(param.shape, 0.5)
    optimizer._update(param, grad, optimizer.slots[name], 0.0)
    np.testing.assert_allclose(optimizer.slots[name]['v'].numpy(), 0.1 * 0.25, rtol=1e-6)
    with pytest.raises(InputError, match=r'--adam_beta2 must be within \(0, 1\), got 1.0'):
        Recipe(adam_beta2=1.0).checked()


def test_the_unigram_prior_counts_every_target_as_the_stream_makes_them(tmp_path):
    """Words once per direction, </S> and <S> once per sentence, unknown words as <UNK>, add-one
    smoothed; the count stops after max_tokens tokens."""
    from paddle_elmo.train.sampled_softmax import unigram_log_prior
    from paddle_elmo.text.vocabulary import Vocabulary
    (tmp_path / 'v.txt').write_text('<S>\n</S>\n<UNK>\na\nb\nc\nd\n')
    (tmp_path / 'train.txt').write_text('a b a\n\nb c zzz\n')
    vocab = Vocabulary(str(tmp_path / 'v.txt'))
    expected = np.array([2, 2, 2, 4, 4, 2, 0]) + 1.0  # <S> </S> <UNK> a b c d
    prior = unigram_log_prior(vocab, str(tmp_path / 'train.txt'), progress=False)
    np.testing.assert_allclose(prior, np.log(expected / expected.sum()), rtol=1e-6)
    first = np.array([1, 1, 0, 4, 2, 0, 0]) + 1.0  # the first sentence's 3 tokens reach max_tokens
    np.testing.assert_allclose(unigram_log_prior(vocab, str(tmp_path / 'train.txt'), max_tokens=3, progress=False),
                               np.log(first / first.sum()), rtol=1e-6)
    from paddle_elmo.model.recipe import Recipe
    with pytest.raises(InputError, match="--softmax_bias_init must be one of zero, unigram, got 'log'"):
        Recipe(softmax_bias_init='log').checked()
