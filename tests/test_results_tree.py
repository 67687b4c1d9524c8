"""benchmarks/results/ is a lab a maintainer can keep: one folder per run, each with a README saying what
was measured, when, at which commit and with which command; no code but a run's own run.sh; nothing
loose at its root; every folder named by a document, a test or a script."""
import fnmatch
import glob
import os
import re

import pytest

from conftest import ROOT

RESULTS = os.path.join(ROOT, 'benchmarks', 'results')
CODE = ('.py', '.sh', '.c', '.cc', '.cpp', '.h', '.patch', '.diff')
COMMIT = re.compile(r'\b[0-9a-f]{7,40}\b')
COMMAND = re.compile(r'\b(?:python3?|bash|paddle-elmo|run\.sh)\b')


def folders():
    return sorted(e for e in os.listdir(RESULTS) if os.path.isdir(os.path.join(RESULTS, e)))


def read(path):
    with open(path, encoding='utf-8', errors='replace') as f:
        return f.read()


def test_nothing_lies_loose_at_the_results_root():
    loose = [e for e in os.listdir(RESULTS) if not os.path.isdir(os.path.join(RESULTS, e))]
    assert not loose, f'files at benchmarks/results/ outside a run folder: {loose} (git mv them into a dated folder)'


@pytest.mark.parametrize('folder', folders())
def test_each_run_folder_has_a_readme_naming_its_commit_and_command(folder):
    path = os.path.join(RESULTS, folder, 'README.md')
    assert os.path.exists(path), f'benchmarks/results/{folder}/ has no README.md'
    text = read(path)
    assert COMMIT.search(text), f'{folder}/README.md names no commit'
    assert COMMAND.search(text), f'{folder}/README.md names no command'


def test_run_folders_hold_no_code_but_their_run_sh():
    code = sorted(os.path.relpath(p, RESULTS) for p in glob.glob(os.path.join(RESULTS, '**', '*'), recursive=True)
            if p.endswith(CODE) and not (os.path.basename(p) == 'run.sh' and os.path.dirname(os.path.dirname(p)) == RESULTS))
    assert not code, f'code in benchmarks/results/ (a benchmark belongs in benchmarks/, history keeps the rest): {code}'


def referring_texts():
    """What may name a run folder: the documents, the tests, the scripts and the other folders' READMEs."""
    paths = ['README.md', 'BENCHMARKS.md', 'Makefile', 'benchmarks/HISTORY.md']
    paths += glob.glob(os.path.join(ROOT, 'docs', '*.md')) + glob.glob(os.path.join(ROOT, 'tests', '*.py'))
    paths += glob.glob(os.path.join(ROOT, 'benchmarks', '*.py')) + glob.glob(os.path.join(ROOT, 'benchmarks', '*.sh'))
    paths += glob.glob(os.path.join(ROOT, 'paddle_elmo', '**', '*.md'), recursive=True)
    texts = {os.path.relpath(os.path.join(ROOT, p), ROOT): read(os.path.join(ROOT, p))
             for p in paths if os.path.exists(os.path.join(ROOT, p))}
    texts.update({f'benchmarks/results/{f}/README.md': read(os.path.join(RESULTS, f, 'README.md'))
                  for f in folders() if os.path.exists(os.path.join(RESULTS, f, 'README.md'))})
    return texts


def test_every_run_folder_is_named_by_a_document_a_test_or_a_script():
    texts = referring_texts()
    unnamed = [f for f in folders()
               if not any(f in text for where, text in texts.items() if where != f'benchmarks/results/{f}/README.md')]
    assert not unnamed, f'run folders nothing names: {unnamed}'


def named_patterns(text):
    """The names a README gives in backticks or plain words, as shell patterns (`pretrain_*.txt`,
    `{int8,float32}.json` read as both names; a path's last part). A pattern names something before its
    extension: `**` and `*.txt` name nothing."""
    def expand(word):
        m = re.search(r'\{([^{}]*)\}', word)
        return [word] if not m else [x for alt in m.group(1).split(',') for x in expand(word[:m.start()] + alt + word[m.end():])]
    words = re.findall(r'[\w.*{},/-]+', text)
    words += [stem + suffix for stem, suffix in re.findall(r'`([\w.*{},/-]+?)\.\w+` / `(\.\w+)`', text)]  # `a.json` / `.txt`
    names = {p.rstrip('/').split('/')[-1] for word in words for p in expand(word)}
    return {n for n in names if re.search(r'\w{2,}', n.split('.')[0])}


@pytest.mark.parametrize('folder', folders())
def test_each_file_of_a_run_folder_is_named_by_its_readme(folder):
    patterns = named_patterns(read(os.path.join(RESULTS, folder, 'README.md')))
    unnamed = [e for e in sorted(os.listdir(os.path.join(RESULTS, folder)))
               if e != 'README.md' and not any(fnmatch.fnmatch(e, p) for p in patterns)]
    assert not unnamed, f'{folder}/README.md does not say what these are: {unnamed}'
