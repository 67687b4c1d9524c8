"""benchmarks/profile_pretrain.py times the library's own step: its timers wrap the library's calls in
place, so each wrapper must pass on whatever the library passes (an argument added to a call must reach
it) and leave the step's numbers as an untimed step's."""
import numpy as np

from helpers import benchmark_module, fix_candidates, make_case, make_model


def one_step(timed):
    """One Adagrad step of the tiny model on a fixed case -> (loss, parameters, the profile's Timers or None)."""
    from paddle_elmo.train.lm import train_step
    from paddle_elmo.train.optimizers import make_optimizer
    profile = benchmark_module('profile_pretrain')
    batch, samples = make_case(0)
    model = make_model()
    optimizer = make_optimizer(model, 'adagrad', 0.2, 10.0)
    fix_candidates(model, samples)
    timers = None
    if timed:
        timers = profile.Timers()
        profile.instrument(model, timers)
        loss, _ = profile.timed_step(model, optimizer, batch, timers)
    else:
        loss = float(train_step(model, optimizer, batch)[0]['loss'])
    return loss, {name: p.numpy() for name, p in model.named_parameters()}, timers


def test_the_timed_step_is_the_librarys_step_with_every_part_timed():
    plain_loss, plain, _ = one_step(timed=False)
    loss, weights, timers = one_step(timed=True)
    assert loss == plain_loss
    for name, value in plain.items():
        np.testing.assert_array_equal(weights[name], value, err_msg=name)
    for part in ('forward: token layer', 'forward: LSTMs', 'forward: softmax', 'backward: softmax',
                 'backward: LSTMs', 'backward: token layer', 'optimizer', 'step'):
        assert timers.seconds[part] > 0, part
