"""Models by name (model_names.py): the table, a release served from 127.0.0.1 through
PADDLE_ELMO_MODELS_URL into a cache of the test's own, loaded by name as by path and offline after,
failed and killed downloads, no network, the packaged models, and --model on the commands."""
import dataclasses
import os
import signal
import subprocess
import sys
import time

import h5py
import numpy as np
import paddle
import pytest

from conftest import ROOT, one_line_error, tiny_config
from helpers import SERVER_SECONDS, Server, assert_elmo_reads_raw_text_as_the_embedder, run_here, run_script
from paddle_elmo import BiLM, ELMoEmbedder
from paddle_elmo.files import model_names
from paddle_elmo.cache import cache_dir
from paddle_elmo.fileio import InputError, NetworkError
from paddle_elmo.files.hdf5_weights import export_weights
from paddle_elmo.files.model_io import resolve_model

SENTENCES = [['The', 'cat', 'sat', '.'], ['Hello'], ['A', 'longer', 'sentence', 'than', 'the', 'others', '.']]
SMALL = '2x1024_128_2048cnn_1xhighway'
OPTIONS_PATH = f'/models/elmo/{SMALL}/elmo_{SMALL}_options.json'
WEIGHTS_PATH = f'/models/elmo/{SMALL}/elmo_{SMALL}_weights.hdf5'
@pytest.fixture
def tiny_release(tmp_path):
    """A tiny char model exported as bilm-tf files (as AllenNLP's are) -> its directory."""
    paddle.seed(0)
    export_weights(BiLM(tiny_config()), str(tmp_path / 'release'))
    return tmp_path / 'release'


@pytest.fixture
def served(tiny_release, tmp_path, monkeypatch):
    """The tiny release served under AllenNLP's names for 'small', PADDLE_ELMO_MODELS_URL pointing at
    it, and an empty cache of the test's own (the compiled kernels shared: no rebuild)."""
    files = {OPTIONS_PATH: (tiny_release / 'options.json').read_bytes(),
             WEIGHTS_PATH: (tiny_release / 'weights.hdf5').read_bytes()}
    cache = tmp_path / 'cache'
    cache.mkdir()
    os.symlink(cache_dir('ops'), cache / 'ops')
    server = Server(files)
    monkeypatch.setenv('PADDLE_ELMO_MODELS_URL', server.url)
    monkeypatch.setenv('PADDLE_ELMO_CACHE', str(cache))
    yield server
    server.stop()


def cached(name):
    return model_names.cached_files(model_names.MODELS[name])


# ---- the table --------------------------------------------------------------------------------------------


def test_the_table_holds_allennlp_s_urls_and_each_model_s_tokenizer(monkeypatch):
    monkeypatch.delenv('PADDLE_ELMO_MODELS_URL', raising=False)
    base = 'https://allennlp.s3.amazonaws.com/models/elmo/'
    expected = {  # as AllenNLP's ELMo page, code and configs give them (model_names.py says where)
        'small': '2x1024_128_2048cnn_1xhighway/elmo_2x1024_128_2048cnn_1xhighway',
        'medium': '2x2048_256_2048cnn_1xhighway/elmo_2x2048_256_2048cnn_1xhighway',
        'original': '2x4096_512_2048cnn_2xhighway/elmo_2x4096_512_2048cnn_2xhighway',
        'original-5.5b': '2x4096_512_2048cnn_2xhighway_5.5B/elmo_2x4096_512_2048cnn_2xhighway_5.5B'}
    for name, stem in expected.items():
        model = model_names.MODELS[name]
        assert [model_names.models_url() + f for f in model.files] == [f'{base}{stem}_options.json',
                                                                        f'{base}{stem}_weights.hdf5']
        assert model.tokenizer == 'moses' and model.source
    assert {n: m.tokenizer for n, m in model_names.MODELS.items() if m.package_dir} == {'bundled': 'moses',
                                                                                       'bundled-zh': 'jieba'}
    monkeypatch.setenv('PADDLE_ELMO_MODELS_URL', 'http://mirror.example/elmo')  # the rest of the path unchanged
    assert model_names.models_url() + model_names.MODELS['small'].files[1] == \
        f'http://mirror.example/elmo/{SMALL}/elmo_{SMALL}_weights.hdf5'


def test_each_packaged_model_records_the_tokenizer_its_row_names():
    from paddle_elmo.files.run_configs import read_model_config
    for name, model in model_names.MODELS.items():
        directory = os.path.join(model_names.PACKAGE_DIR, model.package_dir or '')
        if model.package_dir and os.path.isdir(directory):
            assert read_model_config(os.path.join(directory, 'options.json')).tokenizer == model.tokenizer, name


# ---- a release by name -----------------------------------------------------------------------------------


def test_a_release_loads_by_name_as_its_files_by_path_then_offline(served, tiny_release):
    by_path = ELMoEmbedder(str(tiny_release / 'options.json'), str(tiny_release / 'weights.hdf5')).encode(SENTENCES)
    # tokenizer given: the table's (moses) needs issue 42 item 1's tokenizer; token lists are not split anyway
    by_name = ELMoEmbedder('small', tokenizer='whitespace').encode(SENTENCES)
    for a, b in zip(by_name, by_path):
        np.testing.assert_array_equal(a, b)
    options, weights = cached('small')
    assert options.startswith(os.environ['PADDLE_ELMO_CACHE']) and served.requests == 2
    assert open(weights, 'rb').read() == (tiny_release / 'weights.hdf5').read_bytes()
    assert sorted(os.listdir(os.path.dirname(weights))) == sorted(map(os.path.basename, (options, weights)))
    served.stop()  # offline now: the cached pair loads without a request
    again = ELMoEmbedder.from_pretrained('small', tokenizer='whitespace').encode(SENTENCES)
    for a, b in zip(again, by_path):
        np.testing.assert_array_equal(a, b)
    assert served.requests == 2


def test_a_release_s_raw_text_gets_the_tokenizer_of_its_row(served, monkeypatch, caplog):
    row = dataclasses.replace(model_names.MODELS['small'], tokenizer='chars')  # one this branch has
    monkeypatch.setitem(model_names.MODELS, 'small', row)
    model = resolve_model('small')
    assert model.config.tokenizer == 'chars' and 'tokenizer' not in model.options  # the file records none
    assert model.load().config.tokenizer == 'chars'  # the biLM loaded carries it: Elmo splits so too
    embedder = ELMoEmbedder('small')
    assert embedder.tokenizer == 'chars' and not [r for r in caplog.records if 'differs' in r.getMessage()]
    assert embedder.encode(['ab很好'])[0].shape[1] == 3  # ab 很 好


def test_raw_text_through_elmo_and_the_embedder_of_one_named_release_gives_the_same_tokens_and_vectors(served):
    """The table's tokenizer (moses) is the release's however it is loaded: Elmo of its resolved biLM
    splits raw text as ELMoEmbedder of its name does (the files record none: whitespace would give
    4 + 4 tokens), and gives the same layers."""
    from paddle_elmo.export.deploy import exported_options
    expected = assert_elmo_reads_raw_text_as_the_embedder('small', ["It's raining, isn't it?", 'She paid the bank.'])
    assert [e.shape[1] for e in expected] == [8, 5] and ELMoEmbedder('small').tokenizer == 'moses'
    assert exported_options(resolve_model('small'))['tokenizer'] == 'moses'  # and an export of it records it


def test_a_release_by_name_splits_raw_text_with_moses(served):
    assert ELMoEmbedder('small').tokenizer == 'moses'


@pytest.mark.parametrize('mode', ['half', '404'])
def test_a_failed_download_leaves_no_file_under_the_model_s_name(served, mode):
    served.modes[WEIGHTS_PATH] = mode
    with pytest.raises(NetworkError) as error:  # a runtime failure (an OSError), not the user's input
        ELMoEmbedder('small', tokenizer='whitespace')
    assert isinstance(error.value, OSError) and not isinstance(error.value, InputError)
    options, weights = cached('small')
    message = str(error.value)
    assert '\n' not in message and served.url + WEIGHTS_PATH.split('/elmo/')[1] in message
    assert weights in message and options in message  # where to put the files by hand
    assert ('HTTP 404' if mode == '404' else 'broke off') in message
    assert os.listdir(os.path.dirname(weights)) == [os.path.basename(options)]  # no partial or temporary file
    served.modes.clear()  # the next call fetches what is missing, and only that
    requests = served.requests
    assert ELMoEmbedder('small', tokenizer='whitespace').encode(SENTENCES)[0].shape == (3, 4, 16)
    assert served.requests == requests + 1


def test_a_killed_download_leaves_no_file_under_the_model_s_name(served):
    served.modes[WEIGHTS_PATH] = 'stall'
    env = dict(os.environ, PYTHONPATH=ROOT)
    proc = subprocess.Popen([sys.executable, '-c', 'from paddle_elmo.files.model_names import model_files; '
                             'model_files("small")'], env=env, cwd=ROOT, stderr=subprocess.DEVNULL)
    options, weights = cached('small')
    directory = os.path.dirname(weights)
    try:
        deadline = time.time() + SERVER_SECONDS
        while not [f for f in os.listdir(directory) if f.startswith('tmp') and os.path.getsize(
                os.path.join(directory, f))] if os.path.isdir(directory) else True:
            assert time.time() < deadline and proc.poll() is None, 'the download never started'
            time.sleep(0.2)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    assert os.path.isfile(options) and not os.path.exists(weights)  # half a file, under a temporary name only
    served.modes.clear()
    assert model_names.model_files('small') == (options, weights)
    assert h5py.File(weights, 'r')  # the whole file now


@pytest.fixture
def refused(tmp_path, monkeypatch):
    """PADDLE_ELMO_MODELS_URL on a port of 127.0.0.1 where nothing listens (bound, then closed: the
    connection is refused at once), and a cache of the test's own holding only the compiled kernels
    (shared) -> (the URL, the cache)."""
    import socket
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        port = s.getsockname()[1]
    cache = tmp_path / 'cache'
    cache.mkdir()
    os.symlink(cache_dir('ops'), cache / 'ops')
    url = f'http://127.0.0.1:{port}/models/elmo/'
    monkeypatch.setenv('PADDLE_ELMO_MODELS_URL', url)
    monkeypatch.setenv('PADDLE_ELMO_CACHE', str(cache))
    return url, cache


def test_no_network_is_a_runtime_failure_and_leaves_the_cache_as_it_was(refused):
    url, cache = refused
    with pytest.raises(NetworkError) as error:
        ELMoEmbedder('original')
    assert isinstance(error.value, OSError) and not isinstance(error.value, InputError)
    assert f'could not download {url}' in str(error.value) and '(no connection)' in str(error.value)
    assert os.listdir(cache) == ['ops']  # no models/elmo/<release>/ made and left empty


def test_no_network_is_one_line_exit_1_naming_the_url_and_where_to_put_the_files(refused, tmp_path):
    url, cache = refused
    (tmp_path / 'in.txt').write_text('The cat sat .\n')
    proc = run_script('embed', str(tmp_path / 'in.txt'), str(tmp_path / 'out.hdf5'), '--model', 'original')
    line = one_line_error(proc, code=1)  # README: a runtime failure exits 1, a user's mistake 2
    remote = model_names.MODELS['original'].files
    assert f'could not download {url}{remote[0]} (no connection)' in line
    assert all(f'{r} as {p}' in line for r, p in zip(remote, cached('original')))
    assert os.listdir(cache) == ['ops'] and not (tmp_path / 'out.hdf5').exists()


def test_pretrain_init_from_weights_takes_a_release_s_name(served, tiny_release):
    from paddle_elmo.cli.pretrain import weights_model
    model = weights_model('small', None, None)
    assert (model.options_file, model.weight_file) == cached('small') and model.config.tokenizer == 'moses'
    assert open(cached('small')[0], 'rb').read() == (tiny_release / 'options.json').read_bytes()


# ---- the packaged models ---------------------------------------------------------------------------------


def test_a_packaged_model_s_missing_directory_is_one_clear_line(tmp_path, monkeypatch):
    monkeypatch.setattr(model_names, 'PACKAGE_DIR', str(tmp_path / 'package'))
    with pytest.raises(InputError, match=r'^bundled: .*pretrained is not in this installation'):
        resolve_model('bundled')


# ---- --model on the commands -----------------------------------------------------------------------------


# The command runs in this process (helpers.run_here: `python -m paddle_elmo` calls the same main()),
# both ways, so that the outputs compared come from the same threads; `python -m paddle_elmo embed
# --model` runs as a process of its own in test_no_network_is_one_line_naming_the_url_and_where_to_put_the_files.


def test_embed_model_small_served_locally_writes_what_the_files_by_path_write(served, tiny_release, tmp_path, capfd):
    (tmp_path / 'in.txt').write_text('The cat sat .\nHello\n')
    by_name = run_here('embed', [str(tmp_path / 'in.txt'), str(tmp_path / 'name.hdf5'), '--model', 'small',
                                        '--tokenizer', 'whitespace'], capfd)
    assert by_name.returncode == 0, by_name.stderr
    by_path = run_here('embed', [str(tmp_path / 'in.txt'), str(tmp_path / 'path.hdf5'), '--options_file',
                                        str(tiny_release / 'options.json'), '--weight_file',
                                        str(tiny_release / 'weights.hdf5')], capfd)
    assert by_path.returncode == 0, by_path.stderr
    with h5py.File(tmp_path / 'name.hdf5', 'r') as a, h5py.File(tmp_path / 'path.hdf5', 'r') as b:
        for key in ('0', '1'):
            np.testing.assert_array_equal(a[key][...], b[key][...])


def test_embed_model_bundled_is_the_default_model(tmp_path, capfd):
    (tmp_path / 'in.txt').write_text('The cat sat .\n')
    named = run_here('embed', [str(tmp_path / 'in.txt'), str(tmp_path / 'named.hdf5'), '--model', 'bundled'],
                     capfd)
    assert named.returncode == 0, named.stderr
    default = run_here('embed', [str(tmp_path / 'in.txt'), str(tmp_path / 'default.hdf5')], capfd)
    assert default.returncode == 0, default.stderr
    with h5py.File(tmp_path / 'named.hdf5', 'r') as a, h5py.File(tmp_path / 'default.hdf5', 'r') as b:
        np.testing.assert_array_equal(a['0'][...], b['0'][...])


COMMANDS = {'embed': ['in.txt', 'out.hdf5'], 'eval': ['--dev_data_path', 'x'], 'finetune': ['--data_dir', 'x'], 'predict': [],
            'dump': [], 'export-inference': ['--output_dir', 'x']}


@pytest.mark.parametrize('command', sorted(COMMANDS))
def test_every_model_loading_command_takes_model_and_keeps_its_older_flags(command, tiny_release, tmp_path):
    from paddle_elmo.cli import COMMANDS as MODULES
    from paddle_elmo.cli.model_flags import model_source
    import importlib
    parser = importlib.import_module(f'paddle_elmo.cli.{MODULES[command][0]}').build_parser()
    parse = lambda *argv: model_source(parser.parse_args(COMMANDS[command] + list(argv)))  # noqa: E731
    assert parse('--model', str(tiny_release)) == resolve_model(str(tiny_release))
    assert parse('--model', 'bundled') == resolve_model('bundled')
    assert parse('--model', 'bundled-zh') == resolve_model('bundled-zh')
    assert parse() == resolve_model(None) == resolve_model('bundled')  # no model: the bundled one
    files = ['--options_file', str(tiny_release / 'options.json'),
             '--weight_file', str(tiny_release / 'weights.hdf5')]
    assert parse(*files) == resolve_model(files[1], files[3]) and parse(*files).weight_file == files[3]
    (tmp_path / 'ckpt').mkdir()
    (tmp_path / 'ckpt' / 'options.json').write_bytes((tiny_release / 'options.json').read_bytes())
    (tmp_path / 'ckpt' / '3.pdparams').write_bytes(b'')  # resolved, not read
    assert parse('--init_from_ckpt', str(tmp_path / 'ckpt' / '3')).params_file == str(tmp_path / 'ckpt' / '3')
    with pytest.raises(InputError, match='give either --model or'):
        parse('--model', 'bundled', '--init_from_ckpt', 'ckpt/3')


def test_export_weights_takes_model_as_a_checkpoint_and_says_when_it_is_not_one(tiny_release, tmp_path):
    proc = run_script('export-weights', '--model', 'bundled', '--output_dir', str(tmp_path / 'out'))
    assert 'already the bilm-tf format' in one_line_error(proc)
