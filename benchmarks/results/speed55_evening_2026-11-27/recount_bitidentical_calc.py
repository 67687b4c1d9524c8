"""Arithmetic only (no timing, no Paddle): the bit-identical floor of bench_pretrain's small step at
32 and 128 rows, from the raw files named beside each number. Output: recount_bitidentical_calc.txt.
Abbreviations: B1 = bench_1.txt, P32/P128 = prof32_ops.txt/prof128_ops.txt, K32 = kprof32.txt,
MC = /work/main/benchmarks/results/speed55_paths_2026-11-27/matmul_ceiling_paths.txt,
LP = .../lstm_kernel_probe.txt, PW = .../pretrain_path7_1.txt (17:02), FC = ../../../main/benchmarks/
results/speed55_2026-11-27/recount55_floor_check.txt, BRIEF = the lead's numbers for 128 rows."""

def p(*a):
    print(*a)

# ---- required floor per step (FC:4, FC:7) and the windows' steps ---------------------------------
REQ = {32: 59.8414, 128: 210.2557}          # GFLOP/step, FC:4 / FC:7 (= B1:11-12's 0.0935 / 0.0821 x tokens)
TOK = {32: 32 * 20, 128: 128 * 20}          # tokens a step (unroll 20)
windows = {  # name: (rate GFLOP/s at start, tokens/s 128, tokens/s 32, file)
    '17:02 path7 (best)': (219.3, 2105, 1653, 'PW:7,11,12'),
    '17:04 path7': (218.6, 2061, 1647, 'pretrain_path7_2.txt:7,11,12'),
    '17:31 path7': (219.8, 2031, 1468, 'window2_path7/pretrain_1.txt:7,11,12'),
    '17:33 path7': (214.8, 1983, 1612, 'window2_path7/pretrain_2.txt:7,11,12'),
    '17:59 path7': (217.7, 2000, 1568, 'window3_path7/pretrain_1.txt:7,11,12'),
    '18:01 path7': (219.3, 2021, 1537, 'window3_path7/pretrain_2.txt:7,11,12'),
    '18:26 bench_1': (211.8, 1950, 1450, 'B1:7,11,12'),
}
TARGET = {32: 0.75, 128: 0.80}
p('== gaps to the targets, per window (step = tokens / tokens/s; floor = REQ / start rate, bench_pretrain.py:140,160)')
gap = {}
for name, (rate, t128, t32, src) in windows.items():
    row = []
    for rows, tps in ((128, t128), (32, t32)):
        step = 1000 * TOK[rows] / tps
        floor = 1000 * REQ[rows] / rate
        need = step - floor / TARGET[rows]
        gap[(name, rows)] = (step, floor, need)
        row.append(f'{rows} rows: step {step:.1f} ms, floor {floor:.1f}, share {floor/step:.1%}, '
                   f'step for target {floor/TARGET[rows]:.1f}, gap {need:.1f} ms ({need/step:.1%})')
    p(f'{name:20s} [{src}]  ' + ' | '.join(row))
p('128-row gap with the end rate 210.3 (B1:13):',
  round(1000 * TOK[128] / 1950 - 1000 * REQ[128] / 210.3 / 0.8, 1), 'ms')
p('32-row gap in the profile frame (P32:7 rate 221.9, step 451 P32:20):', round(451 - 1000 * REQ[32] / 221.9 / 0.75, 1))

# ---- A: Paddle's products alone at their exact shapes (MC, path 7, 17:43, [4096]^2 224) ---------
R4096 = 224.0  # MC:18, MC:32
mc128 = {'fwd 1780': 74.4, 'fwd 1721': 69.2, 'dX 1780': 75.6, 'dW 1780': 72.6, 'dX 1721': 68.9, 'dW 1721': 68.3}  # MC:7-12
mc32 = {'fwd 592': 26.2, 'dW 592': 23.7, 'dX 592': 26.2, 'dX 551': 25.1, 'fwd 551': 25.7, 'dW 551': 22.1}       # MC:21-26
def hw_flop(u):
    return 2 * u * 2048 * 2048 / 1e9
p('\n== highway products alone (MC, path 7): GFLOP/s and share of the [4096]^2 rate 224')
for d in (mc32, mc128):
    for k, ms in d.items():
        u = int(k.split()[1]); r = hw_flop(u) / ms * 1000
        p(f'  {k:9s} {ms:5.1f} ms  {r:6.1f} GFLOP/s  {r / R4096:.1%}')
hw32_rec = sum(mc32.values())            # per step, averaged over the two recorded steps (592, 551 distinct)
hw128_rec = sum(mc128.values())          # (1780, 1721)
hw32_552 = 2 * (mc32['fwd 551'] + mc32['dX 551'] + mc32['dW 551'])      # one step of 551 ~ 552 distinct
hw128_1712 = hw128_rec * 1712.4 / 1750.5                                # FC:7: 1712.4 distinct a step
p(f'highway per step: 32 rows {hw32_rec:.1f} ms (recorded mean 571.5 distinct), at 551: {hw32_552:.1f};'
  f' 128 rows {hw128_rec:.1f} (1750.5), scaled to 1712.4: {hw128_1712:.1f}')
for S, name in ((1000 * 640 / 1450, 'bench_1'), (420.687, 'kprof32 (K32:12)'), (451, 'prof32 (P32:20)')):
    p(f'  highway alone / {name} step {S:.1f}: {hw32_552 / S:.1%}')
fwd_share = 0.062 + 0.062  # spy32_summary.txt:4-5, Highway.forward lines 50 and 51
bwd_over_fwd = (mc32['dX 551'] + mc32['dW 551']) / mc32['fwd 551']
p(f'  in-step from py-spy: forward {fwd_share:.1%} x (1 + backward/forward alone {bwd_over_fwd:.2f}) = '
  f'{fwd_share * (1 + bwd_over_fwd):.1%}; 3 x forward = {3 * fwd_share:.1%}')

# Paddle product FLOPs in MC's recorded steps: highway + char CNN and projection (scaled by distinct),
# LSTM input (fwd, dX, dW: 3 x 4 x 2 n 128 4096) and softmax (3 x 2 x 2 n 128 8192)
def paddle_flop(rows, distinct, base_distinct):
    n = rows * 20
    cnn_proj = {32: 5.0297 + 0.8678, 128: 16.6806 + 2.6934}[rows] * distinct / base_distinct  # FC:5, FC:8
    return (6 * hw_flop(distinct) + cnn_proj + 3 * 4 * 2 * n * 128 * 4096 / 1e9 + 3 * 2 * 2 * n * 128 * 8192 / 1e9)
A_rec = {32: 273.0, 128: 883.0}  # MC:31, MC:17
A = {}
for rows, dist_rec, dist_b, hw_rec, hw_b in ((32, 571.5, 552.0, hw32_rec, hw32_552), (128, 1750.5, 1712.4, hw128_rec, hw128_1712)):
    f_rec = paddle_flop(rows, dist_rec, dist_b)
    rest = A_rec[rows] - hw_rec
    f_rest = f_rec - 6 * hw_flop(dist_rec)
    cnn = ({32: 5.0297 + 0.8678, 128: 16.6806 + 2.6934}[rows]) * dist_rec / dist_b
    cnn_ms = rest * cnn / f_rest
    A[rows] = A_rec[rows] - (hw_rec - hw_b) - cnn_ms * (1 - dist_b / dist_rec)
    p(f'A {rows} rows: recorded {A_rec[rows]} ms for {f_rec:.2f} GFLOP = {f_rec / A_rec[rows] * 1000:.1f} GFLOP/s '
      f'= {f_rec / A_rec[rows] * 1000 / R4096:.1%} of 224; at the bench steps\' distinct tokens: {A[rows]:.1f} ms')

# ---- B: the recurrence kernel alone (LP, path 7), 4 calls a step (K32:1-2) ------------------------
B = {32: (4 * (5.35 + 10.84), 4 * (5.71 + 11.10)),      # LP:12-13, LP:32-33
     128: (4 * (20.60 + 41.08), 4 * (22.55 + 43.22))}   # LP:17-18, LP:37-38
B_step = {32: 23.59 + 45.12, 128: 93.9 + 180.6}          # K32:1-2; BRIEF (kprof 128, step 1415)
rec_flop = {r: 3 * 4 * r * 20 * (2 * 128 * 4096 + 2 * 1024 * 128) / 1e9 for r in (32, 128)}
for r in (32, 128):
    p(f'B {r} rows: kernel alone {B[r][0]:.1f}-{B[r][1]:.1f} ms ({rec_flop[r]:.2f} GFLOP), in step {B_step[r]:.1f}')
    allf = paddle_flop(r, {32: 571.5, 128: 1750.5}[r], {32: 552.0, 128: 1712.4}[r]) + rec_flop[r]
    lo, hi = A_rec[r] + B[r][0], A_rec[r] + B[r][1]
    p(f'  Paddle products + kernel alone: {allf:.1f} GFLOP in {lo:.1f}-{hi:.1f} ms = '
      f'{allf / hi * 1000 / R4096:.1%}-{allf / lo * 1000 / R4096:.1%} of 224')
p('in-step Paddle matmul ops (profiler, incl. dispatch): 32 rows', 190 + 94, 'ms (P32:25-26); 128 rows', 626 + 292,
  'ms (P128:25-26); 128 as a rate:', round(paddle_flop(128, 1724, 1712.4) / (626 + 292) * 1000, 1), 'GFLOP/s =',
  f'{paddle_flop(128, 1724, 1712.4) / (626 + 292) * 1000 / ((215.4 + 216.8) / 2):.1%} of the worker\'s 216.1 (P128:7)')

# ---- K: the other custom kernels: measured (K32, BRIEF) and a floor (bytes at the triad; exp guessed) ----
TRIAD = 32.1  # GB/s, B1:8
def kernel_floor(rows, distinct, cnn_fwd_gflop, triad=TRIAD):
    n, C, F = rows * 20, 8192, 2048
    logits = 2 * n * C * 4 / 1e6                 # MB, both directions
    exp_ms = 2 * n * C / (2 * 3.5e9) * 1000     # GUESS: ~1 cycle an element on each of 2 cores
    windows = cnn_fwd_gflop * 1e9 / (2 * 16 * (1*32 + 2*32 + 3*64 + 4*128 + 5*256 + 6*512 + 7*1024))
    outputs = windows * F * 4 / 1e6             # MB: the char CNN products' outputs
    pooled = distinct * F * 4 / 1e6
    parts = {
        'softmax loss fwd': max(logits / triad, exp_ms),
        'softmax loss bwd (column sums fused)': max(2 * logits / triad, exp_ms),
        'max over positions fwd': (outputs + 2 * pooled) / triad,
        'max over positions bwd': (2 * outputs + 3 * pooled) / triad,
        'highway gate fwd + bwd': (4 + 9) * pooled / triad,
        'dropout (12 calls)': 0.5 if rows == 32 else 1.5,  # GUESS (hash per element; bytes negligible)
    }
    return parts, windows, outputs
K_meas = {32: {'softmax loss': 3.62 + 7.16, 'max over positions': 3.92 + 5.12, 'highway gate': 0.77 + 1.51,
               'dropout': 1.26},  # K32:3,5,6,7,9,10,11
          128: {'softmax loss': 14.2 + 34.7, 'max over positions': 13.1 + 17.4, 'highway gate': 2.5 + 5.9,
                'dropout': 2.6}}  # BRIEF
K = {}
for rows, distinct, cnn in ((32, 552, 1.6766), (128, 1712.4, 5.5602)):  # FC:5, FC:8 (char CNN forward GFLOP)
    parts, w, out = kernel_floor(rows, distinct, cnn)
    K[rows] = sum(parts.values())
    p(f'K {rows} rows: measured {sum(K_meas[rows].values()):.1f} ms {K_meas[rows]}; floor {K[rows]:.1f} ms '
      + ', '.join(f'{k} {v:.1f}' for k, v in parts.items()) + f' (windows {w:.0f}, CNN outputs {out:.1f} MB)')

# ---- O: optimizer bytes at the triad; E: Paddle's own arithmetic ops at their bytes (small) ------
O = {32: 370 / TRIAD, 128: 372 / TRIAD}   # P32:8, P128:8 bytes; B1:8 triad
E = {32: 1.0, 128: 3.0}                   # GUESS: scatter-adds, residual adds, true logits: ~15-60 MB
p(f'O: {O[32]:.1f} / {O[128]:.1f} ms (measured 15.3 / 13.7 at triads 22.6 / 27.2: P32:8, P128:8); E: {E}')

# ---- F and the ceilings --------------------------------------------------------------------------
p('\n== floor F = A + B + K + O + E, and what it leaves')
F = {}
for rows in (32, 128):
    F[rows] = tuple(A[rows] + b + K[rows] + O[rows] + E[rows] for b in B[rows])
    fixed = K[rows] + O[rows] + E[rows]
    p(f'{rows} rows: F = {A[rows]:.1f} + {B[rows][0]:.1f}..{B[rows][1]:.1f} + {K[rows]:.1f} + {O[rows]:.1f} + '
      f'{E[rows]:.1f} = {F[rows][0]:.1f}-{F[rows][1]:.1f} ms')
    for frame, rate in (('224 (MC)', R4096), ('211.8 (bench_1)', 211.8), ('219.3 (17:02)', 219.3)):
        req = 1000 * REQ[rows] / rate
        p(f'   ceiling against {frame}: {req / F[rows][1]:.1%}-{req / F[rows][0]:.1%}')
    # products scaled with the [4096]^2 reading (the pessimistic reading)
    for name in ('18:26 bench_1', '17:02 path7 (best)'):
        step, floor, need = gap[(name, rows)]
        rate = windows[name][0]
        for label, Fx in (('F as measured', F[rows]),
                          ('F, products scaled 224/rate', tuple((A[rows] + b) * R4096 / rate + fixed for b in B[rows]))):
            R = (step - Fx[1], step - Fx[0])
            frac = (need / R[1], need / R[0]) if R[0] > 0 else None
            p(f'   {name}, {label}: F {Fx[0]:.1f}-{Fx[1]:.1f}, ceiling {floor / Fx[1]:.1%}-{floor / Fx[0]:.1%}, '
              f'removable {R[0]:.1f}-{R[1]:.1f} ms ({R[0]/step:.1%}-{R[1]/step:.1%}), need {need:.1f} = '
              + (f'{frac[0]:.0%}-{frac[1]:.0%} of it' if frac and R[0] > 0 else 'n/a'))

# ---- the removable, bottom-up: main-thread shares (spyn*_summary.txt, yields*.txt, cls_spyn) ------
p('\n== removable, bottom-up (main thread, share of train_step wall time)')
shares = {
    32: dict(mkl=57.7, libc=18.5, kernels=7.3, libphi=5.1, iomp=3.4, libpaddle=3.3, python=1.8, numpy=1.7,
             other_native=0.4 + 0.3 + 0.2 + 0.1 + 0.1, yields=13.0, yields_in_mkl=9.2, yields_out=3.8,
             iomp_in=2.0, iomp_out=1.3, libc_copy=1.6 + 1.3, libc_alloc=0.5 + 0.5 + 0.2 + 0.1, libc_numpy=0.3,
             phi_kernels=0.84 + 0.34 + 0.32 + 0.21 + 0.13 + 0.16 + 0.11 + 0.08),
    128: dict(mkl=67.7, libc=13.9, kernels=8.6, libphi=3.5, iomp=2.5, libpaddle=1.6, python=1.0, numpy=0.4,
              other_native=0.2 + 0.2 + 0.1 + 0.1 + 0.1, yields=9.2, yields_in_mkl=6.6, yields_out=2.7,
              iomp_in=1.1, iomp_out=1.4, libc_copy=1.7 + 0.6, libc_alloc=0.5 + 0.4 + 0.3, libc_numpy=0.2,
              phi_kernels=0.43 + 0.35 + 0.20 + 0.13 + 0.13 + 0.10 + 0.08 + 0.07 + 0.05 + 0.05),
}
for rows, s in shares.items():
    in_mkl = s['mkl'] + s['yields_in_mkl'] + s['iomp_in']
    dispatch = s['python'] + s['libpaddle'] + s['other_native'] + (s['libphi'] - s['phi_kernels'])
    cats = {'dispatch (Python, libpaddle, phi framework, libstdc++/ld)': dispatch,
            'NumPy index plans': s['numpy'] + s['libc_numpy'],
            'copies (memcpy under memory::Copy and phi)': s['libc_copy'],
            'allocation (malloc/new/CPUAllocator)': s['libc_alloc'],
            'barrier waits outside MKL (yield + iomp)': s['yields_out'] + s['iomp_out']}
    tot = sum(cats.values())
    p(f'{rows} rows: inside MKL (compute + its own waits) {in_mkl:.1f}%, kernels.cc {s["kernels"]:.1f}%, '
      f'phi kernels {s["phi_kernels"]:.1f}%, libc other {s["libc"] - s["yields"] - s["libc_copy"] - s["libc_alloc"] - s["libc_numpy"]:.1f}%')
    for k, v in cats.items():
        p(f'   {k:58s} {v:4.1f}%')
    p(f'   {"total":58s} {tot:4.1f}%  (+ kernels above floor: {sum(K_meas[rows].values()) - K[rows]:.1f} ms)')
    P_alone = A[rows] + B[rows][0] * {32: 0.75, 128: 0.8}[rows]  # GUESS: the kernel's products ~75-80% of it
    p(f'   implied spy-run step if MKL regions = products alone: {P_alone / in_mkl * 100:.0f} ms')
