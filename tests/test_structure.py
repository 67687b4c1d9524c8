"""The code's shape: the modules' import graph has no cycle and the library never imports a script;
README's Python API examples run as written (with the file names pointed at real files)."""
import ast
import os
import re
import subprocess
import sys

import pytest

from conftest import ROOT, require, FIXTURE

SCRIPTS = {'run_pretrain', 'run_eval', 'run_finetune', 'run_embed', 'word2vec_base', 'export_weights',
           'export_inference', 'build_vocab', 'demo', 'run_predict', 'run_dump'}


def our_imports():
    """module -> the repository modules it imports (at the top or inside functions)."""
    modules = {f[:-3] for f in os.listdir(ROOT) if f.endswith('.py')}
    graph = {}
    for name in modules:
        with open(os.path.join(ROOT, f'{name}.py'), encoding='utf-8') as f:
            tree = ast.parse(f.read())
        found = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found.update(alias.name.split('.')[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found.add(node.module.split('.')[0])
        graph[name] = sorted(found & modules - {name})
    return graph


def test_the_import_graph_has_no_cycle_and_the_library_imports_no_script():
    graph = our_imports()
    library = set(graph) - SCRIPTS - {'args'}
    for module in library:
        assert not set(graph[module]) & (SCRIPTS | {'args'}), f'{module} imports {graph[module]}'
    state = {}

    def visit(module, path):
        if state.get(module) == 'done':
            return
        assert state.get(module) != 'open', 'import cycle: ' + ' -> '.join(path + [module])
        state[module] = 'open'
        for dependency in graph[module]:
            visit(dependency, path + [module])
        state[module] = 'done'

    for module in graph:
        visit(module, [])


def readme_python_block(heading):
    text = open(os.path.join(ROOT, 'README.md'), encoding='utf-8').read()
    section = text[text.index(heading):]
    return re.search(r'```python\n(.*?)```', section, re.S).group(1)


@pytest.fixture
def api_files(tmp_path):
    """README's file names, made real: the reference fixture, a checkpoint of ours, a text file."""
    require(FIXTURE)
    import paddle
    from elmo import load_bilm
    bilm = load_bilm(options_file=os.path.join(FIXTURE, 'options.json'),
                     weight_file=os.path.join(FIXTURE, 'lm_weights.hdf5'))
    (tmp_path / 'checkpoints').mkdir()
    (tmp_path / 'checkpoints' / 'options.json').write_text(open(os.path.join(FIXTURE, 'options.json')).read())
    paddle.save(bilm.state_dict(), str(tmp_path / 'checkpoints' / 'final.pdparams'))
    (tmp_path / 'options.json').write_text(open(os.path.join(FIXTURE, 'options.json')).read())
    os.symlink(os.path.join(FIXTURE, 'lm_weights.hdf5'), tmp_path / 'weights.hdf5')
    (tmp_path / 'sentences.txt').write_text('The first sentence .\nSecond one .\n')
    return tmp_path


@pytest.mark.parametrize('heading', ['## Embedding sentences', '### In a downstream model (Paddle)'])
def test_readme_api_examples_run_as_written(heading, api_files):
    proc = subprocess.run([sys.executable, '-c', readme_python_block(heading)], cwd=api_files, capture_output=True,
                          text=True, env=dict(os.environ, PYTHONPATH=ROOT), timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
