"""The disk size of each documented install: a fresh venv per install, the checkout's wheel installed
into it with the install's extras, then `du -sm` of its site-packages (what README's install table
quotes; pip and setuptools, which every venv starts with, included).

    python benchmarks/install_sizes.py --output_json benchmarks/results/install_sizes_DATE.json
    python benchmarks/install_sizes.py --installs core,serve,cpu,cpu+classify

pip installs from its cache when it holds the packages (about 5 s for the core, 20 s for [cpu]).
"""
import argparse
import datetime
import glob
import json
import os
import platform
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INSTALLS = {'core': '', 'serve': 'serve', 'cpu': 'cpu'}  # README's rows with a size; NAME+EXTRA also works


def run(*argv):
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)


def site_packages_mb(venv):
    """`du -sm` of the venv's site-packages."""
    [site] = glob.glob(os.path.join(venv, 'lib', 'python*', 'site-packages'))
    return int(subprocess.run(['du', '-sm', site], check=True, capture_output=True, text=True).stdout.split()[0])


def install_size(wheel, extras, work):
    """A fresh venv with `wheel[extras]` -> MB of its site-packages."""
    venv = os.path.join(work, extras.replace(',', '-') or 'core')
    run(sys.executable, '-m', 'venv', venv)
    run(os.path.join(venv, 'bin', 'python'), '-m', 'pip', 'install', '-q', f'{wheel}[{extras}]' if extras else wheel)
    return site_packages_mb(venv)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--installs', default=','.join(INSTALLS),
                   help='which installs: core, serve, cpu, or extras joined by + (cpu+classify)')
    p.add_argument('--output_json', help='also write the sizes here')
    a = p.parse_args(argv)
    installs = {name: INSTALLS.get(name, name.replace('+', ',')) for name in a.installs.split(',')}
    with tempfile.TemporaryDirectory() as work:
        run(sys.executable, '-m', 'pip', 'wheel', '-q', '--no-deps', '--no-build-isolation', '-w', work, ROOT)
        [wheel] = glob.glob(os.path.join(work, '*.whl'))
        empty = os.path.join(work, 'empty')
        run(sys.executable, '-m', 'venv', empty)
        sizes = {'a new venv (pip, setuptools)': site_packages_mb(empty)}
        for name, extras in installs.items():
            sizes[name] = install_size(wheel, extras, work)
            print(f'{name}: {sizes[name]:,} MB', flush=True)
    result = {'date': datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC'),
              'python': platform.python_version(), 'wheel': os.path.basename(wheel), 'site_packages_mb': sizes}
    print(json.dumps(result, indent=1))
    if a.output_json:
        with open(a.output_json, 'w', encoding='utf-8') as f:
            json.dump(result, f, indent=1)
    return 0


if __name__ == '__main__':
    sys.exit(main())
