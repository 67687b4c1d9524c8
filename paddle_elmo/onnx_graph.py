"""Writing an exported model: a Paddle Inference program and ONNX, optionally int8, verified.

    export_inference(bilm, 'elmo_inference')     # -> inference.json + inference.pdiparams, model.onnx,
                                                 #    options.json (export_format.EXPORTED_FILES), vocab.txt (word input)
    embedder = InferenceEmbedder('elmo_inference', backend='paddle')   # or 'onnxruntime' (inference.py)
    embedder.encode([['Hello', 'world']])        # -> [[n_layers + 1, 2, 2 * projection_dim]], as ELMoEmbedder

The exported model takes what `token_ids.InputMapper(config, vocab).batch(sentences)` returns (with
<S> and </S>), one input per id kind the model reads (export_format.input_names): `char_ids`, int64
[batch, time, max_characters_per_token], for a char model (exactly `token_ids.CharMapper().batch`);
`word_ids`, int64 [batch, time] (the line of the export's vocab.txt + 1, <UNK>'s for an unknown
word, 0 = padding), for a word model; both, `word_ids` first, for word+char. It returns `layers`,
float32 [batch, n_layers + 1, time - 2, 2 * projection_dim] (boundaries removed, zeros at padding),
and `mask`, bool [batch, time - 2]. It is stateless (every sentence starts from a zero LSTM state)
and gives ELMoEmbedder(stateful=False)'s numbers: every export is run and compared before its
directory appears (`verify_export`, on each layer's scale, on CHECK_SENTENCES; `verify_int8` at the
int8 tolerance, on at least 200 sentences: the sample corpus, or the caller's), and its manifest
(export.json) records the checks' results, or that the caller skipped them (verify=False: a
warning, and "unverified", which InferenceEmbedder reports). The program is static_bilm.StaticBiLM's.
"""
import json
import logging
import os
import shutil
import tempfile

import numpy as np

import paddle

from paddle_elmo.corpus import SAMPLE_HELDOUT, SAMPLE_TRAIN, is_blank
from paddle_elmo.export_format import BACKENDS, CHAR_INPUT, EXPORTED_FILES, MANIFEST_FILE, ONNX_FILE, ONNX_OPSET, OPTIONS_FILE, OUTPUT_NAMES, PRECISION_KEY, PROGRAM_PREFIX, UNVERIFIED, WORD_INPUT, quiet_native_output, input_names
from paddle_elmo.fileio import InputError, iter_lines, require_package, write_json_atomic
from paddle_elmo.hdf5_weights import model_options
from paddle_elmo.inference import InferenceEmbedder
from paddle_elmo.run_configs import VOCAB_FILE, read_json, write_input_vocabulary
from paddle_elmo.static_bilm import StaticBiLM, check_exportable

log = logging.getLogger(__name__)


class ExportError(RuntimeError):
    """A conversion step failed (not the user's input): the message says which and why."""


def _input_spec(config):
    """The exported inputs (input_names), batch and time free: word_ids [batch, time], char_ids
    [batch, time, max_characters_per_token], int64."""
    shapes = {WORD_INPUT: [None, None], CHAR_INPUT: [None, None, config.max_characters_per_token]}
    return [paddle.static.InputSpec(shapes[name], 'int64', name) for name in input_names(config)]


def _inputs_doc(config):
    """The exported inputs in words, for model.onnx's doc_string."""
    doc = {WORD_INPUT: f'{WORD_INPUT} int64 [batch, time] (line index in {VOCAB_FILE} + 1; 0 = padding)',
           CHAR_INPUT: f'{CHAR_INPUT} int64 [batch, time, {config.max_characters_per_token}]'}
    return ' and '.join(doc[name] for name in input_names(config))


def _name_program_outputs(program_file, names):
    """Rename the fetch ops of a saved PIR program (JSON) to `names`, in output order.

    paddle.jit.save names the outputs 'fetch_name_0', ... (a PIR value that is not persistable
    cannot be given a name when it is traced), and paddle2onnx keeps whatever the program says: the
    names users see in both runtimes come from here.
    """
    with open(program_file, encoding='utf-8') as f:
        program = json.load(f)
    renamed = 0
    for op in program['program']['regions'][0]['blocks'][0]['ops']:
        if op.get('#', '').endswith('.fetch'):
            attrs = {a['N']: a['AT'] for a in op['A']}
            attrs['name']['D'] = names[attrs['col']['D']]
            renamed += 1
    if renamed != len(names):
        raise ExportError(f'{program_file}: expected {len(names)} outputs in the saved program, found {renamed} '
                          f'(has Paddle\'s program format changed? paddle {paddle.__version__})')
    with open(program_file, 'w', encoding='utf-8') as f:
        json.dump(program, f, separators=(',', ':'))


def save_paddle_program(bilm, directory):
    """paddle.jit.save of StaticBiLM(bilm) -> directory/inference.json + inference.pdiparams."""
    spec = _input_spec(bilm.config)
    static = paddle.jit.to_static(StaticBiLM(bilm), input_spec=spec, full_graph=True)
    # Tracing arange/cumsum with a traced end makes Paddle 3.3's C++ log 'not support input out
    # tensor' (it passes out=None on): not ours to fix, and not the user's concern.
    with quiet_native_output():
        paddle.jit.save(static, os.path.join(directory, PROGRAM_PREFIX), input_spec=spec)
    program_file = os.path.join(directory, f'{PROGRAM_PREFIX}.json')
    if not os.path.isfile(program_file):  # an old-IR program (FLAGS_enable_pir_api=0) is .pdmodel
        raise ExportError(f'paddle.jit.save wrote {sorted(os.listdir(directory))}, not {PROGRAM_PREFIX}.json: '
                          f'run with PIR on (the default of Paddle 3; FLAGS_enable_pir_api=1)')
    _name_program_outputs(program_file, OUTPUT_NAMES)


def save_onnx(directory, config):
    """directory/inference.json + .pdiparams -> directory/model.onnx with paddle2onnx; batch and
    time named as ONNX dimensions (of every input and output)."""
    import onnx
    paddle2onnx = require_package('paddle2onnx', 'onnx')
    program = os.path.join(directory, f'{PROGRAM_PREFIX}.json')
    params = os.path.join(directory, f'{PROGRAM_PREFIX}.pdiparams')
    # optimize_tool='None': paddle2onnx's default (polygraphy) may pip-install packages at run time;
    # onnxruntime folds constants itself when it loads the model.
    try:
        with quiet_native_output():
            model_bytes = paddle2onnx.export(program, params, save_file=None, opset_version=ONNX_OPSET,
                                             enable_onnx_checker=True, optimize_tool='None')
    except Exception as e:  # paddle2onnx logs its own error and then fails on an unset result
        raise ExportError(f'paddle2onnx {paddle2onnx.__version__} could not convert {program}: '
                          f'{type(e).__name__}: {e}') from None
    model = onnx.load_from_string(model_bytes)
    try:
        onnx.checker.check_model(model)
    except onnx.checker.ValidationError as e:
        first = (str(e).strip().splitlines() or [''])[0]
        raise ExportError(f'paddle2onnx {paddle2onnx.__version__} wrote an invalid ONNX model: {first}') from None
    _drop_unused_constants(model.graph)
    inner = 'time_minus_2'
    dims = {CHAR_INPUT: ('batch', 'time', None), WORD_INPUT: ('batch', 'time'),
            'layers': ('batch', None, inner, None), 'mask': ('batch', inner)}
    for value in list(model.graph.input) + list(model.graph.output):
        for dim, name in zip(value.type.tensor_type.shape.dim, dims.get(value.name, ())):
            if name is not None and not dim.HasField('dim_value'):
                dim.dim_param = name
    model.doc_string = (f'ELMo biLM ({config.num_layers} LSTM layers, projection {config.projection_dim}): '
                        f'{_inputs_doc(config)} with <S> and </S> -> '
                        f'layers float32 [batch, n_layers + 1, time - 2, 2 * projection_dim], mask bool '
                        f'[batch, time - 2]')
    onnx.save(model, os.path.join(directory, ONNX_FILE))


def _drop_unused_constants(graph):
    """Remove the Constant nodes paddle2onnx writes but no node reads (onnxruntime warns about each
    one when it loads the model). A Loop body reads its enclosing graphs' values by name, so a
    constant is used if any node of its graph or of a graph nested in it names it.
    -> the names read in `graph` and its nested graphs."""
    import onnx
    used = {name for node in graph.node for name in node.input} | {value.name for value in graph.output}
    for node in graph.node:
        for attr in node.attribute:
            for sub in ([attr.g] if attr.type == onnx.AttributeProto.GRAPH else list(attr.graphs)):
                used |= _drop_unused_constants(sub)
    keep = [node for node in graph.node if node.op_type != 'Constant' or any(o in used for o in node.output)]
    del graph.node[:]
    graph.node.extend(keep)
    return used


QUANTIZE_CHOICES = ('int8',)


# What --quantize int8 does, chosen by measurement (issue 37). The LSTMs' products in int8 with
# QInt8 weights (with uint8 activations, onnxruntime's fast u8s8 kernels; QUInt8 ran at 0.55x of
# it), one weight scale per matrix (per column: same agreement, 0.47x the speed); the token
# representation float (quantizing the char CNN, highway and projection too brought the original
# size's worst token cosine from 0.9975 to 0.949 for ~1.3x more speed). Each LSTM layer's input
# products x @ W_x, computed for all steps before its Loop (StaticBiLM), are quantized with one
# scale PER TOKEN (normalize_per_token): a token representation's values reach ~24 in the bundled
# model (~50 at the original size) while most tokens' stay within 1-2, so one scale for a whole
# call, as quantize_dynamic gives, is far too coarse for most tokens. The bundled model's worst
# token cosine on 1,000 rt-polarity sentences: 0.979 with [x_t; h] at one scale per step (the
# first int8 export); 0.956 with x @ W_x apart at one scale per batch; 0.9966 per token (and
# 0.9998 at the original size). Giving h a scale of its own was not the fix (emulated: 0.971).
# Inside the Loops, h @ W_h and the projection W_P go through quantize_dynamic as they are (h is
# within the projection clip). Cost: ~0.9x the first int8 export's CPU time (measured on a loaded
# machine, same process, both sizes).
INT8_SETTINGS = dict(weight_type='QInt8', keep_float=('token',), per_channel=False, per_token=('lstm_input',))


def check_quantizable(quantize, formats):
    """InputError (one line) unless `quantize` (None or 'int8') applies to an export of `formats`
    and the packages that write them are installed (the [onnx] extra, also in [cpu])."""
    if 'onnx' in formats:
        for module in ('onnx', 'paddle2onnx', 'onnxruntime'):  # onnxruntime: the check runs model.onnx
            require_package(module, 'onnx')
    if quantize is None:
        return
    if quantize not in QUANTIZE_CHOICES:
        raise InputError(f'quantize must be one of {QUANTIZE_CHOICES}, got {quantize!r}')
    if 'onnx' not in formats:
        raise InputError(f'--quantize {quantize} quantizes model.onnx (for onnxruntime); the paddle format alone '
                         f'cannot be quantized: use --formats paddle,onnx')
    require_package('onnxruntime.quantization', 'onnx')


def constants_to_initializers(graph):
    """Turn the graph's Constant nodes that hold a tensor (paddle2onnx writes every parameter as
    one) into initializers of the same name: quantize_dynamic quantizes a MatMul only when its
    weight is an initializer ("non constant B" otherwise), in the main graph and in the Loop
    bodies, which read the main graph's names. -> the number moved."""
    import onnx
    keep, moved = [], 0
    for node in graph.node:
        value = [a for a in node.attribute if a.name == 'value' and a.type == onnx.AttributeProto.TENSOR]
        if node.op_type == 'Constant' and value:
            tensor = onnx.TensorProto()
            tensor.CopyFrom(value[0].t)
            tensor.name = node.output[0]
            graph.initializer.append(tensor)
            moved += 1
        else:
            keep.append(node)
    del graph.node[:]
    graph.node.extend(keep)
    return moved


# Ops that only pick parts of a tensor: on weights they are folded into weights of their own.
_FOLDABLE = ('Split', 'Slice', 'Identity')


def fold_weight_parts(model):
    """Replace each Split / Slice / Identity of the main graph whose inputs are all initializers
    (StaticBiLM splits each LSTM's W into its input rows W_x and hidden rows W_h) by initializers
    holding its outputs, named after the weight (`lstm_layer_0.w_0.split1`: W's second part), and
    drop the initializers nothing reads any more: quantize_dynamic quantizes a MatMul only when
    its weight is an initializer, and gives each such matrix its own scale. Every graph (the Loop
    bodies read the main graph's names) is renamed. -> {new initializer name: source weight}."""
    import onnx
    from onnx import numpy_helper
    from onnx.reference import ReferenceEvaluator
    graph = model.graph
    opsets = {o.domain: o.version for o in model.opset_import}
    values = {t.name: t for t in graph.initializer}
    rename, origin, keep = {}, {}, []
    for node in graph.node:
        inputs = [name for name in node.input if name]
        if node.op_type not in _FOLDABLE or not inputs or not all(name in values for name in inputs):
            keep.append(node)
            continue
        source = rename.get(node.input[0], node.input[0])
        if node.op_type == 'Identity':
            rename[node.output[0]] = source
            continue
        outputs = ReferenceEvaluator(node, opsets=opsets).run(
            None, {name: numpy_helper.to_array(values[name]) for name in inputs})
        for k, (name, array) in enumerate(zip(node.output, outputs)):
            new = f'{source}.{node.op_type.lower()}{k}'
            values[name] = values[new] = numpy_helper.from_array(np.ascontiguousarray(array), new)
            rename[name], origin[new] = new, origin.get(source, source)
    del graph.node[:]
    graph.node.extend(keep)
    for g in _graphs(graph):
        for node in g.node:
            for k, name in enumerate(node.input):
                node.input[k] = rename.get(name, name)
        for value in g.output:
            value.name = rename.get(value.name, value.name)
    used = {name for g in _graphs(graph) for node in g.node for name in node.input}
    used |= {value.name for value in graph.output}
    kept = [t for t in graph.initializer if t.name in used] + [values[name] for name in origin if name in used]
    del graph.initializer[:]
    graph.initializer.extend(kept)
    return {name: source for name, source in origin.items() if name in used}


# The kinds of MatMuls matmuls_of knows, in words (for the model's description).
MATMUL_KINDS = {'char_cnn': 'the char CNN', 'token': 'the token representation',
                'lstm_input': "the LSTMs' input products"}


def matmuls_of(model, kinds):
    """Names of the main graph's MatMul nodes of the given kinds, any of: 'char_cnn' (the
    convolutions: their weights are char_encoder.conv_weights, which jit.save names char_encoder_*),
    'token' (the token representation: char CNN, highway, projection), 'lstm_input' (each LSTM
    layer's input products x @ W_x for all steps, made before its Loop: weights lstm_layer_*, split
    by fold_weight_parts). Every MatMul outside the Loops is one of these; inside them are h @ W_h
    and the projection W_P."""
    main = [n for n in model.graph.node if n.op_type == 'MatMul']
    lstm = [n for n in main if any(name.startswith('lstm_layer') for name in n.input[1:])]
    kept = set(n.name for n in lstm) if 'lstm_input' in kinds else set()
    if 'token' in kinds:
        kept |= {n.name for n in main if n not in lstm}
    if 'char_cnn' in kinds:
        kept |= {n.name for n in main if any(name.startswith('char_encoder') for name in n.input[1:])}
    return [n.name for n in main if n.name in kept]


def normalize_per_token(model, names):
    """Wrap each named MatMul of the main graph, y = x @ W, as y = ((x / r) @ W) * r with r each
    row's largest |value| (per token; a zero row stays zero): quantize_dynamic then quantizes
    x / r, whose rows all reach 1, with its one scale per call -- in effect one scale per token,
    which onnxruntime's DynamicQuantizeLinear cannot give (one scale per tensor, set by its
    largest value), while the product stays onnxruntime's fused DynamicQuantizeMatMul (float out;
    a MatMulInteger with per-row scales needs a Cast and a Mul over its whole output: the whole
    int8 model ran ~1.3x slower at the original size). -> the number wrapped."""
    from onnx import helper, numpy_helper
    targets, out, wrapped = set(names), [], 0
    for node in model.graph.node:
        if node.op_type != 'MatMul' or node.name not in targets:
            out.append(node)
            continue
        p, x, y = f'{node.name}.per_token', node.input[0], node.output[0]
        model.graph.initializer.append(numpy_helper.from_array(np.array(1e-30, np.float32), f'{p}.tiny'))
        out += [helper.make_node('Abs', [x], [f'{p}.abs']),
                helper.make_node('ReduceMax', [f'{p}.abs'], [f'{p}.max'], axes=[-1], keepdims=1),
                helper.make_node('Max', [f'{p}.max', f'{p}.tiny'], [f'{p}.r']),
                helper.make_node('Div', [x, f'{p}.r'], [f'{p}.x'])]
        node.input[0], node.output[0] = f'{p}.x', f'{p}.y'
        out += [node, helper.make_node('Mul', [f'{p}.y', f'{p}.r'], [y])]
        wrapped += 1
    del model.graph.node[:]
    model.graph.node.extend(out)
    return wrapped


def quantize_onnx(directory, weight_type='QInt8', keep_float=(), per_channel=False, per_token=()):
    """directory/model.onnx (float32, as save_onnx writes it) -> the same file dynamically quantized
    to int8 by onnxruntime.quantization.quantize_dynamic: each MatMul's weight stored as int8 (one
    scale per matrix), its input quantized to uint8 at every call (DynamicQuantizeLinear), products
    in integers (MatMulInteger); the MatMuls inside the LSTM Loops too. The weights StaticBiLM
    splits are folded into weights of their own first (fold_weight_parts), and the MatMuls named
    by `per_token` have their input quantized per token (normalize_per_token).

    # Parameters
    weight_type: 'QInt8' or 'QUInt8' (onnxruntime's QuantType names), quantize_dynamic's.
    keep_float, per_token: kinds of MatMuls (matmuls_of). per_channel: quantize_dynamic's weights
    with one scale per column, not per matrix.
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
    normalize_per_token(model, per_token_names)
    excluded = matmuls_of(model, keep_float)
    float_path = os.path.join(directory, 'model.float.onnx')
    onnx.save(model, float_path)
    try:
        with quiet_native_output():  # its INFO lines and a pre-processing hint, on every export
            quantize_dynamic(float_path, path, weight_type=getattr(QuantType, weight_type),
                             op_types_to_quantize=['MatMul'], nodes_to_exclude=excluded, per_channel=per_channel,
                             extra_options={'EnableSubgraph': True})
    finally:
        os.remove(float_path)
    model = onnx.load(path)
    loops = [g for g in _graphs(model.graph) if g is not model.graph]
    left = [n.name for g in loops for n in g.node if n.op_type == 'MatMul']
    if left:  # a weight reached through an op fold_weight_parts does not know (another paddle2onnx?)
        raise ExportError(f'quantize_dynamic left {len(left)} MatMuls inside the LSTM Loops float ({left[0]}, ...): '
                          f'their weights are not initializers of model.onnx')
    quantized = sum(n.op_type == 'MatMulInteger' for g in _graphs(model.graph) for n in g.node)
    description = (f'int8: onnxruntime {_onnxruntime_version()} quantize_dynamic, weights {weight_type} '
                   f'{"per column" if per_channel else "per matrix"}, activations uint8 per call'
                   f'{_kinds_in_words(" (", per_token, " per token)")}; {quantized} MatMuls quantized, '
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


def _graphs(graph):
    """`graph` and every graph nested in its nodes (Loop bodies), outermost first."""
    import onnx
    yield graph
    for node in graph.node:
        for attr in node.attribute:
            for sub in ([attr.g] if attr.type == onnx.AttributeProto.GRAPH else list(attr.graphs)):
                yield from _graphs(sub)


def check_output_dir(output_dir):
    """Raise (one line) unless an export can be written to output_dir: new, empty or a previous
    export (replaced as a whole), in an existing directory where we can create files. -> the parent."""
    parent = os.path.dirname(os.path.abspath(output_dir))
    if not os.path.isdir(parent):
        raise FileNotFoundError(f'{output_dir}: the directory {parent} does not exist')
    if os.path.exists(output_dir):
        if not os.path.isdir(output_dir):
            raise InputError(f'{output_dir}: exists and is not a directory')
        others = sorted(set(os.listdir(output_dir)) - set(EXPORTED_FILES) - {VOCAB_FILE})
        if others:
            raise InputError(f'{output_dir}: holds files that are not an export ({", ".join(others[:3])}); '
                             f'give a new or empty directory')
    _temp_dir_beside(output_dir, parent, '.probe')  # permissions, read-only file systems, quotas
    return parent


def _temp_dir_beside(output_dir, parent, suffix):
    """A new hidden directory in `parent` (removed at once for suffix '.probe') -> its path."""
    try:
        path = tempfile.mkdtemp(prefix=f'.{os.path.basename(os.path.abspath(output_dir))}.', suffix=suffix,
                                dir=parent)
    except OSError as e:
        raise InputError(f'{output_dir}: cannot write in {parent} ({e.strerror})') from None
    if suffix == '.probe':
        os.rmdir(path)
    else:  # mkdtemp makes it private (0700); an export is as readable as any file the user writes
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(path, 0o777 & ~umask)
    return path


def _replace_dir(tmp, output_dir):
    """Move the finished export `tmp` to output_dir; a previous export there is removed only after."""
    old = None
    if os.path.exists(output_dir):
        old = tempfile.mkdtemp(prefix=f'.{os.path.basename(os.path.abspath(output_dir))}.old.',
                               dir=os.path.dirname(tmp))
        os.rmdir(old)
        os.rename(output_dir, old)
    os.rename(tmp, output_dir)
    if old:
        shutil.rmtree(old, ignore_errors=True)


def export_inference(bilm, output_dir, formats=('paddle', 'onnx'), verify=True, verify_sentences=None,
                     options_file=None, quantize=None):
    """Write `bilm` as a model that runs without this code: see the module docstring.

    output_dir: new, empty, or a previous export (replaced). Everything is written into a hidden
    temporary directory beside it, which is renamed into place when complete, so an interrupted or
    failed export leaves nothing under the name.
    formats: 'paddle' (inference.json + inference.pdiparams) is always written (the ONNX model is
    converted from it); 'onnx' adds model.onnx.
    verify: run each written model and ELMoEmbedder(stateful=False) on CHECK_SENTENCES before the
    rename (verify_export): an ExportError if a layer differs by more than float rounding on its
    scale (VERIFY_TOL of its largest value); with quantize, the int8 model.onnx then on
    `verify_sentences` (verify_int8). False writes the export unchecked, with a warning, and its
    export.json says "unverified" (InferenceEmbedder warns when it loads it).
    verify_sentences: what the int8 model is checked on, at least INT8_CHECK_MIN_SENTENCES sentences
    (raw strings, split by the model's tokenizer, or token lists); None: the sample corpus installed
    with the package (check_sentences()).
    options_file: the model's options.json, checked (check_exportable) and copied as it is; without
    it, the export's options.json is hdf5_weights.model_options(bilm)'s. A word or word+char model's
    input vocabulary is written beside it (vocab.txt, run_configs.write_input_vocabulary), which
    InferenceEmbedder reads to map tokens to word ids.
    quantize: 'int8' replaces model.onnx by its dynamically quantized form (quantize_onnx: the
    LSTMs' products in int8, the token representation float), after the float model is verified.
    The paddle program stays float32.
    -> dict(files=[names written], verified=verify_export's result with verify_int8's as
    'onnxruntime int8' ({} unverified), quantized=quantize_onnx's result or None).
    """
    check_quantizable(quantize, formats)
    if verify and quantize:
        verify_sentences = check_sentences() if verify_sentences is None else list(verify_sentences)
        if len(verify_sentences) < INT8_CHECK_MIN_SENTENCES:
            raise InputError(f'verify_sentences: {len(verify_sentences)} sentences; an int8 export is checked on at '
                             f'least {INT8_CHECK_MIN_SENTENCES}')
    options = read_json(options_file, 'options file') if options_file else None
    check_exportable(bilm.config, options, options_file or 'the model')
    tmp = _temp_dir_beside(output_dir, check_output_dir(output_dir), '.tmp')
    try:
        save_paddle_program(bilm, tmp)
        if 'onnx' in formats:
            save_onnx(tmp, bilm.config)
        if options_file:
            shutil.copyfile(options_file, os.path.join(tmp, OPTIONS_FILE))
        else:
            write_json_atomic(model_options(bilm), os.path.join(tmp, OPTIONS_FILE))
        if bilm.vocab is not None:  # a mode with a word embedding: its input vocabulary
            write_input_vocabulary(bilm.vocab, tmp)
        diffs = verify_export(bilm, tmp, CHECK_SENTENCES) if verify else {}
        quantized = quantize_onnx(tmp, **INT8_SETTINGS) if quantize else None
        if quantize and verify:
            diffs['onnxruntime int8'] = verify_int8(bilm, tmp, verify_sentences)
        if not verify:
            log.warning('%s: written unverified: its models were not compared with ELMoEmbedder (its %s says %r)',
                        output_dir, MANIFEST_FILE, UNVERIFIED)
        write_json_atomic({'verified': diffs if verify else UNVERIFIED,
                           'precision': quantized['description'] if quantized else 'float32'},
                          os.path.join(tmp, MANIFEST_FILE))
        files = sorted(os.listdir(tmp))
        _replace_dir(tmp, output_dir)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {'files': files, 'verified': diffs, 'quantized': quantized}


# The float check's sentences: short and long, a long word, non-ASCII bytes, one token (a word
# model maps the words its vocabulary lacks to <UNK>). The export computes the formula of the model,
# so a few sentences that reach every code path find a slip (test_export.py's slips).
CHECK_SENTENCES = [['The', 'first', 'sentence', '.'], ['Second', 'one', ',', 'a', 'little', 'longer', 'than',
                   'the', 'first', ',', 'with', 'antidisestablishmentarianism', '.'], ['中文', 'ünïcode'], ['x']]


# int8's error depends on each sentence's values, not on code paths: its worst token is a tail
# statistic, read on many real sentences (the sample corpus: 625 lines).
INT8_CHECK_MIN_SENTENCES = 200


def check_sentences(path=None):
    """The sentences an int8 export is checked on: the non-empty lines of `path` (UTF-8, one sentence
    per line; export-inference --verify_file), or of the sample corpus installed with the package
    -> list of str; InputError when there are fewer than INT8_CHECK_MIN_SENTENCES."""
    paths = [path] if path else [SAMPLE_TRAIN, SAMPLE_HELDOUT]
    sentences = [text.strip() for p in paths for _, _, text in iter_lines(p) if not is_blank(text)]
    if len(sentences) < INT8_CHECK_MIN_SENTENCES:
        raise InputError(f'{path or SAMPLE_TRAIN}: {len(sentences)} non-empty lines; an int8 export is checked on at least '
                         f'{INT8_CHECK_MIN_SENTENCES} sentences (one per line)')
    return sentences


# ELMoEmbedder and the exported model differ by float rounding only (BLAS summation order, fused
# kernels), and rounding scales with the magnitudes a layer's sums carry, not with each output: a
# trained model's highway pre-activations reach 100-200 and its token representations 10-50, and
# values near zero of the same layer inherit errors of that size. So each layer of each sentence is
# compared on its own scale: max |difference| <= VERIFY_TOL * max |value| (relative_differences).
# Measured (issue 37; 150 sentences, both runtimes): at most 1.5e-6 on the bundled model, 1.1e-6
# on a demo model trained 4 minutes, 6.8e-6 on random original-size models with a trained model's
# magnitudes (benchmarks/common.py: realistic_bilm), whose rounding the old per-element check
# (atol = rtol = 1e-5) refused. Slips in the same models move a layer by 0.3 (the forget bias
# dropped) to 0.8 (two gates swapped) of its largest value. 1e-4 keeps a ~15x margin over rounding.
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
    from paddle_elmo.embedder import ELMoEmbedder
    expected = ELMoEmbedder(bilm=bilm, stateful=False).embed_batch(sentences)
    diffs = {}
    for backend in BACKENDS:
        if backend == 'onnxruntime' and not os.path.exists(os.path.join(model_dir, ONNX_FILE)):
            continue
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
# states: every layer's worst token at cosine >= 0.99 with float32. Measured (issue 37,
# INT8_SETTINGS) against float32, worst token of 1,000 rt-polarity sentences: per-token cosine
# 0.9966 and 8.4e-2 of a layer's largest value on the previous bundled model (char input), 0.9998
# and 2.3e-2 on the original size (random weights with a trained model's magnitudes), 0.9992 /
# 3.8e-2 on a demo model trained 4 minutes, 0.9992 / 3.2e-2 and 0.9995 / 1.4e-2 on the test models
# (large_valued_bilm, the fixture); means >= 0.9993. On the sample corpus (issue 43): see
# tests/test_export.py's bundled-model test. The difference keeps its 3x margin.
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
    from paddle_elmo.embedder import ELMoEmbedder
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
