"""The distribution: a wheel of the repository holds the one import package (with its kernels'
source, the bundled model and the demo's corpus) and its metadata, and declares the command."""
import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile

import pytest

from conftest import ROOT, one_line_error
from helpers import BLOCK_PACKAGES


@pytest.fixture(scope='module')
def wheel(checkout_wheel):
    """conftest's wheel of the checkout -> (its file name, the files it holds, its entry points and METADATA)."""
    with zipfile.ZipFile(checkout_wheel) as z:
        return checkout_wheel.name, z.namelist(), {n: z.read(n).decode('utf-8', 'replace') for n in z.namelist()
                                                   if n.endswith(('entry_points.txt', 'METADATA'))}


def test_the_wheel_installs_one_import_package_and_its_metadata(wheel):
    from paddle_elmo import __version__
    name, files, _ = wheel
    assert name.startswith(f'paddle_elmo-{__version__}-py3-none-any')
    assert {f.split('/')[0] for f in files} == {'paddle_elmo', f'paddle_elmo-{__version__}.dist-info'}


def test_the_wheel_carries_the_kernels_source_the_bundled_model_and_the_demo_corpus(wheel):
    _, files, _ = wheel
    for path in ('paddle_elmo/model/kernels.cc', 'paddle_elmo/pretrained/options.json', 'paddle_elmo/pretrained/weights.hdf5',
                 'paddle_elmo/pretrained/README.md', 'paddle_elmo/pretrained/vocab.txt', 'paddle_elmo/demo_data/sample_train.txt',
                 'paddle_elmo/demo_data/sample_heldout.txt', 'paddle_elmo/cli/pretrain.py'):
        assert path in files
    # each bundled model's directory whole: weights, vocabulary, card, held-out sample and the notices its data require
    for directory in ('pretrained', 'pretrained_zh'):
        shipped = sorted(os.listdir(os.path.join(ROOT, 'paddle_elmo', directory)))
        assert {'NOTICE.txt', 'heldout_sample.txt'} <= set(shipped)
        assert [f for f in shipped if f'paddle_elmo/{directory}/{f}' not in files] == []
    assert 'paddle_elmo/pretrained_zh/LICENSE-PSF.txt' in files
    assert not [f for f in files if f.startswith('paddle_elmo/') and '/tests/' in f]


def test_the_wheel_declares_the_command_the_licence_and_the_extras(wheel):
    _, files, meta = wheel
    entry_points = next(v for k, v in meta.items() if k.endswith('entry_points.txt'))
    assert 'paddle-elmo = paddle_elmo.cli:main' in entry_points
    metadata = next(v for k, v in meta.items() if k.endswith('METADATA'))
    assert 'License-Expression: Apache-2.0' in metadata
    for extra in ('cpu', 'serve', 'classify', 'zh', 'onnx', 'plot', 'test', 'bench'):
        assert f'Provides-Extra: {extra}' in metadata
    assert any(f.endswith('licenses/LICENSE') for f in files)


def metadata_of(wheel):
    return next(v for k, v in wheel[2].items() if k.endswith('METADATA'))


def requirement_name(requirement):
    return re.match(r'[A-Za-z0-9_.-]+', requirement).group(0).lower().replace('_', '-')


def test_the_core_install_is_what_embedding_needs_and_each_extra_names_its_job(wheel):
    metadata = metadata_of(wheel)
    core = {requirement_name(line.split(':', 1)[1].strip()) for line in metadata.splitlines()
            if line.startswith('Requires-Dist:') and 'extra ==' not in line}
    assert {'numpy', 'h5py', 'tqdm'} <= core
    assert not core & {'gensim', 'scikit-learn', 'scipy', 'paddlepaddle', 'onnx', 'onnxruntime', 'paddle2onnx'}, core
    for name, extra in (('gensim', 'classify'), ('scikit-learn', 'classify'), ('onnxruntime', 'serve'),
                        ('paddlepaddle', 'cpu')):
        assert re.search(rf'^Requires-Dist: {name}\b.*extra == "{extra}"', metadata, re.M), (name, extra)


def extra_packages(extras, name):
    """The packages pyproject.toml's extra `name` installs, its own extras (paddle-elmo[...]) followed."""
    names = set()
    for requirement in extras[name]:
        inner = re.match(r'paddle-elmo\[(.*)\]', requirement)
        names |= set().union(*(extra_packages(extras, e) for e in inner.group(1).split(','))) if inner else \
            {requirement_name(requirement)}
    return names


def test_the_cpu_extra_runs_the_default_export():
    # export-inference's default, paddle,onnx, needs Paddle and the ONNX writers (quantize.check_quantizable
    # names them); [cpu] installs them all, so `pip install paddle-elmo[cpu]` exports as the README shows.
    from paddle_elmo.cli.export_inference import build_parser
    with open(os.path.join(ROOT, 'pyproject.toml'), 'rb') as f:
        extras = tomllib.load(f)['project']['optional-dependencies']
    assert build_parser().get_default('formats') == 'paddle,onnx'
    assert {'paddlepaddle', 'paddle2onnx', 'onnx', 'onnxruntime'} <= extra_packages(extras, 'cpu')
    assert extra_packages(extras, 'serve') == {'onnxruntime'}


def test_no_test_skips_when_a_core_dependency_is_missing():
    """Every install has the core's packages (sacremoses: the bundled model's tokenizer): a test that
    importorskips one would pass, skipped, on an install that is broken."""
    with open(os.path.join(ROOT, 'pyproject.toml'), 'rb') as f:
        core = {requirement_name(r).replace('-', '_') for r in tomllib.load(f)['project']['dependencies']}
    assert 'sacremoses' in core
    tests = os.path.join(ROOT, 'tests')
    found = []
    for name in sorted(os.listdir(tests)):
        if name.endswith('.py'):
            with open(os.path.join(tests, name), encoding='utf-8') as f:
                found += [f'tests/{name}: importorskip({m.group(1)!r})'
                          for m in re.finditer(r"importorskip\(\s*['\"]([\w.]+)", f.read())
                          if m.group(1).split('.')[0] in core]
    assert not found, '; '.join(found)


def test_a_missing_optional_package_is_one_line_naming_its_extra():
    from paddle_elmo.fileio import InputError, require_package
    assert require_package('json', 'serve').dumps([]) == '[]'
    with pytest.raises(InputError, match=r'^no_such_package_here cannot be imported .*\[classify\] extra, '
                       r'pip install "paddle-elmo\[classify\]"$'):
        require_package('no_such_package_here', 'classify')


@pytest.mark.parametrize('blocked, command, extra', [
    ('gensim', ['word2vec', '--train_data_path', 'c.txt', '--output_word_vectors', 'o.bin'], 'classify'),
    ('sklearn', ['finetune', '--data_dir', '.'], 'classify'),
    ('paddle2onnx', ['export-inference', '--output_dir', 'out'], 'onnx'),
    ('onnxruntime', ['embed', 'c.txt', 'o.hdf5', '--inference_model', 'm', '--inference_backend', 'onnxruntime'],
     'serve')])
def test_a_command_whose_extra_is_missing_names_it_in_one_line(blocked, command, extra, tmp_path):
    (tmp_path / 'c.txt').write_text('a b c\n')
    for name in ('rt-polarity.pos', 'rt-polarity.neg'):  # finetune's data: read before its packages are imported
        (tmp_path / name).write_text('a b c\n')
    (tmp_path / 'm').mkdir()  # enough of an export to reach its runtime: the bundled model's files, no real model
    for name in ('options.json', 'vocab.txt'):
        shutil.copy(os.path.join(ROOT, 'paddle_elmo', 'pretrained', name), tmp_path / 'm')
    (tmp_path / 'm' / 'model.onnx').write_bytes(b'')
    code = BLOCK_PACKAGES + f'from paddle_elmo.cli import main; main({command!r})'
    proc = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, cwd=tmp_path, timeout=300,
                          env=dict(os.environ, PYTHONPATH=ROOT, BLOCKED_PACKAGES=blocked))
    assert f'cannot be imported (No module named \'{blocked}\'' in one_line_error(proc)
    assert f'pip install "paddle-elmo[{extra}]"' in proc.stderr
    assert sorted(os.listdir(tmp_path)) == ['c.txt', 'm', 'rt-polarity.neg', 'rt-polarity.pos']


def test_the_long_description_opens_with_the_install_and_links_only_other_projects_absolutely(wheel):
    """The index's page (docs/PYPI.md) cannot follow a link into the source: it names the source's files
    and links other projects' pages (the paper, bilm-tf, Paddle's install), never a repository address
    of ours."""
    metadata = metadata_of(wheel)
    description = metadata.split('\n\n', 1)[1]
    sections = re.findall(r'^## (.+)$', description, re.M)
    assert sections[0] == 'Install' and 'make demo' not in description
    links = re.findall(r'\]\(([^)\s]+)\)', description) + re.findall(r'<(\w+:[^>]+)>', description)
    assert links and all(link.startswith('https://') for link in links), [x for x in links if not x.startswith('https')]
    assert not [link for link in links if 'paddle-elmo' in link], links
    assert 'Apache License 2.0' in description and 'research' in description  # the data terms beside the code's
    urls = re.findall(r'^Project-URL: ([^,]+), (\S+)$', metadata, re.M)
    assert ('Paper', 'https://arxiv.org/abs/1802.05365') in urls
    assert not [url for _, url in urls if 'paddle-elmo' in url], urls  # no address of ours until one exists
