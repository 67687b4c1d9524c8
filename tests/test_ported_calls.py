"""The calls users port run unchanged: bilm-tf's `dump_token_embeddings(vocab_file, options_file,
weight_file, outfile)`, AllenNLP's `ElmoEmbedder(options_file, weight_file, cuda_device=-1)` and its
methods, `ELMoEmbedder(model=...)`, `from paddle_elmo import InferenceEmbedder` without Paddle, the
design card's front doors, and every Python call README.md and docs/ show (run where they can run
here, else bound to today's signatures), so that a restructure cannot break one silently."""
import argparse
import ast
import hashlib
import importlib
import inspect
import json
import os
import re
import shutil
import subprocess
import sys

import h5py
import numpy as np
import paddle
import pytest

from conftest import ROOT, SHARED, require, tiny_config
from helpers import BLOCK_PACKAGES, ENV, TOL, reference_top, run_reference_protocol
import paddle_elmo
from paddle_elmo import BiLM, ELMoEmbedder, ElmoEmbedder, dump_token_embeddings, resolve_model
from paddle_elmo.fileio import InputError

TOKENS = ['The', 'cat', 'sat', 'on', 'the', 'mat', '.']


@pytest.fixture
def files(fixture_dir):
    """The reference fixture's bilm-tf / AllenNLP files: (options_file, weight_file, vocab_file)."""
    return tuple(os.path.join(fixture_dir, n) for n in ('options.json', 'lm_weights.hdf5', 'vocab_test.txt'))


def one_line_error(call, match):
    with pytest.raises(InputError, match=match) as e:
        call()
    assert '\n' not in str(e.value)
    return str(e.value)


# ---- bilm-tf's dump_token_embeddings ------------------------------------------------------------------

def test_dump_token_embeddings_has_bilm_tf_s_four_parameters_first():
    assert list(inspect.signature(dump_token_embeddings).parameters)[:4] == [
        'vocab_file', 'options_file', 'weight_file', 'outfile']


def test_bilm_tf_s_four_arguments_write_what_the_one_value_form_writes(files, fixture_dir, tmp_path):
    options_file, weight_file, vocab_file = files
    n = dump_token_embeddings(vocab_file, options_file, weight_file, str(tmp_path / 'bilm_tf.hdf5'))  # bilm-tf's call
    dump_token_embeddings(vocab_file, resolve_model(options_file, weight_file), str(tmp_path / 'one_value.hdf5'))
    dump_token_embeddings(vocab_file, model=resolve_model(options_file, weight_file), outfile=str(tmp_path / 'kw.hdf5'))
    got = {}
    for name in ('bilm_tf', 'one_value', 'kw'):
        with h5py.File(tmp_path / f'{name}.hdf5', 'r') as f:
            got[name] = f['embedding'][...]
    with h5py.File(os.path.join(fixture_dir, 'elmo_token_embeddings.hdf5'), 'r') as f:
        reference = f['embedding'][...]  # bilm-tf's own dump of this vocabulary
    assert n == 458 and got['bilm_tf'].shape == (458, 16) and got['bilm_tf'].dtype == np.float32
    np.testing.assert_array_equal(got['bilm_tf'], got['one_value'])
    np.testing.assert_array_equal(got['bilm_tf'], got['kw'])
    np.testing.assert_allclose(got['bilm_tf'], reference, atol=TOL, rtol=0)  # helpers.TOL: bilm-tf's float32


def test_three_arguments_naming_an_options_file_are_refused_and_leave_the_weights_alone(files, tmp_path):
    options_file, weight_file, vocab_file = files
    weights = tmp_path / 'weights.hdf5'
    shutil.copy(weight_file, weights)
    before = hashlib.sha256(weights.read_bytes()).hexdigest()
    # bilm-tf's call with its outfile forgotten: the weights file must not be taken for the output
    message = one_line_error(lambda: dump_token_embeddings(vocab_file, options_file, str(weights)),
                             "is an options file, which takes bilm-tf's four arguments")
    assert options_file in message and '(vocab_file, model, outfile)' in message
    assert hashlib.sha256(weights.read_bytes()).hexdigest() == before
    one_line_error(lambda: dump_token_embeddings(vocab_file, options_file, model='bundled', outfile=str(tmp_path / 'x')),
                   'model= or options_file, weight_file, not both')
    one_line_error(lambda: dump_token_embeddings(vocab_file, 'bundled'), 'needs outfile')
    assert sorted(os.listdir(tmp_path)) == ['weights.hdf5']


# ---- AllenNLP's ElmoEmbedder --------------------------------------------------------------------------

def test_elmo_embedder_takes_allennlp_s_arguments_and_is_ours():
    parameters = inspect.signature(ElmoEmbedder).parameters
    assert list(parameters)[:3] == ['options_file', 'weight_file', 'cuda_device']
    assert parameters['cuda_device'].default == -1
    assert issubclass(ElmoEmbedder, ELMoEmbedder)  # one implementation
    for method in ('embed_sentence', 'embed_batch', 'embed_sentences', 'embed_file', 'batch_to_embeddings'):
        assert callable(getattr(ElmoEmbedder, method)), method
    assert list(inspect.signature(ElmoEmbedder.embed_file).parameters)[1:7] == [  # AllenNLP's order
        'input_file', 'output_file_path', 'output_format', 'batch_size', 'forget_sentences', 'use_sentence_keys']


def test_elmo_embedder_embeds_as_elmoembedder_and_carries_state_as_allennlp_s(files, fixture_sentences):
    options_file, weight_file, _ = files
    allennlp = ElmoEmbedder(options_file, weight_file)  # the call as AllenNLP code writes it
    ours = ELMoEmbedder(options_file, weight_file)
    first = allennlp.embed_sentence(TOKENS)
    assert isinstance(first, np.ndarray) and first.dtype == np.float32 and first.shape == (3, len(TOKENS), 32)
    np.testing.assert_array_equal(first, ours.encode([TOKENS])[0])  # from a zero state: the same
    # AllenNLP's caveat: its embedder keeps each row's LSTM state, so the same sentence again differs
    again = allennlp.embed_sentence(TOKENS)
    assert np.abs(again[1:] - first[1:]).max() > 1e-3
    np.testing.assert_array_equal(again[0], first[0])  # the token layer has no state
    allennlp.reset_states()
    np.testing.assert_array_equal(allennlp.embed_sentence(TOKENS), first)
    # the reference protocol (bilm-tf, stateful, batches of 3 in order) through AllenNLP's embed_batch
    fresh = ElmoEmbedder(options_file, weight_file)
    for i, batch in enumerate(run_reference_protocol(fresh, fixture_sentences)):
        for g in range(3):
            np.testing.assert_allclose(batch[g][2], reference_top(os.path.dirname(options_file), g, i), atol=TOL, rtol=0)
    stateless = ElmoEmbedder(options_file, weight_file, stateful=False)
    np.testing.assert_array_equal(stateless.embed_sentence(TOKENS), stateless.embed_sentence(TOKENS))


def test_elmo_embedder_s_methods_return_what_allennlp_s_return(files, tmp_path):
    options_file, weight_file, _ = files
    sentences = [TOKENS, ['Hello'], [], ['A', 'longer', 'one', 'than', 'most', 'of', 'them', '.']]
    expected = ElmoEmbedder(options_file, weight_file).embed_batch(sentences)
    assert [e.shape for e in expected] == [(3, 7, 32), (3, 1, 32), (3, 0, 32), (3, 8, 32)]
    activations, mask = ElmoEmbedder(options_file, weight_file).batch_to_embeddings(sentences)
    assert list(activations.shape) == [4, 3, 8, 32] and mask.dtype == paddle.bool
    assert mask.numpy().sum(axis=1).tolist() == [7, 1, 0, 8]
    for row, e in enumerate(expected):
        np.testing.assert_array_equal(activations.numpy()[row, :, :e.shape[1]], e)
        assert not activations.numpy()[row, :, e.shape[1]:].any()
    # embed_sentences in batches of 2 from a generator, and embed_file on the file opened, in
    # AllenNLP's positional order (..., batch_size, forget_sentences, use_sentence_keys)
    lines = ['The cat sat .', 'Hello', 'She paid the bank .']
    streamed = list(ElmoEmbedder(options_file, weight_file).embed_sentences((s.split() for s in lines), 2))
    (tmp_path / 'in.txt').write_text(''.join(line + '\n' for line in lines))
    with open(tmp_path / 'in.txt') as f:
        ElmoEmbedder(options_file, weight_file).embed_file(f, str(tmp_path / 'all.hdf5'), 'all', 2, True, False)
    with open(tmp_path / 'in.txt') as f:
        ElmoEmbedder(options_file, weight_file).embed_file(f, str(tmp_path / 'keys.hdf5'), 'top', 2, False, True)
    with h5py.File(tmp_path / 'all.hdf5', 'r') as f:
        assert sorted(f) == ['0', '1', '2']  # forget_sentences: no sentence_to_index
        for i, e in enumerate(streamed):
            np.testing.assert_array_equal(f[str(i)][...], e)
    with h5py.File(tmp_path / 'keys.hdf5', 'r') as f:
        assert sorted(f) == sorted(lines)  # use_sentence_keys
        np.testing.assert_array_equal(f['Hello'][...], streamed[1][-1])
    import io
    one_line_error(lambda: ElmoEmbedder(options_file, weight_file).embed_file(io.StringIO('a\n'), str(tmp_path / 'o')),
                   'StringIO .* is not a file; give a path or a file opened from one')


@pytest.mark.parametrize('number, device', [(-1, 'cpu'), (0, 'gpu:0'), (3, 'gpu:3'), (np.int64(1), 'gpu:1')])
def test_cuda_device_maps_to_paddle_s_device(files, monkeypatch, number, device):
    from paddle_elmo.runtime import cuda_device_name
    assert cuda_device_name(number) == device
    import paddle_elmo.use.embedder as embedder_module
    chosen = []
    monkeypatch.setattr(embedder_module, 'set_device', chosen.append)  # the device it would set, on any machine
    ElmoEmbedder(*files[:2], cuda_device=number)
    assert chosen == [device]


def test_a_gpu_cuda_device_on_a_cpu_build_and_bad_numbers_are_one_line(files):
    from paddle_elmo.cli.arguments import device_name
    if not paddle.device.is_compiled_with_cuda():
        one_line_error(lambda: ElmoEmbedder(*files[:2], cuda_device=0), 'gpu:0: this Paddle .* is a CPU-only build')
    for bad in (-2, '0', True, 1.0):
        one_line_error(lambda: ElmoEmbedder(*files[:2], cuda_device=bad), f'cuda_device {bad!r}: expected a CUDA')
    one_line_error(lambda: ElmoEmbedder(*files[:2], device='cpu'), "takes AllenNLP's cuda_device")
    # the commands' --device / --cuda-device read the same numbers, and gpu stays gpu
    assert [device_name(t) for t in ('gpu', 'gpu:1', 'cpu', '-1', '2')] == ['gpu', 'gpu:1', 'cpu', 'cpu', 'gpu:2']
    with pytest.raises(argparse.ArgumentTypeError, match="expected cpu, gpu, gpu:N or a CUDA device number"):
        device_name('-2')


def test_elmo_embedder_s_defaults_and_release_urls_are_allennlp_s_original_model(monkeypatch):
    import paddle_elmo.use.embedder as embedder_module
    asked = []

    def resolve(*args):
        asked.append(args)
        raise InputError('stop before a download')
    monkeypatch.setattr(embedder_module, 'resolve_model', resolve)
    release = '2x4096_512_2048cnn_2xhighway/elmo_2x4096_512_2048cnn_2xhighway'
    for host in ('https://allennlp.s3.amazonaws.com/models/elmo/', 'https://s3-us-west-2.amazonaws.com/allennlp/models/elmo/'):
        with pytest.raises(InputError):
            ElmoEmbedder(f'{host}{release}_options.json', f'{host}{release}_weights.hdf5')
    with pytest.raises(InputError):
        ElmoEmbedder()
    assert asked == [('original', None)] * 3
    from paddle_elmo.files.model_names import release_urls_as_name
    mixed = ('https://x/models/elmo/' + release + '_options.json', 'https://x/elmo_2x1024_128_2048cnn_1xhighway_weights.hdf5')
    assert release_urls_as_name(*mixed) == mixed and release_urls_as_name('a.json', 'b.hdf5') == ('a.json', 'b.hdf5')


# ---- ELMoEmbedder(model=...) --------------------------------------------------------------------------

def test_model_keyword_is_the_first_argument_by_name(tmp_path):
    from paddle_elmo import export_weights
    paddle.seed(0)
    export_weights(BiLM(tiny_config()), str(tmp_path / 'model'))
    positional = ELMoEmbedder(str(tmp_path / 'model')).encode([TOKENS])[0]
    np.testing.assert_array_equal(ELMoEmbedder(model=str(tmp_path / 'model')).encode([TOKENS])[0], positional)
    np.testing.assert_array_equal(ElmoEmbedder(model=str(tmp_path / 'model')).embed_sentence(TOKENS), positional)
    for cls in (ELMoEmbedder, ElmoEmbedder):
        one_line_error(lambda: cls(str(tmp_path / 'model'), model='bundled'),
                       f'{cls.__name__}: a model given twice, as the first argument and as model=; give it once')


# ---- import paths -------------------------------------------------------------------------------------

def test_inference_embedder_imports_from_the_package_without_paddle():
    code = BLOCK_PACKAGES + '\n'.join([
        'from paddle_elmo import InferenceEmbedder',
        'from paddle_elmo.export.inference import InferenceEmbedder as defined',
        'assert InferenceEmbedder is defined',
        "print([m for m in sys.modules if m == 'paddle' or m.startswith('paddle.')])",
        'try:',
        '    from paddle_elmo import ElmoEmbedder',
        'except ImportError:',  # (test_installs: in the core install, the MissingPackageError naming [cpu])
        "    print('ImportError')",
    ])
    proc = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, timeout=300, cwd=ROOT,
                          env=dict(ENV, BLOCKED_PACKAGES='paddle', PYTHONPATH=ROOT))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.splitlines() == ['[]', 'ImportError']  # no Paddle imported; a name needing it says so


def test_the_design_card_s_elmo_py_exports_the_package_s_names():
    import elmo
    assert elmo.__all__ == paddle_elmo.__all__
    for name in ('ELMoEmbedder', 'ElmoEmbedder', 'InferenceEmbedder', 'dump_token_embeddings', 'Elmo', 'ScalarMix',
                 'BiLM', 'resolve_model', 'token_embeddings'):
        assert getattr(elmo, name) is getattr(paddle_elmo, name), name


# What the design card's args.py and dataset.py export (the commands' shared flags; text to ids and batches).
CARD_MODULE_NAMES = {
    'args': ['InputError', 'PRESETS', 'FLAGS', 'Switch', 'add_device', 'add_tokenizer', 'device_name', 'parser',
             'positive_int', 'run', 'add_config_flags', 'pretrain_parser', 'model_source', 'option_strings'],
    'dataset': ['BOS_TOKEN', 'EOS_TOKEN', 'UNK_TOKEN', 'CharMapper', 'InputMapper', 'LMStream', 'Vocabulary',
                'build_vocabulary', 'get_tokenizer', 'read_vocabulary_file', 'tokens_to_char_ids', 'batch_to_char_ids',
                'count_tokens', 'write_vocabulary', 'TOKENIZERS'],
}


@pytest.mark.parametrize('module', sorted(CARD_MODULE_NAMES))
def test_the_design_card_s_args_and_dataset_export_their_names(module):
    card = importlib.import_module(module)
    for name in CARD_MODULE_NAMES[module]:
        assert hasattr(card, name), f'{module}.py no longer exports {name}'
    if module == 'args':
        assert card.device_name('-1') == 'cpu' and card.positive_int('3') == 3
    else:
        assert card.CharMapper().batch([['a', 'b']])[0].shape == (1, 4, 50)  # <S> a b </S>, 50 chars each


# The PaddleNLP example's flags each front door keeps (CONVENTIONS.md, "Command-line interfaces").
FRONT_DOORS = {
    'run_pretrain.py': ('pretrain', ['--train_data_path', '--dev_data_path', '--vocab_file', '--save_dir',
                                     '--init_from_ckpt', '--device', '--batch_size', '--epochs', '--lr', '--save_freq',
                                     '--log_freq']),
    'run_eval.py': ('eval', ['--dev_data_path', '--vocab_file', '--init_from_ckpt', '--device', '--batch_size']),
    'run_finetune.py': ('finetune', ['--init_from_ckpt', '--device', '--batch_size', '--epochs', '--lr']),
    'word2vec_base.py': ('word2vec', ['--device', '--batch_size', '--epochs', '--lr']),
}


def test_the_front_door_scripts_take_their_command_s_flags():
    from paddle_elmo.cli import COMMANDS, command_parsers
    parsers = command_parsers()
    running = {script: subprocess.Popen([sys.executable, os.path.join(ROOT, script), '--help'], stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True, cwd=ROOT, env=dict(ENV, PYTHONPATH=ROOT))
               for script in FRONT_DOORS}
    for script, (command, example_flags) in FRONT_DOORS.items():
        out, err = running[script].communicate(timeout=300)
        assert running[script].returncode == 0, err[-2000:]
        assert COMMANDS[command][1] == script
        assert out.startswith(f'usage: {script} ')
        flags = {s for a in parsers[command]._actions for s in a.option_strings if s.startswith('--')}
        assert flags <= set(re.findall(r'(?<![\w-])--\w+', out)), script  # the command's flags, all of them
        assert set(example_flags) <= flags, (script, set(example_flags) - flags)


# ---- README's and docs/' Python calls ------------------------------------------------------------------

DOCS = [os.path.join(ROOT, 'README.md'), *(os.path.join(ROOT, 'docs', n) for n in sorted(os.listdir(
    os.path.join(ROOT, 'docs'))) if n.endswith('.md'))]
# The names README's code gives its objects -> the public class they are.
VARIABLES = {'embedder': 'ELMoEmbedder', 'elmo': 'Elmo', 'model': 'LoadedModel'}


def python_blocks(path):
    """(path:line, code) of each ```python block of the document."""
    with open(path, encoding='utf-8') as f:
        text = f.read()
    return [(f'{os.path.basename(path)}:{text[:m.start()].count(chr(10)) + 2}', m.group(1))
            for m in re.finditer(r'```python\n(.*?)```', text, re.S)]


def inline_calls(path):
    """The Python calls written inline in the document's prose (`ELMoEmbedder('original')`), as code."""
    with open(path, encoding='utf-8') as f:
        text = re.sub(r'```.*?```', '', f.read(), flags=re.S)
    calls = []
    for span in re.findall(r'`([^`]+\))`', text):
        try:
            ast.parse(span.replace('\n', ' '))
        except SyntaxError:
            continue
        calls.append(span.replace('\n', ' '))
    return calls


def documented_target(func, imported):
    """A call's function in the docs' code -> (its dotted name, the object, whether it is called on
    an instance), for the package's public names, `paddle_elmo.x.y`, the names the block imports
    (`imported`) and README's variables (`elmo(...)` is Elmo.forward); else None."""
    parts = []
    while isinstance(func, ast.Attribute):
        parts.insert(0, func.attr)
        func = func.value
    instance = isinstance(func, ast.Call)  # CharMapper().batch(...)
    if instance:
        target = documented_target(func.func, imported)
        if target is None or not inspect.isclass(target[1]):
            return None
        name, obj = target[0], target[1]
    elif not isinstance(func, ast.Name):
        return None
    elif func.id in VARIABLES:
        name, obj, instance = VARIABLES[func.id], getattr(paddle_elmo, VARIABLES[func.id]), True
        parts = parts or ['forward']
    elif func.id in imported:
        name, obj = func.id, imported[func.id]
    elif func.id == 'paddle_elmo' or func.id in paddle_elmo.__all__:
        name, obj = func.id, paddle_elmo if func.id == 'paddle_elmo' else getattr(paddle_elmo, func.id)
    else:
        return None
    for part in parts:
        name = f'{name}.{part}'
        obj = getattr(obj, part) if hasattr(obj, part) else importlib.import_module(name)
    return name, obj, instance and bool(parts)


def bind_documented_calls(code, imported):
    """Bind each call of `code` to a public name (or to one its `from paddle_elmo... import` lines
    name) to today's signature -> the dotted names checked; a call that no longer binds fails.
    Calls spreading *args or **kwargs are left out (their arguments are not written)."""
    checked = set()
    for node in ast.walk(ast.parse(code)):
        spread = any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords) \
            if isinstance(node, ast.Call) else True
        if not spread:
            func = node.func
            target = documented_target(func, imported)
            if target is None:
                continue
            name, obj, on_instance = target
            if inspect.ismodule(obj) or not callable(obj):
                continue
            args = [None] * (len(node.args) + (on_instance and inspect.isfunction(obj)))  # self
            kwargs = {k.arg: None for k in node.keywords}
            try:
                inspect.signature(obj).bind(*args, **kwargs)
            except TypeError as e:
                raise AssertionError(f'{name}({ast.unparse(node)[len(ast.unparse(func)) + 1:]}: {e}') from None
            checked.add(name)
    return checked


def block_imports(code):
    """{name: object} of the block's `from paddle_elmo[.x] import name` lines (each must import)."""
    names = {}
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.ImportFrom) and node.module.split('.')[0] == 'paddle_elmo':
            module = importlib.import_module(node.module)
            for alias in node.names:
                names[alias.asname or alias.name] = getattr(module, alias.name)
    return names


def test_every_python_call_the_docs_show_binds_to_today_s_signatures():
    checked = set()
    for path in DOCS:
        for where, code in python_blocks(path):
            try:
                checked |= bind_documented_calls(code, block_imports(code))
            except AssertionError as e:
                raise AssertionError(f'{where}: {e}') from None
        for call in inline_calls(path):
            try:
                checked |= bind_documented_calls(call, {})
            except AssertionError as e:
                raise AssertionError(f'{os.path.basename(path)}: `{call}`: {e}') from None
    # what README documents today, so that the extraction itself cannot quietly find nothing
    assert {'ELMoEmbedder', 'ELMoEmbedder.from_pretrained', 'ELMoEmbedder.encode', 'ELMoEmbedder.hub_outputs',
            'ELMoEmbedder.embed_file', 'ELMoEmbedder.tokenize', 'Elmo', 'Elmo.batch_to_ids', 'Elmo.batch_to_inputs',
            'Elmo.l2_penalty', 'resolve_model', 'dump_token_embeddings', 'ElmoEmbedder', 'InferenceEmbedder',
            'CharMapper', 'LoadedModel.load'} <= checked, checked


def test_the_binding_check_catches_a_changed_signature():
    with pytest.raises(AssertionError, match='dump_token_embeddings'):
        bind_documented_calls("dump_token_embeddings('v', 'o', 'w', 'out', 'extra')", {})
    with pytest.raises(AssertionError, match='ELMoEmbedder.encode'):
        bind_documented_calls('embedder.encode(x, batch=3)', {})
    assert bind_documented_calls('embedder.encode(x, batch_size=3)', {}) == {'ELMoEmbedder.encode'}


def runnable_blocks():
    """The docs' blocks that import this package (the others show Paddle Inference and onnxruntime
    alone, or name a release that would be downloaded)."""
    return [pytest.param(code, id=where) for path in DOCS for where, code in python_blocks(path)
            if re.search(r'^(from|import) paddle_elmo', code, re.M)]


@pytest.fixture
def readme_files(fixture_dir, tmp_path, monkeypatch):
    """A directory holding the files README's blocks name: options.json + weights.hdf5 (the reference
    fixture's bilm-tf files), a checkpoint directory checkpoints/ with final.pdparams, sentences.txt, and
    an ELMoForManyLangs directory zht.model (the efml-tiny fixture's)."""
    shutil.copy(os.path.join(fixture_dir, 'options.json'), tmp_path / 'options.json')
    shutil.copy(os.path.join(fixture_dir, 'lm_weights.hdf5'), tmp_path / 'weights.hdf5')
    paddle.seed(0)
    bilm = BiLM(tiny_config())
    (tmp_path / 'checkpoints').mkdir()
    (tmp_path / 'checkpoints' / 'options.json').write_text(json.dumps(bilm.config.to_options()))
    paddle.save(bilm.state_dict(), str(tmp_path / 'checkpoints' / 'final.pdparams'))
    (tmp_path / 'sentences.txt').write_text("It's raining, isn't it?\nShe paid the bank.\n")
    shutil.copytree(require(os.path.join(SHARED, 'fixtures', 'efml-tiny', 'model')), tmp_path / 'zht.model')  # EFML's
    monkeypatch.chdir(tmp_path)
    return tmp_path


def printed_expectations(code):
    """The `print(...)  # (3, 8, 256): ...` lines of a block -> what each says it prints ('(3, 8, 256)'),
    None where its comment is prose."""
    expected = []
    for line in code.splitlines():
        if line.startswith('print('):
            comment = line.partition('#')[2].strip()
            literal = re.match(r'\(\d+(, \d+)*\)', comment)
            expected.append(literal.group(0) if literal else None)
    return expected


@pytest.mark.parametrize('code', runnable_blocks())
def test_the_docs_python_blocks_run_as_written(code, readme_files, capsys):
    exec(compile(code, 'docs block', 'exec'), {'__name__': 'docs_block'})  # noqa: S102 (our own README)
    printed = capsys.readouterr().out.splitlines()
    expected = printed_expectations(code)
    assert len(printed) == len(expected)
    for got, want in zip(printed, expected):
        assert want is None or got == want, (got, want)
