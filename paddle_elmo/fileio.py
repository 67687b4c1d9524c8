"""The user's files: finding them, reading UTF-8 lines with errors that name the file and line,
and writing outputs atomically (a temp file beside the target, renamed when complete), so that an
interrupted or failed write never leaves a half-written file under the real name."""
import contextlib
import glob
import importlib
import json
import os
import tempfile


class InputError(ValueError):
    """Bad user input (a file, a flag, an options value): the scripts print it as one line."""


class RunFailure(RuntimeError):
    """A run that cannot go on for a reason other than its input (a save on a full disk, a loss that
    is no longer finite): the commands print it as one line, which says what to do, and exit 1."""


# The optional packages a command may import -> the extra of ours that installs each (pyproject.toml).
INSTALLS = {
    'paddle': 'cpu',
    'gensim': 'classify',
    'sklearn': 'classify',
    'scipy': 'classify',
    'jieba': 'zh',
    'onnx': 'onnx',
    'onnxruntime': 'serve',
    'paddle2onnx': 'onnx',
    'matplotlib': 'plot',
}


def require_package(module, extra):
    """`module` (a dotted name) imported -> the module; an InputError naming paddle-elmo's `extra`
    that installs it when it cannot be imported: an optional package a command needs is the user's
    install, which one line tells how to complete (pyproject.toml lists each extra)."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise install_error(module, e, extra) from None


def missing_package(error):
    """A ModuleNotFoundError for a package of INSTALLS, raised anywhere in a command -> the InputError
    that names its extra; None for any other module (a bug of ours: keep its traceback)."""
    package = (error.name or '').split('.')[0]
    if package not in INSTALLS:
        return None
    return install_error(package, error, INSTALLS[package])


def install_error(module, error, extra):
    """The one line for `module` that cannot be imported (`error`), which paddle-elmo's `extra` installs."""
    gpu = ' (or paddlepaddle-gpu for a GPU)' if module.split('.')[0] == 'paddle' else ''
    return InputError(f'{module} cannot be imported ({error}): it comes with the [{extra}] extra, '
                      f'pip install "paddle-elmo[{extra}]"{gpu}')


def list_files(file_pattern):
    """Sorted files matching a glob; FileNotFoundError naming the pattern when there are none."""
    files = sorted(p for p in glob.glob(file_pattern) if os.path.isfile(p))
    if not files:
        raise FileNotFoundError(f'{file_pattern}: no files match this pattern')
    return files


def iter_lines(path, start_byte=0, start_line=0):
    """Yield (0-based line number, length in bytes, decoded line) of a UTF-8 file from `start_byte`.

    Invalid UTF-8 or a NUL byte (a binary file, or a corrupt copy) raises InputError naming the
    file, the 1-based line and the byte.
    """
    with open(path, 'rb') as f:
        f.seek(start_byte)
        for line_no, raw in enumerate(f, start_line):
            if b'\0' in raw:
                raise InputError(f'{path}:{line_no + 1}: NUL byte at byte {raw.index(0)} of the line '
                                 f'(a binary file? expected UTF-8 text)')
            try:
                text = raw.decode('utf-8')
            except UnicodeDecodeError as e:
                raise not_utf8(path, line_no + 1, e.reason, e.start) from None
            yield line_no, len(raw), text


def decode_utf8(data, path):
    """A whole file's bytes -> str; InputError naming the file, the 1-based line and the byte of
    the line when they are not UTF-8."""
    try:
        return data.decode('utf-8')
    except UnicodeDecodeError as e:
        line_start = data.rfind(b'\n', 0, e.start) + 1
        raise not_utf8(path, data.count(b'\n', 0, e.start) + 1, e.reason, e.start - line_start) from None


def not_utf8(path, line_no, reason, byte):
    return InputError(f'{path}:{line_no}: not valid UTF-8 ({reason} at byte {byte} of the line)')


def make_directory(path, what):
    """os.makedirs(path, exist_ok=True) for an output directory; InputError naming `what` (its flag, or
    what it is) when it cannot be one: a file in the way, no permission."""
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as e:
        raise InputError(f'{what} {path}: cannot make this directory ({e.strerror})') from None
    return path


@contextlib.contextmanager
def atomic_path(path):
    """Yield a temporary path beside `path`; rename it to `path` when the block ends normally.

    On an exception the temp file is removed and `path` keeps its previous content. The temp
    name is hidden (starts with '.') and keeps the extension, so globs skip it and writers that go
    by the extension (matplotlib) still work.
    """
    directory = os.path.dirname(os.path.abspath(path))
    base, ext = os.path.splitext(os.path.basename(path))
    fd, tmp = tempfile.mkstemp(prefix=f'.{base}.', suffix=f'.tmp{ext}', dir=directory)
    os.close(fd)
    try:
        yield tmp
        os.chmod(tmp, 0o644)  # mkstemp's 0600 would make outputs private
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def write_text_atomic(path, text):
    """Write `text` as UTF-8 with '\\n' line ends, atomically."""
    with atomic_path(path) as tmp, open(tmp, 'w', encoding='utf-8', newline='\n') as f:
        f.write(text)


def write_json_atomic(obj, path):
    """Write `obj` as indented JSON with sorted keys, atomically."""
    write_text_atomic(path, json.dumps(obj, indent=2, sort_keys=True) + '\n')


def write_csv_atomic(path, fields, rows):
    """Write dict `rows` as CSV with the header `fields`, atomically."""
    import csv
    with atomic_path(path) as tmp, open(tmp, 'w', newline='', encoding='utf-8') as f:
        writer = csv.DictWriter(f, fields)
        writer.writeheader()
        writer.writerows(rows)
