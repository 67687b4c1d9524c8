"""int8 exports: what --quantize int8 does (INT8_SETTINGS), whether it applies (check_quantizable),
and quantize_onnx, which rewrites an export's model.onnx with onnxruntime's quantize_dynamic after
the graph edits it needs (onnx_graph).
"""
import os

from paddle_elmo.export.export_format import ONNX_FILE, PRECISION_KEY, ExportError, quiet_native_output
from paddle_elmo.fileio import InputError, require_package
from paddle_elmo.export.onnx_graph import (MATMUL_KINDS, constants_to_initializers, fold_weight_parts, matmuls_of,
                                           nested_graphs, normalize_per_token)


QUANTIZE_CHOICES = ('int8',)


# What --quantize int8 does, and why (the alternatives are benchmarks/bench_int8_variants.py's):
# - the LSTMs' products in int8 with QInt8 weights (uint8 activations: onnxruntime's fast u8s8
#   kernels) and one weight scale per matrix (per column agrees no better and runs slower);
# - the token representation (char CNN, highway, projection) stays float: in int8 it costs the
#   worst token's cosine more than export_checks.INT8_MIN_COSINE allows;
# - each LSTM layer's input products x @ W_x, computed for all steps before its Loop (StaticBiLM),
#   are quantized with one scale PER TOKEN (normalize_per_token): a few tokens' representations
#   reach values many times most tokens', so one scale for a whole call, as quantize_dynamic gives,
#   is far too coarse for most tokens;
# - inside the Loops, h @ W_h and the projection W_P go through quantize_dynamic as they are (h is
#   within the projection clip);
# - the per-token scale is multiplied back inside the Loops, on each step's rows
#   (rescale_in_loops): before the Loops it is a memory-bound pass over [time, batch, 16384] floats.
INT8_SETTINGS = dict(weight_type='QInt8', keep_float=('token',), per_channel=False, per_token=('lstm_input',),
                     rescale_in_loops=True)
# On a CPU without VNNI (AVX2, AVX-512 before VNNI) onnxruntime's u8s8 products add pairs of uint8 x int8 in
# int16, which large activations times 8-bit weights overflow; 7-bit weights (reduce_range) cannot. They cost
# the models that do not overflow accuracy, so they are the fallback of an export whose check fails
# (deploy.quantized_and_checked), not the default.
SEVEN_BIT_WEIGHTS = dict(INT8_SETTINGS, reduce_range=True)


def check_quantizable(quantize, formats):
    """InputError (one line) unless `quantize` (None or 'int8') applies to an export of `formats`
    (check_quantize_setting) and the packages that write them are installed (the [onnx] extra, also in [cpu])."""
    check_quantize_setting(quantize, formats)
    if 'onnx' in formats:
        for module in ('onnx', 'paddle2onnx', 'onnxruntime'):  # onnxruntime: the check runs model.onnx
            require_package(module, 'onnx')
    if quantize is not None:
        require_package('onnxruntime.quantization', 'onnx')


def check_quantize_setting(quantize, formats):
    """InputError (one line) unless `quantize` (None or 'int8') applies to an export of `formats`: the
    settings alone, which a command checks before importing anything (paddle2onnx imports Paddle)."""
    if quantize is None:
        return
    if quantize not in QUANTIZE_CHOICES:
        raise InputError(f'quantize must be one of {QUANTIZE_CHOICES}, got {quantize!r}')
    if 'onnx' not in formats:
        raise InputError(f'--quantize {quantize} quantizes model.onnx (for onnxruntime); the paddle format alone '
                         f'cannot be quantized: use --formats paddle,onnx')


def quantize_onnx(directory, weight_type='QInt8', keep_float=(), per_channel=False, per_token=(),
                  rescale_in_loops=False, reduce_range=False):
    """directory/model.onnx (float32, as save_onnx writes it) -> the same file dynamically quantized
    to int8 by onnxruntime.quantization.quantize_dynamic: each MatMul's weight stored as int8 (one
    scale per matrix), its input quantized to uint8 at every call (DynamicQuantizeLinear), products
    in integers (MatMulInteger); the MatMuls inside the LSTM Loops too. The weights StaticBiLM
    splits are folded into weights of their own first (fold_weight_parts), and the MatMuls named
    by `per_token` have their input quantized per token (normalize_per_token; rescale_in_loops:
    multiplied back on each step's rows inside the Loops that read them).

    # Parameters
    weight_type: 'QInt8' or 'QUInt8' (onnxruntime's QuantType names), quantize_dynamic's.
    keep_float, per_token: kinds of MatMuls (matmuls_of). per_channel: quantize_dynamic's weights
    with one scale per column, not per matrix. rescale_in_loops: normalize_per_token's. reduce_range:
    weights in 7 bits, which no CPU's int8 products overflow (INT8_SETTINGS).
    -> {'quantized': n MatMuls, 'kept_float': [node names], 'description'}. The model's metadata
    records the description (PRECISION_KEY). ExportError if a MatMul inside the Loops stayed float.
    """
    import onnx
    quantization = require_package('onnxruntime.quantization', 'onnx')  # it needs ml_dtypes beside onnxruntime
    QuantType, quantize_dynamic = quantization.QuantType, quantization.quantize_dynamic
    path = os.path.join(directory, ONNX_FILE)
    model = onnx.load(path)
    constants_to_initializers(model.graph)
    fold_weight_parts(model)
    per_token_names = matmuls_of(model, per_token)
    normalize_per_token(model, per_token_names, rescale_in_loops)
    excluded = matmuls_of(model, keep_float)
    float_path = os.path.join(directory, 'model.float.onnx')
    onnx.save(model, float_path)
    try:
        with quiet_native_output():  # its INFO lines and a pre-processing hint, on every export
            quantize_dynamic(float_path, path, weight_type=getattr(QuantType, weight_type),
                             op_types_to_quantize=['MatMul'], nodes_to_exclude=excluded, per_channel=per_channel,
                             reduce_range=reduce_range, extra_options={'EnableSubgraph': True})
    finally:
        os.remove(float_path)
    model = onnx.load(path)
    loops = [g for g in nested_graphs(model.graph) if g is not model.graph]
    left = [n.name for g in loops for n in g.node if n.op_type == 'MatMul' and n.name not in excluded]
    if left:  # a weight reached through an op fold_weight_parts does not know (another paddle2onnx?)
        raise ExportError(f'quantize_dynamic left {len(left)} MatMuls inside the LSTM Loops float ({left[0]}, ...): '
                          f'their weights are not initializers of model.onnx')
    quantized = sum(n.op_type == 'MatMulInteger' for g in nested_graphs(model.graph) for n in g.node)
    description = (f'int8: onnxruntime {_onnxruntime_version()} quantize_dynamic, weights {weight_type}'
                   f'{" in 7 bits" if reduce_range else ""} {"per column" if per_channel else "per matrix"}, '
                   f'activations uint8 per call'
                   f'{_kinds_in_words(" (", per_token, " per token)")}'
                   f'{", rescaled in the Loops" if per_token and rescale_in_loops else ""}; {quantized} MatMuls quantized, '
                   f'{len(excluded)} kept float32{_kinds_in_words(" (", keep_float, ")")}')
    onnx.helper.set_model_props(model, {PRECISION_KEY: description})
    model.doc_string += f' [{description}]'
    onnx.save(model, path)
    return {'quantized': quantized, 'kept_float': excluded, 'description': description}


def _kinds_in_words(before, kinds, after):
    """MatMul kinds (MATMUL_KINDS) in words between `before` and `after`, or '' for none."""
    return f'{before}{" and ".join(MATMUL_KINDS[kind] for kind in kinds)}{after}' if kinds else ''


def _onnxruntime_version():
    import onnxruntime
    return onnxruntime.__version__
