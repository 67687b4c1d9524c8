"""Taking a run apart: timers around a library call, Paddle's profiler's operator table, and its
printing."""
import time

import shares
from markdown_tables import print_table


def time_calls(owner, method, seconds, part):
    """Replace owner.method by a call that adds its seconds to seconds[part] -> the original method."""
    inner = getattr(owner, method)

    def timed(*args, **kwargs):
        start = time.perf_counter()
        out = inner(*args, **kwargs)
        seconds[part] += time.perf_counter() - start
        return out
    setattr(owner, method, timed)
    return inner


def operator_table(run, per, top, unit='step'):
    """run() under Paddle's profiler -> its `top` operators by CPU time, as rows of ms and calls per
    `unit` (`per` of them in the run). Its traces are not written (they are ~20 MB a step)."""
    import contextlib
    import io
    import paddle.profiler as profiler
    prof = profiler.Profiler(targets=[profiler.ProfilerTarget.CPU], on_trace_ready=lambda _: None)
    prof.start()
    run()
    prof.stop()
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        prof.summary(sorted_by=profiler.SortedKeys.CPUTotal, op_detail=False, thread_sep=False, time_unit='ms')
    rows, in_ops = [], False
    for line in text.getvalue().splitlines():
        in_ops = in_ops or 'Operator Summary' in line
        fields = line.split()
        named = 2 if 'dygraph' in line else 1  # "matmul dygraph 53 87.0 / ..." or "Global_MatmulGradNode 45 ..."
        if in_ops and len(fields) > named + 2 and fields[named].isdigit() and fields[named + 2] == '/':
            rows.append({'operator': ' '.join(fields[:named]), f'calls/{unit}': int(fields[named]) / per,
                         f'ms/{unit}': float(fields[named + 1]) / per})
    return rows[:top]


def print_operator_tables(results):
    """The profile scripts' ending: each run's operator table, for the runs that made one (--ops)."""
    for name, r in results.items():
        if r['ops']:
            print(f'\n{name}: operators by CPU time (Paddle profiler, a second pass)')
            print_table(r['ops'])


def profile_shapes(a, shapes, run_shape, label, whole, table, info, **facts):
    """The profile scripts' run: each shape --repeats times (run_shape(a, shape, round) -> a worker's
    result), in rounds; then the table of each shape's run at the median share of its required
    floor (table(shape, result) -> rows), the figures (shares.profile_figures over the step's or
    batch's ms, `whole`), the operator tables, and with --json_out the figures, `facts` and every
    run's result. label(shape) names a shape in the lines printed."""
    runs = shares.in_rounds(shapes, a.repeats, lambda shape, round_: run_shape(a, shape, round_))
    figures, rows, results = {}, [], {}
    for shape, shape_runs in runs.items():
        figures[label(shape)] = shares.profile_figures(shape_runs, whole)
        middle = shares.median_run(figures[label(shape)][0].values)
        print(f'{label(shape)}: the table\'s run is run {middle + 1} of {len(shape_runs)} (the median share of the '
              f'required floor)')
        rows += table(shape, shape_runs[middle])
        results.update({f'{label(shape)}, run {i + 1}': r for i, r in enumerate(shape_runs)})
    print_table(rows)
    shares.print_figures(figures)
    print_operator_tables(results)
    if a.json_out:
        shares.write_json(a.json_out, figures, info, threads=a.threads, results=results, **facts)
