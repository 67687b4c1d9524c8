"""benchmarks/ab_pretrain.py keeps its two versions apart: with the swap off, no module of the
working tree may hold the base revision's code (the new version would run it, and the comparison
would be of the base against itself, as it was until 2026-11-27)."""
import sys
import types

import pytest

import ab_pretrain
from paddle_elmo.model import token_layer


def base_function_module(revision):
    """A stand-in for a module ab_pretrain loaded from `revision`, with one function."""
    module = types.ModuleType('paddle_elmo.model.token_layer' + ab_pretrain.base_suffix(revision))
    exec('def pool():\n    return "base"\n', module.__dict__)
    module.pool.__module__ = module.__name__
    return module


def test_a_base_object_held_by_the_working_tree_is_found_and_refused(monkeypatch):
    base = base_function_module('HEAD~1')
    monkeypatch.setitem(sys.modules, base.__name__, base)
    assert ab_pretrain.base_objects_held('HEAD~1') == []
    # what `from paddle_elmo.model.token_layer import ...` binds in a module first imported while
    # the swap is on
    monkeypatch.setattr(token_layer, 'leaked_pool', base.pool, raising=False)
    assert ab_pretrain.base_objects_held('HEAD~1') == ['paddle_elmo.model.token_layer.leaked_pool']
    assert ab_pretrain.base_objects_held('other') == []
    with pytest.raises(RuntimeError, match=r'after the steps.*token_layer\.leaked_pool.*VERSION_MODULES'):
        ab_pretrain.check_versions_apart('HEAD~1', 'after the steps')


def test_make_swap_loads_what_a_version_imports_before_the_swap(monkeypatch):
    """bilm, imported again by make_swap (as in a fresh process), holds the working tree's EagerOps
    once the swap is off: it was not first imported inside the swap."""
    for name in ('paddle_elmo.train.lm', 'paddle_elmo.model.bilm'):
        package, _, attr = name.rpartition('.')
        if name in sys.modules:  # the package attribute too, so that later tests get these modules back
            monkeypatch.setattr(sys.modules[package], attr, sys.modules[name])
        monkeypatch.delitem(sys.modules, name, raising=False)
    base_name = 'paddle_elmo.model.token_layer' + ab_pretrain.base_suffix('HEAD')
    monkeypatch.setitem(sys.modules, base_name, None)  # removed again after the test
    swap = ab_pretrain.make_swap('HEAD', ['paddle_elmo/model/token_layer.py'], [])
    bilm = sys.modules['paddle_elmo.model.bilm']
    assert 'paddle_elmo.train.lm' in sys.modules and bilm.EagerOps is token_layer.EagerOps
    swap.on()
    try:
        assert bilm.EagerOps is sys.modules[base_name].EagerOps
    finally:
        swap.off()
    assert bilm.EagerOps.__module__ == 'paddle_elmo.model.token_layer'
    assert ab_pretrain.base_objects_held('HEAD') == []


def test_a_function_the_working_tree_removed_is_the_bases_during_the_swap_only():
    """The base's other modules call what the working tree's module no longer has (a base
    token_layer calls kernels.pool_widths_relu): it is there while the swap is on, gone after."""
    base = base_function_module('HEAD~1')
    assert not hasattr(token_layer, 'pool')
    swap = ab_pretrain.Swap()
    ab_pretrain.swap_modules(swap, [(token_layer, base)])
    swap.on()
    try:
        assert token_layer.pool() == 'base'
    finally:
        swap.off()
    assert not hasattr(token_layer, 'pool')


def test_a_base_kernels_module_runs_the_kernels_the_swap_names(monkeypatch):
    """kernels.py from the base finds its files beside the working tree's and runs the base
    version's compiled kernels (here the working tree's: kernels.cc is not swapped), never a build
    of its own."""
    from conftest import require_kernels
    from paddle_elmo.model import kernels
    require_kernels()
    base_name = 'paddle_elmo.model.kernels' + ab_pretrain.base_suffix('HEAD')
    monkeypatch.setitem(sys.modules, base_name, None)  # removed again after the test
    swap = ab_pretrain.make_swap('HEAD', ['paddle_elmo/model/kernels.py'], [])
    base = sys.modules[base_name]
    assert base.SOURCE == kernels.SOURCE and base.kernel() is kernels.kernel()
    assert ab_pretrain.base_objects_held('HEAD') == [] and swap.replacements
