"""The biLM in Paddle ops only (`StaticBiLM`), for export: the same function as BiLM on dynamic batch
and time, reading the BiLM's own parameters.

Why a separate forward: BiLM's CPU path runs custom C++ ops and PyLayers (kernels.py) and plans its
work in NumPy (distinct tokens, length chunks, packing), none of which a static program can hold.
Each LSTM layer's time loop (both directions in one body) is a `while_loop`, which paddle2onnx turns
into an ONNX Loop; as in LstmStack, the layer's input products x @ W_x for all steps are one product
before it, and only h @ W_h is in it (which also lets an int8 export quantize each apart: deploy).
`check_exportable` refuses a model setting StaticBiLM does not implement.
"""
import paddle
import paddle.nn as nn
import paddle.nn.functional as F

from paddle_elmo import layer_math
from paddle_elmo.config import CHAR_IDS, MODEL_FIELDS, OPTION_PATHS, WORD_IDS, ModelConfig
from paddle_elmo.fileio import InputError


# The ModelConfig fields StaticBiLM computes (all of today's; `dropout` is training's only, and
# `tokenizer` is the text's: it travels in the export's options.json). A field added later is
# refused unless it holds its default, until StaticBiLM implements it.
IMPLEMENTED_FIELDS = frozenset({'token_input', 'word_dim', 'projection_dim', 'cell_dim', 'num_layers', 'cell_clip',
                                'proj_clip', 'use_skip_connections', 'char_embed_dim', 'cnn_filters', 'num_highways',
                                'activation', 'max_characters_per_token', 'dropout', 'tokenizer'})


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

    Holds the BiLM's parameters (not copies). Computes what bilm-tf and AllenNLP compute:
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
            x = layer_math.highway_gate(paddle.matmul(x, highway.carry.weight), highway.carry.bias,
                                        paddle.matmul(x, highway.transform.weight), highway.transform.bias, x)
        return x

    # ---- LSTMs -----------------------------------------------------------------------------
    @staticmethod
    def _split_weight(layer):
        """layer.W [input_dim + P, 4 * dim] -> (W_x [input_dim, 4D], W_h [P, 4D]): its rows for the
        input and for the previous h (bilm-tf's layout), split once outside the time loop."""
        return paddle.split(layer.W, [layer.input_dim, layer.projection_dim])

    def _input_products(self, layer, x, w_input):
        """x [time, batch, input_dim] -> its part of every step's gates at once, x @ W_x
        [time, batch, 4 * dim], as LstmStack does: one large product before the time loop instead
        of one per step (and in an int8 export a product of its own, apart from h's)."""
        return paddle.matmul(x, w_input)

    def _step(self, layer, x_gates, h, c, w_hidden):
        """One LSTM step: x_gates [batch, 4 * dim] (the step's row of _input_products), h [batch, P],
        c [batch, D], w_hidden = W_h -> (h, c). The bias is added to h's product (onnxruntime
        fuses it into the product, int8 or not). The step is layer_math's, as BiLM's off the C++ kernels."""
        return layer_math.lstm_step(x_gates, h, c, w_hidden, layer.W_P, self.cell_clip, self.proj_clip,
                                    hidden_bias=layer.bias())

    def _run_layers(self, forward_layer, backward_layer, xs):
        """Both directions' layer k over time-major inputs xs = (forward [time, batch, P], backward
        [time, batch, P], each row already in its direction's order) -> outputs, same shapes."""
        time, batch = paddle.shape(xs[0])[0], paddle.shape(xs[0])[1]
        h = paddle.zeros([batch, forward_layer.projection_dim], dtype=xs[0].dtype)
        c = paddle.zeros([batch, forward_layer.dim], dtype=xs[0].dtype)
        # Outputs grow by one step per iteration: paddle2onnx 2.1 cannot convert a tensor array
        # written inside a loop (its ONNX refers to a value of the loop body from outside).
        empty = paddle.zeros([0, batch, forward_layer.projection_dim], dtype=xs[0].dtype)
        (wx_f, wh_f), (wx_b, wh_b) = self._split_weight(forward_layer), self._split_weight(backward_layer)
        gates = [self._input_products(forward_layer, xs[0], wx_f), self._input_products(backward_layer, xs[1], wx_b)]

        def cond(t, *_):
            return t < time

        def body(t, h_f, c_f, h_b, c_b, out_f, out_b):
            h_f, c_f = self._step(forward_layer, paddle.gather(gates[0], t).squeeze(0), h_f, c_f, wh_f)
            h_b, c_b = self._step(backward_layer, paddle.gather(gates[1], t).squeeze(0), h_b, c_b, wh_b)
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
    def forward(self, ids, second=None):
        """The inputs of input_names(config) (config.input_mode.reads), in that order, with <S> and
        </S>: char_ids int64 [batch, time, max_chars] (0 = padding token), word_ids int64 [batch,
        time] (vocabulary id + 1, 0 = padding); word+char's are (word_ids, char_ids) ->
        (layers float32 [batch, n_layers + 1, time - 2, 2 * projection_dim], mask bool [batch, time - 2])."""
        given = dict(zip(self.bilm.config.input_mode.reads, (ids, second)))
        word_ids, char_ids = given.get(WORD_IDS), given.get(CHAR_IDS)
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
        # Drop <S> and </S> as remove_sentence_boundaries does -> [batch, L + 1, time - 2, 2P], mask.
        return layer_math.drop_boundaries(paddle.stack(layers, axis=1), lengths, time, axis=2)
