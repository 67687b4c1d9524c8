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
from helpers import ENV, pretrain_args, pretrain_here, run, run_here

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


def progress_env(value=None):
    """The tests' environment with $PADDLE_ELMO_PROGRESS as `value` (None: unset)."""
    env = {k: v for k, v in ENV.items() if k != 'PADDLE_ELMO_PROGRESS'}
    return env if value is None else dict(env, PADDLE_ELMO_PROGRESS=value)


def library_run(tmp_path, level, progress=None):
    """LIBRARY_CALLS in a child, $PADDLE_ELMO_PROGRESS as `progress` (None: unset) -> its CompletedProcess."""
    require(FIXTURE)
    src = tmp_path / 'in.txt'
    src.write_text('Hello world .\n\nSecond one .\n', encoding='utf-8')
    code = LIBRARY_CALLS.format(level=level, fixture=FIXTURE, src=str(src), dst=str(tmp_path / 'out.hdf5'))
    proc = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, cwd=tmp_path,
                          env=dict(progress_env(progress), PYTHONPATH=ROOT), timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def test_a_library_call_with_the_logger_at_warning_writes_nothing_but_its_warnings(tmp_path):
    proc = library_run(tmp_path, 'WARNING')
    assert proc.stdout == ''
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f'WARNING:paddle_elmo.files.model_io:{BUNDLED_NOTE}'), proc.stderr
    assert (tmp_path / 'out.hdf5').exists()


def test_a_library_call_with_the_logger_unset_shows_its_progress_bar_where_bars_are_drawn(tmp_path):
    proc = library_run(tmp_path, None, progress='1')
    assert proc.stdout == ''
    assert f'WARNING:paddle_elmo.files.model_io:{BUNDLED_NOTE}' in proc.stderr
    assert 'embedding: 100%' in proc.stderr  # embed_file's tqdm bar: the switch above is the logger's level
    piped = library_run(tmp_path, None)  # stderr a pipe: no bar drawn into it
    assert f'WARNING:paddle_elmo.files.model_io:{BUNDLED_NOTE}' in piped.stderr and 'embedding' not in piped.stderr


def test_progress_bars_follow_the_callers_switch_and_the_loggers_level(monkeypatch):
    from paddle_elmo.logs import show_progress
    monkeypatch.setenv('PADDLE_ELMO_PROGRESS', '1')  # bars drawn (pytest's stderr is no terminal)
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
    talkative = run('embed', [str(src), str(out)], env=progress_env('1'))  # bars drawn even in the pipe
    assert talkative.returncode == 0, talkative.stderr[-3000:]
    assert talkative.stdout == result
    assert 'CPU: 1 thread (OMP_NUM_THREADS)' in talkative.stderr and 'embedding: 100%' in talkative.stderr
    assert f'warning: {BUNDLED_NOTE}' in talkative.stderr
    quiet = run('embed', [str(src), str(out), '--quiet'], env=progress_env('1'))
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


# The pretraining and word2vec runs below in this process (helpers.run_here): what they print and log is
# the command's; the streams of a process of its own are the embed tests' above and below.
def test_pretrain_prints_where_it_saved_and_logs_its_steps_on_stderr(corpus, tmp_path, capfd):
    talkative = pretrain_here(pretrain_args(corpus, tmp_path / 'a', '--max_steps', '6', '--dev_data_path',
                                            str(corpus / 'heldout.txt')), capfd)
    assert talkative.returncode == 0, talkative.stderr[-3000:]
    out = talkative.stdout.splitlines()
    assert len(out) == 2 and out[0].startswith('dev (') and out[1] == f'saved {tmp_path / "a" / "final"}.pdparams ' \
                                                                      f'after 6 steps', talkative.stdout
    err = talkative.stderr.splitlines()
    assert [line.split(' |')[0] for line in err if line.startswith('step ')] == ['step 5/6', 'step 6/6']
    assert any(line.startswith('preset original, adagrad lr 0.2: 1 process(es), 6 steps') for line in err)
    quiet = pretrain_here(pretrain_args(corpus, tmp_path / 'b', '--max_steps', '6', '--quiet'), capfd)
    assert quiet.returncode == 0, quiet.stderr[-3000:]
    assert quiet.stdout == f'saved {tmp_path / "b" / "final"}.pdparams after 6 steps\n' and quiet.stderr == ''


def test_a_setting_without_effect_is_a_warning_even_when_quiet(corpus, tmp_path, capfd):
    proc = pretrain_here(pretrain_args(corpus, tmp_path, '--max_steps', '1', '--n_negative_samples', '50', '--quiet'),
                         capfd)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stderr.splitlines() == ["warning: --n_negative_samples 50 >= the vocabulary's 26 tokens: every step "
                                        'uses the full softmax']


def test_word2vec_quiet_prints_the_table_and_logs_no_epoch(rt_slice, tmp_path, capfd):
    corpus = tmp_path / 'corpus.txt'
    corpus.write_text((rt_slice / 'rt-polarity.pos').read_text(encoding='utf-8') * 3, encoding='utf-8')
    common = ['--data_dir', str(rt_slice), '--train_data_path', str(corpus), '--w2v_dim', '8', '--min_count',
              '1', '--w2v_epochs', '1', '--folds', '2', '--epochs', '2', '--hidden_dim', '0']
    quiet = run_here('word2vec_base.py', common + ['--quiet'], capfd)
    assert quiet.returncode == 0, quiet.stderr[-3000:]
    assert 'accuracy' in quiet.stdout and quiet.stderr == ''
    talkative = run_here('word2vec_base.py', common, capfd)
    assert talkative.returncode == 0, talkative.stderr[-3000:]
    assert 'accuracy' in talkative.stdout
    for said in ('read ', 'rt-polarity.pos: 100 sentences (utf-8) split by moses', 'trained word2vec on 1 file(s)',
                 'vectors: ', 'fold 1/2 epoch 1: train loss', 'fold 2/2: test accuracy'):
        assert said in talkative.stderr, talkative.stderr


# ---- every warning seen: lines above the bars, bars on a terminal only, warnings per model -----------

CHINESE = '这本书很好看\n我们今天去北京\n'  # the bundled (English) model's language warning
ENGLISH = 'It is raining .\nThe book is good .\n'  # bundled-zh's
LANGUAGE_WARNING = 'warning: these sentences are '


def run_in_terminal(argv, env, timeout=300):
    """argv in a child whose stderr is a pseudo-terminal of 100 columns (stdout a pipe) -> (exit code,
    what the terminal received on stderr, as text)."""
    import fcntl
    import pty
    import select
    import struct
    import termios
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack('HHHH', 24, 100, 0, 0))  # 24 x 100: a bar's width
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=slave, env=env)
    os.close(slave)
    received = bytearray()
    try:
        while True:
            ready, _, _ = select.select([master], [], [], timeout)
            if not ready:
                proc.kill()
                raise AssertionError(f'{argv}: no output on the terminal for {timeout} s')
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal's last end
                break
            if not chunk:
                break
            received += chunk
    finally:
        os.close(master)
    proc.communicate(timeout=timeout)
    return proc.returncode, received.decode('utf-8', 'replace').replace('\r\n', '\n')  # the pty's ONLCR


def screen_lines(text):
    """The lines a terminal shows for `text`: each carriage return goes back to the line's start, and
    what follows is written over what was there."""
    lines = []
    for raw in text.split('\n'):
        line = ''
        for part in raw.split('\r'):
            line = part + line[len(part):]
        lines.append(line.rstrip())
    return lines


def embed_argv(src, out, *flags):
    return [sys.executable, '-m', 'paddle_elmo', 'embed', str(src), str(out), *flags]


def test_a_warning_given_while_a_bar_is_drawn_is_a_line_of_its_own_above_the_bar(tmp_path):
    src = tmp_path / 'zh.txt'
    src.write_text(CHINESE, encoding='utf-8')
    code, shown = run_in_terminal(embed_argv(src, tmp_path / 'out.hdf5', '--model', 'bundled'), progress_env())
    assert code == 0, shown[-3000:]
    lines = screen_lines(shown)
    warnings = [line for line in lines if LANGUAGE_WARNING in line]
    assert len(warnings) == 1 and warnings[0].startswith(f'{LANGUAGE_WARNING}Chinese'), shown  # not after a bar
    assert not any('embedding:' in line and 'warning' in line for line in lines), shown
    assert '\rembedding:' in shown  # the bar was drawn, on the terminal ...
    below = lines[lines.index(warnings[0]) + 1:]
    assert any(line.startswith('embedding: 100%') for line in below), shown  # ... and drawn again below the line


def test_no_bar_in_a_pipe_unless_forced_and_a_terminal_s_bar_can_be_turned_off(tmp_path):
    require(FIXTURE)
    src = tmp_path / 'in.txt'
    src.write_text('Hello world .\nSecond one .\n', encoding='utf-8')
    model = ['--options_file', os.path.join(FIXTURE, 'options.json'), '--weight_file',
             os.path.join(FIXTURE, 'lm_weights.hdf5')]

    def piped(env, *flags):
        proc = subprocess.run(embed_argv(src, tmp_path / 'out.hdf5', *model, *flags), capture_output=True,
                              env=env, timeout=300)  # bytes: text=True would turn each '\r' into '\n'
        assert proc.returncode == 0, proc.stderr[-3000:]
        return proc.stderr.decode()

    plain = piped(progress_env())
    assert '\r' not in plain and 'embedding' not in plain and 'CPU: 1 thread' in plain  # a log, not a bar
    for forced in (piped(progress_env(), '--progress'), piped(progress_env('1'))):
        assert 'embedding: 100%' in forced and '\r' in forced
    assert '\r' not in piped(progress_env('1'), '--no_progress')  # the flag before the variable
    for env, flags in ((progress_env('0'), ()), (progress_env(), ('--no_progress',))):
        code, shown = run_in_terminal(embed_argv(src, tmp_path / 'out.hdf5', *model, *flags), env)
        assert code == 0 and 'CPU: 1 thread' in shown and 'embedding' not in shown, shown


def test_progress_and_quiet_together_are_a_one_line_error(tmp_path):
    from conftest import one_line_error
    line = one_line_error(run('embed', [str(tmp_path / 'in.txt'), str(tmp_path / 'out.hdf5'), '--quiet',
                                        '--progress']))
    assert 'argument --progress: not allowed with argument --quiet' in line


# One process, both packaged models: the language warning of each (once per model, not per process),
# and no second one for the same model and the same mistake.
TWO_MODELS = '''
import logging, sys
logging.basicConfig(format='%(levelname)s:%(message)s', stream=sys.stderr)
from paddle_elmo import ELMoEmbedder
english, chinese = ELMoEmbedder('bundled'), ELMoEmbedder('bundled-zh')
for embedder, text in ((english, {zh!r}), (english, {zh!r}), (chinese, {en!r}), (chinese, {en!r})):
    embedder.embed_batch(text.splitlines())
ELMoEmbedder('bundled').embed_batch({zh!r}.splitlines())  # the same model again: said already
'''


def test_each_model_is_warned_of_text_in_another_language_once_in_one_process(tmp_path):
    proc = subprocess.run([sys.executable, '-c', TWO_MODELS.format(zh=CHINESE, en=ENGLISH)], capture_output=True,
                          text=True, cwd=tmp_path, env=dict(progress_env(), PYTHONPATH=ROOT), timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    said = [line for line in proc.stderr.splitlines() if line.startswith('WARNING:these sentences are ')]
    assert len(said) == 2, proc.stderr
    assert said[0].startswith("WARNING:these sentences are Chinese (Han script) but the model 'bundled' is English")
    assert said[1].startswith("WARNING:these sentences are English (Latin script) but the model 'bundled-zh' is "
                              'Chinese')


def test_quiet_keeps_the_warning_about_the_users_data(tmp_path):
    src = tmp_path / 'zh.txt'
    src.write_text(CHINESE, encoding='utf-8')
    proc = subprocess.run(embed_argv(src, tmp_path / 'out.hdf5', '--model', 'bundled', '--quiet'),
                          capture_output=True, text=True, env=progress_env('1'), timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f'{LANGUAGE_WARNING}Chinese'), proc.stderr  # no bar, no info


def test_a_warning_is_given_once_per_subject_and_the_record_stays_bounded(unwarned, caplog, monkeypatch):
    from paddle_elmo import logs
    log = logging.getLogger('paddle_elmo.test')
    with caplog.at_level(logging.WARNING, logger='paddle_elmo'):
        for subject in ('a/vocab.txt', 'b/vocab.txt', 'a/vocab.txt'):
            logs.warn_once(log, 'kind', subject, 'about %s', subject)
        logs.warn_once(log, 'other kind', 'a/vocab.txt', 'other about a')
        with logs.warning_held('kind'):  # held: silent, whatever the subject, and nothing recorded
            logs.warn_once(log, 'kind', 'c/vocab.txt', 'about c, held')
            assert logs.warned('kind', 'c/vocab.txt')
        logs.warn_once(log, 'kind', 'c/vocab.txt', 'about c')
    assert [r.getMessage() for r in caplog.records] == ['about a/vocab.txt', 'about b/vocab.txt', 'other about a',
                                                       'about c']
    logs.forget_warnings()
    monkeypatch.setattr(logs, '_MAX_GIVEN', 3)
    for i in range(5):
        logs.warn_once(log, 'kind', i, 'file %s', i)
    assert len(logs._given) == 3 and not logs.warned('kind', 0) and logs.warned('kind', 4)


def test_bars_are_drawn_as_the_command_then_the_variable_then_the_terminal_say(monkeypatch, caplog, unwarned):
    import io
    from paddle_elmo import logs

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.delenv('PADDLE_ELMO_PROGRESS', raising=False)
    monkeypatch.setattr(sys, 'stderr', io.StringIO())
    assert not logs.bars_on_stderr()  # a file or a pipe
    monkeypatch.setattr(sys, 'stderr', Terminal())
    assert logs.bars_on_stderr()
    monkeypatch.setenv('PADDLE_ELMO_PROGRESS', '0')
    assert not logs.bars_on_stderr()
    monkeypatch.setattr(logs, '_command_bars', True)
    assert logs.bars_on_stderr()  # --progress before the variable
    monkeypatch.setattr(logs, '_command_bars', None)
    monkeypatch.setattr(sys, 'stderr', io.StringIO())
    monkeypatch.setenv('PADDLE_ELMO_PROGRESS', '1')
    assert logs.bars_on_stderr()
    monkeypatch.setenv('PADDLE_ELMO_PROGRESS', 'maybe')
    with caplog.at_level(logging.WARNING, logger='paddle_elmo'):
        assert not logs.bars_on_stderr() and not logs.bars_on_stderr()
    assert [r.getMessage() for r in caplog.records] == [
        "PADDLE_ELMO_PROGRESS='maybe' is neither 1 nor 0: progress bars on a terminal only"]


def test_without_a_bar_a_long_job_logs_its_progress_as_lines_and_a_short_one_none(monkeypatch, caplog):
    from paddle_elmo import logs
    monkeypatch.setenv('PADDLE_ELMO_PROGRESS', '0')  # no bar: a log file's case

    def job(progress=True):
        with logs.progress_bar(progress, 'paddle_elmo.test', total=4, desc='embedding', unit='sent') as bar:
            for _ in range(4):
                bar.update(1)

    with caplog.at_level(logging.INFO, logger='paddle_elmo'):
        job()  # done before the first line is due (PROGRESS_LINE_SECONDS)
        assert caplog.records == []
        monkeypatch.setattr(logs, 'PROGRESS_LINE_SECONDS', 0)  # a line at every count
        job(progress=False)
        assert caplog.records == []
        job()
    counts = [r.getMessage().split(' | ')[0] for r in caplog.records]
    assert counts[-1] == 'embedding: 100% (4/4 sent)' and len(set(counts)) == len(counts) >= 4, counts
    assert all(r.levelno == logging.INFO and '\r' not in r.getMessage() for r in caplog.records)
