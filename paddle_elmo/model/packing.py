"""Index plans that let the biLM skip the work its padding would cost, computed in NumPy; the
results are the reference's (bilm.py runs them, tests/test_speed_paths.py checks them).

- LSTM rows run packed and time-major, longest first (as PyTorch's PackedSequence): step t holds
  only the rows still running, so padding is never computed (`row_order`, `packing_indices`,
  `step_groups`, `last_states`).
- The char CNN runs once per distinct token of a batch (`distinct_tokens`), in chunks of similar
  lengths (`length_chunks`), so a chunk of short words skips most all-PAD windows.
"""
import functools
import math

import numpy as np

import paddle

from paddle_elmo.model.layer_math import reversed_steps


def row_order(lengths, time):
    """Rows sorted longest first (the active batch then shrinks step by step), and the gathers that
    read each direction's input from [batch * time] rows in that order.

    lengths: int numpy [batch]. Returns (order [batch], batch_sizes [time]: rows running at each
    step, forward_index [batch, time], backward_index [batch, time]: the backward stack reads each
    row reversed within its own length; padding positions stay where they are).
    """
    order = np.argsort(-lengths, kind='stable')
    sorted_lengths = lengths[order]
    batch_sizes = (sorted_lengths[None, :] > np.arange(time)[:, None]).sum(axis=1)
    steps = np.arange(time)[None, :]
    reverse_steps = reversed_steps(steps, sorted_lengths[:, None], np.where)  # as the export's, in NumPy
    return order, batch_sizes, order[:, None] * time + steps, order[:, None] * time + reverse_steps


def packing_indices(batch_sizes, batch, time):
    """Time-major packing of [batch, time] rows sorted longest first.

    Returns (pack [tokens]: flat batch-major position of each packed token, step by step;
    unpack [batch * time]: 1 + packed position, or 0 at padding).
    """
    running = np.arange(batch)[None, :] < np.asarray(batch_sizes)[:, None]  # [steps, batch]
    steps, rows = np.nonzero(running)
    pack = (rows * time + steps).astype(np.int64)
    unpack = np.zeros(batch * time, dtype=np.int64)
    unpack[pack] = np.arange(1, len(pack) + 1)
    return pack, unpack


@functools.lru_cache(maxsize=4)
def packing_tensors(batch_sizes, batch, time, place):
    """packing_indices as int64 tensors on `place`, made once for a run of equal windows (training
    packs the same shape every step: the indices and their conversion cost as much as the gather).

    batch_sizes: a tuple. Returns (pack [tokens]; unpack [batch * time]: the packed position of each
    row when no position is padding, else packing_indices' 1 + packed position, 0 at padding), the
    index unpack_rows takes.
    """
    pack, unpack = packing_indices(batch_sizes, batch, time)
    if len(pack) == batch * time:
        unpack -= 1
    return paddle.to_tensor(pack, place=place), paddle.to_tensor(unpack, place=place)


def unpack_rows(packed, unpack):
    """Packed rows [tokens, d] -> batch-major rows [batch * time, d], zeros at padding; unpack:
    packing_tensors'. With no padding a single gather, else the gather reads the rows after a zero row."""
    if packed.shape[0] == unpack.shape[0]:
        return paddle.gather(packed, unpack)
    zero_row = paddle.zeros([1, packed.shape[1]], dtype=packed.dtype)
    return paddle.gather(paddle.concat([zero_row, packed]), unpack)


def step_groups(batch_sizes, max_rows):
    """Consecutive steps in groups of at most max_rows packed rows (at least one step each)
    -> list of (first step, end step)."""
    groups, first, rows = [], 0, 0
    for t, n in enumerate(np.asarray(batch_sizes).tolist()):
        if rows and rows + n > max_rows:
            groups.append((first, t))
            first, rows = t, 0
        rows += n
    groups.append((first, len(batch_sizes)))
    return groups


def last_states(h_all, c_all, h0, c0, batch_sizes):
    """Each row's state after its last step -> (h [B, P], c [B, D]); rows that did not run keep h0, c0.

    h_all [tokens, P], c_all [tokens, D]: packed outputs of steps with batch_sizes[t] rows.
    The rows that ran are the first batch_sizes[0] (longest first): their states are gathered from
    the outputs alone, not from the outputs joined to h0 and c0, which would copy the group's whole
    [tokens, D] cells once more.
    """
    if len(batch_sizes) == 0 or int(batch_sizes[0]) == 0:
        return h0, c0
    index = last_rows(tuple(np.asarray(batch_sizes, dtype=np.int64).tolist()), h_all.place)
    return tuple(with_initial_rows(paddle.gather(outputs, index), initial)
                 for outputs, initial in ((h_all, h0), (c_all, c0)))


def with_initial_rows(last, initial):
    """The states of the rows that ran, last [ran, d], then the initial states [B, d] of the rows
    that did not -> [B, d] (last itself when every row ran)."""
    ran, batch = last.shape[0], initial.shape[0]
    # split, not a slice: its backward stays cheap when the states carry a gradient (training's groups)
    return last if ran == batch else paddle.concat([last, paddle.split(initial, [ran, batch - ran])[1]])


@functools.lru_cache(maxsize=16)
def last_rows(batch_sizes, place):
    """The packed position of each running row's last step -> int64 tensor [batch_sizes[0]] on
    `place`, made once per tuple batch_sizes (every layer and step of a training run asks for the same)."""
    sizes = np.asarray(batch_sizes, dtype=np.int64)
    rows = np.arange(sizes[0])
    steps_run = (sizes[None, :] > rows[:, None]).sum(axis=1)  # each >= 1
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    return paddle.to_tensor(offsets[steps_run - 1] + rows, place=place)


def used_chars(ids, pad_id):
    """ids [tokens, max_chars] (0-rows are padding) -> int [tokens]: the position after each token's
    last char that is neither `pad_id` nor 0 (its bytes and the begin and end of word marks: a
    5-byte word uses 7), 0 for a padding token."""
    real = (ids != pad_id) & (ids > 0)
    return np.where(real.any(axis=1), ids.shape[1] - np.argmax(real[:, ::-1], axis=1), 0)


def window_spans(ids, pad_id, max_chars):
    """ids [tokens, max_chars or more] (real tokens) -> int64 [tokens], each token's span: its windows
    (over its first max_chars chars) that start at or after it hold PAD only, so kernels.char_cnn
    computes them once for every token. The span is the token's used chars when every char after
    them is `pad_id`, else max_chars (each of its windows is then computed)."""
    ids = np.asarray(ids)[:, :max_chars]
    used = np.minimum(used_chars(ids, pad_id), max_chars)
    after = np.arange(ids.shape[1])[None, :] >= used[:, None]
    return np.where((ids == pad_id).all(axis=1, where=after), used, max_chars).astype(np.int64)


def distinct_tokens(ids, pad_id):
    """ids [tokens, max_chars] (0-rows are padding) -> (distinct real tokens sorted by used chars,
    stably; their used chars (position of the last char that is not `pad_id`); slot [tokens]: 1 +
    each token's row among them, 0 for padding)."""
    ids = np.ascontiguousarray(ids, dtype=np.int64)
    first, inverse = distinct_rows(ids)
    distinct = ids[first]
    real = np.nonzero((distinct > 0).any(axis=1))[0]
    used = used_chars(distinct[real], pad_id)
    by_length = np.argsort(used, kind='stable')
    order = real[by_length]
    rank = np.zeros(len(distinct), dtype=np.int64)
    rank[order] = np.arange(1, len(order) + 1)
    return distinct[order], used[by_length], rank[inverse.reshape(-1)]


# Odd 64-bit multipliers of a row hash (distinct_rows), one per column, fixed so that plans repeat.
_ROW_KEYS = np.random.default_rng(55).integers(0, 2 ** 63, size=64, dtype=np.uint64) * np.uint64(2) + np.uint64(1)


def distinct_rows(ids):
    """ids int64 [n, cols] (C-contiguous) -> (first [d]: each distinct row's first occurrence, the
    rows in np.unique's order of their bytes; inverse [n]: each row's place among them), as
    np.unique(rows as bytes, return_index=True, return_inverse=True) gives them.

    Why not that call: it sorts every row as a byte string, comparing whole rows. Rows are
    told apart by a 64-bit hash instead, checked against the rows themselves (a collision falls
    back to the byte sort), and only the distinct rows are sorted as bytes, so that the tokens'
    order, and with it every sum over them, is unchanged."""
    keys = np.resize(_ROW_KEYS, ids.shape[1])
    _, first, inverse = np.unique(ids.view(np.uint64) @ keys, return_index=True, return_inverse=True)
    if not np.array_equal(ids[first[inverse]], ids):
        _, first, inverse = np.unique(_rows_as_bytes(ids), return_index=True, return_inverse=True)
        return first, inverse.reshape(-1)
    order = np.argsort(_rows_as_bytes(ids[first]))
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return first[order], rank[inverse.reshape(-1)]


def _rows_as_bytes(rows):
    """int64 rows [n, cols] (C-contiguous) -> [n] byte strings, which sort as np.unique orders rows."""
    return rows.view(np.dtype((np.void, rows.shape[1] * 8))).ravel()


def length_chunks(used, max_size, position_cost=25, chunk_cost=100):
    """Split tokens sorted by used chars (ascending) into char-CNN chunks -> list of (start, end).

    A chunk of n tokens whose longest uses u chars costs about n * (u + 1) window products, plus
    per-op overhead that grows with its window positions and its number of ops (position_cost and
    chunk_cost, in token-windows, fitted on CPU). The split minimises that total (dynamic
    programming over the distinct lengths); chunks larger than max_size are then cut evenly.
    """
    used = np.asarray(used)
    if len(used) == 0:
        return []
    ends = np.flatnonzero(np.diff(used)) + 1
    ends = np.append(ends, len(used))  # end of each run of equal lengths
    starts = np.concatenate([[0], ends[:-1]])
    best = [0.0] + [math.inf] * len(ends)
    cut = [0] * (len(ends) + 1)
    for j in range(1, len(ends) + 1):
        windows = int(used[ends[j - 1] - 1]) + 1
        for i in range(j):
            cost = best[i] + (ends[j - 1] - starts[i] + position_cost) * windows + chunk_cost
            if cost < best[j]:
                best[j], cut[j] = cost, i
    chunks, j = [], len(ends)
    while j > 0:
        chunks[:0] = even_chunks(int(starts[cut[j]]), int(ends[j - 1]), max_size)
        j = cut[j]
    return chunks


def even_chunks(start, end, max_size):
    """[start, end) cut into the fewest pieces of at most max_size, as even as they can be ->
    list of (start, end)."""
    pieces = -(-(end - start) // max_size)
    bounds = np.linspace(start, end, pieces + 1).round().astype(int)
    return list(zip(bounds[:-1].tolist(), bounds[1:].tolist()))
