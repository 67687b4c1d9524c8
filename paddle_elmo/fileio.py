"""The user's files: finding them, reading text (UTF-8, a byte-order mark ignored, errors that name
the file and line; text/encodings.py decides when a file of sentences is read as Latin-1), checking
before any work that an output can be written where the user asked (check_output_file,
check_output_directory), and writing outputs atomically (a temp file beside the target, renamed
when complete), so that an interrupted or failed write never leaves a half-written file under the
real name."""
import contextlib
import glob
import importlib
import json
import os
import tempfile


class InputError(ValueError):
    """Bad user input (a file, a flag, an options value): the scripts print it as one line."""


class MissingPackageError(InputError, ImportError):
    """An optional package that cannot be imported, with the extra of ours that installs it: an
    ImportError to Python code (`except ImportError` catches it, as it would the package's own) and
    an InputError to the commands (one line, exit code 2: the install is the user's to complete)."""

    def __init__(self, message, name):
        super().__init__(message)
        self.name = name  # ImportError's attribute: the module that cannot be imported


class RunFailure(RuntimeError):
    """A run that cannot go on for a reason other than its input (a save on a full disk, a loss that
    is no longer finite, a download that failed): the commands print it as one line, which says what
    to do, and exit 1 (cli/runner.run, the one runtime-failure path)."""


class NetworkError(RunFailure, OSError):
    """A download that could not complete (no connection, a server's error, a transfer cut short):
    a runtime failure (RunFailure: one line, exit 1), not the user's input; an OSError to Python code
    that catches a failed download as such."""


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
    """`module` (a dotted name) imported -> the module; a MissingPackageError naming paddle-elmo's `extra`
    that installs it when it cannot be imported: an optional package a command needs is the user's
    install, which one line tells how to complete (pyproject.toml lists each extra)."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise install_error(module, e, extra) from None


def missing_package(error):
    """A ModuleNotFoundError for a package of INSTALLS, raised anywhere in a command or on importing a
    public name (paddle_elmo.__getattr__) -> the MissingPackageError that names its extra; None for
    any other module (a bug of ours: keep its traceback)."""
    package = (error.name or '').split('.')[0]
    if package not in INSTALLS:
        return None
    return install_error(package, error, INSTALLS[package])


def install_error(module, error, extra):
    """The one line for `module` that cannot be imported (`error`), which paddle-elmo's `extra` installs."""
    gpu = ' (or paddlepaddle-gpu for a GPU)' if module.split('.')[0] == 'paddle' else ''
    return MissingPackageError(f'{module} cannot be imported ({error}): it comes with the [{extra}] extra, '
                               f'pip install "paddle-elmo[{extra}]"{gpu}', module)


def list_files(file_pattern):
    """Sorted files matching a glob; FileNotFoundError naming the pattern when there are none."""
    files = sorted(p for p in glob.glob(file_pattern) if os.path.isfile(p))
    if not files:
        raise FileNotFoundError(f'{file_pattern}: no files match this pattern')
    return files


# The byte-order mark some editors (Notepad, Excel's "CSV UTF-8") put first in a UTF-8 file: not
# text. Every reader below drops it (Python's 'utf-8-sig'), so that "\ufeffHello" is "Hello".
BOM = '\ufeff'


def iter_lines(path, start_byte=0, start_line=0, decode=None):
    """Yield (0-based line number, length in bytes, decoded line) of a text file from `start_byte`;
    the file's first line without a byte-order mark (its length in bytes still counts it).

    `decode`: how the lines of a file that is not UTF-8 are decoded (bytes -> str; text.encodings
    decides it for the whole file); None: UTF-8, and invalid UTF-8 raises InputError naming the file,
    the 1-based line and the byte. A NUL byte (a binary file, or a corrupt copy) raises InputError
    naming them, whatever the encoding.
    """
    with open(path, 'rb') as f:
        f.seek(start_byte)
        for line_no, raw in enumerate(f, start_line):
            if b'\0' in raw:
                raise InputError(f'{path}:{line_no + 1}: NUL byte at byte {raw.index(0)} of the line '
                                 f'(a binary file? expected text)')
            if decode is not None:
                yield line_no, len(raw), decode(raw)
                continue
            try:
                text = raw.decode('utf-8')
            except UnicodeDecodeError as e:
                raise not_utf8(path, line_no + 1, e.reason, e.start) from None
            if start_byte == 0 and line_no == start_line:
                text = text.removeprefix(BOM)
            yield line_no, len(raw), text


def decode_utf8(data, path):
    """A whole file's bytes -> str, without a byte-order mark; InputError naming the file, the
    1-based line and the byte of the line when they are not UTF-8."""
    try:
        return data.decode('utf-8').removeprefix(BOM)
    except UnicodeDecodeError as e:
        line_start = data.rfind(b'\n', 0, e.start) + 1
        raise not_utf8(path, data.count(b'\n', 0, e.start) + 1, e.reason, e.start - line_start) from None


def read_text(path):
    """A whole UTF-8 text file (a JSON file, a vocabulary) -> str, as decode_utf8 gives it;
    FileNotFoundError when there is no such file."""
    with open(path, 'rb') as f:
        return decode_utf8(f.read(), path)


def not_utf8(path, line_no, reason, byte):
    return InputError(f'{path}:{line_no}: not valid UTF-8 ({reason} at byte {byte} of the line)')


# ---- outputs: checked before any work -------------------------------------------------------------
# One rule for every output, file or directory: its missing parent directories are made when it is
# written (atomic_path, make_directory), so a failed run makes none; before any work the command
# checks that it can be: a file's path is not a directory, a directory's is not a file, and the
# nearest directory that exists on the way is one we can create in. A path that cannot be written
# fails in a second, not after an hour's work.


def check_output_file(path, what):
    """Before any work: InputError (one line, `what` naming the flag or argument, None: argparse's
    message names it) unless a file can be written at `path`: not a directory, and its directory
    one we can create files in or make. Nothing is made or left behind. -> path."""
    where = f'{what} {path}' if what else path
    if os.path.isdir(path):
        raise InputError(f'{where}: is a directory; expected a file name (e.g. {os.path.join(path, "out")})')
    directory = os.path.dirname(os.path.abspath(path))
    _check_can_write_in(directory, where, f' its directory {directory}')
    return path


def check_output_directory(path, what):
    """Before any work: InputError (one line, `what` as for check_output_file) unless a directory can be
    written at `path`: an existing directory we can create files in, or a new one we can make. Nothing
    is made here: the command makes it when it writes (make_directory). -> path."""
    where = f'{what} {path}' if what else path
    if os.path.exists(path) and not os.path.isdir(path):
        raise InputError(f'{where}: is a file; expected a directory')
    _check_can_write_in(os.path.abspath(path), where, '')
    return path


def _check_can_write_in(directory, where, its):
    """`directory` (absolute; `its`: how the message names it, '' for the output itself) is one we can
    create files in, or, missing, one we can make: its nearest existing ancestor is a directory we can
    create in. The test is to create and remove a hidden directory there: the one answer
    permissions, read-only file systems and quotas (which root's os.access does not see) all give alike."""
    existing = directory
    while not os.path.exists(existing):
        existing = os.path.dirname(existing)
    if existing == directory and not os.path.isdir(existing):
        raise InputError(f'{where}:{its} is a file, not a directory')
    if not os.path.isdir(existing):
        raise InputError(f'{where}:{its} cannot be made: {existing} is a file')
    try:
        os.rmdir(tempfile.mkdtemp(prefix='.paddle-elmo-probe.', dir=existing))
    except OSError as e:
        raise InputError(f'{where}: cannot write in {existing} ({e.strerror})') from None


def make_directory(path, what):
    """os.makedirs(path, exist_ok=True) for an output directory; InputError naming `what` (its flag, or
    what it is) when it cannot be one: a file in the way, no permission."""
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as e:
        raise InputError(f'{what} {path}: cannot make this directory ({e.strerror})') from None
    return path


# ---- temporary files beside an output ----------------------------------------------------------------
# A writer's temporary file or directory is named `.NAME.PID.RANDOM.tmpEXT` (hidden, and its writer's process
# id in it): a writer that died without cleaning up (SIGKILL, a power cut) leaves one, which the next write
# of the same output removes once no process of that id runs. A live writer's is never touched.


def temp_beside(directory, name, suffix, make=tempfile.mkstemp):
    """A new temporary file (make=tempfile.mkstemp: its open descriptor is closed) or directory
    (tempfile.mkdtemp) for output `name` in `directory`, after removing those of dead writers -> its path."""
    remove_stale_temps(directory, name, suffix)
    made = make(prefix=f'.{name}.{os.getpid()}.', suffix=suffix, dir=directory)
    if make is tempfile.mkstemp:
        os.close(made[0])
        return made[1]
    return made


def remove_stale_temps(directory, name, suffix):
    """Remove the temporary files and directories of output `name` in `directory` whose writer is dead."""
    import shutil
    start = f'.{name}.'
    try:
        entries = os.listdir(directory)
    except OSError:
        return
    for entry in entries:
        pid = entry[len(start):].split('.', 1)[0]
        if entry.startswith(start) and entry.endswith(suffix) and pid.isdigit() and not process_runs(int(pid)):
            path = os.path.join(directory, entry)
            with contextlib.suppress(OSError):
                shutil.rmtree(path) if os.path.isdir(path) else os.remove(path)


def process_runs(pid):
    """Whether a process of id `pid` runs on this machine."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's
        return True
    return True


@contextlib.contextmanager
def atomic_path(path):
    """Yield a temporary path beside `path`; rename it to `path` when the block ends normally.

    The directories missing on the way are made first, and removed again if the block fails. On an
    exception the temp file is removed and `path` keeps its previous content. The temp name is
    hidden (starts with '.') and keeps the extension, so globs skip it and writers that go by the
    extension (matplotlib) still work.
    """
    directory = os.path.dirname(os.path.abspath(path))
    missing, on_the_way = [], directory  # the directories to make, deepest first
    while not os.path.exists(on_the_way):
        missing.append(on_the_way)
        on_the_way = os.path.dirname(on_the_way)
    make_directory(directory, f'{path}: its directory')
    base, ext = os.path.splitext(os.path.basename(path))
    tmp = temp_beside(directory, base, f'.tmp{ext}')
    try:
        yield tmp
        os.chmod(tmp, 0o666 & ~umask())  # as open() would have made it (mkstemp's is 0600, private)
        os.replace(tmp, path)
        missing = []
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
        for made in missing:  # a failed write leaves no directory behind either
            with contextlib.suppress(OSError):
                os.rmdir(made)


def umask():
    """The process's umask (which permissions a new file does not get): Linux's /proc/self/status says
    it without changing it; elsewhere it is set and put back (os.umask is process-wide: a thread
    creating a file meanwhile would get 0o022's)."""
    with contextlib.suppress(OSError, ValueError):
        with open('/proc/self/status', encoding='ascii', errors='replace') as f:
            for line in f:
                if line.startswith('Umask:'):
                    return int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


# ---- `-`: standard input and output (allennlp elmo's habit) -----------------------------------------

STDIO = '-'  # as a file name: standard input where a command reads, standard output where it writes
STDIN_NAME = '<stdin>'  # how errors name standard input
_SHOWN_NAMES = {}  # input_path's temporary copy -> how messages name it (STDIN_NAME)


def shown_name(path):
    """How a message names the input `path`: itself, or <stdin> for input_path's copy of standard input
    (an InputError's line is renamed by input_path itself; a warning logged while it reads uses this)."""
    return _SHOWN_NAMES.get(path, path)


@contextlib.contextmanager
def input_path(path):
    """Yield a path to read `path` from: itself, or for STDIO a temporary copy of standard input
    (commands read a file twice: to count its lines, then to embed them), removed after. An
    InputError raised in the block names the copy as <stdin>."""
    if path != STDIO:
        yield path
        return
    import shutil
    import sys
    tmp = temp_beside(tempfile.gettempdir(), 'paddle-elmo-stdin', '.txt')
    try:
        with open(tmp, 'wb') as f:
            shutil.copyfileobj(sys.stdin.buffer, f)
        _SHOWN_NAMES[tmp] = STDIN_NAME
        try:
            yield tmp
        except InputError as e:
            raise InputError(str(e).replace(tmp, STDIN_NAME)) from None
    finally:
        _SHOWN_NAMES.pop(tmp, None)
        os.remove(tmp)


@contextlib.contextmanager
def output_path(path, what, suffix='.hdf5', text=False):
    """Yield a path to write `path` at: itself, or for STDIO a temporary file (ending in `suffix`)
    whose bytes go to standard output once the block ends normally (a binary format such as hdf5 is
    written by seeking, which a pipe cannot do; a text or JSON file is written whole, so that an error
    leaves standard output empty), removed after. Standard output that is a terminal is an
    InputError naming `what`, before any work, unless the file is `text`."""
    if path != STDIO:
        yield path
        return
    import shutil
    import sys
    if not text and sys.stdout.isatty():
        raise InputError(f'{what} -: standard output is a terminal; redirect it (> out.hdf5, | ...) or give a file')
    tmp = temp_beside(tempfile.gettempdir(), 'paddle-elmo-stdout', suffix)
    try:
        yield tmp
        sys.stdout.flush()
        with open(tmp, 'rb') as f:
            shutil.copyfileobj(f, sys.stdout.buffer)
        sys.stdout.buffer.flush()
    finally:
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
