"""The Chinese model bundled in pretrained_zh/ (`bundled-zh`): its files, the Chinese path from raw text
(embed, predict, eval on its held-out sample) and its int8 export checked on its own Chinese sentences.
None of it needs ../shared: the model and its sample ship with the package. Written to hold for any
properly trained checkpoint of this shape (the release replaces the files, not the tests)."""
import json
import os
import re
import shlex
import shutil
import subprocess
import sys

import h5py
import numpy as np
import pytest

from conftest import ROOT, one_line_error
from helpers import assert_elmo_reads_raw_text_as_the_embedder, readme_commands, run_here, run_script

ZH = os.path.join(ROOT, 'paddle_elmo', 'pretrained_zh')
SAMPLE = os.path.join(ZH, 'heldout_sample.txt')
REVIEW = '这家酒店的服务很好，房间也很干净。'
IDEOGRAPH = re.compile('[\u4e00-\u9fff]')


def test_the_files_are_a_float32_bilm_with_a_float16_softmax_within_30_mb():
    with open(os.path.join(ZH, 'options.json'), encoding='utf-8') as f:
        options = json.load(f)
    with open(os.path.join(ZH, 'vocab.txt'), encoding='utf-8') as f:
        vocab = f.read().splitlines()
    assert options['tokenizer'] == 'jieba' and options['n_tokens_vocab'] == len(vocab) == 30003
    assert vocab[:3] == ['<S>', '</S>', '<UNK>']
    with h5py.File(os.path.join(ZH, 'weights.hdf5'), 'r') as f:
        names = []
        f.visit(lambda name: names.append(name) if isinstance(f[name], h5py.Dataset) else None)
        softmax = [n for n in names if n.startswith('softmax')]
        assert sorted(softmax) == ['softmax/W', 'softmax/b'] and f['softmax/W'].shape == (len(vocab), 128)
        assert {f[n].dtype for n in softmax} == {np.dtype('float16')}
        assert {f[n].dtype for n in names if n not in softmax} == {np.dtype('float32')}
    # What the wheel carries for this model (weights, vocabulary, options, sample, notices): at most 30 MB.
    assert sum(os.path.getsize(os.path.join(ZH, n)) for n in os.listdir(ZH)) <= 30 * 10 ** 6


def test_raw_chinese_gives_one_vector_per_jieba_word_and_context_moves_the_upper_layers():
    import jieba
    from paddle_elmo import ELMoEmbedder
    from paddle_elmo.files.model_io import resolve_model
    embedder = ELMoEmbedder('bundled-zh')
    words = [w for w in jieba.lcut(REVIEW) if not w.isspace()]
    [layers] = embedder.encode([REVIEW])
    assert layers.shape == (3, len(words), 256) and np.isfinite(layers).all()
    np.testing.assert_array_equal(layers, ELMoEmbedder.from_pretrained('bundled-zh').encode([REVIEW])[0])
    np.testing.assert_array_equal(layers, embedder.encode([words])[0])  # raw text = its jieba words
    assert resolve_model('bundled-zh').config.tokenizer == 'jieba'
    # 很 twice: the same token (layer 0), two contexts (the LSTM layers)
    first, second = [i for i, w in enumerate(words) if w == '很']
    np.testing.assert_array_equal(layers[0, first], layers[0, second])
    assert all(not np.allclose(layers[k, first], layers[k, second], atol=1e-3) for k in (1, 2))


def test_predict_gives_chinese_next_words_from_the_shipped_softmax(readme_zh):
    directory, runs = readme_zh  # README's `predict --model bundled-zh --prefix "根据本法规定，" --top_k 5`
    top = json.loads((directory / 'p.json').read_text(encoding='utf-8'))['predictions'][0]['top']
    assert len(top) == 5 and [t['prob'] for t in top] == sorted((t['prob'] for t in top), reverse=True)
    assert all(IDEOGRAPH.search(t['word']) for t in top), top  # words of the corpus, not <UNK> or </S>
    assert top[0]['word'] in runs['predict'].stdout


def test_eval_on_the_shipped_chinese_sample(readme_zh):
    directory, _ = readme_zh  # README's `eval --model bundled-zh --dev_data_path .../heldout_sample.txt`
    result = json.loads((directory / 'e.json').read_text())
    assert 1 < result['perplexity'] < 1000  # a trained softmax: far below the 30,003 of a uniform guess


def test_the_sample_is_real_held_out_chinese_the_model_knows():
    with open(SAMPLE, encoding='utf-8') as f:
        lines = f.read().splitlines()
    with open(os.path.join(ZH, 'vocab.txt'), encoding='utf-8') as f:
        vocab = set(f.read().splitlines())
    tokens = [t for line in lines for t in line.split()]
    assert len(lines) == len(set(lines)) >= 200 and all(IDEOGRAPH.search(line) for line in lines)
    assert sum(t in vocab for t in tokens) >= 0.95 * len(tokens)  # not text mostly unknown to it


def test_int8_export_is_checked_on_the_models_own_chinese_sample(readme_zh):
    directory, runs = readme_zh  # README's `export-inference --model bundled-zh --quantize int8 --output_dir zh_int8`
    proc = runs['export-inference']
    assert f'on 250 sentences of {SAMPLE}' in proc.stdout
    assert 'not in the model\'s vocabulary' not in proc.stderr  # the float check's English sentences say nothing
    with open(directory / 'zh_int8' / 'export.json') as f:
        int8 = json.load(f)['verified']['onnxruntime int8']
    assert int8['sentences'] == 250 and min(int8['min_cosine_per_layer']) >= 0.99


def test_a_chinese_model_without_a_sample_of_its_own_needs_verify_file(tmp_path, capfd):
    for name in ('options.json', 'weights.hdf5', 'vocab.txt'):  # bundled-zh's files without its sample
        os.symlink(os.path.join(ZH, name), tmp_path / name)
    proc = run_here('export-inference', ['--model', str(tmp_path), '--quantize', 'int8', '--output_dir',
                                            str(tmp_path / 'out')], capfd)
    line = one_line_error(proc)
    assert '--verify_file' in line and 'heldout_sample.txt' in line and 'jieba' in line
    assert not (tmp_path / 'out').exists()


def test_raw_chinese_through_elmo_and_the_embedder_gives_the_same_jieba_tokens_and_vectors():
    """bundled-zh records jieba in its options.json: Elmo of its resolved biLM splits raw text so too."""
    import jieba
    text = [REVIEW, '我很喜欢这本书']
    expected = assert_elmo_reads_raw_text_as_the_embedder('bundled-zh', text)
    assert [e.shape[1] for e in expected] == [len([w for w in jieba.lcut(t) if not w.isspace()]) for t in text]


def test_pretrain_init_from_weights_takes_bundled_zh():
    from paddle_elmo.cli.pretrain import weights_model
    model = weights_model('bundled-zh', None, None)
    assert (model.options_file, model.weight_file) == (os.path.join(ZH, 'options.json'), os.path.join(ZH, 'weights.hdf5'))


def test_readme_s_chinese_quick_start_runs_as_written():
    with open(os.path.join(ROOT, 'README.md'), encoding='utf-8') as f:
        text = f.read()
    quick_start = text[text.index('## Quick start'):text.index('## Embedding sentences')]
    [block] = [b for b in re.findall(r'```python\n(.*?)```', quick_start, re.S) if 'bundled-zh' in b]
    proc = subprocess.run([sys.executable, '-c', block], capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, PYTHONPATH=ROOT, OMP_NUM_THREADS='1'))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f'print(layers[0].shape)  # {proc.stdout.strip()}: ' in block  # the shape the comment gives


@pytest.fixture(scope='module')
def readme_zh(tmp_path_factory):
    """README's block on bundled-zh, each command as written, in a process of its own, in a fresh
    directory: a checkout's paths made absolute, the sample standing in for the user's text,
    pretraining shortened to 2 steps, predict and eval also writing their results as JSON
    (--output_json: p.json, e.json). The tests of predict, eval and the int8 export above check
    what these runs wrote and printed (the same commands: each run once) -> (the directory,
    {subcommand: its CompletedProcess})."""
    directory = tmp_path_factory.mktemp('readme_zh')
    commands = readme_commands('## Chinese')
    assert [c[1] if c[0] == 'paddle-elmo' else c[0] for c in commands] == [
        'pip', 'printf', 'embed', 'predict', 'eval', 'export-inference', 'pretrain']
    shutil.copy(SAMPLE, directory / 'my_zh_train.txt')
    appended = {'pretrain': ['--max_steps', '2'], 'predict': ['--output_json', 'p.json'],
                'eval': ['--output_json', 'e.json']}
    runs = {}
    for words in commands[1:]:  # the install is this checkout's
        if words[0] == 'printf':  # its redirection: the shell's
            proc = subprocess.run(shlex.join(words[:-2]) + ' > ' + words[-1], shell=True, cwd=directory)
            assert proc.returncode == 0
            continue
        command, *args = [os.path.join(ROOT, w) if w.startswith('paddle_elmo/') else w for w in words[1:]]
        runs[command] = proc = run_script(command, *args, *appended.get(command, []), cwd=directory)
        assert proc.returncode == 0, (words, proc.stderr[-3000:])
    return directory, runs


def test_readme_s_bundled_zh_commands_run_as_written(readme_zh):
    directory, runs = readme_zh
    assert IDEOGRAPH.search(runs['predict'].stdout.split('\n', 1)[1].split()[1]), runs['predict'].stdout  # the top word
    with h5py.File(directory / 'zh.hdf5', 'r') as f:
        assert f['0'].shape == (3, 12, 256)  # 这家 酒店 的 服务 很 好 ， 房间 也 很 干净 。
    assert (directory / 'zh_int8' / 'model.onnx').exists() and (directory / 'zh_adapted' / 'final.pdparams').exists()
