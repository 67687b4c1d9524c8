"""The ceilings of BENCHMARKS.md ("What the products allow at these shapes"), recounted from the raw
files of benchmarks/results/speed45_2026-11-26 (issue 55). Arithmetic only: it times nothing. Each
figure is read from a named file and line (checked against the text expected there) or counted by
hand from the configuration, or with common.required_flops on the very batches (which reads
../shared's data). Run from the checkout root:

    python benchmarks/results/roofline55_2026-11-27/recount.py > benchmarks/results/roofline55_2026-11-27/recount.txt
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
RAW = os.path.join(ROOT, 'benchmarks', 'results', 'speed45_2026-11-26')
sys.path.insert(0, os.path.join(ROOT, 'benchmarks'))


def cell(name, line, column, expect):
    """The `column`-th cell (0-based) of a Markdown table row at `name`:`line`, whose text must match `expect`."""
    text = open(os.path.join(RAW, name), encoding='utf-8').read().splitlines()[line - 1]
    assert re.search(expect, text), f'{name}:{line} is not the expected row: {text}'
    return float(text.strip('|').split('|')[column].strip().rstrip('%'))


def gflops(name, line):
    """The 'N GF/s' figures of a packed_rows.txt line -> [sequential, concurrent]."""
    text = open(os.path.join(RAW, name), encoding='utf-8').read().splitlines()[line - 1]
    return [float(x) for x in re.findall(r'\((\d+) GF/s\)', text)]


def show(label, value, source):
    print(f'{label}: {value}   [{source}]')


def ceiling(share, rest_of_rate, recurrence_of_rate):
    """Products only: the recurrence's `share` of the floor at `recurrence_of_rate`, the rest at `rest_of_rate`."""
    return 1 / ((1 - share) / rest_of_rate + share / recurrence_of_rate)


def pretraining():
    import common
    import bench_pretrain
    from paddle_elmo import ModelConfig
    print('## Pretraining, small (P 128, D 1024, 2 layers, 8192 negatives), 32 rows x 20 steps')
    mflop, alone, floor = (cell('ceiling_products.txt', 19, c, r'all 190 products') for c in (3, 4, 5))
    rate = mflop / floor  # GFLOP/s: the floor column is MFLOP / rate
    show('Paddle products of the 2 recorded steps', f'{mflop:.0f} MFLOP, {alone:.0f} ms alone, floor {floor:.0f} ms',
         'ceiling_products.txt:19')
    show('rate the floors were counted at', f'{rate:.1f} GFLOP/s', 'ceiling_products.txt:19, MFLOP / floor ms')
    config = ModelConfig(**bench_pretrain.CONFIGS['small']['model'], dropout=0.1)
    recorded = bench_pretrain.step_batches(32, 2, 1)[1:]  # matmul_ceiling: 1 warm-up step, then 2 recorded
    need = common.required_flops(config, [common.lm_step_char_ids(b) for b in recorded], training=True,
                                 n_negative_samples=bench_pretrain.NEGATIVES)
    required = need['total'] / 2 / 1e9
    show('required GFLOP a step (those 2 steps)', f'{required:.2f} ({need["distinct"] / 2:.1f} distinct tokens a step; '
         'the products table has 551 and 592)', 'common.required_flops on the batches')
    per_token = cell('pretrain_main_1.txt', 10, 12, r'small \|\s+32')
    show('required GFLOP a step (the 20 timed steps of the before/after runs)', f'{per_token * 640:.2f}',
         f'pretrain_main_1.txt:10, {per_token} GFLOP/token x 640')
    floor_ms = 1000 * required / rate
    show('required floor of a step', f'{floor_ms:.1f} ms', 'the two above')
    P, D, L, tokens = 128, 1024, 2, 640  # each direction runs 32 x 20 positions
    step = 2 * (P * 4 * D + D * P)  # h x W_hidden and m x W_P, per position
    per_step_gflop = 2 * L * 2 * tokens * step / 1e9  # forward + their transposes backward, 2 directions
    best = max(max(gflops('packed_rows.txt', n)) for n in (17, 18, 19))
    show('recurrence, per-step products (forward and backward)', f'{per_step_gflop:.2f} GFLOP at <= {best:.0f} GFLOP/s '
         f'= >= {1000 * per_step_gflop / best:.1f} ms', 'by hand; packed_rows.txt:17-19 (D=1024 P=128 m=32, best)')
    dw_hidden = cell('ceiling_products.txt', 17, 4, r'backward dW 640x128T @ 640x4096')
    dw_proj_gflop = 2 * L * 2 * tokens * D * P / 1e9
    dw = dw_hidden + 1000 * dw_proj_gflop / rate
    show('recurrence, weight gradients (kernels.cc LstmBackward, paddle::experimental::matmul: not recorded)',
         f'[640,128]^T[640,4096] x 4 = {dw_hidden} ms (the same shape as the input products\' dW); '
         f'[640,1024]^T[640,128] x 4 = {dw_proj_gflop:.2f} GFLOP, >= {1000 * dw_proj_gflop / rate:.2f} ms at the rate; '
         f'sum >= {dw:.1f} ms', 'ceiling_products.txt:17; by hand')
    recurrence = 1000 * per_step_gflop / best
    optimizer = cell('profile_after.txt', 13, 2, r'small \|\s+optimizer')
    old_floor = 1000 * per_token * 640 / rate
    print(f'- the section (2026-11-26): {old_floor:.0f} / ({alone:.0f} + {recurrence:.0f} + 40 [the optimizer as '
          f'implemented, "~40 ms (profiled)"]) = {old_floor / (alone + recurrence + 40):.1%}; with profile_after.txt:13\'s '
          f'{optimizer} ms {old_floor / (alone + recurrence + optimizer):.1%}')
    print(f'- issue 55: {old_floor:.0f} / ({alone:.0f} + {recurrence:.0f}) = {old_floor / (alone + recurrence):.1%} '
          f'(the optimizer dropped; the weight gradients still missing)')
    print(f'- recount, the recorded steps\' own floor: {floor_ms:.1f} / ({alone:.0f} + {recurrence:.1f} + {dw:.1f}) = '
          f'{floor_ms / (alone + recurrence + dw):.1%}; with the 20 timed steps\' floor '
          f'{old_floor / (alone + recurrence + dw):.1%}')
    print('\n## Pretraining, small, 128 rows: no raw file has a rate at these shapes (estimate only)')
    timed = bench_pretrain.step_batches(128, 20, 3)[3:]
    need = common.required_flops(config, [common.lm_step_char_ids(b) for b in timed], training=True,
                                 n_negative_samples=bench_pretrain.NEGATIVES)
    required = need['total'] / 20 / 1e9
    rec = 4 * per_step_gflop
    dw_gflop = 4 * 2 * L * 2 * tokens * (P * 4 * D + D * P) / 1e9  # the weight gradients' FLOPs at 128 rows
    paddle_gflop = required - rec - dw_gflop
    show('required GFLOP a step (the 20 timed steps)', f'{required:.1f}, of which the recurrence\'s per-step products '
         f'{rec:.1f} and weight gradients {dw_gflop:.1f}', 'common.required_flops; by hand')
    for paddle_of_rate, rec_rate in ((0.83, 142), (0.83, 224), (0.90, 224)):
        t = 1000 * (paddle_gflop / (paddle_of_rate * rate) + rec / rec_rate + dw_gflop / (0.89 * rate))
        print(f'- Paddle products at {paddle_of_rate:.0%} of the rate, recurrence at {rec_rate} GFLOP/s, weight '
              f'gradients at 89%: {1000 * required / rate:.0f} / {t:.0f} ms = {1000 * required / rate / t:.1%}')
    print('  (142: the 32-row rate at small\'s shapes, packed_rows.txt:17; 224: the original size\'s at 256 rows, '
          'packed_rows.txt:26; 83%, 89%: ceiling_products.txt:19, :17 at 32 rows)')


def embedding():
    import common
    import bench_embed
    print('\n## Embedding, original size (P 512, D 4096), stateless, cache off')
    rate, tps = 292.9, 1589  # embed_main_1.txt:7 and :15
    assert cell('embed_main_1.txt', 15, 8, r'original \| stateless') == tps
    show('required MFLOP a token', f'{rate * 1e3 / tps:.1f}', 'embed_main_1.txt:7, :15: 292.9 GFLOP/s / 1589 tokens/s')
    show('reference MFLOP a token, the recurrence\'s part', f'204.3, {2 * 2 * (2 * 512 * 16384 + 2 * 4096 * 512) / 1e6:.1f}'
         f' = {83.9 / 204.3:.0%}', 'embed_main_1.txt:8; by hand (2 layers x 2 directions)')
    rec, batch = (cell('profile_embed_after.txt', line, 4, expect) for line, expect in
                  ((7, 'recurrence'), (10, 'batch')))
    show('the recurrence\'s share of the required floor, batches of 64', f'{rec:.0f} / {batch:.0f} ms = {rec / batch:.1%}',
         'profile_embed_after.txt:7, :10')
    rest = cell('ceiling_products.txt', 34, 6, r'all 56 products') / 100
    show('Paddle\'s products alone, of the rate', f'{rest:.0%}', 'ceiling_products.txt:34')
    at64 = [x for n in (8, 9, 10, 24) for x in gflops('packed_rows.txt', n)[:1]]
    at128 = [gflops('packed_rows.txt', n)[0] for n in (25, 26, 27)]
    show('packed recurrence products, 2 threads', f'{min(at64):.0f}-{max(at64):.0f} GFLOP/s at 64 rows, '
         f'{min(at128):.0f}-{max(at128):.0f} at 128-512', 'packed_rows.txt:8-10, 24; 25-27')
    print('  the [4096]^2 rate of those minutes was not recorded beside them (packed_rows.txt:4-5 says 254-293 from '
          'other runs); the idle rate of ceiling_products.txt:34 is 315')
    sentences, _ = bench_embed.read_sentences(bench_embed.DEFAULT_DATA, 600)
    config = bench_embed.config_options('original')
    fraction = (2 * 512 * 16384 + 2 * 4096 * 512) / (4 * 512 * 16384 + 2 * 4096 * 512)
    for size, rates, lo_hi in ((64, at64, (293, 254)), (256, at128, (293, 254))):
        need = common.required_flops(config, bench_embed.embedder_batches(sentences, size, False))
        share = need['lstm'] * fraction / need['total']
        low, high = min(rates) / lo_hi[0], max(rates) / lo_hi[1]
        low_idle, high_idle = min(rates) / 315, max(rates) / 315
        print(f'- batches of {size}: {need["total"] / sum(map(len, sentences)) / 1e6:.1f} MFLOP a token, the recurrence '
              f'{share:.1%} of it (common.required_flops, 600 sentences); at {low:.2f}-{high:.2f} of the rate (254-293) the ceiling is '
              f'{ceiling(share, rest, low):.1%}-{ceiling(share, rest, high):.1%}; against 315: '
              f'{low_idle:.2f}-{high_idle:.2f}, {ceiling(share, rest, low_idle):.1%}-{ceiling(share, rest, high_idle):.1%}')
    print(f'- the section (2026-11-26): 1 / (0.59 / 0.85 + 0.41 / 0.60) = {ceiling(0.41, 0.85, 0.60):.1%} '
          f'({ceiling(0.41, 0.85, 0.65):.1%} at 0.65): the 41% was of the reference floor')
    print(f'- issue 55: the share 0.50 at 0.50-0.65: {ceiling(0.50, 0.85, 0.50):.1%}-{ceiling(0.50, 0.85, 0.65):.1%}')


def memory():
    from paddle_elmo.model.bilm import BiLM
    from paddle_elmo import ModelConfig
    import bench_pretrain
    print('\n## Memory traffic (by hand; no bandwidth was measured on 2026-11-26)')
    weights = 4 * (512 * 16384 + 4096 * 512)
    show('original size: W_hidden + W_P of one layer and direction, read at every step', f'{weights / 1e6:.1f} MB; '
         f'at 64 rows {2 * 64 * weights / 4 / weights:.0f} FLOP a byte', 'by hand: [512, 16384] + [4096, 512] float32')
    dense = sum(p.size for p in BiLM(ModelConfig(**bench_pretrain.CONFIGS['small']['model'])).parameters())
    for rows in (8192, 2 * 8192 + 1280):  # each direction's 8192 distinct candidates and 640 targets, united
        print(f'- small, Adagrad: {dense:,} dense values + {rows} softmax rows x 129: the norm\'s read + 5 values moved '
              f'each = {4 * 6 * (dense + 129 * rows) / 1e6:.0f} MB a step')


if __name__ == '__main__':
    pretraining()
    embedding()
    memory()
