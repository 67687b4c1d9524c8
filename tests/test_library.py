"""Importing and calling the library changes nothing it was not asked to: device, train/eval mode,
malloc, environment, warning filters; and the scripts' error reporting keeps bugs' tracebacks."""
import os
import subprocess
import sys

import numpy as np
import paddle
import pytest

from conftest import ROOT, tiny_config


def tracer_train_mode():
    return paddle.base.framework._dygraph_tracer()._train_mode


@pytest.fixture
def bilm():
    from paddle_elmo import BiLM
    paddle.seed(0)
    return BiLM(tiny_config(dropout=0.5))


def test_embedder_leaves_the_device_malloc_and_the_global_mode_alone(bilm, monkeypatch):
    from paddle_elmo.use import embedder as embedder_module
    from paddle_elmo import ELMoEmbedder
    calls = []
    monkeypatch.setattr(paddle, 'set_device', lambda *a: calls.append(('set_device', a)))
    monkeypatch.setattr(embedder_module, 'keep_freed_memory', lambda *a: calls.append(('malloc', a)))
    dropout = paddle.nn.Dropout(0.5)
    dropout.train()
    ELMoEmbedder(bilm=bilm).encode([['a', 'b', 'c'], ['d']])
    assert calls == []
    assert tracer_train_mode()
    x = paddle.ones([1000])
    assert float((dropout(x) == 0).astype('float32').mean()) > 0.3  # the user's dropout still drops


def test_embedder_gives_back_a_callers_bilm_as_it_was(bilm):
    from paddle_elmo import ELMoEmbedder
    bilm.train()
    bilm.stateful = True
    first = ELMoEmbedder(bilm=bilm).encode([['a', 'b', 'c']])[0]
    assert bilm.stateful and all(layer.training for layer in bilm.sublayers(include_self=True))
    again = ELMoEmbedder(bilm=bilm).encode([['a', 'b', 'c']])[0]
    np.testing.assert_array_equal(first, again)  # no dropout and no carried state inside the embedder


def test_lm_evaluation_restores_the_mode_without_flipping_the_tracer(tmp_path):
    from paddle_elmo.text.batches import iter_eval_batches
    from paddle_elmo.text.vocabulary import Vocabulary
    from paddle_elmo.train.lm import LanguageModel, evaluate
    (tmp_path / 'v.txt').write_text('<S>\n</S>\n<UNK>\na\nb\n')
    (tmp_path / 'd.txt').write_text('a b a\nb a\n')
    vocab = Vocabulary(str(tmp_path / 'v.txt'))
    model = LanguageModel(tiny_config(), vocab.size, 2)
    model.train()
    evaluate(model, iter_eval_batches(str(tmp_path / 'd.txt'), vocab, 2, 3))
    assert model.training and model.bilm.char_encoder.training and tracer_train_mode()


def test_importing_the_library_sets_no_environment_variables_or_warning_filters():
    # Paddle's own import is the baseline (it sets variables of its own); then ours must add nothing
    # but GLOG_minloglevel, and that only where the user left it unset (here: they set it).
    code = ('import os, warnings; os.environ["GLOG_minloglevel"] = "0"; import paddle; env = dict(os.environ); '
            'filters = list(warnings.filters); '
            'from paddle_elmo.train import lm; from paddle_elmo.classify import training, elmo_features; from paddle_elmo.text import corpus, batches; from paddle_elmo import fileio, ELMoEmbedder, Elmo; '
            'changed = sorted(k for k in set(env) | set(os.environ) if env.get(k) != os.environ.get(k)); '
            'print(changed, len(warnings.filters) - len(filters))')
    proc = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, cwd=ROOT,
                          env=dict(os.environ, PYTHONPATH=ROOT))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == '[] 0'


def test_importing_the_library_first_hides_paddles_ccache_notice():
    proc = subprocess.run([sys.executable, '-c', 'from paddle_elmo import ELMoEmbedder'], capture_output=True, text=True, cwd=ROOT,
                          env=dict(os.environ, PYTHONPATH=ROOT))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert 'No ccache found' not in proc.stderr  # runtime filters it when it imports before Paddle


def test_run_reports_user_errors_in_one_line_and_keeps_a_bugs_traceback(capsys):
    from paddle_elmo.cli.runner import run
    from paddle_elmo.fileio import InputError

    def bad_input():
        raise InputError('data.txt:3: something the user can fix')

    with pytest.raises(SystemExit) as stop:
        run(bad_input)
    assert stop.value.code == 2
    assert capsys.readouterr().err == 'error: data.txt:3: something the user can fix\n'

    def bug():
        return {}['missing']

    with pytest.raises(KeyError):  # not turned into a message: the traceback shows where
        run(bug)


def test_without_a_working_compiler_the_kernels_fall_back_with_one_warning(tmp_path):
    bin_dir = tmp_path / 'bin'
    bin_dir.mkdir()
    for name in ('g++', 'gcc', 'c++', 'cc', 'x86_64-linux-gnu-g++', 'x86_64-linux-gnu-gcc'):
        (bin_dir / name).write_text('#!/bin/sh\necho "error: this compiler is too old" >&2\nexit 1\n')
        (bin_dir / name).chmod(0o755)
    # A warning in the log (paddle_elmo.model.kernels): nothing the calling code could change.
    code = ('import logging\nfrom paddle_elmo.model import kernels\n'
            'class Keep(logging.Handler):\n'
            '    records = []\n'
            '    def emit(self, record): self.records.append(record)\n'
            'logging.getLogger("paddle_elmo").addHandler(Keep())\n'
            'assert kernels.kernel() is None and kernels.kernel() is None\n'
            'mine = [r.getMessage() for r in Keep.records if r.levelno == logging.WARNING and "CPU kernels" in r.getMessage()]\n'
            'print(len(mine)); print(mine[0])\n')
    env = dict(os.environ, PATH=f'{bin_dir}:{os.environ["PATH"]}', HOME=str(tmp_path), CXX='g++', CC='gcc',
               PYTHONPATH=ROOT)
    proc = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, cwd=ROOT, env=env,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    count, message = proc.stdout.strip().splitlines()[-2:]
    assert count == '1' and message.startswith('CPU kernels unavailable, using Python loops of Paddle ops')
    assert '\n' not in message and 'build-error.log' in message


def test_an_in_memory_bilm_resolves_to_a_model_whose_load_is_that_very_bilm(bilm):
    # "a BiLM or something resolve_model takes" is answered in resolve_model alone: the wrapper answers
    # from the BiLM, and every entry point gets the caller's object back (a fine-tuned one stays theirs).
    from paddle_elmo import BiLM, ELMoEmbedder, Elmo, resolve_model
    from paddle_elmo.export.deploy import exported_options
    from paddle_elmo.fileio import InputError
    from paddle_elmo.files.hdf5_weights import model_options
    model = resolve_model(bilm)
    assert model.load() is bilm and model.load(stateful=True) is bilm and resolve_model(model) is model
    assert not bilm.stateful  # its flag is its own
    assert model.config is bilm.config and model.input_vocabulary() is bilm.vocab
    assert model.files() == {} and model.token_table() == {} and model.own_vocabulary_file is None
    assert exported_options(model) == model_options(bilm)  # what an export of a BiLM has always written
    assert ELMoEmbedder(bilm=bilm).bilm is bilm and ELMoEmbedder(bilm).bilm is bilm and Elmo(bilm).bilm is bilm
    other = BiLM(tiny_config(dropout=0.5))
    model.load_into(other)
    for (name, mine), theirs in zip(bilm.state_dict().items(), other.state_dict().values()):
        np.testing.assert_array_equal(mine.numpy(), theirs.numpy(), err_msg=name)
    with pytest.raises(InputError, match='holds no softmax'):
        model.load_with_softmax(vocab_size=10)
    with pytest.raises(InputError, match='carries its weights and vocabulary'):
        resolve_model(bilm, vocab_file='vocab.txt')


def test_a_model_is_one_value_resolved_in_one_place(tmp_path):
    from paddle_elmo.files.model_io import BUNDLED_MODEL_DIR, resolve_model
    bundled = resolve_model('bundled')
    assert bundled.files() == {'options_file': os.path.join(BUNDLED_MODEL_DIR, 'options.json'),
                               'weight_file': os.path.join(BUNDLED_MODEL_DIR, 'weights.hdf5')}
    assert bundled == resolve_model() == resolve_model(bundled)
    assert resolve_model(bundled.options_file, bundled.weight_file).files() == bundled.files()
    assert bundled.config.tokenizer == 'moses' and bundled.card == os.path.join(BUNDLED_MODEL_DIR, 'README.md')
    assert bundled.own_vocabulary_file == bundled.recorded_vocabulary()[0] == os.path.join(BUNDLED_MODEL_DIR,
                                                                                         'vocab.txt')
    (tmp_path / 'options.json').write_bytes(open(bundled.options_file, 'rb').read())
    (tmp_path / '7.pdparams').write_bytes(b'')
    for name in (str(tmp_path), str(tmp_path / '7'), str(tmp_path / '7.pdparams')):
        resolved = resolve_model(name)
        assert resolved.files() == {'options_file': str(tmp_path / 'options.json'), 'params_file': str(tmp_path / '7')}
    with pytest.raises(FileNotFoundError, match=r'8\.pdparams: checkpoint not found'):
        resolve_model(str(tmp_path / '8'))
