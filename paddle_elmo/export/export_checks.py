"""Checking an export before its directory appears: each written model run by each runtime against
ELMoEmbedder(stateful=False) on CHECK_SENTENCES at float rounding (verify_export, VERIFY_TOL of
each layer's largest value), and an int8 model.onnx on at least INT8_CHECK_MIN_SENTENCES sentences
of its own language (default_verify_file: the held-out sample a model ships) at the int8 tolerance
(verify_int8: token cosine >= INT8_MIN_COSINE). A failed check is an ExportError.
"""
import os

import numpy as np

from paddle_elmo.text.corpus import is_blank
from paddle_elmo.text.encodings import iter_text_lines
from paddle_elmo.export.export_format import BACKENDS, ONNX_FILE, ExportError
from paddle_elmo.fileio import InputError
from paddle_elmo.export.inference import InferenceEmbedder
from paddle_elmo.files.model_names import MODELS, PACKAGE_DIR
from paddle_elmo.use.languages import unknown_words_expected


# The float check's sentences: short and long, a long word, non-ASCII bytes, one token (a word
# model maps the words its vocabulary lacks to <UNK>). The export computes the formula of the model,
# so a few sentences that reach every code path find a slip (test_export.py's slips).
CHECK_SENTENCES = [['The', 'first', 'sentence', '.'], ['Second', 'one', ',', 'a', 'little', 'longer', 'than',
                   'the', 'first', ',', 'with', 'antidisestablishmentarianism', '.'], ['中文', 'ünïcode'], ['x']]


# int8's error depends on each sentence's values, not on code paths: its worst token is a tail
# statistic, read on many real sentences of the model's own language: on text mostly unknown to it
# (English for a Chinese model) its words are all <UNK> and the check sees few distinct values.
INT8_CHECK_MIN_SENTENCES = 200


# A model's own held-out sample: real sentences of its corpus's held-out file, in the corpus's tokens, one
# per line, beside its options.json (each bundled model ships one: benchmarks/make_heldout_samples.py).
SAMPLE_FILE = 'heldout_sample.txt'
# A model without one is checked on the English model's sample when its tokenizer reads that
# tokenized English as written (moses; whitespace, the tokens as they are): an English model. Any
# other tokenizer (jieba, chars: a Chinese model) needs sentences of its own language (--verify_file).
ENGLISH_SAMPLE = os.path.join(PACKAGE_DIR, MODELS['bundled'].package_dir, SAMPLE_FILE)
ENGLISH_SAMPLE_TOKENIZERS = ('moses', 'whitespace')


def default_verify_file(options_file, tokenizer):
    """The sentences an int8 export is checked on when none are given: the model's own held-out
    sample (SAMPLE_FILE beside its `options_file`), else, for a model whose `tokenizer` reads
    tokenized English, ENGLISH_SAMPLE -> path; else InputError asking for --verify_file."""
    own = os.path.join(os.path.dirname(options_file), SAMPLE_FILE) if options_file else None
    if own and os.path.isfile(own):
        return own
    if tokenizer in ENGLISH_SAMPLE_TOKENIZERS:
        return ENGLISH_SAMPLE
    raise InputError(f'--verify_file (verify_sentences): give the sentences to check the int8 model on '
                     f'({INT8_CHECK_MIN_SENTENCES}+ lines '
                     f'of its own language): the model ({options_file or "given"}) has no {SAMPLE_FILE} beside it, '
                     f'and the English sample cannot check a model whose tokenizer is {tokenizer}')


def check_sentences(path, tokenizer='whitespace'):
    """The sentences an int8 export is checked on: the non-empty lines of `path` (one sentence per line,
    read as text of the model's `tokenizer`: text.encodings; export-inference --verify_file, or
    default_verify_file's) -> list of str; InputError when there are fewer than INT8_CHECK_MIN_SENTENCES."""
    sentences = [text.strip() for _, _, text in iter_text_lines(path, tokenizer) if not is_blank(text)]
    if len(sentences) < INT8_CHECK_MIN_SENTENCES:
        raise InputError(f'{path}: {len(sentences)} non-empty lines; an int8 export is checked on at least '
                         f'{INT8_CHECK_MIN_SENTENCES} sentences (one per line)')
    return sentences


# ELMoEmbedder and the exported model differ by float rounding only (BLAS summation order, fused
# kernels), and rounding scales with the magnitudes a layer's sums carry, not with each output: a
# trained model's highway pre-activations and token representations are large, and values near
# zero of the same layer inherit errors of that size. So each layer of each sentence is compared on
# its own scale: max |difference| <= VERIFY_TOL * max |value| (relative_differences). Rounding,
# also on random original-size models with a trained model's magnitudes (magnitudes.realistic_bilm),
# stays well under it, while a slip (the forget bias dropped, two gates swapped) moves a layer by a
# large part of its largest value.
VERIFY_TOL = 1e-4


def relative_differences(got, expected):
    """Each layer's largest difference on the scale of its values.

    # Parameters
    got, expected: lists (one item per sentence) of float32 [n_layers + 1, n_tokens, dim].
    -> float64 [sentences, n_layers + 1]: max |got - expected| / max |expected| over the sentence's
    tokens (0 for an empty sentence or an all-zero layer that got matches exactly; inf if got is not
    zero there).
    """
    out = np.zeros((len(expected), expected[0].shape[0] if expected else 0))
    for b, (g, e) in enumerate(zip(got, expected)):
        diff = np.abs(g.astype(np.float64) - e).reshape(e.shape[0], -1).max(axis=1, initial=0.0)
        scale = np.abs(e).reshape(e.shape[0], -1).max(axis=1, initial=0.0).astype(np.float64)
        with np.errstate(divide='ignore', invalid='ignore'):
            out[b] = np.where(diff == 0, 0.0, diff / scale)
    return out


def verify_export(bilm, model_dir, sentences):
    """Run each runtime on `model_dir` and ELMoEmbedder(stateful=False) on `sentences`.

    -> {backend: {'max_abs_diff': d, 'max_rel_diff': r}} for 'paddle' and 'onnxruntime' (when
    model.onnx is there), r as relative_differences; ExportError beyond VERIFY_TOL.
    """
    from paddle_elmo.use.embedder import ELMoEmbedder
    with unknown_words_expected():  # CHECK_SENTENCES are English whatever the model's language
        expected = ELMoEmbedder(bilm=bilm, stateful=False).embed_batch(sentences)
    diffs = {}
    for backend in BACKENDS:
        if backend == 'onnxruntime' and not os.path.exists(os.path.join(model_dir, ONNX_FILE)):
            continue
        with unknown_words_expected():
            got = InferenceEmbedder(model_dir, backend=backend).embed_batch(sentences)
        relative = float(relative_differences(got, expected).max(initial=0.0))
        diffs[backend] = {'max_abs_diff': max(float(np.abs(g - e).max(initial=0.0)) for g, e in zip(got, expected)),
                          'max_rel_diff': relative}
        if not relative <= VERIFY_TOL:  # also catches NaN
            raise ExportError(f'the exported model run by {backend} differs from ELMoEmbedder by up to '
                              f'{relative:.3g} of a layer\'s largest value, more than float rounding '
                              f'({VERIFY_TOL:g}); the export is not written')
    return diffs


# int8 moves values by quantization steps, not rounding. The formula is verified first, on the
# float model.onnx at VERIFY_TOL; this check guards the quantization itself, at the target README
# states: every layer's worst token at cosine >= INT8_MIN_COSINE with float32, and no layer off by
# more than INT8_REL_TOL of its largest value (a margin over what int8 gives on the bundled,
# original-size and test models: tests/test_export.py).
INT8_MIN_COSINE, INT8_REL_TOL = 0.99, 0.25


def token_cosines(got, expected):
    """Per-token cosine similarity of each layer.

    # Parameters
    got, expected: lists (one item per sentence) of float32 [n_layers + 1, n_tokens, dim].
    -> float64 [n_layers + 1, total tokens] (1 where both vectors are zero).
    """
    g = np.concatenate([x for x in got], axis=1).astype(np.float64)  # [layers, tokens, dim]
    e = np.concatenate([x for x in expected], axis=1).astype(np.float64)
    norms = np.linalg.norm(g, axis=-1) * np.linalg.norm(e, axis=-1)
    with np.errstate(divide='ignore', invalid='ignore'):
        return np.where(norms == 0, np.where(np.abs(g - e).max(axis=-1, initial=0) == 0, 1.0, 0.0),
                        (g * e).sum(-1) / norms)


def verify_int8(bilm, model_dir, sentences):
    """The int8 model.onnx in model_dir against ELMoEmbedder(stateful=False) on `sentences` (raw
    strings or token lists, run in batches)
    -> {'sentences': n, 'min_cosine', 'min_cosine_per_layer': [n_layers + 1], 'mean_cosine',
    'max_rel_diff', 'max_abs_diff'}; ExportError when a layer's worst token is below
    INT8_MIN_COSINE or a layer differs by more than INT8_REL_TOL of its largest value."""
    from paddle_elmo.use.embedder import ELMoEmbedder
    expected = ELMoEmbedder(bilm=bilm, stateful=False).encode(sentences)
    got = InferenceEmbedder(model_dir, backend='onnxruntime').encode(sentences)
    cosines = token_cosines(got, expected)
    result = {'sentences': len(sentences), 'min_cosine': float(cosines.min(initial=1.0)),
              'min_cosine_per_layer': [float(c.min(initial=1.0)) for c in cosines],
              'mean_cosine': float(cosines.mean()) if cosines.size else 1.0,
              'max_rel_diff': float(relative_differences(got, expected).max(initial=0.0)),
              'max_abs_diff': max(float(np.abs(g - e).max(initial=0.0)) for g, e in zip(got, expected))}
    if not (result['min_cosine'] >= INT8_MIN_COSINE and result['max_rel_diff'] <= INT8_REL_TOL):
        raise ExportError(f'the int8 model differs from ELMoEmbedder more than quantization does (token cosine '
                          f'{result["min_cosine"]:.4f} < {INT8_MIN_COSINE} or {result["max_rel_diff"]:.3g} of a '
                          f'layer\'s largest value > {INT8_REL_TOL}); the export is not written')
    return result
