"""How a pretraining run starts. The command (cli/pretrain.py) decides once how: `NewRun()` (a new
model, from bilm-tf's initialisation or from the weights the recipe names) or `Resume(prefix)` (a
checkpoint); `set_up` follows that start, without branching on it, to a `Run`: the device, data,
model, optimizer and, resuming, the checkpoint's state, with the run's save and held-out evaluation.
The loop (training.py) takes the Run.

It logs the set-up (INFO) and a setting without effect (WARNING) on rank 0, and writes the run's
configs (options.json, recipe.json: files/run_configs.py) into its directory; a failed save raises
fileio.RunFailure.
"""
import dataclasses
import logging
import os
from dataclasses import dataclass
from typing import Optional

import numpy as np

import paddle
import paddle.distributed as dist

from paddle_elmo.fileio import InputError, RunFailure, make_directory
from paddle_elmo.files.checkpoints import (load_training_checkpoint, rank_state, restore_rank_state,
                                           save_training_checkpoint, train_state)
from paddle_elmo.files.model_io import resolve_model
from paddle_elmo.files.run_configs import write_run_configs
from paddle_elmo.model import kernels
from paddle_elmo.text.batches import EVAL_BATCH_SIZE, EVAL_UNROLL_STEPS, LMStream, iter_eval_batches
from paddle_elmo.text.corpus import count_tokens
from paddle_elmo.text.vocabulary import Vocabulary
from paddle_elmo.train.initial_weights import init_softmax_bias, init_word_embedding
from paddle_elmo.train.lm import LanguageModel, evaluate
from paddle_elmo.train.lm_loading import load_weights_into
from paddle_elmo.train.optimizers import make_optimizer
from paddle_elmo.train.ranks import setup_device
from paddle_elmo.train.schedules import decay_steps, lr_decay, lr_scale_from_weights, total_steps
from paddle_elmo.train.train_log import TrainingClock, TrainLog


log = logging.getLogger(__name__)


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
        batches = iter_eval_batches(self.recipe.dev_data_path, self.vocab, EVAL_BATCH_SIZE, EVAL_UNROLL_STEPS,
                                    self.model.input_mapper)
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
    input_vocab = input_vocabulary(model_config, recipe, vocab, start.weights(recipe))
    paddle.seed(recipe.seed)  # identical initial weights on every rank
    model = LanguageModel(model_config, vocab.size, recipe.n_negative_samples, seed=recipe.seed * 1000 + rank,
                          reset_state_at_sentence_start=recipe.reset_state_at_sentence_start,
                          vocab=input_vocab, kernels=model_kernels)
    paddle.seed(recipe.seed * 1000 + rank)  # but different dropout masks
    start.initialise(model, vocab, recipe, rank)
    frozen = list(model.bilm.parameters()) if recipe.freeze_bilm else []
    frozen += [model.bilm.word_embedding] if recipe.freeze_word_embeddings else []
    for p in frozen:  # before the optimizer lists what it updates
        p.stop_gradient = True
    optimizer = optimizer_for(model, recipe, world_size)
    stream = LMStream(recipe.train_data_path, vocab, recipe.batch_size, recipe.unroll_steps, seed=recipe.seed,
                      rank=rank, world_size=world_size, mapper=model.input_mapper)
    clock = TrainingClock()
    step, clock.earlier = start.restore(model, optimizer, stream, rank, world_size)
    total, train_log = total_steps(recipe), None
    if rank == 0:
        make_directory(save_dir, '--save_dir')
        write_run_configs(save_dir, model_config, recipe, vocab, input_vocab)
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
        """The model whose weights the run starts from (model_io.LoadedModel), or None: bilm-tf / AllenNLP
        files, or a model directory that reads its own files (an ELMoForManyLangs one: run_plan.for_run
        records it as init_weight_file)."""
        if not recipe.init_weight_file:
            return None
        if os.path.isdir(recipe.init_weight_file):
            return resolve_model(recipe.init_weight_file)
        return resolve_model(recipe.init_options_file, recipe.init_weight_file)

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


def input_vocabulary(model_config, recipe, vocab, weights):
    """The biLM's input vocabulary -> the training Vocabulary `vocab` (word input reads its ids), the
    dictionaries of `weights` for a mode that reads its own (an ELMoForManyLangs model's, or a run's from
    one: its char.dic / word.dic), None for a char model.

    Word input reads the training vocabulary's ids: a resumed run (or one adapting released
    weights) must train with the vocabulary its word embedding was made for, the one of `weights`
    (the start's: a model_io.LoadedModel, None for a new model)."""
    if model_config.input_mode.chars_from_vocab:
        return weights.input_vocabulary()
    if not model_config.has_words:
        return None
    if weights is not None:
        # its vocab.txt, which --vocab_file must match; bilm-tf files have none: --vocab_file is theirs
        directory = os.path.dirname(weights.options_file)
        resolve_model(weights, vocab_file=recipe.vocab_file).input_vocabulary(source=f'the word embedding in {directory}')
    return vocab


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
