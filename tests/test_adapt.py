"""run_pretrain.py --init_from_weights: a new run that starts from options.json + weights.hdf5 (an export
of ours, the official files, the bundled model): the biLM from the file, the softmax from it when its
rows fit the vocabulary, a fresh optimizer, and the source recorded in recipe.json."""
import json

import numpy as np
import pytest

from conftest import ROOT, one_line_error
from helpers import TINY_MODEL, load, main_exit, pretrain_args, pretrain_here, run_here

# Every run here in this process (helpers.pretrain_here; the fixtures' through main_exit): what is tested
# is what a run starts from, trains and records; pretrain's process (its exit codes, a launch) is
# test_pretrain's and test_bad_inputs'.

TINY = ['--batch_size', '2', '--unroll_steps', '3', '--n_negative_samples', '4', '--log_freq', '1', '--seed', '3']


@pytest.fixture(scope='module')
def export(corpus, tmp_path_factory):
    """A tiny model trained a few steps, exported with its softmax."""
    d = tmp_path_factory.mktemp('adapt')
    assert main_exit(['pretrain', *pretrain_args(corpus, d / 'ck', '--max_steps', '3'), '--cpu_threads', '1']) == 0
    assert main_exit(['export-weights', '--init_from_ckpt', str(d / 'ck' / 'final'), '--output_dir', str(d / 'exp')]) == 0
    return d / 'exp'


def adapt_args(corpus, save_dir, *extra, vocab=None):
    return ['--train_data_path', str(corpus / 'train.*.txt'), '--vocab_file', str(vocab or corpus / 'vocab.txt'),
            '--save_dir', str(save_dir)] + TINY + list(extra)


def adapt(corpus, save_dir, *extra, capfd, vocab=None):
    """run_pretrain.py of the tiny adaptation on `extra` flags, in this process (helpers.pretrain_here)."""
    return pretrain_here(adapt_args(corpus, save_dir, *extra, vocab=vocab), capfd)


def adapt_here(corpus, save_dir, *extra, capfd):
    """adapt() as the refusals meet it (helpers.run_here, the flags as given)."""
    return run_here('run_pretrain.py', adapt_args(corpus, save_dir, *extra), capfd)


def test_the_run_starts_from_the_files_weights_and_softmax_and_records_them(corpus, export, tmp_path, capfd):
    from paddle_elmo import resolve_model
    # A learning rate far below float32's resolution: after one step the weights are still the file's.
    # --softmax_bias_init unigram is for a new softmax: the file's is taken whole, no prior counted.
    proc = adapt(corpus, tmp_path, '--init_from_weights', str(export), '--max_steps', '1', '--lr', '1e-30',
                 '--softmax_bias_init', 'unigram', capfd=capfd)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert f'biLM: from {export / "weights.hdf5"}; softmax: from' in proc.stderr  # the log
    assert 'softmax bias:' not in proc.stderr
    state = load(tmp_path / 'final.pdparams')
    exported = resolve_model(str(export / 'options.json'), str(export / 'weights.hdf5')).load()
    for name, value in exported.state_dict().items():
        np.testing.assert_array_equal(state[f'bilm.{name}'], value.numpy(), err_msg=name)
    import h5py
    with h5py.File(export / 'weights.hdf5', 'r') as f:
        np.testing.assert_array_equal(state['softmax.W'], f['softmax/W'][...])
        np.testing.assert_array_equal(state['softmax.b'].reshape(-1), f['softmax/b'][...].reshape(-1))
    recipe = json.loads((tmp_path / 'recipe.json').read_text())
    assert recipe['init_weight_file'] == str(export / 'weights.hdf5')
    assert recipe['init_options_file'] == str(export / 'options.json')


def test_a_vocabulary_that_does_not_fit_the_files_softmax_gets_a_new_one(corpus, export, tmp_path, capfd):
    (tmp_path / 'vocab.txt').write_text((corpus / 'vocab.txt').read_text() + 'zebra\n')
    proc = adapt(corpus, tmp_path / 'out', '--init_from_weights', str(export), '--max_steps', '1', '--lr', '1e-30',
                 '--softmax_bias_init', 'unigram', capfd=capfd, vocab=tmp_path / 'vocab.txt')
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert 'softmax: new (' in proc.stderr and 'has one of 26 rows, the vocabulary 27 tokens)' in proc.stderr
    from paddle_elmo.train.sampled_softmax import unigram_log_prior
    from paddle_elmo.text.vocabulary import Vocabulary
    prior = unigram_log_prior(Vocabulary(str(tmp_path / 'vocab.txt')), str(corpus / 'train.*.txt'), progress=False)
    np.testing.assert_allclose(load(tmp_path / 'out' / 'final.pdparams')['softmax.b'][:, 0], prior, atol=1e-6)


def test_the_bundled_model_adapts_with_its_own_softmax_and_vocabulary(corpus, tmp_path, capfd):
    # The bundled model reads words: its input table is tied to its vocabulary, which the run reads
    # from beside the weights when --vocab_file is not given; its shipped softmax has that vocabulary's
    # rows, so the run starts from it rather than from a new one.
    proc = pretrain_here(['--train_data_path', str(corpus / 'train.*.txt'), '--save_dir', str(tmp_path),
                          '--init_from_weights', 'bundled', '--preset', 'budget', '--max_steps', '2'] + TINY, capfd)
    assert proc.returncode == 0, proc.stderr[-2000:]
    pretrained = f'{ROOT}/paddle_elmo/pretrained'
    assert f'--vocab_file: {pretrained}/vocab.txt' in proc.stderr
    assert f'softmax: from {pretrained}/weights.hdf5 (35003 rows, the vocabulary\'s size)' in proc.stderr
    assert 'preset budget, adam' in proc.stderr
    assert json.loads((tmp_path / 'recipe.json').read_text())['vocab_file'] == f'{pretrained}/vocab.txt'


def test_a_word_model_refuses_another_vocabulary_naming_both(corpus, tmp_path, capfd):
    proc = adapt_here(corpus, tmp_path, '--init_from_weights', 'bundled', '--preset', 'budget', '--max_steps', '1',
                      capfd=capfd)
    assert one_line_error(proc).endswith('their tokens differ')
    assert f'{corpus / "vocab.txt"} is not the vocabulary of the word embedding' in proc.stderr


@pytest.mark.parametrize('flags, message', [
    (['--cell_dim', '99'], 'defines the model being adapted, and these flags differ from it: --cell_dim 99 '
                           '(weights: 16)'),
    (['--options_file', 'x.json'], 'give either --init_from_weights or --options_file with --weight_file, not '
                                    'both'),
    (['--init_from_ckpt', 'ck/1'], 'give --init_from_ckpt (resume a run) or --init_from_weights'),
])
def test_bad_combinations_are_one_line_errors(corpus, export, tmp_path, flags, message, capfd):
    line = one_line_error(adapt_here(corpus, tmp_path, '--init_from_weights', str(export), *flags, capfd=capfd))
    assert message in line


def test_a_directory_without_the_files_names_what_it_needs(corpus, tmp_path, capfd):
    line = one_line_error(adapt_here(corpus, tmp_path / 'out', '--init_from_weights', str(tmp_path), capfd=capfd))
    assert line == (f'error: {tmp_path / "options.json"}: options file not found (--init_from_weights DIR needs '
                    f'DIR/options.json and DIR/weights.hdf5, or a model name)')


def test_freeze_bilm_trains_the_softmax_alone(corpus, export, tmp_path, capfd):
    (tmp_path / 'vocab.txt').write_text((corpus / 'vocab.txt').read_text() + 'zebra\n')  # a new softmax
    proc = adapt(corpus, tmp_path / 'out', '--init_from_weights', str(export), '--max_steps', '3', '--freeze_bilm',
                 '--lr', '0.5', capfd=capfd, vocab=tmp_path / 'vocab.txt')
    assert proc.returncode == 0, proc.stderr[-2000:]
    from paddle_elmo import resolve_model
    state = load(tmp_path / 'out' / 'final.pdparams')
    exported = resolve_model(str(export / 'options.json'), str(export / 'weights.hdf5')).load()
    for name, value in exported.state_dict().items():
        np.testing.assert_array_equal(state[f'bilm.{name}'], value.numpy(), err_msg=name)
    assert json.loads((tmp_path / 'out' / 'recipe.json').read_text())['freeze_bilm'] is True
    assert '--lr 0.5' not in proc.stderr and 'lr 0.5' in proc.stderr
    assert 'from weights,' not in proc.stderr  # the biLM does not train: the full rate (lr_scale_from_weights)


# ---- continuing from weights does not damage them (issue 38) ---------------------------------------------

DEMO = ROOT + '/paddle_elmo/demo_data'
# The continuation's recipe: the default (original: Adagrad 0.2 x from_weights_lr_scale, a fresh optimizer) on
# tiny batches.
CONTINUE = ['--batch_size', '4', '--unroll_steps', '5', '--n_negative_samples', '10', '--seed', '3',
            '--log_freq', '1000', '--save_freq', '1000000', '--dev_data_path', DEMO + '/sample_heldout.txt',
            '--eval_freq', '5']


@pytest.fixture(scope='module')
def demo_export(tmp_path_factory):
    """The tiny model pretrained 300 steps on the demo corpus (Adam, well along: held-out perplexity
    ~6 from ~180), exported with its softmax; its held-out perplexity.

    Adam at lr 0.01, not faster: at 0.03 the 300 steps amplified a one-ulp change of a gradient (a
    reordered sum) into other weights (held-out perplexity 4.47-4.79 at seed 3 across four such
    changes), and the continuation's curve from them moved with it (its highest point 0.98-1.03x the
    start). At 0.01 the code before the joint LSTM kernel, the same with one ulp on a gradient every
    step, and the kernel ended at the same perplexity within 5e-6 of it (2026-11-29, seeds 3, 4 and 5)."""
    from paddle_elmo.text.vocabulary import build_vocabulary, write_vocabulary
    import collections
    d = tmp_path_factory.mktemp('demo')
    with open(DEMO + '/sample_train.txt', encoding='utf-8') as f:
        write_vocabulary(build_vocabulary(collections.Counter(f.read().split())), str(d / 'vocab.txt'))
    assert main_exit(['pretrain', '--train_data_path', DEMO + '/sample_train.txt', '--vocab_file', str(d / 'vocab.txt'),
                      '--save_dir', str(d / 'ck'), '--preset', 'budget', '--batch_size', '32', '--unroll_steps', '10',
                      '--lr', '0.01', '--dropout', '0', '--max_steps', '300', '--log_freq', '1000', '--seed', '3',
                      '--cpu_threads', '1'] + TINY_MODEL[:-4]) == 0
    assert main_exit(['export-weights', '--init_from_ckpt', str(d / 'ck' / 'final'), '--output_dir', str(d / 'exp')]) == 0
    assert main_exit(['eval', '--dev_data_path', DEMO + '/sample_heldout.txt', '--vocab_file', str(d / 'vocab.txt'),
                      '--options_file', str(d / 'exp' / 'options.json'), '--weight_file', str(d / 'exp' / 'weights.hdf5'),
                      '--output_json', str(d / 'eval.json')]) == 0
    return d, json.loads((d / 'eval.json').read_text())['perplexity']


def continued(demo_export, save_dir, *flags, capfd, steps=500):
    """`steps` steps of run_pretrain.py --init_from_weights on the text the weights were trained on ->
    {step: held-out perplexity}, every 5 steps."""
    d, _ = demo_export
    proc = pretrain_here(['--init_from_weights', str(d / 'exp'), '--train_data_path', DEMO + '/sample_train.txt',
                          '--vocab_file', str(d / 'vocab.txt'), '--save_dir', str(save_dir), '--max_steps', str(steps)] +
                         CONTINUE + list(flags), capfd)
    assert proc.returncode == 0, proc.stderr[-2000:]
    import csv
    with open(save_dir / 'train_log.csv', newline='') as f:
        return {int(r['step']): float(r['dev_perplexity']) for r in csv.DictReader(f) if r['dev_perplexity']}, proc


def test_continuing_from_weights_on_their_own_text_does_not_damage_them(demo_export, tmp_path, capfd):
    _, start = demo_export
    curve, proc = continued(demo_export, tmp_path, capfd=capfd)
    assert 'adagrad lr 0.2 x 0.1 = 0.02 (from weights, --from_weights_lr_scale)' in proc.stderr
    assert sorted(curve) == list(range(5, 501, 5))
    # The first steps move the weights very little, but the curve wobbles with the weights it starts
    # from. Its highest point over 500 steps (2026-11-29, the fixture at lr 0.01): 1.007x the start
    # here (seed 3), the same with the joint LSTM kernel's reordered sums and with one ulp on a
    # gradient every step; 0.96-1.06x across pretraining seeds 3-10, and up to 1.03x with the
    # fixture at lr 0.03 and one-ulp changes. What the bound catches: twice the default rate
    # (--from_weights_lr_scale 0.2) rose to 1.18x, the full rate (below) to 2.3-5.0x at step 5.
    assert max(curve.values()) <= start * 1.1, (start, curve)
    assert curve[500] < start * 0.9, (start, curve)  # and it still learns
    assert json.loads((tmp_path / 'recipe.json').read_text())['from_weights_lr_scale'] == 0.1


def test_at_the_full_rate_a_fresh_optimizer_damages_the_weights(demo_export, tmp_path, capfd):
    """--from_weights_lr_scale off (1) is the behaviour before issue 38: what the default prevents."""
    _, start = demo_export
    # The damage shows in the first 50 steps; a run's first steps do not depend on its length (the
    # recipe has no decay), so 50 steps are what a longer run's first 50 were.
    curve, proc = continued(demo_export, tmp_path, '--from_weights_lr_scale', 'off', capfd=capfd, steps=50)
    assert 'adagrad lr 0.2:' in proc.stderr and 'from weights,' not in proc.stderr
    assert json.loads((tmp_path / 'recipe.json').read_text())['from_weights_lr_scale'] == 1.0
    assert curve[5] > start * 1.3 and curve[50] > start * 1.1, (start, curve)


def test_a_run_from_weights_resumes_exactly_at_its_scaled_rate(corpus, export, tmp_path, capfd):
    """The resumed run takes the scale from its recipe.json: the same rate as the uninterrupted one."""
    from helpers import assert_same_weights
    whole = adapt(corpus, tmp_path / 'whole', '--init_from_weights', str(export), '--max_steps', '6',
                  '--from_weights_lr_scale', '0.5', capfd=capfd)
    assert whole.returncode == 0, whole.stderr[-2000:]
    cut = adapt(corpus, tmp_path / 'cut', '--init_from_weights', str(export), '--max_steps', '3',
                '--from_weights_lr_scale', '0.5', '--save_freq', '3', capfd=capfd)
    assert cut.returncode == 0, cut.stderr[-2000:]
    resumed = pretrain_here(['--init_from_ckpt', str(tmp_path / 'cut' / 'final'), '--max_steps', '6'], capfd)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert 'lr 0.2 x 0.5 = 0.1 (from weights' in resumed.stderr
    assert_same_weights(load(tmp_path / 'whole' / 'final.pdparams'), load(tmp_path / 'cut' / 'final.pdparams'))


def test_a_run_written_before_the_scale_existed_resumes_at_the_full_rate(tmp_path):
    """Its recipe.json has no from_weights_lr_scale: it ran (and resumes) at the full rate."""
    from paddle_elmo.train.run_plan import for_weights
    from paddle_elmo.files.run_configs import read_run_configs, write_run_configs
    from paddle_elmo.train.schedules import lr_scale_from_weights
    from paddle_elmo.text.vocabulary import Vocabulary
    from conftest import tiny_config
    model, recipe = for_weights(tiny_config(), {'train_data_path': '/d/*', 'vocab_file': '/v.txt'}, 'w/options.json')
    recipe.init_weight_file = 'w/weights.hdf5'
    write_run_configs(str(tmp_path), model, recipe, Vocabulary.from_tokens([f'w{i}' for i in range(30)]))
    assert lr_scale_from_weights(read_run_configs(str(tmp_path))[1]) == 0.1
    stored = json.loads((tmp_path / 'recipe.json').read_text())
    del stored['from_weights_lr_scale']
    (tmp_path / 'recipe.json').write_text(json.dumps(stored))
    assert lr_scale_from_weights(read_run_configs(str(tmp_path))[1]) == 1.0
