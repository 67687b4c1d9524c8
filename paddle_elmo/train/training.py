"""bilm-tf's pretraining loop, on one device or many: `set_up` (device, data, model, optimizer,
resumed state, as its start says: `NewRun` or `Resume`) -> `Run`, `train` (the loop; its state is
one `Progress`), `finish` (final evaluation and save -> an `Outcome`). `paddle-elmo pretrain`
(paddle_elmo/cli/pretrain.py) turns flags into the configs and the start, calls these three and
prints the outcome.

It logs (INFO: the set-up, a line every log_freq steps; WARNING: a setting without effect, a
signal received) and prints nothing; only rank 0 logs its lines. A run that cannot go on (a failed
save, a non-finite loss) raises fileio.RunFailure, which the command turns into its exit code.

Writes to the run's directory: options.json and recipe.json (the two configs, run_configs.py), N.pdparams /
N.pdopt every save_freq steps and final.* at the end (atomically), train_log.csv and, with
matplotlib (the [plot] extra), train_curve.png.
"""
import csv
import dataclasses
import logging
import math
import os
import signal
import time
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

import paddle
import paddle.distributed as dist

from paddle_elmo.model import kernels
from paddle_elmo.runtime import set_device, use_device
from paddle_elmo.text.corpus import count_tokens
from paddle_elmo.text.batches import EVAL_BATCH_SIZE, EVAL_UNROLL_STEPS, LMStream, iter_eval_batches
from paddle_elmo.text.vocabulary import Vocabulary
from paddle_elmo.fileio import InputError, RunFailure, atomic_path, install_error, make_directory, write_csv_atomic
from paddle_elmo.train.lm import LanguageModel, evaluate, train_step
from paddle_elmo.train.optimizers import Decay, make_optimizer
from paddle_elmo.files.checkpoints import (load_training_checkpoint, rank_state, restore_rank_state,
                                           save_training_checkpoint, train_state)
from paddle_elmo.train.lm_loading import load_weights_into
from paddle_elmo.files.model_io import resolve_model
from paddle_elmo.train.sampled_softmax import PRIOR_MAX_TOKENS, unigram_log_prior
from paddle_elmo.files.run_configs import write_run_configs
from paddle_elmo.text.word_vectors import embedding_rows, read_word_vectors


log = logging.getLogger(__name__)

LOG_FIELDS = ['step', 'tokens', 'train_minutes', 'elapsed_s', 'loss', 'forward_loss', 'backward_loss', 'forward_perplexity',
              'backward_perplexity', 'tokens_per_s', 'dev_forward_perplexity', 'dev_backward_perplexity',
              'dev_perplexity']


def total_steps(recipe):
    if recipe.max_steps:
        return recipe.max_steps
    tokens_per_step = recipe.batch_size * recipe.unroll_steps * recipe.world_size
    return max(1, math.ceil(recipe.epochs * recipe.n_train_tokens / tokens_per_step))


# ---- the run's parts ---------------------------------------------------------------------------

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
            log.warning('%s: stopping after this step to save a checkpoint (send it again to stop at once)',
                        self.name)
        elif now - self.at > self.grace_s:
            raise KeyboardInterrupt


def setup_device(device, cpu_threads=None):
    world_size = dist.get_world_size()
    if device.startswith('gpu'):  # 'gpu' or 'gpu:N'; under a launch, each rank its own
        set_device(f'gpu:{dist.ParallelEnv().device_id}' if world_size > 1 else device)
    else:
        use_device('cpu', cpu_threads=cpu_threads)
    if world_size > 1:
        dist.init_parallel_env()
    return dist.get_rank(), world_size


def union_over_ranks(ids):
    """Sorted union of every rank's row ids of a table (the rows each rank's gradient covers)."""
    gathered = []
    dist.all_gather_object(gathered, ids)
    return np.unique(np.concatenate(gathered))


def mean_over_ranks(values, world_size):
    t = paddle.to_tensor(np.asarray(values, dtype=np.float32))
    if world_size > 1:
        dist.all_reduce(t)
        t = t / world_size
    return t.numpy().tolist()


@dataclass
class Run:
    """What training needs, built by set_up: the configs, the model and its optimizer, the data,
    where this process stands among the ranks, and the clock and log."""
    model_config: object
    recipe: object
    save_dir: str
    rank: int
    vocab: Vocabulary
    model: LanguageModel
    optimizer: object
    stream: LMStream
    total: int
    clock: TrainingClock
    log: Optional[TrainLog]  # rank 0 only
    start_step: int
    resumed_from: Optional[str]
    max_minutes: Optional[float]  # this run's budget of training minutes (not recorded: a resume has its own)

    @property
    def world_size(self):
        return self.recipe.world_size

    @property
    def tokens_per_step(self):
        return self.recipe.batch_size * self.recipe.unroll_steps * self.world_size

    def dev_eval(self):
        """Held-out perplexity on the first eval_max_tokens targets, in run_eval.py's layout."""
        batches = iter_eval_batches(self.recipe.dev_data_path, self.vocab, EVAL_BATCH_SIZE, EVAL_UNROLL_STEPS)
        return evaluate(self.model, batches, self.recipe.eval_max_tokens)

    def save(self, name, step, last_saved):
        """Every rank's state, then (rank 0) DIR/name.pdparams/.pdopt and the curve -> the prefix.
        A failed save (full disk, quota) stops the run, naming the checkpoint that is intact."""
        local = rank_state(self.stream, self.model)
        ranks = [local]
        if self.world_size > 1:
            ranks = []
            dist.all_gather_object(ranks, local)
        state = train_state(step, self.world_size, self.clock.total_minutes() * 60, ranks)
        prefix = os.path.join(self.save_dir, name)
        if self.rank == 0:
            try:
                save_training_checkpoint(prefix, self.model, self.optimizer, state)
                self.log.plot()
            except OSError as e:  # a full disk, a quota, a vanished mount
                raise RunFailure(f'could not save {prefix} ({e.strerror or e}); stopping. The previous checkpoint '
                                 f'{last_saved or "(none)"} is intact') from None
        return prefix


def set_up(model_config, recipe, save_dir, start, *, device='cpu', cpu_threads=None, max_minutes=None):
    """Device, data, model, optimizer and, resuming, the checkpoint's state -> Run.

    # Parameters
    model_config, recipe: the run's `ModelConfig` and `Recipe` (run_plan.for_run's; a resumed run's
        from its checkpoint).
    save_dir: where checkpoints, the configs and the training log go.
    start: how the run starts, as the command read it: `NewRun()` (a new model: bilm-tf's
        initialisation, or the weights recipe.init_weight_file names) or `Resume(prefix)`. set_up
        follows it: the recipe's record of this process, the model's first weights and the state
        the run continues from are the start's.
    device, cpu_threads: `runtime.use_device`'s; under distributed launch each rank takes its GPU.
    max_minutes: this run's budget of training minutes (None: until the last step).
    """
    rank, world_size = setup_device(device, cpu_threads)
    vocab = Vocabulary(recipe.vocab_file, model_config.max_characters_per_token)
    if recipe.n_train_tokens is None:
        recipe = dataclasses.replace(recipe, n_train_tokens=count_tokens(recipe.train_data_path)['n_tokens'])
    if recipe.n_train_tokens == 0:  # before anything is written to --save_dir
        raise InputError(f'{recipe.train_data_path}: no tokens to train on (empty files or only empty lines)')
    if recipe.n_negative_samples >= vocab.size and rank == 0:
        log.warning('--n_negative_samples %d >= the vocabulary\'s %d tokens: every step uses the full softmax',
                    recipe.n_negative_samples, vocab.size)
    recipe = start.recipe_here(recipe, world_size)
    model_kernels = run_kernels(recipe, rank)
    check_input_vocabulary(model_config, recipe, start.weights(recipe))
    paddle.seed(recipe.seed)  # identical initial weights on every rank
    model = LanguageModel(model_config, vocab.size, recipe.n_negative_samples, seed=recipe.seed * 1000 + rank,
                          reset_state_at_sentence_start=recipe.reset_state_at_sentence_start,
                          vocab=vocab,  # the input vocabulary, when the mode has a word embedding
                          kernels=model_kernels)
    paddle.seed(recipe.seed * 1000 + rank)  # but different dropout masks
    start.initialise(model, vocab, recipe, rank)
    frozen = list(model.bilm.parameters()) if recipe.freeze_bilm else []
    frozen += [model.bilm.word_embedding] if recipe.freeze_word_embeddings else []
    for p in frozen:  # before the optimizer lists what it updates
        p.stop_gradient = True
    optimizer = optimizer_for(model, recipe, world_size)
    stream = LMStream(recipe.train_data_path, vocab, recipe.batch_size, recipe.unroll_steps, seed=recipe.seed,
                      rank=rank, world_size=world_size)
    clock = TrainingClock()
    step, clock.earlier = start.restore(model, optimizer, stream, rank, world_size)
    total, train_log = total_steps(recipe), None
    if rank == 0:
        make_directory(save_dir, '--save_dir')
        write_run_configs(save_dir, model_config, recipe, vocab)
        train_log = TrainLog(save_dir, total, step)
        scale = lr_scale_from_weights(recipe)
        scaled = f' x {scale:g} = {recipe.lr * scale:g} (from weights, --from_weights_lr_scale)' if scale != 1 else ''
        decay = optimizer.decay
        decayed = '' if decay.kind == 'none' else f', {decay.kind} decay to x{decay.final:g} over {decay.steps} updates'
        log.info(f'preset {recipe.preset}, {recipe.optimizer} lr {recipe.lr}{scaled}{decayed}: {world_size} process(es), '
                 f'{total} steps of {recipe.batch_size}x{recipe.unroll_steps} tokens per process '
                 f'({recipe.n_train_tokens:,} training tokens x {recipe.epochs} epochs), vocab {vocab.size:,}, '
                 f'{sum(int(np.prod(p.shape)) for p in model.parameters()):,} parameters')
    return Run(model_config=model_config, recipe=recipe, save_dir=save_dir, rank=rank, vocab=vocab, model=model,
               optimizer=optimizer, stream=stream, total=total, clock=clock, log=train_log, start_step=step,
               resumed_from=start.checkpoint, max_minutes=max_minutes)


class NewRun:
    """A run that starts a model (set_up follows it): its recipe records how this process trains
    (the number of processes, how dropout draws its masks, the decay's length); its weights are
    bilm-tf's initialisation, or the file recipe.init_weight_file names (run_plan.for_run records it
    for a run from weights: the biLM and, when it fits, the softmax), then the recipe's word vectors
    and, for a new softmax, the unigram prior."""
    checkpoint = None  # what it resumes: nothing

    def recipe_here(self, recipe, world_size):
        """The recipe with what this run records when it starts -> Recipe."""
        recipe = dataclasses.replace(recipe, world_size=world_size,
                                     dropout_masks=kernels.dropout_masks_on(paddle.get_device()))
        if recipe.lr_decay != 'none' and not recipe.lr_decay_steps:
            recipe = dataclasses.replace(recipe, lr_decay_steps=decay_steps(recipe))
        return recipe

    def weights(self, recipe):
        """The model whose weights the run starts from (model_io.LoadedModel), or None."""
        return resolve_model(recipe.init_options_file, recipe.init_weight_file) if recipe.init_weight_file else None

    def initialise(self, model, vocab, recipe, rank):
        """The new model's first weights, each source said in the log (rank 0)."""
        say = (lambda line: log.info('%s', line)) if rank == 0 else (lambda line: None)
        softmax_from_file = False
        if recipe.init_weight_file:  # domain adaptation: the weights, a fresh optimizer
            # (at recipe.lr x recipe.from_weights_lr_scale: optimizer_for)
            softmax_from_file, loaded = load_weights_into(model, self.weights(recipe))
            say(f'biLM: from {recipe.init_weight_file}; {loaded}')
        if recipe.softmax_bias_init == 'unigram' and not softmax_from_file:  # a new softmax
            say(init_softmax_bias(model.softmax, vocab, recipe.train_data_path, progress=rank == 0))
        if recipe.word_vectors:
            say(init_word_embedding(model.bilm, recipe.word_vectors))

    def restore(self, model, optimizer, stream, rank, world_size):
        """-> (the step the run starts at, the training seconds before it): (0, 0.0)."""
        return 0, 0.0


@dataclass(frozen=True)
class Resume:
    """A run that continues checkpoint `checkpoint` ('DIR/N'; set_up follows it): its recipe as
    recorded, its weights, optimizer state, data position, RNGs and clock."""
    checkpoint: str

    def recipe_here(self, recipe, world_size):
        return recipe

    def weights(self, recipe):
        return resolve_model(self.checkpoint)

    def initialise(self, model, vocab, recipe, rank):
        pass  # the checkpoint's weights replace any (restore)

    def restore(self, model, optimizer, stream, rank, world_size):
        state = load_training_checkpoint(self.checkpoint, model, optimizer, world_size)
        restore_rank_state(state['ranks'][rank], stream, model)
        return state['step'], state.get('train_seconds', 0.0)


def optimizer_for(model, recipe, world_size):
    """The recipe's optimizer over model's trainable parameters (at a from-weights run's scaled rate)."""
    return make_optimizer(model, recipe.optimizer, recipe.lr * lr_scale_from_weights(recipe), recipe.max_grad_norm,
                          recipe.warmup_steps, world_size, lr_decay(recipe), recipe.adam_beta2)


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


def check_input_vocabulary(model_config, recipe, weights):
    """Word input reads the training vocabulary's ids: a resumed run (or one adapting released
    weights) must train with the vocabulary its word embedding was made for, the one of `weights`
    (the start's: a model_io.LoadedModel, None for a new model)."""
    if not model_config.has_words or weights is None:
        return
    # its vocab.txt, which --vocab_file must match; bilm-tf files have none: --vocab_file is theirs
    directory = os.path.dirname(weights.options_file)
    resolve_model(weights, vocab_file=recipe.vocab_file).input_vocabulary(source=f'the word embedding in {directory}')


def run_kernels(recipe, rank):
    """The kernels the run's model uses (kernels.Kernels): dropout draws its masks as the run
    recorded; a resume where that cannot be (the CPU kernel recorded, but off or on a GPU here)
    draws Paddle's, and says so: the same distribution, other draws."""
    here = kernels.dropout_masks_on(paddle.get_device())
    if recipe.dropout_masks == 'kernel' and here != 'kernel':
        if rank == 0:
            log.warning("this run drew its dropout masks with the CPU kernel, which does not run here: the resumed "
                        "run draws Paddle's (the same distribution, not the same masks as an uninterrupted run)")
        return kernels.Kernels(dropout_masks=here)
    return kernels.Kernels(dropout_masks=recipe.dropout_masks)


def init_softmax_bias(softmax, vocab, train_data_path, progress=True):
    """softmax.b <- the unigram log prior of the training targets -> a line saying what it is worth."""
    prior = unigram_log_prior(vocab, train_data_path, progress=progress)
    with paddle.no_grad():
        softmax.b.set_value(prior[:, None])
    perplexity = math.exp(-(np.exp(prior.astype(np.float64)) * prior).sum())
    return (f'softmax bias: log unigram shares of the training targets (at most the first {PRIOR_MAX_TOKENS:,} '
            f'tokens): perplexity {perplexity:,.0f} from the first step, where a zero bias gives {vocab.size:,}')


def init_word_embedding(bilm, path):
    """Rows of bilm.word_embedding from the vectors in `path` for the words it covers (the rest keep
    bilm-tf's initialisation) -> a line saying how many."""
    kv = read_word_vectors(path)
    rows, covered = embedding_rows(kv, bilm.vocab.tokens, bilm.word_embedding.shape[1], path)
    with paddle.no_grad():
        table = bilm.word_embedding.numpy()
        table[covered] = rows[covered]
        bilm.word_embedding.set_value(table)
    return (f'word embedding: {int(covered.sum()):,} of the vocabulary\'s {len(covered):,} tokens '
            f'({covered.mean():.1%}) from {path}, the rest initialised as bilm-tf does')


# ---- training ----------------------------------------------------------------------------------

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
