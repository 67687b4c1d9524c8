"""Export the biLM as a model that runs without this code: Paddle Inference and ONNX.

    paddle-elmo export-inference --output_dir elmo_inference                   # the bundled model
    paddle-elmo export-inference --options_file options.json --weight_file weights.hdf5 --output_dir elmo_inference
    paddle-elmo export-inference --init_from_ckpt checkpoints/final --output_dir elmo_inference
    paddle-elmo export-inference --options_file options.json --weight_file weights.hdf5 --quantize int8 \
        --output_dir elmo_int8                                                 # model.onnx in int8 (onnxruntime)
    paddle-elmo export-inference --options_file options.json --weight_file weights.hdf5 --vocab_file vocab.txt \
        --output_dir elmo_inference                                            # a bilm-tf word model

Writes OUTPUT_DIR/inference.json + inference.pdiparams (paddle.jit.save's program, for
paddle.inference's predictor), OUTPUT_DIR/model.onnx (paddle2onnx, for onnxruntime),
OUTPUT_DIR/options.json and, for a word or word+char model, OUTPUT_DIR/vocab.txt (its input
vocabulary). Inputs, with <S> and </S> (what token_ids.InputMapper(...).batch returns): `char_ids`
int64 [batch, time, max_characters_per_token] for a char model, `word_ids` int64 [batch, time]
(vocab.txt line + 1, 0 = padding) for a word model, both for word+char; outputs `layers` float32
[batch, n_layers + 1, time - 2, 2 * projection_dim] and `mask` bool [batch, time - 2]. Before the
directory appears, both are run on a few sentences and compared with ELMoEmbedder(stateful=False).
docs/DEPLOYING.md shows how to run them without this repository.
"""
import argparse

from paddle_elmo.cli.arguments import Switch, output_directory, parser
from paddle_elmo.cli.model_flags import add_model_source, model_source
from paddle_elmo.cli.runner import run
from paddle_elmo.fileio import InputError

FORMATS = ('paddle', 'onnx')


def formats(text):
    """--formats: 'paddle' or 'paddle,onnx' (the ONNX model is converted from the Paddle program) -> list."""
    names = [name.strip() for name in text.split(',') if name.strip()]
    unknown = [name for name in names if name not in FORMATS]
    if unknown or 'paddle' not in names:
        raise argparse.ArgumentTypeError(f'expected paddle or paddle,onnx, got {text!r}')
    return [name for name in FORMATS if name in names]


def build_parser():
    p = parser(__doc__.split('\n')[0])
    p.add_argument('--output_dir', required=True, type=output_directory,
                   help='directory to write (new: made, with its parents; empty; or a previous export, which is '
                   'replaced)')
    add_model_source(p, bundled_default=True)
    p.add_argument('--formats', type=formats, default='paddle,onnx', metavar='paddle[,onnx]',
                   help='what to write, comma-separated: paddle (the Paddle Inference program, always written), '
                   'onnx (also model.onnx, converted from it)')
    p.add_argument('--quantize', choices=['int8'], default=None,
                   help='int8: model.onnx dynamically quantized (the LSTMs\' products in int8, for onnxruntime; '
                   'verified at an int8 tolerance); default: none (float32)')
    p.add_argument('--verify', action=Switch, default=True,
                   help='run the written models against ELMoEmbedder before the directory appears (off: a warning, '
                   'and export.json records "unverified", which embed reports)')
    p.add_argument('--verify_file', help='--quantize int8: the sentences the int8 model is checked on, one per line, '
                   'at least 200 (default: the held-out sample the model ships, heldout_sample.txt beside its '
                   'options.json; else, for an English tokenizer (moses, whitespace), the bundled English model\'s; '
                   'required for any other)')
    return p


def main(argv=None):
    a = build_parser().parse_args(argv)
    source = model_source(a)
    from paddle_elmo.export.export_checks import CHECK_SENTENCES, check_sentences, default_verify_file
    from paddle_elmo.export.export_dirs import check_output_dir
    from paddle_elmo.export.quantize import check_quantize_setting
    # Everything that can be checked before Paddle's import and the loading of what may be a large model: the
    # flags, the output's place, the sentences (export_inference checks the packages that write the formats).
    if a.verify_file and not (a.quantize and a.verify):
        raise InputError('--verify_file: the sentences an int8 model is checked on; give it with --quantize int8 '
                         '(and without --no_verify)')
    check_quantize_setting(a.quantize, a.formats)
    check_output_dir(a.output_dir)
    verify_file = a.verify_file  # given only with --quantize int8 and verification (checked above)
    if a.quantize and a.verify and not verify_file:  # the model's own sentences, or English for English
        verify_file = default_verify_file(source.options_file, source.config.tokenizer)
    sentences = check_sentences(verify_file, source.config.tokenizer) if verify_file else None
    from paddle_elmo.export.deploy import export_inference
    import paddle
    paddle.set_device('cpu')
    # A failed conversion or check (ExportError) is a runtime failure: runner.run's one line, exit 1.
    result = export_inference(source, a.output_dir, formats=a.formats, verify=a.verify, verify_sentences=sentences,
                              quantize=a.quantize)
    print(f'wrote {a.output_dir}: {", ".join(result["files"])}')
    if result['quantized']:
        print(f'  model.onnx is {result["quantized"]["description"]}')
    for backend, diff in result['verified'].items():  # the float model.onnx's first, then the int8 one's
        if backend == 'onnxruntime int8':
            worst = ', '.join(f'{c:.4f}' for c in diff['min_cosine_per_layer'])
            print(f'  onnxruntime, int8: per-token cosine with ELMoEmbedder >= {diff["min_cosine"]:.4f} on '
                  f'{diff["sentences"]} sentences of {verify_file} (worst per layer {worst}; mean '
                  f'{diff["mean_cosine"]:.5f}), max '
                  f'|difference| {diff["max_rel_diff"]:.2g} of a layer\'s largest value')
            continue
        print(f'  {backend}: max |difference| from ELMoEmbedder {diff["max_abs_diff"]:.2g} '
              f'({diff["max_rel_diff"]:.2g} of a layer\'s largest value) on {len(CHECK_SENTENCES)} sentences')


if __name__ == '__main__':
    run(main)
