"""The distribution: a wheel of the repository holds the one import package (with its kernels'
source, the bundled model and the demo's corpus) and its metadata, and declares the command."""
import os
import subprocess
import sys
import zipfile

import pytest

from conftest import ROOT


@pytest.fixture(scope='module')
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp('wheel')
    proc = subprocess.run([sys.executable, '-m', 'pip', 'wheel', '-q', '--no-deps', '--no-build-isolation', '-w',
                           str(out), ROOT], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    [name] = [f for f in os.listdir(out) if f.endswith('.whl')]
    with zipfile.ZipFile(out / name) as z:
        return name, z.namelist(), {n: z.read(n).decode('utf-8', 'replace') for n in z.namelist()
                                    if n.endswith(('entry_points.txt', 'METADATA'))}


def test_the_wheel_installs_one_import_package_and_its_metadata(wheel):
    from paddle_elmo import __version__
    name, files, _ = wheel
    assert name.startswith(f'paddle_elmo-{__version__}-py3-none-any')
    assert {f.split('/')[0] for f in files} == {'paddle_elmo', f'paddle_elmo-{__version__}.dist-info'}


def test_the_wheel_carries_the_kernels_source_the_bundled_model_and_the_demo_corpus(wheel):
    _, files, _ = wheel
    for path in ('paddle_elmo/kernels.cc', 'paddle_elmo/pretrained/options.json', 'paddle_elmo/pretrained/weights.hdf5',
                 'paddle_elmo/pretrained/README.md', 'paddle_elmo/pretrained/vocab.txt', 'paddle_elmo/demo_data/sample_train.txt',
                 'paddle_elmo/demo_data/sample_heldout.txt', 'paddle_elmo/cli/pretrain.py'):
        assert path in files
    assert not [f for f in files if f.startswith('paddle_elmo/') and '/tests/' in f]


def test_the_wheel_declares_the_command_the_licence_and_the_extras(wheel):
    _, files, meta = wheel
    entry_points = next(v for k, v in meta.items() if k.endswith('entry_points.txt'))
    assert 'paddle-elmo = paddle_elmo.cli:main' in entry_points
    metadata = next(v for k, v in meta.items() if k.endswith('METADATA'))
    assert 'License-Expression: Apache-2.0' in metadata
    for extra in ('cpu', 'zh', 'onnx', 'plot', 'test', 'bench'):
        assert f'Provides-Extra: {extra}' in metadata
    assert any(f.endswith('licenses/LICENSE') for f in files)
