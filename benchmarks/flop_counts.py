"""The matrix-product FLOPs of a configuration: a fixed reference per token (flops_breakdown) and
what a run over given batches cannot do without (required_flops).

The arithmetic floor of a run is its FLOPs over the float32 matmul rate (matmul_rates): the time if
every product ran at the speed of one large square matmul. Elementwise work (sigmoid, tanh,
clipping, the max-pool) is not counted, so a real run is slower than its floor unless it skips
arithmetic the reference does.
"""


def flops_breakdown(config, *, training=False, vocab_size=None, n_negative_samples=None,
                    cached_char_cnn=False):
    """FLOPs per token by part, counting 2 * m * n * k per matrix product.

    Forward, per token (config: a ModelConfig; F = total filters, P = projection_dim,
    D = cell_dim, C = char_embed_dim, M = max_characters_per_token):
      char_cnn   sum over filters (width w, n filters) of 2 * (M - w + 1) * w * C * n
                 (all M positions, PAD included, as the reference convolves them)
      highway    n_highway * 2 * (2 * F * F)          (carry and transform products)
      projection 2 * F * P
      lstm       per layer and direction: 2 * (P + P) * 4D (input and previous h to the gates)
                 + 2 * D * P (the projection); times n_layers, times 2 directions
      softmax    training only, per direction: 2 * P * (n_negative_samples + 1) with a sampled
                 softmax (shared negatives plus the true word), else 2 * P * vocab_size
    cached_char_cnn: the token representations come from a cache (char CNN, highway and
    projection cost nothing). training: forward + backward ~= 3x the forward products; the char
    CNN is counted once per token (the reversed stream holds the same tokens; bilm-tf computes
    it twice). Elementwise work is not counted.
    """
    if training and cached_char_cnn:
        raise ValueError('cached_char_cnn applies to inference only (training updates the char CNN)')
    if training and n_negative_samples is None and vocab_size is None:
        raise ValueError('training FLOPs need n_negative_samples (sampled softmax) or vocab_size (full softmax)')
    max_chars, char_dim, n_filters = config.max_characters_per_token, config.char_embed_dim, config.n_filters
    P, D, L = config.projection_dim, config.cell_dim, config.num_layers
    parts = {
        'char_cnn': sum(2 * (max_chars - w + 1) * w * char_dim * n for w, n in config.cnn_filters),
        'highway': config.num_highways * 2 * (2 * n_filters * n_filters),
        'projection': 2 * n_filters * P,
        'lstm': 2 * L * (2 * (P + P) * 4 * D + 2 * D * P),
        'softmax': 0,
    }
    if cached_char_cnn:
        parts.update(char_cnn=0, highway=0, projection=0)
    if training:
        classes = n_negative_samples + 1 if n_negative_samples is not None else vocab_size
        parts['softmax'] = 2 * (2 * P * classes)
        parts = {k: 3 * v for k, v in parts.items()}
    parts['total'] = sum(parts.values())
    return parts


def flops_per_token(config, *, training=False, vocab_size=None, n_negative_samples=None,
                    cached_char_cnn=False):
    """Total FLOPs per token of a configuration; see flops_breakdown for what is counted."""
    return flops_breakdown(config, training=training, vocab_size=vocab_size,
                           n_negative_samples=n_negative_samples, cached_char_cnn=cached_char_cnn)['total']


def used_chars(char_ids, pad_id=None):
    """char ids [tokens, max_chars] (shifted ids, as token_ids makes them) -> int [tokens]: the
    position after each token's last char that is not PAD (its bytes + the begin and end of word
    marks: a 5-byte word uses 7)."""
    import numpy as np
    from paddle_elmo.model import packing
    from paddle_elmo.text.token_ids import PAD_CHAR
    return packing.used_chars(np.asarray(char_ids), PAD_CHAR + 1 if pad_id is None else pad_id)


def required_flops(config, batches, *, training=False, n_negative_samples=None, vocab_size=None,
                   token_cache=False, precomputed=None):
    """The matrix-product FLOPs a run over `batches` cannot do without (2 * m * n * k per product),
    as the model's code computes it, where flops_breakdown counts a fixed reference per token.

    batches: iterable of int arrays [rows, time, max_chars] of char ids (token_ids' shifted ids,
    0 = padding position; CharMapper.batch or LMStream's char_ids). Inference (embedding): each
    row is a sentence with its <S> and </S>, run by both LSTM directions. Training: pass a step's
    forward and backward windows as the rows of one batch (lm_step_char_ids); each row is run by
    its own direction and each of its positions has a target.
      char_cnn   once per distinct token of a batch (once per distinct token of the whole run with
                 token_cache, the cache that holds every word it meets), over the windows that
                 touch at least one char that is not PAD: a token using u positions (used_chars)
                 needs min(max_chars - w + 1, u) windows of width w, each 2 * w * C * n FLOPs. The
                 all-PAD windows give one value for every token (the code computes one per call)
                 and are not counted.
      highway    per distinct token as above (2 products of F x F per layer)
      projection per distinct token: char input F -> P; word+char (word_dim + F) -> P; word input none
      lstm       per position and direction run (inference: 2 per position; training: 1)
      softmax    training only: per position, 2 * P * (n_negative_samples + 1) (the true word and
                 the shared candidates, lm.sampled_loss) or 2 * P * vocab_size
    training multiplies everything by 3 (forward + backward), as flops_breakdown.
    precomputed: tokens (str) whose representation is read from a table (ELMoEmbedder's
    embedding_weight_file), never computed. Elementwise work is not counted.
    -> dict of parts and 'total', plus counts: 'positions' (real token positions of all rows),
    'distinct' (tokens through the char CNN), 'char_windows' (the windows counted, summed over
    the distinct tokens and the filter widths) and 'char_windows_by_width' ({width: windows}).
    """
    import numpy as np
    if training and n_negative_samples is None and vocab_size is None:
        raise ValueError('training FLOPs need n_negative_samples (sampled softmax) or vocab_size (full softmax)')
    max_chars, char_dim, n_filters = config.max_characters_per_token, config.char_embed_dim, config.n_filters
    P, D, L = config.projection_dim, config.cell_dim, config.num_layers
    has_chars = config.token_input != 'word'
    lstm_per_direction = L * (2 * (P + P) * 4 * D + 2 * D * P)
    classes = (n_negative_samples + 1) if n_negative_samples is not None else vocab_size
    skip = set()
    if precomputed is not None and has_chars:
        from paddle_elmo.text.token_ids import tokens_to_char_ids
        tokens = list(precomputed)
        if tokens:
            skip = {row.tobytes() for row in tokens_to_char_ids(tokens, max_chars)}
    seen = set()
    parts = dict(char_cnn=0, highway=0, projection=0, lstm=0, softmax=0)
    counts = dict(positions=0, distinct=0, char_windows=0,
                  char_windows_by_width={w: 0 for w, _ in config.cnn_filters} if has_chars else {})
    for batch in batches:
        ids = np.ascontiguousarray(batch, dtype=np.int64)
        ids = ids.reshape(-1, ids.shape[-1])
        real = ids[(ids > 0).any(axis=1)]
        positions = len(real)
        counts['positions'] += positions
        parts['lstm'] += positions * lstm_per_direction * (1 if training else 2)
        if training:
            parts['softmax'] += positions * 2 * P * classes
        if not has_chars:
            continue
        keys = {}
        for row in real:
            key = row.tobytes()
            if key not in skip and key not in seen:
                keys.setdefault(key, row)
        if token_cache:
            seen.update(keys)
        if not keys:
            continue
        distinct = np.stack(list(keys.values()))
        used = used_chars(distinct)
        windows = {w: np.minimum(max_chars - w + 1, used).sum() for w, _ in config.cnn_filters}
        parts['char_cnn'] += int(sum(2 * windows[w] * w * char_dim * n for w, n in config.cnn_filters))
        counts['char_windows'] += int(sum(windows[w] for w, _ in config.cnn_filters))
        for w in windows:
            counts['char_windows_by_width'][w] += int(windows[w])
        counts['distinct'] += len(distinct)
        parts['highway'] += len(distinct) * config.num_highways * 2 * (2 * n_filters * n_filters)
        parts['projection'] += len(distinct) * 2 * (config.word_dim * (config.token_input == 'word+char')
                                                    + n_filters) * P
    if training:
        parts = {k: 3 * v for k, v in parts.items()}
    parts = {k: int(v) for k, v in parts.items()}
    parts['total'] = sum(parts.values())
    return dict(parts, **counts)


def lm_step_char_ids(batch):
    """An LMStream batch -> the char ids of the step's forward and backward windows as one array
    [2B, T, max_chars], as required_flops(training=True) reads a step (the biLM runs the char CNN
    once per distinct token of the two: BiLM.lm_outputs)."""
    import numpy as np
    return np.concatenate([batch['char_ids'], batch['char_ids_reverse']])
