"""Two versions of the pretraining step interleaved in one process: the code of a git revision
(--base) against the working tree, step by step, on the same batches and seed.

    python benchmarks/ab_pretrain.py --base main --swap paddle_elmo/train/optimizers.py,paddle_elmo/model/kernels.cc
    taskset -c 1 python benchmarks/ab_pretrain.py --base main --swap paddle_elmo/model/kernels.cc --threads 1 \\
        --batch_size 32 --steps 12 --max_grad_norm 1e9      # a shared machine: one pinned core; no clipping

Separate runs minutes apart measure the machine as much as the change (a shared VM's matmul rate
moves by 20% within minutes); here the two versions take turns within each step pair (the order
alternating), so drift and load fall on both alike, and the figure to read is the ratio of their
medians, with the spread of the per-pair ratios beside it.

Each version builds its own model, optimizer and batch stream (pretraining_step.py's: the small
configuration, sampled softmax with 8,192 negatives, Adagrad at lr 0.2; the same seeds) and keeps
its own state of Paddle's generator (the dropout kernel draws its seeds from it), so both train on
the same numbers. --swap names what the base version takes from --base: Python modules
(paddle_elmo/NAME.py: that revision's functions and classes replace the working tree's while the
base version is built and while it steps, and those the working tree removed are put back) and
paddle_elmo/model/kernels.cc (that revision's kernels, built once as a second library with its
operators renamed, with --base_cflags; a swapped kernels.py runs them). A file
that had another path at --base is given as BASE_PATH:PATH. Everything else is the working tree's
in both.

Printed: the median ms per step and per phase (forward, backward, optimizer: lm.train_step's marks)
of each version, new / base; then whether the losses of every step and, at the end, every
parameter and optimizer slot are the same bits (np.array_equal), and if not by how much.
"""
import argparse
import importlib.util
import inspect
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

import cpu_threads
import flag_checks
import machine
import markdown_tables
import places
import pretraining_step
from paddle_elmo.cli.runner import run
from paddle_elmo.fileio import InputError

PHASES = ('forward', 'backward', 'optimizer')
# What Version imports, directly or not: loaded before the swap is made (make_swap).
VERSION_MODULES = ('paddle_elmo.train.lm', 'paddle_elmo.train.optimizers', 'paddle_elmo.text.batches',
                   'paddle_elmo.text.vocabulary', 'paddle_elmo.runtime', 'paddle_elmo.model.recipe')
# kernel_build's compiler flags up to 1aeb1e1 (since then kernel_build.CFLAGS, with -fno-math-errno,
# the default: a base built with other flags than the working tree's measures the flags too)
OLD_CFLAGS = ('-O3', '-march=native', '-fno-trapping-math')
BASE_PREFIX = 'base_'  # the base kernels' operators: base_elmo_... (two libraries cannot share op names)


def git_show(revision, path):
    """The text of `path` at `revision` in this checkout -> str; InputError when git cannot give it."""
    proc = subprocess.run(['git', 'show', f'{revision}:{path}'], cwd=places.ROOT, capture_output=True, text=True)
    if proc.returncode != 0:
        raise InputError(f'--base {revision} / --swap {path}: {proc.stderr.strip()}')
    return proc.stdout


class Swap:
    """Attribute replacements that turn the working tree's code into the base revision's:
    (owner, name, value) triples, put in place by `on()` and undone by `off()`."""

    MISSING = object()

    def __init__(self):
        self.replacements, self.saved = [], []

    def add(self, owner, name, value):
        self.replacements.append((owner, name, value))

    def on(self):
        self.saved = [(owner, name, getattr(owner, name, self.MISSING)) for owner, name, _ in self.replacements]
        for owner, name, value in self.replacements:
            setattr(owner, name, value)

    def off(self):
        for owner, name, value in reversed(self.saved):
            if value is self.MISSING:
                delattr(owner, name)
            else:
                setattr(owner, name, value)
        self.saved = []


def kernels_source():
    """The working tree's kernels.cc, relative to the checkout."""
    from paddle_elmo.model import kernels
    return os.path.relpath(kernels.SOURCE, places.ROOT)


def revision_tag(revision):
    """`revision` as a name part (module names, build directories): anything else than letters,
    digits and _ as _."""
    return re.sub(r'[^0-9A-Za-z_]', '_', revision)


def base_suffix(revision):
    """What the name of a module loaded from `revision` ends with."""
    return '_at_' + revision_tag(revision)


def base_module(revision, base_path, path):
    """Module `path` (paddle_elmo/.../NAME.py) as `base_path` was at `revision`, loaded beside the
    working tree's -> (the working tree's module, the base's)."""
    name = path[:-3].replace('/', '.')
    current = importlib.import_module(name)
    spec = importlib.util.spec_from_loader(name + base_suffix(revision), loader=None)
    base = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = base  # dataclasses and pickling look their module up
    base.__file__ = current.__file__  # where it finds its files (kernels.py its kernels.cc: make_swap sets which)
    exec(compile(git_show(revision, base_path), f'{revision}:{base_path}', 'exec'), base.__dict__)
    return current, base


def swap_modules(swap, pairs):
    """Add to `swap` what makes each (current, base) module pair run as the base: the base's functions
    and classes wherever a loaded paddle_elmo module (the base modules too, which imported the
    working tree's) holds the working tree's, and on the working tree's module those it no longer
    has (the base's other modules call them there). Objects built while the swap is on are the
    base's classes (and keep the base's methods after it)."""
    holders = [m for n, m in list(sys.modules.items()) if n.startswith('paddle_elmo') and m is not None]
    for current, base in pairs:
        for attr, value in base.__dict__.items():
            if getattr(value, '__module__', None) != base.__name__:
                continue
            mine = getattr(current, attr, None)
            if mine is None:
                if inspect.isclass(value) or inspect.isfunction(value):
                    swap.add(current, attr, value)
                continue
            if inspect.isclass(value) and inspect.isclass(mine) or inspect.isfunction(value) and inspect.isfunction(mine):
                for module in holders:
                    for held, obj in list(vars(module).items()):
                        if obj is mine:
                            swap.add(module, held, value)


def base_kernels(revision, base_path, cflags):
    """kernels.cc at `revision`, its operators renamed base_elmo_..., built with `cflags` (and
    kernel_build's OpenMP and MKL flags) and loaded beside the working tree's -> an object whose
    elmo_X is the base's base_elmo_X."""
    from paddle.utils.cpp_extension import load
    from paddle_elmo.model import kernel_build
    source = re.sub(r'PD_BUILD_OP\((\w+)\)', rf'PD_BUILD_OP({BASE_PREFIX}\1)', git_show(revision, base_path))
    build_dir = os.path.join(tempfile.gettempdir(), f'elmo_ab_kernels_{os.getuid()}',
                             revision_tag(revision))
    os.makedirs(build_dir, exist_ok=True)
    path = os.path.join(build_dir, 'kernels_base.cc')
    with open(path, 'w') as f:
        f.write(source)
    module = load(name='elmo_kernels_base', sources=[path], build_directory=build_dir, verbose=False,
                  **kernel_build._runtime_flags(list(cflags)))

    class Renamed:
        def __getattr__(self, attr):
            return getattr(module, BASE_PREFIX + attr)
    return Renamed()


def make_swap(revision, items, cflags):
    """--swap's items (PATH, or BASE_PATH:PATH when the file had another path at the revision) -> Swap.

    The modules a Version uses are imported first: a module imported for the first time while the
    swap is on binds the base's classes and functions with its `from ... import` for good, and the
    new version would run them too (as it did before 2026-11-27: bilm's EagerOps, lm's Softmax)."""
    for name in VERSION_MODULES:
        importlib.import_module(name)
    from paddle_elmo.model import kernels
    swap, modules = Swap(), []
    ops = kernels.kernel()  # the working tree's first, so that the swap has something to restore
    for item in items:
        base_path, _, path = item.rpartition(':')
        base_path = base_path or path
        if path == kernels_source():
            ops = base_kernels(revision, base_path, cflags)
            swap.add(kernels, '_ops', ops)
        elif path.startswith('paddle_elmo/') and path.endswith('.py'):
            modules.append(base_module(revision, base_path, path))
        else:
            raise InputError(f'--swap {item}: expected {kernels_source()} or paddle_elmo/.../NAME.py, each '
                             f'optionally after its path at --base and a colon')
    for current, base in modules:
        if current is kernels:  # the base's kernels.py runs the base version's kernels, never builds its own
            base._ops = ops
    swap_modules(swap, modules)
    return swap


class Version:
    """One version's model, optimizer, batches, generator state and timings."""

    def __init__(self, name, swap, config_name, batch_size, max_grad_norm):
        self.name, self.swap = name, swap
        with self.active():  # the imports too (pretraining_step.build imports inside): inside the swap they are the base's
            import paddle
            self.model, self.optimizer, self.batches, *_ = pretraining_step.build(config_name, batch_size, max_grad_norm)
            self.rng = paddle.get_rng_state()
        self.losses, self.ms = [], {phase: [] for phase in ('step', *PHASES)}

    def active(self):
        version = self

        class Active:
            def __enter__(self):
                if version.swap is not None:
                    version.swap.on()

            def __exit__(self, *exc):
                if version.swap is not None:
                    version.swap.off()
        return Active()

    def step(self, timed):
        batch = next(self.batches)
        with self.active():
            from paddle_elmo.train.lm import train_step
            import paddle
            paddle.set_rng_state(self.rng)
            ends = {}
            start = time.perf_counter()
            out, _ = train_step(self.model, self.optimizer, batch,
                                mark=lambda phase: ends.__setitem__(phase, time.perf_counter()))
            self.rng = paddle.get_rng_state()
        self.losses.append([float(out[k]) for k in ('loss', 'forward_loss', 'backward_loss')])
        if timed:
            begins = dict(zip(PHASES, (start, ends['forward'], ends['backward'])))
            for phase in PHASES:
                self.ms[phase].append(1000 * (ends[phase] - begins[phase]))
            self.ms['step'].append(1000 * (ends['optimizer'] - start))

    def state(self):
        """Every parameter and optimizer slot -> {name: numpy}."""
        state = {n: p.numpy() for n, p in self.model.named_parameters()}
        state.update({f'slot {k}': v.numpy() for k, v in self.optimizer.state_dict().items() if k != 'n_updates'})
        return state


def base_objects_held(revision):
    """The working tree's module attributes that hold an object of a module loaded from `revision`
    -> ['module.attr', ...]; with the swap off there must be none, or the new version runs base code."""
    suffix = base_suffix(revision)
    return [f'{name}.{attr}' for name, module in list(sys.modules.items())
            if name.startswith('paddle_elmo') and module is not None and not name.endswith(suffix)
            for attr, value in list(vars(module).items())
            if str(getattr(value, '__module__', None) or '').endswith(suffix)]


def check_versions_apart(revision, when):
    """Raise when the working tree's modules hold base objects with the swap off (base_objects_held)."""
    held = base_objects_held(revision)
    if held:
        raise RuntimeError(f'{when}, the working tree\'s modules hold the base\'s objects, so the new version '
                           f'would run base code: {", ".join(held[:8])}{" ..." if len(held) > 8 else ""} '
                           f'(a module first imported while the swap was on: add it to VERSION_MODULES)')


def compare(base, new):
    """-> lines saying whether the two versions' losses and final state are the same bits."""
    lines = []
    same_losses = [a == b for a, b in zip(base.losses, new.losses)]
    lines.append(f'losses: {sum(same_losses)} of {len(same_losses)} steps identical'
                 + ('' if all(same_losses) else
                    f'; largest difference {max(abs(x - y) for a, b in zip(base.losses, new.losses) for x, y in zip(a, b)):.3g}'))
    a, b = base.state(), new.state()
    if a.keys() != b.keys():
        return lines + [f'state: different names: {sorted(set(a) ^ set(b))}']
    differing = [k for k in a if not np.array_equal(a[k], b[k])]
    if not differing:
        lines.append(f'state: all {len(a)} parameters and slots identical (np.array_equal)')
    else:
        n = sum(int((a[k] != b[k]).sum()) for k in differing)
        total = sum(v.size for v in a.values())
        worst = max(float(np.max(np.abs(a[k] - b[k]) / np.maximum(np.abs(a[k]), 1e-30))) for k in differing)
        lines.append(f'state: {len(differing)} of {len(a)} tensors differ, {n} of {total} elements, '
                     f'largest relative difference {worst:.3g} ({", ".join(differing[:6])}{"..." if len(differing) > 6 else ""})')
    return lines


def main():
    from paddle_elmo.model import kernel_build
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--base', default='main', help='git revision of the base version')
    p.add_argument('--swap', required=True,
                   help='comma-separated files the base version takes from --base: paddle_elmo/.../NAME.py or the '
                        'kernels.cc, each as BASE_PATH:PATH when its path at --base was another')
    p.add_argument('--base_cflags', default=' '.join(kernel_build.CFLAGS),
                   help='compiler flags of the base kernels (default: the working tree\'s, kernel_build.CFLAGS; '
                        'a base before 1aeb1e1: ' + ' '.join(OLD_CFLAGS) + ')')
    p.add_argument('--config', default='small', choices=sorted(pretraining_step.CONFIGS) + [pretraining_step.BUNDLED])
    p.add_argument('--batch_size', type=int, default=32, help='rows per step')
    p.add_argument('--steps', type=int, default=12, help='timed step pairs')
    p.add_argument('--warmup', type=int, default=2, help='untimed step pairs first')
    p.add_argument('--threads', type=int, default=2, help='CPU threads')
    p.add_argument('--max_grad_norm', type=float, default=10.0, help='the clip (10: bench_pretrain\'s; 1e9: never)')
    a = p.parse_args()
    flag_checks.check_positive(a, ['batch_size', 'steps', 'threads'])
    cpu_threads.set_threads(a.threads)
    machine.print_machine_info()
    swap = make_swap(a.base, [s for s in a.swap.split(',') if s], a.base_cflags.split())
    base = Version(f'base ({a.base})', swap, a.config, a.batch_size, a.max_grad_norm)
    new = Version('new (working tree)', None, a.config, a.batch_size, a.max_grad_norm)
    check_versions_apart(a.base, 'after building both versions')
    for i in range(a.warmup + a.steps):
        pair = (base, new) if i % 2 == 0 else (new, base)
        for version in pair:
            version.step(timed=i >= a.warmup)
    check_versions_apart(a.base, 'after the steps')
    print(f'{a.config}, {a.batch_size} rows, {a.steps} step pairs after {a.warmup}, base takes {a.swap} '
          f'from {a.base}, max_grad_norm {a.max_grad_norm:g}; ms per step (median):')
    rows = []
    for phase in ('step', *PHASES):
        b, n = np.median(base.ms[phase]), np.median(new.ms[phase])
        pairs = np.array(new.ms[phase]) / np.array(base.ms[phase])
        rows.append({'phase': phase, 'base ms': b, 'new ms': n, 'new / base': f'{n / b:.3f}',
                     'pair ratios (min, median, max)': f'{pairs.min():.3f}, {np.median(pairs):.3f}, {pairs.max():.3f}'})
    markdown_tables.print_table(rows)
    for line in compare(base, new):
        print(line)


if __name__ == '__main__':
    run(main)
