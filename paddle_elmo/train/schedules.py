"""A pretraining run's length and learning-rate schedule, read from its Recipe alone, so that a resumed
run has the schedule it had: its steps (`total_steps`), the decay (`lr_decay`, over `decay_steps`),
and the factor on the rate of a run that trains pretrained weights (`lr_scale_from_weights`).
"""
import math

from paddle_elmo.train.optimizers import Decay


def total_steps(recipe):
    if recipe.max_steps:
        return recipe.max_steps
    tokens_per_step = recipe.batch_size * recipe.unroll_steps * recipe.world_size
    return max(1, math.ceil(recipe.epochs * recipe.n_train_tokens / tokens_per_step))


def lr_decay(recipe):
    """The recipe's learning-rate Decay over --lr_decay_steps (0: decay_steps)."""
    return Decay(recipe.lr_decay, recipe.lr_decay_steps or decay_steps(recipe), recipe.lr_final)


def decay_steps(recipe):
    """The run's total steps after Adam's warm-up: the rate reaches lr x lr_final at the last step. A
    new run records it in its recipe (set_up), so a resume with another --max_steps keeps the schedule."""
    warmup = recipe.warmup_steps if recipe.optimizer == 'adam' else 0  # Adagrad has no warm-up
    return max(1, total_steps(recipe) - warmup)


def lr_scale_from_weights(recipe):
    """The factor on recipe.lr: recipe.from_weights_lr_scale in a run that started from pretrained
    weights and trains them; 1 in a new model's run and with --freeze_bilm (the biLM does not
    train). Read from the recipe alone, so a resumed run has the rate it had."""
    return recipe.from_weights_lr_scale if recipe.init_weight_file and not recipe.freeze_bilm else 1.0
