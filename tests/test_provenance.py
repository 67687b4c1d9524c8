"""What ships is what its card describes: every bundled model's card (paddle_elmo/pretrained*/README.md:
the English model's and the Chinese one's) lists its files with their sha256 in a "Files" table, and
the files in the checkout (the ones the wheel carries) have exactly those hashes; each card states its
data's terms beside the code's licence, and the notices those terms require ship beside the weights."""
import glob
import os
import re

import pytest

from conftest import ROOT
from helpers import sha256

CARDS = sorted(glob.glob(os.path.join(ROOT, 'paddle_elmo', 'pretrained*', 'README.md')))


def card_files(card):
    """The card's "## Files" section as {file name: sha256}: each table row (or list item) that holds
    a name and a 64-hex-digit hash."""
    with open(card, encoding='utf-8') as f:
        text = f.read()
    match = re.search(r'^## Files\s*$(.*?)(?=^## |\Z)', text, re.M | re.S)
    assert match, f'{card}: no "## Files" section (a table of `file` | sha256)'
    files = {}
    for line in match.group(1).splitlines():
        digest = re.search(r'\b[0-9a-f]{64}\b', line)
        name = re.search(r'`([^`\s]+\.[A-Za-z0-9]+)`', line)
        if digest and name:
            files[name.group(1)] = digest.group(0)
    return files


def test_there_is_a_card_for_the_bundled_model():
    assert os.path.join(ROOT, 'paddle_elmo', 'pretrained', 'README.md') in CARDS


@pytest.mark.parametrize('card', CARDS, ids=lambda c: os.path.basename(os.path.dirname(c)))
def test_the_shipped_files_have_the_hashes_their_card_states(card):
    directory = os.path.dirname(card)
    listed = card_files(card)
    shipped = sorted(f for f in os.listdir(directory) if f != 'README.md' and not f.startswith('.'))
    assert sorted(listed) == shipped, f'{card} lists {sorted(listed)}, the directory holds {shipped}'
    for name, digest in listed.items():
        assert sha256(os.path.join(directory, name)) == digest, \
            f'{directory}/{name} is not the file its card describes: update the card (and its figures) with it'


def test_there_is_a_card_for_each_packaged_model():
    from paddle_elmo.files.model_names import MODELS
    packaged = {os.path.join(ROOT, 'paddle_elmo', m.package_dir, 'README.md')
                for m in MODELS.values() if m.package_dir}
    assert packaged == set(CARDS) and len(packaged) == 2


# What each card's data terms require it to say: the English model's sources are under research terms;
# the Chinese model's require the CC BY 4.0 attribution (zh-open's README gives its words) and the PSF
# notice, which its NOTICE.txt also carries beside the weights with the PSF License's text.
TERMS = {'pretrained': ['research', 'CC BY-SA 3.0'],
         'pretrained_zh': ['Contains text from Microsoft Dynamics 365 documentation (zh-cn), © Microsoft, licensed under '
                           'CC BY 4.0 (https://creativecommons.org/licenses/by/4.0/)', 'PSF License Version 2',
                           'Python Software Foundation', 'art. 5(1)']}


@pytest.mark.parametrize('card', CARDS, ids=lambda c: os.path.basename(os.path.dirname(c)))
def test_each_card_states_its_data_terms_beside_the_code_licence(card):
    with open(card, encoding='utf-8') as f:
        text = ' '.join(f.read().split())  # a sentence may wrap
    terms = text[text.index('## Data and licences'):]
    required = TERMS[os.path.basename(os.path.dirname(card))]
    assert 'Apache License 2.0' in terms and [t for t in required if t not in terms] == []


def test_the_chinese_notice_carries_the_attribution_and_the_psf_licence_beside_the_weights():
    directory = os.path.join(ROOT, 'paddle_elmo', 'pretrained_zh')
    with open(os.path.join(directory, 'NOTICE.txt'), encoding='utf-8') as f:
        notice = ' '.join(f.read().split())
    assert TERMS['pretrained_zh'][0] in notice and 'LICENSE-PSF.txt' in notice
    for commit in ('2f4c5c2', '99bc4b0', '538f253', 'bfdf958'):  # each source's, as zh-open's README gives them
        assert commit in notice
    with open(os.path.join(directory, 'LICENSE-PSF.txt'), encoding='utf-8') as f:
        psf = f.read()
    assert 'PYTHON SOFTWARE FOUNDATION LICENSE VERSION 2' in psf
    assert 'Python Software Foundation; All Rights Reserved' in ' '.join(psf.split())
