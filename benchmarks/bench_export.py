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
onnxruntime on the float model.onnx and on the int8 one. "x library" divides by ELMoEmbedder's
tokens/s. Agreement of int8 with ELMoEmbedder's float32 on the same sentences: per-token cosine of
each layer (min and mean) and the largest difference on a layer's scale (deploy.relative_differences).
Speed is never asserted; the float32 matmul rate is measured at the start and the end.
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
import worker_runs
from bench_embed import DEFAULT_DATA, config_options, read_sentences, time_embedding
from paddle_elmo.fileio import InputError, write_json_atomic

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

def model_rows(a, model, tmp):
    """Export `model`, time the three runtimes, measure int8's agreement -> (speed rows, agreement row)."""
    base = dict(model=model, data_file=a.data_file, n_sentences=a.n_sentences, batch_size=a.batch_size,
                threads=a.threads, seed=a.seed)
    print(f'  exporting {model} (float32 and int8) ...', end=' ', flush=True)
    exported = run_measurement(dict(base, kind='export', dir=os.path.join(tmp, model)))
    print('done', flush=True)
    rows, library = [], None
    for runtime in RUNTIMES:
        precision = 'int8' if runtime.endswith('int8') else 'float32'
        spec = dict(base, kind='time', runtime=runtime, dir=exported[precision]['dir'])
        print(f'  {model} {runtime} ...', end=' ', flush=True)
        r = run_measurement(spec)
        tps, load = r['tokens'] / r['seconds'], machine.load_average()[0]
        library = library or tps
        print(f'{tps:.0f} tokens/s, {r["seconds"]:.1f} s, load {load}', flush=True)
        rows.append({'model': model, 'runtime': runtime, 'tokens/s': tps, 'x library': tps / library,
                     'peak MB': r['peak_rss_mb'], 'MB after load': r['model_rss_mb'],
                     'tokens/CPU-s': r['tokens'] / r['cpu_seconds'],
                     'model.onnx MB': exported[precision]['onnx_mb'] if runtime != 'library' else '',
                     'seconds': r['seconds'], 'load (1 min)': load})
    q = run_measurement(dict(base, kind='agreement', dir=exported['int8']['dir']))
    agreement = {'model': model}
    for k in range(len(q['min_cosine'])):
        agreement.update({f'layer {k} cos min': q['min_cosine'][k], f'layer {k} cos mean': q['mean_cosine'][k],
                          f'layer {k} max rel diff': q['max_rel_diff'][k]})
    agreement['export check (4 sentences)'] = json.dumps(exported['int8']['verified'].get('onnxruntime int8'))
    return rows, agreement


def add_run_flags(p):
    """The flags of what is embedded and how (this script's and bench_int8_variants.py's)."""
    p.add_argument('--data_file', default=DEFAULT_DATA, help='sentences to embed, one per line, whitespace tokens')
    p.add_argument('--n_sentences', type=int, default=1000, help='embed the first N lines')
    p.add_argument('--batch_size', type=int, default=64, help='sentences per batch')
    p.add_argument('--threads', type=int, default=2, help='CPU threads of every runtime')
    p.add_argument('--seed', type=int, default=1, help='seed of the original-size model\'s random weights')
    p.add_argument('--json_out', help='also write the results to this JSON file')


def parse_args(argv=None):
    p = parser(__doc__.split('\n')[0])
    p.add_argument('--configs', default=','.join(MODELS), help=f'comma-separated, from {", ".join(MODELS)}')
    add_run_flags(p)
    p.add_argument('--worker', help=argparse.SUPPRESS)  # internal: one measurement, JSON spec
    a = p.parse_args(argv)
    if a.worker:
        return a
    a.configs = [c for c in a.configs.split(',') if c]
    bad = [c for c in a.configs if c not in MODELS]
    if bad:
        raise InputError(f'--configs: unknown value(s) {", ".join(bad)}; expected {", ".join(MODELS)}')
    flag_checks.check_positive(a, ('n_sentences', 'batch_size', 'threads'))
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
    print(f'float32 matmul [4096]^2, {a.threads} threads: {rate:.1f} GFLOP/s')
    results = {'machine': info, 'matmul_gflops': rate, 'args': {k: v for k, v in vars(a).items() if k != 'worker'},
               'speed': [], 'agreement': []}
    try:
        with tempfile.TemporaryDirectory(prefix='bench_export_') as tmp:
            for model in a.configs:
                rows, agreement = model_rows(a, model, tmp)
                results['speed'] += rows
                results['agreement'].append(agreement)
    except RuntimeError as e:  # a worker failed: its last error line, no traceback
        print(f'error: {e}', file=sys.stderr)
        return 1
    markdown_tables.print_table(results['speed'])
    markdown_tables.print_table(results['agreement'], [c for c in results['agreement'][0] if c != 'export check (4 sentences)'])
    results['matmul_gflops_end'] = matmul_rates.measure_matmul_gflops()
    results['load_average_end'] = machine.load_average()
    print(f'float32 matmul rate at the end: {results["matmul_gflops_end"]:.1f} GFLOP/s; '
          f'load average {results["load_average_end"]}')
    if a.json_out:
        write_json_atomic(results, a.json_out)
    return 0


if __name__ == '__main__':
    run(main)
