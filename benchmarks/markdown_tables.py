"""The benchmarks' tables, printed as Markdown."""


def _cell(value):
    if isinstance(value, float):
        return f'{value:.0f}' if abs(value) >= 100 else f'{value:.3g}'
    return str(value)


def print_table(rows, columns=None):
    """Print rows (dicts) as a Markdown table; columns default to the keys of the first row."""
    if not rows:
        return
    columns = columns or list(rows[0])
    cells = [[_cell(row.get(c, '')) for c in columns] for row in rows]
    widths = [max(len(c), *(len(r[i]) for r in cells)) for i, c in enumerate(columns)]
    print('| ' + ' | '.join(c.ljust(w) for c, w in zip(columns, widths)) + ' |')
    print('|' + '|'.join('-' * (w + 2) for w in widths) + '|')
    for r in cells:
        print('| ' + ' | '.join(v.rjust(w) for v, w in zip(r, widths)) + ' |')
