"""Issue 55 recount, item (4): the required floor of bench_pretrain.py --configs small --steps 20 --warmup 3
recounted by hand (positions, distinct tokens, char windows counted here with NumPy) against
common.required_flops on the same batches. Arithmetic only; no timing.
    cd /work/main && PYTHONDONTWRITEBYTECODE=1 .venv/bin/python /work/runs/m55/recount55_floor_check.py"""
import sys
import numpy as np
sys.path.insert(0, 'benchmarks')
import bench_pretrain, common
from paddle_elmo.model.config import ModelConfig

c = ModelConfig(**bench_pretrain.CONFIGS['small']['model'], dropout=0.1)
P, D, L, F, C, M = c.projection_dim, c.cell_dim, c.num_layers, c.n_filters, c.char_embed_dim, c.max_characters_per_token
K = bench_pretrain.NEGATIVES + 1
print(f'P {P} D {D} L {L} F {F} C {C} M {M} highways {c.num_highways} filters {c.cnn_filters} classes {K}')
for rows in (32, 128):
    timed = bench_pretrain.step_batches(rows, 20, 3)[3:]
    ids = [common.lm_step_char_ids(b) for b in timed]
    need = common.required_flops(c, ids, training=True, n_negative_samples=bench_pretrain.NEGATIVES)
    # by hand
    positions = distinct = 0; cnn = 0
    for a in ids:
        flat = a.reshape(-1, a.shape[-1]); real = flat[(flat > 0).any(axis=1)]
        positions += len(real)
        u = np.unique(real, axis=0); distinct += len(u)
        used = common.used_chars(u)
        cnn += sum(2 * np.minimum(M - w + 1, used).sum() * w * C * n for w, n in c.cnn_filters)
    lstm = positions * L * (2 * (P + P) * 4 * D + 2 * D * P)
    soft = positions * 2 * P * K
    token = distinct * (c.num_highways * 2 * 2 * F * F + 2 * F * P)
    hand = 3 * (lstm + soft + token + cnn)
    tokens = 20 * rows * bench_pretrain.UNROLL
    print(f'{rows} rows: positions/step {positions / 20:.0f}, distinct/step {distinct / 20:.1f}; per step forward GFLOP: '
          f'LSTM {lstm / 20e9:.4f}, softmax {soft / 20e9:.4f}, highway+projection {token / 20e9:.4f}, char CNN {cnn / 20e9:.4f}')
    print(f'  by hand x3: {hand / 20e9:.4f} GFLOP/step; required_flops: {need["total"] / 20e9:.4f} GFLOP/step '
          f'(parts {({k: round(need[k] / 20e9, 4) for k in ("char_cnn", "highway", "projection", "lstm", "softmax")})}); '
          f'equal: {hand == need["total"]}')
    print(f'  per token {need["total"] / tokens / 1e9:.5f} GFLOP; floor at 196.1 GFLOP/s {need["total"] / 20 / 196.1e6:.1f} ms/step, '
          f'{196.1e9 * tokens / need["total"]:.0f} tokens/s')
