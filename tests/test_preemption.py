"""Pre-emption: SIGTERM during pretraining saves at a step boundary, exits cleanly, and resuming gives
the weights of a run never interrupted (one process, and two under paddle.distributed.launch); a
failed save leaves the previous checkpoint intact."""
import errno
import os
import signal
import subprocess
import sys
import time

import paddle
import pytest

from conftest import ROOT
from helpers import ENV, assert_same_weights, load, pretrain_args, pretrain_here

STEPS = '120'  # long enough to be signalled mid-run, short enough for the suite


def wait_for(predicate, proc, timeout=180):
    deadline = time.time() + timeout
    while not predicate():
        assert proc.poll() is None, 'the run ended before it could be signalled'
        assert time.time() < deadline, 'timed out waiting for the run'
        time.sleep(0.05)


def numbered_checkpoints(directory):
    return sorted(p.stem for p in directory.glob('*.pdparams') if p.stem.isdigit())


def test_sigterm_saves_at_a_step_boundary_and_the_resumed_run_matches_an_uninterrupted_one(corpus, tmp_path, capfd):
    # The signalled run in a process of its own; the uninterrupted run and the resume in this one
    # (helpers.pretrain_here, on one thread as the child): their weights are what is compared.
    whole = pretrain_here(pretrain_args(corpus, tmp_path / 'whole', '--max_steps', STEPS), capfd)
    assert whole.returncode == 0, whole.stderr[-2000:]
    cut = tmp_path / 'cut'
    proc = subprocess.Popen([sys.executable, os.path.join(ROOT, 'run_pretrain.py')] +
                            pretrain_args(corpus, cut, '--max_steps', STEPS, '--log_freq', '1'),
                            env=ENV, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for(lambda: (cut / 'train_log.csv').exists(), proc)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err[-2000:]
    saved = numbered_checkpoints(cut)
    assert len(saved) == 1 and 1 <= int(saved[0]) < int(STEPS) and not (cut / 'final.pdparams').exists()
    assert 'SIGTERM: stopping after this step' in err
    assert f'stopped by SIGTERM at step {saved[0]}/{STEPS}' in out
    assert f'Resume with --init_from_ckpt {cut / saved[0]}' in out
    assert not [p for p in cut.iterdir() if '.tmp' in p.name]
    resumed = pretrain_here(pretrain_args(corpus, cut, '--max_steps', STEPS, '--init_from_ckpt', str(cut / saved[0])),
                            capfd)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert_same_weights(load(tmp_path / 'whole' / 'final.pdparams'), load(cut / 'final.pdparams'))


def launch(corpus, save_dir, logs, *extra):
    cmd = [sys.executable, '-m', 'paddle.distributed.launch', '--nproc_per_node', '2', '--log_dir', str(logs),
           os.path.join(ROOT, 'run_pretrain.py')] + pretrain_args(corpus, save_dir, '--max_steps', STEPS, *extra)
    return subprocess.Popen(cmd, env=ENV, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def test_sigterm_to_the_launcher_stops_both_ranks_at_one_step_and_resumes_exactly(corpus, tmp_path):
    whole = launch(corpus, tmp_path / 'whole', tmp_path / 'logs-whole')
    out, _ = whole.communicate(timeout=300)
    assert whole.returncode == 0, out[-3000:]
    cut = tmp_path / 'cut'
    proc = launch(corpus, cut, tmp_path / 'logs-cut', '--log_freq', '1')
    log0 = tmp_path / 'logs-cut' / 'workerlog.0'
    wait_for(lambda: log0.exists() and 'step 2/' in log0.read_text(), proc)
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=120)
    logs = [(tmp_path / 'logs-cut' / f'workerlog.{r}').read_text() for r in (0, 1)]
    saved = numbered_checkpoints(cut)
    assert len(saved) == 1 and not (cut / 'final.pdparams').exists(), logs[0][-3000:]
    assert f'stopped by SIGTERM at step {saved[0]}/{STEPS}' in logs[0]
    resumed = launch(corpus, cut, tmp_path / 'logs-resumed', '--init_from_ckpt', str(cut / saved[0]))
    out, _ = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, out[-3000:]
    assert_same_weights(load(tmp_path / 'whole' / 'final.pdparams'), load(cut / 'final.pdparams'))


def test_a_failed_save_leaves_the_previous_checkpoint_intact(tmp_path, monkeypatch):
    from paddle_elmo.files import checkpoints
    from conftest import tiny_config
    from paddle_elmo.train.lm import LanguageModel
    from paddle_elmo.train.optimizers import make_optimizer
    model = LanguageModel(tiny_config(), 10, 4)
    optimizer = make_optimizer(model, 'adagrad', 0.2, 10.0, 0, 1)
    prefix = str(tmp_path / '5')
    checkpoints.save_training_checkpoint(prefix, model, optimizer, {'step': 5})
    before = {name: (tmp_path / name).read_bytes() for name in ('5.pdparams', '5.pdopt')}
    real_save, calls = paddle.save, []

    def disk_full_on_the_second_file(obj, path, *args, **kwargs):
        calls.append(path)
        if len(calls) == 2:
            raise OSError(errno.ENOSPC, 'No space left on device')
        return real_save(obj, path, *args, **kwargs)

    monkeypatch.setattr(paddle, 'save', disk_full_on_the_second_file)
    with paddle.no_grad():
        model.softmax.W.set_value(model.softmax.W * 2)
    with pytest.raises(OSError):
        checkpoints.save_training_checkpoint(prefix, model, optimizer, {'step': 5})
    assert {name: (tmp_path / name).read_bytes() for name in before} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ['5.pdopt', '5.pdparams']  # no temp files left
