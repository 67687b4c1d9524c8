"""Dump the vocabulary's embeddings: lm_1b's `dump_emb` mode, and bilm-tf's `dump_token_embeddings`.

    python run_dump.py --vocab_file vocab.txt --init_from_ckpt checkpoints/final --output_dir dump
    python run_dump.py --vocab_file vocab.txt --options_file options.json --weight_file weights.hdf5 \\
        --output_dir dump --embeddings char_cnn
    python run_dump.py --vocab_file vocab.txt --init_from_ckpt checkpoints/final --hdf5 token_embeddings.hdf5

--output_dir gets .npy files with one row per softmax row (the vocabulary as loaded: a file without
`<S> </S> <UNK>` gets them first, as in training; `vocab.txt` there lists the rows):
`embeddings_softmax.npy` [vocab, P] and `softmax_bias.npy` [vocab], the softmax the LM predicts
with, and `embeddings_char_cnn.npy` [vocab, P], each word's context-free representation (char CNN,
highway, projection; no LSTM). --hdf5 writes bilm-tf's token-embedding file instead: dataset
`embedding` [lines, P], one row per line of the vocabulary file as it is, which bilm-tf and
AllenNLP can use in place of the char CNN.
"""
from paddle_elmo.cli import flags as cli
from paddle_elmo.fileio import InputError


def main():
    p = cli.parser(__doc__.split('\n')[0])
    p.add_argument('--vocab_file', required=True, help='one token per line (for the softmax: the vocabulary '
                   'the model was trained with)')
    cli.add_model_source(p, vocab_flag=False)
    cli.add_device(p)
    p.add_argument('--output_dir', help='directory for the .npy dumps (created if needed)')
    p.add_argument('--embeddings', nargs='+', default=['softmax', 'char_cnn'], choices=['softmax', 'char_cnn'],
                   help='which .npy dumps: softmax needs a model with its softmax (a checkpoint of ours, or '
                   'weights exported with it); char_cnn works with any model, official weights included')
    p.add_argument('--hdf5', help='write bilm-tf\'s dump_token_embeddings file here (token representations, rows = '
                   'the vocabulary file\'s lines)')
    a = p.parse_args()
    if not a.output_dir and not a.hdf5:
        raise InputError('nothing to write: give --output_dir (the .npy dumps) and/or --hdf5 FILE')
    from paddle_elmo.vocabulary import Vocabulary
    from paddle_elmo.embedder import dump_token_embeddings
    from paddle_elmo.lm_loading import load_language_model
    from paddle_elmo.model_io import load_bilm
    from paddle_elmo.predict import dump_embeddings
    from paddle_elmo.runtime import use_device
    use_device(a.device, cpu_threads=a.cpu_threads)
    source = cli.model_source(a)
    if a.output_dir:
        vocab = Vocabulary(a.vocab_file)
        if 'softmax' in a.embeddings:  # checks the softmax is there and has the vocabulary's size
            model = load_language_model(vocab.size, **source)
            bilm, softmax = model.bilm, model.softmax
        else:
            bilm, softmax = load_bilm(**source), None
        if 'char_cnn' not in a.embeddings:
            bilm = None
        for path in dump_embeddings(a.output_dir, vocab.tokens, bilm, softmax):
            print(f'wrote {path}')
    if a.hdf5:
        n = dump_token_embeddings(a.vocab_file, source['options_file'], source['weight_file'], a.hdf5,
                                  params_file=source['params_file'])
        print(f'wrote {a.hdf5} ({n} token embeddings)')


if __name__ == '__main__':
    cli.run(main)
