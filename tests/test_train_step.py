"""One training step equals bilm-tf's update, computed independently (one rank and two).

The reference below evaluates TensorFlow's `sampled_softmax_loss` (log-uniform expected counts,
accidental hits masked out) and its gradients in NumPy from the biLM's top-layer outputs; the
biLM's own gradients come from Paddle's backward through a fresh copy of the model, seeded with the
NumPy gradient of the outputs (the chain rule). Then, in NumPy, bilm-tf's step: gradients of
total_loss * unroll_steps, the mean over ranks, the global-norm clip at 10 over every gradient
(softmax rows deduplicated), and Adagrad from accumulators of 1.0 on the touched softmax rows only.
For word input (bilm-tf's token mode, and word+char) the embedding's gradient is Paddle's dense one
through the whole table, and its update is the dense Adagrad step: rows no token touched have a zero
gradient and keep their weights, as bilm-tf's IndexedSlices update leaves them.

Run as a script under paddle.distributed.launch, this file is also the two-rank worker.
"""
import os
import subprocess
import sys

import numpy as np
import paddle
import pytest

from conftest import ROOT, require_kernels
from helpers import UNROLL, VOCAB, fix_candidates, make_case, make_model

LR = 0.2
CLIP = 1.0  # this tiny model's scaled gradient norm is ~2.4: bilm-tf's 10 would never act


TOKEN_INPUTS = ('char', 'word', 'word+char')


# ---- the reference, in NumPy --------------------------------------------------------------------

def log_expected_count(ids, n_draws):
    p = (np.log(ids + 2.0) - np.log(ids + 1.0)) / np.log(VOCAB + 1.0)
    return np.log(1.0 - (1.0 - p) ** n_draws)


def sampled_softmax(h, targets, candidates, n_draws, W, b):
    """TF's sampled_softmax_loss per row and its gradients: -> (losses [n], dh, dW [V, d], db [V])."""
    true_logits = (h * W[targets]).sum(1) + b[targets] - log_expected_count(targets, n_draws)
    cand_logits = h @ W[candidates].T + b[candidates] - log_expected_count(candidates, n_draws)
    cand_logits = np.where(candidates[None, :] == targets[:, None], -np.inf, cand_logits)  # accidental hits
    logits = np.concatenate([true_logits[:, None], cand_logits], axis=1)
    shift = logits.max(1, keepdims=True)
    p = np.exp(logits - shift)
    p /= p.sum(1, keepdims=True)
    losses = -np.log(p[:, 0])
    d = p.copy()
    d[:, 0] -= 1.0  # d loss_i / d logits_i
    dh = d[:, :1] * W[targets] + d[:, 1:] @ W[candidates]
    dW, db = np.zeros_like(W), np.zeros_like(b)
    np.add.at(dW, targets, d[:, :1] * h)
    np.add.at(db, targets, d[:, 0])
    np.add.at(dW, candidates, d[:, 1:].T @ h)
    np.add.at(db, candidates, d[:, 1:].sum(0))
    return losses, dh, dW, db


def reference_gradients(rank, token_input='char'):
    """bilm-tf's gradients of total_loss * unroll_steps for one rank: -> ({name: grad}, touched rows)."""
    batch, samples = make_case(rank)
    model = make_model(token_input)
    W = model.softmax.W.numpy().astype(np.float64)
    b = model.softmax.b.numpy()[:, 0].astype(np.float64)
    tops = model.bilm.lm_outputs(*model._inputs(batch))
    grads = {'softmax.W': np.zeros_like(W), 'softmax.b': np.zeros_like(b)}
    upstream, touched = [], []
    for top, key, (cands, n_draws) in zip(tops, ('next_token_ids', 'next_token_ids_reverse'), samples):
        h = top.numpy().reshape(-1, top.shape[-1]).astype(np.float64)
        targets = batch[key].reshape(-1)
        losses, dh, dW, db = sampled_softmax(h, targets, cands, n_draws, W, b)
        scale = 0.5 / len(targets) * UNROLL  # total_loss = 0.5 * (mean fwd + mean bwd), times unroll_steps
        upstream.append(paddle.to_tensor((dh * scale).reshape(top.shape).astype(np.float32)))
        grads['softmax.W'] += dW * scale
        grads['softmax.b'] += db * scale
        touched.append(np.concatenate([targets, cands]))
    dense = [(n, p) for n, p in model.named_parameters() if not p.stop_gradient and not n.startswith('softmax.')]
    chain = (tops[0] * upstream[0]).sum() + (tops[1] * upstream[1]).sum()
    for (name, _), g in zip(dense, paddle.grad(chain, [p for _, p in dense], allow_unused=True)):
        grads[name] = np.zeros(_.shape) if g is None else g.numpy().astype(np.float64)
    return grads, np.unique(np.concatenate(touched))


def reference_update(ranks, clip, token_input='char'):
    """Weights after one bilm-tf step over `ranks` (each rank's own batch and candidates)."""
    per_rank = [reference_gradients(r, token_input) for r in ranks]
    grads = {k: np.mean([g[k] for g, _ in per_rank], axis=0) for k in per_rank[0][0]}
    rows = np.unique(np.concatenate([t for _, t in per_rank]))
    norm = np.sqrt(sum((g ** 2).sum() for g in grads.values()))  # softmax: zero outside the touched rows
    if norm > clip:
        grads = {k: g * clip / norm for k, g in grads.items()}
    weights = {k: v.numpy().astype(np.float64) for k, v in make_model(token_input).state_dict().items()}
    for name, g in grads.items():
        w, g = weights[name], g.reshape(weights[name].shape)
        new = w - LR * g / np.sqrt(1.0 + g * g)  # Adagrad, accumulator from 1.0, one step
        if name.startswith('softmax.'):  # sparse: untouched rows keep their weights exactly
            new = np.where(np.isin(np.arange(len(w)), rows).reshape((-1,) + (1,) * (w.ndim - 1)), new, w)
        weights[name] = new
    return weights, norm


# ---- ours -------------------------------------------------------------------------------------

def our_update(rank, world_size, clip, token_input='char'):
    from paddle_elmo.train.lm import train_step
    from paddle_elmo.train.optimizers import Adagrad
    model = make_model(token_input)
    batch, samples = make_case(rank)
    fix_candidates(model, samples)
    agree_rows = None
    if world_size > 1:
        from paddle_elmo.train.ranks import union_over_ranks
        agree_rows = union_over_ranks
    optimizer = Adagrad(model, LR, clip, initial_accumulator=1.0, world_size=world_size)
    _, norm = train_step(model, optimizer, batch, agree_rows)
    return {k: v.numpy() for k, v in model.state_dict().items()}, norm


def assert_weights_match(ours, ref):
    assert ours.keys() == ref.keys()
    for k in ref:  # float32 arithmetic against float64: relative 1e-4 of the update's scale
        np.testing.assert_allclose(ours[k], ref[k], rtol=1e-4, atol=2e-5, err_msg=k)


@pytest.mark.parametrize('token_input', TOKEN_INPUTS)
def test_one_step_equals_bilm_tf_update_with_the_clip_active(token_input):
    ref, ref_norm = reference_update([0], clip=CLIP, token_input=token_input)
    assert ref_norm > CLIP * 1.5, 'the case must exercise the clip'
    ours, norm = our_update(0, 1, clip=CLIP, token_input=token_input)
    assert norm == pytest.approx(ref_norm, rel=1e-4)
    assert_weights_match(ours, ref)
    if token_input != 'char':  # the embedding rows no token read are untouched
        before = make_model(token_input).bilm.word_embedding.numpy()
        after = ours['bilm.word_embedding']
        read = np.unique(make_case(0)[0]['word_ids']) - 1
        changed = np.where((after != before).any(axis=1))[0]
        assert set(changed) == set(read)


@pytest.mark.parametrize('token_input', TOKEN_INPUTS)
def test_one_step_equals_bilm_tf_update_with_the_clip_inactive(token_input):
    ref, ref_norm = reference_update([0], clip=1e6, token_input=token_input)
    ours, norm = our_update(0, 1, clip=1e6, token_input=token_input)
    assert norm == pytest.approx(ref_norm, rel=1e-4)
    assert_weights_match(ours, ref)


def test_the_step_differs_from_the_plain_mean_loss_gradient():
    """Guard for the reference itself: without the unroll_steps factor the update is another one."""
    ours, _ = our_update(0, 1, clip=1e6)
    before = {k: v.numpy() for k, v in make_model().state_dict().items()}
    grads, _ = reference_gradients(0)
    g = grads['bilm.forward_stack.layers.0.W'] / UNROLL  # the plain mean loss's gradient
    weak = before['bilm.forward_stack.layers.0.W'] - LR * g / np.sqrt(1.0 + g * g)
    assert not np.allclose(ours['bilm.forward_stack.layers.0.W'], weak, rtol=1e-3, atol=1e-5)


# The two-rank cases: (clip, token_input). word+char: the ranks' embedding rows are agreed (union)
# as the softmax's are.
TWO_RANK_CASES = ((CLIP, 'word+char'), (1e6, 'char'))


def test_two_ranks_step_equals_the_mean_of_each_ranks_scaled_gradient(tmp_path):
    # One launch runs every case: each update starts from make_model's seed and its own batches, so
    # the cases are independent, and a launch (a launcher and two Paddle processes) is the cost.
    env = dict(os.environ, OMP_NUM_THREADS='1', ELMO_TEST_OUT=str(tmp_path))
    cases = [f'{clip:g}:{token_input}' for clip, token_input in TWO_RANK_CASES]
    cmd = [sys.executable, '-m', 'paddle.distributed.launch', '--nproc_per_node', '2', '--log_dir',
           str(tmp_path / 'logs'), os.path.abspath(__file__), *cases]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    for clip, token_input in TWO_RANK_CASES:
        ref, ref_norm = reference_update([0, 1], clip=clip, token_input=token_input)
        for rank in (0, 1):
            ours = {k: v.numpy() for k, v in paddle.load(str(tmp_path / f'step.{clip:g}.{rank}.pdparams')).items()}
            assert_weights_match(ours, ref)
        assert (ref_norm > clip) == (clip == CLIP)


if __name__ == '__main__':  # the two-rank worker: argv is the cases, CLIP:TOKEN_INPUT each
    import paddle.distributed as dist
    paddle.set_device('cpu')
    dist.init_parallel_env()
    for case in sys.argv[1:]:
        clip, token_input = case.split(':')
        weights, _ = our_update(dist.get_rank(), dist.get_world_size(), float(clip), token_input)
        paddle.save({k: paddle.to_tensor(v) for k, v in weights.items()},
                    os.path.join(os.environ['ELMO_TEST_OUT'], f'step.{clip}.{dist.get_rank()}.pdparams'))


@pytest.mark.parametrize('rule', ['adagrad', 'adam'])
@pytest.mark.parametrize('clip', [CLIP, 1e6], ids=['clip-active', 'clip-inactive'])
@pytest.mark.parametrize('token_input', ['char', 'word'])
def test_the_fused_cpu_update_is_the_paddle_ops_update(rule, clip, token_input):
    """The optimizer kernels (every dense parameter in one call, each table's rows in place) compute
    the rule's Paddle ops (tensor by tensor, the rows through a gather and a scatter) operation for
    operation, with an exactly rounded sqrt. Paddle's adagrad kernel takes Eigen's fast sqrt in its
    vector body (an rsqrt estimate and a Newton step: an ulp off, and the estimate differs between
    processors), so ~1.5% of the elements of one update are an ulp apart, and three steps stay
    within 1e-5 however those ulps travel. A wrong slot, row, learning rate or clip factor moves
    values by 1e-3 or more."""
    from paddle_elmo.model import kernels
    from paddle_elmo.train.lm import train_step
    from paddle_elmo.train.optimizers import make_optimizer
    require_kernels()
    cases = [make_case(rank) for rank in range(3)]
    results = []
    for updates in (kernels.CPU_KERNELS, kernels.PADDLE_OPS):  # the model's forward on the kernels both times
        model = make_model(token_input)
        optimizer = make_optimizer(model, rule, 0.05 if rule == 'adagrad' else 0.01, clip, warmup_steps=2,
                                   kernels=updates)
        states = []
        for batch, samples in cases:
            fix_candidates(model, samples)
            train_step(model, optimizer, batch)
            states.append({**{n: p.numpy() for n, p in model.named_parameters()},
                           **{f'slot {n}': v.numpy() for n, v in optimizer.state_dict().items() if n != 'n_updates'}})
        results.append(states)
    first, last = [[r[k] for r in results] for k in (0, -1)]
    assert first[0].keys() == first[1].keys()
    for name in first[0]:
        np.testing.assert_allclose(first[0][name], first[1][name], rtol=3e-7, atol=1e-7, err_msg=name)
        np.testing.assert_allclose(last[0][name], last[1][name], rtol=1e-5, atol=1e-6, err_msg=name)
