"""Where training dropout's masks come from, a choice the model's kernels.Kernels carries:

    'kernel'  the CPU kernel's: a hash of a seed drawn from Paddle's generator and of each
              element's index (kernels.dropout)
    'paddle'  F.dropout's own draws: on a GPU, with the kernels off, and in runs made before the
              kernel drew the masks

Both are the same distribution but different draws, so a run records which it used
(Recipe.dropout_masks, in recipe.json) and its resume builds its model with it again: the masks go
on as they began. Apart from kernels.py, which needs Paddle, so that a recorded recipe is checked
without it.
"""

DROPOUT_MASKS = ('kernel', 'paddle')
