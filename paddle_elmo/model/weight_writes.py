"""The library's own count of writes to model weights, so that what it derives from weights and
keeps (the recurrence kernel's MKL-packed W_hidden and W_P: lstm.LstmLayer.packed_weights) is
never used after the weights change.

    weight_writes.watch(param)   # param.set_value and param.copy_ counted from now on
    weight_writes.written()      # count a write made some other way
    weight_writes.key(params)    # what a kept copy of params is valid for

Paddle keeps no count that sees every write: Tensor._inplace_version() stays 0 under set_value,
Layer.set_state_dict, copy_ and our optimizer kernels' in-place updates (measured, Paddle 3.3.1;
its other in-place ops, fill_, assign into, item assignment, do advance it). So:
- a watched parameter counts its own set_value and copy_ (instance attributes over Paddle's
  methods), and Layer.set_state_dict calls set_value per parameter: loading weights, restoring a
  snapshot, a user's own set_value are all counted, wherever they come from;
- the library's optimizer step counts its in-place update (optimizers.py);
- an update from gradients by any other optimizer needs no count: nothing is kept for weights
  that have a gradient, and the recurrence kernel's backward, which makes one, counts (kernels.py);
- key() holds the count, each parameter's _inplace_version() (Paddle's other in-place ops) and
  where its data lives (a model moved to another device, or parameters replaced).
The count is process-wide: a write to any model drops every model's kept copies (a repack: 16-20
ms per original-size layer and direction), simpler than knowing which weights a write touched, and
free where it matters (embedding writes no weights).
"""
import weakref

_count = 0
COUNTED = ('set_value', 'copy_')  # the writes Paddle's _inplace_version() does not see


def written():
    """Count a write to some model's weights: copies kept from before it are not used again."""
    global _count
    _count += 1


def watch(param):
    """From now on param's set_value and copy_ count as writes (once per parameter; a deep copy of
    it is a new parameter, watched when it is used). Through a weak reference: no cycle keeps the
    parameter's memory beyond its owner."""
    current = vars(param).get(COUNTED[0])
    if current is not None and getattr(current, 'watched', lambda: None)() is param:
        return  # watched already (a copy of another parameter's dict would name that one: rewatched)
    ref = weakref.ref(param)
    for name in COUNTED:
        setattr(param, name, _counted(ref, getattr(type(param), name)))


def _counted(ref, method):
    def write(*args, **kwargs):
        result = method(ref(), *args, **kwargs)
        written()
        return result
    write.watched = ref
    return write


def key(params):
    """What a copy derived from params now is valid for: the count of writes, and each parameter's
    in-place version and data address (compare with ==)."""
    return (_count, *((p._inplace_version(), p.data_ptr()) for p in params))
