"""Embedding speed: ELMoEmbedder tokens/s and peak memory, next to the arithmetic floor and the exported models.

    python benchmarks/bench_embed.py                     # the full table (~20 min on a busy 2-core box,
                                                         # more with the exported models' runs)
    python benchmarks/bench_embed.py --configs small --n_sentences 200 --cache on   # a quick look
    python benchmarks/bench_embed.py --configs none --embed_file_lines 10000,100000  # memory vs lines
    python benchmarks/bench_embed.py --modes stateless --exported onnxruntime   # ELMoEmbedder vs the ONNX export
    python benchmarks/bench_embed.py --exported none                         # ELMoEmbedder only
    bash benchmarks/setup_allennlp.sh && python benchmarks/bench_embed.py --n_sentences 1000   # + AllenNLP

Every configuration (random weights: the speed does not depend on the values) runs in its own
process, so that its peak memory (VmHWM, machine.peak_rss_mb: the whole process, Python and Paddle included) is its
own: `iter_embeddings` (what `encode` runs; each batch's arrays are dropped as they come, as
embed_file writes them out) over the first --n_sentences lines (whitespace tokens) in batches of
each of --batch_sizes (64 and 256: the batch users run by default, and one where the recurrence's
products have rows enough to run near the matmul rate), stateless and stateful, with the char-CNN
cache of known words on (50000 words) and
off, and `table`: the cached path (bilm-tf's `use_character_inputs=False`): the token embeddings of
lm-corpus's 100k-word vocabulary dumped once (dump_token_embeddings; its seconds are reported
apart) and read by an embedder of the model with that `embedding_weight_file`, the char CNN only for words outside
it, no other cache. One two-sentence call warms up first (thread pool, allocator); the timed run starts with an
empty cache. "tokens/CPU-s" divides by the process's CPU time instead of the wall time: it moves
less when other jobs share the cores.

tokens/s counts real tokens (not <S> and </S>). The floor: FLOPs per token of the configuration
(flop_counts.flops_breakdown; <S> and </S> not counted; with the cache on, the char CNN, highway and
projection count as free) divided by the float32 matmul rate on the same threads. ratio = tokens/s /
floor tokens/s. "GFLOP/s" is the same counting per second.
The memory bandwidth (stream.py's copy and triad) is measured after the matmul rate, in this
process, and printed and recorded beside it: the memory side of profile_embed.py's roofline floors.
"CNN runs/token" is the share of tokens that went through the char CNN.
That floor counts a fixed reference per token, more than the embedder computes (it runs the char CNN
once per distinct word of a batch, on the windows that touch a char, and not at all for cached
words), so its ratio can pass 1. "required floor tokens/s" counts only what the run needs on these
very batches (flop_counts.required_flops: char CNN, highway and projection once per distinct token of a
batch on the windows that touch a char, once per distinct token of the run with the cache on, none
for the table's words; the LSTMs over every position, <S> and </S> included): "ratio to required"
stays below 1 unless the arithmetic itself is beaten. --floor_only prints both counts for the
sentences without timing anything (--gflops RATE: their floors at a recorded matmul rate).

The figures (shares.py, the rule of every benchmark): each encode run (configuration, batch size,
mode, cache) is a worker process; the [--matmul_size]^2 rate is read in this process just before
and just after it, and the run is divided by the higher reading. Each runs --repeats times, in
rounds over them; the table's ratios are the medians of the runs' (tokens/s, seconds and the
other columns too; peak MB the largest), and each configuration's shares of the required and of
the reference floor are printed below it with N and every run's value.

Exported models (export-inference, deploy.py) beside ELMoEmbedder: for each configuration the
same random weights are exported once (Paddle Inference program + ONNX), then each runtime of
--exported embeds the same sentences and batches in its own process, stateless (the exports are):
Paddle Inference's predictor with oneDNN (`paddle`) and without (`paddle-no-onednn`: Paddle's CPU
kernels, matmuls on MKL), and onnxruntime. "x embedder" divides by ELMoEmbedder's stateless
tokens/s with its word cache on (and off). The exports compute the char CNN for every distinct word
of every batch; they keep no cache across batches.

Side by side with AllenNLP: when --allennlp_python exists (the venv benchmarks/setup_allennlp.sh
makes, ../allennlp-venv by default), each configuration's random weights are exported to bilm-tf's
hdf5 and benchmarks/allennlp_worker.py times AllenNLP's embedder (what its ElmoEmbedder did) on
the same sentences, batches and threads, in each mode; "x AllenNLP" divides our tokens/s (cache on,
the default) by its.
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time

from paddle_elmo.cli.arguments import add_device, parser
from paddle_elmo.cli.runner import run
import cpu_threads
import flag_checks
import flop_counts
import machine
import markdown_tables
import matmul_rates
import places
import shares
import stream
import worker_runs
from paddle_elmo.fileio import InputError

DEFAULT_DATA = os.path.join(places.SHARED, 'data', 'rt-polarity', 'rt-polarity.pos')
DEFAULT_CORPUS = os.path.join(places.SHARED, 'data', 'lm-corpus', 'train.txt')
DEFAULT_ALLENNLP_PYTHON = os.path.join(places.ROOT, '..', 'allennlp-venv', 'bin', 'python')
CACHE_SIZE = 50000
BATCH_SIZES = (64, 256)  # --batch_sizes' default: the encode table runs each; the other tables the first
TABLE_VOCAB = 100_000  # --cache table: lm-corpus's most frequent words, dumped once
CONFIGS = {  # ModelConfig fields
    'original': dict(projection_dim=512, cell_dim=4096, num_layers=2, num_highways=2),
    'small': dict(projection_dim=128, cell_dim=1024, num_layers=2, num_highways=1),
    'tiny': dict(projection_dim=32, cell_dim=128, num_layers=2, num_highways=1,
                 cnn_filters=[[1, 16], [2, 16], [3, 32], [4, 64]]),
}


def config_options(name):
    """The ModelConfig of configuration `name`."""
    from paddle_elmo.model.config import ModelConfig
    # Original filters, char embedding 16, clips 3, residual unless the config says otherwise.
    return ModelConfig(dropout=0.0, **CONFIGS[name])


def batch_sizes(given):
    """--batch_sizes (comma-separated; '' = BATCH_SIZES) -> [int]."""
    return flag_checks.positive_ints(given, '--batch_sizes') if given else list(BATCH_SIZES)


def read_sentences(path, n):
    """First n lines of a one-sentence-per-line file -> (token lists, encoding used)."""
    if not os.path.isfile(path):
        raise InputError(f'{path}: data file not found (../shared must be beside this checkout, '
                            f'or pass --data_file)')
    with open(path, 'rb') as f:
        raw = [line for _, line in zip(range(n), f)]
    try:
        text, encoding = [line.decode('utf-8') for line in raw], 'utf-8'
    except UnicodeDecodeError:
        text, encoding = [line.decode('latin-1') for line in raw], 'latin-1'
    return [line.split() for line in text], encoding


def embedder_batches(sentences, batch_size, stateful):
    """The char ids of the batches ELMoEmbedder runs (SentenceEmbedder._batches: input order when
    stateful, else grouped by length), <S> and </S> added."""
    import numpy as np
    from paddle_elmo.text.token_ids import CharMapper
    mapper = CharMapper()
    order = np.arange(len(sentences)) if stateful else np.argsort([len(s) for s in sentences], kind='stable')
    return [mapper.batch([sentences[i] for i in order[start:start + batch_size]])[0]
            for start in range(0, len(order), batch_size)]


def required_per_token(options, sentences, batch_size, stateful, cache):
    """FLOPs per real token (<S>, </S> not counted as tokens) that embedding `sentences` needs
    (flop_counts.required_flops) -> (FLOPs per token, distinct tokens through the char CNN per token)."""
    precomputed = None
    if cache == 'table':
        with open(places.corpus_vocabulary(TABLE_VOCAB), encoding='utf-8') as f:
            precomputed = [line.rstrip('\n') for line in f]
    need = flop_counts.required_flops(options, embedder_batches(sentences, batch_size, stateful),
                                 token_cache=cache == 'on', precomputed=precomputed)
    if cache == 'on' and need['distinct'] > CACHE_SIZE:  # the cache stops adding words when full
        raise ValueError(f'{need["distinct"]} distinct tokens: more than the cache holds ({CACHE_SIZE})')
    tokens = sum(len(s) for s in sentences)
    return need['total'] / tokens, need['distinct'] / tokens


# --------------------------------------------------------------------------------------------
# Workers (one process per measurement)
# --------------------------------------------------------------------------------------------

def count_char_cnn_tokens(bilm):
    """Count the real tokens that go through bilm.token_embedding (the char CNN) from now on."""
    counter = [0]
    inner = bilm.token_embedding

    def counting(char_ids, *args, **kwargs):
        counter[0] += int((char_ids > 0).any(axis=-1).astype('int64').sum())
        return inner(char_ids, *args, **kwargs)

    bilm.token_embedding = counting
    return counter


def build_embedder(spec):
    """-> (bilm, embedder, seconds the token table took to dump, or None)."""
    cpu_threads.set_threads(spec['threads'])
    import paddle
    from paddle_elmo import BiLM, ELMoEmbedder, dump_token_embeddings, export_weights, resolve_model
    paddle.set_device(spec['device'])
    paddle.seed(spec['seed'])
    bilm = BiLM(config_options(spec['config']))
    cache = spec.get('cache', 'on')
    model, dump_seconds = None, None
    if cache == 'table':  # the cached path: the vocabulary's token embeddings, dumped once
        directory = tempfile.mkdtemp(prefix='bench_embed_table_')
        export_weights(bilm, directory)
        vocab, table = places.corpus_vocabulary(TABLE_VOCAB), os.path.join(directory, 'token_embeddings.hdf5')
        start = time.perf_counter()
        dump_token_embeddings(vocab, directory, table)
        dump_seconds = time.perf_counter() - start
        model = resolve_model(directory, vocab_file=vocab, embedding_weight_file=table)  # the same weights, the table
    make = lambda: ELMoEmbedder(model, bilm=None if model else bilm, batch_size=spec['batch_size'],
                                device=spec['device'], stateful=spec.get('stateful', False), reuse_memory=True,
                                token_cache_size=CACHE_SIZE if cache == 'on' else 0)
    make().encode([['A', 'warm-up', 'sentence', '.'], ['Another', 'one']])
    bilm.reset_states()
    embedder = make()
    return embedder.bilm, embedder, dump_seconds


def time_embedding(embedder, sentences):
    """Embed `sentences` batch by batch (kept nowhere) -> dict of the timing and memory figures."""
    model_mb = machine.current_rss_mb()
    start, cpu = time.perf_counter(), time.process_time()
    for _ in embedder.iter_embeddings(sentences):
        pass
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    return dict(tokens=sum(len(s) for s in sentences), sentences=len(sentences), seconds=seconds,
                cpu_seconds=cpu, peak_rss_mb=machine.peak_rss_mb(), model_rss_mb=model_mb)


def embed_worker(spec):
    sentences, _ = read_sentences(spec['data_file'], spec['n_sentences'])
    bilm, embedder, dump_seconds = build_embedder(spec)
    counter = count_char_cnn_tokens(bilm)
    result = time_embedding(embedder, sentences)
    return dict(result, cnn_tokens=counter[0], dump_seconds=dump_seconds)


def embed_file_worker(spec):
    _, embedder, _ = build_embedder(spec)
    model_mb = machine.current_rss_mb()
    start = time.perf_counter()
    lines = embedder.embed_file(spec['input_file'], spec['output_file'], spec['output_format'], progress=False)
    seconds = time.perf_counter() - start
    return dict(lines=lines, seconds=seconds, peak_rss_mb=machine.peak_rss_mb(), model_rss_mb=model_mb)


def export_worker(spec):
    """The configuration's random weights (the embed workers' seed) -> options.json + weights.hdf5."""
    import paddle
    from paddle_elmo import BiLM, export_weights
    paddle.seed(spec['seed'])
    export_weights(BiLM(config_options(spec['config'])), spec['output_dir'])
    return {'output_dir': spec['output_dir']}


def export_inference_worker(spec):
    """The configuration's random weights (the embed workers' seed) -> an export_inference directory."""
    import paddle
    from paddle_elmo.export.deploy import export_inference
    from paddle_elmo import BiLM
    paddle.seed(spec['seed'])
    export_inference(BiLM(config_options(spec['config'])), spec['output_dir'])
    return {'output_dir': spec['output_dir']}


def exported_worker(spec):
    """Time an exported model as embed_worker times ELMoEmbedder (same sentences, batches, warm-up)."""
    cpu_threads.set_threads(spec['threads'])
    from paddle_elmo.export.inference import InferenceEmbedder
    from paddle_elmo.runtime import keep_freed_memory
    keep_freed_memory()  # as the embedder's runs (reuse_memory=True)
    sentences, _ = read_sentences(spec['data_file'], spec['n_sentences'])
    embedder = InferenceEmbedder(spec['model_dir'], backend=EXPORTED_RUNTIMES[spec['runtime']]['backend'],
                                 batch_size=spec['batch_size'], onednn=EXPORTED_RUNTIMES[spec['runtime']]['onednn'],
                                 threads=spec['threads'])
    embedder.encode([['A', 'warm-up', 'sentence', '.'], ['Another', 'one']])
    return time_embedding(embedder, sentences)


EXPORTED_RUNTIMES = {  # --exported names -> InferenceEmbedder arguments
    'paddle': dict(backend='paddle', onednn=True),
    'paddle-no-onednn': dict(backend='paddle', onednn=False),
    'onnxruntime': dict(backend='onnxruntime', onednn=False),
}

WORKERS = {'embed': embed_worker, 'embed_file': embed_file_worker, 'export': export_worker,
           'export_inference': export_inference_worker, 'exported': exported_worker}


def run_measurement(spec):
    env = cpu_threads.thread_env(spec['threads'])
    return worker_runs.run_worker([os.path.abspath(__file__), '--worker', json.dumps(spec)], env=env)


# --------------------------------------------------------------------------------------------
# The benchmark
# --------------------------------------------------------------------------------------------

def encode_runs(a):
    """The encode table's runs, in order -> [(config, batch size, mode, cache)]."""
    return [(config, batch_size, mode, cache) for config in a.configs for batch_size in a.batch_sizes
            for mode in a.modes for cache in a.cache]


def embed_run(a, run_, bracket):
    """One encode run (config, batch size, mode, cache) in its own process, bracketed by matmul
    readings -> the worker's result with its 'readings' (start, end)."""
    config, batch_size, mode, cache = run_
    spec = dict(kind='embed', config=config, stateful=mode == 'stateful', cache=cache,
                data_file=a.data_file, n_sentences=a.n_sentences, batch_size=batch_size,
                threads=a.threads, device=a.device, seed=a.seed)
    print(f'  {config} batch {batch_size} {mode} cache {cache} ...', end=' ', flush=True)
    r, readings = bracket.run(lambda: run_measurement(spec))
    load = machine.load_average()[0]
    print(f'{r["tokens"] / r["seconds"]:.0f} tokens/s, {r["seconds"]:.1f} s; matmul {readings[0]:.1f} GFLOP/s '
          f'before, {readings[1]:.1f} after; load {load}', flush=True)
    return dict(r, readings=readings, load=load)


def embed_rows(a, bracket):
    """The encode table: each run of encode_runs --repeats times, in rounds -> (rows of medians over
    the runs, {label: figures}, {label: runs})."""
    sentences, _ = read_sentences(a.data_file, a.n_sentences)
    runs = shares.in_rounds(encode_runs(a), a.repeats, lambda run_, _: embed_run(a, run_, bracket))
    rows, figures, raw = [], {}, {}
    for (config, batch_size, mode, cache), rs in runs.items():
        options = config_options(config)
        fpt = flop_counts.flops_per_token(options, cached_char_cnn=cache != 'off')
        required, _ = required_per_token(options, sentences, batch_size, mode == 'stateful', cache)
        label = f'{config}, batches of {batch_size}, {mode}, cache {cache}'
        readings = [r['readings'] for r in rs]
        seconds_per_token = [r['seconds'] / r['tokens'] for r in rs]
        figures[label] = [shares.rate_figure('share of required floor', [
                              shares.share_of_floor(required, t, x) for t, x in zip(seconds_per_token, readings)],
                              readings),
                          shares.rate_figure('share of reference floor', [
                              shares.share_of_floor(fpt, t, x) for t, x in zip(seconds_per_token, readings)],
                              readings)]
        raw[label] = rs
        median = statistics.median
        tps = median(r['tokens'] / r['seconds'] for r in rs)
        rows.append({'config': config, 'batch': batch_size, 'mode': mode, 'cache': cache, 'runs': len(rs),
                     'tokens/s': tps, 'peak MB': max(r['peak_rss_mb'] for r in rs), 'GFLOP/s': tps * fpt / 1e9,
                     'floor tokens/s': median(shares.reference_rate(x) * 1e9 / fpt for x in readings),
                     'ratio': figures[label][1].median,
                     'required floor tokens/s': median(shares.reference_rate(x) * 1e9 / required for x in readings),
                     'ratio to required': figures[label][0].median,
                     'CNN runs/token': median(r['cnn_tokens'] / r['tokens'] for r in rs),
                     'tokens/CPU-s': median(r['tokens'] / r['cpu_seconds'] for r in rs),
                     'seconds': median(r['seconds'] for r in rs),
                     'table dump s': rs[0]['dump_seconds'] or '', 'load (1 min)': max(r['load'] for r in rs)})
    return rows, figures, raw


def allennlp_rows(a, ours):
    """AllenNLP's embedder on the same weights, sentences, batches and threads; -> rows beside ours."""
    rows = []
    worker = os.path.join(places.ROOT, 'benchmarks', 'allennlp_worker.py')
    with tempfile.TemporaryDirectory(prefix='bench_embed_allennlp_') as tmp:
        for config in a.configs:
            run_measurement(dict(kind='export', config=config, output_dir=tmp, seed=a.seed, threads=a.threads))
            for mode in a.modes:
                print(f'  AllenNLP {config} {mode} ...', end=' ', flush=True)
                argv = [worker, '--options_file', os.path.join(tmp, 'options.json'),
                        '--weight_file', os.path.join(tmp, 'weights.hdf5'), '--sentences_file', a.data_file,
                        '--n_sentences', str(a.n_sentences), '--batch_size', str(a.batch_sizes[0]),
                        '--threads', str(a.threads), '--stateful' if mode == 'stateful' else '--no-stateful']
                r = worker_runs.run_worker(argv, python=a.allennlp_python)
                tps = r['tokens'] / r['seconds']
                print(f'{tps:.0f} tokens/s, {r["seconds"]:.1f} s', flush=True)
                mine = next(row for row in ours if row['config'] == config and row['mode'] == mode
                            and row['cache'] == 'on' and row['batch'] == a.batch_sizes[0])
                rows.append({'config': config, 'mode': mode, 'AllenNLP tokens/s': tps, 'ours tokens/s': mine['tokens/s'],
                             'x AllenNLP': mine['tokens/s'] / tps, 'AllenNLP peak MB': r['peak_rss_mb'],
                             'AllenNLP MB after load': r['model_rss_mb'], 'ours peak MB': mine['peak MB'],
                             'torch': r['torch'], 'threads': r['threads']})
    return rows


def exported_rows(a, ours):
    """Each runtime of --exported on each configuration's export; -> rows beside ELMoEmbedder's."""
    rows = []
    with tempfile.TemporaryDirectory(prefix='bench_embed_exported_') as tmp:
        for config in a.configs:
            model_dir = os.path.join(tmp, config)
            print(f'  exporting {config} ...', end=' ', flush=True)
            run_measurement(dict(kind='export_inference', config=config, output_dir=model_dir, seed=a.seed,
                                 threads=a.threads))
            print('done', flush=True)
            mine = {row['cache']: row['tokens/s'] for row in ours
                    if row['config'] == config and row['mode'] == 'stateless' and row['batch'] == a.batch_sizes[0]}
            for runtime in a.exported:
                spec = dict(kind='exported', config=config, runtime=runtime, model_dir=model_dir,
                            data_file=a.data_file, n_sentences=a.n_sentences, batch_size=a.batch_sizes[0],
                            threads=a.threads, seed=a.seed)
                print(f'  {config} exported, {runtime} ...', end=' ', flush=True)
                r = run_measurement(spec)
                load = machine.load_average()[0]
                tps = r['tokens'] / r['seconds']
                print(f'{tps:.0f} tokens/s, {r["seconds"]:.1f} s, load {load}', flush=True)
                rows.append({'config': config, 'runtime': runtime, 'tokens/s': tps, 'peak MB': r['peak_rss_mb'],
                             'MB after load': r['model_rss_mb'], 'tokens/CPU-s': r['tokens'] / r['cpu_seconds'],
                             'x embedder (cache on)': tps / mine['on'] if 'on' in mine else '',
                             'x embedder (cache off)': tps / mine['off'] if 'off' in mine else '',
                             'seconds': r['seconds'], 'load (1 min)': load})
    return rows


def write_lines(source, n, path):
    """The first n lines of `source` (repeated if it is shorter) -> path."""
    written = 0
    with open(path, 'wb') as out:
        while written < n:
            with open(source, 'rb') as f:
                for line in f:
                    out.write(line)
                    written += 1
                    if written == n:
                        break
            if written == 0:
                raise InputError(f'{source}: empty file')


def embed_file_rows(a):
    if not os.path.isfile(a.embed_file_source):
        raise InputError(f'{a.embed_file_source}: --embed_file_source not found')
    rows = []
    with tempfile.TemporaryDirectory(prefix='bench_embed_') as tmp:
        for n in a.embed_file_lines:
            input_file, output_file = os.path.join(tmp, f'{n}.txt'), os.path.join(tmp, f'{n}.hdf5')
            write_lines(a.embed_file_source, n, input_file)
            spec = dict(kind='embed_file', config=a.embed_file_config, input_file=input_file,
                        output_file=output_file, output_format=a.embed_file_format, batch_size=a.batch_sizes[0],
                        threads=a.threads, device=a.device, seed=a.seed)
            print(f'  embed_file {n} lines ({a.embed_file_config}) ...', end=' ', flush=True)
            r = run_measurement(spec)
            load = machine.load_average()[0]
            print(f'{r["seconds"]:.0f} s, load {load}', flush=True)
            rows.append({'config': a.embed_file_config, 'lines': n, 'format': a.embed_file_format,
                         'peak MB': r['peak_rss_mb'], 'after model build MB': r['model_rss_mb'],
                         'sentences/s': r['lines'] / r['seconds'], 'output MB': os.path.getsize(output_file) / 2 ** 20,
                         'load (1 min)': load})
            os.remove(output_file)
            os.remove(input_file)
    return rows


def print_floors(a, rate):
    for config in a.configs:
        options = config_options(config)
        full = flop_counts.flops_breakdown(options)
        cached = flop_counts.flops_per_token(options, cached_char_cnn=True)
        print(f'{config}: {full["total"] / 1e6:.1f} MFLOP/token (char CNN {full["char_cnn"] / 1e6:.1f}, highway '
              f'{full["highway"] / 1e6:.1f}, projection {full["projection"] / 1e6:.1f}, LSTMs {full["lstm"] / 1e6:.1f}) '
              f'-> floor {rate * 1e9 / full["total"]:.0f} tokens/s; with cached token vectors '
              f'{cached / 1e6:.1f} MFLOP/token -> floor {rate * 1e9 / cached:.0f} tokens/s')


def floor_rows(a):
    """--floor_only: reference and required FLOPs per token of each configuration, mode and cache
    on the sentences, without timing anything."""
    sentences, _ = read_sentences(a.data_file, a.n_sentences)
    rows = []
    for config, batch_size, mode, cache in encode_runs(a):
        options = config_options(config)
        reference = flop_counts.flops_per_token(options, cached_char_cnn=cache != 'off')
        required, distinct = required_per_token(options, sentences, batch_size, mode == 'stateful', cache)
        row = {'config': config, 'batch': batch_size, 'mode': mode, 'cache': cache,
               'tokens': sum(len(s) for s in sentences), 'CNN runs/token': distinct,
               'reference MFLOP/token': reference / 1e6, 'required MFLOP/token': required / 1e6}
        if a.gflops:
            row.update({'floor tokens/s': a.gflops * 1e9 / reference,
                        'required floor tokens/s': a.gflops * 1e9 / required})
        rows.append(row)
    return rows


def parse_args(argv=None):
    p = parser(__doc__.split('\n')[0])
    p.add_argument('--data_file', default=DEFAULT_DATA, help='sentences to embed, one per line, whitespace tokens')
    p.add_argument('--n_sentences', type=int, default=2000, help='embed the first N lines')
    p.add_argument('--batch_sizes', default=','.join(map(str, BATCH_SIZES)),
                   help='comma-separated sentences per batch: the encode table runs each, the exported models, '
                   'AllenNLP and embed_file the first')
    p.add_argument('--threads', type=int, default=2, help='CPU threads (OMP/MKL and Paddle)')
    add_device(p)
    p.add_argument('--configs', default='original,small',
                   help=f'comma-separated, from {", ".join(CONFIGS)}; "none" skips the encode table')
    p.add_argument('--modes', default='stateless,stateful', help='comma-separated: stateless, stateful')
    p.add_argument('--cache', default='on,off,table', help='char-CNN cache of known words: on, off, table (the '
                   'cached path: a dumped vocabulary table), comma-separated')
    p.add_argument('--matmul_size', type=int, default=4096, help='n of the [n, n] matmul that sets the floor')
    p.add_argument('--matmul_seconds', type=float, default=3.0, help='how long to measure the matmul rate')
    p.add_argument('--embed_file_lines', default='',
                   help='comma-separated line counts (e.g. 10000,100000): embed_file peak memory per count')
    p.add_argument('--embed_file_source', default=DEFAULT_CORPUS, help='lines for the embed_file files')
    p.add_argument('--embed_file_config', default='tiny', choices=list(CONFIGS),
                   help='model for the embed_file runs (memory growth does not depend on its size)')
    p.add_argument('--embed_file_format', default='all', choices=['all', 'top', 'average'],
                   help='embed_file output_format')
    p.add_argument('--exported', default=','.join(EXPORTED_RUNTIMES),
                   help=f'comma-separated runtimes of the exported model, from {", ".join(EXPORTED_RUNTIMES)} '
                   '("none": skip); each configuration is exported once')
    p.add_argument('--seed', type=int, default=0, help='random weights seed')
    p.add_argument('--allennlp_python', default=DEFAULT_ALLENNLP_PYTHON,
                   help='python of the venv benchmarks/setup_allennlp.sh makes: AllenNLP is timed beside us when it '
                   'exists ("none": skip)')
    shares.add_flags(p)
    p.add_argument('--floor_only', action='store_true',
                   help='print the reference and required FLOPs per token of --configs/--modes/--cache on the '
                   'sentences and exit (no model, no timing)')
    p.add_argument('--gflops', type=float, default=0.0,
                   help='with --floor_only: a recorded matmul rate (GFLOP/s) to turn the counts into floors; 0 = none')
    p.add_argument('--worker', help=argparse.SUPPRESS)  # internal: one measurement, JSON spec
    a = p.parse_args(argv)
    return a if a.worker else check_args(p, a)


def choices(value, allowed, option):
    """A comma-separated flag value ('' or 'none': none) -> its items, each one of `allowed` (else an
    InputError naming `option`)."""
    items = [] if value in ('', 'none') else [v.strip() for v in value.split(',') if v.strip()]
    bad = [v for v in items if v not in allowed]
    if bad:
        raise InputError(f'{option}: unknown value(s) {", ".join(bad)}; expected {", ".join(allowed)}')
    return items


def check_args(p, a):
    a.configs = choices(a.configs, list(CONFIGS), '--configs')
    a.modes = choices(a.modes, ['stateless', 'stateful'], '--modes')
    a.cache = choices(a.cache, ['on', 'off', 'table'], '--cache')
    a.exported = choices(a.exported, list(EXPORTED_RUNTIMES), '--exported')
    a.batch_sizes = flag_checks.positive_ints(a.batch_sizes, '--batch_sizes')
    try:
        a.embed_file_lines = [int(v) for v in a.embed_file_lines.split(',') if v.strip()]
    except ValueError:
        raise InputError(f'--embed_file_lines: expected comma-separated integers, got {a.embed_file_lines!r}')
    flag_checks.check_positive(a, ('n_sentences', 'threads', 'matmul_size', 'repeats'))
    if any(n < 1 for n in a.embed_file_lines):
        raise InputError('--embed_file_lines: counts must be >= 1')
    if a.configs and a.modes and a.cache:
        read_sentences(a.data_file, 1)  # fail now, not after the matmul measurement
    return a


def main():
    a = parse_args()
    if a.worker:
        return worker_runs.answer_worker(a.worker, WORKERS)
    if a.floor_only:
        markdown_tables.print_table(floor_rows(a))
        return 0
    try:
        run_benchmark(a)
    except RuntimeError as e:  # a worker failed: its last error line, no traceback
        print(f'error: {e}', file=sys.stderr)
        return 1
    return 0


def run_benchmark(a):
    cpu_threads.set_threads(a.threads)
    import paddle
    paddle.set_device(a.device)
    info = machine.machine_info()
    machine.print_machine_info(info)
    measure = lambda: matmul_rates.measure_matmul_gflops(a.matmul_size, a.matmul_seconds)  # noqa: E731
    rate = measure()
    print(f'float32 matmul [{a.matmul_size}]^2, {a.threads} threads, {a.device}: {rate:.1f} GFLOP/s (best of '
          f'{a.matmul_seconds:g} s; read again after each run)')
    bandwidth = stream.measure_stream_gbs(a.threads)  # the memory side of profile_embed.py's roofline
    print(stream.describe(bandwidth), flush=True)
    results = {'matmul_gflops': rate, 'stream_gbs': bandwidth,
               'args': {k: v for k, v in vars(a).items() if k != 'worker'}}
    figures = {}
    if a.configs and a.modes and a.cache:
        print_floors(a, rate)
        _, encoding = read_sentences(a.data_file, a.n_sentences)
        print(f'encode: first {a.n_sentences} lines of {a.data_file} ({encoding}), batches of '
              f'{", ".join(map(str, a.batch_sizes))}, {a.repeats} run(s) each')
        # the stream measurement ran since `rate`: the first run reads the rate again at its start
        results['encode'], figures, results['encode_runs'] = embed_rows(a, shares.Bracket(measure))
        markdown_tables.print_table(results['encode'])
        shares.print_figures(figures)
        if a.exported and a.device != 'cpu':
            print('exported models not timed: they run on the CPU here (--device cpu)')
        elif a.exported:
            print('exported models (export-inference), stateless, same sentences and batches:')
            results['exported'] = exported_rows(a, results['encode'])
            markdown_tables.print_table(results['exported'])
        if a.allennlp_python != 'none' and os.path.exists(a.allennlp_python) and 'on' in a.cache:
            results['allennlp'] = allennlp_rows(a, results['encode'])
            markdown_tables.print_table(results['allennlp'])
        else:
            print(f'AllenNLP not timed: {a.allennlp_python} not found (bash benchmarks/setup_allennlp.sh makes it)')
    if a.embed_file_lines:
        print(f'embed_file: lines of {a.embed_file_source}, batch {a.batch_sizes[0]}')
        results['embed_file'] = embed_file_rows(a)
        markdown_tables.print_table(results['embed_file'])
    results['matmul_gflops_end'] = measure()
    results['load_average_end'] = machine.load_average()
    print(f'float32 matmul rate at the end: {results["matmul_gflops_end"]:.1f} GFLOP/s; '
          f'load average {results["load_average_end"]}')
    if a.json_out:
        shares.write_json(a.json_out, figures, info, **results)


if __name__ == '__main__':
    run(main)
