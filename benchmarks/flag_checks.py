"""Checks of the benchmarks' numeric flags: one-line InputErrors naming the flag."""


def check_positive(a, names):
    """Each of the parsed flags `names` must be >= 1: a one-line InputError naming the first that is not."""
    from paddle_elmo.fileio import InputError
    for name in names:
        if getattr(a, name) < 1:
            raise InputError(f'--{name} must be >= 1, got {getattr(a, name)}')


def positive_ints(value, option):
    """A comma-separated flag value -> [int], at least one and each >= 1: else a one-line InputError
    naming `option`."""
    from paddle_elmo.fileio import InputError
    try:
        values = [int(v) for v in value.split(',') if v.strip()]
    except ValueError:
        raise InputError(f'{option}: expected comma-separated integers, got {value!r}')
    if not values or min(values) < 1:
        raise InputError(f'{option}: expected integers >= 1, got {value!r}')
    return values
