"""The PaddleNLP ELMo example's four commands, as its README writes them (CPU form), against our
scripts, on small stand-ins for its data in the layout its download_data.sh produces.

Changes to the commands, all of them allowed by the issue: `python X.py` runs our script by its
path; flags that only shrink the run are appended (a tiny model, a few steps, 2 folds, 1 epoch);
the checkpoint is step 4 rather than 10000 (the example's runs are 10,000 steps long). The
classifiers' runs end with helpers.LEARN (more epochs, small batches, no dropout) and must learn the
stand-in rt-polarity, which their classes' cue words make perfectly separable.
"""
import json
import os
import shlex
import subprocess
import sys

import numpy as np
import pytest

from conftest import ROOT
from helpers import LEARN, TINY_MODEL, assert_learned, write_separable_polarity

WORDS = ('the film is a warm funny and smart story with great actors but plot feels long dull sadly '
         'predictable so it never works').split()  # distinct words
COMMANDS = {
    'pretrain': "python -m paddle.distributed.launch run_pretrain.py "
                "--train_data_path='./1-billion-word/training-tokenized-shuffled/*' "
                "--vocab_file='./1-billion-word/vocab-15w.txt' --save_dir='./checkpoints' --device='cpu'",
    'eval': "python run_eval.py --dev_data_path='./1-billion-word/heldout-tokenized-shuffled/*' "
            "--vocab_file='./1-billion-word/vocab-15w.txt' --init_from_ckpt='./checkpoints/4' --device='cpu'",
    'word2vec': "python -m paddle.distributed.launch word2vec_base.py --data_dir='./sentence-polarity-dataset-v1/' "
                "--pretrained_word2vec_file='./sentence-polarity-dataset-v1/GoogleNews-vectors-negative300.bin' "
                "--device='cpu'",
    'finetune': "python -m paddle.distributed.launch run_finetune.py --data_dir='./sentence-polarity-dataset-v1/' "
                "--init_from_ckpt='./checkpoints/4' --device='cpu'",
}
SHRINK = {
    'pretrain': TINY_MODEL + ['--max_steps', '5', '--save_freq', '4'],
    'eval': [],
    'word2vec': ['--folds', '2', '--epochs', '1'],
    'finetune': ['--folds', '2', '--epochs', '1'],
}
# The example's fine-tuning options, with its defaults.
EXAMPLE_OPTIONS = ['--logging_step', '10', '--weight_decay', '0.0001', '--max_seq_len', '256',
                   '--sent_embedding_dim', '64', '--dropout', '0.5', '--batch_size', '64', '--lr', '0.001']


@pytest.fixture(scope='module')
def example_dir(tmp_path_factory):
    """1-billion-word/ and sentence-polarity-dataset-v1/ as download_data.sh leaves them, made up."""
    from gensim.models import KeyedVectors
    d = tmp_path_factory.mktemp('example')
    rng = np.random.RandomState(0)
    lm = d / '1-billion-word'
    for sub, n in (('training-tokenized-shuffled', 80), ('heldout-tokenized-shuffled', 10)):
        (lm / sub).mkdir(parents=True)
        for shard in range(2):
            lines = [' '.join(rng.choice(WORDS, rng.randint(3, 10))) for _ in range(n)]
            (lm / sub / f'news.en-0000{shard}-of-00100').write_text('\n'.join(lines) + '\n')
    (lm / 'vocab-15w.txt').write_text('\n'.join(['<S>', '</S>', '<UNK>'] + WORDS[:20]) + '\n')
    rt = d / 'sentence-polarity-dataset-v1'
    rt.mkdir()
    write_separable_polarity(rt, encoding='latin-1')
    kv = KeyedVectors(vector_size=300)
    vocab = sorted(set(WORDS))
    kv.add_vectors(vocab, rng.normal(size=(len(vocab), 300)).astype(np.float32))
    kv.save_word2vec_format(str(rt / 'GoogleNews-vectors-negative300.bin'), binary=True)
    return d


def run_example(name, example_dir, *extra):
    words = shlex.split(COMMANDS[name])
    words = [sys.executable if w == 'python' else (os.path.join(ROOT, w) if w.endswith('.py') else w)
             for w in words]
    cmd = ' '.join(shlex.quote(w) for w in words + SHRINK[name] + list(extra))
    return subprocess.run(cmd, shell=True, cwd=example_dir, capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, OMP_NUM_THREADS='1'))


def launch_log(example_dir):
    return ''.join(p.read_text() for p in sorted((example_dir / 'log').glob('workerlog.*')))


def test_the_examples_four_commands_run_as_written(example_dir):
    pretrain = run_example('pretrain', example_dir)
    assert pretrain.returncode == 0, pretrain.stderr[-2000:] + launch_log(example_dir)[-2000:]
    assert (example_dir / 'checkpoints' / '4.pdparams').exists()
    evaluation = run_example('eval', example_dir)
    assert evaluation.returncode == 0, evaluation.stderr[-2000:]
    assert 'perplexity (exp of the mean of the two losses' in evaluation.stdout
    for name in ('word2vec', 'finetune'):
        proc = run_example(name, example_dir, '--output_json', str(example_dir / f'{name}.json'), *EXAMPLE_OPTIONS,
                           *LEARN)
        assert proc.returncode == 0, proc.stderr[-2000:] + launch_log(example_dir)[-2000:]
        summary = json.loads((example_dir / f'{name}.json').read_text())
        assert_learned(summary)  # word2vec + BoW, and the frozen biLM's scalar mix + BoW
        assert summary['args']['hidden_dim'] == 64 and summary['args']['weight_decay'] == 0.0001


def test_the_downstream_scripts_run_once_under_several_ranks(example_dir):
    out = example_dir / 'two-ranks.json'
    words = shlex.split(COMMANDS['word2vec'])  # with --nproc_per_node 2 given to the launcher
    at = words.index('paddle.distributed.launch') + 1
    cmd = ([sys.executable] + words[1:at] + ['--nproc_per_node', '2', '--log_dir', str(example_dir / 'log2')] +
           [os.path.join(ROOT, words[at])] + words[at + 1:] + SHRINK['word2vec'] + LEARN + ['--output_json', str(out)])
    proc = subprocess.run(cmd, cwd=example_dir, capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, OMP_NUM_THREADS='1'))
    logs = {r: (example_dir / 'log2' / f'workerlog.{r}').read_text() for r in (0, 1)}
    assert proc.returncode == 0, logs[0][-2000:] + logs[1][-2000:]
    assert 'rank 0 runs all folds, the others exit (this is rank 1)' in logs[1]
    assert 'fold 1/2' not in logs[1] and 'fold 1/2' in logs[0]
    assert_learned(json.loads(out.read_text()))
