"""The documents a user reads: README.md and the docs that ship in the package. They point only at
things a user has (no path of a development machine, no `../shared`, no issue of our tracker), and
their links inside the repository resolve, anchors into Markdown headings included."""
import os
import re

import pytest

from conftest import ROOT

PACKAGE = os.path.join(ROOT, 'paddle_elmo')


def user_docs():
    """README.md and every Markdown file inside the package (they ship with it: the model's card)."""
    docs = ['README.md']
    for directory, _, files in os.walk(PACKAGE):
        docs += [os.path.relpath(os.path.join(directory, f), ROOT) for f in files if f.endswith('.md')]
    return sorted(docs)


def read(doc):
    with open(os.path.join(ROOT, doc), encoding='utf-8') as f:
        return f.read()


# What a user cannot follow: our shared directory, a development machine's paths, our tracker.
FORBIDDEN = {
    '../shared': re.compile(r'\.\./shared\b'),
    'a path of a development machine': re.compile(r'(?<![\w.])/(?:work|tmp/pytest)[/\w-]*'),
    'an issue number': re.compile(r'\b(?:issues?|PR|pull request)\s+#?\d+\b', re.I),
    'a #number reference': re.compile(r'(?<![\w&/#])#\d+\b'),
}


@pytest.mark.parametrize('doc', user_docs())
def test_user_docs_point_at_nothing_a_user_lacks(doc):
    found = [f'{doc}:{n}: {what}: {m.group(0)!r}'
             for n, line in enumerate(read(doc).splitlines(), 1)
             for what, pattern in FORBIDDEN.items() for m in pattern.finditer(line)]
    assert not found, '\n'.join(found)


@pytest.mark.parametrize('text, what', [
    ('see issue 13', 'an issue number'), ('(issue 38)', 'an issue number'), ('issues 21 and 22', 'an issue number'),
    ('fixed in #21.', 'a #number reference'), ('--data_dir ../shared/data/rt', '../shared'),
    ('from /work/runs/long', 'a path of a development machine'),
    ('/tmp/pytest-of-me/x', 'a path of a development machine')])
def test_the_forbidden_patterns_catch_what_they_should(text, what):
    assert FORBIDDEN[what].search(text)


@pytest.mark.parametrize('text', ['--seed 1', 'fold 1/2', 'x # 2 cores', '[a](#install)', 'p 0.002', '&#39;',
                                  'https://github.com/allenai/bilm-tf/issues', '~/.cache/paddle-elmo'])
def test_the_forbidden_patterns_leave_ordinary_text_alone(text):
    assert not [w for w, p in FORBIDDEN.items() if p.search(text)]


def outside_code(text):
    """The text without fenced code blocks and inline code (links there are not links)."""
    text = re.sub(r'^```.*?^```', '', text, flags=re.S | re.M)
    return re.sub(r'`[^`\n]*`', '', text)


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped except - and _, spaces to -."""
    text = re.sub(r'[`*]', '', heading.strip().lower())
    text = re.sub(r'\[([^\]]*)\]\([^)]*\)', r'\1', text)
    return re.sub(r'[^\w\- ]', '', text).replace(' ', '-')


def anchors(text):
    """The anchors of a Markdown file's headings (GitHub numbers repeated ones -1, -2, ...)."""
    seen, found = {}, set()
    for line in re.sub(r'^```.*?^```', '', text, flags=re.S | re.M).splitlines():
        m = re.match(r'#{1,6} (.+)', line)
        if m:
            s = slug(m.group(1))
            found.add(s if s not in seen else f'{s}-{seen[s]}')
            seen[s] = seen.get(s, 0) + 1
    return found


def test_slug_follows_githubs_rule():
    assert slug('Deploying: Paddle Inference and ONNX') == 'deploying-paddle-inference-and-onnx'
    assert slug('In a downstream model (Paddle)') == 'in-a-downstream-model-paddle'
    assert slug('Time slots, resuming and pre-emption') == 'time-slots-resuming-and-pre-emption'
    assert slug('`--token_input` and word2vec') == '--token_input-and-word2vec'
    assert anchors('# A\n## A\n```\n# not a heading\n```\n') == {'a', 'a-1'}


@pytest.mark.parametrize('doc', user_docs() + ['BENCHMARKS.md', 'benchmarks/HISTORY.md'])
def test_links_inside_the_repository_resolve(doc):
    """[text](path), [text](path#anchor) and [text](#anchor): the file exists, and an anchor names
    one of the headings of the Markdown file it points into. Web links are not fetched."""
    text = read(doc)
    broken = []
    for target in re.findall(r'\]\(([^)\s]+)\)', outside_code(text)):
        if re.match(r'[a-z][a-z0-9+.-]*:', target):  # https:, mailto:
            continue
        path, _, anchor = target.partition('#')
        linked = os.path.normpath(os.path.join(os.path.dirname(doc), path)) if path else doc
        if not os.path.exists(os.path.join(ROOT, linked)):
            broken.append(f'{target}: no such file')
        elif anchor and linked.endswith('.md') and anchor not in anchors(read(linked)):
            broken.append(f'{target}: no such heading in {linked}')
    assert not broken, f'{doc}: ' + '; '.join(broken)
