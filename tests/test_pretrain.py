"""run_pretrain.py and run_eval.py end to end: distributed launch, kill and resume, NaN, perplexity."""
import json
import math
import os
import signal
import subprocess
import sys
import time

import h5py
import numpy as np
import paddle
import pytest

from conftest import ROOT, tiny_config  # corpus: the fixture in conftest
from helpers import ENV, TINY_MODEL, assert_same_weights, load, pretrain_args, pretrain_here, run, run_here

# What a run writes and logs is tested in this process (pretrain_here); its process's own behaviour (a
# launch, a kill, the exit codes) in processes of their own (the two-rank launches, the kill,
# test_bad_arguments_fail_with_one_line).


# Two ranks on one node, as both tests below read it: 8 steps, a checkpoint at step 4.
TWO_RANKS = ('--max_steps', '8', '--save_freq', '4')


@pytest.fixture(scope='module')
def two_ranks(corpus, tmp_path_factory):
    """run_pretrain's main() launched as two ranks on one node (tests/dist_worker.py, which records
    what each rank read and its final weights) -> (directory: ckpt/, out/, logs/; launch's result)."""
    d = tmp_path_factory.mktemp('two_ranks')
    (d / 'out').mkdir()
    cmd = [sys.executable, '-m', 'paddle.distributed.launch', '--nproc_per_node', '2', '--log_dir',
           str(d / 'logs'), os.path.join(ROOT, 'tests', 'dist_worker.py')]
    cmd += pretrain_args(corpus, d / 'ckpt', *TWO_RANKS)
    proc = subprocess.run(cmd, capture_output=True, text=True, env=dict(ENV, ELMO_TEST_OUT=str(d / 'out')),
                          cwd=ROOT, timeout=300)
    return d, proc


def test_two_process_cpu_launch_reads_disjoint_data_and_ends_with_identical_weights(corpus, two_ranks):
    d, proc = two_ranks
    out = d / 'out'
    logs = ''.join(p.read_text() for p in (d / 'logs').glob('workerlog.*'))
    assert proc.returncode == 0, logs[-3000:]
    seen = [set(json.loads((out / f'seen.{r}.json').read_text())) for r in (0, 1)]
    assert seen[0] and seen[1] and not seen[0] & seen[1]
    files = [set((corpus / f'train.{i}.txt').read_text().splitlines()) for i in (0, 1)]
    assert any(seen[0] <= f for f in files) and any(seen[1] <= f for f in files)  # a shard each
    w0, w1 = load(out / 'weights.0.pdparams'), load(out / 'weights.1.pdparams')
    assert_same_weights(w0, w1)
    assert_same_weights(w0, load(d / 'ckpt' / 'final.pdparams'))
    assert 'step 8/8' in logs and (d / 'ckpt' / '4.pdopt').exists()


def test_killed_run_resumes_exactly_where_it_stopped(corpus, tmp_path, capfd):
    whole = pretrain_here(pretrain_args(corpus, tmp_path / 'whole', '--max_steps', '16', '--save_freq', '4'), capfd)
    assert whole.returncode == 0, whole.stderr[-2000:]
    killed_dir = tmp_path / 'killed'
    proc = subprocess.Popen([sys.executable, os.path.join(ROOT, 'run_pretrain.py')] +
                            pretrain_args(corpus, killed_dir, '--max_steps', '16', '--save_freq', '4'),
                            env=ENV, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while not (killed_dir / '8.pdparams').exists() and proc.poll() is None and time.time() < deadline:
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)  # somewhere after checkpoint 8, maybe mid-save of 12
    proc.wait()
    assert (killed_dir / '8.pdparams').exists() and not (killed_dir / 'final.pdparams').exists()
    resumed = pretrain_here(pretrain_args(corpus, killed_dir, '--max_steps', '16', '--save_freq', '4',
                                          '--init_from_ckpt', str(killed_dir)), capfd)  # its latest: 8, or 12
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert 'step 15/16' in resumed.stderr and 'step 5/16' not in resumed.stderr  # the log
    assert_same_weights(load(tmp_path / 'whole' / 'final.pdparams'), load(killed_dir / 'final.pdparams'))
    rows = (killed_dir / 'train_log.csv').read_text().splitlines()
    assert [r.split(',')[0] for r in rows[1:]] == ['5', '10', '15', '16']
    assert (killed_dir / 'train_curve.png').stat().st_size > 1000


def test_non_finite_loss_stops_with_a_clear_message(corpus, tmp_path, capfd):
    proc = pretrain_here(pretrain_args(corpus, tmp_path, '--max_steps', '30', '--save_freq', '2', '--lr', '1e30',
                                       '--max_grad_norm', '1e30'), capfd)
    assert proc.returncode == 1
    assert 'non-finite loss' in proc.stderr and 'Last good checkpoint' in proc.stderr
    assert 'Traceback' not in proc.stderr


def test_bad_arguments_fail_with_one_line(corpus, tmp_path):
    proc = run('run_pretrain.py', pretrain_args(corpus, tmp_path, '--init_from_ckpt', str(tmp_path / 'nope')))
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [f'error: --init_from_ckpt {tmp_path / "nope"}: {tmp_path / "nope"}'
                                                '.pdparams not found (give DIR/N, DIR/N.pdparams or a run directory)']
    proc = run('run_pretrain.py', ['--train_data_path', str(corpus / 'missing*'), '--vocab_file',
                                   str(corpus / 'vocab.txt'), '--save_dir', str(tmp_path)] + TINY_MODEL)
    assert proc.returncode == 2 and 'missing*' in proc.stderr and 'Traceback' not in proc.stderr


def test_eval_perplexity_of_a_uniform_model_is_the_vocabulary_size(corpus, tmp_path):
    from paddle_elmo.train.lm import LanguageModel
    vocab_size = len((corpus / 'vocab.txt').read_text().split())
    model = LanguageModel(tiny_config(), vocab_size)
    with paddle.no_grad():  # zero softmax: every word has probability 1 / V whatever the LSTM says
        model.softmax.W.set_value(np.zeros(model.softmax.W.shape, np.float32))
        model.softmax.b.set_value(np.zeros(model.softmax.b.shape, np.float32))
    (tmp_path / 'options.json').write_text(json.dumps(tiny_config().to_options()))
    paddle.save(model.state_dict(), str(tmp_path / 'u.pdparams'))
    args = ['--dev_data_path', str(corpus / 'heldout.txt'), '--vocab_file', str(corpus / 'vocab.txt'),
            '--init_from_ckpt', str(tmp_path / 'u'), '--batch_size', '3', '--output_json', str(tmp_path / 'r.json')]
    proc = run('run_eval.py', args)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads((tmp_path / 'r.json').read_text())
    lines = (corpus / 'heldout.txt').read_text().splitlines()
    assert result['n_tokens'] == sum(len(l.split()) + 1 for l in lines)  # every word and sentence end
    for key in ('forward_perplexity', 'backward_perplexity', 'perplexity'):
        assert result[key] == pytest.approx(vocab_size, rel=1e-5)


def test_eval_of_a_trained_model_is_deterministic_and_export_keeps_the_softmax(corpus, tmp_path, capfd):
    train = pretrain_here(pretrain_args(corpus, tmp_path / 'ck', '--max_steps', '20', '--save_freq', '100'), capfd)
    assert train.returncode == 0, train.stderr[-2000:]
    common = ['--dev_data_path', str(corpus / 'heldout.txt'), '--vocab_file', str(corpus / 'vocab.txt')]
    results = []
    for i, source in enumerate((['--init_from_ckpt', str(tmp_path / 'ck' / 'final')],
                                ['--init_from_ckpt', str(tmp_path / 'ck' / 'final')], 'float32', 'float16')):
        if source in ('float32', 'float16'):
            out = tmp_path / source
            # the export and the evals in this process (helpers.run_here); run_eval.py's own process:
            # test_eval_perplexity_of_a_uniform_model_is_the_vocabulary_size
            exp = run_here('export-weights', ['--init_from_ckpt', str(tmp_path / 'ck' / 'final'), '--output_dir',
                                                 str(out), '--softmax_dtype', source], capfd)
            assert exp.returncode == 0, exp.stderr
            with h5py.File(out / 'weights.hdf5', 'r') as f:
                assert f['softmax/W'].dtype == np.dtype(source) and f['softmax/b'].dtype == np.dtype(source)
                biLM = []
                f.visititems(lambda name, d: biLM.append(d.dtype) if hasattr(d, 'dtype') and 'softmax' not in name
                             else None)
                assert biLM and set(biLM) == {np.dtype('float32')}  # the biLM stays float32
            source = ['--options_file', str(out / 'options.json'), '--weight_file', str(out / 'weights.hdf5')]
        proc = run_here('run_eval.py', common + source + ['--output_json', str(tmp_path / f'{i}.json')], capfd)
        assert proc.returncode == 0, proc.stderr[-2000:]
        results.append(json.loads((tmp_path / f'{i}.json').read_text()))
    assert results[0]['perplexity'] == results[1]['perplexity']
    assert results[2]['perplexity'] == pytest.approx(results[0]['perplexity'], rel=1e-6)
    # float16 storage rounds W and b (relative 2^-11): the perplexity moves, but by far less than 1%.
    assert results[3]['perplexity'] != results[2]['perplexity']
    assert results[3]['perplexity'] == pytest.approx(results[2]['perplexity'], rel=2e-3)
    vocab_size = len((corpus / 'vocab.txt').read_text().split())
    assert math.isfinite(results[0]['perplexity']) and results[0]['perplexity'] < vocab_size
    # The whole data was evaluated, so the same losses come per character of the unsegmented text.
    lines = [line for line in (corpus / 'heldout.txt').read_text(encoding='utf-8').splitlines() if line.strip()]
    first = results[0]
    assert first['n_characters'] == sum(len(''.join(line.split())) + 1 for line in lines)
    mean_nats = 0.5 * (first['forward_loss'] + first['backward_loss']) * first['n_tokens']
    assert first['bits_per_character'] == pytest.approx(mean_nats / math.log(2) / first['n_characters'])


def test_max_minutes_stops_saves_a_checkpoint_that_resumes_exactly_and_exits_0(corpus, tmp_path, capfd):
    # With a decaying learning rate: its length is fixed when the run starts, and a resume keeps it.
    whole = pretrain_here(pretrain_args(corpus, tmp_path / 'whole', '--max_steps', '12', '--lr_decay', 'cosine'), capfd)
    assert whole.returncode == 0, whole.stderr[-2000:]
    slot = tmp_path / 'slot'
    stopped = pretrain_here(pretrain_args(corpus, slot, '--max_steps', '12', '--max_minutes', '0.0001',
                                          '--dev_data_path', str(corpus / 'heldout.txt'), '--lr_decay', 'cosine'), capfd)
    assert json.loads((slot / 'recipe.json').read_text())['lr_decay_steps'] == 12
    assert stopped.returncode == 0, stopped.stderr[-2000:]
    saved = [p.stem for p in slot.glob('*.pdparams')]
    assert len(saved) == 1 and saved[0] != 'final' and 1 <= int(saved[0]) < 12
    assert f'Resume with --init_from_ckpt {slot / saved[0]}' in stopped.stdout
    assert 'dev (' in stopped.stdout  # evaluated before exiting
    resumed = pretrain_here(pretrain_args(corpus, slot, '--max_steps', '12', '--init_from_ckpt', str(slot / saved[0])),
                            capfd)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert_same_weights(load(tmp_path / 'whole' / 'final.pdparams'), load(slot / 'final.pdparams'))


def test_a_unigram_softmax_bias_starts_a_new_run_and_a_resume_keeps_the_checkpoints(corpus, tmp_path, capfd):
    """--softmax_bias_init unigram: the bias starts at the training targets' log prior (so after two
    Adagrad steps of at most lr each, every row is within 2 x lr of it), and a resume that names the
    flag again does not start over from the prior: it ends as the uninterrupted run."""
    from paddle_elmo.train.sampled_softmax import unigram_log_prior
    from paddle_elmo.text.vocabulary import Vocabulary
    flags = ('--max_steps', '2', '--save_freq', '1', '--softmax_bias_init', 'unigram')
    whole = pretrain_here(pretrain_args(corpus, tmp_path / 'whole', *flags), capfd)
    assert whole.returncode == 0, whole.stderr[-2000:]
    assert 'softmax bias: log unigram shares of the training targets' in whole.stderr
    prior = unigram_log_prior(Vocabulary(str(corpus / 'vocab.txt')), str(corpus / 'train.*.txt'), progress=False)
    bias = load(tmp_path / 'whole' / 'final.pdparams')['softmax.b'][:, 0]
    assert np.abs(bias - prior).max() <= 2 * 0.2 + 1e-6 and np.abs(prior).min() > 2.0  # zero would be far
    stopped = pretrain_here(pretrain_args(corpus, tmp_path / 'slot', '--max_steps', '1', '--softmax_bias_init',
                                          'unigram'), capfd)
    assert stopped.returncode == 0, stopped.stderr[-2000:]
    resumed = pretrain_here(pretrain_args(corpus, tmp_path / 'slot', *flags, '--init_from_ckpt',
                                          str(tmp_path / 'slot' / 'final')), capfd)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert 'softmax bias:' not in resumed.stderr
    assert_same_weights(load(tmp_path / 'whole' / 'final.pdparams'), load(tmp_path / 'slot' / 'final.pdparams'))


def test_a_preset_reaches_the_model_and_an_explicit_flag_overrides_it(corpus, tmp_path, capfd):
    from paddle_elmo.cli.config_flags import given_settings, pretrain_parser
    from paddle_elmo.model.recipe import PRESETS
    base = ['--train_data_path', str(corpus / 'train.*.txt'), '--vocab_file', str(corpus / 'vocab.txt'),
            '--save_dir', str(tmp_path), '--max_steps', '1', '--log_freq', '1']
    proc = pretrain_here(base + ['--preset', 'budget', '--cell_dim', '64'], capfd)
    assert proc.returncode == 0, proc.stderr[-2000:]
    options = json.loads((tmp_path / 'options.json').read_text())
    budget = PRESETS['budget']
    assert options['lstm']['dim'] == 64  # explicit
    assert options['lstm']['projection_dim'] == budget['projection_dim']  # the rest from the preset
    assert options['char_cnn']['filters'] == budget['cnn_filters']
    assert options['char_cnn']['n_highway'] == budget['num_highways']
    recipe = json.loads((tmp_path / 'recipe.json').read_text())  # our recipe beside bilm-tf's keys
    assert (options['batch_size'], options['n_negative_samples_batch'], options['learning_rate'], recipe['optimizer']) == \
        (budget['batch_size'], budget['n_negative_samples'], budget['lr'], budget['optimizer'])
    assert recipe['preset'] == 'budget' and recipe['softmax_bias_init'] == 'unigram'
    assert 'softmax bias: log unigram shares of the training targets' in proc.stderr
    state = paddle.load(str(tmp_path / 'final.pdparams'))
    assert tuple(state['bilm.forward_stack.layers.0.W_P'].shape) == (64, budget['projection_dim'])
    from paddle_elmo.train.run_plan import from_preset
    for name in ('original', 'small'):  # bilm-tf's recipe is the default of both
        a = pretrain_parser().parse_args(['--preset', name])
        _, r = from_preset(a.preset, given_settings(a))
        assert (r.optimizer, r.lr, r.max_grad_norm, r.batch_size, r.unroll_steps, r.n_negative_samples,
                r.softmax_bias_init) == ('adagrad', 0.2, 10.0, 128, 20, 8192, 'zero')
    a = pretrain_parser().parse_args(['--train_data_path', 'x', '--vocab_file', 'v'])
    given = given_settings(a)
    m, r = from_preset('original', given)
    assert set(given) == {'train_data_path', 'vocab_file'} and r.preset == 'original' and m.cell_dim == 4096 and \
        m.projection_dim == 512


def test_resuming_without_preset_keeps_the_checkpoints_recipe(corpus, tmp_path, capfd):
    small = ['--cell_dim', '16', '--projection_dim', '8', '--cnn_filters', '[[1, 4], [2, 8]]', '--batch_size', '4',
             '--unroll_steps', '5', '--n_negative_samples', '10']
    base = ['--train_data_path', str(corpus / 'train.*.txt'), '--vocab_file', str(corpus / 'vocab.txt'),
            '--save_dir', str(tmp_path), '--max_steps', '6', '--save_freq', '3', '--log_freq', '3'] + small
    first = pretrain_here(base + ['--preset', 'budget', '--max_minutes', '0.0001'], capfd)
    assert first.returncode == 0, first.stderr[-2000:]
    step = next(p.stem for p in tmp_path.glob('*.pdparams'))
    resumed = pretrain_here(base + ['--init_from_ckpt', str(tmp_path / step)], capfd)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert 'preset budget, adam' in resumed.stderr
    recipe = json.loads((tmp_path / 'recipe.json').read_text())
    assert (recipe['preset'], recipe['optimizer'], recipe['reset_state_at_sentence_start']) == ('budget', 'adam', True)


def test_two_nodes_on_one_machine_train_as_one_node_with_two_ranks(corpus, two_ranks, tmp_path):
    """Two launch commands, one per "node", sharing a master on 127.0.0.1, one rank each: the run of
    two ranks on one node (the two_ranks fixture, the same flags)."""
    import socket
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        port = s.getsockname()[1]
    out, args = tmp_path / 'out', pretrain_args(corpus, tmp_path / 'nodes', *TWO_RANKS)
    out.mkdir()
    env = dict(ENV, ELMO_TEST_OUT=str(out))
    nodes = [subprocess.Popen([sys.executable, '-m', 'paddle.distributed.launch', '--master', f'127.0.0.1:{port}',
                               '--nnodes', '2', '--rank', str(node), '--nproc_per_node', '1', '--log_dir',
                               str(tmp_path / f'logs{node}'), os.path.join(ROOT, 'tests', 'dist_worker.py')] + args,
                              env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for node in (0, 1)]
    outputs = [node.communicate(timeout=300)[0] for node in nodes]
    logs = ''.join(p.read_text() for p in tmp_path.glob('logs*/workerlog.*'))
    assert [node.returncode for node in nodes] == [0, 0], (outputs[0] + outputs[1] + logs)[-4000:]
    seen = [set(json.loads((out / f'seen.{r}.json').read_text())) for r in (0, 1)]
    assert seen[0] and seen[1] and not seen[0] & seen[1]
    assert_same_weights(load(out / 'weights.0.pdparams'), load(out / 'weights.1.pdparams'))
    one_node, launched = two_ranks
    assert launched.returncode == 0, launched.stdout[-2000:]
    assert_same_weights(load(tmp_path / 'nodes' / 'final.pdparams'), load(one_node / 'ckpt' / 'final.pdparams'))


def test_the_installed_command_launches_several_processes_outside_the_checkout(corpus, tmp_path):
    command = os.path.join(os.path.dirname(sys.executable), 'paddle-elmo')
    if not os.path.exists(command):
        pytest.skip('the package is not installed in this environment (make setup installs it)')
    env = {k: v for k, v in ENV.items() if k != 'PYTHONPATH'}
    proc = subprocess.run([command, 'pretrain', '--nproc_per_node', '2', *pretrain_args(corpus, tmp_path / 'ckpt',
                                                                                           '--max_steps', '4')],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    logs = ''.join(p.read_text() for p in (tmp_path / 'ckpt' / 'launch_logs').glob('workerlog.*'))
    assert proc.returncode == 0, (proc.stderr + logs)[-3000:]
    assert sorted(p.name for p in (tmp_path / 'ckpt' / 'launch_logs').glob('workerlog.*')) == ['workerlog.0',
                                                                                               'workerlog.1']
    assert '2 process(es)' in logs and (tmp_path / 'ckpt' / 'final.pdparams').exists()
    assert sorted(os.listdir(tmp_path)) == ['ckpt']  # nothing written where it was not asked
