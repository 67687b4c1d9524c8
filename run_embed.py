"""Embed a one-sentence-per-line file into hdf5, as AllenNLP's `allennlp elmo` command did.

    python run_embed.py sentences.txt out.hdf5              # the bundled model (pretrained/)
    python run_embed.py sentences.txt out.hdf5 --options_file options.json --weight_file weights.hdf5
    python run_embed.py sentences.txt out.hdf5 --init_from_ckpt checkpoints/final --output_format top

Datasets: str(line index) -> the embedding of that line ('all': [3, n_tokens, dim]; 'top' and
'average': [n_tokens, dim]), and 'sentence_to_index', a JSON string {sentence: line index}.
"""
import args as cli
from embedder import OUTPUT_FORMATS


def main():
    p = cli.parser(__doc__.split('\n')[0])
    p.add_argument('input_file', help='one sentence per line, whitespace-tokenized, UTF-8')
    p.add_argument('output_file', help='hdf5 file to write')
    cli.add_model_source(p, bundled_default=True)
    cli.add_device(p)
    p.add_argument('--output_format', default='all', choices=OUTPUT_FORMATS,
                   help='all layers, the top layer, or the average of the layers')
    p.add_argument('--batch_size', type=int, default=64, help='sentences per batch')
    p.add_argument('--stateful', action='store_true',
                   help='carry LSTM state across batches (as allennlp elmo did); default stateless')
    a = p.parse_args()
    from elmo import ELMoEmbedder, use_device
    use_device(a.device, cpu_threads=a.cpu_threads)
    embedder = ELMoEmbedder(**cli.model_source(a), batch_size=a.batch_size, stateful=a.stateful)
    n = embedder.embed_file(a.input_file, a.output_file, a.output_format)
    print(f'wrote {n} sentences to {a.output_file}')


if __name__ == '__main__':
    cli.run(main)
