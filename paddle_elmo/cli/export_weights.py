"""Export a checkpoint of ours to the bilm-tf / AllenNLP format (options.json + weights.hdf5).

    paddle-elmo export-weights --model checkpoints/final --output_dir elmo_export

The files load in AllenNLP (`Elmo(options_file, weight_file, ...)`) and in bilm-tf. When the
checkpoint holds a softmax, it is added as `softmax/W` and `softmax/b` (both readers ignore them;
paddle-elmo eval uses them for perplexity) unless --no_softmax: embeddings do not need it, and for a
100k vocabulary it is most of the file. --softmax_dtype float16 halves the softmax's size (the bundled
models ship theirs so: it is read back as float32, and its rounding barely moves a perplexity).
"""
import os

from paddle_elmo.cli.arguments import Switch, output_directory, parser
from paddle_elmo.cli.runner import run
from paddle_elmo.fileio import InputError


def build_parser():
    p = parser(__doc__.split('\n')[0])
    p.add_argument('--model', metavar='DIR_OR_PREFIX', help='the checkpoint: a checkpoint directory (its final or '
                   'latest step) or a checkpoint prefix DIR/N; or an ELMoForManyLangs model directory (its '
                   'char.dic / word.dic are written beside, for this toolkit: AllenNLP and bilm-tf read bytes)')
    p.add_argument('--init_from_ckpt', help='the same as --model DIR/N (a checkpoint prefix without suffix, e.g. '
                   'checkpoints/10000; the directory holds options.json), kept because the PaddleNLP example '
                   'named its checkpoints so')
    p.add_argument('--output_dir', required=True, type=output_directory,
                   help='directory for options.json and weights.hdf5 (made if needed)')
    p.add_argument('--softmax', action=Switch, default=True,
                   help='write the checkpoint\'s softmax too (off: enough for embeddings and fine-tuning, not for '
                   'paddle-elmo eval or paddle-elmo predict)')
    p.add_argument('--softmax_dtype', choices=['float32', 'float16'], default='float32',
                   help='storage of softmax/W and softmax/b (float16: half the size; read back as float32)')
    return p


def main(argv=None):
    a = build_parser().parse_args(argv)
    model = checkpoint_model(a)
    from paddle_elmo.files.hdf5_weights import export_weights
    import paddle
    paddle.set_device('cpu')
    bilm, softmax = model.load_with_softmax() if a.softmax else (model.load(), None)
    if softmax is not None:
        softmax = tuple(array.astype(a.softmax_dtype) for array in softmax)
    export_weights(bilm, a.output_dir, softmax)
    print(f'wrote {os.path.join(a.output_dir, "options.json")} and {os.path.join(a.output_dir, "weights.hdf5")}')


def checkpoint_model(a):
    """The checkpoint --model or --init_from_ckpt names -> model_io.LoadedModel; InputError for none,
    both, or a model that is not a checkpoint or an ELMoForManyLangs directory (bilm-tf files are
    already this format)."""
    if bool(a.model) == bool(a.init_from_ckpt):
        raise InputError('give the checkpoint to export: --model DIR_OR_PREFIX or --init_from_ckpt DIR/N (one)')
    from paddle_elmo.files.model_io import resolve_model
    model = resolve_model(a.model or a.init_from_ckpt)
    if model.params_file is None and model.weights_reader is None:
        flag = '--model' if a.model else '--init_from_ckpt'
        raise InputError(f'{flag} {a.model or a.init_from_ckpt}: options.json + weights.hdf5, already the '
                         'bilm-tf format; export-weights writes a checkpoint of ours in it')
    return model


if __name__ == '__main__':
    run(main)
