"""Pretrain the ELMo biLM with sampled softmax, as bilm-tf does, on one device or many.

    paddle-elmo pretrain --train_data_path 'data/train/*' --vocab_file data/vocab-15w.txt
    paddle-elmo pretrain --nproc_per_node 4 --device gpu ...   # under paddle.distributed.launch, a GPU each
    paddle-elmo pretrain --nproc_per_node 2 --device cpu ...   # 1 thread each on 2 cores
    paddle-elmo pretrain --init_from_ckpt checkpoints/3000     # resume: every setting from the checkpoint

Writes to --save_dir (default: a new checkpoints/DATE_TIME; resuming, the run's own), which the run
owns (files/run_directory.py: one holding another run is refused, a running one is locked): options.json
and recipe.json, N.pdparams / N.pdopt every --save_freq steps and final.* at the end (atomically),
train_log.csv and train_curve.png. The corpus is read as
tokens split by spaces; --tokenizer records the tokenizer that made them from raw text, which every
command then applies to the model's raw inputs (build-vocab --tokenizer X --output_corpus makes
them). The flags become the two
configs here (`read_configs`); the run's set-up is paddle_elmo/train/start.py's, the loop training.py's.
"""
import argparse
import contextlib
import glob
import logging
import os
import shutil
import signal
import subprocess
import sys

from paddle_elmo.cli import runner
from paddle_elmo.cli.arguments import Switch, positive_int, underscored
from paddle_elmo.cli.config_flags import given_settings, pretrain_parser
from paddle_elmo.cli.model_flags import check_files_flags
from paddle_elmo.fileio import InputError, check_output_directory
from paddle_elmo.train.run_plan import check_one_start, for_run
from paddle_elmo.cli.runner import rank
from paddle_elmo.files.checkpoint_names import checkpoint_dir, checkpoint_prefix
from paddle_elmo.files.run_directory import check_claim, claimed, new_run_directory
from paddle_elmo.text.corpus import check_corpus, warn_if_untokenized
from paddle_elmo.files.model_names import did_you_mean, is_model_name
from paddle_elmo.files.run_configs import OPTIONS_FILE, WEIGHTS_FILE, read_run_configs
from paddle_elmo.text.word_vectors import check_vectors_file

log = logging.getLogger(__name__)


# ---- configuration ---------------------------------------------------------------------------

def read_configs(a):
    """-> (ModelConfig, Recipe, save_dir, resumed): the files the flags name, read, then run_plan.for_run's
    policy (a new run, a resumed one, or one from weights: its recipe names them), and the checkpoint
    prefix the run resumes (None: a new run; run_start makes what start.set_up follows). Nothing here
    imports Paddle, so that a bad flag or file fails before its import."""
    given = given_settings(a)
    if a.preset is not None:
        given['preset'] = a.preset
    resumed = weights = prefix = None
    save_dir = a.save_dir
    from_weights = a.init_from_weights or a.options_file or a.weight_file
    check_one_start(a.init_from_ckpt, from_weights)  # before reading either's files
    if from_weights:
        check_files_flags('init_from_weights', a.init_from_weights, a.options_file, a.weight_file)
        loaded = weights_model(a.init_from_weights, a.options_file, a.weight_file)
        # an ELMoForManyLangs model has no weights file: its directory (its state dicts and dictionaries) is recorded
        weight_file = loaded.weight_file or loaded.weights_reader.directory
        weights = (loaded.config, os.path.abspath(loaded.options_file), os.path.abspath(weight_file),
                   loaded.own_vocabulary_file)
    if a.init_from_ckpt:
        prefix = checkpoint_prefix(a.init_from_ckpt)
        directory = checkpoint_dir(prefix)
        resumed = (*read_run_configs(directory), os.path.join(directory, 'options.json'))
        save_dir = a.save_dir or directory
    model, recipe = for_run(given, resumed, weights)
    if 'word_vectors' in given:  # before the corpus is counted; a resumed run's file may be gone
        check_vectors_file(recipe.word_vectors)
    return model, recipe, save_dir or new_run_directory(), prefix


def run_start(resumed):
    """How the run starts, which start.set_up follows: start.Resume of checkpoint `resumed`, or start.NewRun
    (Paddle's: imported once the flags and files are checked)."""
    from paddle_elmo.train.start import NewRun, Resume
    return Resume(resumed) if resumed else NewRun()


def weights_model(init_from_weights, options_file, weight_file):
    """The weights a new run starts from: --init_from_weights NAME_OR_DIR (a named model, downloaded on
    first use, an ELMoForManyLangs model directory, or DIR/options.json + DIR/weights.hdf5), or --options_file
    with --weight_file -> model_io.LoadedModel."""
    from paddle_elmo.files.efml_model import is_efml_directory  # the model's reading: imported on use, not by --help
    from paddle_elmo.files.model_io import resolve_model
    if init_from_weights and (is_model_name(init_from_weights) or is_efml_directory(init_from_weights)):
        return resolve_model(init_from_weights)
    if init_from_weights:
        options_file, weight_file = (os.path.join(init_from_weights, n) for n in (OPTIONS_FILE, WEIGHTS_FILE))
    for path, what in ((options_file, 'options file'), (weight_file, 'weights file')):  # before the corpus is counted
        if not os.path.isfile(path):
            named = init_from_weights and not os.path.exists(init_from_weights)  # a misspelt name, not a path
            close = did_you_mean(init_from_weights) if named else ''
            raise FileNotFoundError(f'{path}: {what} not found' + (f' (--init_from_weights DIR needs DIR/{OPTIONS_FILE} '
                                    f'and DIR/{WEIGHTS_FILE}, or a model name{close})' if init_from_weights else ''))
    return resolve_model(options_file, weight_file)


def build_parser():
    p = pretrain_parser()
    p.add_argument('--nproc_per_node', type=positive_int, help='run this many processes on this machine under '
                   'paddle.distributed.launch (one per GPU with --device gpu; on CPU the cores are divided among '
                   'them); the launch logs go to SAVE_DIR/launch_logs. Default: this one process (or, started by '
                   'paddle.distributed.launch, the ranks it launched)')
    return p


def main(argv=None):
    a = build_parser().parse_args(argv)
    if a.nproc_per_node is not None:
        return launch(a, sys.argv[1:] if argv is None else list(argv))
    model_config, recipe, save_dir, resumed = read_configs(a)
    for flag, pattern in (('--train_data_path', recipe.train_data_path), ('--dev_data_path', recipe.dev_data_path)):
        if pattern:  # a missing --train_data_path is the configs' error (set_up)
            check_corpus(pattern, flag, model_config.tokenizer)  # text.encodings: read for the model's tokenizer
    check_output_directory(save_dir, '--save_dir')  # the default one too (a new one, or the resumed run's)
    warn_if_untokenized(recipe.train_data_path, model_config.tokenizer)
    inputs = run_inputs(a, recipe)
    if rank() == 0:  # the directory's refusals (owned_directory's, asked again there), before Paddle's import
        check_claim(save_dir, resumed, a.overwrite_save_dir, inputs)
    start = run_start(resumed)  # Paddle's import: after every check, before the run takes its directory
    from paddle_elmo.train.start import set_up
    from paddle_elmo.train.training import finish, train
    with owned_directory(a, save_dir, resumed, inputs):
        run = set_up(model_config, recipe, save_dir, start, device=a.device, cpu_threads=a.cpu_threads,
                     max_minutes=a.max_minutes)
        outcome = finish(run, train(run))
    if run.rank == 0:
        report(outcome)
    return 0


def run_inputs(a, recipe):
    """The files a run reads, [(flag, path)]: none may be one it writes in its directory."""
    inputs = [('--vocab_file', recipe.vocab_file), ('--word_vectors', recipe.word_vectors),
              ('--options_file', recipe.init_options_file), ('--weight_file', recipe.init_weight_file)]
    for flag, pattern in (('--train_data_path', recipe.train_data_path), ('--dev_data_path', recipe.dev_data_path)):
        inputs += [(flag, path) for path in glob.glob(pattern or '')]
    return inputs


@contextlib.contextmanager
def owned_directory(a, save_dir, resumed, inputs):
    """The run's hold on `save_dir` for the block (run_directory.claimed), rank 0's: the other ranks write
    nothing there."""
    if rank() != 0:
        yield
        return
    new = not os.path.exists(save_dir)
    with claimed(save_dir, resumed, a.overwrite_save_dir, inputs):
        log.info('run directory: %s%s', save_dir, ' (new)' if new else '')
        yield


def report(outcome):
    """The run's results on stdout (its progress went to the log, stderr): the final held-out
    perplexity, and the checkpoint written or the one to resume from."""
    if outcome.dev:
        dev = outcome.dev
        print(f'dev ({dev["n_tokens"]} tokens): perplexity fwd {dev["forward_perplexity"]:.2f} '
              f'bwd {dev["backward_perplexity"]:.2f} mean {dev["perplexity"]:.2f}', flush=True)
    if outcome.stopped:
        print(f'stopped {outcome.stopped} at step {outcome.step}/{outcome.total}; saved {outcome.saved}.pdparams. '
              f'Resume with --init_from_ckpt {outcome.saved}', flush=True)
    else:
        print(f'saved {outcome.saved}.pdparams after {outcome.step} steps', flush=True)


def launch(a, argv):
    """`paddle-elmo pretrain --nproc_per_node N ...`: the same command (without the option) under
    paddle.distributed.launch, from the installed `paddle-elmo` (no checkout needed) -> its exit code.
    The run's directory is decided and checked here, before the launcher writes its logs in it: the ranks
    get it as --save_dir, and rank 0 locks it (an --overwrite_save_dir removal is done here, once)."""
    nproc = a.nproc_per_node
    resumed = checkpoint_prefix(a.init_from_ckpt) if a.init_from_ckpt else None
    save_dir = a.save_dir or (checkpoint_dir(resumed) if resumed else new_run_directory())
    with claimed(save_dir, resumed, a.overwrite_save_dir):  # released before the ranks take it
        pass
    command = shutil.which('paddle-elmo', path=os.pathsep.join([os.path.dirname(sys.executable),
                                                                os.environ.get('PATH', '')]))
    if command is None:
        raise InputError('--nproc_per_node launches the installed paddle-elmo command, which is not on PATH '
                         '(pip install the package, or run python -m paddle.distributed.launch yourself)')
    # The same flags without --nproc_per_node (in any spelling the command accepts: `--nproc_per_node=2`,
    # `--nproc-per-node 2`), for each rank.
    own = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    own.add_argument('--nproc_per_node')
    own.add_argument('--save_dir')
    own.add_argument('--overwrite_save_dir', action=Switch)
    rest = own.parse_known_args(underscored(argv, own._option_string_actions))[1] + ['--save_dir', save_dir]
    log_dir = os.path.join(save_dir, 'launch_logs')
    launcher = [sys.executable, '-m', 'paddle.distributed.launch', '--nproc_per_node', str(nproc),
                '--log_dir', log_dir, command, 'pretrain', *rest]
    print(f'launching {nproc} processes: {" ".join(launcher[1:])}', file=sys.stderr, flush=True)
    return wait_passing_signals(subprocess.Popen(launcher))


def wait_passing_signals(proc):
    """Wait for the launcher `proc` -> its exit code. A SIGTERM sent to this process is passed on to it (which
    passes it to the ranks: each saves a checkpoint that resumes); Ctrl-C reaches the ranks from the terminal
    itself, so this process ignores it and waits for them to save."""
    signal.signal(signal.SIGTERM, lambda signum, frame: proc.send_signal(signum))
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    return proc.wait()


if __name__ == '__main__':
    runner.run(main)
