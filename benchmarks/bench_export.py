"""Exported models in float32 and int8 beside ELMoEmbedder: tokens/s, peak memory and int8's agreement.

    python benchmarks/bench_export.py                                   # original size and the bundled model
    python benchmarks/bench_export.py --configs bundled --n_sentences 200   # a quick look
    python benchmarks/bench_export.py --json_out benchmarks/results/export_int8_DATE.json

For each model: `original`, the paper's size (2048-filter char CNN, 2 highway, LSTM 4096 -> 512, 2
layers) with random weights of a trained model's magnitudes (paddle_elmo.export.magnitudes.realistic_bilm), and `bundled`,
the model in pretrained/ (char CNN 384 filters, LSTM 256 -> 128). Each is exported once in float32
and once with --quantize int8 (export_inference, verified as the script does); then, each in its
own process (its peak memory, VmHWM: machine.peak_rss_mb, is its own: Python and the runtime included), the same
sentences (the first --n_sentences lines of rt-polarity.pos) in batches of --batch_size on
--threads threads: ELMoEmbedder (stateless, its word cache on, as bench_embed.py's default),
onnxruntime on the float model.onnx and on the int8 one. Agreement of int8 with ELMoEmbedder's
float32 on the same sentences (one run): per-token cosine of each layer (min and mean) and the
largest difference on a layer's scale (deploy.relative_differences). Speed is never asserted.

The figures (shares.py, the rule of every benchmark): each runtime runs --repeats times, in rounds
over the runtimes (library, onnx float32, onnx int8, then again), each run a process of its own,
bracketed by float32 [4096]^2 matmul readings taken in this process just before and just after it.
For each runtime: tokens/s, the median of its runs; tokens/s per GFLOP/s, each run against the higher
of its two readings (so that sessions on machines of different speed compare); "x library", the
median over the rounds of the runtime's tokens/s over the library's tokens/s of the same round
(runs minutes apart, so that the machine's drift falls on both), never a ratio of the two medians.
Each is printed with N and every run's value. The table is each runtime's run at its median tokens/s
(the lower middle one for an even N; column "run"), except "x library" and "tokens/s per GFLOP/s",
the figures' medians, and "peak MB", the largest of the runs. --json_out records every run.
"""
import argparse
import json
import os
import sys
import tempfile

from paddle_elmo.cli.arguments import parser
from paddle_elmo.cli.runner import run
import cpu_threads
import flag_checks
import machine
import markdown_tables
import matmul_rates
import shares
import worker_runs
from bench_embed import DEFAULT_DATA, config_options, read_sentences, time_embedding
from paddle_elmo.fileio import InputError

MODELS = ('original', 'bundled')
RUNTIMES = ('library', 'onnx float32', 'onnx int8')


def build_bilm(model, seed):
    """The BiLM of `model` (MODELS)."""
    if model == 'bundled':
        from paddle_elmo.files.model_io import resolve_model
        return resolve_model('bundled').load()
    from paddle_elmo.export.magnitudes import realistic_bilm
    return realistic_bilm(config_options(model), seed=seed)


# --------------------------------------------------------------------------------------------
# Workers (one process each)
# --------------------------------------------------------------------------------------------

def export_worker(spec):
    """Export the model in float32 and int8 -> the two directories and the verification figures."""
    cpu_threads.set_threads(spec['threads'])
    from paddle_elmo.export.deploy import export_inference
    bilm = build_bilm(spec['model'], spec['seed'])
    os.makedirs(spec['dir'], exist_ok=True)
    out = {}
    for precision, quantize in (('float32', None), ('int8', 'int8')):
        directory = os.path.join(spec['dir'], precision)
        result = export_inference(bilm, directory, quantize=quantize)
        out[precision] = dict(dir=directory, verified=result['verified'],
                              onnx_mb=os.path.getsize(os.path.join(directory, 'model.onnx')) / 2 ** 20)
    return out


def time_worker(spec):
    """Time one runtime on the sentences (one warm-up call first) -> time_embedding's figures."""
    cpu_threads.set_threads(spec['threads'])
    from paddle_elmo.runtime import keep_freed_memory
    keep_freed_memory()  # as the embedder's runs (reuse_memory=True)
    sentences, _ = read_sentences(spec['data_file'], spec['n_sentences'])
    if spec['runtime'] == 'library':
        from paddle_elmo.use.embedder import ELMoEmbedder
        embedder = ELMoEmbedder(bilm=build_bilm(spec['model'], spec['seed']), batch_size=spec['batch_size'],
                                stateful=False, reuse_memory=True)
    else:
        from paddle_elmo.export.inference import InferenceEmbedder
        embedder = InferenceEmbedder(spec['dir'], backend='onnxruntime', batch_size=spec['batch_size'],
                                     threads=spec['threads'])
    embedder.encode([['A', 'warm-up', 'sentence', '.'], ['Another', 'one']])
    return time_embedding(embedder, sentences)


def agreement_worker(spec):
    """int8 model.onnx against ELMoEmbedder(stateful=False) on the sentences -> per layer: min and mean
    per-token cosine, largest difference on the layer's scale."""
    cpu_threads.set_threads(spec['threads'])
    from paddle_elmo.export.deploy import relative_differences, token_cosines
    from paddle_elmo.export.inference import InferenceEmbedder
    from paddle_elmo.use.embedder import ELMoEmbedder
    sentences, _ = read_sentences(spec['data_file'], spec['n_sentences'])
    expected = ELMoEmbedder(bilm=build_bilm(spec['model'], spec['seed']), stateful=False).encode(
        sentences, batch_size=spec['batch_size'])
    got = InferenceEmbedder(spec['dir'], backend='onnxruntime').encode(sentences, batch_size=spec['batch_size'])
    cosines, relative = token_cosines(got, expected), relative_differences(got, expected)
    return dict(min_cosine=cosines.min(axis=1).tolist(), mean_cosine=cosines.mean(axis=1).tolist(),
                max_rel_diff=relative.max(axis=0).tolist())


WORKERS = {'export': export_worker, 'time': time_worker, 'agreement': agreement_worker}


def run_measurement(spec):
    return worker_runs.run_worker([os.path.abspath(__file__), '--worker', json.dumps(spec)],
                             env=cpu_threads.thread_env(spec['threads']))


# --------------------------------------------------------------------------------------------
# The benchmark
# --------------------------------------------------------------------------------------------

def model_rows(a, model, tmp, bracket):
    """Export `model`, time the three runtimes --repeats times in rounds (each run bracketed by
    `bracket`, a shares.Bracket), measure int8's agreement once -> (speed rows, {label: figures},
    {label: runs}, agreement row)."""
    base = dict(model=model, data_file=a.data_file, n_sentences=a.n_sentences, batch_size=a.batch_size,
                threads=a.threads, seed=a.seed)
    print(f'  exporting {model} (float32 and int8) ...', end=' ', flush=True)
    exported = run_measurement(dict(base, kind='export', dir=os.path.join(tmp, model)))
    print('done', flush=True)
    runs = shares.in_rounds(RUNTIMES, a.repeats,
                            lambda runtime, round_: time_run(a, base, exported, runtime, round_, bracket))
    figures = runtime_figures(runs)
    rows = [speed_row(model, runtime, runs[runtime], figures[runtime], exported) for runtime in RUNTIMES]
    q = run_measurement(dict(base, kind='agreement', dir=exported['int8']['dir']))
    agreement = {'model': model}
    for k in range(len(q['min_cosine'])):
        agreement.update({f'layer {k} cos min': q['min_cosine'][k], f'layer {k} cos mean': q['mean_cosine'][k],
                          f'layer {k} max rel diff': q['max_rel_diff'][k]})
    agreement['export check (4 sentences)'] = json.dumps(exported['int8']['verified'].get('onnxruntime int8'))
    return (rows, {f'{model}, {runtime}': figures[runtime] for runtime in RUNTIMES},
            {f'{model}, {runtime}': runs[runtime] for runtime in RUNTIMES}, agreement)


def precision_of(runtime):
    return 'int8' if runtime.endswith('int8') else 'float32'


def time_run(a, base, exported, runtime, round_, bracket):
    """One timed run of `runtime` in its own process, bracketed by matmul readings -> the worker's
    result with its 'readings' (start, end), 'load' and 'round'."""
    spec = dict(base, kind='time', runtime=runtime, dir=exported[precision_of(runtime)]['dir'])
    print(f'  {base["model"]} {runtime}, run {round_ + 1}/{a.repeats} ...', end=' ', flush=True)
    r, readings = bracket.run(lambda: run_measurement(spec))
    load = machine.load_average()[0]
    print(f'{r["tokens"] / r["seconds"]:.0f} tokens/s, {r["seconds"]:.1f} s; matmul {readings[0]:.1f} GFLOP/s '
          f'before, {readings[1]:.1f} after; load {load}', flush=True)
    return dict(r, readings=readings, load=load, round=round_ + 1)


def runtime_figures(runs):
    """{runtime: its runs in round order} -> {runtime: [tokens/s, tokens/s per GFLOP/s, and but for the
    library, x library (paired by round)]}."""
    tps = {runtime: [r['tokens'] / r['seconds'] for r in rs] for runtime, rs in runs.items()}
    figures = {}
    for runtime, rs in runs.items():
        readings = tuple(tuple(r['readings']) for r in rs)
        figures[runtime] = [
            shares.Figure('tokens/s', tuple(tps[runtime]), readings, shares.AS_MEASURED, ''),
            shares.rate_figure('tokens/s per GFLOP/s', [t / shares.reference_rate(x)
                                                        for t, x in zip(tps[runtime], readings)], readings, ''),
        ] + ([] if runtime == 'library' else
             [shares.round_ratio_figure('x library', tps[runtime], tps['library'], 'the library')])
    return figures


def speed_row(model, runtime, rs, figures, exported):
    """The table's row of one runtime: its run at the median tokens/s, but for the figures' medians and
    the largest peak memory of its runs."""
    speed, per_rate = figures[:2]
    middle = shares.median_run(speed.values)
    r = rs[middle]
    return {'model': model, 'runtime': runtime, 'tokens/s': speed.values[middle],
            'x library': figures[2].median if runtime != 'library' else 1.0, 'tokens/s per GFLOP/s': per_rate.median,
            'run': f'{middle + 1} of {len(rs)}', 'peak MB': max(x['peak_rss_mb'] for x in rs),
            'MB after load': r['model_rss_mb'], 'tokens/CPU-s': r['tokens'] / r['cpu_seconds'],
            'model.onnx MB': exported[precision_of(runtime)]['onnx_mb'] if runtime != 'library' else '',
            'seconds': r['seconds'], 'matmul GFLOP/s': shares.reference_rate(r['readings']), 'load (1 min)': r['load']}


def add_run_flags(p, json_out=True):
    """The flags of what is embedded and how (this script's and bench_int8_variants.py's); json_out:
    with --json_out (this script takes it, with --repeats, from shares.add_flags)."""
    p.add_argument('--data_file', default=DEFAULT_DATA, help='sentences to embed, one per line, whitespace tokens')
    p.add_argument('--n_sentences', type=int, default=1000, help='embed the first N lines')
    p.add_argument('--batch_size', type=int, default=64, help='sentences per batch')
    p.add_argument('--threads', type=int, default=2, help='CPU threads of every runtime')
    p.add_argument('--seed', type=int, default=1, help='seed of the original-size model\'s random weights')
    if json_out:
        p.add_argument('--json_out', help='also write the results to this JSON file')


def parse_args(argv=None):
    p = parser(__doc__.split('\n')[0])
    p.add_argument('--configs', default=','.join(MODELS), help=f'comma-separated, from {", ".join(MODELS)}')
    add_run_flags(p, json_out=False)
    shares.add_flags(p)
    p.add_argument('--worker', help=argparse.SUPPRESS)  # internal: one measurement, JSON spec
    a = p.parse_args(argv)
    if a.worker:
        return a
    a.configs = [c for c in a.configs.split(',') if c]
    bad = [c for c in a.configs if c not in MODELS]
    if bad:
        raise InputError(f'--configs: unknown value(s) {", ".join(bad)}; expected {", ".join(MODELS)}')
    flag_checks.check_positive(a, ('n_sentences', 'batch_size', 'threads', 'repeats'))
    read_sentences(a.data_file, 1)
    return a


def main():
    a = parse_args()
    if a.worker:
        return worker_runs.answer_worker(a.worker, WORKERS)
    cpu_threads.set_threads(a.threads)
    info = machine.machine_info()
    machine.print_machine_info(info)
    rate = matmul_rates.measure_matmul_gflops()
    print(f'float32 matmul [4096]^2, {a.threads} threads: {rate:.1f} GFLOP/s (read again before and after each '
          f'timed run); {a.repeats} run(s) of each runtime, in rounds')
    results = {'matmul_gflops': rate, 'args': {k: v for k, v in vars(a).items() if k != 'worker'},
               'speed': [], 'agreement': [], 'runs': {}}
    figures = {}
    try:
        with tempfile.TemporaryDirectory(prefix='bench_export_') as tmp:
            for model in a.configs:
                # the export ran since the last reading: the model's first run reads the rate again
                rows, model_figures, runs, agreement = model_rows(
                    a, model, tmp, shares.Bracket(matmul_rates.measure_matmul_gflops))
                results['speed'] += rows
                figures.update(model_figures)
                results['runs'].update(runs)
                results['agreement'].append(agreement)
    except RuntimeError as e:  # a worker failed: its last error line, no traceback
        print(f'error: {e}', file=sys.stderr)
        return 1
    print('the table: each runtime\'s run at its median tokens/s ("run"); "x library" and "tokens/s per GFLOP/s": '
          'the medians of the figures below it; "peak MB": the largest of the runs')
    markdown_tables.print_table(results['speed'])
    shares.print_figures(figures)
    markdown_tables.print_table(results['agreement'], [c for c in results['agreement'][0] if c != 'export check (4 sentences)'])
    results['matmul_gflops_end'] = matmul_rates.measure_matmul_gflops()
    results['load_average_end'] = machine.load_average()
    print(f'float32 matmul rate at the end: {results["matmul_gflops_end"]:.1f} GFLOP/s; '
          f'load average {results["load_average_end"]}')
    if a.json_out:
        shares.write_json(a.json_out, figures, info, **results)
    return 0


if __name__ == '__main__':
    run(main)
