"""Pretrain the ELMo biLM with sampled softmax, as bilm-tf does, on one device or many.

    python run_pretrain.py --train_data_path 'data/train/*' --vocab_file data/vocab-15w.txt
    python -m paddle.distributed.launch --gpus '0,1,2,3' run_pretrain.py --device gpu ...
    python -m paddle.distributed.launch --nproc_per_node 2 run_pretrain.py --device cpu ...   # 1 thread each on 2 cores

Writes to --save_dir: options.json (the model, bilm-tf format), N.pdparams / N.pdopt every
--save_freq steps and final.* at the end (atomically), train_log.csv and train_curve.png.
"""
import csv
import math
import os
import signal
import sys
import time

import args as cli  # first: it quiets Paddle's import-time noise on stderr
import numpy as np
import paddle
import paddle.distributed as dist

from dataset import EVAL_BATCH_SIZE, EVAL_UNROLL_STEPS, LMStream, Vocabulary, count_tokens, iter_eval_batches
from bilm import make_options
from embedder import use_device
from fileio import atomic_path, write_csv_atomic, write_json_atomic
from model_io import checkpoint_paths, load_state_checked, read_checkpoint, read_options_of, read_paddle_file
from lm import LanguageModel, evaluate, make_optimizer, train_step

LOG_FIELDS = ['step', 'tokens', 'train_minutes', 'elapsed_s', 'loss', 'forward_loss', 'backward_loss', 'forward_perplexity',
              'backward_perplexity', 'tokens_per_s', 'dev_forward_perplexity', 'dev_backward_perplexity',
              'dev_perplexity']


# ---- configuration ---------------------------------------------------------------------------

def model_options(a):
    return make_options(projection_dim=a.projection_dim, cell_dim=a.cell_dim, n_layers=a.num_layers,
                        filters=a.cnn_filters, n_highway=a.num_highways, char_embed_dim=a.char_embed_dim,
                        max_characters_per_token=a.max_characters_per_token, cell_clip=a.cell_clip,
                        proj_clip=a.proj_clip, use_skip_connections=a.use_skip_connections,
                        dropout=a.dropout)


# Each model flag and where options.json keeps its value.
MODEL_FLAGS = {'projection_dim': ('lstm', 'projection_dim'), 'cell_dim': ('lstm', 'dim'),
               'num_layers': ('lstm', 'n_layers'), 'cell_clip': ('lstm', 'cell_clip'),
               'proj_clip': ('lstm', 'proj_clip'), 'use_skip_connections': ('lstm', 'use_skip_connections'),
               'cnn_filters': ('char_cnn', 'filters'), 'num_highways': ('char_cnn', 'n_highway'),
               'char_embed_dim': ('char_cnn', 'embedding', 'dim'),
               'max_characters_per_token': ('char_cnn', 'max_characters_per_token'), 'dropout': ('dropout',)}


def _option(options, path):
    for key in path:
        options = options.get(key) if isinstance(options, dict) else None
    return options


def check_resume_flags(a, given, options, options_file):
    """The checkpoint defines the model: a model flag given when resuming must agree with it."""
    mine = model_options(a)
    differing = [f'--{flag} {_option(mine, MODEL_FLAGS[flag])} (checkpoint: {_option(options, MODEL_FLAGS[flag])})'
                 for flag in given if flag in MODEL_FLAGS and
                 _option(mine, MODEL_FLAGS[flag]) != _option(options, MODEL_FLAGS[flag])]
    if differing:
        raise cli.InputError(f'{options_file} defines the model being resumed, and these flags differ from it: '
                             f'{"; ".join(differing)}. Drop them, or start a new --save_dir without --init_from_ckpt')


def record_training(options, a, vocab, n_train_tokens, world_size):
    """Add bilm-tf's bookkeeping keys and ours, so options.json also says how the model was trained."""
    options.update(n_tokens_vocab=vocab.size, unroll_steps=a.unroll_steps, batch_size=a.batch_size,
                   n_negative_samples_batch=a.n_negative_samples, n_train_tokens=n_train_tokens,
                   n_epochs=a.epochs, all_clip_norm_val=a.max_grad_norm, lr=a.lr, n_gpus=world_size,
                   preset=a.preset, optimizer=a.optimizer, warmup_steps=a.warmup_steps, seed=a.seed,
                   reset_state_at_sentence_start=a.reset_state_at_sentence_start)
    return options


def total_steps(a, n_train_tokens, world_size):
    if a.max_steps:
        return a.max_steps
    return max(1, math.ceil(a.epochs * n_train_tokens / (a.batch_size * a.unroll_steps * world_size)))


def check_args(a):
    for name in ('batch_size', 'unroll_steps', 'epochs', 'save_freq', 'log_freq', 'n_negative_samples'):
        if getattr(a, name) < 1:
            raise cli.InputError(f'--{name} must be >= 1, got {getattr(a, name)}')
    for name in ('lr', 'max_grad_norm'):
        if not getattr(a, name) > 0:
            raise cli.InputError(f'--{name} must be > 0, got {getattr(a, name)}')
    if a.max_minutes is not None and not a.max_minutes > 0:
        raise cli.InputError(f'--max_minutes must be > 0, got {a.max_minutes}')
    if not 0 <= a.dropout < 1:
        raise cli.InputError(f'--dropout must be in [0, 1), got {a.dropout}')


def check_checkpoint_arg(a):
    if a.init_from_ckpt and not os.path.exists(f'{a.init_from_ckpt}.pdparams'):
        raise cli.InputError(f'--init_from_ckpt {a.init_from_ckpt}: {a.init_from_ckpt}.pdparams not found '
                            f'(give DIR/N without the suffix)')


# ---- checkpoints -----------------------------------------------------------------------------

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


def gather_train_state(model, stream, step, world_size, clock):
    """Everything a resumed run needs beyond the weights, from every rank (rank order)."""
    local = {'stream': stream.state_dict(), 'sampler': model.sampler.state(),
             'lstm_states': model.bilm.get_states(), 'paddle_rng': paddle.get_rng_state()}
    ranks = [local]
    if world_size > 1:
        ranks = []
        dist.all_gather_object(ranks, local)
    return {'step': step, 'world_size': world_size, 'ranks': ranks,
            'train_seconds': clock.total_minutes() * 60}


def save_checkpoint(prefix, model, optimizer, train_state):
    """prefix.pdparams (model) and prefix.pdopt (optimizer state + 'train_state'), atomically.

    Each file is written under a temporary name and renamed; .pdopt is renamed first, so a
    .pdparams that exists always has its .pdopt, and a kill mid-save leaves older checkpoints intact.
    """
    opt_state = dict(optimizer.state_dict())
    opt_state['train_state'] = train_state
    # The inner block exits first: .pdopt is renamed before .pdparams.
    with atomic_path(f'{prefix}.pdparams') as params_tmp, atomic_path(f'{prefix}.pdopt') as opt_tmp:
        paddle.save(opt_state, opt_tmp)
        paddle.save(model.state_dict(), params_tmp)


def load_checkpoint(prefix, model, optimizer, stream, rank, world_size, clock):
    """Restore model, optimizer, step, data position, sampler, LSTM and RNG state; -> step."""
    opt_path = f'{prefix}.pdopt'
    if not os.path.exists(opt_path):
        raise cli.InputError(f'{opt_path} not found: --init_from_ckpt needs both .pdparams and .pdopt')
    _, state = read_checkpoint(prefix, model.vocab_size, require_softmax=True)
    load_state_checked(model, state, prefix)
    opt_state = read_paddle_file(opt_path, 'optimizer state')
    if 'train_state' not in opt_state:
        raise cli.InputError(f'{opt_path}: no train_state; not an optimizer file written by run_pretrain.py')
    train_state = opt_state.pop('train_state')
    optimizer.set_state_dict(opt_state)
    if train_state['world_size'] != world_size:
        raise cli.InputError(f'{opt_path} was saved by {train_state["world_size"]} processes; resume with '
                            f'the same number (got {world_size})')
    mine = train_state['ranks'][rank]
    stream.load_state_dict(mine['stream'])
    model.sampler.set_state(mine['sampler'])
    model.bilm.set_states(mine['lstm_states'])
    paddle.set_rng_state(mine['paddle_rng'])
    clock.earlier = train_state.get('train_seconds', 0.0)
    return train_state['step']


# ---- logging ---------------------------------------------------------------------------------

class TrainLog:
    """Log lines on stdout, rows in train_log.csv and a curve in train_curve.png (rank 0 only)."""

    def __init__(self, save_dir, total, start_step):
        self.csv_path = os.path.join(save_dir, 'train_log.csv')
        self.png_path = os.path.join(save_dir, 'train_curve.png')
        self.total, self.start_step = total, start_step
        self.rows = self._read_rows(start_step)
        self.t0 = time.time()

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
        print(line, flush=True)
        self.write_csv()

    def write_csv(self):
        write_csv_atomic(self.csv_path, LOG_FIELDS, self.rows)

    def plot(self):
        import matplotlib
        matplotlib.use('Agg')
        import matplotlib.pyplot as plt
        if not self.rows:
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


def _hms(seconds):
    seconds = int(seconds)
    return f'{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}'


# ---- training --------------------------------------------------------------------------------

class StopRequest:
    """SIGTERM or Ctrl-C asks training to stop at the next step boundary, save a checkpoint and exit
    cleanly; a second signal stops at once (atomic saves leave no half-written file behind).

    Repeats within `grace_s` count as the first: paddle.distributed.launch passes one SIGTERM on
    to each rank up to three times, 0.2 s apart.
    """

    def __init__(self, grace_s=2.0):
        self.name, self.at, self.grace_s = None, None, grace_s

    def install(self):
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self._handle)
        return self

    def _handle(self, signum, frame):
        now = time.monotonic()
        if self.name is None:
            self.name, self.at = signal.Signals(signum).name, now
            print(f'{self.name}: stopping after this step to save a checkpoint (send it again to stop at once)',
                  file=sys.stderr, flush=True)
        elif now - self.at > self.grace_s:
            raise KeyboardInterrupt


def setup_device(device, cpu_threads=None):
    world_size = dist.get_world_size()
    if device == 'gpu':
        paddle.set_device(f'gpu:{dist.ParallelEnv().device_id}' if world_size > 1 else 'gpu')
    else:
        use_device('cpu', cpu_threads=cpu_threads)
    if world_size > 1:
        dist.init_parallel_env()
    return dist.get_rank(), world_size


def union_over_ranks(ids):
    """Sorted union of every rank's softmax row ids (the rows each rank's gradient covers)."""
    gathered = []
    dist.all_gather_object(gathered, ids)
    return np.unique(np.concatenate(gathered))


def mean_over_ranks(values, world_size):
    t = paddle.to_tensor(np.asarray(values, dtype=np.float32))
    if world_size > 1:
        dist.all_reduce(t)
        t = t / world_size
    return t.numpy().tolist()


def main():
    a = cli.pretrain_parser().parse_args()
    check_checkpoint_arg(a)
    resumed = read_options_of(a.init_from_ckpt) if a.init_from_ckpt else None  # defines the model
    if resumed is not None and a.preset is None:  # resume with the recipe the checkpoint was trained with
        a.preset = resumed.get('preset')
    given = cli.apply_preset(a) + (['max_characters_per_token'] if a.max_characters_per_token else [])
    if a.max_characters_per_token is None:
        a.max_characters_per_token = resumed['char_cnn']['max_characters_per_token'] if resumed else 50
    check_args(a)
    if resumed is not None:
        check_resume_flags(a, given, resumed, checkpoint_paths(a.init_from_ckpt)[0])
    rank, world_size = setup_device(a.device, a.cpu_threads)
    vocab = Vocabulary(a.vocab_file, a.max_characters_per_token)
    options = resumed if resumed is not None else model_options(a)
    n_train_tokens = a.n_train_tokens or count_tokens(a.train_data_path)['n_tokens']
    if n_train_tokens == 0:  # before anything is written to --save_dir
        raise cli.InputError(f'{a.train_data_path}: no tokens to train on (empty files or only empty lines)')
    if a.n_negative_samples >= vocab.size and rank == 0:
        print(f'note: --n_negative_samples {a.n_negative_samples} >= the vocabulary\'s {vocab.size} tokens: '
              f'every step uses the full softmax', file=sys.stderr)
    options = record_training(options, a, vocab, n_train_tokens, world_size)
    total = total_steps(a, n_train_tokens, world_size)
    tokens_per_step = a.batch_size * a.unroll_steps * world_size

    paddle.seed(a.seed)  # identical initial weights on every rank
    model = LanguageModel(options, vocab.size, a.n_negative_samples, seed=a.seed * 1000 + rank)
    paddle.seed(a.seed * 1000 + rank)  # but different dropout masks
    optimizer = make_optimizer(model, a.optimizer, a.lr, a.max_grad_norm, a.warmup_steps, world_size)
    stream = LMStream(a.train_data_path, vocab, a.batch_size, a.unroll_steps, seed=a.seed, rank=rank,
                      world_size=world_size)
    step, clock = 0, TrainingClock()
    if a.init_from_ckpt:
        step = load_checkpoint(a.init_from_ckpt, model, optimizer, stream, rank, world_size, clock)
    agree_rows = union_over_ranks if world_size > 1 else None
    model.train()

    def dev_eval():  # held-out perplexity on the first --eval_max_tokens targets, run_eval.py's layout
        return evaluate(model, iter_eval_batches(a.dev_data_path, vocab, EVAL_BATCH_SIZE, EVAL_UNROLL_STEPS),
                        a.eval_max_tokens)

    def save(prefix):
        state = gather_train_state(model, stream, step, world_size, clock)
        path = os.path.join(a.save_dir, prefix)
        if rank == 0:
            try:
                save_checkpoint(path, model, optimizer, state)
                log.plot()
            except OSError as e:  # a full disk, a quota, a vanished mount
                print(f'error: could not save {path} ({e.strerror or e}); stopping. The previous checkpoint '
                      f'{last_saved or "(none)"} is intact', file=sys.stderr, flush=True)
                sys.exit(1)
        return path

    log = None
    if rank == 0:
        os.makedirs(a.save_dir, exist_ok=True)
        write_json_atomic(options, os.path.join(a.save_dir, 'options.json'))
        log = TrainLog(a.save_dir, total, step)
        print(f'preset {a.preset}, {a.optimizer} lr {a.lr}: {world_size} process(es), {total} steps of '
              f'{a.batch_size}x{a.unroll_steps} tokens per process ({n_train_tokens:,} training tokens x '
              f'{a.epochs} epochs), vocab {vocab.size:,}, '
              f'{sum(int(np.prod(p.shape)) for p in model.parameters()):,} parameters', flush=True)
    last_saved = a.init_from_ckpt
    window_losses, window_t0, window_steps = [], time.time(), 0
    next_eval_minutes = _next_multiple(clock.total_minutes(), a.eval_minutes)
    out_of_time = stopped_by_signal = False
    stop_request = StopRequest().install()
    batches = iter(stream)
    while step < total and not out_of_time:
        clock.start()
        out, _ = train_step(model, optimizer, next(batches), agree_rows)
        losses = [float(out['forward_loss']), float(out['backward_loss'])]
        clock.stop()
        step += 1
        window_steps += 1
        votes = [float(a.max_minutes is not None and clock.run_minutes() >= a.max_minutes),
                 float(stop_request.name is not None)]
        *losses, clock_votes, signal_votes = mean_over_ranks(losses + votes, world_size)
        stopped_by_signal = signal_votes > 0
        out_of_time = clock_votes > 0 or stopped_by_signal  # any rank's: every rank stops at this step
        if not all(math.isfinite(x) for x in losses):
            if rank == 0:
                print(f'error: non-finite loss {losses} at step {step}; stopping. Last good checkpoint: '
                      f'{last_saved or "none"} (resume from it, perhaps with a lower --lr)', file=sys.stderr)
            return 1
        window_losses.append(losses)
        at_save = step % a.save_freq == 0
        last = step == total or out_of_time  # the final evaluation follows the loop
        at_eval = a.dev_data_path and not last and ((a.eval_freq and step % a.eval_freq == 0) or
                                                    (a.eval_minutes and clock.total_minutes() >= next_eval_minutes))
        if step % a.log_freq == 0 or at_eval or last:
            tokens_per_s = window_steps * tokens_per_step / (time.time() - window_t0)
            dev = None
            if at_eval:
                next_eval_minutes = _next_multiple(clock.total_minutes(), a.eval_minutes)
                if rank == 0:
                    dev = dev_eval()
            if rank == 0:
                log.log(step, step * tokens_per_step, clock.total_minutes(),
                        np.mean(window_losses, axis=0).tolist(), tokens_per_s, dev)
            window_losses, window_t0, window_steps = [], time.time(), 0
        if (at_save or out_of_time) and step < total:
            last_saved = save(str(step))
            window_t0 = time.time()  # saving is not training time
    if rank == 0 and a.dev_data_path and not stopped_by_signal:  # a pre-empted job has seconds left
        dev = dev_eval()
        print(f'dev ({dev["n_tokens"]} tokens): perplexity fwd {dev["forward_perplexity"]:.2f} '
              f'bwd {dev["backward_perplexity"]:.2f} mean {dev["perplexity"]:.2f}', flush=True)
        if log.rows:
            log.rows[-1].update(dev_forward_perplexity=dev['forward_perplexity'],
                                dev_backward_perplexity=dev['backward_perplexity'],
                                dev_perplexity=dev['perplexity'])
            log.write_csv()
    if step < total:
        if rank == 0:
            why = (f'by {stop_request.name or "a signal to another rank"}' if stopped_by_signal else
                   f'after {clock.run_minutes():.1f} minutes of training (--max_minutes)')
            print(f'stopped {why} at step {step}/{total}; saved {last_saved}.pdparams. '
                  f'Resume with --init_from_ckpt {last_saved}', flush=True)
        return 0
    last_saved = save('final')
    if rank == 0:
        print(f'saved {last_saved}.pdparams after {step} steps', flush=True)
    return 0


def _next_multiple(minutes, every):
    return (math.floor(minutes / every) + 1) * every if every else math.inf


if __name__ == '__main__':
    cli.run(main)
