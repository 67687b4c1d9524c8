"""Embed a one-sentence-per-line file into hdf5, as AllenNLP's `allennlp elmo` command did.

    python run_embed.py sentences.txt out.hdf5 --options_file options.json --weight_file weights.hdf5
    python run_embed.py sentences.txt out.hdf5 --init_from_ckpt checkpoints/final --output_format top

Datasets: str(line index) -> the embedding of that line ('all': [3, n_tokens, dim]; 'top' and
'average': [n_tokens, dim]), and 'sentence_to_index', a JSON string {sentence: line index}.
"""
import json
import os

import numpy as np

import args as cli

OUTPUT_FORMATS = ('all', 'top', 'average')


def _read_chunks(input_file, chunk_size):
    """Yield lists of (line index, stripped line) from a UTF-8 file, `chunk_size` at a time."""
    chunk = []
    with open(input_file, 'rb') as f:
        for i, raw in enumerate(f):
            try:
                line = raw.decode('utf-8').strip()
            except UnicodeDecodeError as e:
                raise ValueError(f'{input_file}:{i + 1}: not valid UTF-8 ({e.reason} at byte {e.start})') from None
            chunk.append((i, line))
            if len(chunk) == chunk_size:
                yield chunk
                chunk = []
    if chunk:
        yield chunk


def _select(embedding, output_format):
    if output_format == 'all':
        return embedding
    if output_format == 'top':
        return embedding[-1]
    return embedding.mean(axis=0)


def embed_file(embedder, input_file, output_file, output_format='all', batch_size=64, progress=True,
               chunk_batches=16):
    """Stream `input_file` through `embedder` into `output_file` (written to a temp file, then renamed)."""
    import h5py
    from tqdm import tqdm
    if output_format not in OUTPUT_FORMATS:
        raise ValueError(f'output_format must be one of {OUTPUT_FORMATS}, got {output_format!r}')
    if not os.path.isfile(input_file):
        raise FileNotFoundError(f'{input_file}: input file not found')
    with open(input_file, 'rb') as f:
        n_lines = sum(1 for _ in f)
    sentence_to_index = {}
    tmp = f'{output_file}.tmp'
    try:
        with h5py.File(tmp, 'w') as fout, tqdm(total=n_lines, unit='sent', disable=not progress,
                                               desc='embedding') as bar:
            for chunk in _read_chunks(input_file, batch_size * chunk_batches):
                embeddings = embedder.encode([line.split() for _, line in chunk], batch_size)
                for (i, line), emb in zip(chunk, embeddings):
                    fout.create_dataset(str(i), data=_select(emb, output_format).astype(np.float32))
                    sentence_to_index[line] = str(i)
                bar.update(len(chunk))
            index = fout.create_dataset('sentence_to_index', (1,), dtype=h5py.string_dtype())
            index[0] = json.dumps(sentence_to_index)
        os.replace(tmp, output_file)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return n_lines


def main():
    p = cli.parser(__doc__.split('\n')[0])
    p.add_argument('input_file', help='one sentence per line, whitespace-tokenized, UTF-8')
    p.add_argument('output_file', help='hdf5 file to write')
    cli.add_model_source(p)
    cli.add_device(p)
    p.add_argument('--output_format', default='all', choices=OUTPUT_FORMATS,
                   help='all layers, the top layer, or the average of the layers')
    p.add_argument('--batch_size', type=int, default=64, help='sentences per batch')
    p.add_argument('--stateful', action='store_true',
                   help='carry LSTM state across batches (as allennlp elmo did); default stateless')
    a = p.parse_args()
    from elmo import ELMoEmbedder
    embedder = ELMoEmbedder(**cli.model_source(a), batch_size=a.batch_size, device=a.device,
                            stateful=a.stateful)
    n = embedder.embed_file(a.input_file, a.output_file, a.output_format)
    print(f'wrote {n} sentences to {a.output_file}')


if __name__ == '__main__':
    cli.run(main)
