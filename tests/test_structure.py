"""The code's shape: the modules' import graph has no cycle and the library never imports a script;
README's Python API examples run as written (with the file names pointed at real files)."""
import ast
import os
import re
import subprocess
import sys

import pytest

from conftest import ROOT, require, FIXTURE

PACKAGE = os.path.join(ROOT, 'paddle_elmo')
# The PaddleNLP example's files, as its card names them (every other command is `paddle-elmo SUBCOMMAND`,
# `python -m paddle_elmo SUBCOMMAND` in a checkout)
FRONT_DOORS = ('args.py', 'dataset.py', 'elmo.py', 'run_pretrain.py', 'run_eval.py', 'run_finetune.py',
               'word2vec_base.py')


def package_modules():
    """Dotted name -> file of every module in paddle_elmo/."""
    modules = {}
    for directory, _, files in os.walk(PACKAGE):
        for f in files:
            if f.endswith('.py'):
                rel = os.path.relpath(os.path.join(directory, f), ROOT)[:-3].replace(os.sep, '.')
                modules[rel[:-len('.__init__')] if rel.endswith('.__init__') else rel] = os.path.join(directory, f)
    return modules


def imported_names(path):
    """The absolute module names a file imports (at the top or inside functions), with each
    `from X import y` also giving X.y (y may be a module)."""
    with open(path, encoding='utf-8') as f:
        tree = ast.parse(f.read())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f'{node.module}.{alias.name}' for alias in node.names)
    return found


def our_imports():
    """module -> the package modules it imports."""
    modules = package_modules()
    return {name: sorted(imported_names(path) & set(modules) - {name}) for name, path in modules.items()}


def is_command(module):
    return module == 'paddle_elmo.cli' or module.startswith('paddle_elmo.cli.')


def assert_no_cycle(graph, ignored=()):
    """graph: module -> the modules it imports; fails naming the first cycle met (`ignored`: modules
    whose imports are not followed, e.g. a parent package Python imports first anyway)."""
    state = {}

    def visit(module, path):
        if state.get(module) == 'done':
            return
        assert state.get(module) != 'open', 'import cycle: ' + ' -> '.join(path + [module])
        state[module] = 'open'
        for dependency in graph[module]:
            if dependency not in ignored:
                visit(dependency, path + [module])
        state[module] = 'done'

    for module in graph:
        visit(module, [])


def test_the_import_graph_has_no_cycle_and_the_library_imports_no_command():
    graph = our_imports()
    for module, dependencies in graph.items():
        if not is_command(module) and module != 'paddle_elmo.__main__':
            assert not [d for d in dependencies if is_command(d)], f'{module} imports {dependencies}'
    assert_no_cycle(graph, ignored=('paddle_elmo',))  # every module's parent package, imported first by Python


def test_the_benchmarks_import_graph_has_no_cycle():
    """benchmarks/ modules import each other by bare name (they run as scripts from there): no circle
    (matmul_ceiling -> profile_* -> roofline -> matmul_ceiling was one)."""
    directory = os.path.join(ROOT, 'benchmarks')
    modules = {f[:-3]: os.path.join(directory, f) for f in os.listdir(directory) if f.endswith('.py')}
    graph = {name: sorted(imported_names(path) & set(modules) - {name}) for name, path in modules.items()}
    assert graph['matmul_ceiling'] and graph['roofline'], 'the graph reads no import: imported_names changed?'
    assert_no_cycle(graph)


def test_the_library_raises_and_only_the_command_boundary_exits():
    for name, path in package_modules().items():
        if not is_command(name) and name != 'paddle_elmo.__main__':
            assert 'sys.exit' not in open(path, encoding='utf-8').read(), \
                f'{name} exits: raise InputError or RunFailure, and let cli/runner.py turn it into an exit code'


def test_the_front_doors_at_the_top_are_thin_and_the_library_is_in_the_package():
    top = sorted(f for f in os.listdir(ROOT) if f.endswith('.py'))
    assert top == sorted(FRONT_DOORS)
    for name in top:
        with open(os.path.join(ROOT, name), encoding='utf-8') as f:
            tree = ast.parse(f.read())
        defined = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))]
        assert not defined, f'{name} defines {[n.name for n in defined]}: library code belongs in paddle_elmo/'
        outside = [n for n in imported_names(os.path.join(ROOT, name)) if not n.startswith('paddle_elmo')]
        assert not outside, f'{name} imports {outside}: a front door only calls into paddle_elmo'


def test_tests_share_helpers_through_conftest_or_helpers_not_each_other_or_commands():
    tests = os.path.join(ROOT, 'tests')
    for f in os.listdir(tests):
        if f.endswith('.py'):
            names = imported_names(os.path.join(tests, f))
            assert not [n for n in names if n.split('.')[0].startswith('test_')], f'{f} imports another test module'


def test_the_modules_handed_out_first_are_test_modules_and_make_test_keeps_their_order():
    # a renamed module would silently leave conftest's list (and go back among the last handed out)
    from conftest import SLOWEST_MODULES
    modules = {f[:-3] for f in os.listdir(os.path.join(ROOT, 'tests')) if f.startswith('test_') and f.endswith('.py')}
    assert len(set(SLOWEST_MODULES)) == len(SLOWEST_MODULES) and not set(SLOWEST_MODULES) - modules
    with open(os.path.join(ROOT, 'Makefile')) as f:  # xdist's own order (by number of tests) would replace it
        assert '--dist loadscope --no-loadscope-reorder tests' in f.read()


def readme_python_block(heading):
    text = open(os.path.join(ROOT, 'README.md'), encoding='utf-8').read()
    section = text[text.index(heading):]
    return re.search(r'```python\n(.*?)```', section, re.S).group(1)


@pytest.fixture
def api_files(tmp_path):
    """README's file names, made real: the reference fixture, a checkpoint of ours, a text file."""
    require(FIXTURE)
    import paddle
    from paddle_elmo import resolve_model
    bilm = resolve_model(os.path.join(FIXTURE, 'options.json'),
                         os.path.join(FIXTURE, 'lm_weights.hdf5')).load()
    (tmp_path / 'checkpoints').mkdir()
    (tmp_path / 'checkpoints' / 'options.json').write_text(open(os.path.join(FIXTURE, 'options.json')).read())
    paddle.save(bilm.state_dict(), str(tmp_path / 'checkpoints' / 'final.pdparams'))
    (tmp_path / 'options.json').write_text(open(os.path.join(FIXTURE, 'options.json')).read())
    os.symlink(os.path.join(FIXTURE, 'lm_weights.hdf5'), tmp_path / 'weights.hdf5')
    (tmp_path / 'sentences.txt').write_text('The first sentence .\nSecond one .\n')
    return tmp_path


@pytest.mark.parametrize('heading', ['## Quick start', '## Embedding sentences',
                                     '### In a downstream model (Paddle)'])
def test_readme_api_examples_run_as_written(heading, api_files):
    proc = subprocess.run([sys.executable, '-c', readme_python_block(heading)], cwd=api_files, capture_output=True,
                          text=True, env=dict(os.environ, PYTHONPATH=ROOT), timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]


def closure(graph, module):
    """The package modules `module` imports, directly or through others."""
    seen, todo = set(), [module]
    while todo:
        for dependency in graph[todo.pop()]:
            if dependency not in seen and dependency != 'paddle_elmo':
                seen.add(dependency)
                todo.append(dependency)
    return seen


INFERENCE_PATH = ('paddle_elmo.use.embedder', 'paddle_elmo.export.inference', 'paddle_elmo.files.model_io', 'paddle_elmo.use.downstream',
                  'paddle_elmo.export.static_bilm', 'paddle_elmo.model.bilm')


def training_modules():
    """What only pretraining needs: train/'s modules and bilm-tf's batches."""
    return {m for m in package_modules() if m.startswith('paddle_elmo.train.')} | {'paddle_elmo.text.batches'}


@pytest.mark.parametrize('module', INFERENCE_PATH)
def test_the_inference_path_imports_no_training_module(module):
    assert 'paddle_elmo.train.training' in training_modules()
    assert not closure(our_imports(), module) & training_modules()


def test_every_module_imports_paddle_plainly_with_no_import_order_rule():
    for name, path in package_modules().items():
        text = open(path, encoding='utf-8').read()
        assert 'noqa: E402' not in text, f'{name}: an import that must come after something else'
        if name != 'paddle_elmo.runtime':
            assert 'paddle_elmo.runtime.paddle' not in imported_names(path), f'{name}: import paddle plainly'


def python_child(code):
    proc = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, cwd=ROOT, timeout=300,
                          env={**{k: v for k, v in os.environ.items() if k != 'GLOG_minloglevel'}, 'PYTHONPATH': ROOT})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def module_level_imports(path):
    """The absolute module names a file imports when it is imported: its top-level statements and
    class bodies, not function bodies (imported on use) nor `if typing.TYPE_CHECKING:` blocks."""
    with open(path, encoding='utf-8') as f:
        tree = ast.parse(f.read())
    found, todo = set(), list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        if isinstance(node, ast.If) and 'TYPE_CHECKING' in ast.unparse(node.test):
            todo.extend(node.orelse)
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f'{node.module}.{alias.name}' for alias in node.names)
        todo.extend(ast.iter_child_nodes(node))
    return found


# Serving an ONNX export needs numpy, h5py, onnxruntime and these modules (the [serve] extra): none
# of them, nor anything they import, imports Paddle (or another optional package) when imported.
SERVE_PATH = ('paddle_elmo', 'paddle_elmo.export.inference', 'paddle_elmo.use.sentence_embedder', 'paddle_elmo.export.export_format',
              'paddle_elmo.cli', 'paddle_elmo.cli.embed', 'paddle_elmo.text.tokenizers',
              'paddle_elmo.text.token_ids', 'paddle_elmo.files.run_configs')
OPTIONAL_PACKAGES = ('paddle', 'paddle2onnx', 'onnx', 'onnxruntime', 'gensim', 'sklearn', 'scipy', 'jieba', 'matplotlib')


def is_optional(name):
    return name.split('.')[0] in OPTIONAL_PACKAGES


def assert_imports_no_optional_package_when_imported(module):
    """Neither `module` nor anything it imports when imported imports Paddle or another optional package."""
    modules = package_modules()
    graph = {name: sorted(module_level_imports(path) & set(modules) - {name}) for name, path in modules.items()}
    for name in {module} | closure(graph, module):
        optional = sorted(n for n in module_level_imports(modules[name]) if is_optional(n))
        assert not optional, f'{name} (imported by {module}) imports {optional} at import time'


@pytest.mark.parametrize('module', SERVE_PATH)
def test_the_serving_path_imports_no_paddle_nor_other_optional_package(module):
    assert_imports_no_optional_package_when_imported(module)


# An export's parts but its writer (deploy: Paddle's program): graph edits, int8, the directory and the
# checks load without Paddle or onnx (imported on use), so that a command using one (finetune's
# token_cosines) pays for neither.
EXPORT_PARTS = ('paddle_elmo.export.onnx_graph', 'paddle_elmo.export.quantize', 'paddle_elmo.export.export_dirs',
                'paddle_elmo.export.export_checks')


@pytest.mark.parametrize('module', EXPORT_PARTS)
def test_an_export_s_parts_but_its_writer_import_no_paddle_nor_onnx(module):
    assert_imports_no_optional_package_when_imported(module)


# A model resolves (its files found, its options.json read) and a run directory is judged without Paddle,
# so that the commands check a user's inputs before its import (tests/test_refused_before_paddle.py runs them).
RESOLVING = ('paddle_elmo.files.model_io', 'paddle_elmo.files.run_directory')


@pytest.mark.parametrize('module', RESOLVING)
def test_resolving_a_model_imports_no_paddle_nor_other_optional_package(module):
    assert_imports_no_optional_package_when_imported(module)


def command_modules():
    from paddle_elmo.cli import COMMANDS
    return [f'paddle_elmo.cli.{module}' for module, _, _ in COMMANDS.values()] + ['paddle_elmo.cli.protocol']


@pytest.mark.parametrize('module', command_modules())
def test_a_command_s_flags_import_no_paddle_nor_other_optional_package(module):
    # Its --help answers in the core install (what to install is in it): the work's modules are
    # imported where it starts (test_installs asks every --help with the packages blocked, and in the
    # core venv).
    assert_imports_no_optional_package_when_imported(module)


def test_optional_packages_are_imported_where_used_never_at_import_time():
    # The core install (numpy, h5py, tqdm) imports every module but the ones that are Paddle's.
    for name, path in package_modules().items():
        optional = sorted(n for n in module_level_imports(path) if is_optional(n) and n.split('.')[0] != 'paddle')
        assert not optional, f'{name} imports {optional} at import time: import them on use (fileio.require_package)'


def test_help_and_build_vocab_import_no_paddle():
    # `paddle-elmo --help` and `build-vocab` answer in a fraction of a second: Paddle's import takes ~2 s.
    modules = ['paddle_elmo.cli', 'paddle_elmo.cli.runner', 'paddle_elmo.cli.build_vocab', 'paddle_elmo.text.vocabulary',
               'paddle_elmo.text.tokenizers', 'paddle_elmo.model.config', 'paddle_elmo.runtime']
    proc = python_child(f'import sys, {", ".join(modules)}; print("paddle" in sys.modules)')
    assert proc.stdout.split() == ['False']


# The commands' shared parts (README's `cli.` rows), which each command imports from where they are.
CLI_PARTS = ('paddle_elmo.cli.glossary', 'paddle_elmo.cli.arguments', 'paddle_elmo.cli.model_flags',
             'paddle_elmo.cli.config_flags', 'paddle_elmo.cli.runner', 'paddle_elmo.cli.flag_table',
             'paddle_elmo.cli.outputs_apart')


def test_every_cli_module_is_a_command_the_protocol_or_a_shared_part():
    from paddle_elmo.cli import COMMANDS
    commands = {f'paddle_elmo.cli.{module}' for module, _, _ in COMMANDS.values()} | {'paddle_elmo.cli.protocol'}
    cli_modules = {name for name in package_modules() if name.startswith('paddle_elmo.cli.')}
    assert cli_modules == commands | set(CLI_PARTS)
    graph = our_imports()
    for part in CLI_PARTS:  # a part serves the commands: it imports none of them
        assert not set(graph[part]) & commands, f'{part} imports {graph[part]}'


def test_the_design_card_s_args_py_gives_the_commands_shared_flags():
    proc = python_child('import args; p = args.parser("x"); args.add_model_source(p, bundled_default=True); '
                        'args.add_device(p); a = p.parse_args(["--model", "bundled"]); '
                        'print(a.model, sorted(args.given_settings(args.pretrain_parser().parse_args(["--lr", "0.5"]))), '
                        'callable(args.run))')
    assert proc.stdout.split() == ['bundled', "['lr']", 'True']


@pytest.mark.parametrize('first', ['paddle_elmo.model.kernels', 'paddle_elmo.export.static_bilm', 'paddle_elmo.train.lm',
                                   'paddle_elmo.cli.runner'])
def test_whichever_module_is_imported_first_paddle_comes_quiet_and_with_glog_off(first):
    proc = python_child(f'import os, {first}, paddle; print(os.environ["GLOG_minloglevel"])')
    assert proc.stdout.split() == ['2'] and 'No ccache found' not in proc.stderr, proc.stderr


def test_modules_import_no_private_name_of_another_module():
    for name, path in package_modules().items():
        private = sorted(n for n in imported_names(path) if n.startswith('paddle_elmo.') and
                         n.rsplit('.', 1)[1].startswith('_') and not n.endswith('__'))
        assert not private, f'{name} imports {private}: give them public names'


# ---- the layers ----------------------------------------------------------------------------------
# paddle_elmo/'s folders, bottom up (README's "How the code is organised"). A module imports modules of
# its own folder or of a lower rank: no import climbs back up, and two folders of one rank (train and
# use; classify, the classifiers built on use, and export) import nothing of each other. '' is the
# package's top: the process-wide basics.
LAYERS = {'': 0, 'demo_data': 0, 'text': 1, 'model': 2, 'files': 3, 'train': 4, 'use': 4, 'classify': 5, 'export': 5,
          'cli': 6}
ENTRY_POINTS = ('paddle_elmo', 'paddle_elmo.__main__')  # the public API (imports on use) and `python -m`


def layer_of(module):
    """paddle_elmo.FOLDER.module and the folder's package paddle_elmo.FOLDER -> FOLDER; a module at the top -> ''."""
    parts = module.split('.')
    return parts[1] if len(parts) > 2 or parts[1] in LAYERS else ''


def public_name_module(name):
    """`paddle_elmo.ELMoEmbedder` (a public name imported from the package) -> the module defining it."""
    import paddle_elmo
    short = name[len('paddle_elmo.'):]
    return f'paddle_elmo.{paddle_elmo._EXPORTS[short]}' if short in paddle_elmo._EXPORTS else None


def test_every_module_lives_in_a_layer():
    for name in package_modules():
        if name not in ENTRY_POINTS:
            assert layer_of(name) in LAYERS, f'{name} is in no layer: add its folder to LAYERS'


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
                f'{name} ({here or "top"}, rank {LAYERS[here]}) imports {imported} ({there or "top"}, rank '
                f'{LAYERS[there]}): an import goes to its own folder or a lower rank')


def test_text_imports_no_paddle_anywhere():
    # text/ is what a file of sentences becomes, read in the core install: not even on use (a function's
    # import) does it reach for Paddle; what needs Paddle is model/'s and above.
    for name, path in package_modules().items():
        if name not in ENTRY_POINTS and layer_of(name) == 'text':
            paddle = sorted(n for n in imported_names(path) if n.split('.')[0] == 'paddle')
            assert not paddle, f'{name} imports {paddle}'


def test_the_classifiers_sit_above_use_and_only_the_commands_import_them():
    graph = our_imports()
    classify = {m for m in graph if m not in ENTRY_POINTS and layer_of(m) == 'classify'}
    assert 'paddle_elmo.classify.training' in classify
    assert any(d.startswith('paddle_elmo.use.') for m in classify for d in graph[m])  # they build on use/
    assert not set().union(*(closure(graph, m) for m in classify)) & training_modules()  # not on pretraining
    importers = {m for m, dependencies in graph.items() if set(dependencies) & classify} - classify
    assert importers and all(is_command(m) for m in importers), importers


def test_the_code_map_lists_each_folder_s_modules():
    """docs/ARCHITECTURE.md's table (README's "How the code is organised" links it): a row per folder of
    code (`paddle_elmo/`: the top's; demo_data/, the sample corpus and the script that made it, is the
    prose's), naming exactly the modules the folder holds."""
    text = open(os.path.join(ROOT, 'docs', 'ARCHITECTURE.md'), encoding='utf-8').read()
    section = text[text.index('# How the code is organised'):]
    rows = {'' if folder == 'paddle_elmo' else folder: sorted(re.findall(r'`(\w+)`', cell))
            for folder, cell in re.findall(r'^\| `(\w+)/`[^|]*\| (.*?) \|', section, re.M)}
    held = {}
    for name in package_modules():
        if name not in ENTRY_POINTS and layer_of(name) != 'demo_data' and name != f'paddle_elmo.{layer_of(name)}':
            held.setdefault(layer_of(name), []).append(name.split('.')[-1])
    assert rows == {folder: sorted(modules) for folder, modules in held.items()}


# ---- the kernels a model runs ----------------------------------------------------------------------
# A model's kernels.Kernels (what its hot spots run on, where its dropout masks come from) is chosen
# once: BiLM and LanguageModel take it (the public classes: CPU_KERNELS by default) and hand it to
# their parts, so no part below them can run other kernels than its model's. The optimizers take
# their model's unless given others (None).
KERNELS_DEFAULTS = {'paddle_elmo.model.bilm.BiLM.__init__': 'kernels.CPU_KERNELS',
                    'paddle_elmo.train.lm.LanguageModel.__init__': 'kernels.CPU_KERNELS'}


def kernels_parameters():
    """'module.Class.function' -> the source of its `kernels` parameter's default ('' for none), for
    every function of model/ and train/ that takes one."""
    found = {}

    def visit(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.ClassDef)):
                if isinstance(child, ast.FunctionDef):
                    args = child.args
                    positional = args.posonlyargs + args.args
                    defaults = [None] * (len(positional) - len(args.defaults)) + args.defaults
                    for arg, default in list(zip(positional, defaults)) + list(zip(args.kwonlyargs, args.kw_defaults)):
                        if arg.arg == 'kernels':
                            found[prefix + child.name] = '' if default is None else ast.unparse(default)
                visit(child, prefix + child.name + '.')

    for name, path in package_modules().items():
        if name not in ENTRY_POINTS and layer_of(name) in ('model', 'train'):
            with open(path, encoding='utf-8') as f:
                visit(ast.parse(f.read()), name + '.')
    return found


def test_below_bilm_and_the_language_model_every_part_takes_its_model_s_kernels():
    parameters = kernels_parameters()
    assert {'paddle_elmo.model.kernels.recurrence', 'paddle_elmo.model.lstm.LstmStack.__init__'} <= set(parameters)
    for where, default in parameters.items():
        if where in KERNELS_DEFAULTS:
            assert default == KERNELS_DEFAULTS[where], where
        elif where.startswith('paddle_elmo.train.optimizers.'):
            assert default in ('', 'None'), f'{where}: kernels={default} (the model\'s: None)'
        else:
            assert default == '', f'{where}: kernels={default}; take the model\'s from the caller'



def test_the_model_and_its_kernels_import_no_training_recipe():
    """The recipe (model/recipe.py) is how a run trains: a run reads it and builds its model's
    Kernels; the kernels own the choices they carry (model/dropout_masks.py), which the recipe checks
    a recorded value against."""
    graph = our_imports()
    for module in graph:
        if module not in ENTRY_POINTS and layer_of(module) == 'model' and module != 'paddle_elmo.model.recipe':
            assert 'paddle_elmo.model.recipe' not in graph[module], f'{module} imports the recipe'
    assert 'paddle_elmo.model.dropout_masks' in graph['paddle_elmo.model.recipe']
    assert 'paddle_elmo.model.dropout_masks' in graph['paddle_elmo.model.kernels']
