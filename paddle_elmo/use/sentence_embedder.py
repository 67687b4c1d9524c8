"""`SentenceEmbedder`, what every embedder of ours does with sentences, with or without Paddle:
raw strings or token lists in, batches grouped by length, input order kept, and `embed_file`, a
one-sentence-per-line file into hdf5 as AllenNLP's `allennlp elmo` command wrote it. ELMoEmbedder
(embedder.py, Paddle) and InferenceEmbedder (inference.py, an export run by Paddle Inference or
onnxruntime) differ only in how one batch of token lists becomes layers, so this module imports no
Paddle: serving an ONNX export needs numpy, h5py, onnxruntime and this package's text code only."""
import json
import logging
import os
import sys

import numpy as np

from paddle_elmo.fileio import STDIO, InputError, atomic_path, check_output_file, input_path
from paddle_elmo.logs import progress_bar
from paddle_elmo.text.encodings import iter_text_lines
from paddle_elmo.text.tokenizers import as_token_lists
from paddle_elmo.use.languages import warn_if_mostly_unknown, warning_subject

log = logging.getLogger(__name__)


class SentenceEmbedder:
    """What every embedder of ours does with sentences: a sentence is a list of str tokens or a raw
    string (split by the embedder's `tokenizer`, see tokenizers.get_tokenizer); batches, input order
    and files are handled here. A subclass (embedder.ELMoEmbedder; inference.InferenceEmbedder, which runs an
    exported model) sets `batch_size`, `stateful`, `tokenizer` (a name of tokenizers.TOKENIZERS) and
    `mapper` (its token_ids.InputMapper) and
    implements `_embed_token_lists(sentences)`: token lists -> list of float32
    [n_layers + 1, n_tokens, 2P], boundaries removed.
    """

    def _embed_token_lists(self, sentences):
        raise NotImplementedError

    def tokenize(self, sentences):
        """Sentences (raw strings or token lists) -> list of token lists (each a list of str): the
        tokens `encode`, `embed_sentences` and `embed_file` embed, one row of a sentence's layers
        per token. A raw string is split by the embedder's tokenizer, a token list kept as given.

        >>> ELMoEmbedder().tokenize(["It's raining, isn't it?", ['I', 'do', "n't"]])
        [['It', "'s", 'raining', ',', 'isn', "'t", 'it', '?'], ['I', 'do', "n't"]]
        """
        return as_token_lists(sentences, self.tokenizer, about=warning_subject(self.mapper.vocab, self.tokenizer))

    def _token_lists(self, sentences):
        """One call's sentences -> token lists (`tokenize`), with the warning of a word model that
        sees mostly unknown words (`mapper`: the subclass's InputMapper)."""
        sentences = self.tokenize(sentences)
        warn_if_mostly_unknown(self.mapper.vocab, sentences, self.tokenizer)
        return sentences

    def embed_batch(self, sentences):
        """One batch of sentences (strings or token lists) -> list of float32
        [n_layers + 1, n_tokens, 2P], boundaries removed."""
        return self._embed_token_lists(self._token_lists(sentences))

    def embed_sentence(self, sentence):
        """One sentence (a string or a list of tokens) -> float32 [n_layers + 1, n_tokens, 2P]."""
        return self.embed_batch([sentence])[0]

    def _batches(self, sentences, batch_size):
        """Index batches: in order when stateful (row state matters), else grouped by length."""
        order = np.arange(len(sentences))
        if not self.stateful:
            order = np.argsort([len(s) for s in sentences], kind='stable')
        for start in range(0, len(order), batch_size):
            yield order[start:start + batch_size]

    def embed_sentences(self, sentences, batch_size=None):
        """AllenNLP's `embed_sentences`: yield each sentence's float32 [n_layers + 1, n_tokens, 2P]
        in input order, one batch at a time (`sentences` may be any iterable, even a generator)."""
        batch = []
        for sentence in sentences:
            batch.append(sentence)
            if len(batch) == (batch_size or self.batch_size):
                yield from self.embed_batch(batch)
                batch = []
        if batch:
            yield from self.embed_batch(batch)

    def iter_embeddings(self, sentences, batch_size=None):
        """Yield (index, float32 [n_layers + 1, n_tokens, 2P]) batch by batch, so that a long input
        never holds all its embeddings at once. Stateless runs group sentences by length, so the
        indices do not come in input order."""
        return self._iter_token_lists(self._token_lists(sentences), batch_size)

    def _iter_token_lists(self, sentences, batch_size):
        for idx in self._batches(sentences, batch_size or self.batch_size):
            yield from zip(idx.tolist(), self._embed_token_lists([sentences[i] for i in idx]))

    def encode(self, sentences, batch_size=None):
        """List of sentences (strings or token lists) -> list of float32 [n_layers + 1, n_tokens, 2P],
        input order kept."""
        sentences = self._token_lists(sentences)
        results = [None] * len(sentences)
        for i, emb in self._iter_token_lists(sentences, batch_size):
            results[i] = emb
        return results

    def embed_file(self, input_file, output_file, output_format='all', batch_size=None, progress=True,
                   use_sentence_keys=False, forget_sentences=False):
        """Embed a one-sentence-per-line file into hdf5: see `embed_file`; -> number of lines.
        input_file: a path, or the file opened (as AllenNLP's embed_file takes it; sys.stdin too)."""
        with input_path(_path_of(input_file)) as path:
            return embed_file(self, path, output_file, output_format, batch_size or self.batch_size,
                              progress, use_sentence_keys=use_sentence_keys, forget_sentences=forget_sentences)


def _path_of(input_file):
    """An input file given as a path or as a file object opened from one -> its path (fileio.STDIO
    for standard input); a stream without a file (io.StringIO) is an InputError."""
    if isinstance(input_file, (str, os.PathLike)):
        return os.fspath(input_file)
    if input_file is sys.stdin:
        return STDIO
    name = getattr(input_file, 'name', None)
    if isinstance(name, (str, os.PathLike)) and os.path.isfile(name):
        return os.fspath(name)
    raise InputError(f'embed_file: {type(input_file).__name__} {name or input_file!r} is not a file; give a '
                     'path or a file opened from one')


# --------------------------------------------------------------------------------------------
# Files in, hdf5 out
# --------------------------------------------------------------------------------------------

OUTPUT_FORMATS = ('all', 'top', 'average')  # or a layer's index (layer_index): one layer, as ELMoForManyLangs' --output_layer
TOKENS_ATTRIBUTE = 'tokens'  # embed_file: each sentence's tokens, a JSON list, on its dataset


def _read_chunks(input_file, chunk_size, tokenizer):
    """Yield lists of (line index, stripped line) from a file of sentences `tokenizer` splits
    (text.encodings), `chunk_size` at a time."""
    chunk = []
    for i, _, text in iter_text_lines(input_file, tokenizer):
        chunk.append((i, text.strip()))
        if len(chunk) == chunk_size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def layer_index(output_format):
    """An output format that names one layer by its index ('0' or 0: the token layer, 1... the LSTM
    layers) -> that int, else None (a name of OUTPUT_FORMATS); InputError for anything else."""
    if output_format in OUTPUT_FORMATS:
        return None
    if isinstance(output_format, int) or (isinstance(output_format, str) and output_format.isdigit()):
        return int(output_format)
    raise InputError(f'output_format must be one of {", ".join(OUTPUT_FORMATS)} or a layer\'s index (0, 1, ...), '
                     f'got {output_format!r}')


def _select(embedding, output_format):
    index = layer_index(output_format)
    if index is not None:
        if index >= embedding.shape[0]:
            raise InputError(f'output_format {index}: the model has layers 0 (tokens) to {embedding.shape[0] - 1}')
        return embedding[index]
    if output_format == 'all':
        return embedding
    if output_format == 'top':
        return embedding[-1]
    return embedding.mean(axis=0)


def embed_file(embedder, input_file, output_file, output_format='all', batch_size=64, progress=True,
               chunk_batches=16, use_sentence_keys=False, forget_sentences=False):
    """Stream a one-sentence-per-line file (raw lines, split by the embedder's tokenizer) through
    `embedder` into hdf5.

    Datasets, as `allennlp elmo` wrote them: str(line index) -> [n_layers + 1, n_tokens, 2P]
    ('all'), [n_tokens, 2P] ('top', 'average' or a layer's index: 0 the token layer, 1... the LSTM
    layers, as ELMoForManyLangs' --output_layer); plus 'sentence_to_index', a JSON string
    {sentence: index}. Beside them, each sentence's dataset has the attribute TOKENS_ATTRIBUTE
    ('tokens'), the JSON list of the tokens its rows embed, in order (`embedder.tokenize(line)`):
    `json.loads(f['0'].attrs['tokens'])`. An attribute, so that the file's datasets stay the ones
    readers of `allennlp elmo`'s files expect, and one JSON string, which has no size limit (an
    array attribute of many strings would exceed HDF5's 64 KB object header). An empty line is
    an empty sentence ([n_layers + 1, 0, 2P], tokens '[]'), so that the datasets keep the file's
    line numbers. Lines are read in chunks, so memory stays flat however long the file is; the
    output appears atomically. -> the number of lines.

    # Parameters
    use_sentence_keys: the (stripped) sentence is its dataset's key instead of its line index, and
        there is no 'sentence_to_index' (allennlp elmo's --use-sentence-keys). An empty, a repeated
        sentence or one with '/' (an hdf5 path) is an InputError naming the line.
    forget_sentences: no 'sentence_to_index' dataset and no tokens (allennlp elmo's
        --forget-sentences: the file holds no text).
    """
    import h5py
    layer_index(output_format)  # a name or an index, checked before any work
    if not os.path.isfile(input_file):
        raise FileNotFoundError(f'{input_file}: input file not found')
    check_output_file(output_file, None)  # before any work (its missing directories are made when written)
    with open(input_file, 'rb') as f:
        n_lines = sum(1 for _ in f)
    sentence_to_index = {}
    with atomic_path(output_file) as tmp, h5py.File(tmp, 'w') as fout, \
            progress_bar(progress, log, total=n_lines, unit='sent', desc='embedding') as bar:
        for chunk in _read_chunks(input_file, batch_size * chunk_batches, embedder.tokenizer):
            tokens = embedder.tokenize([line for _, line in chunk])
            keys = []  # in line order, before the chunk is embedded
            for i, line in chunk:
                keys.append(_sentence_key(input_file, i, line, sentence_to_index) if use_sentence_keys else str(i))
                sentence_to_index[line] = str(i)
            # Each batch is written as it comes (the chunk's batches as encode makes them), so that
            # one batch's embeddings are held at a time, not the chunk's.
            for j, emb in embedder.iter_embeddings(tokens, batch_size):
                dataset = fout.create_dataset(keys[j], data=_select(emb, output_format).astype(np.float32))
                if not forget_sentences:
                    dataset.attrs[TOKENS_ATTRIBUTE] = json.dumps(tokens[j], ensure_ascii=False)
            bar.update(len(chunk))
        if not (use_sentence_keys or forget_sentences):
            index = fout.create_dataset('sentence_to_index', (1,), dtype=h5py.string_dtype())
            index[0] = json.dumps(sentence_to_index)
    return n_lines


def _sentence_key(input_file, i, sentence, seen):
    """Line i's sentence as its hdf5 key (--use_sentence_keys); InputError naming the line when it
    cannot be one. `seen`: {sentence: str(line index)} of the lines before."""
    where = f'{input_file}:{i + 1}: --use_sentence_keys'
    if sentence in seen:
        raise InputError(f'{where}: the same sentence as line {int(seen[sentence]) + 1}; a key is unique '
                         '(leave out --use_sentence_keys to key by line number)')
    if not sentence or sentence == '.' or '/' in sentence:
        raise InputError(f'{where}: an empty sentence, "." or one with "/" cannot be an hdf5 key '
                         '(leave out --use_sentence_keys to key by line number)')
    return sentence
