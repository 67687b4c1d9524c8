"""PyTorch state dicts read without torch: `read_state_dict(path)` -> {name: numpy array}.

A model saved with `torch.save(module.state_dict(), path)` comes in one of two serializations:
- the legacy one (torch < 1.6, as ELMoForManyLangs' released models): a run of pickles in one file
  (a magic number, a protocol version, the sizes of C types, the state dict whose storages are
  persistent ids, the list of storage keys), then each storage's raw bytes in that order, each
  behind an int64 count of its elements;
- the zip one (torch >= 1.6): an archive whose `<name>/data.pkl` is the state dict, with each
  storage in `<name>/data/<key>`, raw bytes (little-endian unless `<name>/byteorder` says big).

Both pickles are read by an Unpickler that only makes what a state dict holds (an OrderedDict, a
tensor rebuilt from a storage, a storage of a known type, tuples of ints): a file asking for any
other global is refused, in one line naming the file and the global, and nothing in it is run.
Our users install Paddle, not torch, so this reads the files with pickle, zipfile and numpy.
"""
import collections
import io
import os
import pickle
import struct
import zipfile

import numpy as np

from paddle_elmo.fileio import InputError


LEGACY_MAGIC = 0x1950A86A20F9469CFC6C  # torch's, before the zip serialization
LEGACY_PROTOCOL = 1001

# torch's storage classes (the global a pickle names) -> the numpy dtype of their elements;
# bfloat16 has no numpy dtype: its 16 bits are the high half of a float32 (read as uint16, widened).
STORAGE_DTYPES = {
    'DoubleStorage': np.float64, 'FloatStorage': np.float32, 'HalfStorage': np.float16,
    'BFloat16Storage': np.uint16, 'LongStorage': np.int64, 'IntStorage': np.int32,
    'ShortStorage': np.int16, 'CharStorage': np.int8, 'ByteStorage': np.uint8, 'BoolStorage': np.bool_,
}


class _StorageType:
    """What a pickle's global `torch.<X>Storage` becomes: the storage's element type."""

    def __init__(self, name):
        self.name, self.dtype = name, np.dtype(STORAGE_DTYPES[name])


class _Storage:
    """One storage of the file: its elements (a numpy array [numel]), filled when its bytes are read."""

    def __init__(self, storage_type, numel):
        self.storage_type, self.numel = storage_type, int(numel)
        self.array = None


class _TensorRef:
    """A tensor as the pickle describes it (storage, offset, size, stride), made an array at the end,
    once the legacy format's storages (which follow the pickle) are read."""

    def __init__(self, storage, offset, size, stride):
        self.storage, self.offset, self.size, self.stride = storage, int(offset), tuple(size), tuple(stride)

    def array(self, source):
        data = self.storage.array
        if data is None:
            raise InputError(f'{source}: a tensor\'s storage has no data in the file (truncated?)')
        if self.storage.storage_type.name == 'BFloat16Storage':
            data = (data.astype(np.uint32) << 16).view(np.float32)
        last = self.offset + sum((n - 1) * s for n, s in zip(self.size, self.stride)) if all(self.size) else 0
        if self.offset < 0 or min(self.stride, default=0) < 0 or last >= max(len(data), 1) and all(self.size):
            raise InputError(f'{source}: a tensor of size {self.size}, stride {self.stride} at offset '
                             f'{self.offset} reaches past its storage of {len(data)} elements')
        if not all(self.size):
            return np.zeros(self.size, dtype=data.dtype)
        view = np.lib.stride_tricks.as_strided(data[self.offset:], shape=self.size,
                                               strides=[s * data.itemsize for s in self.stride])
        return np.array(view)  # a copy: the storage may hold more than this tensor


def _rebuild_tensor(storage, offset, size, stride, *rest):
    """torch._utils._rebuild_tensor(_v2)'s arguments (the rest: requires_grad, hooks, metadata: unused)."""
    if not isinstance(storage, _Storage):
        raise pickle.UnpicklingError('a tensor without a storage')
    return _TensorRef(storage, offset, size, stride)


# The only globals a state dict's pickle may name.
_ALLOWED = {
    ('collections', 'OrderedDict'): collections.OrderedDict,
    ('torch._utils', '_rebuild_tensor_v2'): _rebuild_tensor,
    ('torch._utils', '_rebuild_tensor'): _rebuild_tensor,
}


class _Refused(Exception):
    """A global or a persistent id a state dict does not contain."""


class _StateDictUnpickler(pickle.Unpickler):
    """An Unpickler that makes only what a state dict holds; storages come from `storage(...)`."""

    def __init__(self, stream, storage):
        super().__init__(stream)
        self._storage = storage

    def find_class(self, module, name):
        if module == 'torch' and name in STORAGE_DTYPES:
            return _StorageType(name)
        if (module, name) in _ALLOWED:
            return _ALLOWED[(module, name)]
        raise _Refused(f'global {module}.{name}')

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and pid and pid[0] in ('storage', b'storage')):
            kind = pid[0] if isinstance(pid, tuple) and pid else pid
            raise _Refused(f'persistent id {kind!r} (a pickled module or other object, not a storage)')
        return self._storage(*pid[1:])


def _no_storage(*_):
    raise _Refused('a storage outside the state dict')


def read_state_dict(path):
    """A torch state dict file (legacy or zip serialization) -> {parameter name: numpy array},
    in the file's order; InputError naming the file for anything else."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f'{path}: file not found')
    try:
        if zipfile.is_zipfile(path):
            state = _read_zip(path)
        else:
            with open(path, 'rb') as f:
                state = _read_legacy(f, path)
    except _Refused as e:
        raise InputError(f'{path}: refused {e}: a state dict holds only tensors') from None
    except (pickle.UnpicklingError, EOFError, struct.error, ValueError, TypeError, KeyError, AttributeError,
            IndexError, zipfile.BadZipFile) as e:
        if isinstance(e, InputError):
            raise
        raise InputError(f'{path}: not a torch state dict, or a truncated one ({type(e).__name__}: {e})') from None
    if not isinstance(state, dict) or not all(isinstance(k, str) and isinstance(v, _TensorRef)
                                              for k, v in state.items()):
        raise InputError(f'{path}: not a state dict (expected names mapped to tensors, got a '
                         f'{type(state).__name__})')
    return {name: ref.array(path) for name, ref in state.items()}


def _read_legacy(f, path):
    """The legacy serialization: the header pickles, the state dict, the storage keys, the bytes."""
    header = [_StateDictUnpickler(f, _no_storage).load() for _ in range(3)]  # ints and a dict of ints and bools
    if header[0] != LEGACY_MAGIC or header[1] != LEGACY_PROTOCOL:
        raise InputError(f'{path}: not a torch file (no torch magic number and protocol {LEGACY_PROTOCOL} at '
                         f'its start)')
    if not header[2].get('little_endian', True):
        raise InputError(f'{path}: saved on a big-endian machine, which is not read')
    storages = {}

    def storage(storage_type, key, location, numel, view):
        if view is not None:
            raise _Refused('a storage view (torch < 0.4\'s shared storages)')
        if not isinstance(storage_type, _StorageType):
            raise pickle.UnpicklingError('a storage of unknown type')
        return storages.setdefault(key, _Storage(storage_type, numel))

    state = _StateDictUnpickler(f, storage).load()
    for key in _StateDictUnpickler(f, _no_storage).load():
        target = storages[key]
        (count,) = struct.unpack('<q', f.read(8))
        nbytes = count * target.storage_type.dtype.itemsize
        raw = f.read(nbytes)
        if count != target.numel or len(raw) != nbytes:
            raise InputError(f'{path}: storage {key} holds {len(raw) // target.storage_type.dtype.itemsize} of '
                             f'{target.numel} elements (truncated?)')
        target.array = np.frombuffer(raw, dtype=target.storage_type.dtype.newbyteorder('<'))
    return state


def _read_zip(path):
    """The zip serialization: `<name>/data.pkl` and its storages `<name>/data/<key>`."""
    with zipfile.ZipFile(path) as archive:
        names = archive.namelist()
        pickles = [n for n in names if n.endswith('/data.pkl') and n.count('/') == 1]
        if len(pickles) != 1:
            raise InputError(f'{path}: a zip archive without one <name>/data.pkl: not a torch file')
        prefix = pickles[0][:-len('data.pkl')]
        order = '>' if prefix + 'byteorder' in names and archive.read(prefix + 'byteorder').strip() == b'big' else '<'

        storages = {}

        def storage(storage_type, key, location, numel):
            if key in storages:  # tensors sharing one storage
                return storages[key]
            if not isinstance(storage_type, _StorageType):
                raise pickle.UnpicklingError('a storage of unknown type')
            record = storages[key] = _Storage(storage_type, numel)
            raw = archive.read(f'{prefix}data/{key}')
            dtype = storage_type.dtype.newbyteorder(order)
            if len(raw) != record.numel * dtype.itemsize:
                raise InputError(f'{path}: storage {key} has {len(raw)} bytes, not {record.numel} elements')
            record.array = np.frombuffer(raw, dtype=dtype).astype(storage_type.dtype)
            return record

        return _StateDictUnpickler(io.BytesIO(archive.read(pickles[0])), storage).load()
