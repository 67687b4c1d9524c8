"""The biLM in Paddle ops only (`StaticBiLM`), for export: the same function as BiLM on dynamic batch
and time, reading the BiLM's own parameters.

Why a separate forward: BiLM's CPU path runs custom C++ ops and PyLayers (kernels.py) and plans its
work in NumPy (distinct tokens, length chunks, packing), none of which a static program can hold.
Each LSTM layer's time loop (both directions in one body) is a `while_loop`, which paddle2onnx turns
into an ONNX Loop; as in LstmStack, the layer's input products x @ W_x for all steps are one product
before it, and only h @ W_h is in it (which also lets an int8 export quantize each apart: deploy).
The token representation is the token mode's own (token_modes.py), run on layer_math.TokenOps, the
token layer's steps in Paddle ops only. `check_exportable` refuses a model setting StaticBiLM does
not implement.
"""
import paddle
import paddle.nn as nn

from paddle_elmo.model import layer_math
from paddle_elmo.model.config import MODEL_FIELDS, OPTION_PATHS, ModelConfig
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

    ops = layer_math.TokenOps()  # the token layer's steps in Paddle ops only

    def __init__(self, bilm):
        super().__init__()
        check_exportable(bilm.config)
        self.bilm = bilm  # a sublayer, so that jit.save finds the parameters under their own names
        self.cell_clip = bilm.config.cell_clip or None  # 0 / None: no clipping, as LstmStack
        self.proj_clip = bilm.config.proj_clip or None
        self.use_skip = bool(bilm.config.use_skip_connections)

    # ---- token representations -------------------------------------------------------------
    def token_embedding(self, ids):
        """ids: {name in config.input_mode.reads: int64 ids flattened to [tokens] (word ids: vocabulary
        id + 1, 0 = padding) or [tokens, max_chars] (char ids)} -> [tokens, projection_dim] (padding
        tokens too: the caller zeroes them): the mode's representation (token_modes.py) in Paddle
        ops only (layer_math.TokenOps). Each distinct char sequence goes through the char CNN once."""
        return self.bilm.config.input_mode.embed(self.bilm, ids, self.ops)

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

    def lstm_step(self, layer, x_gates, h, c, w_hidden):
        """One LSTM step of `layer` (an LstmLayer): x_gates [batch, 4 * dim] (the step's row of
        _input_products), h [batch, P], c [batch, D], w_hidden = W_h -> (h, c). The bias is added to
        h's product (onnxruntime fuses it into the product, int8 or not). The step is layer_math's,
        as BiLM's off the C++ kernels.

        The public hook of the time loop: a subclass that overrides it sees (and may record or
        change) every step the export computes, e.g. benchmarks' product statistics or a test's
        deliberate slip."""
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
            h_f, c_f = self.lstm_step(forward_layer, paddle.gather(gates[0], t).squeeze(0), h_f, c_f, wh_f)
            h_b, c_b = self.lstm_step(backward_layer, paddle.gather(gates[1], t).squeeze(0), h_b, c_b, wh_b)
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
        reads = self.bilm.config.input_mode.reads
        given = dict(zip(reads, (ids, second)))
        shape = paddle.shape(ids)
        batch, time = shape[0], shape[1]
        # A token is real when its word id (or any char id) is not 0: reads[0] says which.
        present = ids > 0 if len(ids.shape) == 2 else paddle.any(ids > 0, axis=-1)
        lengths = present.astype('int64').sum(axis=1)  # [batch]
        steps = paddle.arange(time, dtype='int64').unsqueeze(0)  # [1, time]
        real = (steps < lengths.unsqueeze(1)).astype('float32').unsqueeze(-1)  # [batch, time, 1]
        x = self.token_embedding({name: given[name].reshape([-1, *given[name].shape[2:]]) for name in reads})
        x = x.reshape([batch, time, -1]) * real  # [batch, time, P], zeros at padding
        # Row b of the backward stream is row b reversed within its length (an involution: the
        # same gather puts the backward outputs back in sentence order).
        reverse = layer_math.reversed_steps(steps.expand([batch, time]), lengths.unsqueeze(1), paddle.where)
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
