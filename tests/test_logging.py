"""Logging as Python libraries do: the library logs under the `paddle_elmo` logger and never prints
(silenced as any library is), and the commands print results on stdout and log on stderr, with
--quiet (warnings and errors only, no bars) and --verbose (debug lines too)."""
import ast
import logging
import os
import subprocess
import sys

import pytest

from conftest import FIXTURE, ROOT, require
from helpers import ENV, pretrain_args, run

PACKAGE = os.path.join(ROOT, 'paddle_elmo')
BUNDLED_NOTE = 'no model given: using the bundled model in '


def library_files():
    """The library's modules: paddle_elmo/*.py, not the commands (paddle_elmo/cli)."""
    return sorted(os.path.join(PACKAGE, f) for f in os.listdir(PACKAGE) if f.endswith('.py'))


def test_the_library_never_prints_and_logs_under_its_modules_names():
    for path in library_files():
        with open(path, encoding='utf-8') as f:
            tree = ast.parse(f.read())
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            assert not (isinstance(func, ast.Name) and func.id == 'print'), f'{path}:{node.lineno} prints'
            writes = (isinstance(func, ast.Attribute) and func.attr == 'write' and isinstance(func.value, ast.Attribute)
                      and func.value.attr in ('stdout', 'stderr'))
            assert not writes, f'{path}:{node.lineno} writes to sys.{func.value.attr}'
            if isinstance(func, ast.Attribute) and func.attr == 'getLogger' and node.args:
                name = node.args[0]
                # its own modules' loggers (__name__), or a third party's it quiets (gensim)
                assert (isinstance(name, ast.Name) or isinstance(name, ast.Constant) and
                        name.value.startswith('gensim')), f'{path}:{node.lineno} logs under {ast.unparse(name)}'


def test_the_package_gives_its_logger_a_null_handler_and_sets_no_level():
    logger = logging.getLogger('paddle_elmo')
    assert any(isinstance(h, logging.NullHandler) for h in logger.handlers)


# A program of a user's: logging configured first (as an application does), then library calls:
# a biLM from the fixture's files, the bundled model (a warning says so), a file embedded with the
# default progress=True. LEVEL: the paddle_elmo logger's level, or None to leave it unset.
LIBRARY_CALLS = '''
import logging, sys
logging.basicConfig(format='%(levelname)s:%(name)s:%(message)s', stream=sys.stderr)
if {level!r}:
    logging.getLogger('paddle_elmo').setLevel({level!r})
from paddle_elmo import ELMoEmbedder, resolve_model
resolve_model({fixture!r} + '/options.json', {fixture!r} + '/lm_weights.hdf5').load()
ELMoEmbedder().embed_file({src!r}, {dst!r})
'''


def library_run(tmp_path, level):
    require(FIXTURE)
    src = tmp_path / 'in.txt'
    src.write_text('Hello world .\n\nSecond one .\n', encoding='utf-8')
    code = LIBRARY_CALLS.format(level=level, fixture=FIXTURE, src=str(src), dst=str(tmp_path / 'out.hdf5'))
    proc = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, cwd=tmp_path,
                          env=dict(ENV, PYTHONPATH=ROOT), timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def test_a_library_call_with_the_logger_at_warning_writes_nothing_but_its_warnings(tmp_path):
    proc = library_run(tmp_path, 'WARNING')
    assert proc.stdout == ''
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f'WARNING:paddle_elmo.files.model_io:{BUNDLED_NOTE}'), proc.stderr
    assert (tmp_path / 'out.hdf5').exists()


def test_a_library_call_with_the_logger_unset_shows_its_progress_bar_on_stderr(tmp_path):
    proc = library_run(tmp_path, None)
    assert proc.stdout == ''
    assert f'WARNING:paddle_elmo.files.model_io:{BUNDLED_NOTE}' in proc.stderr
    assert 'embedding: 100%' in proc.stderr  # embed_file's tqdm bar: the switch above is the logger's level


def test_progress_bars_follow_the_callers_switch_and_the_loggers_level():
    from paddle_elmo.logs import show_progress
    top, module = logging.getLogger('paddle_elmo'), logging.getLogger('paddle_elmo.use.embedder')
    saved = top.level, module.level
    try:
        top.setLevel(logging.NOTSET)
        module.setLevel(logging.NOTSET)
        assert show_progress(True, module) and not show_progress(False, module)  # unset: as before
        top.setLevel(logging.WARNING)
        assert not show_progress(True, module) and not show_progress(True, 'paddle_elmo.text.corpus')
        module.setLevel(logging.INFO)  # the nearest level decides
        assert show_progress(True, module) and not show_progress(True, 'paddle_elmo.text.corpus')
        top.setLevel(logging.DEBUG)
        assert show_progress(True, 'paddle_elmo.text.corpus')
    finally:
        top.setLevel(saved[0])
        module.setLevel(saved[1])


# ---- the commands ------------------------------------------------------------------------------------

def command(log_flags):
    """A command's main(): parses log_flags, logs one line per level under paddle_elmo, prints its result."""
    from paddle_elmo.cli.arguments import parser
    log = logging.getLogger('paddle_elmo.some_module')

    def main():
        parser('a command').parse_args(log_flags)
        log.debug('what was loaded from where')
        log.info('step 1/2')
        log.warning('a note that matters')
        log.error('a problem')
        print('the result')
    return main


@pytest.mark.parametrize('flags, rank, expected', [
    ([], None, ['step 1/2', 'warning: a note that matters', 'error: a problem']),
    (['--quiet'], None, ['warning: a note that matters', 'error: a problem']),
    (['--verbose'], None, ['debug: what was loaded from where', 'step 1/2', 'warning: a note that matters',
                           'error: a problem']),
    ([], '1', ['warning: a note that matters', 'error: a problem']),  # under a launch, rank 0 alone logs INFO
    ([], '0', ['step 1/2', 'warning: a note that matters', 'error: a problem']),
])
def test_run_logs_on_stderr_by_the_flags_and_leaves_the_logger_as_it_was(capsys, monkeypatch, flags, rank, expected):
    from paddle_elmo.cli.runner import run
    monkeypatch.delenv('PADDLE_TRAINER_ID', raising=False)
    if rank is not None:
        monkeypatch.setenv('PADDLE_TRAINER_ID', rank)
    logger = logging.getLogger('paddle_elmo')
    before = logger.level, logger.propagate, list(logger.handlers)
    with pytest.raises(SystemExit) as stop:
        run(command(flags))
    assert stop.value.code == 0
    out, err = capsys.readouterr()
    assert out == 'the result\n' and err.splitlines() == expected
    assert (logger.level, logger.propagate, list(logger.handlers)) == before


def test_parsing_the_flags_outside_a_command_changes_no_logging_setting():
    from paddle_elmo.cli.arguments import parser
    from paddle_elmo.cli.config_flags import pretrain_parser
    logger = logging.getLogger('paddle_elmo')
    before = logger.level
    assert parser('x').parse_args(['--verbose']).verbose and logger.level == before
    assert pretrain_parser().parse_args(['--quiet']).quiet and logger.level == before


def test_quiet_and_verbose_together_are_a_one_line_error(tmp_path):
    from conftest import one_line_error
    line = one_line_error(run('embed', [str(tmp_path / 'in.txt'), str(tmp_path / 'out.hdf5'), '--quiet',
                                               '--verbose']))
    assert 'argument --verbose: not allowed with argument --quiet' in line


def test_embed_prints_its_result_the_log_is_on_stderr_and_quiet_leaves_the_warnings_only(tmp_path):
    src = tmp_path / 'in.txt'
    src.write_text('Hello world .\n\nSecond one .\n', encoding='utf-8')
    out = tmp_path / 'out.hdf5'
    result = f'wrote 3 sentences to {out}\n'
    talkative = run('embed', [str(src), str(out)])
    assert talkative.returncode == 0, talkative.stderr[-3000:]
    assert talkative.stdout == result
    assert 'CPU: 1 thread (OMP_NUM_THREADS)' in talkative.stderr and 'embedding: 100%' in talkative.stderr
    assert f'warning: {BUNDLED_NOTE}' in talkative.stderr
    quiet = run('embed', [str(src), str(out), '--quiet'])
    assert quiet.returncode == 0, quiet.stderr[-3000:]
    assert quiet.stdout == result
    lines = quiet.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f'warning: {BUNDLED_NOTE}'), quiet.stderr  # no bar, no CPU line


def test_verbose_shows_debug_lines(tmp_path):
    require(FIXTURE)
    src = tmp_path / 'in.txt'
    src.write_text('Hello world .\n', encoding='utf-8')
    options, weights = os.path.join(FIXTURE, 'options.json'), os.path.join(FIXTURE, 'lm_weights.hdf5')
    proc = run('embed', [str(src), str(tmp_path / 'out.hdf5'), '--options_file', options, '--weight_file',
                                weights, '--verbose'])
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout == f'wrote 1 sentences to {tmp_path / "out.hdf5"}\n'
    assert f'debug: biLM from {options} and {weights}' in proc.stderr.splitlines()
    assert 'CPU: 1 thread' in proc.stderr  # the INFO lines too


def test_pretrain_prints_where_it_saved_and_logs_its_steps_on_stderr(corpus, tmp_path):
    talkative = run('run_pretrain.py', pretrain_args(corpus, tmp_path / 'a', '--max_steps', '6', '--dev_data_path',
                                                     str(corpus / 'heldout.txt')))
    assert talkative.returncode == 0, talkative.stderr[-3000:]
    out = talkative.stdout.splitlines()
    assert len(out) == 2 and out[0].startswith('dev (') and out[1] == f'saved {tmp_path / "a" / "final"}.pdparams ' \
                                                                      f'after 6 steps', talkative.stdout
    err = talkative.stderr.splitlines()
    assert [line.split(' |')[0] for line in err if line.startswith('step ')] == ['step 5/6', 'step 6/6']
    assert any(line.startswith('preset original, adagrad lr 0.2: 1 process(es), 6 steps') for line in err)
    quiet = run('run_pretrain.py', pretrain_args(corpus, tmp_path / 'b', '--max_steps', '6', '--quiet'))
    assert quiet.returncode == 0, quiet.stderr[-3000:]
    assert quiet.stdout == f'saved {tmp_path / "b" / "final"}.pdparams after 6 steps\n' and quiet.stderr == ''


def test_a_setting_without_effect_is_a_warning_even_when_quiet(corpus, tmp_path):
    proc = run('run_pretrain.py', pretrain_args(corpus, tmp_path, '--max_steps', '1', '--n_negative_samples', '50',
                                                '--quiet'))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stderr.splitlines() == ["warning: --n_negative_samples 50 >= the vocabulary's 26 tokens: every step "
                                        'uses the full softmax']


def test_word2vec_quiet_prints_the_table_and_logs_no_epoch(rt_slice, tmp_path):
    corpus = tmp_path / 'corpus.txt'
    corpus.write_text((rt_slice / 'rt-polarity.pos').read_text(encoding='utf-8') * 3, encoding='utf-8')
    common = ['--data_dir', str(rt_slice), '--train_data_path', str(corpus), '--w2v_dim', '8', '--min_count',
              '1', '--w2v_epochs', '1', '--folds', '2', '--epochs', '2', '--hidden_dim', '0']
    quiet = run('word2vec_base.py', common + ['--quiet'])
    assert quiet.returncode == 0, quiet.stderr[-3000:]
    assert 'accuracy' in quiet.stdout and quiet.stderr == ''
    talkative = run('word2vec_base.py', common)
    assert talkative.returncode == 0, talkative.stderr[-3000:]
    assert 'accuracy' in talkative.stdout
    for said in ('read ', 'rt-polarity.pos: 100 sentences (utf-8) split by moses', 'trained word2vec on 1 file(s)',
                 'vectors: ', 'fold 1/2 epoch 1: train loss', 'fold 2/2: test accuracy'):
        assert said in talkative.stderr, talkative.stderr
