"""Where a command's model comes from: --model, or --init_from_ckpt, or --options_file with
--weight_file (add_model_source, read by model_source), the model's vocabulary (model_vocabulary),
and an export as the model (add_inference_model).
"""
from paddle_elmo.cli.arguments import Switch
from paddle_elmo.cli.glossary import option_strings
from paddle_elmo.fileio import InputError


VOCAB_HELP = ('the model\'s vocabulary: one token per line, most frequent first (line i = softmax row i and, for a '
              'word model, embedding row i: in bilm-tf one file)')


MODEL_HELP = ('a model name: bundled, bundled-zh (packaged: English, Chinese), small, medium, original, '
              'original-5.5b (AllenNLP\'s releases), efml-<language> (ELMoForManyLangs\' 44: efml-zh, efml-ja, '
              '...; README lists them), downloaded once into $PADDLE_ELMO_CACHE/models/; a directory with '
              'options.json + weights.hdf5 (bilm-tf / AllenNLP files, an export); an ELMoForManyLangs model '
              'directory (config.json, char.dic, token_embedder.pkl, encoder.pkl); a checkpoint directory (its final '
              'or latest step); or a checkpoint prefix DIR/N')


def add_model_source(p, bundled_default=False, vocab_help=None):
    """Where the biLM comes from: --model (a name, a directory or a checkpoint: model_io.resolve_model),
    or, as before it, --init_from_ckpt (a checkpoint prefix of ours) or --options_file + --weight_file
    (bilm-tf / AllenNLP files); with bundled_default, none of them means the model bundled in
    pretrained/. --vocab_file is the model's vocabulary (vocab_help: what this command does with it,
    and when it may be left out)."""
    title = 'model (--model, or a checkpoint of ours, or bilm-tf / AllenNLP files'
    g = p.add_argument_group(title + ('; none: the bundled model in pretrained/)' if bundled_default else ')'))
    g.add_argument('--model', metavar='NAME_OR_PATH', help=MODEL_HELP)
    g.add_argument('--init_from_ckpt', help='checkpoint prefix without suffix, e.g. checkpoints/10000 '
                   '(the directory holds options.json); kept because the PaddleNLP example took its model so')
    g.add_argument(*option_strings('options_file'), help='bilm-tf / AllenNLP options.json (with --weight_file)')
    g.add_argument(*option_strings('weight_file'), help='bilm-tf / AllenNLP weights.hdf5 (with --options_file)')
    g.add_argument('--vocab_file', help=f'{VOCAB_HELP}; ' + (vocab_help or 'needed here only for a word or word+char '
                   'model given as bilm-tf files: our checkpoints and exports carry theirs (vocab.txt)'))
    p.set_defaults(_model_source_required=not bundled_default)
    return g


def model_source(args):
    """The model the flags name -> model_io.LoadedModel (its options.json read: resolve_model), after
    checking the combination; none given: the bundled model, for commands with bundled_default. With
    it, --vocab_file and a command's --embedding_weight_file. A named release not yet in the cache
    is downloaded here."""
    from paddle_elmo.files.model_io import resolve_model
    ckpt, opts, weights = args.init_from_ckpt, args.options_file, args.weight_file
    files = {name: getattr(args, name, None) for name in ('vocab_file', 'embedding_weight_file')}
    if args.model and (ckpt or opts or weights):
        raise InputError('give either --model or --init_from_ckpt / --options_file with --weight_file, not both')
    check_files_flags('init_from_ckpt', ckpt, opts, weights)
    if not (args.model or ckpt or opts) and args._model_source_required:
        raise InputError('no model: give --model NAME_OR_PATH, --init_from_ckpt DIR/N or --options_file and '
                         '--weight_file')
    return resolve_model(args.model or ckpt or opts, weights, **files)


def model_vocabulary(args, model):
    """The vocabulary file of `model` (model_source's of `args`): --vocab_file, else the one the model
    records (a checkpoint's recipe.json, or the vocab.txt beside its options.json) -> path;
    InputError naming what is missing when there is none."""
    if args.vocab_file:
        return args.vocab_file
    path, checked = model.recorded_vocabulary()
    if path is None:
        raise InputError(f'no vocabulary: give --vocab_file (the one the model was trained with); {checked}')
    return path


def check_files_flags(other_flag, other, options_file, weight_file):
    """--options_file and --weight_file go together, and not with --`other_flag` (given as `other`)."""
    if other and (options_file or weight_file):
        raise InputError(f'give either --{other_flag} or --options_file with --weight_file, not both')
    if (options_file is None) != (weight_file is None):
        raise InputError('--options_file and --weight_file go together')


def add_inference_model(p, title, model_help):
    """--inference_model, --inference_backend and --onednn: an export_inference directory run by
    Paddle Inference or onnxruntime (InferenceEmbedder)."""
    g = p.add_argument_group(title)
    g.add_argument('--inference_model', help=model_help)
    g.add_argument('--inference_backend', choices=['paddle', 'onnxruntime'],
                   help="paddle.inference's predictor (inference.json) or onnxruntime (model.onnx; an int8 export "
                   "runs here); default: onnxruntime for an int8 export; for a float32 one paddle where Paddle can "
                   "be imported and the directory holds its program, else onnxruntime (the [serve] install); said "
                   "in one line")
    g.add_argument('--onednn', action=Switch, default=True,
                   help="paddle backend: oneDNN's CPU kernels (off: Paddle's own, with MKL matmuls)")
    return g
