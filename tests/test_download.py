"""download_data.sh end to end on small stand-in archives (text written here, same names and
inner layout as the real ones): layout, vocabulary, idempotence, resume, checksums, offline."""
import gzip
import hashlib
import io
import os
import shutil
import subprocess
import sys
import tarfile

import pytest

from conftest import ROOT
from paddle_elmo.text.vocabulary import Vocabulary, build_vocabulary, count_words

SCRIPT = os.path.join(ROOT, 'download_data.sh')
LM1B = '1-billion-word-language-modeling-benchmark-r13output.tar.gz'
POLARITY = 'rt-polaritydata.tar.gz'
WORD2VEC = 'GoogleNews-vectors-negative300.bin.gz'

TRAIN = {
    'news.en-00001-of-00100': 'The cat sat on the mat .\nA dog barked at the cat .\n',
    'news.en-00002-of-00100': 'The market fell 3 % on Monday .\nthe the cat\n',
}
HELDOUT = {'news.en.heldout-00000-of-00050': 'The dog sat .\n'}
POS = b'a charming , caf\xe9 - set comedy . \nwarm and funny . \n'  # Latin-1, as the original
NEG = b'dull , dull , dull . \n'
VECTORS = b'2 3\n' + b'cat ' + bytes(12) + b'\n' + b'dog ' + bytes(range(12)) + b'\n'

pytestmark = pytest.mark.skipif(not all(shutil.which(t) for t in ('bash', 'curl', 'tar', 'gzip',
                                                                   'sha256sum', 'md5sum')),
                                reason='download_data.sh needs bash, curl, tar, gzip, sha256sum, md5sum')


def tar_gz(path, files):
    with tarfile.open(path, 'w:gz') as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def make_archives(directory):
    os.makedirs(directory, exist_ok=True)
    top = '1-billion-word-language-modeling-benchmark-r13output'
    files = {f'{top}/README': b'stand-in\n'}
    files.update({f'{top}/training-monolingual.tokenized.shuffled/{k}': v.encode() for k, v in TRAIN.items()})
    files.update({f'{top}/heldout-monolingual.tokenized.shuffled/{k}': v.encode() for k, v in HELDOUT.items()})
    tar_gz(os.path.join(directory, LM1B), files)
    tar_gz(os.path.join(directory, POLARITY), {'rt-polaritydata.README.1.0.txt': b'readme\n',
                                               'rt-polaritydata/rt-polarity.pos': POS,
                                               'rt-polaritydata/rt-polarity.neg': NEG})
    with gzip.open(os.path.join(directory, WORD2VEC), 'wb') as f:
        f.write(VECTORS)
    return directory


def digest(path, algo):
    with open(path, 'rb') as f:
        return hashlib.new(algo, f.read()).hexdigest()


@pytest.fixture
def archives(tmp_path):
    return make_archives(str(tmp_path / 'archives'))


def sums_env(archives, **extra):
    env = dict(os.environ, PYTHON=sys.executable,
               LM1B_SUM='sha256:' + digest(os.path.join(archives, LM1B), 'sha256'),
               WORD2VEC_SUM='md5:' + digest(os.path.join(archives, WORD2VEC), 'md5'))
    env.pop('POLARITY_SUM', None)  # as by default: recorded on the first download
    env.update(extra)
    return env


def run(*args, env):
    return subprocess.run(['bash', SCRIPT, *args], capture_output=True, text=True, env=env)


def snapshot(directory):
    """path -> (size, mtime_ns) of every file under `directory`."""
    out = {}
    for base, _, names in os.walk(directory):
        for name in names:
            st = os.stat(os.path.join(base, name))
            out[os.path.relpath(os.path.join(base, name), directory)] = (st.st_size, st.st_mtime_ns)
    return out


def check_layout(data):
    lm = os.path.join(data, '1-billion-word')
    for sub, files in (('training-tokenized-shuffled', TRAIN), ('heldout-tokenized-shuffled', HELDOUT)):
        assert sorted(os.listdir(os.path.join(lm, sub))) == sorted(files)
        for name, text in files.items():
            with open(os.path.join(lm, sub, name), encoding='utf-8') as f:
                assert f.read() == text
    train_glob = os.path.join(lm, 'training-tokenized-shuffled', '*')
    vocab = Vocabulary(os.path.join(lm, 'vocab-15w.txt'))
    assert vocab.tokens == build_vocabulary(count_words(train_glob, progress=False))
    assert vocab.tokens[:4] == ['<S>', '</S>', '<UNK>', 'the']
    polarity = os.path.join(data, 'sentence-polarity-dataset-v1')
    assert sorted(os.listdir(polarity)) == ['GoogleNews-vectors-negative300.bin', 'rt-polarity.neg',
                                            'rt-polarity.pos']
    for name, data_bytes in (('rt-polarity.pos', POS), ('rt-polarity.neg', NEG),
                             ('GoogleNews-vectors-negative300.bin', VECTORS)):
        with open(os.path.join(polarity, name), 'rb') as f:
            assert f.read() == data_bytes, name


def test_from_dir_builds_the_layout_and_a_rerun_changes_nothing(tmp_path, archives):
    data = str(tmp_path / 'data')
    first = run('--data_dir', data, '--from', archives, '--remove_archives', env=sums_env(archives))
    assert first.returncode == 0, first.stderr
    check_layout(data)
    assert sorted(os.listdir(archives)) == sorted([LM1B, POLARITY, WORD2VEC])  # --from files stay
    recorded = open(os.path.join(data, 'downloads', 'recorded.sha256')).read().split()
    assert recorded == [digest(os.path.join(archives, POLARITY), 'sha256'), POLARITY]

    before = snapshot(data)
    again = run('--data_dir', data, '--from', archives, env=sums_env(archives))
    assert again.returncode == 0, again.stderr
    assert snapshot(data) == before
    assert again.stderr.count('skip ') == 4  # 1B Word, vocabulary, rt-polarity, word2vec
    assert 'verifying' not in again.stderr and 'extracting' not in again.stderr


def test_download_resumes_into_part_file_and_verifies(tmp_path, archives):
    data = tmp_path / 'data'
    env = sums_env(archives, LM1B_URL=f'file://{archives}/{LM1B}',
                   POLARITY_URL=f'file://{archives}/{POLARITY}', WORD2VEC_URL=f'file://{archives}/{WORD2VEC}')
    source = open(os.path.join(archives, LM1B), 'rb').read()
    part = data / 'downloads' / (LM1B + '.part')
    part.parent.mkdir(parents=True)
    # A partial download with a wrong first half: resuming appends the rest, so the checksum
    # must catch it, and the corrupt file must go.
    part.write_bytes(b'\0' * (len(source) // 2))
    bad = run('--data_dir', str(data), '--only', '1b', env=env)
    assert bad.returncode == 1
    assert 'checksum mismatch' in bad.stderr.splitlines()[-1] and LM1B in bad.stderr.splitlines()[-1]
    assert not part.exists() and not (data / 'downloads' / LM1B).exists()
    assert not (data / '1-billion-word' / 'training-tokenized-shuffled').exists()
    # A partial download with the right first half resumes to the right file.
    part.write_bytes(source[:len(source) // 2])
    good = run('--data_dir', str(data), env=env)
    assert good.returncode == 0, good.stderr
    assert (data / 'downloads' / LM1B).read_bytes() == source and not part.exists()
    check_layout(str(data))
    again = run('--data_dir', str(data), env=env)
    assert again.returncode == 0 and 'downloading' not in again.stderr


def test_recorded_checksum_catches_a_changed_archive(tmp_path, archives):
    data = tmp_path / 'data'
    env = sums_env(archives, POLARITY_URL=f'file://{archives}/{POLARITY}')
    assert run('--data_dir', str(data), '--only', 'polarity', '--remove_archives', env=env).returncode == 0
    assert (data / 'sentence-polarity-dataset-v1' / 'rt-polarity.pos').read_bytes() == POS
    assert sorted(os.listdir(data / 'downloads')) == ['recorded.sha256']  # the archive went
    shutil.rmtree(data / 'sentence-polarity-dataset-v1')
    tar_gz(os.path.join(archives, POLARITY), {'rt-polaritydata/rt-polarity.pos': b'x\n',
                                              'rt-polaritydata/rt-polarity.neg': b'y\n'})
    result = run('--data_dir', str(data), '--only', 'polarity', env=env)
    assert result.returncode == 1 and 'sha256 checksum mismatch' in result.stderr
    assert not (data / 'sentence-polarity-dataset-v1' / 'rt-polarity.pos').exists()


def test_wrong_archive_in_from_dir_is_refused(tmp_path, archives):
    env = sums_env(archives, WORD2VEC_SUM='md5:' + '0' * 32)
    result = run('--data_dir', str(tmp_path / 'data'), '--from', archives, '--only', 'word2vec', env=env)
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith('error: ') and WORD2VEC in last and 'md5 checksum mismatch' in last
    assert not (tmp_path / 'data' / 'sentence-polarity-dataset-v1' / 'GoogleNews-vectors-negative300.bin').exists()


def test_offline_names_the_url_and_the_way_out(tmp_path, archives):
    url = f'file://{tmp_path}/unreachable/{LM1B}'
    result = run('--data_dir', str(tmp_path / 'data'), '--only', '1b', env=sums_env(archives, LM1B_URL=url))
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith('error: could not download ' + url) and '--from' in last


@pytest.mark.parametrize('args, message', [
    (['--bogus'], 'unknown option --bogus'),
    (['--only', '1b,glove'], "unknown step 'glove'"),
    (['--from', '/nonexistent-dir'], '--from /nonexistent-dir: not a directory'),
    (['--data_dir'], '--data_dir needs a value'),
])
def test_bad_usage_exits_2_with_one_line(tmp_path, archives, args, message):
    result = run('--data_dir', str(tmp_path / 'data'), *args, env=sums_env(archives))
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1
    assert lines[0].startswith('error: ') and message in lines[0]
    assert not (tmp_path / 'data').exists()
