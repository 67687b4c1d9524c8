"""Where a pretraining step's time goes: ms per step and share for each part, beside the time its
arithmetic needs at the machine's matmul rate.

    python benchmarks/profile_pretrain.py                       # small and bundled, 2 threads
    python benchmarks/profile_pretrain.py --configs small --steps 20 --ops 15

The step is bench_pretrain.py's (the same configurations, stream, seed, sampled softmax and
Adagrad; `bundled` is the bundled model's configuration and recipe: the budget preset, Adam) taken
apart with timers around the library's own calls:
  data            LMStream's next batch (NumPy)
  token layer     BiLM.token_embedding forward (char CNN, highway, projection once per distinct
                  token of the step's two streams) and its backward
  LSTMs           both LstmStack forwards and their backward (the recurrence kernels and the
                  input-to-gate products)
  softmax         the candidate sampler, the rows of W and b the step reads, the sampled-softmax
                  logits and loss, and their backward
  optimizer       global norm, clipping and the update (dense and the table rows), clear_grad
  other           what the step runs outside these (dropout, the loss's sum, Python between calls)
The backward is split where gradients arrive: a hook on each stack's top output fires when the
softmax's backward is done with it, a hook on the token layer's output when both stacks' are done.
Paddle's engine may interleave the two directions; the split is then approximate, the total exact.

"floor ms" is the part's matrix-product FLOPs on the very batches timed (common.required_flops, the
count bench_pretrain.py's "required floor" uses; forward + backward = 3x the forward) at the float32
matmul rate measured in the same run (the mean of the rates before and after the steps); "of floor"
= floor ms / ms. Parts with no product (data, optimizer) have no floor: all their time is overhead.
--ops N adds Paddle's profiler: the N operators with the most CPU time per step (a second pass
over as many steps, profiled; the profiler adds its own overhead; ms and calls are per step).
"""
import argparse
import collections
import json
import time

import common
import bench_pretrain

CONFIGS = dict(bench_pretrain.CONFIGS)
BUNDLED = 'bundled'  # the budget preset: the bundled model's configuration and recipe


def model_and_recipe(name):
    """-> (ModelConfig, batch size, negatives, optimizer name, lr) of configuration `name`."""
    from paddle_elmo.config import ModelConfig, PRESETS, split_fields
    if name == BUNDLED:
        model, recipe = split_fields(PRESETS['budget'])
        return ModelConfig(**model), recipe['batch_size'], recipe['n_negative_samples'], 'adam', recipe['lr']
    return (ModelConfig(**CONFIGS[name]['model'], dropout=0.1), CONFIGS[name]['batch_size'],
            bench_pretrain.NEGATIVES, 'adagrad', 0.2)


class Timers:
    """Accumulated seconds per part; `wrap` times a bound method in place."""

    def __init__(self):
        self.seconds = collections.defaultdict(float)
        self.marks = {}

    def wrap(self, owner, method, part):
        return common.time_calls(owner, method, self.seconds, part)

    def mark_on_grad(self, tensor, name):
        """Record when the backward reaches `tensor` (the latest time over calls of one backward)."""
        def hook(grad):
            self.marks[name] = time.perf_counter()
            return grad
        tensor.register_hook(hook)


def build(name, threads):
    """The model, optimizer and batch stream of configuration `name` (bench_pretrain's worker)."""
    from paddle_elmo.lm import LanguageModel
    from paddle_elmo.lm_batches import LMStream
    from paddle_elmo.optimizers import make_optimizer
    import paddle
    from paddle_elmo.runtime import use_device
    from paddle_elmo.vocabulary import Vocabulary
    use_device('cpu')
    paddle.seed(0)
    config, batch_size, negatives, rule, lr = model_and_recipe(name)
    vocab = Vocabulary(common.corpus_vocabulary(bench_pretrain.VOCAB_SIZE))
    model = LanguageModel(config, vocab.size, negatives)
    optimizer = make_optimizer(model, rule, lr, 10.0, warmup_steps=100 if rule == 'adam' else 0)
    batches = iter(LMStream(bench_pretrain.TRAIN, vocab, batch_size, bench_pretrain.UNROLL, seed=0))
    model.train()
    return model, optimizer, batches, config, negatives


def instrument(model, timers):
    """Time the library's calls in place; mark where the backward reaches the token layer and the tops."""
    bilm = model.bilm
    token_embedding = bilm.token_embedding

    def token_layer(*args, **kwargs):
        t0 = time.perf_counter()
        x = token_embedding(*args, **kwargs)
        timers.seconds['forward: token layer'] += time.perf_counter() - t0
        timers.mark_on_grad(x, 'token layer')
        return x
    bilm.token_embedding = token_layer
    for direction, stack in enumerate((bilm.forward_stack, bilm.backward_stack)):
        forward = stack.forward

        def lstm(x, batch_sizes, states, forward=forward, direction=direction):
            t0 = time.perf_counter()
            outputs, finals = forward(x, batch_sizes, states)
            timers.seconds['forward: LSTMs'] += time.perf_counter() - t0
            timers.mark_on_grad(outputs[-1], f'top {direction}')
            return outputs, finals
        stack.forward = lstm
    timers.wrap(model.sampler, 'sample', 'forward: softmax')
    timers.wrap(model.softmax, 'select_rows', 'forward: softmax')
    timers.wrap(model.softmax, 'sampled_loss', 'forward: softmax')


def timed_step(model, optimizer, batches, timers):
    """lm.train_step, timed part by part (its phases' ends, and where the backward reaches each part) -> the loss."""
    from paddle_elmo.lm import train_step
    t0 = time.perf_counter()
    batch = next(batches)
    t1 = time.perf_counter()
    ends = {}
    out, _ = train_step(model, optimizer, batch, mark=lambda phase: ends.__setitem__(phase, time.perf_counter()))
    tops = max(timers.marks['top 0'], timers.marks['top 1'])
    s = timers.seconds
    s['data'] += t1 - t0
    s['forward: all'] += ends['forward'] - t1
    s['backward: softmax'] += tops - ends['forward']
    s['backward: LSTMs'] += timers.marks['token layer'] - tops
    s['backward: token layer'] += ends['backward'] - timers.marks['token layer']
    s['optimizer'] += ends['optimizer'] - ends['backward']
    s['step'] += ends['optimizer'] - t0
    return float(out['loss'])


def worker(name, steps, warmup, top):
    """Profile `steps` steps of configuration `name` after `warmup`; print one JSON line."""
    model, optimizer, batches, config, negatives = build(name, None)
    from paddle_elmo.lm import train_step
    for _ in range(warmup):
        train_step(model, optimizer, next(batches))
    rate_before = common.measure_matmul_gflops()
    timers = Timers()
    instrument(model, timers)
    step_batches = []
    record = batches

    class Recording:  # the timed batches, for their FLOP count
        def __next__(self):
            b = next(record)
            step_batches.append(b)
            return b
    losses = [timed_step(model, optimizer, Recording(), timers) for _ in range(steps)]
    rate_after = common.measure_matmul_gflops()
    need = common.required_flops(config, [common.lm_step_char_ids(b) for b in step_batches], training=True,
                                 n_negative_samples=negatives)
    ms = {k: 1000 * v / steps for k, v in timers.seconds.items()}  # before operator_table's steps add to them
    ops = common.operator_table(lambda: [train_step(model, optimizer, next(batches)) for _ in range(steps)], steps,
                                top) if top else []
    print(json.dumps({'ms': ms,
                      'flops': {k: v / steps for k, v in need.items() if k not in ('positions', 'distinct',
                                                                                   'char_windows')},
                      'distinct/step': need['distinct'] / steps, 'losses': losses,
                      'rates': [rate_before, rate_after], 'ops': ops}))


def table(name, r):
    """The breakdown rows of one worker's result."""
    ms, flops = r['ms'], r['flops']
    rate = sum(r['rates']) / 2 * 1e9
    floor = lambda *parts: 1000 * sum(flops[p] for p in parts) / rate
    # Forward and backward of a part are 1/3 and 2/3 of its FLOPs (common.required_flops' 3x).
    token_parts, lstm_parts = ('char_cnn', 'highway', 'projection'), ('lstm',)
    forward_other = ms['forward: all'] - ms['forward: token layer'] - ms['forward: LSTMs'] - ms['forward: softmax']
    rows = [('data', ms['data'], None),
            ('token layer, forward', ms['forward: token layer'], floor(*token_parts) / 3),
            ('token layer, backward', ms['backward: token layer'], 2 * floor(*token_parts) / 3),
            ('LSTMs, forward', ms['forward: LSTMs'], floor(*lstm_parts) / 3),
            ('LSTMs, backward', ms['backward: LSTMs'], 2 * floor(*lstm_parts) / 3),
            ('softmax, forward', ms['forward: softmax'], floor('softmax') / 3),
            ('softmax, backward', ms['backward: softmax'], 2 * floor('softmax') / 3),
            ('optimizer', ms['optimizer'], None),
            ('other (dropout, loss, Python between calls)', forward_other, None)]
    out = [{'config': name, 'part': part, 'ms/step': t, 'share': f'{t / ms["step"]:.0%}',
            'floor ms': '' if f is None else round(f, 1), 'of floor': '' if f is None else f'{f / t:.0%}'}
           for part, t, f in rows]
    total_floor = floor('total')
    out.append({'config': name, 'part': '**step**', 'ms/step': ms['step'], 'share': '100%',
                'floor ms': round(total_floor, 1), 'of floor': f'{total_floor / ms["step"]:.0%}'})
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--configs', default=f'small,{BUNDLED}', help='comma-separated: ' + ', '.join([*CONFIGS, BUNDLED]))
    p.add_argument('--steps', type=int, default=20, help='timed steps per configuration')
    p.add_argument('--warmup', type=int, default=3, help='untimed steps first')
    p.add_argument('--threads', type=int, default=2, help='CPU threads')
    p.add_argument('--ops', type=int, default=0, help='also list the N operators with the most CPU time (0: none)')
    p.add_argument('--out', help='also write the results (JSON) here')
    p.add_argument('--worker', help=argparse.SUPPRESS)
    a = p.parse_args()
    common.set_threads(a.threads)
    if a.worker:
        return worker(a.worker, a.steps, a.warmup, a.ops)
    common.print_machine_info()
    common.corpus_vocabulary(bench_pretrain.VOCAB_SIZE)
    results, rows = {}, []
    for name in a.configs.split(','):
        r = common.run_worker([__file__, '--worker', name, '--steps', str(a.steps), '--warmup', str(a.warmup),
                               '--threads', str(a.threads), '--ops', str(a.ops)], env=common.thread_env(a.threads))
        results[name] = r
        rows += table(name, r)
        print(f'{name}: matmul rate {r["rates"][0]:.1f} GFLOP/s before the timed steps, {r["rates"][1]:.1f} after; '
              f'{r["distinct/step"]:.0f} distinct tokens per step')
    common.print_table(rows)
    common.report_profiles(results, a.out, threads=a.threads, steps=a.steps)


if __name__ == '__main__':
    main()
