"""Random biLMs with a trained model's magnitudes (`realistic_bilm`): a model of any size whose
weights are drawn, then scaled until each product is as large as a trained model's, so that an
export's float rounding (export_checks' tolerances), its int8 form or a speed can be checked at a
size no file ships (benchmarks/bench_export.py, tests/test_export.py). The magnitudes are a
trained char model's, kept as numbers (char_model_magnitudes.json beside this module).
"""
import json
import os


def _reference_name(name, known):
    """A parameter name of a BiLM of any size -> the name in `known` (the reference's parameters) it
    takes its statistics from: an index past the reference's (char CNN width 6, a second highway,
    a third LSTM layer) takes the reference's last one."""
    parts = name.split('.')
    for i, part in enumerate(parts):
        while part.isdigit() and int(part) > 0 and '.'.join(parts[:i] + [part]) not in {
                '.'.join(k.split('.')[:i + 1]) for k in known}:
            part = str(int(part) - 1)
        parts[i] = part
    return '.'.join(parts)


# Sentences on which realistic_bilm matches the reference's pre-activations: short and long, a
# long word, non-ASCII bytes (export-inference's check sentences and a few more).
CALIBRATION_SENTENCES = [['The', 'first', 'sentence', '.'], ['Second', 'one', ',', 'a', 'little', 'longer', 'than',
                         'the', 'first', ',', 'with', 'antidisestablishmentarianism', '.'], ['中文', 'ünïcode'],
                         ['x'], 'It was a dark and stormy night ; the rain fell in torrents .'.split(),
                         'Stocks rose 3.5 % on Monday after the Federal Reserve held rates .'.split()]


def preactivation_stds(bilm, sentences=CALIBRATION_SENTENCES):
    """The std of each weight matrix's product on `sentences`, stateless (what the weight scales):
    {parameter name: std}. Char CNN: the max-pooled products of each width; highway: carry and
    transform; projection; LSTM: the gates (W) and the projection before its clip (W_P). The
    products are the export's (StaticBiLM and its token layer, layer_math.TokenOps), recorded
    through their hooks; the char encoder's on every token of the sentences, repeats included."""
    import numpy as np
    import paddle
    from paddle_elmo.model import layer_math
    from paddle_elmo.export.static_bilm import StaticBiLM
    from paddle_elmo.text.token_ids import CharMapper
    stds, products = {}, {}
    names = {id(layer): f'{stack}.layers.{k}' for stack in ('forward_stack', 'backward_stack')
             for k, layer in enumerate(getattr(bilm, stack).layers)}

    class RecordingOps(layer_math.TokenOps):  # the export's token layer, each product's std recorded
        filters = highways = 0

        def max_over(self, x):
            pooled = layer_math.TokenOps.max_over(x)
            stds[f'char_encoder.conv_weights.{self.filters}'] = float(pooled.std())
            self.filters += 1
            return pooled

        def highway_gate(self, carry, carry_bias, transform, transform_bias, x):
            stds[f'char_encoder.highways.{self.highways}.carry.weight'] = float(carry.std())
            stds[f'char_encoder.highways.{self.highways}.transform.weight'] = float(transform.std())
            self.highways += 1
            return layer_math.highway_gate(carry, carry_bias, transform, transform_bias, x)

        def project(self, x, layer):
            product = paddle.matmul(x, layer.weight)
            stds['char_encoder.projection.weight'] = float(product.std())
            return self.add_bias(product, layer.bias)

    class RecordingBiLM(StaticBiLM):  # the exported step, its two products recorded
        def lstm_step(self, layer, x_gates, h, c, w_hidden):
            name = names[id(layer)]
            products.setdefault(name + '.W', []).append((x_gates + paddle.matmul(h, w_hidden)).numpy())
            h, c = layer_math.lstm_step(x_gates, h, c, w_hidden, layer.W_P, self.cell_clip, None,
                                        hidden_bias=layer.bias())
            products.setdefault(name + '.W_P', []).append(h.numpy())
            return (paddle.clip(h, -self.proj_clip, self.proj_clip) if self.proj_clip else h), c

    ids = CharMapper().batch(sentences)[0]
    with paddle.no_grad():
        tokens = paddle.to_tensor(ids.reshape(-1, ids.shape[-1])[(ids > 0).any(-1).reshape(-1)])
        bilm.char_encoder(tokens, RecordingOps())
        RecordingBiLM(bilm)(paddle.to_tensor(ids))
    stds.update({name: float(np.concatenate(v).std()) for name, v in products.items()})
    return stds


# A trained char model's magnitudes: each parameter's mean and std and each product's std
# (preactivation_stds), from the char model bundled until 2026-11-25 (one epoch of lm-corpus, the
# budget preset). Kept as numbers because the bundled model now reads words, and realistic_bilm
# draws char models.
CHAR_MODEL_MAGNITUDES = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'char_model_magnitudes.json')


def char_model_magnitudes(reference=None):
    """-> ({parameter name: (mean, std)}, {product name: std}) of the char BiLM `reference`, or
    CHAR_MODEL_MAGNITUDES' when it is None."""
    if reference is None:
        with open(CHAR_MODEL_MAGNITUDES, encoding='utf-8') as f:
            saved = json.load(f)
        return {n: tuple(v) for n, v in saved['parameters'].items()}, saved['products']
    params = {n: (float(p.numpy().mean()), float(p.numpy().std())) for n, p in reference.named_parameters()}
    return params, preactivation_stds(reference)


def realistic_bilm(config, seed=0, reference=None, rounds=4):
    """A char BiLM of ModelConfig `config` whose weights are drawn independently with a trained
    model's magnitudes (reference: a char BiLM; default: CHAR_MODEL_MAGNITUDES, those of the char
    model bundled until 2026-11-25, one epoch of lm-corpus).

    Each parameter ~ Normal(mean, std) of the matching parameter of `reference` (an index the
    reference lacks, e.g. char CNN width 7, takes its last one); then each weight matrix is scaled,
    `rounds` times, so that its product's std on CALIBRATION_SENTENCES is the reference's
    (preactivation_stds). Why calibrate: independent draws with a trained matrix's std give far
    larger products in a wider layer, and an LSTM with such gates is chaotic (rounding in one step
    flips later clipped outputs: ELMoEmbedder disagrees with itself across batch sizes by as much as
    a layer's values), which no trained model is; the trained products are what sets the values
    float rounding acts on.
    """
    import numpy as np
    import paddle
    from paddle_elmo.runtime import ask_mkl_for_fast_path
    from paddle_elmo.model.bilm import BiLM
    ask_mkl_for_fast_path()  # before our first matmul fixes MKL's code path (embedders made later warn)
    stats, target = char_model_magnitudes(reference)
    rng = np.random.default_rng(seed)
    paddle.seed(seed)
    bilm = BiLM(config)
    for name, param in bilm.named_parameters():
        if '_stack.' in name:
            continue  # the LSTMs keep BiLM's initialization: see the docstring
        mean, std = stats[_reference_name(name, stats)]
        drawn = rng.normal(mean, std, size=param.shape).astype('float32')
        if name == 'char_encoder.char_embed.weight':
            drawn[0] = 0.0  # the padding row stays zero, as loaded models have it
        param.set_value(drawn)
    params = dict(bilm.named_parameters())
    for _ in range(rounds):
        for name, std in preactivation_stds(bilm).items():
            if '_stack.' in name:
                continue
            goal = target[_reference_name(name, target)]
            if std > 0:
                params[name].set_value(params[name].numpy() * np.float32(goal / std))
    return bilm
