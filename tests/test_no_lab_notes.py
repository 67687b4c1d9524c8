"""The package's docstrings and comments say what and why: no measured figure (a timing, a speed-up,
a share, a memory reading, an accuracy or cosine to three decimals) and no pointer to BENCHMARKS.md or
benchmarks/results/. A figure lives beside its raw output and in BENCHMARKS.md, where it is checked
(CONVENTIONS, "Evidence"); a copy in a docstring goes stale."""
import ast
import io
import os
import re
import tokenize

from conftest import ROOT

PACKAGE = os.path.join(ROOT, 'paddle_elmo')

# What a lab note looks like, by kind (each applied to one line of a docstring or comment).
LAB_NOTE_PATTERNS = {
    'a pointer to BENCHMARKS or a results folder': r'BENCHMARKS|benchmarks/results',
    'a percentage': r'\d\s?%',
    'a ratio': r'(?<![\w(])\d+(?:\.\d+)?\s?[x×](?![\w(])',  # 3x, 1.71x; not 0x9E37 nor exp(2x)
    'a time': r'\d\s?(?:ns|us|µs|ms|s|sec|seconds?|min|minutes?|hours?)\b',
    'a memory size': r'\d\s?[KMGT]i?B\b',
    'a rate': r'\d\s?(?:tokens|sentences|words|steps)/s\b|GFLOP',
    'a measured value': r'[Mm]easured[^.;]*:\s*\d',
    'a speed-up': r'\d\s*(?:times|x)\s+(?:faster|slower|as fast|as long)',
    'a quality figure': r'(?:perplexity|accuracy|cosine|bits/char)\D{0,20}\d+\.\d+',
    'a figure to three decimals': r'\b\d\.\d{3,}\b',
    'an approximate figure': r'~\s?\d',
}
LAB_NOTE = re.compile('|'.join(f'(?:{p})' for p in LAB_NOTE_PATTERNS.values()))

# Numbers that match a pattern but are no measurement (a line holding one of these is not a lab note).
NOT_MEASUREMENTS = {
    '0.2 s apart': "paddle.distributed.launch's interval between the SIGTERMs it passes on",
    '64 MB, whatever the vocabulary': "predict's MAX_LOGITS, a bound the code applies",
    "HDF5's 64 KB object header": "HDF5's limit on an attribute, a format fact",
    "gensim's log lines every 30 s": "gensim's logging interval",
}


def python_notes(source):
    """(line number, text) of each comment and each line of each docstring of a Python source."""
    notes = [(t.start[0], t.string) for t in tokenize.generate_tokens(io.StringIO(source).readline)
             if t.type == tokenize.COMMENT]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                notes += [(first.lineno + i, line) for i, line in enumerate(first.value.value.splitlines())]
    return notes


def cpp_notes(source):
    """(line number, text) of each // comment and each line of each /* */ comment of a C++ source."""
    notes, in_block = [], False
    for number, line in enumerate(source.splitlines(), 1):
        if in_block:
            notes.append((number, line))
            in_block = '*/' not in line
        elif '/*' in line:
            start = line.index('/*')
            notes.append((number, line[start:]))
            in_block = '*/' not in line[start + 2:]
        elif '//' in line:
            notes.append((number, line[line.index('//'):]))
    return notes


def lab_notes():
    """package-relative path -> ['line: text', ...] of its docstring and comment lines that quote a figure."""
    found = {}
    for directory, _, files in os.walk(PACKAGE):
        for name in sorted(files):
            path = os.path.join(directory, name)
            if name.endswith('.py'):
                notes = python_notes(open(path, encoding='utf-8').read())
            elif name.endswith(('.cc', '.h', '.c')):
                notes = cpp_notes(open(path, encoding='utf-8').read())
            else:
                continue
            hits = [f'{number}: {text.strip()}' for number, text in sorted(notes)
                    if LAB_NOTE.search(text) and not any(allowed in text for allowed in NOT_MEASUREMENTS)]
            if hits:
                found[os.path.relpath(path, ROOT).replace(os.sep, '/')] = hits
    return found


def test_package_docstrings_and_comments_quote_no_measured_figure_nor_benchmarks():
    found = lab_notes()
    assert not found, ('measured figures or BENCHMARKS pointers in docstrings or comments (say what and why; '
                     'the figure belongs in BENCHMARKS.md and its results folder):\n' +
                     '\n'.join(f'{path}:{hit}' for path, hits in sorted(found.items()) for hit in hits))


def test_the_lab_note_patterns_catch_the_figures_they_name_and_pass_what_is_no_measurement():
    for note in ('~3x slower matmuls', '7-10% faster', 'costs 2.6 ms for [640, 4096]', 'the optimizer took 2.4x as long',
                 '48 MB for an original-size W_hidden', '3-8% more tokens/s', 'measured at two threads: 1.021',
                 'worst token cosine 0.982', '(BENCHMARKS.md, "CPU speed")', 'benchmarks/results/int8_7bit/',
                 '~0.07 s of a 35k-word one', '2.979 bits/char', 'perplexity 41.6'):
        assert LAB_NOTE.search(note), note
    for note in ('512 dims, 4096 cells', 'exp(2x) + 1', '0x9E3779B9u', 'cosine >= INT8_MIN_COSINE', 'Paddle 3.3.1',
                 'relative error < 1e-7 on [-87, 88]', 'a multiple of 64 bytes', 'U+3400-4DBF', 'keep 1 in 8'):
        assert not LAB_NOTE.search(note), note
