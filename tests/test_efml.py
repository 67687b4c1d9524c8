"""ELMoForManyLangs (EFML) model directories as released (files/efml_model.py, text/dictionary_ids.py,
the dict- token modes): the fixture's outputs, made by EFML's own code, are met to 1e-5 of each
layer's scale stateless, and stateful fed EFML's batch order meets its second call; in a process
where torch cannot be imported."""
import json
import os
import shutil
import sys

import h5py
import numpy as np
import pytest

from conftest import ROOT, SHARED, require
from paddle_elmo.fileio import InputError
from paddle_elmo.files.efml_model import DEFAULT_CONFIGS, read_efml_directory
from paddle_elmo.files.model_io import resolve_model
from paddle_elmo.text.dictionary_ids import Lexicon, read_dictionary

EFML = os.path.join(SHARED, 'fixtures', 'efml-tiny')
MODEL = os.path.join(EFML, 'model')
ZIP_COPY = os.path.join(ROOT, 'tests', 'fixtures', 'efml-tiny-zip')
TOLERANCE = 1e-5  # of each layer's largest magnitude: float32 sums in another order (measured ~3e-7)


@pytest.fixture
def no_torch(monkeypatch):
    """torch cannot be imported in this test (None in sys.modules makes `import torch` fail)."""
    monkeypatch.setitem(sys.modules, 'torch', None)


def sentences():
    with open(require(os.path.join(EFML, 'sentences.json')), encoding='utf-8') as f:
        return json.load(f)


def reference(name):
    with h5py.File(require(os.path.join(EFML, name)), 'r') as f:
        return [f[str(i)][...] for i in range(len(f))]


def assert_layers_close(outputs, expected):
    assert len(outputs) == len(expected)
    for i, (got, want) in enumerate(zip(outputs, expected)):
        assert got.shape == want.shape, (i, got.shape, want.shape)
        for k in range(want.shape[0]):
            scale = float(np.abs(want[k]).max())
            assert float(np.abs(got[k] - want[k]).max()) <= TOLERANCE * scale, (i, k)


def efml_batch_order(sents):
    """EFML's sents2elmo order: by length, longest first, ties in input order (one batch here)."""
    return sorted(range(len(sents)), key=lambda i: -len(sents[i]))


def test_embedder_meets_efml_first_call_stateless_without_torch(no_torch):
    from paddle_elmo.use.embedder import ELMoEmbedder
    embedder = ELMoEmbedder(require(MODEL))
    assert_layers_close(embedder.encode(sentences()), reference('reference.hdf5'))
    # stateless: a second call, and each sentence alone, give the same numbers
    assert_layers_close(embedder.encode(sentences()), reference('reference.hdf5'))
    assert_layers_close([embedder.encode([s])[0] for s in sentences()], reference('reference.hdf5'))


def test_stateful_fed_efml_batch_order_meets_its_second_call(no_torch):
    from paddle_elmo.use.embedder import ELMoEmbedder
    sents = sentences()
    order = efml_batch_order(sents)
    embedder = ELMoEmbedder(require(MODEL), stateful=True)
    first = embedder.encode([sents[i] for i in order])
    second = embedder.encode([sents[i] for i in order])
    assert_layers_close([first[order.index(i)] for i in range(len(sents))], reference('reference.hdf5'))
    assert_layers_close([second[order.index(i)] for i in range(len(sents))], reference('reference_second_call.hdf5'))


def test_a_directory_in_the_zip_serialization_gives_the_same_model(tmp_path, no_torch):
    from paddle_elmo.use.embedder import ELMoEmbedder
    directory = tmp_path / 'zipped'
    shutil.copytree(require(MODEL), directory)
    for name in ('token_embedder.pkl', 'encoder.pkl'):
        os.chmod(directory / name, 0o644)
        shutil.copy(os.path.join(ZIP_COPY, name), directory / name)
    assert_layers_close(ELMoEmbedder(str(directory)).encode(sentences()), reference('reference.hdf5'))


def test_resolve_model_reads_the_directory_as_one_model_value():
    model = resolve_model(require(MODEL))
    assert model.config.token_input == 'dict-word+char'
    assert (model.config.projection_dim, model.config.cell_dim, model.config.num_layers) == (8, 16, 2)
    assert model.config.word_dim == 4 and model.config.cnn_filters == [[1, 4], [2, 4], [3, 8]]
    assert model.config.tokenizer == 'whitespace'
    bilm = model.load()
    assert bilm.char_encoder.char_embed.weight.shape == [65, 6]  # char.dic's 64 rows + the "no token" row
    assert bilm.word_embedding.shape == [37, 4]
    assert 'encoder.pkl' in model.files()['efml_files']


def test_char_ids_swap_bow_and_eow_cut_long_words_and_read_the_one_field_line():
    chars = read_dictionary(require(os.path.join(MODEL, 'char.dic')))
    words = read_dictionary(os.path.join(MODEL, 'word.dic'))
    assert chars['\u3000'] == 7  # the line holding only an id: EFML's full-width space
    lexicon = Lexicon(chars, words, max_chars=20)
    ids = lexicon.token_char_ids('cat') - 1
    assert list(ids[:5]) == [chars['<eow>'], chars['c'], chars['a'], chars['t'], chars['<bow>']]
    assert (ids[5:] == chars['<pad>']).all()
    assert list(lexicon.token_char_ids('<S>')[:3] - 1) == [chars['<eow>'], chars['<bos>'], chars['<bow>']]
    long = 'x' * 30
    cut = lexicon.token_char_ids(long) - 1
    assert (cut[1:19] == chars['x']).all() and cut[19] == chars['<bow>']  # cut to 20 - 2 characters
    assert list(lexicon.token_char_ids('ŋ')[:3] - 1) == [chars['<eow>'], chars['<oov>'], chars['<bow>']]
    assert list(lexicon.encode(['cat', '<S>', '</S>', 'zzz'])) == [words['cat'], words['<bos>'], words['<eos>'],
                                                                   words['<oov>']]


def test_a_default_configuration_is_recognised_by_name(tmp_path):
    directory = tmp_path / 'released'
    shutil.copytree(require(MODEL), directory)
    os.chmod(directory / 'config.json', 0o644)
    (directory / 'config.json').write_text(json.dumps({'config_path': '/home/someone/cnn_50_100_512_4096_sample.json'}))
    options, source, _ = read_efml_directory(str(directory))
    assert 'default configuration' in source
    assert options['lstm']['dim'] == 4096 and options['char_cnn']['filters'][-1] == [7, 1024]
    assert options['word_embedding'] == {'dim': 100} and options['token_input'] == 'dict-word+char'
    assert set(DEFAULT_CONFIGS) == {'cnn_50_100_512_4096_sample.json', 'cnn_0_100_512_4096_sample.json'}
    with pytest.raises(InputError, match=r'4096.*does not fit|does not fit'):
        resolve_model(str(directory)).load()  # the tiny weights do not fit the released shape: one line


def test_a_directory_naming_no_configuration_is_one_line(tmp_path):
    directory = tmp_path / 'bad'
    shutil.copytree(require(MODEL), directory)
    os.chmod(directory / 'config.json', 0o644)
    (directory / 'config.json').write_text(json.dumps({'config_path': 'nowhere.json'}))
    with pytest.raises(InputError, match=r'config\.json: config_path .nowhere\.json. is neither'):
        resolve_model(str(directory))


MADE = os.path.join(ROOT, 'tests', 'fixtures', 'efml-made')  # tests/fixtures/make_efml_models.py's, by EFML's code


@pytest.mark.parametrize('name', ['chars-tanh-3layers', 'words-chars-zip'])
def test_models_made_by_efml_code_are_met_stateless_and_stateful(name, no_torch):
    """Other sizes: characters only (tanh, 2 highways, 3 layers, legacy .pkl, three batches in
    EFML's shuffled order) and words + chars in the zip serialization; stateless equals EFML on a
    fresh model, and stateful fed EFML's batches in its order equals both of its calls."""
    from paddle_elmo.use.embedder import ELMoEmbedder
    ref = np.load(os.path.join(MADE, f'{name}.outputs.npz'))
    sents, batch_size = json.loads(str(ref['sentences'])), int(ref['batch_size'])
    directory = os.path.join(MADE, name)
    assert_layers_close(ELMoEmbedder(directory).encode(sents), [ref[f'fresh/{i}'] for i in range(len(sents))])
    order = efml_batch_order(sents)
    batches = [order[start:start + batch_size] for start in range(0, len(order), batch_size)]
    embedder = ELMoEmbedder(directory, stateful=True, batch_size=batch_size)
    for call in range(2):
        for b in ref[f'call{call}/batch_order']:  # one encode per EFML batch: its rows carry state
            assert_layers_close(embedder.encode([sents[i] for i in batches[b]]),
                                [ref[f'call{call}/{i}'] for i in batches[b]])


# ---- the commands take the directory as --model ------------------------------------------------------


def write_sentences(path, sents):
    path.write_text(''.join(' '.join(s) + '\n' for s in sents if not any(' ' in t for t in s)), encoding='utf-8')
    return [s for s in sents if not any(' ' in t for t in s)]  # a token with a space cannot be a line's token


def read_embed_output(path, n):
    with h5py.File(path, 'r') as f:
        return [f[str(i)][...] for i in range(n)]


def test_embed_command_takes_the_directory_and_meets_efml(tmp_path, capfd, no_torch, unwarned):
    from helpers import run_here
    kept = write_sentences(tmp_path / 'in.txt', sentences())
    done = run_here('embed', ['--model', require(MODEL), str(tmp_path / 'in.txt'), str(tmp_path / 'out.hdf5')], capfd)
    assert done.returncode == 0, done.stderr
    assert 'records no tokenizer' in done.stderr  # a bare directory: whitespace, said in one line
    expected = [r for s, r in zip(sentences(), reference('reference.hdf5')) if s in kept]
    assert_layers_close(read_embed_output(tmp_path / 'out.hdf5', len(kept)), expected)


def test_export_weights_writes_the_dictionaries_and_reads_back_the_same_model(tmp_path, capfd, no_torch):
    from helpers import run_here
    from paddle_elmo.use.embedder import ELMoEmbedder
    done = run_here('export-weights', ['--model', require(MODEL), '--output_dir', str(tmp_path / 'w')], capfd)
    assert done.returncode == 0, done.stderr
    assert sorted(os.listdir(tmp_path / 'w')) == ['char.dic', 'options.json', 'weights.hdf5', 'word.dic']
    with open(tmp_path / 'w' / 'options.json', encoding='utf-8') as f:
        options = json.load(f)
    assert options['token_input'] == 'dict-word+char' and 'n_characters' not in options['char_cnn']
    exported = resolve_model(str(tmp_path / 'w'))
    assert exported.config.token_input == 'dict-word+char' and exported.weights_reader is None
    ours, theirs = ELMoEmbedder(exported).encode(sentences()), ELMoEmbedder(MODEL).encode(sentences())
    for a, b in zip(ours, theirs):
        np.testing.assert_array_equal(a, b)


def test_export_inference_runs_on_onnxruntime_within_1e4_of_efml(tmp_path, capfd):
    """ONNX on onnxruntime: 1e-4 of each layer's scale (its kernels sum in their own order)."""
    from helpers import run_here
    from paddle_elmo.export.inference import InferenceEmbedder
    done = run_here('export-inference', ['--model', require(MODEL), '--output_dir', str(tmp_path / 'inf')], capfd)
    assert done.returncode == 0, done.stderr
    assert {'char.dic', 'word.dic', 'model.onnx', 'options.json'} <= set(os.listdir(tmp_path / 'inf'))
    outputs = InferenceEmbedder(str(tmp_path / 'inf'), backend='onnxruntime').encode(sentences())
    for i, (got, want) in enumerate(zip(outputs, reference('reference.hdf5'))):
        for k in range(want.shape[0]):
            assert float(np.abs(got[k] - want[k]).max()) <= 1e-4 * float(np.abs(want[k]).max()), (i, k)


# ---- ELMoForManyLangs' releases by name ---------------------------------------------------------------


@pytest.fixture
def served_efml_zh(tmp_path, monkeypatch):
    """The fixture's model zipped in a folder of its own, served as NLPL's 179.zip (efml-zh) from
    127.0.0.1 through PADDLE_ELMO_NLPL_URL, and an empty cache of the test's own (the kernels shared)."""
    import zipfile
    from helpers import Server
    from paddle_elmo.cache import cache_dir
    archive = tmp_path / '179.zip'
    with zipfile.ZipFile(archive, 'w') as z:
        for name in sorted(os.listdir(require(MODEL))):
            z.write(os.path.join(MODEL, name), f'zht.model/{name}')
    cache = tmp_path / 'cache'
    cache.mkdir()
    os.symlink(cache_dir('ops'), cache / 'ops')
    server = Server({'/repository/11/179.zip': archive.read_bytes()})
    monkeypatch.setenv('PADDLE_ELMO_NLPL_URL', server.url.replace('/models/elmo/', '/repository/11/'))
    monkeypatch.setenv('PADDLE_ELMO_CACHE', str(cache))
    yield server
    server.stop()


def test_the_table_names_the_44_releases_with_their_nlpl_ids_and_tokenizers():
    from paddle_elmo.files.model_names import MODELS
    efml = {name: m for name, m in MODELS.items() if m.archive}
    assert len(efml) == 44 and sorted(int(m.archive[:-4]) for m in efml.values()) == list(range(136, 180))
    assert efml['efml-zh'].archive == '179.zip' and efml['efml-zh'].tokenizer == 'jieba'
    assert efml['efml-ja'].tokenizer == 'whitespace' and efml['efml-en'].tokenizer == 'moses'
    assert all("publisher's" in m.source for m in efml.values())


def test_efml_zh_by_name_downloads_once_then_loads_offline_and_meets_efml(served_efml_zh, no_torch):
    from paddle_elmo.use.embedder import ELMoEmbedder
    embedder = ELMoEmbedder('efml-zh')
    assert embedder.bilm.config.tokenizer == 'jieba'
    assert_layers_close(embedder.encode(sentences()), reference('reference.hdf5'))
    assert served_efml_zh.requests == 1
    served_efml_zh.stop()  # offline now: the unpacked directory in the cache loads without a request
    model = resolve_model('efml-zh')
    assert model.name == 'efml-zh' and served_efml_zh.requests == 1
    assert not [n for n in os.listdir(os.path.join(os.environ['PADDLE_ELMO_CACHE'], 'models', 'efml'))
                if n.endswith('.zip') or n.startswith('.')]  # the zip deleted once unpacked, no temporary left


def test_embed_model_efml_zh_splits_raw_chinese_with_jieba(served_efml_zh, tmp_path, capfd):
    from helpers import run_here
    from paddle_elmo.use.embedder import ELMoEmbedder
    from paddle_elmo.text.tokenizers import get_tokenizer
    lines = ['今天天氣真好阿', '这家酒店的服务很好，房间也很干净。']
    (tmp_path / 'in.txt').write_text('\n'.join(lines) + '\n', encoding='utf-8')
    done = run_here('embed', ['--model', 'efml-zh', str(tmp_path / 'in.txt'), str(tmp_path / 'out.hdf5')], capfd)
    assert done.returncode == 0, done.stderr
    got = read_embed_output(tmp_path / 'out.hdf5', 2)
    split = get_tokenizer('jieba')
    assert [g.shape[1] for g in got] == [len(split(line)) for line in lines]
    for a, b in zip(got, ELMoEmbedder('efml-zh').encode([split(line) for line in lines])):
        np.testing.assert_allclose(a, b, atol=1e-6)


def test_a_failed_efml_download_is_one_line_and_leaves_nothing(served_efml_zh):
    from paddle_elmo.fileio import NetworkError
    served_efml_zh.modes['/repository/11/179.zip'] = '404'
    with pytest.raises(NetworkError) as error:
        resolve_model('efml-zh')
    assert '179.zip' in str(error.value) and 'PADDLE_ELMO_NLPL_URL' in str(error.value)
    assert not os.path.exists(os.path.join(os.environ['PADDLE_ELMO_CACHE'], 'models', 'efml'))


def test_embed_output_format_takes_one_layer_by_index_as_efml_output_layer(tmp_path, capfd):
    from helpers import run_here
    kept = write_sentences(tmp_path / 'in.txt', sentences())
    expected = [r for s, r in zip(sentences(), reference('reference.hdf5')) if s in kept]
    for layer in ('0', '2'):
        out = tmp_path / f'layer{layer}.hdf5'
        done = run_here('embed', ['--model', require(MODEL), str(tmp_path / 'in.txt'), str(out), '--output_format',
                                  layer, '--quiet'], capfd)
        assert done.returncode == 0, done.stderr
        for got, want in zip(read_embed_output(out, len(kept)), expected):
            assert got.shape == want[int(layer)].shape
            assert float(np.abs(got - want[int(layer)]).max()) <= TOLERANCE * float(np.abs(want[int(layer)]).max())
    done = run_here('embed', ['--model', MODEL, str(tmp_path / 'in.txt'), str(tmp_path / 'x.hdf5'), '--output_format',
                              '3'], capfd)
    assert done.returncode == 2 and 'layers 0 (tokens) to 2' in done.stderr and not (tmp_path / 'x.hdf5').exists()


@pytest.mark.parametrize('directory', [MODEL, os.path.join(MADE, 'chars-tanh-3layers')])
def test_elmo_takes_the_directory_and_its_top_layer_is_efml_s(directory, no_torch):
    """The downstream layer (Elmo) over an EFML model, with words and characters only: the mix of
    only its top layer equals the embedder's top layer."""
    import paddle
    from paddle_elmo.use.downstream import Elmo
    from paddle_elmo.use.embedder import ELMoEmbedder
    sents = sentences()[:3]
    elmo = Elmo(require(directory), only_layer=-1, dropout=0.0)
    inputs = elmo.batch_to_inputs(sents)
    out = elmo(**inputs)['elmo_representations'][0].numpy()
    for row, want in enumerate(ELMoEmbedder(directory).encode(sents)):
        np.testing.assert_allclose(out[row, :want.shape[1]], want[-1], atol=1e-5)
    if directory != MODEL:  # a characters-only model reads char ids alone: AllenNLP's batch_to_ids
        ids = elmo.batch_to_ids(sents)
        np.testing.assert_array_equal(ids.numpy(), inputs['char_ids'].numpy())
        assert int(ids.numpy().max()) < elmo.bilm.char_encoder.char_embed.weight.shape[0]
    assert paddle.is_tensor(inputs['char_ids'])


# ---- continued pretraining from an EFML model (`pretrain --init_from_weights DIR`) ----------------------------


def efml_run_args(corpus, save_dir, *extra, weights=None):
    return ['--init_from_weights', weights or require(MODEL), '--train_data_path', str(corpus / 'train.*.txt'),
            '--vocab_file', str(corpus / 'vocab.txt'), '--save_dir', str(save_dir), '--batch_size', '4',
            '--unroll_steps', '5', '--log_freq', '1', '--seed', '3', *extra]


def test_a_run_from_efml_weights_starts_with_its_bilm_and_reads_its_dictionaries_ids(corpus, tmp_path):
    """The new run's biLM before its first update is the released one; its batches hold the ids the
    model's dictionaries give (InputMapper.of(bilm), as embedding), out-of-vocabulary words their own,
    and the targets the ids of --vocab_file (the softmax's vocabulary)."""
    from paddle_elmo.cli.pretrain import build_parser, read_configs, run_start
    from paddle_elmo.text.batches import iter_eval_batches
    from paddle_elmo.text.token_ids import InputMapper
    from paddle_elmo.train.start import set_up
    from paddle_elmo.train.sampled_softmax import unigram_log_prior
    args = efml_run_args(corpus, tmp_path / 'r', '--softmax_bias_init', 'unigram')
    model_config, recipe, save_dir, resumed = read_configs(build_parser().parse_args(args))
    run = set_up(model_config, recipe, save_dir, run_start(resumed))
    released = resolve_model(require(MODEL)).load(stateful=True)
    ours = dict(run.model.bilm.named_parameters())
    for name, value in released.named_parameters():
        np.testing.assert_array_equal(ours[name].numpy(), value.numpy(), err_msg=name)
    # a new softmax over --vocab_file, its bias the prior as for AllenNLP's releases
    prior = unigram_log_prior(run.vocab, str(corpus / 'train.*.txt'), progress=False)
    np.testing.assert_allclose(run.model.softmax.b.numpy()[:, 0], prior, rtol=1e-6)
    first = (corpus / 'heldout.txt').read_text().splitlines()[0].split()
    batch = next(iter_eval_batches(str(corpus / 'heldout.txt'), run.vocab, 1, len(first) + 1, run.model.input_mapper))
    want = InputMapper.of(released).batch([first])
    n = len(first) + 1  # <S> w1 .. wn: the forward inputs
    np.testing.assert_array_equal(batch['char_ids'][0], want.char_ids[0, :n])
    np.testing.assert_array_equal(batch['word_ids'][0], want.word_ids[0, :n])
    assert batch['char_ids'].max() < released.vocab.char_rows  # char.dic's rows, not ELMo's bytes
    np.testing.assert_array_equal(batch['next_token_ids'][0], run.vocab.encode(first + ['</S>'])[:n])
    assert first[-1] not in run.vocab.tokens  # the corpus's own word: <UNK>'s target, its own chars


def test_a_run_from_efml_weights_trains_and_its_checkpoint_embeds_evaluates_and_exports(corpus, tmp_path, capfd):
    """A few steps: finite falling loss; the run's directory records the dictionaries (char.dic, word.dic),
    so that its checkpoint embeds, evaluates (`eval --model RUN`: the run's own held-out figures) and
    exports (`export-weights`: the same embeddings read back)."""
    from helpers import run_here
    from paddle_elmo.use.embedder import ELMoEmbedder
    out = tmp_path / 'run'
    done = run_here('pretrain', efml_run_args(corpus, out, '--max_steps', '4', '--dev_data_path',
                                              str(corpus / 'heldout.txt')), capfd)
    assert done.returncode == 0, done.stderr[-3000:]
    assert f'biLM: from {require(MODEL)}; softmax: new' in done.stderr
    losses = [float(row.split(',')[4]) for row in (out / 'train_log.csv').read_text().splitlines()[1:] if row]
    assert len(losses) == 4 and np.isfinite(losses).all() and losses[-1] < losses[0]
    assert json.loads((out / 'recipe.json').read_text())['init_weight_file'] == require(MODEL)
    own, released = Lexicon.read(str(out), 20, True), resolve_model(require(MODEL)).input_vocabulary()
    assert (own.chars, own.words) == (released.chars, released.words)
    assert resolve_model(str(out)).config.token_input == 'dict-word+char'
    ran = [float(x) for x in done.stdout.split('perplexity fwd ')[1].split()[::2][:2]]
    evaluated = run_here('eval', ['--model', str(out), '--dev_data_path', str(corpus / 'heldout.txt')], capfd)
    assert evaluated.returncode == 0, evaluated.stderr[-3000:]
    figures = [float(line.split()[-1]) for line in evaluated.stdout.splitlines() if 'ward perplexity' in line]
    assert np.allclose(figures, ran, atol=0.006)  # the same model, batches and ids as the run's last evaluation
    exported = run_here('export-weights', ['--model', str(out), '--output_dir', str(tmp_path / 'exp')], capfd)
    assert exported.returncode == 0, exported.stderr[-3000:]
    sents = sentences()
    for got, want in zip(ELMoEmbedder(str(tmp_path / 'exp')).encode(sents), ELMoEmbedder(str(out)).encode(sents)):
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-6)


def efml_outputs(name):
    """(model directory, sentences, EFML's outputs on a fresh model) of the fixture or of a model EFML's code made."""
    if name == 'fixture':
        return require(MODEL), sentences(), reference('reference.hdf5')
    ref = np.load(os.path.join(MADE, f'{name}.outputs.npz'))
    sents = json.loads(str(ref['sentences']))
    return os.path.join(MADE, name), sents, [ref[f'fresh/{i}'] for i in range(len(sents))]


@pytest.mark.parametrize('name', ['fixture', 'chars-tanh-3layers'])
def test_a_run_from_efml_weights_with_its_bilm_frozen_still_meets_efml(name, corpus, tmp_path, capfd, no_torch):
    """The checkpoint read back with the dictionaries the run recorded is the released model: EFML's
    outputs to 1e-5 of scale (the softmax alone trained); words + chars, and characters only (char.dic alone)."""
    from helpers import run_here
    from paddle_elmo.use.embedder import ELMoEmbedder
    directory, sents, expected = efml_outputs(name)
    done = run_here('pretrain', efml_run_args(corpus, tmp_path / 'run', '--max_steps', '2', '--freeze_bilm',
                                              weights=directory), capfd)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / 'run' / 'word.dic').exists() == (name == 'fixture')
    assert_layers_close(ELMoEmbedder(str(tmp_path / 'run')).encode(sents), expected)


@pytest.mark.parametrize('name', ['fixture', 'chars-tanh-3layers'])
def test_a_run_from_efml_weights_resumes_exactly(name, corpus, tmp_path, capfd):
    """Cut after 2 of 4 steps and resumed in a process of its own (the run's char.dic / word.dic read back):
    bit for bit the uninterrupted run."""
    from helpers import assert_same_weights, load, run, run_here
    directory = efml_outputs(name)[0]
    whole = run_here('pretrain', efml_run_args(corpus, tmp_path / 'whole', '--max_steps', '4', weights=directory),
                     capfd)
    assert whole.returncode == 0, whole.stderr[-3000:]
    cut = run_here('pretrain', efml_run_args(corpus, tmp_path / 'cut', '--max_steps', '2', weights=directory), capfd)
    assert cut.returncode == 0, cut.stderr[-3000:]
    resumed = run('pretrain', ['--init_from_ckpt', str(tmp_path / 'cut' / 'final'), '--max_steps', '4'])
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert_same_weights(load(tmp_path / 'whole' / 'final.pdparams'), load(tmp_path / 'cut' / 'final.pdparams'))


@pytest.mark.parametrize('flag, value', [('--projection_dim', '16'), ('--token_input', 'char')])
def test_a_model_flag_that_differs_from_the_efml_model_is_refused_in_one_line(corpus, tmp_path, capfd, flag, value):
    from conftest import one_line_error
    from helpers import run_here
    line = one_line_error(run_here('pretrain', efml_run_args(corpus, tmp_path / 'run', flag, value), capfd))
    assert 'defines the model being adapted' in line and flag in line
    assert not (tmp_path / 'run').exists()


def test_a_run_starts_from_an_efml_model_by_name(served_efml_zh, corpus, tmp_path, capfd):
    from helpers import run_here
    done = run_here('pretrain', efml_run_args(corpus, tmp_path / 'run', '--max_steps', '1', weights='efml-zh'), capfd)
    assert done.returncode == 0, done.stderr[-3000:]
    recorded = json.loads((tmp_path / 'run' / 'recipe.json').read_text())['init_weight_file']
    assert recorded.startswith(str(tmp_path / 'cache')) and f'biLM: from {recorded}' in done.stderr
    assert Lexicon.read(str(tmp_path / 'run'), 20, True).words == read_dictionary(os.path.join(MODEL, 'word.dic'))


def test_dump_token_embeddings_of_an_efml_model_are_its_layer_0(tmp_path, capfd):
    """bilm-tf's dump_token_embeddings over an EFML model: each token alone, as layer 0 gives it in a sentence."""
    from helpers import run_here
    kept = [s for s in sentences() if not any(' ' in t for t in s)]
    tokens = list(dict.fromkeys(t for s in kept for t in s))
    (tmp_path / 'vocab.txt').write_text('\n'.join(tokens) + '\n', encoding='utf-8')
    done = run_here('dump', ['--model', require(MODEL), '--vocab_file', str(tmp_path / 'vocab.txt'), '--output_file',
                             str(tmp_path / 'tokens.hdf5')], capfd)
    assert done.returncode == 0, done.stderr
    with h5py.File(tmp_path / 'tokens.hdf5', 'r') as f:
        table = dict(zip(tokens, f['embedding'][...]))
    for s, want in zip(sentences(), reference('reference.hdf5')):
        if s in kept:
            got = np.stack([table[t] for t in s])
            assert float(np.abs(got - want[0, :, :8]).max()) <= TOLERANCE * float(np.abs(want[0]).max())


def test_export_inference_int8_of_an_efml_model_is_verified(tmp_path, capfd):
    from helpers import run_here
    lines = [' '.join(s) for s in sentences() if not any(' ' in t for t in s)]
    (tmp_path / 'verify.txt').write_text('\n'.join((lines * 40)[:200]) + '\n', encoding='utf-8')
    done = run_here('export-inference', ['--model', require(MODEL), '--output_dir', str(tmp_path / 'int8'), '--quantize',
                                         'int8', '--verify_file', str(tmp_path / 'verify.txt'), '--quiet'], capfd)
    assert done.returncode == 0, done.stderr
    with open(tmp_path / 'int8' / 'export.json', encoding='utf-8') as f:
        manifest = json.load(f)
    assert manifest['precision'].startswith('int8') and 'onnxruntime int8' in manifest['verified']


@pytest.mark.parametrize('line, message', [('a\t1\t2\n', 'expected "token<TAB>id"'), ('b\tx\n', 'expected "token<TAB>id"')])
def test_a_bad_dictionary_line_is_one_line_naming_file_and_line(tmp_path, line, message):
    path = tmp_path / 'char.dic'
    path.write_text('<oov>\t0\n<pad>\t1\n' + line, encoding='utf-8')
    with pytest.raises(InputError, match=rf'char\.dic:3: {message}'):
        read_dictionary(str(path))


def test_a_dictionary_without_its_specials_or_with_ids_past_its_rows_is_refused(tmp_path):
    path = tmp_path / 'word.dic'
    path.write_text('<oov>\t0\ncat\t1\n', encoding='utf-8')
    with pytest.raises(InputError, match=r'word\.dic: no entry for <pad>'):
        read_dictionary(str(path))
    path.write_text('<oov>\t0\n<pad>\t5\n', encoding='utf-8')
    with pytest.raises(InputError, match=r'ids must lie in \[0, 2\)'):
        read_dictionary(str(path))


def test_a_model_directory_whose_pickle_asks_for_another_global_is_refused_by_the_command(tmp_path, capfd):
    """Nothing in a .pkl runs: embed --model on a directory whose encoder.pkl names os.system exits 2
    with one line naming the file and the global."""
    from helpers import run_here
    from paddle_elmo.files.torch_pickle import LEGACY_MAGIC, LEGACY_PROTOCOL
    import pickle
    directory = tmp_path / 'evil'
    shutil.copytree(require(MODEL), directory)
    os.chmod(directory / 'encoder.pkl', 0o644)
    with open(directory / 'encoder.pkl', 'wb') as f:
        for header in (LEGACY_MAGIC, LEGACY_PROTOCOL, {'little_endian': True}):
            pickle.dump(header, f, protocol=2)
        f.write(b'\x80\x02cos\nsystem\nq\x00X\x05\x00\x00\x00touchq\x01\x85R.')
    (tmp_path / 'in.txt').write_text('a b\n', encoding='utf-8')
    done = run_here('embed', ['--model', str(directory), str(tmp_path / 'in.txt'), str(tmp_path / 'out.hdf5')], capfd)
    assert done.returncode == 2
    [error] = [line for line in done.stderr.splitlines() if line.startswith('error:')]
    assert 'encoder.pkl: refused global os.system' in error and not (tmp_path / 'out.hdf5').exists()


def test_perplexity_over_an_efml_model_says_it_has_no_softmax(tmp_path):
    from paddle_elmo.train.lm_loading import load_language_model
    with pytest.raises(InputError, match='no softmax'):
        load_language_model(10, require(MODEL))
