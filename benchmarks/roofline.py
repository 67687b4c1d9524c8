"""Roofline floors of the parts of a pretraining step and of an embedding batch: each part's time if
its matrix products ran at the rate they reach at their own shapes, run as the code runs them, and
its memory traffic at the machine's stream bandwidth, whichever takes longer:

    roofline ms = max(sum over its products of FLOPs / rate at the product's shape, bytes / bandwidth)

profile_pretrain.py and profile_embed.py print it beside each part's required floor (the same FLOPs
at the [4096]^2 rate: flop_counts.required_flops; the products listed here add up to exactly its count).
The rate at a shape is the product timed alone on random operands in the same process, just before
and just after the timed run, the faster of the two kept (`fastest`: a floor timed once moved with a
shared VM's drift and let parts beat it); its rows are rounded up to ROW_GRID, so the rate is if
anything too high and the floor too low. It is paddle.matmul's (matmul_rates.time_product), except
for the kernels' own products where they link MKL (kernel_build.mkl_library): the LSTM kernel packs
each weight once per call for MKL's packed products (cblas_sgemm_pack, for the call's first step's
rows: here the batch's, though a batch the code cuts into several calls packs for each call's first
rows) and runs every step's product by cblas_sgemm_compute, faster than paddle.matmul at a step's
few rows; the char CNN and the softmax's forward kernels pack their weights the same way; so they
are timed that way (matmul_rates.time_packed_product; RECURRENCE_TIMED says which, and the profiles
print it). The bandwidth is STREAM's triad (stream.py), timed with the products, the better kept.

Products, as the code runs them (2 m n k FLOPs each; forward, and in training dX = dY W^T and
dW = X^T dY):
  char CNN      per filter width w (n filters): [windows of width w, w C] x [w C, n], the windows
                counted as flop_counts.required_flops counts them (per distinct token, those that touch
                a char), MKL's packed product where the kernels link MKL (the kernel packs each
                width's weight once a call); training: dX (the char embeddings learn) and dW
  highway       per layer, carry and transform: [distinct, F] x [F, F] each
  projection    [distinct, F (+ word_dim)] x [.., P]
  LSTM input    per layer and direction: [positions, I] x [I, 4D] (x W_input, all steps at once;
                the layer's input I = P); in embedding with the kernels, [block rows, I] x [I, 4D] a
                block of steps (LstmStack.GATE_BLOCK_MB), packed once a call for the largest block,
                in the recurrence's part. Its gradients are the recurrence's (below)
  recurrence    per layer, direction and step t with r_t rows running: [r_t, P] x [P, 4D] (h x
                W_hidden) and [r_t, D] x [D, P] (m x W_proj); backward, as the training kernel
                joins W's two blocks (W = W_input over W_hidden, [I + P, 4D]), per step
                [r_t, 4D] x W^T (dg W^T = [dx | dh_prev]) and [r_t, P] x W_proj^T (these four
                per-step products MKL's packed ones where the kernels link MKL), and the weight
                gradients once over all steps ([positions, I + P]^T x [positions, 4D]: [x | h_prev]^T
                dg, the whole grad_W; [positions, D]^T x [positions, P]), plain products
  softmax       per direction: [positions, P] x [negatives + 1, P]^T (MKL's packed product where the
                kernels link MKL, as the forward kernel runs it); dX = dY [positions, classes] x
                [classes, P] and dW = dY^T x [positions, P] (the rows read), as the backward runs them

Bytes (float32, 4 bytes a value; char ids int64, 8 bytes), per call of each step of the algorithm
as the code structures it (products are separate calls, so a product's result goes to memory and
the next step reads it back). The rule: every call reads its inputs and writes its outputs once,
and nothing stays in cache from one call to the next, with one exception: a weight matrix that the
recurrence reuses at each step counts once per layer, direction and batch (one kernel call; a batch
the code cuts into several calls reads it again, not counted) instead of once per step when the
matrices a step reads (forward W_hidden and W_proj, backward the whole W and W_proj) fit in the
last-level cache together (the small configuration's 2.6 MB, 4.7 MB backward, do; the original's
33.5 + 8.4 MB, 67.1 + 8.4 backward, do not: those stream in at every step, ~42 MB and ~76 MB per
layer, direction and step). Not counted: what an implementation could avoid (repacking a weight that did not change,
copies between layouts such as the kernel's packing of its weights for MKL, Paddle's split and
concat), and index arrays other than the char ids.
  a product          X, Y (the weight: once per step, or once per call, as above) and the result
  char CNN           one call: the windows are built and multiplied a block of tokens at a time in
                     cache (not counted); its output written ([distinct, F]: the bias and relu
                     applied to each max in cache), and in training every window's product (kept
                     for the backward, which finds the maxima and ties there again); backward the
                     max's gradient read, the products' gradients written, the windows' gradient
                     read once more to reach the char embeddings
  de-duplication     the char ids of every position read (8 M bytes each); the token vectors
                     gathered back to the positions ([positions, P] read and written); backward
                     the gradient summed back per distinct token (the same two)
  highway gate       per layer: carry, transform and x read, y written (4 [distinct, F]);
                     backward dy, carry, transform, x read, their three gradients written (7)
  LSTM cell          per position and layer-direction: forward gates_x, h x W_hidden and c_prev
                     read (4D + 4D + D), c and m written (2D), plus in training the activations
                     kept for the backward (4D); h clipped in place (2P); backward the activations,
                     c, c_prev, dm and the carried dc read (8D: no loss reads the cells, so their
                     own gradient is never filled nor read), dgates and the carried dc
                     written (5D), the bias gradient's column sums (4D), dh summed and clipped
                     (3P read, P written), [x | h_prev] assembled for the weight gradient
                     (2 (I + P)); the kernel's copy of dx out of each step's [dx | dh_prev] is not
                     counted (a layout copy)
  packing            per direction: x gathered into the packed layout (2P a position); per layer
                     and direction: the output unpacked to [batch, time, P] (2P), the residual add
                     from layer 1 on (3P), in training dropout on the layer's input (2P); training:
                     each of these again backward
  softmax            the loss reads the logits and writes their gradient (2 [positions, classes]
                     a direction); the kernel reads the step's rows of W and b in place (its
                     packing of them is the product's); backward the rows' gradients accumulated
                     into the step's gradient rows (read and written: 2 R (P + 1))
  optimizer          the global norm reads every gradient once; then per value: Adagrad reads the
                     parameter, its gradient and accumulator and writes the parameter and the
                     accumulator (5 values); Adam reads parameter, gradient, m and v and writes
                     parameter, m and v (7). Dense parameters whole, the tables in the R rows the
                     step read. clear_grad's zeroing is not counted (a backward that wrote its
                     gradients instead of adding to them would need none)
"""
import collections
from typing import NamedTuple, Optional, Tuple

import numpy as np

import flop_counts
import matmul_rates

FLOAT, INT = 4, 8  # bytes of a float32 and of a char id (int64)

# Rows of the products as timed: the product's first dimension rounded up to the next of these
# (products of few rows run far below the [4096]^2 rate, so the rate depends on the row count).
ROW_GRID = sorted({int(round(b * 2 ** e)) for e in range(15) for b in (1, 1.5)} - {0})


class Product(NamedTuple):
    """`calls` products op(X) x op(Y) as paddle.matmul(X, Y, tx, ty) runs them.

    y_reads: how many times Y comes from memory over the calls; None: at every call. (The
    recurrence's weight, when its layer's matrices fit in the last-level cache, comes once per
    kernel call whatever the number of steps.)
    packed: a recurrence's per-step product, Y packed once per kernel call for products of up to
    this many rows (its first step's: MKL's packed layout depends on them), when the kernels link
    MKL; 0: a plain product."""
    x: Tuple[int, ...]
    y: Tuple[int, ...]
    tx: bool = False
    ty: bool = False
    calls: float = 1.0
    y_reads: Optional[float] = None
    packed: int = 0

    def flops(self):
        return self.calls * matmul_rates.product_flops(self.x, self.y, self.tx, self.ty)

    def bytes(self):
        m = self.x[1] if self.tx else self.x[0]
        n = self.y[0] if self.ty else self.y[1]
        y_reads = self.calls if self.y_reads is None else self.y_reads
        return FLOAT * (self.calls * (np.prod(self.x) + m * n) + y_reads * np.prod(self.y))

    def timed_shape(self):
        """(x, y, tx, ty, packed) with the rows of x and the packed rows rounded up to ROW_GRID
        (both alike, so a step's rows stay within its pack's): the shape timed (a weight gradient
        X^T dY, whose first dimension is the sum's, as it is)."""
        if self.tx:
            return self.x, self.y, self.tx, self.ty, self.packed
        return (_on_grid(self.x[0]), *self.x[1:]), self.y, self.tx, self.ty, self.packed and _on_grid(self.packed)


def _on_grid(rows):
    """rows rounded up to the next of ROW_GRID (beyond it, as they are)."""
    return next((r for r in ROW_GRID if r >= rows), rows)


class Part:
    """A profile row's products and the other bytes it moves (both summed over the run)."""

    def __init__(self):
        self.products, self.bytes = [], 0.0

    def add(self, x, y, tx=False, ty=False, calls=1, y_reads=None, packed=0):
        self.products.append(Product(tuple(map(int, x)), tuple(map(int, y)), tx, ty, calls, y_reads, int(packed)))

    def add_trained(self, m, k, n, calls=1, dx=True, forward=None, packed=0):
        """[m, k] x [k, n] and its backward: the forward product into `forward` (a Part; `packed` as
        Product's), dX (when `dx`) and dW into this one."""
        forward.add((m, k), (k, n), calls=calls, packed=packed)
        if dx:
            self.add((m, n), (k, n), ty=True, calls=calls)
        self.add((m, k), (m, n), tx=True, calls=calls)

    def flops(self):
        return sum(p.flops() for p in self.products)

    def total_bytes(self):
        return self.bytes + sum(p.bytes() for p in self.products)

    def scaled(self, factor):
        """The part per step (or batch): every count times `factor`."""
        out = Part()
        out.products = [p._replace(calls=p.calls * factor, y_reads=None if p.y_reads is None else p.y_reads * factor)
                        for p in self.products]
        out.bytes = self.bytes * factor
        return out


def step_rows(char_ids):
    """char ids [rows, time, max_chars] (rows padded at the end, 0 = padding) -> batch_sizes [steps]:
    the rows still running at each step, as LstmStack runs them."""
    lengths = (np.asarray(char_ids) > 0).any(axis=-1).sum(axis=-1)
    steps = int(lengths.max()) if len(lengths) else 0
    return (lengths[None, :] > np.arange(steps)[:, None]).sum(axis=1)


def _token_layer(config, need, cnn, rest, backward=None):
    """One batch's char CNN (its products and max into `cnn`) and de-duplication, highway and
    projection (into `rest`); with `backward` (a Part), their gradients there. need: the batch's
    flop_counts.required_flops (its windows, distinct tokens and positions)."""
    F, P, C = config.n_filters, config.projection_dim, config.char_embed_dim
    U, windows, positions = need['distinct'], need['char_windows_by_width'], need['positions']
    proj_in = F + config.word_dim * (config.token_input == 'word+char')
    # The char CNN kernel's products: each width's weight packed by MKL once a call (its blocks of
    # windows at most reach the packed product's rate over all of them).
    products = [(cnn, windows[w], w * C, n, windows[w]) for w, n in config.cnn_filters]
    products += [(rest, U, F, F, 0)] * (2 * config.num_highways) + [(rest, U, proj_in, P, 0)]
    for part, m, k, n, packed in products:
        if backward is None:
            part.add((m, k), (k, n), packed=packed)
        else:
            backward.add_trained(m, k, n, forward=part, packed=packed)
    outputs = sum(windows[w] * n for w, n in config.cnn_filters)  # the char CNN's products' results
    cnn.bytes += FLOAT * (U * F + (outputs if backward is not None else 0))
    rest.bytes += INT * positions * config.max_characters_per_token + FLOAT * (
        2 * positions * P + config.num_highways * 4 * U * F)
    if backward is not None:
        backward.bytes += FLOAT * (2 * positions * P + config.num_highways * 7 * U * F + U * F + outputs
                                   + sum(windows[w] * w * C for w, _ in config.cnn_filters))


def _lstm_direction(config, sizes, llc, recurrence, inputs, backward=None, input_blocks=None):
    """One direction's LSTM layers over steps of `sizes` rows: the recurrence's products and cell
    into `recurrence`, the input products and packing into `inputs`; with `backward`, their
    gradients there, as the training kernel takes them (kernels.layer_recurrence: W's two blocks
    together). input_blocks: in inference, the rows of each block of steps whose input products
    the kernel makes itself (kernels.streamed_recurrence): then those go to `recurrence`, one
    packed product a block; None: one product over all the steps, in `inputs`."""
    P, D, L = config.projection_dim, config.cell_dim, config.num_layers
    I = P  # every layer's input: the token layer's projection, then the layer below's h
    N = int(np.sum(sizes))
    steps = collections.Counter(int(r) for r in sizes)  # {rows: steps with that many}
    # The weights' reads per group of steps with the same rows: each step's, or when the matrices a
    # step reads fit in the cache together, one for the whole call (given to the first group):
    # forward W_hidden and W_proj, backward the whole W [I + P, 4D] and W_proj.
    def reads(weights):
        resident = FLOAT * weights <= (llc or 0)
        return {r: (1 if i == 0 else 0) if resident else None for i, r in enumerate(steps)}
    forward_reads, backward_reads = reads(P * 4 * D + D * P), reads((I + P) * 4 * D + D * P)
    pack = int(np.max(sizes, initial=0))  # the kernel packs its weights for its first step's rows, the most
    training = backward is not None
    inputs.bytes += FLOAT * 2 * N * P  # packing
    for layer in range(L):
        for r, k in steps.items():
            recurrence.add((r, P), (P, 4 * D), calls=k, y_reads=forward_reads[r], packed=pack)
            recurrence.add((r, D), (D, P), calls=k, y_reads=forward_reads[r], packed=pack)
        recurrence.bytes += FLOAT * N * ((4 + 4 + 1 + 2) * D + (4 * D if training else 0) + 2 * P)
        inputs.bytes += FLOAT * N * (2 * P + (3 * P if layer > 0 else 0) + (2 * P if training else 0))
        if not training:
            if input_blocks is None:
                inputs.add((N, I), (I, 4 * D))
            for r, k in collections.Counter(input_blocks or ()).items():  # W_input packed for the largest block
                recurrence.add((r, I), (I, 4 * D), calls=k, packed=max(input_blocks))
            continue
        # Training: the kernel makes x W_input (on W's rows) over all the steps; its backward takes
        # each step's dg W^T = [dx | dh_prev] through the whole W, and grad_W = [x | h_prev]^T dg once.
        inputs.add((N, I), (I, 4 * D))
        for r, k in steps.items():
            backward.add((r, 4 * D), (I + P, 4 * D), ty=True, calls=k, y_reads=backward_reads[r], packed=pack)
            backward.add((r, P), (D, P), ty=True, calls=k, y_reads=backward_reads[r], packed=pack)
        backward.add((N, I + P), (N, 4 * D), tx=True)
        backward.add((N, D), (N, P), tx=True)
        backward.bytes += FLOAT * N * ((8 + 5 + 4) * D + 4 * P + 2 * (I + P)  # cell, dh, [x | h_prev] assembled
                                       + 2 * P + 2 * P + (3 * P if layer > 0 else 0))  # unpack, dropout, residual
    if training:
        backward.bytes += FLOAT * 2 * N * P  # packing


def _softmax(n, P, classes, forward, backward):
    """One direction's sampled softmax on n positions, its products in the code's layouts: the forward
    kernel's logits h [n, P] x W_cand^T ([classes, P], MKL's packed product where the kernels link
    MKL, packed for all the rows: the kernel's 16-row blocks on each thread reach that rate at most),
    and backward grad_h = grad_logits [n, classes] x W_cand and grad_W_cand = grad_logits^T x h."""
    forward.add((n, P), (classes, P), ty=True, packed=n)
    backward.add((n, classes), (classes, P))
    backward.add((n, classes), (n, P), tx=True)
    forward.bytes += FLOAT * 2 * n * classes


def training_parts(config, steps, negatives, table_rows, dense_params, rule, llc):
    """The parts of profile_pretrain's step, averaged over `steps` -> {profile row: Part}.

    steps: the timed steps' LMStream batches; negatives: the sampled softmax's; table_rows: the
    rows of the softmax's W and b the steps read, summed over the steps; dense_params: values of
    the parameters the optimizer updates whole; rule: 'adagrad' or 'adam'; llc: the last-level
    cache's bytes (stream.last_level_cache_bytes), None if unknown.
    """
    names = ('token layer, forward', 'token layer, backward', 'LSTMs, forward', 'LSTMs, backward',
             'softmax, forward', 'softmax, backward', 'optimizer')
    parts = {name: Part() for name in names}
    P, classes = config.projection_dim, negatives + 1
    for batch in steps:
        ids = flop_counts.lm_step_char_ids(batch)
        need = flop_counts.required_flops(config, [ids], training=True, n_negative_samples=negatives)
        _token_layer(config, need, parts['token layer, forward'], parts['token layer, forward'],
                     parts['token layer, backward'])
        for direction in (batch['char_ids'], batch['char_ids_reverse']):
            sizes = step_rows(direction)
            N = int(np.sum(sizes))
            _lstm_direction(config, sizes, llc, parts['LSTMs, forward'], parts['LSTMs, forward'],
                            parts['LSTMs, backward'])
            _softmax(N, P, classes, parts['softmax, forward'], parts['softmax, backward'])
    R = table_rows
    parts['softmax, backward'].bytes += FLOAT * 2 * R * (P + 1)
    per_value = {'adagrad': 1 + 5, 'adam': 1 + 7}[rule]
    parts['optimizer'].bytes += FLOAT * per_value * (dense_params * len(steps) + R * (P + 1))
    return {name: part.scaled(1 / len(steps)) for name, part in parts.items()}


def embedding_parts(config, batches, llc, streamed=True):
    """The parts of profile_embed's batch, averaged over `batches` (bench_embed.embedder_batches:
    char ids [rows, time, max_chars], <S> and </S> included) -> {profile row: Part}. streamed: the
    CPU kernels run the LSTMs, making the input products a block of steps at a time
    (LstmStack.GATE_BLOCK_MB); else one product a layer over all the steps, before the recurrence."""
    from paddle_elmo.model.lstm import LstmStack
    from paddle_elmo.model.packing import step_groups
    parts = {name: Part() for name in EMBEDDING_PARTS}
    kernel, rest = parts[EMBEDDING_PARTS[2]], parts[EMBEDDING_PARTS[3]]
    block_rows = (LstmStack.GATE_BLOCK_MB << 20) // (16 * config.cell_dim)
    for ids in batches:
        _token_layer(config, flop_counts.required_flops(config, [ids]), parts[EMBEDDING_PARTS[0]],
                     parts[EMBEDDING_PARTS[1]])
        sizes = step_rows(ids)
        blocks = [int(np.sum(sizes[a:b])) for a, b in step_groups(sizes, block_rows)] if streamed else None
        for _ in range(2):  # both directions run every position
            _lstm_direction(config, sizes, llc, kernel, rest, input_blocks=blocks)
    return {name: part.scaled(1 / len(batches)) for name, part in parts.items()}


# The input products are the recurrence's part when the kernel makes them (streamed), else the last's.
EMBEDDING_PARTS = ('token layer: char CNN', 'token layer: highway, projection, de-duplication',
                   'LSTMs: recurrence (kernel)', 'LSTMs: input products, packing, states')


# How the kernels' packed products (the recurrence's per-step ones, the char CNN's, the softmax's
# logits) are timed: as the kernels run them, with MKL or without.
RECURRENCE_TIMED = {True: "MKL's packed products (cblas_sgemm_compute on weights packed once a call), as the "
                          "LSTM, char CNN and softmax kernels run them",
                    False: 'paddle.matmul, as the recurrence runs them without MKL (kernels off or built without it)'}


def packed_library():
    """The MKL the recurrence's products run on in this process (kernel_build.mkl_library) when the
    CPU kernels are in use; None when they are off or built without it (each step's products are
    then paddle.matmul's, in the kernel or in the Python loop)."""
    from paddle_elmo.model import kernel_build, kernels
    return kernel_build.mkl_library() if kernels.kernel() is not None else None


def time_shapes(parts, seconds, library):
    """Each distinct timed shape of the parts' products alone -> {timed shape: seconds per call}: the
    recurrence's (packed) by MKL's packed products on `library` (packed_library) as the kernel runs
    them, every other one and all of them without `library` by paddle.matmul."""
    shapes = {p.timed_shape() for part in parts.values() for p in part.products}
    return {shape: _time_shape(*shape, seconds, library) for shape in sorted(shapes)}


def _time_shape(x, y, tx, ty, packed, seconds, library):
    if packed and library:
        return matmul_rates.time_packed_product(x, y, ty, packed, seconds, library)
    return matmul_rates.time_product(x, y, tx, ty, seconds)


def summary(part, shape_seconds, gbs):
    """A part's floors: {'GFLOP', 'MB', 'at shape ms' (its products at their shapes' rates),
    'memory ms' (its bytes at `gbs` GB/s), 'roofline ms' (the larger)}."""
    compute = 1000 * sum(p.flops() / matmul_rates.product_flops(*p.timed_shape()[:4]) * shape_seconds[p.timed_shape()]
                         for p in part.products)
    memory = 1000 * part.total_bytes() / (gbs * 1e9)
    return {'GFLOP': part.flops() / 1e9, 'MB': part.total_bytes() / 1e6, 'at shape ms': compute,
            'memory ms': memory, 'roofline ms': max(compute, memory)}


def summed(summaries):
    """The summaries of parts that run one after another (a step's or a batch's): each figure summed,
    the roofline too (the sum of the parts' floors, not the floor of their sums)."""
    summaries = list(summaries)
    return {key: sum(s[key] for s in summaries) for key in summaries[0]}


def columns(summary_, ms):
    """A profile row's roofline columns from its summary (None: a row without a floor) and its
    measured ms: the figures rounded, and 'of roofline' = roofline ms / ms."""
    if summary_ is None:
        return dict.fromkeys(('GFLOP', 'MB', 'at shape ms', 'memory ms', 'roofline ms', 'of roofline'), '')
    out = {k: round(v, 2 if k == 'GFLOP' else 1) for k, v in summary_.items()}
    out['of roofline'] = f"{summary_['roofline ms'] / ms:.0%}" if ms > 0 else ''
    return out


def described(result):
    """What a profile worker's `result` measured for its roofline (its 'stream', 'recurrence timed'
    and 'roofline timings'), as the end of its run's line: '' when it measured none."""
    import stream
    if not result['stream']:
        return ''
    before, after = result['roofline timings']
    return (f"; {stream.describe(result['stream'])} (the better of its timings before and after the run); the "
            f"kernels' packed products timed by {result['recurrence timed']}; the roofline timed {before:.1f} ms "
            f"before the run, {after:.1f} after (each shape at its faster kept)")


class Timing(NamedTuple):
    """One timing of what the floors are counted at: the stream bandwidth and each product shape's
    seconds per call."""
    stream: dict                  # stream.measure_stream_gbs' result
    seconds: dict                 # {timed shape: seconds per call}


def time_floor(parts, threads, shape_seconds):
    """Time the parts' floors' rates once, in this process: the stream bandwidth (stream.py, the
    triad) and each product shape (alone for `shape_seconds`, the recurrence's as the kernel runs
    them) -> Timing. A profile times them just before and just after its timed run (fastest)."""
    import stream
    bandwidth = stream.measure_stream_gbs(threads)
    return Timing(bandwidth, time_shapes(parts, shape_seconds, packed_library()))


def fastest(timings):
    """Timings taken around a run -> one Timing: each shape at its fastest, the best bandwidth of each
    kind. Why: a shared VM's rate drifts within minutes, and a floor timed in one slow patch let
    parts run faster than their floor; the fastest of the timings around the run is the closer
    to what the machine could do during it (the rule of the matmul readings, shares.reference_rate)."""
    seconds = {shape: min(t.seconds[shape] for t in timings) for shape in timings[0].seconds}
    kinds = ('copy', 'triad')
    bandwidth = {**timings[0].stream, **{k: max(t.stream[k] for t in timings) for k in kinds}}
    return Timing(bandwidth, seconds)


def floor_ms(parts, timing):
    """The sum of the parts' roofline ms at one timing (a profile prints each timing's beside the run)."""
    return sum(summary(part, timing.seconds, timing.stream['triad'])['roofline ms'] for part in parts.values())


def measure(parts, timings):
    """A profile worker's roofline from the timings taken around its run (time_floor's, before and
    after it) -> (the stream bandwidth counted, {row: summary} at the fastest timing, RECURRENCE_TIMED's
    line for how the recurrence's products were timed, [each timing's floor_ms])."""
    best = fastest(timings)
    summaries = {name: summary(part, best.seconds, best.stream['triad']) for name, part in parts.items()}
    return (best.stream, summaries, RECURRENCE_TIMED[packed_library() is not None],
            [floor_ms(parts, t) for t in timings])
