"""Embedding's peak memory, stage by stage: one bench_embed.py embed worker's run (the same spec,
the same code path) with its peak RSS per stage: at every marker (entry and exit of the char CNN, of
BiLM.contextual and of each LSTM kernel call: kernels.streamed_recurrence on the CPU, else
kernels.recurrence) VmHWM is read and reset (/proc/self/clear_refs 5): each line names a marker ('>'
entry, '<' exit) and gives the peak RSS from it to the next marker, and the RSS there. Last line: the run's peak.

    python benchmarks/profile_memory.py --batch_size 256            # original size, 600 sentences
    python benchmarks/profile_memory.py --spec SPEC_JSON              # any bench_embed.py embed worker spec

Variants, by environment (none: the code as committed):
    NOREUSE=1    the embedder does not call keep_freed_memory (glibc's default thresholds)
    MMAP_MB=N    keep_freed_memory with an mmap threshold of N MB instead of 256 (TRIM_MB: its trim threshold)
"""
import argparse
import functools
import json
import os

import bench_embed

LOG, label = [], ['start']


def status_mb():
    fields = {}
    with open('/proc/self/status') as f:
        for line in f:
            key, _, value = line.partition(':')
            if key in ('VmRSS', 'VmHWM'):
                fields[key] = int(value.split()[0]) // 1024
    return fields


def mark(name):
    s = status_mb()
    LOG.append((label[0], s['VmHWM'], s['VmRSS']))
    with open('/proc/self/clear_refs', 'w') as f:
        f.write('5')  # reset VmHWM to the current RSS
    label[0] = name


def wrap(owner, attr, name):
    inner = getattr(owner, attr)

    @functools.wraps(inner)
    def marked(*args, **kwargs):
        mark(name + '>')
        result = inner(*args, **kwargs)
        mark(name + '<')
        return result
    setattr(owner, attr, marked)


def apply_variant():
    from paddle_elmo import runtime
    import paddle_elmo.use.embedder as embedder
    if os.environ.get('MMAP_MB'):  # the embedder's call, and use_device's (paddle-elmo embed)
        mmap_mb, trim_mb = int(os.environ['MMAP_MB']), int(os.environ.get('TRIM_MB', '512'))
        embedder.keep_freed_memory = runtime.keep_freed_memory = functools.partial(
            runtime.keep_freed_memory, mmap_mb, trim_mb)
    if os.environ.get('NOREUSE'):
        embedder.keep_freed_memory = runtime.keep_freed_memory = lambda *args: False


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('--config', default='original', help="bench_embed.py's configuration")
    p.add_argument('--batch_size', type=int, default=256, help='sentences per batch')
    p.add_argument('--n_sentences', type=int, default=600, help='embed the first N lines of --data_file')
    p.add_argument('--data_file', default=bench_embed.DEFAULT_DATA, help='sentences, one per line')
    p.add_argument('--threads', type=int, default=2, help='CPU threads')
    p.add_argument('--spec', help="a bench_embed.py embed worker's JSON spec (instead of the flags above)")
    return p.parse_args()


def worker_spec(a):
    """The embed worker spec of the flags: stateless, the char-CNN cache off, random weights (seed 0)."""
    if a.spec:
        return json.loads(a.spec)
    return {'kind': 'embed', 'config': a.config, 'stateful': False, 'cache': 'off', 'data_file': a.data_file,
            'n_sentences': a.n_sentences, 'batch_size': a.batch_size, 'threads': a.threads, 'device': 'cpu', 'seed': 0}


def main():
    spec = worker_spec(parse_args())
    from paddle_elmo.model import kernels
    apply_variant()
    sentences, _ = bench_embed.read_sentences(spec['data_file'], spec['n_sentences'])
    mark('build')
    bilm, embedder, _ = bench_embed.build_embedder(spec)
    mark('built')
    wrap(kernels, 'recurrence', 'lstm kernel')
    wrap(kernels, 'streamed_recurrence', 'lstm kernel')
    wrap(bilm, 'token_embedding', 'char CNN')
    wrap(bilm, 'contextual', 'LSTMs')
    for _ in embedder.iter_embeddings(sentences):
        pass
    mark('end')
    print('variant:', {k: os.environ[k] for k in ('NOREUSE', 'MMAP_MB', 'TRIM_MB') if k in os.environ})
    for name, peak, rss in LOG:
        print(f'from {name:14s} peak {peak:6d} MB, RSS at the next marker {rss:6d} MB')
    print('peak MB', max(peak for _, peak, _ in LOG))


if __name__ == '__main__':
    main()
