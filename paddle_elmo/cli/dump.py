"""Dump the vocabulary's embeddings: lm_1b's `dump_emb` mode, and bilm-tf's `dump_token_embeddings`.

    paddle-elmo dump --init_from_ckpt checkpoints/final --output_dir dump    # the vocabulary it records
    paddle-elmo dump --vocab_file vocab.txt --options_file options.json --weight_file weights.hdf5 \\
        --output_dir dump --embeddings char_cnn
    paddle-elmo dump --init_from_ckpt checkpoints/final --output_file token_embeddings.hdf5

--output_dir gets .npy files with one row per softmax row (the vocabulary as loaded: a file without
`<S> </S> <UNK>` gets them first, as in training; `vocab.txt` there lists the rows):
`embeddings_softmax.npy` [vocab, P] and `softmax_bias.npy` [vocab], the softmax the LM predicts
with, and `embeddings_char_cnn.npy` [vocab, P], each word's context-free representation (char CNN,
highway, projection; no LSTM). --output_file writes bilm-tf's token-embedding hdf5 instead: dataset
`embedding` [lines, P], one row per line of the vocabulary file as it is, which bilm-tf and
AllenNLP can use in place of the char CNN. The vocabulary is --vocab_file, or the one the model
records (a checkpoint's recipe.json, or the vocab.txt beside its options.json).
"""
from paddle_elmo.cli.arguments import add_device, output_directory, output_file, parser
from paddle_elmo.cli.model_flags import add_model_source, model_source, model_vocabulary
from paddle_elmo.cli.runner import run
from paddle_elmo.fileio import InputError


def build_parser():
    p = parser(__doc__.split('\n')[0])
    add_model_source(p, bundled_default=True, vocab_help='the rows to dump; default: the one the model records (a checkpoint\'s '
                     'recipe.json, or the vocab.txt beside its options.json)')
    add_device(p)
    p.add_argument('--output_dir', type=output_directory, help='directory for the .npy dumps (made if needed)')
    p.add_argument('--embeddings', nargs='+', default=['softmax', 'char_cnn'], choices=['softmax', 'char_cnn'],
                   help='which .npy dumps: softmax needs a model with its softmax (a checkpoint of ours, or '
                   'weights exported with it); char_cnn works with any model, official weights included')
    p.add_argument('--output_file', type=output_file, help='write bilm-tf\'s dump_token_embeddings hdf5 here '
                   '(token representations, rows = the vocabulary file\'s lines)')
    return p


def main(argv=None):
    a = build_parser().parse_args(argv)
    if not a.output_dir and not a.output_file:
        raise InputError('nothing to write: give --output_dir (the .npy dumps) and/or --output_file FILE (the hdf5)')
    from paddle_elmo.text.vocabulary import Vocabulary
    source = model_source(a)
    vocab_file = model_vocabulary(a, source)
    vocab = Vocabulary(vocab_file) if a.output_dir else None
    from paddle_elmo.use.embedder import dump_token_embeddings  # Paddle's: after the files are checked
    from paddle_elmo.train.lm_loading import load_language_model
    from paddle_elmo.use.predict import dump_embeddings
    from paddle_elmo.runtime import use_device
    use_device(a.device, cpu_threads=a.cpu_threads)
    if a.output_dir:
        if 'softmax' in a.embeddings:  # checks the softmax is there and has the vocabulary's size
            model = load_language_model(vocab.size, source)
            bilm, softmax = model.bilm, model.softmax
        else:
            bilm, softmax = source.load(), None
        if 'char_cnn' not in a.embeddings:
            bilm = None
        for path in dump_embeddings(a.output_dir, vocab.tokens, bilm, softmax):
            print(f'wrote {path}')
    if a.output_file:
        n = dump_token_embeddings(vocab_file, source, a.output_file)
        print(f'wrote {a.output_file} ({n} token embeddings)')


if __name__ == '__main__':
    run(main)
