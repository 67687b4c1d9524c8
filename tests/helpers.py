"""Helpers the tests share (conftest holds the fixtures): running the commands, tiny models, the reference protocol."""
import json
import os
import subprocess
import sys

import h5py
import numpy as np
import paddle
import pytest

from conftest import ROOT, tiny_config
from paddle_elmo import BiLM, ELMoEmbedder, resolve_model
from paddle_elmo.vocabulary import Vocabulary


# ---- optional packages -------------------------------------------------------------------------------

# Python code that makes the packages named in $BLOCKED_PACKAGES (comma-separated) fail to import, as
# where they are not installed: the start of a child's `python -c` code.
BLOCK_PACKAGES = '''
import os, sys
class NotInstalled:
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in os.environ.get('BLOCKED_PACKAGES', '').split(','):
            raise ModuleNotFoundError(f'No module named {name!r} (blocked by the test)')
sys.meta_path.insert(0, NotInstalled())
'''


# ---- from test_pretrain --------------------------------------------------------------------------------


TINY_MODEL = ['--projection_dim', '8', '--cell_dim', '16', '--num_layers', '2', '--char_embed_dim', '4',
              '--cnn_filters', '[[1, 4], [2, 8], [3, 8]]', '--num_highways', '1', '--n_negative_samples', '10',
              '--batch_size', '4', '--unroll_steps', '5']
ENV = dict(os.environ, OMP_NUM_THREADS='1', PYTHONUNBUFFERED='1')


def pretrain_args(corpus, save_dir, *extra):
    return ['--train_data_path', str(corpus / 'train.*.txt'), '--vocab_file', str(corpus / 'vocab.txt'),
            '--save_dir', str(save_dir), '--log_freq', '5', '--seed', '3', '--dropout', '0.1'] + TINY_MODEL + list(extra)


def run(script, args, cwd=ROOT, env=None, **kw):
    return subprocess.run([sys.executable, os.path.join(ROOT, script)] + args, capture_output=True, text=True,
                          env=env or ENV, cwd=cwd, **kw)


# ---- a command in this process ---------------------------------------------------------------------


def main_exit(argv):
    """paddle-elmo ARGV in this process -> its exit code (sys.argv as it was, after)."""
    from paddle_elmo.cli import main
    saved = sys.argv[:]
    try:
        return main(argv)
    except SystemExit as e:
        return e.code
    finally:
        sys.argv = saved


def run_here(script, args, capfd, cwd=ROOT):
    """The checkout's `script` on `args` in this process: its command's main() inside the error boundary
    the script runs it in (cli.run_command), without a new interpreter's start (importing Paddle, ~1.5 s)
    -> a CompletedProcess as run() gives, stdout and stderr captured at the file descriptors as a
    child's are. For tests of what a command does, not of its process: every command keeps tests that
    run its script in a process of its own (test_bad_inputs: each one's bad input, one process each)."""
    from paddle_elmo.cli import COMMANDS
    [command] = [name for name, (_, path, _) in COMMANDS.items() if path == script]
    capfd.readouterr()
    here = os.getcwd()
    os.chdir(cwd)
    try:
        code = main_exit([command, *args])
    finally:
        os.chdir(here)
    out, err = capfd.readouterr()
    return subprocess.CompletedProcess([script, *args], code, out, err)


def load(path):
    return {k: v.numpy() for k, v in paddle.load(str(path)).items()}


def assert_same_weights(a, b):
    assert a.keys() == b.keys()
    for k in a:
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)


# ---- from test_finetune --------------------------------------------------------------------------------


from conftest import RT  # noqa: E402,F401  (tests import it from here)


def head_lines(path, n):
    with open(path, encoding='utf-8') as f:
        return [next(f) for _ in range(n)]


def run_script(script, *argv):
    env = dict(os.environ, OMP_NUM_THREADS='1')
    return subprocess.run([sys.executable, os.path.join(ROOT, script), *argv], capture_output=True, text=True,
                          env=env, cwd=ROOT)


def check_result(path, n_folds):
    with open(path) as f:
        result = json.load(f)
    assert {'accuracy_mean', 'accuracy_std', 'fold_accuracies', 'layer_weights', 'args'} <= set(result)
    assert len(result['fold_accuracies']) == n_folds
    assert all(0 <= a <= 1 for a in result['fold_accuracies'])
    assert result['accuracy_mean'] == pytest.approx(np.mean(result['fold_accuracies']))
    return result


# ---- from test_token_input --------------------------------------------------------------------------------


WORDS = 'the cat sat on a mat while dogs ran in parks near old houses and birds sang songs'.split()


def tiny_vocab():
    return Vocabulary.from_tokens(['<S>', '</S>', '<UNK>'] + WORDS)


def tiny_bilm(token_input, seed=0):
    paddle.seed(seed)
    config = tiny_config(token_input=token_input, word_dim=5 if token_input == 'word+char' else 0)
    return BiLM(config, vocab=tiny_vocab() if config.has_words else None)


def save_checkpoint(bilm, directory):
    """`bilm` as a checkpoint of ours (options.json + final.pdparams) in `directory` -> the prefix
    --init_from_ckpt takes."""
    from paddle_elmo.hdf5_weights import model_options
    directory.mkdir(parents=True, exist_ok=True)
    (directory / 'options.json').write_text(json.dumps(model_options(bilm)))
    paddle.save(bilm.state_dict(), str(directory / 'final.pdparams'))
    return str(directory / 'final')


# ---- from test_elmo --------------------------------------------------------------------------------
# The fixture's references were computed by bilm-tf in float32; 1e-5 leaves room for a different
# summation order in BLAS while catching any real formula slip (those move values by >1e-3).
TOL = 1e-5


def fixture_embedder(fixture_dir, vocab_file=None, embedding_weight_file=None, **kw):
    """An ELMoEmbedder of the reference fixture's model (with a token-embedding file and its vocabulary)."""
    model = resolve_model(os.path.join(fixture_dir, 'options.json'), os.path.join(fixture_dir, 'lm_weights.hdf5'),
                          vocab_file=vocab_file, embedding_weight_file=embedding_weight_file)
    return ELMoEmbedder(model, **kw)


def reference_top(fixture_dir, group, i):
    with h5py.File(os.path.join(fixture_dir, f'lm_embeddings_{group}.hdf5'), 'r') as f:
        ref = f[str(i)][...]
    return np.concatenate([ref[0], ref[1]], axis=-1)  # [n_tokens, 2 * projection_dim]


def run_reference_protocol(embedder, sentences):
    """Batch i = (sentences[0][i], sentences[1][i], sentences[2][i]), i = 0..9, in order."""
    return [embedder.embed_batch([sentences[g][i] for g in range(3)]) for i in range(10)]


# ---- a toy set that any classifier that learns gets right (test_example_commands, test_finetune) -------------

# Every positive sentence is made of two cue words, every negative one of two others: the classes
# share no word. The tiny models' token features differ little from word to word (their LSTM layers
# are close to constant), so two cues per class rather than more: each class's sentence means then
# lie on a segment, far from the other's.
POS_CUES, NEG_CUES = ('funny', 'great'), ('dull', 'predictable')
# The classifier's flags that let it learn the toy set in seconds: enough epochs and steps (16 per
# batch, 3e-3), no dropout (on features that differ this little, its noise drowns the difference), a
# dev set large enough (30%) that a lucky early epoch is rarely the one kept.
LEARN = ['--epochs', '40', '--patience', '10', '--batch_size', '16', '--lr', '0.003', '--dropout', '0',
         '--dev_fraction', '0.3']
# 2 classes, 100 test sentences a fold (--folds 2 on 2 x 100): a classifier that learns nothing
# gets ~0.5 (a constant guess exactly 0.5); by chance P(>= 85 of 100 right) = 2.4e-13. Measured
# with the test models over seeds 1-4: 0.91-1.0.
LEARNED = 0.85


def write_separable_polarity(directory, n_per_class=100, seed=0, encoding='utf-8'):
    """rt-polarity.pos / .neg in `directory`: n_per_class sentences each of 3-7 tokens drawn from
    the class's cue words (POS_CUES, NEG_CUES)."""
    rng = np.random.RandomState(seed)
    for name, cues in (('rt-polarity.pos', POS_CUES), ('rt-polarity.neg', NEG_CUES)):
        lines = [' '.join(rng.choice(cues, rng.randint(3, 8))) for _ in range(n_per_class)]
        (directory / name).write_bytes(('\n'.join(lines) + '\n').encode(encoding))


def assert_learned(result):
    """Every fold of an --output_json result reached LEARNED test accuracy."""
    assert all(a >= LEARNED for a in result['fold_accuracies']), result['fold_accuracies']
