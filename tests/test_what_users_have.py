"""Nothing a user has is lost: a pretraining run owns its directory (refused over another run, locked while
it runs, for real in two processes; a killed run blocks nothing), a new run without --save_dir gets its own,
no command writes over one of its inputs, and a writer killed mid-write leaves a temporary file that the
next write of the same output removes."""
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from conftest import ROOT, SHARED, one_line_error, require  # corpus: the fixture in conftest
from helpers import ENV, command_line, main_exit, pretrain_args, pretrain_here, run, run_here

# The refusals run each in a process of its own, as a user meets them; the runs that train (what they
# write, not how their process ends) run in this process (helpers.pretrain_here, run_here).


def snapshot(directory):
    """{relative path: sha256} of every file under `directory` (hidden ones too)."""
    out = {}
    for root, _, files in os.walk(directory):
        for name in files:
            path = os.path.join(root, name)
            with open(path, 'rb') as f:
                out[os.path.relpath(path, directory)] = hashlib.sha256(f.read()).hexdigest()
    return out


@pytest.fixture(scope='module')
def finished(corpus, tmp_path_factory):
    """A finished 6-step run (checkpoints 3 and final) -> its directory."""
    d = tmp_path_factory.mktemp('finished') / 'run1'
    assert main_exit(['pretrain', *pretrain_args(corpus, d, '--max_steps', '6', '--save_freq', '3'), '--cpu_threads',
                      '1', '--quiet']) == 0
    return d


def copy_run(src, dst):
    import shutil
    shutil.copytree(src, dst)
    return dst


def test_a_new_run_into_a_finished_runs_directory_is_refused_and_changes_nothing(corpus, finished, tmp_path):
    d = copy_run(finished, tmp_path / 'run1')
    before = snapshot(d)
    line = one_line_error(run('pretrain', pretrain_args(corpus, d, '--max_steps', '6', '--cell_dim', '12')))
    assert f'--save_dir {d}: holds another run (3.pdopt, 3.pdparams, final.pdopt, final.pdparams and ' in line
    assert '--init_from_ckpt' in line and '--overwrite_save_dir' in line
    assert snapshot(d) == before
    # the same through the launcher, before it writes its logs there
    line = one_line_error(run('pretrain', pretrain_args(corpus, d, '--nproc_per_node', '2', '--device', 'cpu')))
    assert 'holds another run' in line and snapshot(d) == before and not (d / 'launch_logs').exists()


def test_overwrite_save_dir_removes_the_old_runs_files_before_the_new_run(corpus, finished, tmp_path, capfd):
    d = copy_run(finished, tmp_path / 'run1')
    (d / 'notes.txt').write_text('mine')  # not a run's file: kept
    proc = pretrain_here(pretrain_args(corpus, d, '--max_steps', '2', '--save_freq', '100', '--overwrite_save_dir'), capfd)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert 'removed the' in proc.stderr
    names = {p.name for p in d.iterdir()}
    assert '3.pdparams' not in names and 'final.pdparams' in names and 'notes.txt' in names
    assert json.loads((d / 'recipe.json').read_text())['max_steps'] == 2


def test_resuming_the_latest_checkpoint_by_directory_or_suffix_writes_on_in_the_run(corpus, finished, tmp_path, capfd):
    d = copy_run(finished, tmp_path / 'run1')
    proc = pretrain_here(['--init_from_ckpt', str(d), '--max_steps', '8', '--log_freq', '1'], capfd)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert f'--init_from_ckpt {d}: its latest checkpoint, {d / "final"}' in proc.stderr
    assert 'step 7/8' in proc.stderr and 'step 6/8' not in proc.stderr
    proc = pretrain_here(['--init_from_ckpt', str(d / 'final.pdparams'), '--max_steps', '9', '--log_freq', '1'], capfd)
    assert proc.returncode == 0 and 'step 9/9' in proc.stderr, proc.stderr[-2000:]
    proc = run_here('eval', ['--init_from_ckpt', str(d / 'final.pdparams'), '--dev_data_path',
                             str(corpus / 'heldout.txt')], capfd)
    assert proc.returncode == 0 and 'perplexity' in proc.stdout, proc.stderr[-2000:]


def test_resuming_an_earlier_checkpoint_in_place_is_refused_and_branches_elsewhere(corpus, finished, tmp_path, capfd):
    d = copy_run(finished, tmp_path / 'run1')
    before = snapshot(d)
    line = one_line_error(run('pretrain', ['--init_from_ckpt', str(d / '3')]))
    assert 'holds later checkpoints of this run (final)' in line and snapshot(d) == before
    branch = tmp_path / 'branch'
    proc = pretrain_here(['--init_from_ckpt', str(d / '3'), '--save_dir', str(branch), '--max_steps', '6'], capfd)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (branch / 'final.pdparams').exists() and (branch / 'options.json').exists() and snapshot(d) == before


def test_a_run_without_save_dir_gets_a_new_directory_of_its_own(corpus, tmp_path, capfd):
    paths = []
    for _ in range(2):
        proc = pretrain_here([a for a in pretrain_args(corpus, 'unused', '--max_steps', '1')
                              if a not in ('--save_dir', 'unused')], capfd, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr[-2000:]
        [made] = re.findall(r'run directory: (checkpoints/\S+) \(new\)', proc.stderr)
        paths.append(made)
        assert (tmp_path / made / 'final.pdparams').exists()
    assert paths[0] != paths[1] and os.path.dirname(paths[0]) == 'checkpoints'


def wait_for(condition, proc, seconds=120):
    deadline = time.time() + seconds
    while not condition() and proc.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    assert condition(), f'not reached (exit code {proc.poll()})'


def test_a_second_run_in_a_running_runs_directory_is_refused_naming_it_and_a_killed_run_blocks_nothing(
        corpus, tmp_path, capfd):
    d = tmp_path / 'run'
    first = subprocess.Popen(command_line('pretrain', *pretrain_args(corpus, d, '--max_steps', '100000',
                                                                     '--save_freq', '100000')),
                             env=ENV, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: (d / 'train_log.csv').exists() or (d / 'options.json').exists(), first)
        for args in (pretrain_args(corpus, d, '--max_steps', '2'),  # a new run
                     pretrain_args(corpus, d, '--max_steps', '2', '--overwrite_save_dir')):  # even told to overwrite
            line = one_line_error(run('pretrain', args))
            assert f'--save_dir {d}: in use by another run (pid {first.pid} on ' in line
        assert first.poll() is None  # the first run goes on
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()
    before = snapshot(d)
    line = one_line_error(run('pretrain', pretrain_args(corpus, d, '--max_steps', '2')))
    assert 'holds another run' in line and snapshot(d) == before  # the lock died with it; the run's files stay
    proc = pretrain_here(pretrain_args(corpus, d, '--max_steps', '2', '--overwrite_save_dir'), capfd)
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_a_model_or_an_input_in_save_dir_is_never_written_over(corpus, fixture_dir, tmp_path, capfd):
    import shutil
    model = tmp_path / 'model'
    model.mkdir()
    shutil.copy(os.path.join(fixture_dir, 'options.json'), model / 'options.json')
    shutil.copy(os.path.join(fixture_dir, 'lm_weights.hdf5'), model / 'weights.hdf5')
    before = snapshot(model)
    line = one_line_error(run('pretrain', pretrain_args(corpus, model, '--max_steps', '1', '--overwrite_save_dir')))
    assert 'holds a model (options.json + weights.hdf5), not a run' in line and snapshot(model) == before
    efml = shutil.copytree(require(os.path.join(SHARED, 'fixtures', 'efml-tiny', 'model')), tmp_path / 'efml')
    before = snapshot(efml)
    line = one_line_error(run('pretrain', pretrain_args(corpus, efml, '--max_steps', '1', '--overwrite_save_dir')))
    assert 'holds an ELMoForManyLangs model, not a run' in line and snapshot(efml) == before
    d = tmp_path / 'run'
    d.mkdir()
    shutil.copy(corpus / 'heldout.txt', d / 'train_log.csv')  # an input under a name the run writes
    line = one_line_error(run('pretrain', pretrain_args(corpus, d, '--max_steps', '1', '--dev_data_path',
                                                        str(d / 'train_log.csv'))))
    assert f'--dev_data_path {d / "train_log.csv"}: is in --save_dir {d} under a name the run writes' in line
    # README's layout: the vocabulary beside its word model's run, as vocab.txt, kept as it is (also when the
    # directory's earlier run is overwritten)
    shutil.copy(corpus / 'vocab.txt', d / 'vocab.txt')
    before = (d / 'vocab.txt').read_bytes()
    args = pretrain_args(corpus, d / 'zh', '--max_steps', '1', '--token_input', 'word')
    args[args.index('--vocab_file') + 1] = str(d / 'zh' / 'vocab.txt')
    (d / 'zh').mkdir()
    shutil.copy(d / 'vocab.txt', d / 'zh' / 'vocab.txt')
    for extra in ([], ['--overwrite_save_dir']):
        proc = pretrain_here(args + extra, capfd)
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert (d / 'zh' / 'vocab.txt').read_bytes() == before and (d / 'zh' / 'final.pdparams').exists()


@pytest.fixture(scope='module')
def sentences(tmp_path_factory):
    d = tmp_path_factory.mktemp('inputs')
    (d / 'in.txt').write_text('The cat sat .\nA dog ran .\n', encoding='utf-8')
    os.symlink(d / 'in.txt', d / 'link.txt')
    os.link(d / 'in.txt', d / 'hard.txt')
    return d


@pytest.mark.parametrize('output', ['in.txt', 'link.txt', 'hard.txt', './in.txt'])
def test_embed_never_writes_over_its_input_by_any_name(sentences, output):
    before = (sentences / 'in.txt').read_bytes()
    line = one_line_error(run('embed', ['in.txt', output], cwd=sentences))
    assert line.startswith(f'error: output_file {output}: is the input input_file in.txt;')
    assert (sentences / 'in.txt').read_bytes() == before


def test_every_command_refuses_an_output_that_is_one_of_its_inputs(corpus, finished, tmp_path):
    run_dir = copy_run(finished, tmp_path / 'run1')
    before = snapshot(run_dir), (corpus / 'heldout.txt').read_bytes(), (corpus / 'train.0.txt').read_bytes()
    cases = [
        ('build-vocab', ['--train_data_path', str(corpus / 'train.*.txt'), '--output_file', str(corpus / 'train.0.txt')],
         '--output_file'),
        ('build-vocab', ['--train_data_path', str(corpus / 'train.*.txt'), '--output_file', str(tmp_path / 'v.txt'),
                         '--output_corpus', str(corpus / 'train.1.txt')], '--output_corpus'),
        ('eval', ['--init_from_ckpt', str(run_dir / 'final'), '--dev_data_path', str(corpus / 'heldout.txt'),
                  '--output_json', str(corpus / 'heldout.txt')], '--output_json'),
        ('eval', ['--model', str(run_dir), '--dev_data_path', str(corpus / 'heldout.txt'),
                  '--output_json', str(run_dir / 'options.json')], '--output_json'),
        ('export-weights', ['--model', str(run_dir), '--output_dir', str(run_dir)], '--output_dir'),
        ('export-inference', ['--model', str(run_dir / 'final'), '--output_dir', str(run_dir)], '--output_dir'),
        ('dump', ['--model', str(run_dir), '--output_file', str(run_dir / 'final.pdparams')], '--output_file'),
        ('predict', ['--model', str(run_dir), '--prefix_file', str(corpus / 'heldout.txt'),
                     '--output_json', str(corpus / 'heldout.txt')], '--output_json'),
    ]
    line = one_line_error(run('build-vocab', ['--train_data_path', str(corpus / 'train.*.txt'), '--output_file',
                                              str(tmp_path / 'v.txt'), '--output_corpus', str(tmp_path / 'v.txt')]))
    assert line == f'error: --output_corpus {tmp_path / "v.txt"}: the same file as --output_file; give each output ' \
                   'its own file'
    import shutil
    efml = shutil.copytree(require(os.path.join(SHARED, 'fixtures', 'efml-tiny', 'model')), tmp_path / 'efml')
    cases += [('export-weights', ['--model', str(efml), '--output_dir', str(efml)], '--output_dir'),
              ('eval', ['--model', str(efml), '--dev_data_path', str(corpus / 'heldout.txt'), '--vocab_file',
                        str(corpus / 'vocab.txt'), '--output_json', str(efml / 'config.json')], '--output_json')]
    before += (snapshot(efml),)
    for command, args, flag in cases:
        line = one_line_error(run(command, args))
        assert line.startswith(f'error: {flag} ') and 'the input' in line and 'never writes over' in line, line
    assert (snapshot(run_dir), (corpus / 'heldout.txt').read_bytes(), (corpus / 'train.0.txt').read_bytes(),
            snapshot(efml)) == before


def test_finetune_and_word2vec_refuse_to_write_results_over_their_data(rt_slice):
    before = snapshot(rt_slice)
    for command, model in (('finetune', []), ('word2vec', ['--train_data_path', str(rt_slice / 'rt-polarity.pos')])):
        line = one_line_error(run(command, ['--data_dir', str(rt_slice), '--output_json',
                                            str(rt_slice / 'rt-polarity.neg'), *model]))
        assert f'--output_json {rt_slice / "rt-polarity.neg"}: is the input --data_dir' in line
    assert snapshot(rt_slice) == before


def test_an_earlier_output_beside_a_model_is_no_input(corpus, finished, tmp_path, capfd):
    run_dir = copy_run(finished, tmp_path / 'run1')
    out = run_dir / 'ppl.json'
    for _ in range(2):  # the second writes over the first's result, which is no input
        proc = run_here('eval', ['--model', str(run_dir), '--dev_data_path', str(corpus / 'heldout.txt'),
                                 '--output_json', str(out)], capfd)
        assert proc.returncode == 0, proc.stderr[-2000:]


def test_a_killed_writers_temporary_file_is_removed_when_the_output_is_written_again(tmp_path):
    lines = ''.join(f'Sentence number {i} is about the cat and the dog .\n' for i in range(20000))
    (tmp_path / 'big.txt').write_text(lines, encoding='utf-8')
    (tmp_path / 'small.txt').write_text('One sentence .\n', encoding='utf-8')
    proc = subprocess.Popen(command_line('embed', 'big.txt', 'out.hdf5', '--quiet'), env=ENV, cwd=tmp_path,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    temps = lambda: [p for p in tmp_path.iterdir() if p.name.startswith('.out.') and p.name.endswith('.tmp.hdf5')]
    try:
        wait_for(lambda: temps() and temps()[0].stat().st_size > 0, proc)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    [stale] = temps()
    assert f'.out.{proc.pid}.' in stale.name and not (tmp_path / 'out.hdf5').exists()
    # a live writer's temporary file is not touched: one named for this (running) test process
    live = tmp_path / f'.out.{os.getpid()}.abc.tmp.hdf5'
    live.write_bytes(b'')
    done = run('embed', ['small.txt', 'out.hdf5', '--quiet'], cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert not stale.exists() and live.exists() and (tmp_path / 'out.hdf5').exists()


def test_the_temporary_files_of_a_writer_that_runs_are_kept(tmp_path):
    from paddle_elmo.fileio import remove_stale_temps, temp_beside
    ended = subprocess.run([sys.executable, '-c', 'import os; print(os.getpid())'], capture_output=True, text=True)
    dead = tmp_path / f'.out.{int(ended.stdout)}.x.tmp.hdf5'
    dead.write_bytes(b'x')
    (tmp_path / '.out.notapid.x.tmp.hdf5').write_bytes(b'x')  # not ours: kept
    (tmp_path / f'.other.{int(ended.stdout)}.x.tmp.hdf5').write_bytes(b'x')  # another output's: kept
    made = temp_beside(str(tmp_path), 'out', '.tmp.hdf5')
    assert not dead.exists() and os.path.exists(made)
    assert {p.name for p in tmp_path.iterdir()} == {os.path.basename(made), '.out.notapid.x.tmp.hdf5',
                                                    f'.other.{int(ended.stdout)}.x.tmp.hdf5'}
    remove_stale_temps(str(tmp_path), 'out', '.tmp.hdf5')
    assert os.path.exists(made)


def test_every_flag_that_names_a_file_has_a_role_in_the_check():
    from paddle_elmo.cli import command_parsers
    from paddle_elmo.cli import outputs_apart as roles
    known = set(roles.INPUT_FILES + roles.INPUT_GLOBS + roles.INPUT_DIRS + roles.INPUT_MODELS + roles.OUTPUT_FILES +
                roles.OUTPUT_DIRS + roles.OWN_RULES)
    not_paths = {'pos_file', 'neg_file',  # names inside --data_dir (INPUT_DIRS reads them)
                 'cache_dir',  # finetune writes a new subdirectory in it, never an existing file
                 'direction', 'from_weights_lr_scale', 'max_vectors', 'overwrite_save_dir'}
    path_like = re.compile(r'file|dir|path|model|ckpt|weights|vectors|corpus|json')
    named = {action.dest for p in command_parsers().values() for action in p._actions
             if path_like.search(action.dest)} - not_paths
    assert named - known == set(), 'give these flags a role in cli/outputs_apart.py'

