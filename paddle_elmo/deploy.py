"""The biLM as a self-contained model for deployment: a Paddle Inference program and ONNX.

    export_inference(bilm, 'elmo_inference')     # -> inference.json + inference.pdiparams, model.onnx,
                                                 #    options.json (see EXPORTED_FILES), vocab.txt (word input)
    embedder = InferenceEmbedder('elmo_inference', backend='paddle')   # or 'onnxruntime'
    embedder.encode([['Hello', 'world']])        # -> [[n_layers + 1, 2, 2 * projection_dim]], as ELMoEmbedder

The exported model takes what `dataset.InputMapper(config, vocab).batch(sentences)` returns (with
<S> and </S>), one input per id kind the model reads (input_names): `char_ids`, int64
[batch, time, max_characters_per_token], for a char model (exactly `dataset.CharMapper().batch`);
`word_ids`, int64 [batch, time] (the line of the export's vocab.txt + 1, <UNK>'s for an unknown
word, 0 = padding), for a word model; both, `word_ids` first, for word+char. It returns `layers`,
float32 [batch, n_layers + 1, time - 2, 2 * projection_dim] (boundaries removed, zeros at padding),
and `mask`, bool [batch, time - 2]. It is stateless (every sentence starts from a zero LSTM state)
and gives ELMoEmbedder(stateful=False)'s numbers (tests/test_export.py: within 1e-5).

Why a separate forward: BiLM's CPU path runs custom C++ ops and PyLayers (kernels.py) and plans its
work in NumPy (distinct tokens, length chunks, packing), none of which a static program can hold.
StaticBiLM computes the same function with Paddle ops only, on dynamic batch and time, reading the
BiLM's own parameters; each LSTM layer's time loop (both directions in one body) is a `while_loop`,
which paddle2onnx turns into an ONNX Loop.
"""
import json
import logging
import os
import shutil
import sys
import tempfile

import numpy as np

from paddle_elmo.runtime import ask_mkl_for_avx2, default_threads, paddle
import paddle.nn as nn
import paddle.nn.functional as F

from paddle_elmo.config import MODEL_FIELDS, OPTION_PATHS, ModelConfig
from paddle_elmo.token_ids import InputMapper
from paddle_elmo.tokenizers import model_tokenizer
from paddle_elmo.embedder import SentenceEmbedder
from paddle_elmo.hdf5_weights import model_options
from paddle_elmo.run_configs import VOCAB_FILE, read_input_vocabulary, read_json, read_model_config, write_input_vocabulary
from paddle_elmo.fileio import InputError

log = logging.getLogger(__name__)

CHAR_INPUT, WORD_INPUT = 'char_ids', 'word_ids'
OUTPUT_NAMES = ('layers', 'mask')
PROGRAM_PREFIX = 'inference'  # paddle.jit.save's path prefix inside the export directory
ONNX_FILE = 'model.onnx'
ONNX_OPSET = 13  # Loop, Split with sizes as an input; supported by every onnxruntime since 1.6
OPTIONS_FILE = 'options.json'
# What every export directory holds (Paddle 3.x saves PIR programs as JSON, not inference.pdmodel);
# a word or word+char model's also holds its input vocabulary, model_io's VOCAB_FILE (vocab.txt).
EXPORTED_FILES = (f'{PROGRAM_PREFIX}.json', f'{PROGRAM_PREFIX}.pdiparams', ONNX_FILE, OPTIONS_FILE)
BACKENDS = ('paddle', 'onnxruntime')

# The ModelConfig fields StaticBiLM computes (all of today's; `dropout` is training's only, and
# `tokenizer` is the text's: it travels in the export's options.json). A field added later is
# refused unless it holds its default, until StaticBiLM implements it.
IMPLEMENTED_FIELDS = frozenset({'token_input', 'word_dim', 'projection_dim', 'cell_dim', 'num_layers', 'cell_clip',
                                'proj_clip', 'use_skip_connections', 'char_embed_dim', 'cnn_filters', 'num_highways',
                                'activation', 'max_characters_per_token', 'dropout', 'tokenizer'})


def input_names(config):
    """The exported inputs of a model with ModelConfig `config`, in order: ('char_ids',),
    ('word_ids',) or ('word_ids', 'char_ids') (word+char: the word columns come first, as in
    the projection)."""
    return tuple(name for name, read in ((WORD_INPUT, config.has_words), (CHAR_INPUT, config.has_chars)) if read)


def check_exportable(config=None, options=None, source='options'):
    """Raise InputError (one line naming `source` and the setting) for what the export cannot compute.

    config: the model's ModelConfig. options: its options.json as read, when there is one: a key
    under `char_cnn`, `lstm` or `word_embedding` that ModelConfig does not read (and BiLM therefore
    ignores) may be another project's extension that changes the network, so the export refuses it
    by name rather than silently computing something else. A section that is absent (a word model
    has no `char_cnn`) or malformed is left to ModelConfig.from_options, which reads the model.
    """
    for section in ('char_cnn', 'lstm', 'word_embedding') if options is not None else ():
        values = options.get(section)
        if not isinstance(values, dict):
            continue
        known = {path[1] for path, _ in OPTION_PATHS.values() if path[0] == section}
        known |= {'n_characters'} if section == 'char_cnn' else set()
        unknown = sorted(set(values) - known)
        if unknown:
            raise InputError(f'{source}: option "{section}.{unknown[0]}" is not supported by the export '
                             f'(it knows {section}.{{{", ".join(sorted(known))}}})')
        embedding = values.get('embedding') if section == 'char_cnn' else None
        extra = sorted(set(embedding) - {'dim'}) if isinstance(embedding, dict) else []
        if extra:
            raise InputError(f'{source}: option "char_cnn.embedding.{extra[0]}" is not supported by the export')
    defaults = ModelConfig()
    for name in sorted(set(MODEL_FIELDS) - IMPLEMENTED_FIELDS) if config is not None else ():
        if getattr(config, name) != getattr(defaults, name):
            raise InputError(f'{source}: the export does not implement {name} = {getattr(config, name)!r}')


class StaticBiLM(nn.Layer):
    """BiLM's stateless forward in Paddle ops only, on dynamic batch and time: what is exported.

    Holds the BiLM's parameters (not copies). Computes the reference (../shared/REFERENCE-ELMO.md):
    the token representation as BiLM.token_embedding (char: the char CNN's max over all
    max_characters_per_token positions of the pre-activation, then the activation, highway,
    projection; word: the word embedding's row; word+char: the word row beside the highway output,
    then the projection), then the forward and backward LSTM stacks with projection, clipping and
    skip connections; layer 0 is [x; x].

    Padding is at the end of each row (InputMapper's layout), so steps past a row's length come
    after all of its real steps: the loop runs every row for `time` steps and the outputs at
    padding are zeroed, which gives the numbers of BiLM's packed run, where padding is never
    computed. The backward stack reads each row reversed within its own length.
    """

    def __init__(self, bilm):
        super().__init__()
        check_exportable(bilm.config)
        self.bilm = bilm  # a sublayer, so that jit.save finds the parameters under their own names
        self.cell_clip = bilm.config.cell_clip or None  # 0 / None: no clipping, as LstmStack
        self.proj_clip = bilm.config.proj_clip or None
        self.use_skip = bool(bilm.config.use_skip_connections)

    # ---- token representations -------------------------------------------------------------
    def token_embedding(self, char_ids=None, word_ids=None):
        """char_ids int64 [tokens, max_chars] (a model with chars), word_ids int64 [tokens] (one with
        words: vocabulary id + 1, 0 = padding) -> [tokens, projection_dim] (padding tokens too: the
        caller zeroes them). Each distinct char sequence of the batch goes through the char CNN once."""
        if char_ids is None:
            return self._word_rows(word_ids)
        if word_ids is None:
            return self._per_distinct_token(char_ids, self._encode_tokens)
        # word+char as BiLM: the highway output of each position's chars, the word row beside it
        # (word columns first), then the projection.
        features = self._per_distinct_token(char_ids, self._char_features)
        projection = self.bilm.char_encoder.projection
        return paddle.matmul(paddle.concat([self._word_rows(word_ids), features], axis=-1),
                             projection.weight) + projection.bias

    def _word_rows(self, word_ids):
        """word_ids int64 [tokens] (vocabulary id + 1, 0 = padding) -> their word embedding rows
        [tokens, word_embedding_dim]. Padding reads row 0, which forward zeroes with every padding
        position (BiLM's zero rows): no select here."""
        index = paddle.maximum(word_ids - 1, paddle.zeros([], dtype='int64'))
        return paddle.gather(self.bilm.word_embedding, index)

    def _per_distinct_token(self, char_ids, encode):
        """encode (char ids [n, max_chars] -> [n, dim]) on each distinct row of char_ids
        [tokens, max_chars] -> [tokens, dim]."""
        # On a float copy of the ids (exact: ids < 2^24): paddle2onnx 2.1 types Unique's output as
        # float whatever its input, and the ONNX model of an int64 unique fails to load.
        distinct, inverse = paddle.unique(char_ids.astype('float32'), return_inverse=True, axis=0)
        return paddle.gather(encode(distinct.astype('int64')), inverse.reshape([-1]))

    def _encode_tokens(self, char_ids):
        """char_ids int64 [tokens, max_chars] -> [tokens, projection_dim]: char CNN, highway, projection."""
        projection = self.bilm.char_encoder.projection
        return paddle.matmul(self._char_features(char_ids), projection.weight) + projection.bias

    def _char_features(self, char_ids):
        """char_ids int64 [tokens, max_chars] -> the highway output [tokens, n_filters].

        As CharEncoder: a window made only of PAD chars gives the same value for every token, so
        the windows that start after the last non-PAD char of every token here are represented by
        the first of them (same max, a fraction of the work: a batch's longest word is ~15 chars
        of 50). Padding tokens (all 0) are ignored in that count; their outputs are masked anyway.
        """
        enc = self.bilm.char_encoder
        positions = enc.max_chars
        not_pad = paddle.logical_and(char_ids != enc.pad_id, char_ids > 0).astype('int64')
        used = paddle.maximum(paddle.max(not_pad * paddle.arange(1, positions + 1, dtype='int64')),
                              paddle.ones([], dtype='int64'))  # 1 + position of the last non-PAD char
        n_chars = paddle.minimum(used + max(enc.widths), paddle.full([], positions, dtype='int64'))
        chars = F.embedding(char_ids[:, :n_chars], enc.char_embed.weight)  # [tokens, n_chars, char_dim]
        pooled = []
        for width, weight in zip(enc.widths, enc.conv_weights):
            n_windows = paddle.minimum(used + 1, paddle.full([], positions - width + 1, dtype='int64'))
            # Window k holds chars k .. k + width - 1, laid out width-major as the weight
            # [width * char_dim, n] (bilm-tf's [1, width, char_dim, n] flattened).
            windows = paddle.concat([chars[:, i:i + n_windows] for i in range(width)], axis=-1)
            # Max over positions of the pre-activation (the bias is the same at every position).
            pooled.append(paddle.max(paddle.matmul(windows, weight), axis=1))  # [tokens, n]
        x = enc.activation(paddle.concat(pooled, axis=-1) + paddle.concat(list(enc.conv_biases)))
        for highway in enc.highways:
            carry = F.sigmoid(paddle.matmul(x, highway.carry.weight) + highway.carry.bias)
            transform = F.relu(paddle.matmul(x, highway.transform.weight) + highway.transform.bias)
            x = carry * transform + (1.0 - carry) * x  # bilm-tf's carry gate multiplies the transform
        return x

    # ---- LSTMs -----------------------------------------------------------------------------
    def _step(self, layer, x_t, h, c):
        """One LSTM step: x_t [batch, P], h [batch, P], c [batch, D] -> (h, c)."""
        gates = paddle.matmul(paddle.concat([x_t, h], axis=-1), layer.W) + layer.bias()
        i, j, f, o = paddle.split(gates, 4, axis=-1)  # TensorFlow's gate order
        c = F.sigmoid(i) * F.tanh(j) + F.sigmoid(f) * c
        if self.cell_clip:
            c = paddle.clip(c, -self.cell_clip, self.cell_clip)
        h = paddle.matmul(F.sigmoid(o) * F.tanh(c), layer.W_P)
        if self.proj_clip:
            h = paddle.clip(h, -self.proj_clip, self.proj_clip)
        return h, c

    def _run_layers(self, forward_layer, backward_layer, xs):
        """Both directions' layer k over time-major inputs xs = (forward [time, batch, P], backward
        [time, batch, P], each row already in its direction's order) -> outputs, same shapes."""
        time, batch = paddle.shape(xs[0])[0], paddle.shape(xs[0])[1]
        h = paddle.zeros([batch, forward_layer.projection_dim], dtype=xs[0].dtype)
        c = paddle.zeros([batch, forward_layer.dim], dtype=xs[0].dtype)
        # Outputs grow by one step per iteration: paddle2onnx 2.1 cannot convert a tensor array
        # written inside a loop (its ONNX refers to a value of the loop body from outside).
        empty = paddle.zeros([0, batch, forward_layer.projection_dim], dtype=xs[0].dtype)

        def cond(t, *_):
            return t < time

        def body(t, h_f, c_f, h_b, c_b, out_f, out_b):
            h_f, c_f = self._step(forward_layer, paddle.gather(xs[0], t).squeeze(0), h_f, c_f)
            h_b, c_b = self._step(backward_layer, paddle.gather(xs[1], t).squeeze(0), h_b, c_b)
            out_f = paddle.concat([out_f, h_f.unsqueeze(0)])
            out_b = paddle.concat([out_b, h_b.unsqueeze(0)])
            return t + 1, h_f, c_f, h_b, c_b, out_f, out_b

        loop = [paddle.zeros([1], dtype='int64'), h, c, h.clone(), c.clone(), empty, empty.clone()]
        if paddle.in_dynamic_mode():
            # Eager (tests, checks): the same body as a Python loop. Paddle's eager while_loop
            # assigns each new value into the previous tensor, which warns when a shape grows.
            while bool(cond(*loop)):
                loop = body(*loop)
        else:
            loop = paddle.static.nn.while_loop(cond, body, loop)
        return loop[5], loop[6]

    # ---- the whole model -------------------------------------------------------------------
    def forward(self, ids, char_ids=None):
        """The inputs of input_names(config), with <S> and </S>: `ids` is the first (char_ids int64
        [batch, time, max_chars] of a char model, 0 = padding token; word_ids int64 [batch, time] of
        a word or word+char model, vocabulary id + 1, 0 = padding), `char_ids` word+char's second ->
        (layers float32 [batch, n_layers + 1, time - 2, 2 * projection_dim], mask bool [batch, time - 2])."""
        word_ids, char_ids = (ids, char_ids) if self.bilm.config.has_words else (None, ids)
        shape = paddle.shape(ids)
        batch, time = shape[0], shape[1]
        present = word_ids > 0 if word_ids is not None else paddle.any(char_ids > 0, axis=-1)
        lengths = present.astype('int64').sum(axis=1)  # [batch]
        steps = paddle.arange(time, dtype='int64').unsqueeze(0)  # [1, time]
        real = (steps < lengths.unsqueeze(1)).astype('float32').unsqueeze(-1)  # [batch, time, 1]
        max_chars = self.bilm.config.max_characters_per_token
        x = self.token_embedding(None if char_ids is None else char_ids.reshape([-1, max_chars]),
                                 None if word_ids is None else word_ids.reshape([-1]))
        x = x.reshape([batch, time, -1]) * real  # [batch, time, P], zeros at padding
        # Row b of the backward stream is row b reversed within its length (an involution: the
        # same gather puts the backward outputs back in sentence order).
        reverse = paddle.where(steps < lengths.unsqueeze(1), lengths.unsqueeze(1) - 1 - steps,
                               steps.expand([batch, time]))
        reverse = (reverse + paddle.arange(batch, dtype='int64').unsqueeze(1) * time).reshape([-1])

        def reorder(y):  # [batch, time, P] -> the same with each row reversed within its length
            return paddle.gather(y.reshape([batch * time, -1]), reverse).reshape([batch, time, -1])

        # Time-major for the loop; forward and backward streams in their own orders.
        streams = [x.transpose([1, 0, 2]), reorder(x).transpose([1, 0, 2])]
        layers = [paddle.concat([x, x], axis=-1)]
        for k, (fl, bl) in enumerate(zip(self.bilm.forward_stack.layers, self.bilm.backward_stack.layers)):
            outs = self._run_layers(fl, bl, streams)
            if self.use_skip and k > 0:
                outs = [o + s for o, s in zip(outs, streams)]
            streams = list(outs)
            forward_out = outs[0].transpose([1, 0, 2])
            backward_out = reorder(outs[1].transpose([1, 0, 2]))
            layers.append(paddle.concat([forward_out, backward_out], axis=-1) * real)
        # Drop <S> and </S>: positions 1 .. time - 2, and zero each row's </S> (now at length - 2).
        inner = paddle.stack(layers, axis=1)[:, :, 1:time - 1]  # [batch, L + 1, time - 2, 2P]
        mask = steps[:, :time - 2] < (lengths - 2).unsqueeze(1)  # [batch, time - 2]
        return inner * mask.astype('float32').unsqueeze(1).unsqueeze(-1), mask


# --------------------------------------------------------------------------------------------
# Writing the export
# --------------------------------------------------------------------------------------------

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
    with _quiet_native_output():
        paddle.jit.save(static, os.path.join(directory, PROGRAM_PREFIX), input_spec=spec)
    program_file = os.path.join(directory, f'{PROGRAM_PREFIX}.json')
    if not os.path.isfile(program_file):  # an old-IR program (FLAGS_enable_pir_api=0) is .pdmodel
        raise ExportError(f'paddle.jit.save wrote {sorted(os.listdir(directory))}, not {PROGRAM_PREFIX}.json: '
                          f'run with PIR on (the default of Paddle 3; FLAGS_enable_pir_api=1)')
    _name_program_outputs(program_file, OUTPUT_NAMES)


def save_onnx(directory, config):
    """directory/inference.json + .pdiparams -> directory/model.onnx with paddle2onnx; batch and
    time named as ONNX dimensions (of every input and output)."""
    try:
        import onnx
        import paddle2onnx
    except ImportError as e:
        raise ExportError(f'ONNX export needs paddle2onnx and onnx ({e}); pip install "paddle-elmo[onnx]", '
                          f'or --formats paddle') from None
    program = os.path.join(directory, f'{PROGRAM_PREFIX}.json')
    params = os.path.join(directory, f'{PROGRAM_PREFIX}.pdiparams')
    # optimize_tool='None': paddle2onnx's default (polygraphy) may pip-install packages at run time;
    # onnxruntime folds constants itself when it loads the model.
    try:
        with _quiet_native_output():
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


class _quiet_native_output:
    """Silence stdout/stderr at the file-descriptor level (Paddle's and paddle2onnx's C++ log there);
    what was written is logged (ERROR) if the block fails, and kept in .output."""

    def __enter__(self):
        sys.stdout.flush()
        sys.stderr.flush()
        self.file = tempfile.TemporaryFile()
        self.saved = [os.dup(1), os.dup(2)]
        os.dup2(self.file.fileno(), 1)
        os.dup2(self.file.fileno(), 2)
        return self

    def __exit__(self, *exc):
        sys.stdout.flush()
        sys.stderr.flush()
        for fd, saved in zip((1, 2), self.saved):
            os.dup2(saved, fd)
            os.close(saved)
        self.file.seek(0)
        self.output = self.file.read().decode(errors='replace')
        self.file.close()
        if exc[0] is not None and self.output.strip():
            log.error('the output of the step that failed:\n%s', self.output.rstrip())
        return False


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



def export_inference(bilm, output_dir, formats=('paddle', 'onnx'), verify_sentences=None, options_file=None):
    """Write `bilm` as a model that runs without this code: see the module docstring.

    output_dir: new, empty, or a previous export (replaced). Everything is written into a hidden
    temporary directory beside it, which is renamed into place when complete, so an interrupted or
    failed export leaves nothing under the name.
    formats: 'paddle' (inference.json + inference.pdiparams) is always written (the ONNX model is
    converted from it); 'onnx' adds model.onnx.
    verify_sentences: token lists to run through each written model and ELMoEmbedder(stateful=False)
    before the rename (verify_export): an ExportError if they differ by more than float rounding.
    options_file: the model's options.json, checked (check_exportable) and copied as it is; without
    it, the export's options.json is hdf5_weights.model_options(bilm)'s. A word or word+char model's
    input vocabulary is written beside it (vocab.txt, run_configs.write_input_vocabulary), which
    InferenceEmbedder reads to map tokens to word ids.
    -> dict(files=[names written], max_abs_diff={...}).
    """
    from paddle_elmo.fileio import write_json_atomic
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
        if bilm.config.has_words:
            write_input_vocabulary(bilm.vocab, tmp)
        diffs = verify_export(bilm, tmp, verify_sentences) if verify_sentences else {}
        files = sorted(os.listdir(tmp))
        _replace_dir(tmp, output_dir)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {'files': files, 'max_abs_diff': diffs}


# ELMoEmbedder and the exported model differ by float rounding only (BLAS summation order), which
# grows with the value: <= 1e-6 on the fixture and the original size (values within the clip of 3),
# 1.3e-5 on a token representation of 23.7 in the bundled model (5.6e-7 of it). A formula or
# conversion slip moves values by > 1e-3. So: |difference| <= atol + rtol * |value|, as np.allclose.
VERIFY_ATOL, VERIFY_RTOL = 1e-5, 1e-5


def verify_export(bilm, model_dir, sentences):
    """Max abs difference between each runtime on `model_dir` and ELMoEmbedder(stateful=False) on
    `sentences` -> {'paddle': d, 'onnxruntime': d}; ExportError beyond VERIFY_ATOL + VERIFY_RTOL * |value|."""
    from paddle_elmo.embedder import ELMoEmbedder
    expected = ELMoEmbedder(bilm=bilm, stateful=False).embed_batch(sentences)
    diffs = {}
    for backend in BACKENDS:
        if backend == 'onnxruntime' and not os.path.exists(os.path.join(model_dir, ONNX_FILE)):
            continue
        got = InferenceEmbedder(model_dir, backend=backend).embed_batch(sentences)
        diffs[backend] = max(float(np.abs(g - e).max(initial=0.0)) for g, e in zip(got, expected))
        if not all(np.allclose(g, e, rtol=VERIFY_RTOL, atol=VERIFY_ATOL) for g, e in zip(got, expected)):
            raise ExportError(f'the exported model run by {backend} differs from ELMoEmbedder by up to '
                              f'{diffs[backend]:.3g}, more than float rounding; the export is not written')
    return diffs


# --------------------------------------------------------------------------------------------
# Running an export (with this repository; README shows how without it)
# --------------------------------------------------------------------------------------------

class InferenceEmbedder(SentenceEmbedder):
    """An exported model (export_inference's directory) as an embedder: sentences in, numpy out.

    Same results and batching as ELMoEmbedder(stateful=False) (sentences grouped by length), run by
    Paddle Inference's predictor (backend='paddle'; onednn=False runs Paddle's own CPU kernels,
    matmuls on MKL) or onnxruntime (backend='onnxruntime'). threads: CPU threads (None: as
    ELMoEmbedder, the user's OMP_NUM_THREADS or the available cores). tokenizer: as ELMoEmbedder's
    (None: the one the export's options.json records). A word or word+char export maps tokens to
    word ids with its vocab.txt (`mapper`, a dataset.InputMapper).
    """

    stateful = False

    def __init__(self, model_dir, backend='paddle', batch_size=64, onednn=True, threads=None, tokenizer=None):
        if backend not in BACKENDS:
            raise InputError(f'backend must be one of {BACKENDS}, got {backend!r}')
        self.model_dir, self.backend, self.batch_size = model_dir, backend, batch_size
        if not os.path.isdir(model_dir):
            raise FileNotFoundError(f'{model_dir}: no such directory (export_inference.py writes one)')
        needed = [f'{PROGRAM_PREFIX}.json', f'{PROGRAM_PREFIX}.pdiparams'] if backend == 'paddle' else [ONNX_FILE]
        for name in needed + [OPTIONS_FILE]:
            if not os.path.isfile(os.path.join(model_dir, name)):
                raise FileNotFoundError(f'{os.path.join(model_dir, name)}: not found; {model_dir} is not an export '
                                        f'for {backend} (export_inference.py writes {", ".join(EXPORTED_FILES)})')
        self.config = read_model_config(os.path.join(model_dir, OPTIONS_FILE))
        vocab_file = os.path.join(model_dir, VOCAB_FILE)
        if self.config.has_words and not os.path.isfile(vocab_file):
            raise FileNotFoundError(f'{vocab_file}: not found; the export of a {self.config.token_input} model holds '
                                    f'its input vocabulary there (export_inference.py writes it)')
        self.tokenizer = model_tokenizer(self.config.tokenizer, tokenizer)
        self.mapper = InputMapper(self.config, read_input_vocabulary(self.config, model_dir, source=model_dir))
        threads = threads or default_threads()
        if backend == 'paddle':
            ask_mkl_for_avx2()  # before the predictor's first product (without oneDNN, MKL runs them)
            from paddle import inference
            config = inference.Config(*(os.path.join(model_dir, n) for n in needed))
            config.disable_glog_info()
            config.set_cpu_math_library_num_threads(threads)
            if onednn:
                config.enable_onednn()
            else:
                config.disable_onednn()
            self._predictor = inference.create_predictor(config)
        else:
            import onnxruntime
            session_options = onnxruntime.SessionOptions()
            session_options.intra_op_num_threads = threads
            self._session = onnxruntime.InferenceSession(os.path.join(model_dir, ONNX_FILE), session_options,
                                                         providers=['CPUExecutionProvider'])

    @property
    def dim(self):
        return 2 * self.config.projection_dim

    def run(self, char_ids=None, word_ids=None):
        """The export's inputs (input_names) as InputMapper.batch returns them, with <S> and </S>:
        char_ids int64 [batch, time, max_chars], word_ids int64 [batch, time] -> (layers, mask)
        numpy, as exported."""
        given = {CHAR_INPUT: char_ids, WORD_INPUT: word_ids}
        feed = {}
        for name in input_names(self.config):
            if given[name] is None:
                raise ValueError(f'{self.model_dir}: this export ({self.config.token_input} input) reads {name}: '
                                 f'make them with dataset.InputMapper')
            feed[name] = np.ascontiguousarray(given[name], dtype=np.int64)
        if self.backend == 'onnxruntime':
            return tuple(self._session.run(list(OUTPUT_NAMES), feed))
        for name, ids in feed.items():
            handle = self._predictor.get_input_handle(name)
            handle.reshape(list(ids.shape))
            handle.copy_from_cpu(ids)
        self._predictor.run()
        return tuple(self._predictor.get_output_handle(n).copy_to_cpu() for n in OUTPUT_NAMES)

    def _embed_token_lists(self, sentences):
        """One batch of token lists -> list of float32 [n_layers + 1, n_tokens, 2P], boundaries removed."""
        if not sentences:
            return []
        char_ids, word_ids, _ = self.mapper.batch(sentences)
        layers, _ = self.run(char_ids, word_ids)
        return [np.ascontiguousarray(layers[row, :, :len(s)]) for row, s in enumerate(sentences)]

    def reset_states(self):
        """Nothing to reset: the export is stateless."""
