"""Writing an exported model: a Paddle Inference program and ONNX, optionally int8, verified.

    export_inference('checkpoints')              # or a BiLM, a LoadedModel -> inference.json + inference.pdiparams, model.onnx,
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
int8 tolerance, on at least 200 sentences: the model's own held-out sample, or the caller's), and its manifest
(export.json) records the checks' results, or that the caller skipped them (verify=False: a
warning, and "unverified", which InferenceEmbedder reports). The program is static_bilm.StaticBiLM's.
The steps have modules of their own: the checks export_checks, the directory export_dirs, int8
quantize (with onnx_graph, the graph edits); this one converts and runs them in order.
"""
import json
import logging
import os
import shutil

import paddle

from paddle_elmo.export.export_checks import (CHECK_SENTENCES, INT8_CHECK_MIN_SENTENCES, check_sentences,
                                              default_verify_file, verify_export, verify_int8)
from paddle_elmo.export.export_dirs import check_output_dir, replace_dir, temp_dir_beside
from paddle_elmo.export.export_format import (CHAR_INPUT, MANIFEST_FILE, ONNX_FILE, ONNX_OPSET, OPTIONS_FILE,
                                              OUTPUT_NAMES, PROGRAM_PREFIX, UNVERIFIED, WORD_INPUT, ExportError,
                                              input_names, quiet_native_output)
from paddle_elmo.fileio import InputError, require_package, write_json_atomic
from paddle_elmo.model.config import ModelConfig
from paddle_elmo.files.model_io import resolve_model
from paddle_elmo.export.onnx_graph import drop_unused_constants
from paddle_elmo.export.quantize import INT8_SETTINGS, SEVEN_BIT_WEIGHTS, check_quantizable, quantize_onnx
from paddle_elmo.files.run_configs import VOCAB_FILE, write_input_vocabulary
from paddle_elmo.export.static_bilm import StaticBiLM, check_exportable

# Kept importable from here, where they were before the checks, the directory and int8 had modules
# of their own (tests, benchmarks and users import them from paddle_elmo.export.deploy).
from paddle_elmo.export.export_checks import (INT8_MIN_COSINE, INT8_REL_TOL, VERIFY_TOL,  # noqa: F401
                                              relative_differences, token_cosines)
from paddle_elmo.export.export_format import EXPORTED_FILES  # noqa: F401

log = logging.getLogger(__name__)


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
    drop_unused_constants(model.graph)
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


def exported_options(model):
    """What an export of LoadedModel `model` writes as its options.json: None for the file as it is
    (copied), or, when the model's tokenizer is not the one the file records (a named release's,
    from model_names.MODELS), the file's options with it; for a model without an options.json of
    bilm-tf's (an ELMoForManyLangs directory, an in-memory BiLM), the options it was read into or
    made of (hdf5_weights.model_options)."""
    if model.options_file is None:  # an in-memory BiLM: the options made of it, whole
        return model.options
    if model.weights_reader is None and ModelConfig.from_options(model.options).tokenizer == model.config.tokenizer:
        return None
    return {**model.options, 'tokenizer': model.config.tokenizer}


def quantized_and_checked(bilm, directory, sentences):
    """directory/model.onnx quantized to int8 (INT8_SETTINGS) and, given `sentences`, checked against `bilm`
    (verify_int8). Where the check fails, the float model is quantized again with 7-bit weights
    (SEVEN_BIT_WEIGHTS: this CPU's int8 products may overflow 8-bit ones) and checked; a failure then is the
    export's -> (quantize_onnx's result, the check or None)."""
    if sentences is None:
        return quantize_onnx(directory, **INT8_SETTINGS), None
    float_copy = os.path.join(directory, f'.float32.{ONNX_FILE}')
    shutil.copyfile(os.path.join(directory, ONNX_FILE), float_copy)
    try:
        quantized = quantize_onnx(directory, **INT8_SETTINGS)
        try:
            return quantized, verify_int8(bilm, directory, sentences)
        except ExportError as e:
            shutil.copyfile(float_copy, os.path.join(directory, ONNX_FILE))
            quantized = quantize_onnx(directory, **SEVEN_BIT_WEIGHTS)
            check = verify_int8(bilm, directory, sentences)
            log.warning('int8 with 8-bit weights failed its check here (%s); with 7-bit weights it passes (worst '
                        'token cosine %.4f): on a CPU without VNNI int8 products overflow 8-bit weights', e,
                        check['min_cosine'])
            return quantized, check
    finally:
        os.remove(float_copy)


def export_inference(model, output_dir, formats=('paddle', 'onnx'), verify=True, verify_sentences=None,
                     quantize=None):
    """Write `model` as a model that runs without this code: see the module docstring.

    model: anything model_io.resolve_model takes: a BiLM (exported as it is, with the options.json
    hdf5_weights.model_options makes of it), a LoadedModel, a name, a directory, a checkpoint prefix
    (loaded here), whose options.json as read is checked (check_exportable: a key the export does not
    implement is refused by name) and written with the tokenizer it records. A word or word+char
    model's input vocabulary is written beside it (vocab.txt, run_configs.write_input_vocabulary),
    which InferenceEmbedder reads to map tokens to word ids.

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
    (raw strings, split by the model's tokenizer, or token lists); None: the model's own held-out
    sample beside its options.json, else the English one for an English tokenizer
    (export_checks.default_verify_file; a BiLM has no options.json: the English one or an error).
    quantize: 'int8' replaces model.onnx by its dynamically quantized form (quantize_onnx: the
    LSTMs' products in int8, the token representation float), after the float model is verified.
    The paddle program stays float32.
    -> dict(files=[names written], verified=verify_export's result with verify_int8's as
    'onnxruntime int8' ({} unverified), quantized=quantize_onnx's result or None).
    """
    check_quantizable(quantize, formats)
    model = resolve_model(model)  # its options.json read; its weights after the checks
    if verify and quantize:
        # its held-out sample is beside its options.json (an in-memory BiLM has none)
        verify_sentences = (check_sentences(default_verify_file(model.options_file, model.config.tokenizer),
                                            model.config.tokenizer)
                            if verify_sentences is None else list(verify_sentences))
        if len(verify_sentences) < INT8_CHECK_MIN_SENTENCES:
            raise InputError(f'verify_sentences: {len(verify_sentences)} sentences; an int8 export is checked on at '
                             f'least {INT8_CHECK_MIN_SENTENCES}')
    check_exportable(model.config, model.options, model.options_file or model.name)
    bilm, options = model.load(), exported_options(model)  # loaded after the checks: a large model is slow
    tmp = temp_dir_beside(output_dir, check_output_dir(output_dir), '.tmp')
    try:
        save_paddle_program(bilm, tmp)
        if 'onnx' in formats:
            save_onnx(tmp, bilm.config)
        if options is None:
            shutil.copyfile(model.options_file, os.path.join(tmp, OPTIONS_FILE))
        else:
            write_json_atomic(options, os.path.join(tmp, OPTIONS_FILE))
        if bilm.vocab is not None:  # a mode with a word embedding: its input vocabulary
            write_input_vocabulary(bilm.vocab, tmp)
        diffs = verify_export(bilm, tmp, CHECK_SENTENCES) if verify else {}
        quantized = None
        if quantize:
            quantized, int8_check = quantized_and_checked(bilm, tmp, verify_sentences if verify else None)
            diffs.update({'onnxruntime int8': int8_check} if verify else {})
        if not verify:
            log.warning('%s: written unverified: its models were not compared with ELMoEmbedder (its %s says %r)',
                        output_dir, MANIFEST_FILE, UNVERIFIED)
        write_json_atomic({'verified': diffs if verify else UNVERIFIED,
                           'precision': quantized['description'] if quantized else 'float32'},
                          os.path.join(tmp, MANIFEST_FILE))
        files = sorted(os.listdir(tmp))
        replace_dir(tmp, output_dir)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {'files': files, 'verified': diffs, 'quantized': quantized}
