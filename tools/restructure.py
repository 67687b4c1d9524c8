#!/usr/bin/env python3
"""Issue 54, deliverable 4: `paddle_elmo/` from 43 flat modules to folders by concept, in one go.

Run it at the repository root on a clean tree (nothing staged or modified), with the project's venv:

    .venv/bin/python tools/restructure.py            # moves, splits config.py, rewrites, checks imports
    .venv/bin/python tools/restructure.py --dry-run  # what it would place where, changing nothing
    .venv/bin/python tools/restructure.py --commit   # the same, committed in two steps (see below)

What it does, in order (each step prints what it did):
1. checks the tree: clean, not restructured yet (it refuses to run twice), every module of
   `paddle_elmo/` placed by MOVES (a module added since: `--place NAME=FOLDER`), every top-level
   name of config.py placed by CONFIG_PARTS (`--place config.NAME=recipe|run_plan|config`);
2. `git mv` of every module (and kernels.cc) into its folder, so that history follows; each folder
   gets an `__init__.py` holding one docstring (its concept), no re-exports;
3. splits model/config.py by name: Recipe and the presets into model/recipe.py, the run planning
   (new / resumed / from weights) into train/run_plan.py; each part gets the imports it uses;
4. rewrites every reference in the tracked text files (paddle_elmo/, tests/, benchmarks/, the root
   scripts, pyproject.toml, Makefile, download_data.sh, the Markdown files) by the mapping:
   `import paddle_elmo.X`, `from paddle_elmo import X` (split by folder where it mixes modules,
   public names stay), `from paddle_elmo.X import y` (split where y moved out of config.py),
   `paddle_elmo.X` in strings (mock targets, `-m`, logger names, child processes' code),
   `paddle_elmo/X.py` paths, the package's lazy export table, package data, `__file__` paths to
   the package's data;
5. writes README's folder map, the layer table and its test into tests/test_structure.py;
6. imports every module of the new tree in a child process (`--no-check` skips it).

Without --commit everything is left staged (review `git diff --staged -M`, run the tests, commit). With
--commit it makes two commits: the moves alone, so that `git log --follow` follows every file (config.py
too, which the split rewrites by more than half), then the split and the rewrites.
Kept out of the package: it is a one-off tool.
"""
import argparse
import ast
import hashlib
import os
import re
import subprocess
import sys
import textwrap
import time

PACKAGE = 'paddle_elmo'

# Folder -> (rank, concept). An import goes to a module of its own folder or of a lower rank; two
# folders of the same rank (train, use) import nothing of each other. '' is the package's top: the
# process-wide basics every layer uses.
LAYERS = {
    '': (0, 'process-wide basics: setup before Paddle, logging, the cache directory, files and InputError'),
    'demo_data': (0, 'the sample corpus (package data) and the script that made it'),
    'text': (1, 'text to model input: tokenizers, token and char ids, vocabularies, corpus files, the '
                "language model's batches, word vectors"),
    'model': (2, "the biLM: its config and options.json codec, the training recipe and presets, token "
                 'input modes, each layer\'s math, the model, the index plans, the CPU kernels and their build'),
    'files': (3, "a model's files: options.json / recipe.json / vocab.txt, bilm-tf's hdf5, our checkpoints, "
                 'models by name, resolve_model and its LoadedModel'),
    'train': (4, 'pretraining: the softmax and its sampled form, the optimizers, the language model, '
                 "a run's plan, the loop, loading a language model"),
    'use': (4, 'using a model: Elmo and ScalarMix, the embedders, features, the classifier, prediction'),
    'export': (5, 'exports: the biLM in static ops, the format, writing (Paddle Inference, ONNX, int8), '
                  'the directory, its checks, InferenceEmbedder'),
    'cli': (6, 'the commands and their shared parts'),
}

# module at the package's top -> its new dotted name under paddle_elmo (folder.module)
MOVES = {
    'tokenizers': 'text.tokenizers', 'token_ids': 'text.token_ids', 'vocabulary': 'text.vocabulary',
    'corpus': 'text.corpus', 'lm_batches': 'text.batches', 'word_vectors': 'text.word_vectors',
    'config': 'model.config', 'token_modes': 'model.token_modes', 'layer_math': 'model.layer_math',
    'bilm': 'model.bilm', 'packing': 'model.packing', 'kernels': 'model.kernels',
    'kernel_build': 'model.kernel_build',
    'hdf5_weights': 'files.hdf5_weights', 'checkpoints': 'files.checkpoints', 'model_io': 'files.model_io',
    'model_names': 'files.model_names', 'run_configs': 'files.run_configs',
    # lm_loading loads a language model (lm.LanguageModel: the biLM under its softmax): above lm
    'sampled_softmax': 'train.sampled_softmax', 'optimizers': 'train.optimizers', 'lm': 'train.lm',
    'training': 'train.training', 'lm_loading': 'train.lm_loading',
    'downstream': 'use.downstream', 'sentence_embedder': 'use.sentence_embedder', 'embedder': 'use.embedder',
    'features': 'use.features', 'classifier': 'use.classifier', 'predict': 'use.predict',
    'static_bilm': 'export.static_bilm', 'export_format': 'export.export_format', 'deploy': 'export.deploy',
    'onnx_graph': 'export.onnx_graph', 'quantize': 'export.quantize', 'export_dirs': 'export.export_dirs',
    'export_checks': 'export.export_checks', 'inference': 'export.inference',
}
STAY = ('runtime', 'logs', 'fileio', 'cache', '__init__', '__main__')  # the package's top
OTHER_FILES = {'kernels.cc': 'model/kernels.cc'}  # beside the module that reads it (kernels.SOURCE)
TOP_DATA = ('pretrained', 'demo_data')  # package data that stays at the top: paths to it go up one level

# config.py split by concept. Each top-level name goes to one part; a statement that defines no name
# (an assert) goes with the statement before it; `log` goes to every part that uses it.
SPLIT_SOURCE = 'model.config'
CONFIG_PARTS = {
    'model.config': {'ORIGINAL_FILTERS', 'TOKEN_INPUTS', 'setting', 'ModelConfig', 'REQUIRED', 'OPTION_PATHS',
                     'OUR_OPTIONS', '_field_default', '_get', '_put', 'MODEL_FIELDS'},
    'model.recipe': {'Recipe', 'OPTIMIZERS', 'LR_DECAYS', 'SOFTMAX_BIAS_INITS', 'DROPOUT_MASKS',
                     'BILM_TF_TRAINING_KEYS', 'PRESETS', 'RECIPE_FIELDS', 'split_fields'},
    'train.run_plan': {'from_preset', 'for_resume', 'for_weights', 'for_run', 'check_one_start',
                       '_with_the_weights_vocabulary', '_check_model_flags'},
}
PART_SHORT = {'config': 'model.config', 'recipe': 'model.recipe', 'run_plan': 'train.run_plan'}
PART_DOCSTRINGS = {
    'model.recipe': '"""`Recipe` (how a biLM is pretrained) and the presets: each a full model + recipe by field name,\n'
                    'an explicit flag overriding one value of it. The model\'s own config is config.ModelConfig;\n'
                    'files/run_configs.py reads and writes both.\n"""\n',
    'train.run_plan': '"""A pretraining run\'s configs, whichever way it starts: a new run from a preset, a resumed run\n'
                      '(the checkpoint defines the model), or a new run from pretrained weights (the file defines the\n'
                      'model): `for_run` -> (ModelConfig, Recipe).\n"""\n',
}
CONFIG_DOCSTRING_FIRST_LINE = ('"""The two configs: `ModelConfig` (the biLM\'s shape) and `Recipe` (how it is pretrained).',
                               '"""`ModelConfig`: the biLM\'s shape, and its `options.json` codec (the recipe and presets: recipe.py).')

FOLDER_DOCSTRINGS = {
    'text': 'Text to model input: tokenizers, token and char ids, vocabularies, corpus files, the language\n'
            "model's batches, word vectors. Imports only the package's basics.",
    'model': "The biLM: ModelConfig and its options.json codec, the pretraining Recipe and presets, the token\n"
             "input modes, each layer's math, the model, the index plans that skip padding, the CPU kernels\n"
             '(kernels.cc) and their build. Imports text/ and the basics.',
    'files': "A model's files: options.json, recipe.json and vocab.txt, bilm-tf's hdf5 layout, our checkpoints,\n"
             'models by name, resolve_model and its LoadedModel. Imports model/, text/ and the basics.',
    'train': "Pretraining: the softmax and its sampled form, the optimizers, the language model and its\n"
             "loading, a run's plan (new, resumed, from weights) and the loop. Imports files/ and below.",
    'use': 'Using a model: Elmo and ScalarMix, the embedders (sentences, batches, files), features for the\n'
           'classifiers, the classifier, prediction. Imports files/ and below, nothing of train/.',
    'export': 'Exports: the biLM in static ops, what an export holds, writing one (Paddle Inference, ONNX,\n'
              'int8), its directory and its checks, and InferenceEmbedder. Imports use/ and below.',
}

# README's "How the code is organised": the intro and the table (up to the first blank line after it)
README_HEADING = '## How the code is organised\n'
README_TABLE_SHA = '491a2782'  # first hex digits of the table as this script was written against it, to tell whether it was edited since
README_ROWS = {
    '': 'process-wide setup (imported first by the package: Paddle\'s log level; on first use: device, threads, '
        'MKL\'s path); logging; the cache directory; files and `InputError`',
    'text': 'raw text to tokens; tokens to `TokenInput` (char ids, word ids, lengths: `CharMapper`, '
            '`InputMapper`); vocabularies; corpus files and their cached token counts; bilm-tf\'s batches; word2vec',
    'model': '`ModelConfig` (to and from bilm-tf\'s `options.json`), `Recipe` (how a model is pretrained) and the '
             'presets, one field per setting, named as its flag; each token input mode one registered class '
             '(`TOKEN_INPUT_MODES`); the biLM `BiLM(config)` and its eager token ops; each layer\'s math once in '
             'Paddle ops (`layer_math`), shared by the GPU path and the export; the index plans that skip padding; '
             'the CPU kernels (`kernels.cc`, tested against `layer_math`) and their build',
    'files': 'model files (`options.json`, `recipe.json`, `vocab.txt`, bilm-tf\'s hdf5, our checkpoints); '
             '`resolve_model`, the one place a model is resolved into a `LoadedModel`, which reads its files; models '
             'by name (the one table, downloads into the cache)',
    'train': 'the softmax, its sampled form and the log-uniform sampler; bilm-tf\'s update (Adagrad, Adam) and the '
             'learning rate\'s warm-up and decay; the biLM under the softmax, a training step and perplexity; '
             '`for_run`: a new, resumed or from-weights run\'s configs; the pretraining loop; a language model '
             'loaded from files',
    'use': '`Elmo`, `ScalarMix`; what every embedder does with sentences, batches and files (no Paddle: the '
           'export\'s `InferenceEmbedder` shares it); `ELMoEmbedder` and the dumps; features and the '
           'classification protocol; prediction',
    'export': 'the biLM in Paddle ops only (what an export computes); what an export holds and its names; '
              'writing one (the Paddle program, then model.onnx); the edits of its ONNX graph; int8; its '
              'directory, written atomically; its checks against `ELMoEmbedder`; `InferenceEmbedder`',
    'cli': 'the commands, one module each, and their shared parts: the vocabulary of flags (the table above); '
           'the parser, switches and argparse types; where the model comes from; pretraining\'s flags; the error '
           'boundary and the log; the flag table',
}

TEXT_SUFFIXES = ('.py', '.md', '.toml', '.cfg', '.ini', '.sh', '.yml', '.yaml')
SKIP_PREFIXES = ('tools/restructure.py',)
RECORDS = 'benchmarks/results/'  # raw logs kept as they were; their scripts (.py) are rewritten


def say(*parts):
    print(*parts, flush=True)


def git(*args, capture=True):
    proc = subprocess.run(['git', *args], capture_output=capture, text=True)
    if proc.returncode:
        sys.exit(f'git {" ".join(args)} failed: {proc.stderr.strip()}')
    return proc.stdout


# ---- 1. checks ------------------------------------------------------------------------------------

def parse_places(places):
    """--place NAME=FOLDER (a module) or config.NAME=PART -> ({module: dotted}, {name: part})."""
    modules, names = {}, {}
    for place in places:
        key, _, target = place.partition('=')
        if key.startswith('config.'):
            if target not in PART_SHORT:
                sys.exit(f'--place {place}: the part must be one of {", ".join(PART_SHORT)}')
            names[key[len('config.'):]] = PART_SHORT[target]
        else:
            if target not in LAYERS or not target:
                sys.exit(f'--place {place}: the folder must be one of {", ".join(f for f in LAYERS if f)}')
            modules[key] = f'{target}.{key}'
    return modules, names


def check_tree(moves):
    if not os.path.isfile('pyproject.toml') or not os.path.isdir(PACKAGE):
        sys.exit('run me at the repository root (pyproject.toml and paddle_elmo/ are not here)')
    if os.path.isdir(os.path.join(PACKAGE, 'model')) or not os.path.isfile(os.path.join(PACKAGE, 'bilm.py')):
        sys.exit('refusing: paddle_elmo/ is already restructured (paddle_elmo/model/ exists or bilm.py is gone)')
    dirty = [line for line in git('status', '--porcelain', '--untracked-files=no').splitlines()]
    if dirty:
        sys.exit('refusing: the tree has staged or modified files (commit or stash them first):\n' + '\n'.join(dirty))
    top = sorted(f[:-3] for f in os.listdir(PACKAGE) if f.endswith('.py'))
    unplaced = [m for m in top if m not in moves and m not in STAY]
    if unplaced:
        graph = import_graph()
        lines = []
        for m in unplaced:
            uses = sorted({folder_of(moves, d) for d in graph.get(m, ())} - {''})
            used_by = sorted({folder_of(moves, k) for k, v in graph.items() if m in v} - {''})
            lines.append(f'  {m}: imports {uses or "only basics"}; imported by {used_by or "nothing at the top"}')
        sys.exit('refusing: modules not in the mapping (place each with --place NAME=FOLDER, e.g. --place '
                 f'{unplaced[0]}=files):\n' + '\n'.join(lines))
    for module in [m for m in moves if not os.path.isfile(os.path.join(PACKAGE, m + '.py'))]:
        say(f'  note: paddle_elmo/{module}.py is gone (merged or deleted since): nothing to move')
        del moves[module]
    if 'config' not in moves:
        sys.exit('refusing: paddle_elmo/config.py is gone: the split of config.py needs its mapping redone')


def folder_of(moves, module):
    return moves[module].split('.')[0] if module in moves else ''


def import_graph():
    """Top-level module -> the top-level modules of ours it imports (before the move)."""
    graph = {}
    for f in os.listdir(PACKAGE):
        if f.endswith('.py'):
            with open(os.path.join(PACKAGE, f), encoding='utf-8') as fh:
                tree = ast.parse(fh.read())
            found = set()
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    found.update(a.name.split('.')[1] for a in node.names if a.name.startswith(PACKAGE + '.'))
                elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    if node.module == PACKAGE:
                        found.update(a.name for a in node.names)
                    elif node.module.startswith(PACKAGE + '.'):
                        found.add(node.module.split('.')[1])
            graph[f[:-3]] = found
    return graph


def config_names_imported():
    """Top-level module -> the names it imports from config.py (`from paddle_elmo.config import ...`)."""
    found = {}
    for f in os.listdir(PACKAGE):
        if f.endswith('.py'):
            with open(os.path.join(PACKAGE, f), encoding='utf-8') as fh:
                tree = ast.parse(fh.read())
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and node.module == f'{PACKAGE}.config':
                    found.setdefault(f[:-3], set()).update(a.name for a in node.names)
    return found


def check_layers(moves, part_of):
    """The mapping keeps every import at its own folder or a lower rank (else refuse, naming each), the
    names config.py's split moves to another folder (run_plan: train/) included."""
    graph = import_graph()
    bad = []
    for module, names in config_names_imported().items():
        here = folder_of(moves, module)
        for name in sorted(names):
            there = part_of.get(name, SPLIT_SOURCE).split('.')[0]
            if module not in ('__init__', '__main__') and there != here and not LAYERS[there][0] < LAYERS[here][0]:
                bad.append(f'  {module} ({here or "top"}) imports config.{name}, which goes to {part_of[name]}')
    for module, deps in graph.items():
        if module in ('__init__', '__main__'):
            continue
        here = folder_of(moves, module)
        for dep in deps:
            if dep not in graph or dep in ('__init__',):
                continue
            there = folder_of(moves, dep)
            if there != here and not LAYERS[there][0] < LAYERS[here][0]:
                bad.append(f'  {module} ({here or "top"}) imports {dep} ({there or "top"})')
    return bad


def config_parts(source, placed_names):
    """The split of config.py: [(part, statement source)] in file order, and its imports."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    part_of = {name: part for part, names in CONFIG_PARTS.items() for name in names}
    part_of.update(placed_names)
    body = tree.body
    docstring = body[0] if isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) else None
    imports, statements, unplaced = [], [], []
    previous_end, previous_part = (docstring.end_lineno if docstring else 0), 'model.config'
    for node in body[1 if docstring else 0:]:
        start = min([node.lineno] + [d.lineno for d in getattr(node, 'decorator_list', [])])
        text = ''.join(lines[previous_end:node.end_lineno])
        previous_end = node.end_lineno
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            imports.append((node, text))
            continue
        names = defined_names(node)
        is_def = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        if names == {'log'}:
            statements.append(('log', text, is_def))
            continue
        parts = {part_of.get(n) for n in names}
        if None in parts:
            unplaced.extend(n for n in names if n not in part_of)
            continue
        if len(parts) > 1:
            sys.exit(f'config.py line {start}: one statement defines names of two parts: {sorted(names)}')
        part = parts.pop() if parts else previous_part
        statements.append((part, text, is_def))
        previous_part = part
    if unplaced:
        sys.exit('refusing: config.py defines names the split does not place (add --place config.NAME=PART, '
                 f'PART one of {", ".join(PART_SHORT)}): {", ".join(sorted(unplaced))}')
    tail = ''.join(lines[previous_end:])
    defined = set().union(*(defined_names(node) for node in body))
    part_of = {name: part for name, part in part_of.items() if name in defined}  # names gone since: nothing to do
    return docstring, imports, statements, tail, part_of


def defined_names(node):
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return set()


# ---- 2. moves -------------------------------------------------------------------------------------

def move_files(moves):
    folders = sorted({target.split('.')[0] for target in moves.values()})
    for folder in folders:
        os.makedirs(os.path.join(PACKAGE, folder), exist_ok=True)
        init = os.path.join(PACKAGE, folder, '__init__.py')
        with open(init, 'w', encoding='utf-8') as f:
            f.write(f'"""{FOLDER_DOCSTRINGS[folder]}\n"""\n')
        git('add', init)
    for module, target in sorted(moves.items()):
        git('mv', os.path.join(PACKAGE, module + '.py'), os.path.join(PACKAGE, *target.split('.')) + '.py')
    for name, target in OTHER_FILES.items():
        git('mv', os.path.join(PACKAGE, name), os.path.join(PACKAGE, target))
    say(f'moved {len(moves)} modules and {len(OTHER_FILES)} other file(s) into {", ".join(f + "/" for f in folders)} '
        f'(git mv), each folder with an __init__.py docstring')


# ---- 3. config.py split ---------------------------------------------------------------------------

def used_names(text):
    try:
        tree = ast.parse(text)
    except SyntaxError:
        tree = ast.parse('if True:\n' + ''.join('    ' + line for line in text.splitlines(keepends=True)))
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | \
        {n.value.id for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)}


def format_from_import(module, names, indent='', comment=''):
    """`from module import a, b` at 120 columns in the project's style (parenthesised, aligned), with
    `comment` (a noqa) on its first line."""
    head = f'{indent}from {module} import '
    tail = f'  {comment}' if comment else ''
    one = head + ', '.join(names)
    if len(one) + len(tail) <= 120:
        return one + tail
    first, pad = head + '(', ' ' * (len(head) + 1)
    lines, line = [], first
    for i, name in enumerate(names):
        piece = name + (',' if i < len(names) - 1 else ')')
        limit = 120 - (len(tail) if not lines else 0)
        if line not in (first, pad) and len(line) + 1 + len(piece) > limit:
            lines.append(line)
            line = pad + piece
        else:
            line += ('' if line in (first, pad) else ' ') + piece
    lines.append(line)
    lines[0] += tail
    return '\n'.join(lines)


def tidy_imports(text, folders):
    """Each `from paddle_elmo.FOLDER.module import ...` statement of code, rewrapped where the longer module
    name left it past 120 columns or its continuation lines out of line with its parenthesis."""
    pattern = re.compile(rf'^([ \t]*)from ({PACKAGE}\.(?:{"|".join(folders)})\.\w+) import (\([^)]*\)|[^\n]*)', re.M)

    def tidy(m):
        indent, module, names_text = m.groups()
        statement = m.group(0)
        lines = statement.split('\n')
        aligned = all(line.startswith(' ' * (len(indent) + len(f'from {module} import (')))
                      and not line[len(indent) + len(f'from {module} import ('):].startswith(' ') for line in lines[1:])
        if aligned and max(map(len, lines)) <= 120:
            return statement
        comments = re.findall(r'#[^\n]*', names_text)
        if [c for c in comments if 'noqa' not in c] or len(set(comments)) > 1:
            return statement  # a comment of its own inside: left as written
        names = [n.strip() for n in re.sub(r'#[^\n]*', '', names_text).strip('()').replace('\n', ' ').split(',')
                 if n.strip()]
        return format_from_import(module, names, indent, comments[0] if comments else '')
    return pattern.sub(tidy, text)


def split_config(placed_names):
    path = os.path.join(PACKAGE, 'model', 'config.py')
    with open(path, encoding='utf-8') as f:
        source = f.read()
    docstring, imports, statements, tail, part_of = config_parts(source, placed_names)
    lines = source.splitlines(keepends=True)
    header = ''.join(lines[:docstring.end_lineno]) if docstring else ''
    for old, new in [CONFIG_DOCSTRING_FIRST_LINE]:
        if header.startswith(old):
            header = new + header[len(old):]
        else:
            say('  note: config.py\'s docstring was edited since today: its first line is kept, check it names '
                'ModelConfig only')
    log_text = next((t for p, t, _ in statements if p == 'log'), '').lstrip('\n')
    bodies = {part: join_statements([(t, d) for p, t, d in statements if p == part]) for part in CONFIG_PARTS}
    defined = {part: {n for n, p in part_of.items() if p == part} for part in CONFIG_PARTS}
    for part, body in bodies.items():
        if not body.strip():
            say(f'  config.py split: nothing of config.py goes to {part} (its names are gone): not written')
            continue
        if 'log' in used_names(body):
            body = '\n' + log_text + body
        uses = used_names(body)
        needed_imports = []
        for node, text in imports:
            bound = [(a.asname or a.name).split('.')[0] for a in node.names]
            keep = [a for a, b in zip(node.names, bound) if b in uses]
            if part == 'model.config' and 'noqa: F401' in text:  # the re-exports stay where importers find them
                needed_imports.append(text.strip('\n'))
            elif keep and len(keep) == len(node.names):
                needed_imports.append(text.strip('\n'))
            elif keep:
                if isinstance(node, ast.Import):
                    needed_imports.append('import ' + ', '.join(ast.unparse(a) for a in keep))
                else:
                    needed_imports.append(format_from_import(node.module, [ast.unparse(a) for a in keep]))
        for other in CONFIG_PARTS:
            if other != part:
                wanted = sorted(n for n in defined[other] & uses if not n.startswith('_'))
                private = sorted(n for n in defined[other] & uses if n.startswith('_'))
                if private:
                    sys.exit(f'config.py split: {part} would use private {private} of {other}: place them together')
                if wanted:
                    needed_imports.append(format_from_import(f'{PACKAGE}.{other}', wanted))
        text = (header if part == 'model.config' else PART_DOCSTRINGS[part])
        text += '\n'.join(sort_imports(needed_imports)) + '\n'
        text += body if body.startswith('\n\n') else '\n' + body
        if part == 'model.config':
            text += tail
        text = re.sub(r'\n{4,}', '\n\n\n', text).rstrip('\n') + '\n'
        target = os.path.join(PACKAGE, *part.split('.')) + '.py'
        with open(target, 'w', encoding='utf-8') as f:
            f.write(text)
        git('add', target)
        say(f'  config.py split: {part} holds {", ".join(sorted(defined[part]))}')


def join_statements(statements):
    """[(a statement's text with the comments and blank lines before it, whether it is a def or class)]
    -> the text of one part: two blank lines around a def or class, else the blank lines it had."""
    out, previous_def = '', True
    for text, is_def in statements:
        blank = len(text) - len(text.lstrip('\n'))
        out += '\n' * (3 if is_def or previous_def else blank) + text.lstrip('\n')
        previous_def = is_def
    return out


def sort_imports(statements):
    """Standard library first, then ours (as the project writes them), each group in its given order."""
    def code(statement):
        return '\n'.join(line for line in statement.split('\n') if not line.lstrip().startswith('#'))
    ours = [s for s in statements if code(s).startswith((f'from {PACKAGE}', f'import {PACKAGE}'))]
    rest = [s for s in statements if s not in ours]
    return rest + ([''] if rest and ours else []) + ours


# ---- 4. rewrites ----------------------------------------------------------------------------------

def text_files():
    files = []
    for path in git('ls-files').splitlines():
        if path.startswith(SKIP_PREFIXES) or not os.path.isfile(path) or (path.startswith(RECORDS) and
                                                                          not path.endswith('.py')):
            continue
        if path.startswith(f'{PACKAGE}/pretrained/') and not path.endswith('.md'):
            continue
        if path.endswith(TEXT_SUFFIXES) or os.path.basename(path) in ('Makefile',):
            files.append(path)
    return files


class Rewriter:
    """Every reference to a moved module (or to a name moved out of config.py), rewritten by the mapping."""

    def __init__(self, moves, part_of):
        self.moves = moves
        self.part_of = {n: p for n, p in part_of.items() if p != SPLIT_SOURCE}  # names that left config.py
        names = '|'.join(sorted(moves, key=len, reverse=True))
        self.dotted = re.compile(rf'\b{PACKAGE}\.({names})(?![\w])')
        self.path = re.compile(rf'\b{PACKAGE}/({names})\.py\b')
        self.other_files = {f'{PACKAGE}/{old}': f'{PACKAGE}/{new}' for old, new in OTHER_FILES.items()}
        after_line_break = r'(?:(?<=\\n)|(?<![\w.]))'  # also after a `\n` inside a string of code
        self.from_package = re.compile(rf'{after_line_break}from {PACKAGE} import ')
        split_module = f'{PACKAGE}.{SPLIT_SOURCE}'
        self.from_split = re.compile(rf'{after_line_break}from {re.escape(split_module)} import ')
        moved = '|'.join(sorted(self.part_of, key=len, reverse=True))
        self.split_dotted = re.compile(rf'\b{re.escape(split_module)}\.({moved})\b')
        self.split_prose = re.compile(rf'(?<![\w.])config\.({moved})\b')
        self.renamed = {old: new.split('.')[-1] for old, new in moves.items() if old != new.split('.')[-1]}
        self.aliased = set()

    def rewrite(self, path, text):
        original = text
        # a renamed module (lm_batches -> batches) imported by `from paddle_elmo import lm_batches` keeps its
        # old name as an alias where its new name already names something in the file
        self.aliased = {old for old, new in self.renamed.items()
                        if re.search(rf'(?<![\w.]){new}\b', text) and
                        re.search(rf'\bfrom {PACKAGE} import [^\n;]*\b{old}\b', text)}
        text = self.rewrite_from_imports(text, self.from_package, PACKAGE, self.package_target, path)
        text = self.dotted.sub(lambda m: f'{PACKAGE}.{self.moves[m.group(1)]}', text)
        text = self.path.sub(lambda m: f'{PACKAGE}/{self.moves[m.group(1)].replace(".", "/")}.py', text)
        for old, new in self.other_files.items():
            text = text.replace(old, new)
        text = self.rewrite_from_imports(text, self.from_split, f'{PACKAGE}.{SPLIT_SOURCE}', self.split_target, path)
        text = self.split_dotted.sub(lambda m: f'{PACKAGE}.{self.part_of[m.group(1)]}.{m.group(1)}', text)
        if re.search(rf'\b(from {PACKAGE}(\.model)? import [^\n]*\bconfig\b|import {PACKAGE}\.(model\.)?config as)',
                     original):
            if self.split_prose.search(text):
                say(f'  WARNING: {path} imports the module config and uses names that left it '
                    f'({", ".join(sorted(set(self.split_prose.findall(text))))}): import them from their part')
        else:  # prose (`config.for_run`) names the part
            text = self.split_prose.sub(lambda m: f'{self.part_of[m.group(1)].split(".")[-1]}.{m.group(1)}', text)
        for old, new in self.renamed.items():
            if old not in self.aliased:  # its uses in code and prose (`lm_batches.LMStream`, lm_batches.py)
                text = re.sub(rf'(?<![\w./]){old}\b', new, text)
        return text, text != original

    def package_target(self, name):
        """`from paddle_elmo import name` -> (module to import it from, its name there)."""
        if name in self.moves:
            folder, new = self.moves[name].rsplit('.', 1)
            return f'{PACKAGE}.{folder}', new
        return PACKAGE, name

    def split_target(self, name):
        return f'{PACKAGE}.{self.part_of.get(name, SPLIT_SOURCE)}', name

    def rewrite_from_imports(self, text, pattern, module, target_of, path):
        out, position = [], 0
        for m in pattern.finditer(text):
            if m.start() < position:
                continue
            names_text, end = self.read_names(text, m.end())
            if names_text is None:
                continue
            regrouped = self.regroup(text, m.start(), end, names_text, module, target_of, path)
            if regrouped is None:
                continue
            out.append(text[position:m.start()])
            out.append(regrouped[0])
            position = regrouped[1]
        out.append(text[position:])
        return ''.join(out)

    @staticmethod
    def read_names(text, start):
        """The names after `import ` -> (their text, where the statement ends), or (None, _) for `*`."""
        if text.startswith('(', start):
            end = text.index(')', start) + 1
            return text[start:end], end
        m = re.match(r"[\w ,]*\w", text[start:])
        if not m or m.group(0).strip() == '':
            return None, start
        return m.group(0), start + m.end()

    def regroup(self, text, start, end, names_text, module, target_of, path):
        inside = names_text.strip('()')
        comments = re.findall(r'#[^\n]*', inside)
        inside = re.sub(r'#[^\n]*', '', inside)
        names = [n.strip() for n in inside.replace('\n', ' ').split(',') if n.strip()]
        groups = {}
        for name in names:
            base, _, alias = (p.strip() for p in name.partition(' as '))
            target, new = target_of(base)
            if new != base and not alias and base in self.aliased:
                alias = base
            groups.setdefault(target, []).append(f'{new} as {alias}' if alias and alias != new else new)
        if list(groups) == [module] and all(g == n for g, n in zip(groups[module], names)):
            return None
        line_start = text.rfind('\n', 0, start) + 1
        before = text[line_start:start]
        line_end = text.find('\n', end)
        line_end = len(text) if line_end < 0 else line_end
        after = text[end:line_end]
        in_code = before.strip() == '' and (after.strip() == '' or after.strip().startswith('#'))
        if in_code:  # a noqa comment after the statement, or inside its parentheses, goes on each new statement
            comment = after.strip() if 'noqa' in after else next((c for c in comments if 'noqa' in c), '')
            statements = [format_from_import(t, ns, before, comment) for t, ns in groups.items()]
            return '\n'.join(statements)[len(before):], (line_end if 'noqa' in after else end)
        return '; '.join(f'from {t} import {", ".join(ns)}' for t, ns in groups.items()), end



def rewrite_files(rewriter):
    changed = []
    for path in text_files():
        with open(path, encoding='utf-8') as f:
            text = f.read()
        new, _ = rewriter.rewrite(path, text)
        if path == f'{PACKAGE}/__init__.py':
            new = rewrite_export_table(new, rewriter)
        if path.startswith(f'{PACKAGE}/') and path.endswith('.py'):
            new = fix_data_paths(path, new)
        if path.endswith('.py') and new != text:
            new = tidy_imports(new, sorted({t.split('.')[0] for t in rewriter.moves.values()}))
        if new != text:
            with open(path, 'w', encoding='utf-8') as f:
                f.write(new)
            changed.append(path)
    return changed


def rewrite_export_table(text, rewriter):
    """The package's lazy exports `'Name': 'module'` -> `'Name': 'folder.module'` (by name for config's parts),
    one line per module as the table is written; the docstring's `.module` mentions likewise."""
    block = re.search(r'^_EXPORTS = \{\n(.*?)^\}', text, re.S | re.M)
    if not block:
        say('  note: paddle_elmo/__init__.py has no _EXPORTS table: the public names are not rewritten')
        return text
    by_module = {}
    for name, module in re.findall(r"'(\w+)': '(\w+)'", block.group(1)):
        target = rewriter.part_of.get(name) if module == 'config' and name in rewriter.part_of else \
            rewriter.moves.get(module, module)
        by_module.setdefault(target, []).append(f"'{name}': '{target}'")
    lines = []
    for entries in by_module.values():
        line = '   '
        for entry in entries:
            if len(line) + len(entry) + 2 > 120:
                lines.append(line)
                line = '   '
            line += f' {entry},'
        lines.append(line)
    text = text[:block.start(1)] + '\n'.join(lines) + '\n' + text[block.end(1):]
    text = text.replace("its concept (`paddle_elmo.model.config`, `.bilm`, `.model_io`, `.hdf5_weights`, `.downstream`, "
                        "`.embedder`, ...)\n",
                        "its concept (`paddle_elmo.model.config`, `.model.bilm`, `.files.model_io`, `.use.downstream`,\n"
                        "`.use.embedder`, ...: README's code map)\n")
    return re.sub(r'`\.(\w+)`', lambda m: f'`.{rewriter.moves.get(m.group(1), m.group(1))}`', text)


def fix_data_paths(path, text):
    """A moved module that finds the package's data beside itself (`pretrained/`, `demo_data/`) looks one up."""
    here = 'os.path.dirname(os.path.abspath(__file__))'
    if path.count('/') < 2 or here not in text or not any(f"'{d}'" in text for d in TOP_DATA):
        return text
    say(f'  {path}: __file__-relative path to the package\'s data goes up one folder')
    return text.replace(here, f'os.path.dirname({here})')


def fix_package_data():
    path = 'pyproject.toml'
    with open(path, encoding='utf-8') as f:
        text = f.read()
    new = text
    for old, target in OTHER_FILES.items():
        new = new.replace(f'"{old}"', f'"{target}"')
    if new == text:
        say('  note: pyproject.toml\'s package data names none of ' + ', '.join(OTHER_FILES) + ': check it')
    with open(path, 'w', encoding='utf-8') as f:
        f.write(new)


# ---- 5. README's map, the layer test --------------------------------------------------------------

def folder_map(moves):
    rows = ['| folder | modules | concept |', '| --- | --- | --- |']
    modules = {f: [] for f in LAYERS}
    for target in sorted(moves.values()):
        folder, name = target.split('.')
        modules[folder].append(name)
    modules[''] = [m for m in STAY if not m.startswith('__')]
    for part in CONFIG_PARTS:
        folder, name = part.split('.')
        if name not in modules[folder]:
            modules[folder].append(name)
    modules['cli'] = sorted(f[:-3] for f in os.listdir(os.path.join(PACKAGE, 'cli'))
                            if f.endswith('.py') and f != '__init__.py')
    for folder, (rank, _) in sorted(LAYERS.items(), key=lambda kv: kv[1][0]):
        if folder == 'demo_data':
            continue
        names = ', '.join(f'`{m}`' for m in sorted(modules[folder]))
        label = '`paddle_elmo/` (top)' if not folder else f'`{folder}/`'
        rows.append(f'| {label} | {names} | {README_ROWS[folder]} |')
    return '\n'.join(rows) + '\n'


README_INTRO = """`paddle_elmo/` is the library, in folders by concept, each a layer that imports only its own folder
and the layers below it (the table goes bottom up; `train/` and `use/` share a rank and import
nothing of each other): the process-wide basics at the package's top, then `text/`, `model/`,
`files/`, `train/` and `use/`, `export/`, and `cli/`, the commands, one module each, beside their
shared parts. {data} The scripts at the top of a checkout are thin front doors into the package;
`benchmarks/` and [BENCHMARKS.md](BENCHMARKS.md) hold the measurements.
"""
README_DATA = '`paddle_elmo/pretrained/` holds the bundled model and its card, `paddle_elmo/demo_data/` the sample corpus.'


def readme_map(text):
    """README's code map -> (where its intro starts, where its table starts, where the table ends) in text, or None."""
    if README_HEADING not in text:
        return None
    start = text.index(README_HEADING) + len(README_HEADING)
    table_start = text.index('\n| ', start) + 1
    return start, table_start, text.index('\n\n', table_start) + 1


def readme_map_edited():
    """Before anything moves: README's code map table as it is, when it differs from the one this script was
    written against (a branch merged since added to it), else None."""
    with open('README.md', encoding='utf-8') as f:
        text = f.read()
    span = readme_map(text)
    old = text[span[1]:span[2]] if span else ''
    return None if hashlib.sha1(old.encode()).hexdigest()[:len(README_TABLE_SHA)] == README_TABLE_SHA else old


def write_readme(moves, edited):
    path = 'README.md'
    with open(path, encoding='utf-8') as f:
        text = f.read()
    span = readme_map(text)
    if span is None:
        say('  note: README.md has no "How the code is organised" section: folder map not written')
        return
    start, table_start, table_end = span
    if edited is not None:
        say('  note: README\'s code map was edited since this script was written; its rows were:\n'
            + edited + '  (carry what they add into the folder map by hand)')
    # the intro's sentence on the package's data (the bundled models, the demo corpus) is carried over as it is
    data = re.search(r'`paddle_elmo/pretrained/`.*?the sample corpus\.', text[start:table_start], re.S)
    data = ' '.join(data.group(0).split()) if data else README_DATA
    intro = textwrap.fill(' '.join(README_INTRO.format(data=data).split()), 100) + '\n'
    new = text[:start] + '\n' + intro + '\n' + folder_map(moves) + text[table_end:]
    new = new.replace('(`tests/test_structure.py` holds all four)',
                      '(`tests/test_structure.py` holds all four,\nand the layers)')
    with open(path, 'w', encoding='utf-8') as f:
        f.write(new)
    say('  README.md: "How the code is organised" is the folder map')


LAYER_TEST = '''

# ---- the layers ----------------------------------------------------------------------------------
# paddle_elmo/'s folders, bottom up (README's "How the code is organised"). A module imports modules of
# its own folder or of a lower rank: no import climbs back up, and the two folders of rank 4 (train,
# use) import nothing of each other. '' is the package's top: the process-wide basics.
LAYERS = {LAYERS}
ENTRY_POINTS = ('paddle_elmo', 'paddle_elmo.__main__')  # the public API (imports on use) and `python -m`


def layer_of(module):
    """paddle_elmo.FOLDER.module and the folder's package paddle_elmo.FOLDER -> FOLDER; a module at the top -> ''."""
    parts = module.split('.')
    return parts[1] if len(parts) > 2 or parts[1] in LAYERS else ''


def public_name_module(name):
    """`paddle_elmo.ELMoEmbedder` (a public name imported from the package) -> the module defining it."""
    import paddle_elmo
    short = name[len('paddle_elmo.'):]
    return f'paddle_elmo.{{paddle_elmo._EXPORTS[short]}}' if short in paddle_elmo._EXPORTS else None


def test_every_module_lives_in_a_layer():
    for name in package_modules():
        if name not in ENTRY_POINTS:
            assert layer_of(name) in LAYERS, f'{{name}} is in no layer: add its folder to LAYERS'


def test_no_import_climbs_back_up():
    modules = package_modules()
    for name, path in modules.items():
        if name in ENTRY_POINTS:
            continue
        here = layer_of(name)
        for imported in imported_names(path):
            target = imported if imported in modules else public_name_module(imported)
            if target is None or target == 'paddle_elmo':
                continue
            there = layer_of(target)
            assert there == here or LAYERS[there] < LAYERS[here], (
                f'{{name}} ({{here or "top"}}, rank {{LAYERS[here]}}) imports {{imported}} ({{there or "top"}}, rank '
                f'{{LAYERS[there]}}): an import goes to its own folder or a lower rank')
'''


def write_layer_test():
    path = os.path.join('tests', 'test_structure.py')
    with open(path, encoding='utf-8') as f:
        text = f.read()
    ranks = '{' + ', '.join(f"'{folder}': {rank}" for folder, (rank, _) in LAYERS.items()) + '}'
    text = text.rstrip('\n') + '\n' + LAYER_TEST.format(LAYERS=ranks)
    with open(path, 'w', encoding='utf-8') as f:
        f.write(text)
    say('  tests/test_structure.py: LAYERS and the test that no import climbs back up')


# ---- 6. check -------------------------------------------------------------------------------------

def check_imports():
    modules = []
    for directory, _, files in os.walk(PACKAGE):
        for f in files:
            if f.endswith('.py') and 'demo_data' not in directory:
                rel = os.path.relpath(os.path.join(directory, f))[:-3].replace(os.sep, '.')
                modules.append(rel[:-len('.__init__')] if rel.endswith('.__init__') else rel)
    code = ('import importlib, sys\nfailed = []\nfor m in sys.argv[1:]:\n    try:\n        importlib.import_module(m)\n'
            '    except Exception as e:\n        failed.append(f"{m}: {type(e).__name__}: {e}")\nprint("\\n".join(failed))\n'
            'sys.exit(1 if failed else 0)')
    proc = subprocess.run([sys.executable, '-c', code, *sorted(modules)], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=os.getcwd()))
    if proc.returncode:
        say('IMPORT CHECK FAILED:\n' + proc.stdout + proc.stderr[-2000:])
        return False
    say(f'imported every module of the new tree ({len(modules)}) with {sys.executable}')
    return True


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--place', action='append', default=[], metavar='NAME=FOLDER',
                        help='place a module added since (NAME=FOLDER), or a name added to config.py '
                             '(config.NAME=config|recipe|run_plan)')
    parser.add_argument('--dry-run', action='store_true', help='check and print the mapping, change nothing')
    parser.add_argument('--no-check', action='store_true', help='skip importing every module at the end')
    parser.add_argument('--commit', action='store_true',
                        help='commit in two steps: the moves alone (so that `git log --follow` follows every file, '
                             'config.py too), then the split and the rewrites (only when every module imports)')
    a = parser.parse_args()
    began = time.time()
    placed_modules, placed_names = parse_places(a.place)
    moves = {**MOVES, **placed_modules}
    check_tree(moves)
    with open(os.path.join(PACKAGE, 'config.py'), encoding='utf-8') as f:
        config_source = f.read()
    _, _, _, _, part_of = config_parts(config_source, placed_names)
    bad = check_layers(moves, part_of)
    if bad:
        sys.exit('refusing: with this mapping these imports would climb back up (place the module or name '
                 'elsewhere):\n' + '\n'.join(bad))
    readme_edited = readme_map_edited()
    for module, target in sorted(moves.items(), key=lambda kv: (LAYERS[kv[1].split('.')[0]][0], kv[1])):
        say(f'  paddle_elmo/{module}.py -> paddle_elmo/{target.replace(".", "/")}.py')
    if a.dry_run:
        say('dry run: nothing changed')
        return 0
    move_files(moves)
    if a.commit:
        git('commit', '-q', '-m', 'Issue 54: paddle_elmo/ in folders by concept, the moves alone (git mv, each folder\'s '
            '__init__.py); the next commit rewrites the imports, so this one does not import')
        say('committed the moves')
    split_config(placed_names)
    changed = rewrite_files(Rewriter(moves, part_of))
    say(f'rewrote references in {len(changed)} files:')
    for path in changed:
        say(f'    {path}')
    fix_package_data()
    write_readme(moves, readme_edited)
    write_layer_test()
    git('add', '-u')
    ok = True if a.no_check else check_imports()
    if a.commit and ok:
        git('commit', '-q', '-m', 'Issue 54: config.py split by concept (model/config.py: ModelConfig and its options '
            'codec; model/recipe.py: Recipe and the presets; train/run_plan.py: a run\'s configs, however it starts); '
            'every import, mock target, path and module string rewritten by the mapping (tools/restructure.py); '
            'README\'s folder map; test_structure states the layers')
        say('committed the split and the rewrites')
    say(f'done in {time.time() - began:.1f} s; ' + ('' if a.commit and ok else 'the rest is staged, not committed: ') +
        'review `git show --stat -M`, run the tests')
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
