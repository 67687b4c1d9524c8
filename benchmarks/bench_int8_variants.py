"""int8 quantisation choices side by side in one process: speed against ELMoEmbedder, agreement, and
onnxruntime's per-op profile.

    python benchmarks/bench_int8_variants.py                          # every variant, 3 rounds
    python benchmarks/bench_int8_variants.py --variants current,per_channel --n_sentences 300
    python benchmarks/bench_int8_variants.py --profile --variants float32,current   # where the time goes
    taskset -c 1 python benchmarks/bench_int8_variants.py --threads 1  # on a loaded machine

The model is bench_export's `original` (the paper's size, random weights of a trained model's
magnitudes, paddle_elmo/export/magnitudes.py, --seed), exported once in float32 (export_inference, verified);
each variant re-quantizes a copy of that model.onnx (quantize.quantize_onnx with the variant's
settings) and is checked as the export checks int8 (export_checks: worst per-token cosine of every
layer against ELMoEmbedder(stateful=False) on the English held-out sample, and the largest
difference on a layer's scale). Then the runtimes are timed interleaved: each round embeds the same
sentences (the first --n_sentences lines of rt-polarity.pos, batches of --batch_size) with
ELMoEmbedder (its token cache emptied each round), the float32 model.onnx and every variant, in
turn; a runtime's time is its median over --rounds rounds, and "x library" divides the library's
median by it ("x library (paired)": the median over the rounds of the library's time over the runtime's
in the same round, bench_export's figure; the two differ when one runtime's rounds drift). onnxruntime
runs with InferenceEmbedder's session options (its threads do not spin) unless a variant says
otherwise. Interleaving puts every runtime under the same load, so the ratios hold on a busy
machine where the absolute tokens/s do not (pin with taskset and --threads 1 there: the medians
of the process's CPU seconds, "x library (CPU)", are then the steadier ratio, since time spent
waiting for the core is not counted).

--profile adds one profiled pass per runtime (onnxruntime's SessionOptions.enable_profiling), its
node times summed by op type and by where the node runs (before the Loops, inside them) and the
Loop nodes' own time (their total less their body's nodes: the Loop's dispatch, copies, the body's
setup). Speed is never asserted.
"""
import collections
import hashlib
import json
import os
import shutil
import statistics
import tempfile
import time

from paddle_elmo.cli.arguments import parser
from paddle_elmo.cli.runner import run
import cpu_threads
import flag_checks
import machine
import markdown_tables
from bench_embed import read_sentences
from bench_export import add_run_flags, build_bilm
from paddle_elmo.fileio import InputError, write_json_atomic
from paddle_elmo.export.quantize import INT8_SETTINGS


# 'current': --quantize int8 as issue 37 left it (the names of the recorded results); today's
# INT8_SETTINGS are 'rescale_in_loops'.
CURRENT = dict(INT8_SETTINGS, rescale_in_loops=False)

SPINNING = 'session.intra_op.allow_spinning'

# name -> (quantize_onnx's settings, onnxruntime session settings: SessionOptions attributes and
# 'config' entries, over InferenceEmbedder's own, inference.default_session_options). None: the float32
# model.onnx as exported. Results before 2026-11-29 ran every variant spinning (onnxruntime's default):
# their 'no_spinning' and 'rescale_no_spinning' are today's 'current' and 'rescale_in_loops'.
VARIANTS = {
    'float32': (None, {}),
    'current': (CURRENT, {}),
    'per_channel': (dict(CURRENT, per_channel=True), {}),
    'quint8_weights': (dict(CURRENT, weight_type='QUInt8'), {}),
    'no_per_token': (dict(CURRENT, per_token=()), {}),
    'input_products_float': (dict(CURRENT, keep_float=('token', 'lstm_input'), per_token=()), {}),
    'recurrence_float': (dict(CURRENT, keep_float=('token', 'recurrence')), {}),
    'char_cnn_int8': (dict(CURRENT, keep_float=('highway_projection',)), {}),
    'rescale_in_loops': (dict(CURRENT, rescale_in_loops=True), {}),
    # 7-bit weights: an export's fallback where 8-bit ones overflow the CPU's int8 products (quantize.py)
    'seven_bit_weights': (dict(INT8_SETTINGS, reduce_range=True), {}),
    'seven_bit_spinning': (dict(INT8_SETTINGS, reduce_range=True), {'config': {SPINNING: '1'}}),
    # the highway and projection in int8 too, their inputs one scale per token
    'highway_per_token': (dict(CURRENT, keep_float=('char_cnn',), per_token=('lstm_input', 'highway_projection'),
                               rescale_in_loops=True), {}),
    'token_per_token': (dict(CURRENT, keep_float=(), per_token=('lstm_input', 'token'), rescale_in_loops=True), {}),
    # MatMulNBits (weights 8-bit in blocks of K rows, each block its own scale; accuracy_level 4:
    # activations quantized to int8 per row and block, products in integers): no per-token wrap.
    'nbits8_b32': (dict(method='nbits', block_size=32, keep_float=('token',)), {}),
    'nbits8_b128': (dict(method='nbits', block_size=128, keep_float=('token',)), {}),
    'nbits8_b32_cnn': (dict(method='nbits', block_size=32, keep_float=('highway_projection',)), {}),
    'nbits8_b32_all': (dict(method='nbits', block_size=32, keep_float=()), {}),
    'opt_basic': (CURRENT, {'graph_optimization_level': 'ORT_ENABLE_BASIC'}),
    'opt_extended': (CURRENT, {'graph_optimization_level': 'ORT_ENABLE_EXTENDED'}),
    'spinning': (CURRENT, {'config': {SPINNING: '1'}}),
    'parallel': (CURRENT, {'execution_mode': 'ORT_PARALLEL', 'inter_op_num_threads': 2}),
    # at 2 threads: the two directions' nodes of a Loop body side by side, one thread each
    'rescale_parallel': (dict(CURRENT, rescale_in_loops=True),
                         {'execution_mode': 'ORT_PARALLEL', 'inter_op_num_threads': 2, 'intra_op_num_threads': 1}),
    'rescale_spinning': (dict(CURRENT, rescale_in_loops=True), {'config': {SPINNING: '1'}}),
}


def session_options(settings, threads, profile_prefix=None):
    """InferenceEmbedder's onnxruntime.SessionOptions (`threads` intra-op threads, as a user's export runs)
    with the variant's settings over them."""
    import onnxruntime as ort
    from paddle_elmo.export.inference import default_session_options
    options = default_session_options(threads)
    for name, value in settings.items():
        if name == 'config':
            for key, entry in value.items():
                options.add_session_config_entry(key, entry)
        elif name == 'graph_optimization_level':
            options.graph_optimization_level = getattr(ort.GraphOptimizationLevel, value)
        elif name == 'execution_mode':
            options.execution_mode = getattr(ort.ExecutionMode, value)
        else:
            setattr(options, name, value)
    if profile_prefix:
        options.enable_profiling = True
        options.profile_file_prefix = profile_prefix
    return options


def onnx_embedder(directory, settings, threads, batch_size, profile_prefix=None):
    """InferenceEmbedder on directory/model.onnx with the variant's session settings."""
    from paddle_elmo.export.inference import InferenceEmbedder
    return InferenceEmbedder(directory, backend='onnxruntime', batch_size=batch_size,
                             session_options=session_options(settings, threads, profile_prefix))


def build_variants(bilm, names, work_dir):
    """Export the float model once, then each variant's model.onnx, each in a directory of work_dir
    (reused when it holds one: the same --seed) -> {name: (directory, settings, agreement dict or
    None)}."""
    from paddle_elmo.export.deploy import export_inference
    from paddle_elmo.use.embedder import ELMoEmbedder
    from paddle_elmo.export.export_checks import ENGLISH_SAMPLE, check_sentences, relative_differences, token_cosines
    from paddle_elmo.export.inference import InferenceEmbedder
    from paddle_elmo.export.quantize import quantize_onnx
    float_dir = os.path.join(work_dir, 'float32')
    if not os.path.isfile(os.path.join(float_dir, 'model.onnx')):
        export_inference(bilm, float_dir)
    sample, expected = check_sentences(ENGLISH_SAMPLE), None
    built = {}
    for name in names:
        quantize, settings = VARIANTS[name]
        if quantize is None:
            built[name] = (float_dir, settings, None)
            continue
        key = json.dumps(quantize, sort_keys=True)  # session-only variants share a model
        directory = os.path.join(work_dir, hashlib.sha1(key.encode()).hexdigest()[:10])
        if not os.path.isfile(os.path.join(directory, 'agreement.json')):
            expected = expected or ELMoEmbedder(bilm=bilm, stateful=False).encode(sample)
            shutil.rmtree(directory, ignore_errors=True)
            shutil.copytree(float_dir, directory)
            result = (quantize_nbits(directory, **quantize) if quantize.get('method') == 'nbits'
                      else quantize_onnx(directory, **quantize))
            got = InferenceEmbedder(directory, backend='onnxruntime').encode(sample)
            cosines = token_cosines(got, expected)
            write_json_atomic({'min_cosine_per_layer': [round(float(c.min()), 5) for c in cosines],
                               'max_rel_diff': round(float(relative_differences(got, expected).max()), 4),
                               'description': result['description'], 'settings': quantize},
                              os.path.join(directory, 'agreement.json'))
        with open(os.path.join(directory, 'agreement.json')) as f:
            agreement = json.load(f)
        built[name] = (directory, settings, agreement)
        print(f'  {name}: worst token cosine per layer {agreement["min_cosine_per_layer"]}, '
              f'max rel diff {agreement["max_rel_diff"]}', flush=True)
    return built


def quantize_nbits(directory, method, block_size, keep_float, bits=8, accuracy_level=4):
    """directory/model.onnx (float32) -> MatMulNBits (`bits` weights, blocks of `block_size` rows,
    symmetric) for every MatMul but the kinds in keep_float (onnx_graph.matmuls_of) -> {'description'}."""
    import onnx
    try:
        from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer
    except ImportError as e:  # it imports onnx_ir, which onnxruntime does not require
        raise InputError(f'--variants nbits8_*: onnxruntime\'s MatMulNBits quantizer needs {e.name} '
                             f'(pip install onnx-ir)') from None
    from paddle_elmo.export.export_format import quiet_native_output
    from paddle_elmo.export.onnx_graph import constants_to_initializers, fold_weight_parts, matmuls_of, nested_graphs
    path = os.path.join(directory, 'model.onnx')
    model = onnx.load(path)
    constants_to_initializers(model.graph)
    fold_weight_parts(model)
    quantizer = MatMulNBitsQuantizer(model, bits=bits, block_size=block_size, is_symmetric=True,
                                     accuracy_level=accuracy_level, nodes_to_exclude=matmuls_of(model, keep_float))
    with quiet_native_output():
        quantizer.process()
    model = quantizer.model.model
    onnx.save(model, path)
    n = sum(node.op_type == 'MatMulNBits' for g in nested_graphs(model.graph) for node in g.node)
    return {'description': f'MatMulNBits {bits}-bit blocks of {block_size}, accuracy_level {accuracy_level}: {n}'}


def time_pass(embedder, sentences):
    """-> (wall seconds, CPU seconds of this process) of embedding `sentences`."""
    start, cpu = time.perf_counter(), time.process_time()
    for _ in embedder.iter_embeddings(sentences):
        pass
    return time.perf_counter() - start, time.process_time() - cpu


def interleaved_times(embedders, sentences, rounds):
    """({name: [wall seconds per round]}, {name: [CPU seconds per round]}): every embedder on the
    same sentences, in turn, `rounds` times (the library's token cache emptied before each pass)."""
    walls, cpus = collections.defaultdict(list), collections.defaultdict(list)
    for r in range(rounds):
        for name, embedder in embedders.items():
            if hasattr(embedder, '_token_cache'):
                embedder._token_cache.clear()
            wall, cpu = time_pass(embedder, sentences)
            walls[name].append(wall)
            cpus[name].append(cpu)
        print(f'  round {r + 1}: ' + ', '.join(f'{n} {t[-1]:.1f} s ({cpus[n][-1]:.1f} CPU-s)'
                                                for n, t in walls.items()), flush=True)
    return walls, cpus


# --------------------------------------------------------------------------------------------
# Profile
# --------------------------------------------------------------------------------------------

def optimized_graph_places(directory, settings, threads):
    """{node name: 'main' or 'loop'} of the graph onnxruntime runs (after its fusions), read from the
    optimized model it writes."""
    import onnx
    import onnxruntime as ort
    from paddle_elmo.export.onnx_graph import nested_graphs
    path = os.path.join(directory, 'optimized.onnx')
    options = session_options(settings, threads)
    options.optimized_model_filepath = path
    ort.InferenceSession(os.path.join(directory, 'model.onnx'), options, providers=['CPUExecutionProvider'])
    model = onnx.load(path)
    places = {n.name: 'main' for n in model.graph.node}
    for g in nested_graphs(model.graph):
        if g is not model.graph:
            places.update({n.name: 'loop' for n in g.node})
    os.remove(path)
    return places


def profile_summary(trace_file, places):
    """onnxruntime's trace -> {'run_ms', 'nodes': {(place, op): ms}, 'loop_self_ms', 'top': [...]}: node
    kernel times summed by where they run and op type; the Loops' own time is their total less their
    body's nodes; 'outside nodes' is the runs' time no node accounts for (the session's own)."""
    with open(trace_file) as f:
        events = json.load(f)
    by_op, by_node = collections.Counter(), collections.Counter()
    run_us = loop_us = 0.0
    for e in events:
        if e.get('cat') == 'Session' and e.get('name') == 'model_run':
            run_us += e['dur']
        if e.get('cat') != 'Node' or not e['name'].endswith('_kernel_time'):
            continue
        node, op = e['name'][:-len('_kernel_time')], e['args'].get('op_name', '?')
        if op == 'Loop':
            loop_us += e['dur']
            continue
        place = places.get(node, '?')
        by_op[(place, op)] += e['dur']
        by_node[(place, op, node)] += e['dur']
    inside = sum(us for (place, _), us in by_op.items() if place == 'loop')
    main = sum(us for (place, _), us in by_op.items() if place != 'loop')
    return {'run_ms': run_us / 1e3, 'loop_self_ms': (loop_us - inside) / 1e3,
            'outside_nodes_ms': (run_us - main - loop_us) / 1e3,
            'by_op': sorted(((p, o, us / 1e3) for (p, o), us in by_op.items()), key=lambda r: -r[2]),
            'top_nodes': [(p, o, n, us / 1e3) for (p, o, n), us in by_node.most_common(15)]}


def print_profile(name, summary):
    run = summary['run_ms']
    print(f'\n### {name}: {run:.0f} ms in session runs')
    rows = [{'where': p, 'op': o, 'ms': ms, 'share': f'{100 * ms / run:.1f}%'} for p, o, ms in summary['by_op']
            if ms >= 0.002 * run]
    rows.append({'where': 'loop', 'op': '(Loop itself: dispatch, copies)', 'ms': summary['loop_self_ms'],
                 'share': f'{100 * summary["loop_self_ms"] / run:.1f}%'})
    rows.append({'where': '', 'op': '(no node: session)', 'ms': summary['outside_nodes_ms'],
                 'share': f'{100 * summary["outside_nodes_ms"] / run:.1f}%'})
    markdown_tables.print_table(rows)
    markdown_tables.print_table([{'where': p, 'op': o, 'node': n, 'ms': ms} for p, o, n, ms in summary['top_nodes']])


def profile_runtimes(built, names, sentences, a, tmp):
    out = {}
    for name in names:
        directory, settings, _ = built[name]
        places = optimized_graph_places(directory, settings, a.threads)
        embedder = onnx_embedder(directory, settings, a.threads, a.batch_size,
                                 profile_prefix=os.path.join(tmp, f'profile_{name}'))
        embedder.encode([['A', 'warm-up', 'sentence', '.']])
        time_pass(embedder, sentences)
        summary = profile_summary(embedder._session.end_profiling(), places)
        print_profile(name, summary)
        out[name] = summary
    return out


# --------------------------------------------------------------------------------------------
# The benchmark
# --------------------------------------------------------------------------------------------

def parse_args(argv=None):
    p = parser(__doc__.split('\n')[0])
    p.add_argument('--variants', default=','.join(VARIANTS), help=f'comma-separated, from {", ".join(VARIANTS)}')
    add_run_flags(p)
    p.add_argument('--rounds', type=int, default=3, help='interleaved rounds; each runtime\'s median is kept')
    p.add_argument('--profile', action='store_true', help='also one profiled pass of each onnxruntime variant')
    p.add_argument('--no_timing', action='store_true', help='agreement (and --profile) only')
    p.add_argument('--work_dir', help='keep the exports here and reuse them when they are there (same --seed)')
    a = p.parse_args(argv)
    a.variants = [v for v in a.variants.split(',') if v]
    bad = [v for v in a.variants if v not in VARIANTS]
    if bad:
        raise InputError(f'--variants: unknown value(s) {", ".join(bad)}; expected {", ".join(VARIANTS)}')
    flag_checks.check_positive(a, ('n_sentences', 'batch_size', 'threads', 'rounds'))
    read_sentences(a.data_file, 1)
    return a


def main():
    a = parse_args()
    cpu_threads.set_threads(a.threads)
    info = machine.machine_info()
    machine.print_machine_info(info)
    results = {'machine': info, 'args': vars(a), 'load_average_start': machine.load_average()}
    sentences, _ = read_sentences(a.data_file, a.n_sentences)
    from paddle_elmo.use.embedder import ELMoEmbedder
    bilm = build_bilm('original', a.seed)
    with tempfile.TemporaryDirectory(prefix='int8_variants_') as tmp:
        print('exporting the original size in float32, then each variant ...', flush=True)
        built = build_variants(bilm, a.variants, a.work_dir or tmp)
        results['agreement'] = {n: b[2] for n, b in built.items()}
        if a.profile:
            results['profile'] = profile_runtimes(built, a.variants, sentences, a, tmp)
        if not a.no_timing:
            embedders = {'library': ELMoEmbedder(bilm=bilm, batch_size=a.batch_size, stateful=False,
                                                 reuse_memory=True)}
            embedders.update({n: onnx_embedder(d, s, a.threads, a.batch_size) for n, (d, s, _) in built.items()})
            for e in embedders.values():
                e.encode([['A', 'warm-up', 'sentence', '.'], ['Another', 'one']])
            walls, cpus = interleaved_times(embedders, sentences, a.rounds)
            tokens = sum(len(s) for s in sentences)
            median = {n: statistics.median(t) for n, t in walls.items()}
            cpu = {n: statistics.median(t) for n, t in cpus.items()}
            rows = []
            for name in walls:
                agreement = results['agreement'].get(name) or {}
                rows.append({'runtime': name, 'median s': median[name], 'tokens/s': tokens / median[name],
                             'x library': median['library'] / median[name],
                             'x library (paired)': statistics.median(
                                 lib / own for lib, own in zip(walls['library'], walls[name])),
                             'x current': median['current'] / median[name] if 'current' in median else '',
                             'median CPU-s': cpu[name], 'x library (CPU)': cpu['library'] / cpu[name],
                             'x current (CPU)': cpu['current'] / cpu[name] if 'current' in cpu else '',
                             'worst cosine': f"{min(agreement.get('min_cosine_per_layer', [1.0])):.5f}",
                             'max rel diff': f"{agreement.get('max_rel_diff', 0.0):.4f}"})
            markdown_tables.print_table(rows)
            results.update(times=walls, cpu_times=cpus, rows=rows)
    results['load_average_end'] = machine.load_average()
    print(f'load average at the start {results["load_average_start"]}, at the end {results["load_average_end"]}')
    if a.json_out:
        write_json_atomic(results, a.json_out)
    return 0


if __name__ == '__main__':
    run(main)
