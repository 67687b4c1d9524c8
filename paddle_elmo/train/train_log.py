"""What a pretraining run reports of its progress: the time it has trained (`TrainingClock`: the steps
alone, not evaluation or saving; a resumed run's earlier runs too) and its log (`TrainLog`, rank 0's:
a line every log_freq steps, the rows of train_log.csv and, with matplotlib (the [plot] extra), the
curve in train_curve.png, each written atomically).
"""
import csv
import logging
import math
import os
import time

from paddle_elmo.fileio import atomic_path, install_error, write_csv_atomic


log = logging.getLogger(__name__)

LOG_FIELDS = ['step', 'tokens', 'train_minutes', 'elapsed_s', 'loss', 'forward_loss', 'backward_loss', 'forward_perplexity',
              'backward_perplexity', 'tokens_per_s', 'dev_forward_perplexity', 'dev_backward_perplexity',
              'dev_perplexity']


class TrainingClock:
    """Training time: the steps themselves, not evaluation or saving; this run's and, for the logs,
    the earlier runs' of a resumed training too."""

    def __init__(self, earlier_seconds=0.0):
        self.earlier, self.run, self._t0 = earlier_seconds, 0.0, None

    def start(self):
        self._t0 = time.perf_counter()

    def stop(self):
        self.run += time.perf_counter() - self._t0

    def run_minutes(self):
        return self.run / 60

    def total_minutes(self):
        return (self.earlier + self.run) / 60


class TrainLog:
    """Log lines (INFO), rows in train_log.csv and a curve in train_curve.png (rank 0 only)."""

    def __init__(self, save_dir, total, start_step):
        self.csv_path = os.path.join(save_dir, 'train_log.csv')
        self.png_path = os.path.join(save_dir, 'train_curve.png')
        self.total, self.start_step = total, start_step
        self.rows = self._read_rows(start_step)
        self.t0 = time.time()
        self.said_no_plot = False  # the line saying that no curve is drawn (no matplotlib): once

    def _read_rows(self, up_to_step):
        """Rows of an earlier run up to the resumed step (later rows belong to a lost future)."""
        if up_to_step == 0 or not os.path.exists(self.csv_path):
            return []
        with open(self.csv_path, newline='') as f:
            return [r for r in csv.DictReader(f) if int(r['step']) <= up_to_step]

    def log(self, step, tokens, train_minutes, losses, tokens_per_s, dev=None):
        """tokens: training tokens seen (all ranks); train_minutes: training time so far (evaluation
        and saving not counted, earlier runs of a resumed one included)."""
        fwd, bwd = losses
        elapsed = time.time() - self.t0
        rate = (step - self.start_step) / max(elapsed, 1e-9)
        eta = (self.total - step) / max(rate, 1e-9)
        row = {'step': step, 'tokens': tokens, 'train_minutes': round(train_minutes, 3),
               'elapsed_s': round(elapsed, 1), 'loss': 0.5 * (fwd + bwd), 'forward_loss': fwd,
               'backward_loss': bwd, 'forward_perplexity': math.exp(min(fwd, 50)),
               'backward_perplexity': math.exp(min(bwd, 50)), 'tokens_per_s': round(tokens_per_s)}
        if dev:
            row.update(dev_forward_perplexity=dev['forward_perplexity'],
                       dev_backward_perplexity=dev['backward_perplexity'], dev_perplexity=dev['perplexity'])
        self.rows.append(row)
        line = (f'step {step}/{self.total} | loss {row["loss"]:.4f} | sampled ppl fwd {row["forward_perplexity"]:.1f} '
                f'bwd {row["backward_perplexity"]:.1f} | {tokens_per_s:,.0f} tok/s | '
                f'elapsed {_hms(elapsed)} | ETA {_hms(eta)}')
        if dev:
            line += (f' | dev ppl fwd {dev["forward_perplexity"]:.1f} bwd {dev["backward_perplexity"]:.1f} '
                     f'mean {dev["perplexity"]:.1f} ({dev["n_tokens"]} tokens)')
        log.info('%s', line)
        self.write_csv()

    def write_csv(self):
        write_csv_atomic(self.csv_path, LOG_FIELDS, self.rows)

    def plot(self):
        """train_curve.png from the rows so far. Without matplotlib (the [plot] extra; [cpu] alone has
        none) one INFO line, the first time, says so and no picture is drawn: train_log.csv holds
        the same numbers, and a run never fails for its picture."""
        plt = self._pyplot()
        if plt is None or not self.rows:
            return
        steps = [int(r['step']) for r in self.rows]
        fig, ax = plt.subplots(figsize=(7, 4))
        for key, label in (('forward_perplexity', 'train fwd (sampled)'), ('backward_perplexity', 'train bwd (sampled)'),
                           ('dev_forward_perplexity', 'dev fwd (full softmax)'),
                           ('dev_backward_perplexity', 'dev bwd (full softmax)')):
            points = [(s, float(r[key])) for s, r in zip(steps, self.rows) if r.get(key) not in (None, '')]
            if points:
                ax.plot(*zip(*points), marker='o' if key.startswith('dev') else None, markersize=3, label=label)
        ax.set_xlabel('step')
        ax.set_ylabel('perplexity')
        ax.set_yscale('log')
        ax.grid(True, which='both', alpha=0.3)
        ax.legend()
        fig.tight_layout()
        with atomic_path(self.png_path) as tmp:
            fig.savefig(tmp, dpi=100)
        plt.close(fig)

    def _pyplot(self):
        """matplotlib.pyplot on its file-only backend, or None when it cannot be imported (said once)."""
        try:
            import matplotlib
            matplotlib.use('Agg')
            import matplotlib.pyplot as plt
        except ImportError as e:
            if not self.said_no_plot:
                self.said_no_plot = True
                log.info('%s is not drawn (train_log.csv holds its numbers): %s', os.path.basename(self.png_path),
                         install_error('matplotlib', e, 'plot'))
            return None
        return plt


def _hms(seconds):
    seconds = int(seconds)
    return f'{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}'
