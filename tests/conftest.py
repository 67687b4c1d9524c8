"""Shared fixtures: tiny model configs and paths into ../shared (tests needing it skip without it)."""
import json
import os
import sys

import numpy as np
import paddle
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
SHARED = os.path.abspath(os.path.join(ROOT, '..', 'shared'))
FIXTURE = os.path.join(SHARED, 'fixtures', 'allennlp-elmo')

paddle.set_device('cpu')


def require(path):
    if not os.path.exists(path):
        pytest.skip(f'{path} is absent (../shared is not beside this checkout)')
    return path


@pytest.fixture
def fixture_dir():
    return require(FIXTURE)


@pytest.fixture
def fixture_sentences(fixture_dir):
    with open(os.path.join(fixture_dir, 'sentences.json')) as f:
        return [[s.split() for s in group] for group in json.load(f)]


def tiny_options(**overrides):
    from elmo import make_options
    kw = dict(projection_dim=8, cell_dim=16, n_layers=2, filters=[[1, 4], [2, 8], [3, 8]], n_highway=1,
              char_embed_dim=4, dropout=0.0)
    kw.update(overrides)
    return make_options(**kw)


@pytest.fixture
def tiny_bilm():
    from elmo import BiLM
    paddle.seed(0)
    np.random.seed(0)
    return BiLM(tiny_options())
