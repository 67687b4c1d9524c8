"""The documents a user reads: README.md and the docs that ship in the package. They point only at
things a user has (no path of a development machine, no `../shared`, no issue of our tracker), and
their links inside the repository resolve, anchors into Markdown headings included."""
import os
import re

import pytest

from conftest import ROOT

PACKAGE = os.path.join(ROOT, 'paddle_elmo')


def user_docs():
    """README.md, docs/ (its reference pages) and every Markdown file inside the package (they ship with
    it: the model's card)."""
    docs = ['README.md', *(os.path.join('docs', f) for f in os.listdir(os.path.join(ROOT, 'docs')) if f.endswith('.md'))]
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


# ---- every documented command parses ---------------------------------------------------------------

# A command line in a code block: `paddle-elmo SUB ...`, `python -m paddle_elmo SUB ...`, or a checkout
# script (`python run_pretrain.py ...`, also under `python -m paddle.distributed.launch [its flags]`),
# after any VAR=value assignments.
COMMAND_START = re.compile(r'^(?:\$ )?(?:[A-Z_]+=\S+ )*(?P<command>paddle-elmo\b|python3? (?:-m paddle_elmo\b|'
                           r'-m paddle\.distributed\.launch\b|[\w./]*\b(?:run_\w+|word2vec_base|build_vocab|'
                           r'export_weights|export_inference|demo)\.py\b))')


def code_blocks(text):
    """The fenced code blocks' lines, backslash continuations joined -> [(line number, line)]."""
    found, number, block = [], 0, None
    lines = text.splitlines()
    while number < len(lines):
        line = lines[number]
        number += 1
        if line.lstrip().startswith('```'):
            block = None if block is not None else number
            continue
        if block is None:
            continue
        start = number
        while line.rstrip().endswith('\\') and number < len(lines):
            line = line.rstrip()[:-1] + ' ' + lines[number].strip()
            number += 1
        found.append((start, line.strip()))
    return found


def documented_commands(doc):
    """(doc:line, subcommand, argv) of every command line in `doc`'s code blocks; argv stops at a shell
    operator (|, &&, ;, >) or a comment."""
    import shlex
    from paddle_elmo.cli import COMMANDS
    scripts = {script: name for name, (_, script, _) in COMMANDS.items() if script}
    commands = []
    for number, line in code_blocks(read(doc)):
        m = COMMAND_START.match(line)
        if not m:
            continue
        lexer = shlex.shlex(line[m.end('command'):], posix=True, punctuation_chars=True)
        lexer.whitespace_split, lexer.commenters = True, '#'
        words = []
        for word in lexer:
            if set(word) <= set('|&;<>') or word == '...':  # a shell operator, or an ellipsis: "and so on"
                break
            words.append(word)
        command = m.group('command')
        if command.endswith('launch'):  # the launcher's own flags, then the script
            script = next((w for w in words if os.path.basename(w) in scripts), None)
            assert script, f'{doc}:{number}: a launch of no script of ours: {line}'
            name, words = scripts[os.path.basename(script)], words[words.index(script) + 1:]
        elif command.endswith('.py'):
            script = os.path.basename(command.split()[-1])
            assert script in scripts, f'{doc}:{number}: a checkout has no {script} (paddle-elmo SUBCOMMAND): {line}'
            name = scripts[script]
        elif not words or words[0].startswith('-'):  # paddle-elmo --help, --version
            continue
        else:
            name, words = words[0], words[1:]
            assert name in COMMANDS, f'{doc}:{number}: no subcommand {name!r}: {line}'
        commands.append((f'{doc}:{number}', name, words))
    return commands


def parse_error(parser, argv):
    """What argparse says of `argv` (None: it parses; --help counts as parsing)."""
    import contextlib
    import io
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            parser.parse_args(argv)
    except SystemExit as e:
        return None if e.code == 0 else err.getvalue().strip() or f'exit {e.code}'
    return None




# The documents whose code blocks hold commands: README, BENCHMARKS, the model cards (the commands that
# made a bundled model) and docs/ (the package index's long description).
COMMAND_DOCS = sorted({'README.md', 'BENCHMARKS.md', *user_docs(),
                       *(os.path.join('docs', f) for f in os.listdir(os.path.join(ROOT, 'docs')) if f.endswith('.md'))})


def test_the_documents_hold_their_command_lines():
    """The extraction finds what the documents show (a count would catch a changed fence or prompt)."""
    commands = [c for doc in COMMAND_DOCS for c in documented_commands(doc)]
    assert {'pretrain', 'eval', 'finetune', 'word2vec', 'embed', 'export-inference', 'build-vocab'} <= {
        name for _, name, _ in commands}
    assert len(commands) >= 40


def test_the_card_s_commands_are_among_the_parsed():
    """The bundled model's card shows how its float16 softmax was written: that line is parsed too."""
    card = documented_commands(os.path.join('paddle_elmo', 'pretrained', 'README.md'))
    assert ['--softmax_dtype', 'float16'] in [argv[-2:] for _, name, argv in card if name == 'export-weights']


@pytest.mark.parametrize('doc', COMMAND_DOCS)
def test_every_documented_command_parses_with_today_s_flags(doc):
    """Each command line of the document's code blocks, given to its subcommand's parser (nothing runs):
    an unknown flag, a value of the wrong type or a placeholder where a number goes fails."""
    from paddle_elmo.cli import command_parsers
    parsers = command_parsers()
    failed = [f'{where}: {name} {" ".join(argv)}\n    {error}' for where, name, argv in documented_commands(doc)
              for error in [parse_error(parsers[name], argv)] if error]
    assert not failed, '\n'.join(failed)


def test_command_extraction_joins_continuations_and_stops_at_shell_operators(tmp_path, monkeypatch):
    text = ('```\nOMP_NUM_THREADS=1 paddle-elmo embed in.txt out.hdf5 \\\n    --batch_size 8  # a comment\n'
            'python run_eval.py --dev_data_path d | tail -3\npython -m paddle.distributed.launch --gpus 0,1 '
            'run_pretrain.py --device gpu\npaddle-elmo --help\ncat x\n```\npaddle-elmo embed outside code\n')
    (tmp_path / 'DOC.md').write_text(text)
    monkeypatch.setattr(f'{__name__}.ROOT', str(tmp_path))
    assert documented_commands('DOC.md') == [
        ('DOC.md:2', 'embed', ['in.txt', 'out.hdf5', '--batch_size', '8']),
        ('DOC.md:4', 'eval', ['--dev_data_path', 'd']),
        ('DOC.md:5', 'pretrain', ['--device', 'gpu'])]
    (tmp_path / 'DOC.md').write_text('```\npython run_embed.py in.txt out.hdf5\n```\n')  # a script that went
    with pytest.raises(AssertionError, match='DOC.md:2: a checkout has no run_embed.py'):
        documented_commands('DOC.md')


@pytest.mark.parametrize('pattern', [r'\.\./shared\b(?!/measurements/)', r'\.\./runs\b', r'elmo-paddle'])
def test_benchmarks_commands_use_download_data_s_layout_or_placeholders(pattern):
    """Not our machine's directories (../shared, ../runs) nor the cache's old name (paddle_elmo/cache.py's
    is ~/.cache/paddle-elmo)."""
    found = [f'BENCHMARKS.md:{n}: {line.strip()}' for n, line in enumerate(read('BENCHMARKS.md').splitlines(), 1)
             if re.search(pattern, line)]
    assert not found, '\n'.join(found)


# ---- README's install lines: the checkout or a wheel built from it (the package is on no index) -----

def pip_installs(doc):
    """(doc:line, what) of each `pip install` in the document's code blocks: the first thing installed."""
    import shlex
    found = []
    for number, line in code_blocks(read(doc)):
        words = shlex.split(line, comments=True)
        for at in [i for i, w in enumerate(words) if w == 'install' and i and words[i - 1] == 'pip']:
            found.append((f'{doc}:{number}', next(w for w in words[at + 1:] if not w.startswith('-'))))
    return found


def test_readme_installs_the_checkout_or_its_wheel_never_the_index_name():
    """`pip install 'paddle-elmo[cpu]'` finds nothing on an index: README's code installs `.` (with its
    extras), the wheel its own line builds (this version's file name), or another project's package
    (Paddle's GPU build); its very first block makes an environment and installs the checkout with [cpu]."""
    from paddle_elmo import __version__
    wheel = f'dist/paddle_elmo-{__version__}-py3-none-any.whl'
    installs = pip_installs('README.md')
    assert len(installs) >= 5
    wrong = [(where, what) for where, what in installs
             if not (what == '.' or what.startswith(('.[', wheel + '[')) or what.startswith('paddlepaddle-gpu'))]
    assert not wrong, wrong
    assert [line for _, line in code_blocks(read('README.md')) if line.startswith('python -m pip wheel --no-deps -w dist . ')]
    first = read('README.md').split('```bash\n', 1)[1].split('```', 1)[0]
    assert first.startswith('python3 -m venv .venv && . .venv/bin/activate') and "\npip install '.[cpu]'" in first


def test_the_index_s_page_names_no_placeholder_and_says_where_zh_needs_cpu():
    """docs/PYPI.md (the package index's description, pyproject's readme): links are relative or to other
    projects' sites, never the placeholder repository; Chinese is installed with [cpu,zh] (jieba alone
    runs no model)."""
    text = read(os.path.join('docs', 'PYPI.md'))
    assert 'github.com/paddle-elmo' not in text
    zh = [line for line in text.splitlines() if '[zh]' in line or 'cpu,zh' in line]
    assert zh and any('[cpu,zh]' in line for line in zh)
