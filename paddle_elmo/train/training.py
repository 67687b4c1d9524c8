"""bilm-tf's pretraining loop, on one device or many: `train` (the loop; its state is one `Progress`)
and `finish` (final evaluation and save -> an `Outcome`), on the `Run` that start.set_up makes.
`paddle-elmo pretrain` (paddle_elmo/cli/pretrain.py) turns flags into the configs and the start
(start.NewRun or start.Resume), calls set_up, train and finish, and prints the outcome.

The run's other parts are beside it in train/, one concept each: start.py (set_up and its start,
the Run), schedules.py (steps, learning-rate decay), initial_weights.py (a new model's softmax bias
and word embedding), train_log.py (the training clock, the log lines, train_log.csv and the curve),
signals.py (StopRequest) and ranks.py (the device and what the ranks agree on).

It logs (INFO: a line every log_freq steps; WARNING: a signal received) and prints nothing; only
rank 0 logs its lines. A run that cannot go on (a failed save, a non-finite loss) raises
fileio.RunFailure, which the command turns into its exit code.

Writes to the run's directory: options.json and recipe.json (the two configs, run_configs.py) at the
start, N.pdparams / N.pdopt every save_freq steps and final.* at the end (atomically), train_log.csv
and, with matplotlib (the [plot] extra), train_curve.png.
"""
import math
import time
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from paddle_elmo.fileio import RunFailure
from paddle_elmo.train.lm import train_step
from paddle_elmo.train.ranks import mean_over_ranks, union_over_ranks
from paddle_elmo.train.signals import StopRequest


@dataclass
class Progress:
    """The loop's state: where it is, what it last saved, the losses of the current log window,
    when it evaluates next, and why it stops early (None: it runs to the last step)."""
    step: int
    last_saved: Optional[str]
    next_eval_minutes: float
    window_losses: list = field(default_factory=list)
    window_t0: float = field(default_factory=time.time)
    window_steps: int = 0
    stopped_by: Optional[str] = None  # 'time' (max_minutes) or 'signal'
    signal_name: Optional[str] = None  # the signal this rank received, if any

    def start_window(self):
        self.window_losses, self.window_t0, self.window_steps = [], time.time(), 0


def train(run):
    """Train from run.start_step until the last step, max_minutes or a signal -> Progress."""
    recipe, model = run.recipe, run.model
    agree_rows = union_over_ranks if run.world_size > 1 else None
    progress = Progress(run.start_step, run.resumed_from, _next_multiple(run.clock.total_minutes(),
                                                                         recipe.eval_minutes))
    stop_request = StopRequest().install()
    batches = iter(run.stream)
    model.train()
    while progress.step < run.total and progress.stopped_by is None:
        run.clock.start()
        out, _ = train_step(model, run.optimizer, next(batches), agree_rows)
        losses = [float(out['forward_loss']), float(out['backward_loss'])]
        run.clock.stop()
        progress.step += 1
        progress.window_steps += 1
        votes = [float(run.max_minutes is not None and run.clock.run_minutes() >= run.max_minutes),
                 float(stop_request.name is not None)]
        *losses, clock_votes, signal_votes = mean_over_ranks(losses + votes, run.world_size)
        # Any rank's vote stops every rank at this step.
        progress.stopped_by = 'signal' if signal_votes > 0 else 'time' if clock_votes > 0 else None
        progress.signal_name = stop_request.name
        if not all(math.isfinite(x) for x in losses):
            raise RunFailure(f'non-finite loss {losses} at step {progress.step}; stopping. Last good checkpoint: '
                             f'{progress.last_saved or "none"} (resume from it, perhaps with a lower --lr)')
        progress.window_losses.append(losses)
        last = progress.step == run.total or progress.stopped_by is not None  # finish() evaluates then
        at_eval = recipe.dev_data_path and not last and (
            (recipe.eval_freq and progress.step % recipe.eval_freq == 0) or
            (recipe.eval_minutes and run.clock.total_minutes() >= progress.next_eval_minutes))
        if progress.step % recipe.log_freq == 0 or at_eval or last:
            log_window(run, progress, at_eval)
        if (progress.step % recipe.save_freq == 0 or progress.stopped_by) and progress.step < run.total:
            progress.last_saved = run.save(str(progress.step), progress.step, progress.last_saved)
            progress.window_t0 = time.time()  # saving is not training time
    return progress


def log_window(run, progress, at_eval):
    """Log the window's mean losses and speed (and, at_eval, the held-out perplexity); start a new window."""
    tokens_per_s = progress.window_steps * run.tokens_per_step / (time.time() - progress.window_t0)
    dev = None
    if at_eval:
        progress.next_eval_minutes = _next_multiple(run.clock.total_minutes(), run.recipe.eval_minutes)
        if run.rank == 0:
            dev = run.dev_eval()
    if run.rank == 0:
        run.log.log(progress.step, progress.step * run.tokens_per_step, run.clock.total_minutes(),
                    np.mean(progress.window_losses, axis=0).tolist(), tokens_per_s, dev)
    progress.start_window()


def _next_multiple(minutes, every):
    return (math.floor(minutes / every) + 1) * every if every else math.inf


# ---- the end -----------------------------------------------------------------------------------

@dataclass
class Outcome:
    """How a run ended, for its command to report (rank 0's; on other ranks `dev` is None)."""
    step: int
    total: int
    saved: Optional[str]  # the checkpoint prefix written last: DIR/final, or the one to resume from
    dev: Optional[dict] = None  # the final held-out evaluation (lm.evaluate's), if any
    stopped: Optional[str] = None  # why it stopped before the last step ('by SIGTERM', ...); None: it finished


def finish(run, progress):
    """Evaluate (unless pre-empted: a signalled job has seconds), then save `final` unless the run
    stopped early (its last checkpoint is the one to resume from) -> Outcome."""
    dev = None
    if run.rank == 0 and run.recipe.dev_data_path and progress.stopped_by != 'signal':
        dev = run.dev_eval()
        if run.log.rows:
            run.log.rows[-1].update(dev_forward_perplexity=dev['forward_perplexity'],
                                    dev_backward_perplexity=dev['backward_perplexity'],
                                    dev_perplexity=dev['perplexity'])
            run.log.write_csv()
    if progress.step < run.total:
        why = (f'by {progress.signal_name or "a signal to another rank"}' if progress.stopped_by == 'signal'
               else f'after {run.clock.run_minutes():.1f} minutes of training (--max_minutes)')
        return Outcome(progress.step, run.total, progress.last_saved, dev, why)
    saved = run.save('final', progress.step, progress.last_saved)
    return Outcome(progress.step, run.total, saved, dev)
